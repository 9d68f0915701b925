"""The run's Markdown summary for CI: ``report/summary.md`` and ``$GITHUB_STEP_SUMMARY``.

``summary_text(inputs)`` renders a ``data.store.runread.SummaryInputs`` (the session finish
builds it from memory, ``runread.summary_inputs_of``; for a stored run
``commands.rescore.summary_markdown(run_dir)`` has the store read it from the run's own files:
``suite.resolved.json``, ``gate_verdict.json``, each arm's ``evaluation_report.json``,
``report/<comparison>.json`` and ``report/compare-<NNNN>.json``); it reads no file itself:
the verdict, the gates, the metrics per arm and
slice, each comparison's deltas with their intervals, and the comparison with a stored run
(deltas, intervals, McNemar counts, flipped examples). The store
(``data.store.artifacts.write_summary``) writes it as ``report/summary.md`` and, when
``GITHUB_STEP_SUMMARY`` names a file, appends it there (the file GitHub Actions shows on the
job's page; other CI systems publish ``summary.md``).

Invariants kept: every number is read from a stored report (nothing recomputed); stored text
in a table cell is one line with ``|`` escaped and ``<``/``>`` as entities, so no stored value
can break the table or inject markup; ``summary.md`` is written atomically, and the step
summary is only ever appended to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_sommelier.core.gates import gate_text
from pytest_sommelier.core.metrics import METRIC_NAMES, VALID_JSON_RATE
from pytest_sommelier.data.store.history_record import adapter_text
from pytest_sommelier.data.store.runread import SummaryInputs
from pytest_sommelier.view.compare import compare_markdown, md_cell
from pytest_sommelier.view.text import (
    fmt,
    fmt_interval,
    md_table,
    methods_text,
    sample_text,
    scorer_metrics,
    selected_block,
    selected_interval,
    union_scorer_metrics,
)


def _gate_rows(verdict: Mapping[str, Any]) -> list[list[str]]:
    """Per gate: PASS/FAIL, its name, what it compared as the terminal says it
    (``core.gates.gate_text``, with a failed compare-fail gate's evidence: rounded as
    displayed, the bound tested named) and, for a gate
    that could not be evaluated, why (the verdict keeps the full-precision numbers)."""
    rows = []
    for gate in verdict.get("gates") or []:
        why = gate.get("reason") if gate.get("observed") is None else ""
        said = gate_text(gate)
        if not gate.get("passed") and gate.get("evidence"):  # a compare-fail gate's flips
            said += f"; {gate['evidence']}"
        rows.append(
            [
                "PASS" if gate.get("passed") else "**FAIL**",
                md_cell(gate.get("name")),
                md_cell(said),
                "" if gate.get("passed") else md_cell(why or ""),
            ]
        )
    return rows


def _metric_rows(
    reports: Mapping[str, Mapping[str, Any]], scorers: Sequence[str]
) -> list[list[str]]:
    """Per arm and slice: the five, then each scorer of ``scorers`` (an empty cell where the
    arm has none), then n."""
    rows = []
    for arm, report in reports.items():
        blocks = [(lang, b) for lang, b in (report.get("slices") or {}).items()]
        blocks.append(("overall", {"metrics": report.get("metrics") or {}}))
        for label, block in blocks:
            metrics = block.get("metrics") or {}
            n = (metrics.get(VALID_JSON_RATE) or {}).get("denominator", "")
            cells = [fmt((metrics.get(m) or {}).get("value")) for m in METRIC_NAMES]
            cells += [fmt(metrics[m].get("value")) if m in metrics else "" for m in scorers]
            rows.append([md_cell(arm), md_cell(label), *cells, str(n)])
    return rows


def _delta_rows(report: Mapping[str, Any], scorers: Sequence[str]) -> list[list[str]]:
    """Per slice: each metric's delta with its selected interval, the five then ``scorers``."""
    rows = []
    for label, block in [("overall", report), *(report.get("slices") or {}).items()]:
        cells = [
            f"{fmt((block.get('deltas') or {}).get(m), True)} "
            f"{fmt_interval(selected_interval(block, m))}"
            for m in [*METRIC_NAMES, *scorers]
        ]
        rows.append([md_cell(label), *cells])
    return rows


def summary_text(inputs: SummaryInputs) -> str:
    """The run's Markdown summary (see the module docstring), rendered from its values."""
    resolved, verdict, reports = inputs.resolved, inputs.verdict, inputs.reports
    word = (verdict or {}).get("verdict", "no verdict (gates off)")
    if verdict and word == "pass" and not verdict.get("gates"):
        word = "no gates (nothing was gated)"
    suite = md_cell(resolved.get("name", inputs.run_name))
    lines = [
        f"## sommelier: suite {suite}: {md_cell(str(word).upper())}",
        "",
        f"Run `{md_cell(resolved.get('run_id', inputs.run_name))}`, {len(reports)} arm(s), "
        + ("complete." if (verdict or {}).get("complete", True) else "**incomplete**."),
    ]
    sampled = sample_text(resolved)
    if sampled:
        lines += ["", f"**{md_cell(sampled)}**"]
    adapters = [
        f"{md_cell(arm)} `{md_cell(text)}`"
        for arm, spec in (resolved.get("arms") or {}).items()
        if isinstance(spec, Mapping) and (text := adapter_text(spec.get("adapter")))
    ]
    if adapters:
        lines += ["", "Adapters: " + ", ".join(adapters) + "."]
    if verdict and verdict.get("gates"):
        header = ["result", "gate", "what it compared", "why not evaluated"]
        lines += ["", "### Gates", "", *md_table(header, _gate_rows(verdict))]
        copies = verdict.get("per_candidate") or []
        if copies:
            lines += [
                "",
                "Per checkpoint, reported (the selected checkpoint's copy decides, above):",
                "",
                *md_table(header, _gate_rows({"gates": copies})),
            ]
    if reports:
        scorers = union_scorer_metrics(
            block.get("metrics") or {}
            for report in reports.values()
            for block in [report, *(report.get("slices") or {}).values()]
        )
        header = ["arm", "slice", *METRIC_NAMES, *scorers, "n"]
        lines += ["", "### Metrics", "", *md_table(header, _metric_rows(reports, scorers))]
    for report in inputs.comparisons:
        ci = selected_block(report)
        scorers = scorer_metrics(report.get("deltas") or {})
        lines += [
            "",
            f"### {md_cell(report.get('candidate'))} vs {md_cell(report.get('reference'))}",
            "",
            f"Candidate minus reference, paired by example ({md_cell(methods_text(report))}, "
            f"confidence {ci.get('confidence_level', '')}).",
            "",
            *md_table(["slice", *METRIC_NAMES, *scorers], _delta_rows(report, scorers)),
        ]
        mcnemar = report.get("mcnemar")
        if mcnemar:
            lines += [
                "",
                f"McNemar exact (full_call_exact_match): candidate-only "
                f"{mcnemar['candidate_only']}, reference-only {mcnemar['reference_only']}, "
                f"p = {mcnemar['p_value']:.4g}.",
            ]
    for compare in inputs.compares:
        lines += ["", compare_markdown(compare, heading="###").rstrip("\n")]
    return "\n".join(lines) + "\n"


__all__ = ["summary_text"]
