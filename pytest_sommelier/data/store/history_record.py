"""What the run store records about a run: git state, identity digests, completeness and the
value intervals the history page plots (``data.store.history`` stores it; this module only reads).

Invariants kept: git is asked only through ``git`` subprocesses that cannot change the work
tree (``GIT_OPTIONAL_LOCKS=0``), and anything but a clean answer means "not recorded"; a run
is complete only when every configured arm has a complete report and its verdict (if any)
says so; identity digests are ``core.canonical.sha256_json`` of the reports' own values.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.report_blocks import EVALUATION_SCHEMA
from pytest_sommelier.core.report_identity import CONFIG_PARTS as CONFIG_PARTS
from pytest_sommelier.core.report_identity import config_difference
from pytest_sommelier.core.verdict import NO_BASELINE as NO_BASELINE
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
)

GIT_TIMEOUT_S = 30


# --- git -----------------------------------------------------------------------------------


def _git(rootdir: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """Run one git command in ``rootdir``; None when git is missing or does not answer. Its
    answer is read as bytes and decoded as UTF-8 with U+FFFD for what is not UTF-8 (a branch
    named with byte 0xff, a file name under ``core.quotepath=false``), so such a work tree is
    recorded, never a ``UnicodeDecodeError`` at session finish."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=rootdir,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("utf-8", errors="replace"),
        done.stderr.decode("utf-8", errors="replace"),
    )


def git_state(rootdir: Path, *, exclude: Path | None = None) -> dict[str, Any] | None:
    """``{commit, branch, dirty}`` of the git work tree holding ``rootdir``, or None when it is
    not in one (or git is missing).

    ``commit`` is None before the first commit, ``branch`` None on a detached HEAD; ``dirty``
    means a tracked file differs from HEAD (untracked files, such as run folders, do not count;
    nor does anything under ``exclude``, the store itself).
    """
    inside = _git(rootdir, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != "true":
        return None
    head = _git(rootdir, "rev-parse", "--verify", "-q", "HEAD")
    commit = head.stdout.strip() if head is not None and head.returncode == 0 else None
    ref = _git(rootdir, "symbolic-ref", "--short", "-q", "HEAD")
    branch = ref.stdout.strip() if ref is not None and ref.returncode == 0 else None
    spec = ["--", "."]
    if exclude is not None:
        try:
            relative = Path(exclude).resolve().relative_to(Path(rootdir).resolve())
            spec.append(f":(exclude){relative.as_posix()}")
        except ValueError:
            pass  # the store is outside the work tree: nothing to exclude
    status = _git(rootdir, "status", "--porcelain", "--untracked-files=no", *spec)
    dirty = bool(status.stdout.strip()) if status is not None and status.returncode == 0 else None
    return {"commit": commit or None, "branch": branch or None, "dirty": dirty}


# --- describing a run ----------------------------------------------------------------------


def suite_run_dirs(run_dir: Path) -> list[Path]:
    """The one-suite run folders of a session's run folder: itself, or (several suites in one
    session) its sub-folders holding a ``suite.resolved.json``, by name."""
    run_dir = Path(run_dir)
    if runlayout.resolved(run_dir).is_file():
        return [run_dir]
    if not run_dir.is_dir():
        return []
    return sorted(p for p in run_dir.iterdir() if runlayout.resolved(p).is_file())


def _not_a_run(run_dir: Path) -> InputError:
    suites = [p.name for p in suite_run_dirs(run_dir)]
    hint = (
        f"this folder holds the runs of several suites; store each: {', '.join(suites)}"
        if suites
        else "give a run folder written by pytest-sommelier (runs/<run_id>)"
    )
    return InputError("SOM-HISTORY-NOT-A-RUN", f"{runlayout.resolved(run_dir)}: not found", hint)


def arm_reports(run_dir: Path, resolved: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The evaluation report of every arm folder that has one (configured order first)."""
    configured = list((resolved.get("arms") or {}).keys())
    reports: dict[str, dict[str, Any]] = {}
    for name in artifacts.arm_names(run_dir, configured):
        path = runlayout.arm_report(runlayout.arm_dir(run_dir, name))
        if path.is_file():
            report = artifacts.read_json(path, expect=EVALUATION_SCHEMA)
            if isinstance(report, dict):
                reports[name] = report
    return reports


def run_identity(resolved: Mapping[str, Any], reports: Mapping[str, Mapping[str, Any]]) -> dict:
    """The identity digests of a run: what the shared conditions were and, per arm, which
    model and adapter produced it (digests of the reports' identities)."""
    first = next(iter(reports.values()), {})
    arms_resolved = resolved.get("arms") or {}
    sample = (resolved.get("test_split") or {}).get("sample")
    return {
        **({"sample": sample} if sample is not None else {}),  # a seeded sample says so
        "config_sha256": first.get("config_sha256"),
        "split": first.get("split"),
        "test_split_sha256": (resolved.get("test_split") or {}).get("sha256"),
        "slices": list(resolved.get("slices") or []),
        "parser_version": first.get("parser_version"),
        "decoding_sha256": sha256_json(resolved.get("decoding") or {}),
        "arms": {
            name: {
                "model_kind": report.get("model_kind"),
                "model_identity_sha256": sha256_json(report.get("model_identity")),
                "adapter_identity_sha256": None
                if report.get("adapter_identity") is None
                else sha256_json(report.get("adapter_identity")),
                "adapter": (arms_resolved.get(name) or {}).get("adapter"),
                "complete": bool(report.get("complete")),
            }
            for name, report in reports.items()
        },
    }


def describe_run(run_dir: Path) -> dict[str, Any]:
    """The store record of a run folder, without number, folder, time or git: its suite,
    run id, completeness, verdict and identity digests."""
    run_dir = Path(run_dir)
    if not runlayout.resolved(run_dir).is_file():
        raise _not_a_run(run_dir)
    resolved = artifacts.read_json(runlayout.resolved(run_dir))
    if not isinstance(resolved, dict):
        raise InputError(
            "SOM-HISTORY-NOT-A-RUN",
            f"{runlayout.resolved(run_dir)}: not a JSON object",
            "give a run folder written by pytest-sommelier",
        )
    reports = arm_reports(run_dir, resolved)
    verdict_path = runlayout.verdict(run_dir)
    verdict = artifacts.read_json(verdict_path) if verdict_path.is_file() else None
    return run_entry(run_dir.name, resolved, reports, verdict)


def run_entry(
    name: str,
    resolved: Mapping[str, Any],
    reports: Mapping[str, Mapping[str, Any]],
    verdict: Any,
) -> dict[str, Any]:
    """:func:`describe_run` from a run's values (``name`` the folder's): the resolved suite,
    its arms' reports and its verdict (None when absent)."""
    verdict = verdict if isinstance(verdict, dict) else None
    configured = set((resolved.get("arms") or {}).keys())
    complete = (
        bool(reports)
        and configured <= set(reports)
        and all(bool(r.get("complete")) for r in reports.values())
        and (verdict is None or bool(verdict.get("complete")))
    )
    return {
        "run_id": resolved.get("run_id") or name,
        "suite": resolved.get("name"),
        "complete": complete,
        "comparable": complete,
        "verdict": (verdict or {}).get("verdict"),
        "baseline": complete and baseline_worthy(verdict),
        "adapters": {
            arm: adapter_text(spec.get("adapter") if isinstance(spec, Mapping) else None)
            for arm, spec in (resolved.get("arms") or {}).items()
        }
        if isinstance(resolved.get("arms"), Mapping)
        else {},
        "identity": run_identity(resolved, reports),
    }


def adapter_text(identity: Any) -> str | None:
    """Which adapter an arm used, as the history and the summary show it: ``org/name@rev`` for
    a hub adapter, ``pkg:...`` for a packaged one, ``local sha256:0a7c761c`` for a folder (the
    resolved suite keeps no machine path); None for a base arm."""
    if not isinstance(identity, Mapping):
        return None
    kind = identity.get("kind")
    if kind == "hub":
        revision = identity.get("revision")
        return f"{identity.get('id')}" + (f"@{revision}" if revision else "")
    if kind == "pkg":
        return str(identity.get("ref"))
    return f"{kind or 'local'} sha256:{str(identity.get('sha256') or '')[:8]}"


def baseline_worthy(verdict: Mapping[str, Any] | None) -> bool:
    """Whether a run may be ``last``, the baseline later runs are judged against: its verdict
    passed, or it failed only because its ``stored`` gates (and stored selection gates) had no
    stored run to compare with yet (a suite's first run). A run that failed any other gate
    never is (a damaged adapter's run must not become the reference its successors are
    measured by)."""
    if not verdict:
        return True  # gates off: nothing failed
    if verdict.get("verdict") == "pass":
        return True
    if verdict.get("verdict") != "fail":
        return False
    failed = [gate for gate in verdict.get("gates") or [] if not gate.get("passed")]
    return bool(failed) and all(
        gate.get("kind") in ("stored", "selection")
        and NO_BASELINE in str(gate.get("reason", ""))
        for gate in failed
    )


def identity_field(error: EvaluationError, old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """The field the identity gate refused on; for ``config_sha256``, with the part of the
    resolved suite that changed (``config_sha256 (decoding.max_new_tokens: 64 -> 9)``)."""
    field = error.where or "identity"
    if field == "config_sha256":
        change = config_difference(old, new)
        if change:
            field += f" ({change})"
    return field


__all__ = [
    "CONFIG_PARTS",
    "arm_reports",
    "config_difference",
    "describe_run",
    "git_state",
    "identity_field",
    "run_entry",
    "run_identity",
    "suite_run_dirs",
]
