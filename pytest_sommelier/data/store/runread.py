"""A stored run read whole, for the views: the run store's reader of everything the HTML page
shows (``suite.resolved.json``, the verdict, each arm folder, the comparison reports, the
comparisons with stored runs and the split copy), at the paths of ``core.runlayout``.

Invariants kept: only the run's own files are read, through ``data.store.artifacts``; a folder that
is not one suite's run is an ``InputError`` (naming the sub-folders when it holds several
suites' runs); a missing optional artifact (no verdict, an arm without a report, a refused
comparison, an edited split copy) leaves its part out with a note saying why, and never stops
the read. The split copy is used only when its bytes still have the digest the run recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_bytes
from pytest_sommelier.core.types import ComparisonReport
from pytest_sommelier.data.split.load import json_lines
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.artifacts import StoredArm
from pytest_sommelier.data.store.history_compare import COMPARE_SCHEMA
from pytest_sommelier.errors import InputError


@dataclass(frozen=True)
class RunFiles:
    """What :func:`read_run` read: the resolved suite, the verdict (None when absent), the arms
    with a report (base-kind arms first), the comparison reports, the split copy's rows (None
    when absent or edited), and the notes on what is missing (``split_notes`` those about the
    split copy, apart)."""

    resolved: dict[str, Any]
    verdict: Any
    arms: dict[str, StoredArm]
    comparisons: dict[str, ComparisonReport]
    rows: list[dict[str, Any]] | None
    notes: list[str]
    split_notes: list[str]
    stored_comparisons: list[dict[str, Any]] = field(default_factory=list)  # compare-<NNNN>


def read_run(run_dir: Path) -> RunFiles:
    """Read the stored run in ``run_dir`` for the views (see the module docstring)."""
    _check_run_dir(run_dir)
    notes: list[str] = []
    split_notes: list[str] = []
    resolved = artifacts.read_resolved(run_dir)
    verdict = _optional_json(runlayout.verdict(run_dir), [])
    arms = _read_arms(run_dir, resolved, notes)
    comparisons = _comparison_reports(run_dir, resolved, notes)
    rows = _read_split_rows(run_dir, resolved, split_notes)
    stored = _stored_comparisons(run_dir)
    return RunFiles(resolved, verdict, arms, comparisons, rows, notes, split_notes, stored)


def _optional_json(path: Path, notes: list[str]) -> Any:
    """A stored JSON artifact, or None with a note when it is absent."""
    if not path.exists():
        notes.append(f"{path.name} is absent")
        return None
    return artifacts.read_json(path)


def _check_run_dir(run_dir: Path) -> None:
    """Refuse a folder that is not one suite's run (naming the sub-folders when it holds
    several suites' runs)."""
    if runlayout.resolved(run_dir).is_file():
        return
    if not run_dir.is_dir():
        raise InputError(
            "SOM-STORED-MISSING",
            f"{run_dir}: not a folder",
            "give a run folder such as runs/<run_id>",
        )
    suites = sorted(p.name for p in run_dir.iterdir() if runlayout.resolved(p).is_file())
    hint = (
        f"this folder holds the runs of several suites; give one of: {', '.join(suites)}"
        if suites
        else "point at a run folder written by pytest-sommelier"
    )
    raise InputError("SOM-STORED-MISSING", f"{runlayout.resolved(run_dir)}: not found", hint)


def _read_arms(
    run_dir: Path, resolved: Mapping[str, Any], notes: list[str]
) -> dict[str, StoredArm]:
    """Each stored arm folder with a report: ``{arm: (report, telemetry, records)}``, base-kind
    arms first, then in the resolved suite's order."""
    configured = list((resolved.get("arms") or {}).keys())
    arms: dict[str, StoredArm] = {}
    for name in artifacts.arm_names(run_dir, configured):
        arm_dir = runlayout.arm_dir(run_dir, name)
        if not runlayout.arm_report(arm_dir).exists():
            notes.append(
                f"arm {name!r} has no evaluation report (it was not run, or the run stopped)"
            )
            continue
        arms[name] = artifacts.read_arm(arm_dir)
    return dict(sorted(arms.items(), key=lambda item: item[1][0].get("model_kind") != "base"))


def _read_split_rows(
    run_dir: Path, resolved: Mapping[str, Any], notes: list[str]
) -> list[dict[str, Any]] | None:
    """The split copy's rows when its bytes still have the recorded digest, else None + note.

    The digest match proves these are the bytes that were validated when the run was made, so
    the rows are read without validating them again (which would cost seconds for 10k rows).
    """
    path = runlayout.split_copy(run_dir)
    if not path.is_file():
        notes.append(f"{runlayout.SPLIT_COPY} is absent, so gold calls and prompts are unknown")
        return None
    data = path.read_bytes()
    recorded = (resolved.get("test_split") or {}).get("sha256")
    if sha256_bytes(data) != recorded:
        notes.append(
            f"{runlayout.SPLIT_COPY} does not have the digest the run recorded "
            f"({str(recorded)[:12]}); it was edited, so its examples are not shown"
        )
        return None
    try:
        lines = json_lines(data.decode("utf-8"))  # at \n only, as the split loader reads it
        return [json.loads(line) for line in lines if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError):  # pragma: no cover - digest matched
        notes.append(f"{runlayout.SPLIT_COPY} could not be read")
        return None


def _stored_comparisons(run_dir: Path) -> list[dict[str, Any]]:
    """The run's comparisons with stored runs (``report/compare-<NNNN>.json``), by file name."""
    found = []
    for path in sorted(runlayout.report_dir(run_dir).glob("*.json")):
        report = artifacts.read_json(path)
        if isinstance(report, dict) and report.get("schema_version") == COMPARE_SCHEMA:
            found.append(report)
    return found


def _comparison_reports(
    run_dir: Path, resolved: Mapping[str, Any], notes: list[str]
) -> dict[str, ComparisonReport]:
    """Stored comparison reports: configured ones first (a missing one gets a note), then
    any other ``report/*.json``."""
    reports: dict[str, ComparisonReport] = {}
    for comparison in resolved.get("comparisons") or []:
        name = comparison.get("name") or f"{comparison['candidate']}-vs-{comparison['reference']}"
        path = runlayout.comparison_report(run_dir, name)
        if path.exists():
            reports[name] = artifacts.read_json(path)
        else:
            notes.append(
                f"comparison {name!r} has no report: an arm is missing, or the identity gate "
                "refused it (the terminal output and rescore say which field differed)"
            )
    for path in sorted(runlayout.report_dir(run_dir).glob("*.json")):
        if path.stem not in reports:
            report = artifacts.read_json(path)
            if isinstance(report, dict) and "deltas" in report:
                reports[path.stem] = cast(ComparisonReport, report)
    return reports
