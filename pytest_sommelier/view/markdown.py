"""Comparison reports as Markdown (``report/<comparison>.md``). Pure: a report in, text out.

Invariant kept: every number shown is read from the report (nothing recomputed here), and
matched-pair language gaps are never shown in the same table as marginal full-slice gaps (the
marginal one is labelled descriptive).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_sommelier.core.abstention import LABELS as ABSTENTION_LABELS
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE
from pytest_sommelier.core.call_sets import LABELS as CALL_SET_LABELS
from pytest_sommelier.core.metrics import FULL_CALL_EXACT_MATCH, METRIC_NAMES
from pytest_sommelier.core.misses import LANGUAGE_FLAG
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import ComparisonReport
from pytest_sommelier.view.text import (
    REASONING_HEADER,
    discordant_text,
    extra_metrics,
    fmt,
    fmt_interval,
    md_table,
    methods_text,
    power_text,
    reasoning_hint,
    reasoning_rows,
    selected_block,
    selected_interval,
)


def _extra_what(name: str) -> str:
    """What kind of metric beyond the five ``name`` is, in one sentence: BFCL's
    acceptable values, one of parser v2's call-set metrics, an abstention metric, or an
    extension scorer."""
    if name == ACCEPTABLE:
        return "reported beside the five strict metrics, never instead of them."
    if name in CALL_SET_LABELS:
        return "a call-set metric of parser v2, reported after the five strict metrics."
    if name in ABSTENTION_LABELS:
        return "an abstention metric, reported after the five strict metrics."
    return "an extension scorer, reported after the five strict metrics."


def _acceptable_markdown(report: ComparisonReport) -> list[str]:
    """Each metric beyond the five (``acceptable_call_match``, parser v2's call-set metrics,
    the abstention metrics, extension scorers): deltas and intervals, apart from the five
    (none when absent)."""
    lines: list[str] = []
    for name, label in extra_metrics(report["deltas"]):
        what = _extra_what(name)
        lines += ["", f"## {label}", "", f"`{name}`: {what}", ""]
        rows = [
            [
                lang or "overall",
                fmt(block["deltas"].get(name), True),
                fmt_interval(selected_interval(block, name)),
                fmt_interval(block["ci95"]["intervals"].get(name)),
            ]
            for lang, block in _comparison_blocks(report)
        ]
        lines += md_table(["slice", "delta", "interval", "bootstrap (ci95)"], rows)
    return lines


def _comparison_blocks(report: ComparisonReport) -> list[tuple[str | None, Mapping[str, Any]]]:
    """``(None, the overall block)``, then ``(lang, slice block)`` per slice: each has
    ``deltas``, ``ci95`` and (0.3 on) ``intervals`` and ``power``."""
    return [(None, report), *report.get("slices", {}).items()]


def _misses_markdown(report: ComparisonReport) -> list[str]:
    """Misses by category per arm and slice (the comparison report's ``misses`` block)."""
    misses = report.get("misses")
    if not misses:
        return []
    rows = []
    for arm, block in misses.items():
        for name, counts in [*block["slices"].items(), ("overall", block["overall"])]:
            if counts is None:
                continue
            cells = [f"{k} {v}" for k, v in counts["categories"].items() if v]
            if counts.get(LANGUAGE_FLAG):
                cells.append(f"({LANGUAGE_FLAG} {counts[LANGUAGE_FLAG]})")
            rows.append([arm, name, str(counts["misses"]), ", ".join(cells) or "-"])
    table = md_table(["arm", "slice", "misses", "categories"], rows)
    return ["", "## Misses by category", "", *table]


def _reasoning_markdown(report: ComparisonReport) -> list[str]:
    """Each arm's reasoning figures (a declared ``[parser] reasoning`` rule), with the hint."""
    blocks = report.get("reasoning")
    if not blocks:
        return []
    lines = ["", "## Reasoning (separated before parser v1)", ""]
    lines += md_table(REASONING_HEADER, reasoning_rows(blocks))
    hint = reasoning_hint(blocks)
    return lines + (["", hint] if hint else [])


def _power_markdown(report: ComparisonReport) -> list[str]:
    """Per block: the pairs, clusters and design effect behind the intervals, their methods,
    and what the pairs can detect (absent for a report written before 0.3)."""
    if "power" not in report:
        return []
    rows = []
    for lang, block in _comparison_blocks(report):
        selected = selected_block(block)
        rows.append([lang or "overall", str(selected.get("pairs", "n/a")),
                     str(selected.get("clusters", "n/a")), methods_text(block),
                     power_text(block) or "n/a"])  # fmt: skip
    table = md_table(["slice", "pairs", "clusters", "methods", FULL_CALL_EXACT_MATCH], rows)
    return ["", "## Intervals, clusters and power", "", *table]


def comparison_markdown(report: ComparisonReport) -> str:
    """The Markdown twin of a comparison report; matched-pair and marginal gaps in separate
    tables, the marginal one labelled descriptive."""
    ci = report["ci95"]
    selected = selected_block(report)
    lines = [
        f"# {report['candidate']} vs {report['reference']}",
        "",
        f"Candidate minus reference, paired by example. Intervals: `interval = "
        f"{selected.get('interval', 'bootstrap')}`, confidence "
        f"{selected.get('confidence_level', ci['confidence_level'])}, seed {ci['seed']}; the "
        f"bootstrap column is the seed's {ci['method']} ({ci['resamples']} resamples), from the "
        "same draw.",
        "",
        "## Adapter gain",
        "",
    ]
    header = ["slice", "metric", "delta", "interval", "method", "discordant", "bootstrap (ci95)"]
    rows = []
    for lang, block in _comparison_blocks(report):
        for metric in METRIC_NAMES:
            entry = selected_interval(block, metric)
            degenerate = " degenerate" if (entry or {}).get("degenerate") else ""
            rows.append(
                [
                    lang or "overall",
                    metric,
                    fmt(block["deltas"].get(metric), True),
                    fmt_interval(entry) + degenerate,
                    str((entry or {}).get("method") or ci["method"]),
                    discordant_text(entry),
                    fmt_interval(block["ci95"]["intervals"].get(metric)),
                ]
            )
    lines.extend(md_table(header, rows))
    lines += _power_markdown(report)
    lines += _acceptable_markdown(report) + _misses_markdown(report)
    lines += _reasoning_markdown(report)
    mcnemar = report.get("mcnemar")
    if mcnemar:
        mid = mcnemar.get("mid_p_value")
        lines += [
            "",
            f"McNemar test on full_call_exact_match (supporting evidence): candidate-only "
            f"{mcnemar['candidate_only']}, reference-only {mcnemar['reference_only']}, "
            f"exact two-sided p = {mcnemar['p_value']:.4g}"
            + (f", mid-p = {mid:.4g}." if mid is not None else "."),
        ]
    lines += ["", "## Language gaps, matched pairs (primary)", ""]
    rows = []
    for arm, paired in (report.get("paired_language_gaps") or {}).items():
        for lang, block in (paired or {}).items():
            for metric in METRIC_NAMES:
                rows.append(
                    [
                        arm,
                        f"{lang} - {block['reference_slice']}",
                        str(block["pairs"]),
                        f"{block['coverage']:.2f}",
                        metric,
                        fmt(block["gaps"].get(metric), True),
                        fmt_interval(selected_interval(block, metric))
                        + (" degenerate" if (selected_interval(block, metric) or {}).get(
                            "degenerate") else ""),
                        str((selected_interval(block, metric) or {}).get("method") or "n/a"),
                        discordant_text(selected_interval(block, metric)),
                        fmt_interval(block["ci95"]["intervals"].get(metric)),
                    ]
                )
    if rows:
        header = ["arm", "gap", "pairs", "coverage", "metric", "gap value", "interval", "method",
                  "discordant", "bootstrap (ci95)"]  # fmt: skip
        lines.extend(md_table(header, rows))
        lines += ["", "Discordant: pairs where only the translation / only the root is right."]
    else:
        lines.append("No non-reference slice with matched pairs.")
    lines += [
        "",
        "## Language gaps, marginal full slices (descriptive only)",
        "",
        "Every scored row of each language, paired or not: the reference slice may hold examples "
        "with no translation, so this is not the language-tax estimate and carries no interval.",
        "",
    ]
    rows = []
    for arm, gaps in ((report.get("language_gaps") or {}).get("arms") or {}).items():
        for lang, block in (gaps or {}).items():
            for metric in METRIC_NAMES:
                rows.append(
                    [
                        arm,
                        f"{lang} - {block['reference_slice']}",
                        metric,
                        fmt(block["gaps"].get(metric), True),
                    ]
                )
    if rows:
        lines.extend(md_table(["arm", "gap", "metric", "gap value"], rows))
    efficiency = report.get("efficiency")
    if efficiency:
        lines += ["", "## Inference telemetry", ""]
        rows = []
        for arm in (report["candidate"], report["reference"]):
            block = efficiency.get(arm) or {}
            rows.append(
                [
                    arm,
                    fmt(block.get("seconds_per_example")),
                    fmt(block.get("device_seconds_per_success")),
                ]
            )
        lines.extend(md_table(["arm", "seconds/example", "device-seconds/success"], rows))
        label = "cross-comparable" if efficiency.get("cross_comparable") else "not cross-comparable"
        lines += ["", f"Arms are {label}: {efficiency.get('reason', '')}"]
    return "\n".join(lines) + "\n"


def outcome_markdown(outcome: RunOutcome) -> dict[str, str]:
    """Each comparison report of a run's outcome as Markdown, by comparison name (what
    ``data.store.artifacts.write_outcome`` writes beside the JSON)."""
    reports = outcome.comparison_reports
    return {name: comparison_markdown(report) for name, report in reports.items()}
