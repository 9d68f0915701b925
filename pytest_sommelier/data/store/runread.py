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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_bytes
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.report_comparison import COMPARISON_SCHEMA
from pytest_sommelier.core.types import ComparisonReport, FormattedSplit, Verdict
from pytest_sommelier.data.split.load import json_lines
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.artifacts import StoredArm
from pytest_sommelier.data.store.history_compare import COMPARE_SCHEMA
from pytest_sommelier.data.store.history_record import arm_reports
from pytest_sommelier.errors import InputError


@dataclass(frozen=True)
class SummaryInputs:
    """What the run's Markdown summary (``view.ci_summary``) shows."""

    run_name: str
    resolved: dict[str, Any]
    verdict: Any
    reports: dict[str, dict[str, Any]]
    comparisons: list[dict[str, Any]]
    compares: list[dict[str, Any]]


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


def run_files_of(
    run_dir: Path,
    resolved: Mapping[str, Any],
    outcome: RunOutcome,
    split: FormattedSplit,
    verdict: Verdict | None,
    stored_comparisons: Sequence[Mapping[str, Any]] = (),
) -> RunFiles:
    """What :func:`read_run` would read of the run just written from these values, built from
    the values (nothing is read): the session finish's page is rendered from memory.

    ``resolved`` is the resolved suite as given to ``artifacts.write_outcome``; the arms, notes
    and orders are :func:`read_run`'s, and every value passes through ``artifacts.as_stored``
    (the keys sorted as the files hold them)."""
    notes: list[str] = []
    stored: dict[str, Any] = artifacts.as_stored(artifacts.stored_resolved(resolved, split))
    configured = list((stored.get("arms") or {}).keys())
    folders = set(outcome.generations) | set(outcome.arm_reports)
    folders |= {arm for arm, outputs in outcome.rebatched.items() if outputs}
    arms: dict[str, StoredArm] = {}
    for name in configured + sorted(folders - set(configured)):
        report = outcome.arm_reports.get(name)
        if report is None:
            notes.append(
                f"arm {name!r} has no evaluation report (it was not run, or the run stopped)"
            )
            continue
        by_slice = outcome.generations.get(name) or {}
        arms[name] = (
            artifacts.as_stored(report),
            artifacts.as_stored(outcome.telemetry[name]) if name in outcome.telemetry else None,
            {lang: artifacts.as_stored(by_slice.get(lang, [])) for lang in report["slices"]},
        )
    arms = dict(sorted(arms.items(), key=lambda item: item[1][0].get("model_kind") != "base"))
    comparisons: dict[str, ComparisonReport] = {}
    for comparison in stored.get("comparisons") or []:
        name = comparison.get("name") or f"{comparison['candidate']}-vs-{comparison['reference']}"
        if name in outcome.comparison_reports:
            comparisons[name] = artifacts.as_stored(outcome.comparison_reports[name])
        else:
            notes.append(
                f"comparison {name!r} has no report: an arm is missing, or the identity gate "
                "refused it (the terminal output and rescore say which field differed)"
            )
    for name in sorted(outcome.comparison_reports, key=lambda name: f"{name}.json"):
        if name not in comparisons:
            comparisons[name] = artifacts.as_stored(outcome.comparison_reports[name])
    lines = json_lines(split.raw.decode("utf-8"))
    rows = [json.loads(line) for line in lines if line.strip()]
    compares = sorted(stored_comparisons, key=lambda report: f"{report['name']}.json")
    return RunFiles(
        stored,
        artifacts.as_stored(verdict),
        arms,
        comparisons,
        rows,
        notes,
        [],
        [artifacts.as_stored(report) for report in compares],
    )


def summary_inputs(run_dir: Path) -> SummaryInputs:
    """What the run's Markdown summary shows, read from ``run_dir``: the resolved suite, the
    verdict (None when absent), the arms' reports (``history_record.arm_reports``' order), the
    comparison reports and the comparisons with stored runs (each by file name)."""
    run_dir = Path(run_dir)
    resolved = artifacts.read_json(runlayout.resolved(run_dir))
    resolved = resolved if isinstance(resolved, dict) else {}
    verdict_path = runlayout.verdict(run_dir)
    verdict = artifacts.read_json(verdict_path) if verdict_path.is_file() else None
    return SummaryInputs(
        run_name=run_dir.name,
        resolved=resolved,
        verdict=verdict,
        reports=arm_reports(run_dir, resolved),
        comparisons=list(_reports(run_dir, COMPARISON_SCHEMA).values()),
        compares=list(_reports(run_dir, COMPARE_SCHEMA).values()),
    )


def summary_inputs_of(
    run_dir: Path,
    resolved: Mapping[str, Any],
    outcome: RunOutcome,
    split: FormattedSplit,
    verdict: Verdict | None,
    compares: Sequence[Mapping[str, Any]] = (),
) -> SummaryInputs:
    """:func:`summary_inputs` of the run just written from these values, built from them."""
    stored = artifacts.as_stored(artifacts.stored_resolved(resolved, split))
    configured = list((stored.get("arms") or {}).keys())
    names = configured + sorted(set(outcome.arm_reports) - set(configured))
    return SummaryInputs(
        run_name=Path(run_dir).name,
        resolved=stored,
        verdict=artifacts.as_stored(verdict),
        reports={
            name: artifacts.as_stored(outcome.arm_reports[name])
            for name in names
            if name in outcome.arm_reports
        },
        comparisons=[
            artifacts.as_stored(outcome.comparison_reports[name])
            for name in sorted(outcome.comparison_reports, key=lambda name: f"{name}.json")
        ],
        compares=[
            artifacts.as_stored(report)
            for report in sorted(compares, key=lambda report: f"{report['name']}.json")
        ],
    )


def _reports(run_dir: Path, schema: str) -> dict[str, dict[str, Any]]:
    """``report/*.json`` of one schema, by file name."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(runlayout.report_dir(run_dir).glob("*.json")):
        report = artifacts.read_json(path)
        if isinstance(report, dict) and report.get("schema_version") == schema:
            found[path.stem] = report
    return found


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
