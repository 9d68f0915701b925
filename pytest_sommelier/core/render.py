"""Rendering reports as terminal lines and Markdown. Pure: reports in, text out.

Invariant kept: every number shown is read from a report dict (nothing recomputed here), and
matched-pair language gaps are never shown in the same table as marginal full-slice gaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from pytest_sommelier.core.acceptable import METRIC_LABEL as ACCEPTABLE_LABEL
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE
from pytest_sommelier.core.gates import threshold_text
from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    argument_diff_paths,
    canonical_json,
    full_call_hit,
)
from pytest_sommelier.core.misses import LANGUAGE_FLAG
from pytest_sommelier.core.parse import STATUS_OK
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.reports import adapter_had_no_effect
from pytest_sommelier.core.types import (
    Call,
    ComparisonReport,
    EvaluationReport,
    GenerationRecord,
    Verdict,
)

SHORT = {
    "valid_json_rate": "valid_json",
    "function_name_accuracy": "name_acc",
    "argument_exact_match": "args_exact",
    "argument_f1": "args_f1",
    "full_call_exact_match": "full_call",
}


def fmt(value: float | None, signed: bool = False) -> str:
    """A metric value with three decimals; ``n/a`` for null."""
    if value is None:
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def fmt_interval(interval: Mapping[str, Any] | None) -> str:
    """An interval ``[lower, upper]`` with signed three-decimal bounds; ``n/a`` for none."""
    if not interval:
        return "n/a"
    return f"[{fmt(interval.get('lower'), True)}, {fmt(interval.get('upper'), True)}]"


def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """Left-aligned columns as wide as their widest cell, two spaces apart."""
    table = list(rows)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *table, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip()]
    for row in table:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return out


def metrics_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """One row per arm and slice (and overall): the five metrics and the example count."""
    header = ["arm", "slice", *[SHORT[m] for m in METRIC_NAMES], "n"]
    rows = []
    for arm, report in arm_reports.items():
        blocks = [(lang, block["metrics"]) for lang, block in report["slices"].items()]
        blocks.append(("overall", report["metrics"]))
        for name, metrics in blocks:
            n = metrics["valid_json_rate"]["denominator"]
            rows.append([arm, name, *[fmt(metrics[m]["value"]) for m in METRIC_NAMES], str(n)])
    return _table(header, rows)


def acceptable_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """``acceptable_call_match`` per arm and slice, apart from the five (none when no arm
    reports it): value and numerator/denominator."""
    rows = []
    for arm, report in arm_reports.items():
        if ACCEPTABLE not in report["metrics"]:
            continue
        blocks = [(lang, block["metrics"]) for lang, block in report["slices"].items()]
        for name, metrics in [*blocks, ("overall", report["metrics"])]:
            metric = metrics[ACCEPTABLE]
            count = f"{metric['numerator']}/{metric['denominator']}"
            rows.append([arm, name, fmt(metric["value"]), count])
    if not rows:
        return []
    return [
        f"{ACCEPTABLE_LABEL}:",
        *("  " + line for line in _table(["arm", "slice", "value", "hits/n"], rows)),
    ]


def miss_category_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """The misses of each arm and slice by category (core.misses), nonzero categories only."""
    rows = []
    for arm, report in arm_reports.items():
        slices = [(lang, block.get("misses")) for lang, block in report["slices"].items()]
        for name, block in [*slices, ("overall", report.get("misses"))]:
            if not block:
                continue
            counts = [f"{k} {v}" for k, v in block["categories"].items() if v]
            if block.get(LANGUAGE_FLAG):
                counts.append(f"({LANGUAGE_FLAG} {block[LANGUAGE_FLAG]})")
            rows.append([arm, name, str(block["misses"]), ", ".join(counts) or "-"])
    if not rows:
        return []
    return [
        "misses by category:",
        *("  " + line for line in _table(["arm", "slice", "misses", "categories"], rows)),
    ]


def comparison_lines(
    comparison_reports: Mapping[str, ComparisonReport], errors: Mapping[str, str]
) -> list[str]:
    """Deltas with paired-bootstrap intervals, overall and per slice, for each comparison."""
    lines: list[str] = []
    for name, report in comparison_reports.items():
        level = report["ci95"].get("confidence_level", 0.95)
        lines.append(f"{name} (candidate - reference, {level:.0%} paired bootstrap)")
        header = ["slice", *[SHORT[m] for m in METRIC_NAMES]]
        rows = [["overall", *[_delta_cell(report, None, m) for m in METRIC_NAMES]]]
        for lang in report.get("slices", {}):
            rows.append([lang, *[_delta_cell(report, lang, m) for m in METRIC_NAMES]])
        lines.extend("  " + line for line in _table(header, rows))
        if ACCEPTABLE in report["deltas"]:
            cells = [f"overall {_delta_cell(report, None, ACCEPTABLE)}"]
            cells += [
                f"{lang} {_delta_cell(report, lang, ACCEPTABLE)}" for lang in report["slices"]
            ]
            lines.append(f"  {ACCEPTABLE_LABEL}: {'; '.join(cells)}")
        mcnemar = report.get("mcnemar")
        if mcnemar:
            lines.append(
                f"  McNemar exact (full_call): candidate-only {mcnemar['candidate_only']}, "
                f"reference-only {mcnemar['reference_only']}, p = {mcnemar['p_value']:.4g}"
            )
        if report.get("compared_examples"):
            lines.append(
                f"  identical outputs (byte for byte): {report['identical_outputs']} of "
                f"{report['compared_examples']}"
            )
    for name, message in errors.items():
        lines.append(f"{name}: REFUSED: {message}")
    return lines


def no_effect_lines(
    comparison_reports: Mapping[str, ComparisonReport],
    arm_reports: Mapping[str, EvaluationReport],
) -> list[str]:
    """One prominent line per adapter-vs-base comparison whose outputs are (almost) all
    byte-identical to the base's (``reports.adapter_had_no_effect``)."""
    lines = []
    for name, report in comparison_reports.items():
        sides = (arm_reports.get(report["candidate"]), arm_reports.get(report["reference"]))
        kinds = [arm["model_kind"] if arm else None for arm in sides]
        if adapter_had_no_effect(report, *kinds):
            lines.append(
                f"adapter had no effect on {report['identical_outputs']} of "
                f"{report['compared_examples']} outputs: was it loaded? ({name}: candidate "
                "outputs byte-identical to the reference's)"
            )
    return lines


def _delta_cell(report: ComparisonReport, lang: str | None, metric: str) -> str:
    """A delta with its interval, overall (``lang`` None) or in one slice."""
    block: Mapping[str, Any] = report if lang is None else report["slices"][lang]
    delta = block["deltas"].get(metric)
    interval = block["ci95"]["intervals"].get(metric)
    return f"{fmt(delta, True)} {fmt_interval(interval)}"


def gap_lines(
    arm_reports: Mapping[str, EvaluationReport], metric: str = "full_call_exact_match"
) -> list[str]:
    """Matched-pair language gaps (target - reference) with intervals, one row per arm/slice."""
    rows = []
    for arm, report in arm_reports.items():
        for lang, block in (report.get("paired_slices") or {}).items():
            rows.append(
                [
                    arm,
                    f"{lang} - {block['reference_slice']}",
                    str(block["pairs"]),
                    f"{block['coverage']:.2f}",
                    fmt(block["gaps"].get(metric), True),
                    fmt_interval(block["ci95"]["intervals"].get(metric)),
                ]
            )
    if not rows:
        return []
    return _table(["arm", "gap", "pairs", "coverage", SHORT[metric], "interval"], rows)


def gate_lines(verdict: Verdict | None) -> list[str]:
    """Each gate with its observed value and threshold, then the verdict."""
    if verdict is None:
        return ["gates: off (--sommelier-gates=off)"]
    lines = []
    for gate in verdict["gates"]:
        status = "PASS" if gate["passed"] else "FAIL"
        threshold = threshold_text(gate["threshold"])
        where = f"{gate.get('subject', '')} {gate['metric']} [{gate['slice']}]".strip()
        line = f"{status} {gate['name']}: {where} observed {fmt(gate['observed'])} ({threshold})"
        if not gate["passed"] and gate.get("reason"):
            line += f": {gate['reason']}"
        lines.append(line)
    lines.append(f"verdict: {verdict['verdict'].upper()}")
    return lines


def describe_miss(record: GenerationRecord, gold_call: Call) -> str:
    """A few lines explaining a miss: the gold call, the parsed call (or the raw text when it
    did not parse), and the argument paths that differ."""
    lines = [f"{record['arm']}::{record['language']}::{record['example_id']}"]
    if record.get("miss_category"):
        flag = " (value_language_mismatch)" if record.get(LANGUAGE_FLAG) else ""
        lines.append(f"  category: {record['miss_category']}{flag}")
    lines.append(f"  gold:   {canonical_json(gold_call)}")
    parsed = record["parsed_call"]
    if record["parse_status"] == STATUS_OK and parsed is not None:
        lines.append(f"  parsed: {canonical_json(parsed)}")
        if parsed["name"] != gold_call["name"]:
            lines.append(f"  name differs: {parsed['name']!r} != {gold_call['name']!r}")
        paths = argument_diff_paths(gold_call["arguments"], parsed["arguments"])
        if paths:
            lines.append(f"  argument paths that differ: {', '.join(paths)}")
    else:
        raw = record["raw_text"]
        shown = raw if len(raw) <= 240 else raw[:240] + f"... ({len(raw)} chars)"
        lines.append(f"  {record['parse_status']}: {shown!r}")
    return "\n".join(lines)


# -- Markdown --------------------------------------------------------------------------------


def _md_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out.extend("| " + " | ".join(row) + " |" for row in rows)
    return out


def _acceptable_markdown(report: ComparisonReport) -> list[str]:
    """The sixth metric's deltas and intervals, apart from the five (none when absent)."""
    if ACCEPTABLE not in report["deltas"]:
        return []
    lines = [
        "",
        f"## {ACCEPTABLE_LABEL}",
        "",
        f"`{ACCEPTABLE}`: reported beside the five strict metrics, never instead of them.",
        "",
    ]
    rows = [
        [
            lang or "overall",
            fmt(block["deltas"].get(ACCEPTABLE), True),
            fmt_interval(block["ci95"]["intervals"].get(ACCEPTABLE)),
        ]
        for lang, block in _comparison_blocks(report)
    ]
    return lines + _md_table(["slice", "delta", "interval"], rows)


def _comparison_blocks(report: ComparisonReport) -> list[tuple[str | None, Mapping[str, Any]]]:
    """``(None, the overall block)``, then ``(lang, slice block)`` per slice: each has
    ``deltas`` and ``ci95``."""
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
    table = _md_table(["arm", "slice", "misses", "categories"], rows)
    return ["", "## Misses by category", "", *table]


def comparison_markdown(report: ComparisonReport) -> str:
    """The Markdown twin of a comparison report; matched-pair and marginal gaps in separate
    tables, the marginal one labelled descriptive."""
    ci = report["ci95"]
    lines = [
        f"# {report['candidate']} vs {report['reference']}",
        "",
        f"Candidate minus reference, paired by example. Intervals: {ci['method']}, "
        f"{ci['resamples']} resamples, confidence {ci['confidence_level']}, seed {ci['seed']}.",
        "",
        "## Adapter gain",
        "",
    ]
    header = ["slice", "metric", "delta", "interval"]
    rows = []
    for lang, block in _comparison_blocks(report):
        for metric in METRIC_NAMES:
            rows.append(
                [
                    lang or "overall",
                    metric,
                    fmt(block["deltas"].get(metric), True),
                    fmt_interval(block["ci95"]["intervals"].get(metric)),
                ]
            )
    lines.extend(_md_table(header, rows))
    lines += _acceptable_markdown(report) + _misses_markdown(report)
    mcnemar = report.get("mcnemar")
    if mcnemar:
        lines += [
            "",
            f"McNemar exact test on full_call_exact_match (supporting evidence): candidate-only "
            f"{mcnemar['candidate_only']}, reference-only {mcnemar['reference_only']}, "
            f"two-sided p = {mcnemar['p_value']:.4g}.",
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
                        fmt_interval(block["ci95"]["intervals"].get(metric)),
                    ]
                )
    if rows:
        lines.extend(
            _md_table(["arm", "gap", "pairs", "coverage", "metric", "gap value", "interval"], rows)
        )
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
        lines.extend(_md_table(["arm", "gap", "metric", "gap value"], rows))
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
        lines.extend(_md_table(["arm", "seconds/example", "device-seconds/success"], rows))
        label = "cross-comparable" if efficiency.get("cross_comparable") else "not cross-comparable"
        lines += ["", f"Arms are {label}: {efficiency.get('reason', '')}"]
    return "\n".join(lines) + "\n"


Line = tuple[str, dict[str, bool]]
"""A terminal line and its markup (``{"red": True}``, ``{"bold": True, "green": True}``...)."""


def run_summary_lines(
    outcome: RunOutcome,
    run_dir: str | PathLike[str] | None,
    errored_items: int,
    misses_wanted: int,
    *,
    origins: Sequence[str] = (),
    stored: Sequence[str] = (),
) -> list[Line]:
    """Every line of one suite's terminal summary after its run was evaluated (a
    ``pipeline.RunOutcome``): run folder, where each arm came from (``origins``),
    completeness, metrics, comparisons, language gaps, the comparison with stored runs
    (``stored``, already rendered), gates and verdict (coloured), and the first
    ``misses_wanted`` misses."""
    lines: list[Line] = [(f"run directory: {run_dir}", {})]
    lines += [(line, {}) for line in origins]
    if not outcome.complete:
        missing = ", ".join(f"{a}: {n}" for a, n in outcome.missing.items() if n)
        detail = f"not scored: {missing}; " if missing else ""
        lines.append(
            (
                f"INCOMPLETE: {detail}{errored_items} item(s) errored; "
                "no passing verdict can be written",
                {"yellow": True},
            )
        )
    lines.append(("", {}))
    lines += [(line, {}) for line in metrics_lines(outcome.arm_reports)]
    lines += [(line, {}) for line in acceptable_lines(outcome.arm_reports)]
    comparisons = comparison_lines(outcome.comparison_reports, outcome.comparison_errors)
    if comparisons:
        lines.append(("", {}))
        lines += [(line, {}) for line in comparisons]
    no_effect = no_effect_lines(outcome.comparison_reports, outcome.arm_reports)
    lines += [(line, {"yellow": True, "bold": True}) for line in no_effect]
    gaps = gap_lines(outcome.arm_reports)
    if gaps:
        lines.append(("", {}))
        lines.append(("language gaps, matched pairs (full_call_exact_match):", {}))
        lines += [("  " + line, {}) for line in gaps]
    categories = miss_category_lines(outcome.arm_reports)
    if categories:
        lines.append(("", {}))
        lines += [(line, {}) for line in categories]
    if stored:
        lines.append(("", {}))
        lines += [(line, {}) for line in stored]
    lines.append(("", {}))
    for line in gate_lines(outcome.verdict):
        colour = {"PASS": "green", "FAIL": "red"}.get(line.split(" ", 1)[0])
        verdict_line = line.startswith("verdict:")
        passed = verdict_line and line.endswith("PASS")
        markup = {"green": True} if (colour == "green" or passed) else {}
        if colour == "red" or (verdict_line and not passed):
            markup = {"red": True}
        if verdict_line:
            markup = {**markup, "bold": True}
        lines.append((line, markup))
    lines += [(line, {}) for line in miss_lines(outcome, misses_wanted)]
    return lines


def miss_lines(outcome: RunOutcome, wanted: int) -> list[str]:
    """The miss drilldown: adapter arms first (a drilldown is usually about what the candidate
    got wrong), then the first ``wanted`` non-exact records, each with gold, parse and paths."""
    arms = sorted(
        outcome.records,
        key=lambda arm: outcome.arm_reports[arm].get("model_kind") != "adapter",
    )
    misses = [
        record
        for arm in arms
        for records in outcome.records[arm].values()
        for record in records
        if not full_call_hit(record, record["gold_call"])
    ]
    if not misses or wanted <= 0:
        return []
    lines = [
        "",
        f"misses (showing {min(wanted, len(misses))} of {len(misses)}; --sommelier-misses=N):",
    ]
    for record in misses[:wanted]:
        lines += ["  " + line for line in describe_miss(record, record["gold_call"]).splitlines()]
    return lines
