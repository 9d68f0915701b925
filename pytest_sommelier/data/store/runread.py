"""A run as the views take it: two records, :class:`RunFiles` (the HTML page) and
:class:`SummaryInputs` (the Markdown summary), each read from a stored run's files
(``suite.resolved.json``, the verdict, each arm folder, the comparison reports, the comparisons
with stored runs and the split copy, at the paths of ``core.runlayout``) or built from the
values of the run just evaluated, by one builder for both (:func:`run_files`,
:func:`summary_of`).

Invariants kept: only the run's own files are read, through the validating reader
(``data.store.artifacts``); a record holds every value in its stored form
(``artifacts.stored_form``: the value the run's file holds, and the value reading it back
gives), so a view renders the same text from memory as from the files because it is given the
same record, never because a value went through JSON text; a folder that is not one suite's
run is an ``InputError`` (naming the sub-folders when it holds several suites' runs); a missing
optional artifact (no verdict, an arm without a report, a refused comparison, an edited split
copy) leaves its part out with a note saying why, and never stops the read. The split copy is
used only when its bytes still have the digest the run recorded.
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
from pytest_sommelier.data.store.artifacts import StoredArm, arm_order, stored_form
from pytest_sommelier.data.store.history_compare import COMPARE_SCHEMA
from pytest_sommelier.data.store.history_record import arm_reports
from pytest_sommelier.errors import InputError


@dataclass(frozen=True)
class SummaryInputs:
    """What the run's Markdown summary (``view.ci_summary``) shows, every value in its stored
    form (built by :func:`summary_of` alone)."""

    run_name: str
    resolved: dict[str, Any]
    verdict: Any
    reports: dict[str, dict[str, Any]]
    comparisons: list[dict[str, Any]]
    compares: list[dict[str, Any]]


@dataclass(frozen=True)
class RunFiles:
    """What the HTML page shows of a run, every value in its stored form (built by
    :func:`run_files` alone, from the files or from memory): the resolved suite, the verdict
    (None when absent), the arms with a report (base-kind arms first), the comparison reports,
    the split copy's rows (None when absent or edited), the notes on what is missing
    (``split_notes`` those about the split copy, apart) and the comparisons with stored runs."""

    resolved: dict[str, Any]
    verdict: Any
    arms: dict[str, StoredArm]
    comparisons: dict[str, ComparisonReport]
    rows: list[dict[str, Any]] | None
    notes: list[str]
    split_notes: list[str]
    stored_comparisons: list[dict[str, Any]] = field(default_factory=list)  # compare-<NNNN>


def read_run(run_dir: Path) -> RunFiles:
    """Read the stored run in ``run_dir`` for the views (see the module docstring), through the
    validating reader, into the record :func:`run_files_of` builds from memory
    (:func:`run_files`)."""
    _check_run_dir(run_dir)
    split_notes: list[str] = []
    resolved = artifacts.read_resolved(run_dir)
    verdict = _optional_json(runlayout.verdict(run_dir), [])
    configured = _arm_names(resolved)
    arms: dict[str, StoredArm | None] = {}
    for name in artifacts.arm_names(run_dir, configured):
        arm_dir = runlayout.arm_dir(run_dir, name)
        has_report = runlayout.arm_report(arm_dir).exists()
        arms[name] = artifacts.read_arm(arm_dir) if has_report else None
    found = _report_files(run_dir)
    named = set(_comparison_names(resolved))
    comparisons = {
        name: report
        for name, report in found.items()
        if name in named or (isinstance(report, dict) and "deltas" in report)
    }
    rows = _read_split_rows(run_dir, resolved, split_notes)
    return run_files(
        resolved, verdict, arms, comparisons, rows, split_notes, _of_schema(found, COMPARE_SCHEMA)
    )


def run_files_of(
    run_dir: Path,
    resolved: Mapping[str, Any],
    outcome: RunOutcome,
    split: FormattedSplit,
    verdict: Verdict | None,
    stored_comparisons: Sequence[Mapping[str, Any]] = (),
) -> RunFiles:
    """The record :func:`read_run` reads back from the run written from these values, built
    from the values (nothing is read) by the same :func:`run_files`: the session finish's
    page is rendered from memory.

    ``resolved`` is the resolved suite as given to ``artifacts.write_outcome``; an arm folder
    is one the run writes (generations, a report or re-batched outputs)."""
    folders = set(outcome.generations) | set(outcome.arm_reports)
    folders |= {arm for arm, outputs in outcome.rebatched.items() if outputs}
    arms: dict[str, StoredArm | None] = {}
    for name in folders:
        report = outcome.arm_reports.get(name)
        by_slice = outcome.generations.get(name) or {}
        arms[name] = None if report is None else (
            report,
            outcome.telemetry.get(name),
            {lang: by_slice.get(lang, []) for lang in report["slices"]},
        )  # fmt: skip
    lines = json_lines(split.raw.decode("utf-8"))
    rows = [json.loads(line) for line in lines if line.strip()]
    compares = {str(report["name"]): report for report in stored_comparisons}
    return run_files(
        artifacts.stored_resolved(resolved, split), verdict, arms, outcome.comparison_reports,
        rows, [], compares,
    )  # fmt: skip


def run_files(
    resolved: Mapping[str, Any],
    verdict: Any,
    arms: Mapping[str, StoredArm | None],
    comparisons: Mapping[str, Any],
    rows: list[dict[str, Any]] | None,
    split_notes: list[str],
    compares: Mapping[str, Any],
) -> RunFiles:
    """The one builder of :class:`RunFiles`, from the files (:func:`read_run`) and from memory
    (:func:`run_files_of`): every value in its stored form (``artifacts.stored_form``, the
    value the run's file holds); the arms (``None``: a folder without a report, noted) in the
    resolved suite's order, then the others by name, base-kind arms first (a configured arm
    that has none is noted); the comparison reports by name, the configured ones first (a
    missing one noted), then the others by file name; ``compares`` (the comparisons with stored
    runs, by name) by file name."""
    stored = _stored_mapping(resolved)
    notes: list[str] = []
    held: dict[str, StoredArm] = {}
    for name in arm_order(_arm_names(stored), arms):
        arm = arms.get(name)
        if arm is None:
            notes.append(
                f"arm {name!r} has no evaluation report (it was not run, or the run stopped)"
            )
            continue
        report, telemetry, records = arm
        held[name] = cast(
            StoredArm, (stored_form(report), stored_form(telemetry), stored_form(records))
        )
    held = dict(sorted(held.items(), key=lambda item: item[1][0].get("model_kind") != "base"))
    reports: dict[str, ComparisonReport] = {}
    for name in _comparison_names(stored):
        if name in comparisons:
            reports[name] = cast(ComparisonReport, stored_form(comparisons[name]))
        else:
            notes.append(
                f"comparison {name!r} has no report: an arm is missing, or the identity gate "
                "refused it (the terminal output and rescore say which field differed)"
            )
    for name in _by_file_name(comparisons):
        if name not in reports:
            reports[name] = cast(ComparisonReport, stored_form(comparisons[name]))
    against = [cast(dict[str, Any], stored_form(compares[n])) for n in _by_file_name(compares)]
    return RunFiles(
        stored, stored_form(verdict), held, reports, rows, notes, list(split_notes), against
    )


def summary_inputs(run_dir: Path) -> SummaryInputs:
    """What the run's Markdown summary shows, read from ``run_dir`` through the validating
    reader into the record :func:`summary_inputs_of` builds from memory (:func:`summary_of`):
    the resolved suite, the verdict (None when absent), the arms' reports, the comparison
    reports and the comparisons with stored runs."""
    run_dir = Path(run_dir)
    resolved = artifacts.read_json(runlayout.resolved(run_dir))
    resolved = resolved if isinstance(resolved, dict) else {}
    verdict_path = runlayout.verdict(run_dir)
    verdict = artifacts.read_json(verdict_path) if verdict_path.is_file() else None
    found = _report_files(run_dir)
    return summary_of(
        run_dir.name,
        resolved,
        verdict,
        arm_reports(run_dir, resolved),
        _of_schema(found, COMPARISON_SCHEMA),
        _of_schema(found, COMPARE_SCHEMA),
    )


def summary_inputs_of(
    run_dir: Path,
    resolved: Mapping[str, Any],
    outcome: RunOutcome,
    split: FormattedSplit,
    verdict: Verdict | None,
    compares: Sequence[Mapping[str, Any]] = (),
) -> SummaryInputs:
    """:func:`summary_inputs` of the run just written from these values, built from them by the
    same :func:`summary_of` (nothing is read)."""
    return summary_of(
        Path(run_dir).name,
        artifacts.stored_resolved(resolved, split),
        verdict,
        outcome.arm_reports,
        outcome.comparison_reports,
        {str(report["name"]): report for report in compares},
    )


def summary_of(
    run_name: str,
    resolved: Mapping[str, Any],
    verdict: Any,
    reports: Mapping[str, Any],
    comparisons: Mapping[str, Any],
    compares: Mapping[str, Any],
) -> SummaryInputs:
    """The one builder of :class:`SummaryInputs`, from the files (:func:`summary_inputs`) and
    from memory (:func:`summary_inputs_of`): every value in its stored form
    (``artifacts.stored_form``); the arms' reports in the resolved suite's order, then the
    others by name; the comparison reports and the comparisons with stored runs (each by name)
    by file name."""
    stored = _stored_mapping(resolved)
    return SummaryInputs(
        run_name=run_name,
        resolved=stored,
        verdict=stored_form(verdict),
        reports={
            name: cast(dict[str, Any], stored_form(reports[name]))
            for name in arm_order(_arm_names(stored), reports)
            if name in reports
        },
        comparisons=[
            cast(dict[str, Any], stored_form(comparisons[name]))
            for name in _by_file_name(comparisons)
        ],
        compares=[
            cast(dict[str, Any], stored_form(compares[name])) for name in _by_file_name(compares)
        ],
    )


def _stored_mapping(value: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON object in its stored form."""
    return cast(dict[str, Any], stored_form(value))


def _arm_names(resolved: Mapping[str, Any]) -> list[str]:
    """The arms a resolved suite configures, in its order."""
    return list((resolved.get("arms") or {}).keys())


def _comparison_names(resolved: Mapping[str, Any]) -> list[str]:
    """The comparison reports a resolved suite configures, by name, in its order."""
    return [
        comparison.get("name") or f"{comparison['candidate']}-vs-{comparison['reference']}"
        for comparison in resolved.get("comparisons") or []
    ]


def _by_file_name(reports: Mapping[str, Any]) -> list[str]:
    """Report names in the order of their files (``<name>.json``) in ``report/``."""
    return sorted(reports, key=lambda name: f"{name}.json")


def _report_files(run_dir: Path) -> dict[str, Any]:
    """Every ``report/*.json`` of the run, read once through the validating reader, by name."""
    return {
        path.stem: artifacts.read_json(path)
        for path in sorted(runlayout.report_dir(run_dir).glob("*.json"))
    }


def _of_schema(found: Mapping[str, Any], schema: str) -> dict[str, Any]:
    """The reports of ``found`` whose ``schema_version`` is ``schema``."""
    return {
        name: report
        for name, report in found.items()
        if isinstance(report, dict) and report.get("schema_version") == schema
    }


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
