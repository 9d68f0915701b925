"""The run's Markdown summary for CI: ``report/summary.md`` and ``$GITHUB_STEP_SUMMARY``.

``summary_markdown(run_dir)`` reads only the run's own files (``suite.resolved.json``,
``gate_verdict.json``, each arm's ``evaluation_report.json``, ``report/<comparison>.json`` and
``report/compare-<NNNN>.json``) and returns the verdict, the gates, the metrics per arm and
slice, each comparison's deltas with their intervals, and the comparison with a stored run
(deltas, intervals, McNemar counts, flipped examples). ``write_summary`` writes it as
``report/summary.md`` and, when ``GITHUB_STEP_SUMMARY`` names a file, appends it there (the
file GitHub Actions shows on the job's page; other CI systems publish ``summary.md``).

Invariants kept: every number is read from a stored report (nothing recomputed); stored text
in a table cell is one line with ``|`` escaped and ``<``/``>`` as entities, so no stored value
can break the table or inject markup; ``summary.md`` is written atomically, and the step
summary is only ever appended to.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.reports import COMPARISON_SCHEMA
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history_compare import COMPARE_SCHEMA
from pytest_sommelier.data.store.history_record import arm_reports
from pytest_sommelier.errors import SommelierEnvironmentError
from pytest_sommelier.view.compare import compare_markdown, md_cell
from pytest_sommelier.view.text import (
    fmt,
    fmt_interval,
    md_table,
    methods_text,
    selected_block,
    selected_interval,
)

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def _reports(run_dir: Path, schema: str) -> dict[str, dict[str, Any]]:
    """``report/*.json`` of one schema, by file stem."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(runlayout.report_dir(run_dir).glob("*.json")):
        report = artifacts.read_json(path)
        if isinstance(report, dict) and report.get("schema_version") == schema:
            found[path.stem] = report
    return found


def _gate_rows(verdict: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for gate in verdict.get("gates") or []:
        threshold = ", ".join(f"{k} {v}" for k, v in sorted((gate.get("threshold") or {}).items()))
        rows.append(
            [
                "PASS" if gate.get("passed") else "**FAIL**",
                md_cell(gate.get("name")),
                md_cell(gate.get("subject") or ""),
                md_cell(f"{gate.get('metric')} [{gate.get('slice')}]"),
                fmt(gate.get("observed")),
                md_cell(threshold),
                "" if gate.get("passed") else md_cell(gate.get("reason") or ""),
            ]
        )
    return rows


def _metric_rows(reports: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for arm, report in reports.items():
        blocks = [(lang, b) for lang, b in (report.get("slices") or {}).items()]
        blocks.append(("overall", {"metrics": report.get("metrics") or {}}))
        for label, block in blocks:
            metrics = block.get("metrics") or {}
            n = (metrics.get("valid_json_rate") or {}).get("denominator", "")
            cells = [fmt((metrics.get(m) or {}).get("value")) for m in METRIC_NAMES]
            rows.append([md_cell(arm), md_cell(label), *cells, str(n)])
    return rows


def _delta_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for label, block in [("overall", report), *(report.get("slices") or {}).items()]:
        cells = [
            f"{fmt((block.get('deltas') or {}).get(m), True)} "
            f"{fmt_interval(selected_interval(block, m))}"
            for m in METRIC_NAMES
        ]
        rows.append([md_cell(label), *cells])
    return rows


def summary_markdown(run_dir: Path, compares: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The run's Markdown summary (see the module docstring); ``compares`` are comparisons
    with stored runs (default: every ``report/compare-*.json`` of the run)."""
    run_dir = Path(run_dir)
    resolved = artifacts.read_json(runlayout.resolved(run_dir))
    resolved = resolved if isinstance(resolved, dict) else {}
    verdict_path = runlayout.verdict(run_dir)
    verdict = artifacts.read_json(verdict_path) if verdict_path.is_file() else None
    word = (verdict or {}).get("verdict", "no verdict (gates off)")
    reports = arm_reports(run_dir, resolved)
    suite = md_cell(resolved.get("name", run_dir.name))
    lines = [
        f"## sommelier: suite {suite}: {md_cell(str(word).upper())}",
        "",
        f"Run `{md_cell(resolved.get('run_id', run_dir.name))}`, {len(reports)} arm(s), "
        + ("complete." if (verdict or {}).get("complete", True) else "**incomplete**."),
    ]
    if verdict and verdict.get("gates"):
        header = ["result", "gate", "subject", "metric [slice]", "observed", "threshold", "why"]
        lines += ["", "### Gates", "", *md_table(header, _gate_rows(verdict))]
    if reports:
        header = ["arm", "slice", *METRIC_NAMES, "n"]
        lines += ["", "### Metrics", "", *md_table(header, _metric_rows(reports))]
    for report in _reports(run_dir, COMPARISON_SCHEMA).values():
        ci = selected_block(report)
        lines += [
            "",
            f"### {md_cell(report.get('candidate'))} vs {md_cell(report.get('reference'))}",
            "",
            f"Candidate minus reference, paired by example ({md_cell(methods_text(report))}, "
            f"confidence {ci.get('confidence_level', '')}).",
            "",
            *md_table(["slice", *METRIC_NAMES], _delta_rows(report)),
        ]
        mcnemar = report.get("mcnemar")
        if mcnemar:
            lines += [
                "",
                f"McNemar exact (full_call_exact_match): candidate-only "
                f"{mcnemar['candidate_only']}, reference-only {mcnemar['reference_only']}, "
                f"p = {mcnemar['p_value']:.4g}.",
            ]
    stored = (
        list(compares) if compares is not None else list(_reports(run_dir, COMPARE_SCHEMA).values())
    )
    for compare in stored:
        lines += ["", compare_markdown(compare, heading="###").rstrip("\n")]
    return "\n".join(lines) + "\n"


def write_summary(
    run_dir: Path,
    compares: Sequence[Mapping[str, Any]] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """Write ``<run_dir>/report/summary.md`` and append the same text to the file named by
    ``GITHUB_STEP_SUMMARY`` (in ``environ``, default the process environment) when set;
    returns the summary's path."""
    run_dir = Path(run_dir)
    text = summary_markdown(run_dir, compares)
    target = runlayout.summary(run_dir)
    artifacts.atomic_write_text(target, text)
    step = (os.environ if environ is None else environ).get(STEP_SUMMARY)
    if step:
        try:
            with open(step, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        except OSError as exc:
            raise SommelierEnvironmentError(
                "SOM-SUMMARY-WRITE",
                f"appending to {STEP_SUMMARY} file {step} failed: {exc.strerror or exc}",
                "the CI runner sets this variable to a writable file; unset it outside CI",
            ) from exc
    return target


__all__ = ["summary_markdown", "write_summary"]
