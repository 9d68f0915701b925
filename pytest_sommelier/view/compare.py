"""The comparison of a run with a stored run (``core.stored_comparison.compare_runs``'s
report) as text: the terminal lines (``compare_lines``) and the Markdown twin
(``compare_markdown``, ``report/compare-NNNN.md``). Pure: a report in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.verdict import AgainstStored
from pytest_sommelier.view.text import (
    SHORT,
    fmt,
    fmt_interval,
    md_table,
    methods_text,
    sample_text,
    scorer_metrics,
    selected_block,
    selected_interval,
    table,
)


def _cell(block: Mapping[str, Any], metric: str) -> str:
    """A delta with its selected interval (the ``ci95`` of a report written before 0.3)."""
    interval = selected_interval(block, metric)
    return f"{fmt(block['deltas'].get(metric), True)} {fmt_interval(interval)}"


def _metrics(block: Mapping[str, Any]) -> list[str]:
    """The columns of one compared arm: the five, then each extension scorer both runs were
    scored with (its deltas are in the block; none without scorers)."""
    return [*METRIC_NAMES, *scorer_metrics(block["deltas"])]


def _rows(block: Mapping[str, Any], names: Sequence[str]) -> list[list[str]]:
    """``overall`` then one row per slice: each metric's delta with its selected interval."""
    rows = [["overall", *[_cell(block, m) for m in names]]]
    rows += [[lang, *[_cell(sub, m) for m in names]] for lang, sub in block["slices"].items()]
    return rows


def _ids(items: Sequence[Mapping[str, Any]], count: int) -> str:
    shown = ", ".join(item["example_id"] for item in items)
    more = count - len(items)
    return (shown or "-") + (f" (+{more} more)" if more > 0 else "")


def _level(report: Mapping[str, Any]) -> str:
    """``95% intervals, interval = auto: rates bonett_price_adjusted_wald, args_f1 ...``."""
    for block in report["arms"].values():
        if block.get("status") == "compared":
            selected = selected_block(block)
            level = selected.get("confidence_level", 0.95)
            kind = selected.get("interval", "bootstrap")
            return f"{level:.0%} intervals, interval = {kind}: {methods_text(block)}"
    return "paired"


def _samples(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(this run | the stored run, what a sampled run says)`` for each side that is a seeded
    sample (``view.text.sample_text``); none for two runs of the whole split."""
    sides = (("this run", report.get("candidate")), ("the stored run", report.get("reference")))
    found = []
    for who, side in sides:
        text = sample_text({"test_split": {"sample": (side or {}).get("sample")}})
        if text:
            found.append((who, text))
    return found


def compare_lines(report: Mapping[str, Any]) -> list[str]:
    """The terminal lines of a comparison with a stored run: per arm, the deltas with their
    intervals per slice, McNemar's discordant counts and the flipped examples; a refused arm
    is one line."""
    reference = report["reference"]
    lines = [
        f"against {reference['describe']}: this run minus the stored run, paired by example "
        f"({_level(report)})"
    ]
    lines += [f"{who}: {text}" for who, text in _samples(report)]
    for arm, block in report["arms"].items():
        if block["status"] != "compared":
            lines.append(f"{arm}: REFUSED: {block['reason']}")
            continue
        change = " (adapter changed)" if block.get("adapter_changed") else ""
        lines.append(f"{arm} vs {block['reference_arm']}{change}")
        names = _metrics(block)
        header = ["slice", *[SHORT.get(m, m) for m in names]]
        lines += ["  " + line for line in table(header, _rows(block, names))]
        flips, mcnemar = block["flips"], block["mcnemar"]
        lines.append(
            f"  McNemar exact (full_call): fixed {mcnemar['candidate_only']}, broken "
            f"{mcnemar['reference_only']}, p = {mcnemar['p_value']:.4g}; identical outputs "
            f"{block['identical_outputs']} of {block['compared_examples']}"
        )
        if flips["fixed_count"]:
            lines.append(f"  fixed:  {_ids(flips['fixed'], flips['fixed_count'])}")
        if flips["broken_count"]:
            lines.append(f"  broken: {_ids(flips['broken'], flips['broken_count'])}")
    for arm in report.get("only_in_reference") or []:
        lines.append(f"{arm}: only in {reference['describe']} (not in this run)")
    return lines


def md_cell(text: Any) -> str:
    """A Markdown table cell: pipes escaped, angle brackets as entities, one line."""
    value = " ".join(str(text).split())
    return value.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def compare_markdown(report: Mapping[str, Any], *, heading: str = "#") -> str:
    """The Markdown twin of :func:`compare_lines` (``report/compare-NNNN.md``)."""
    reference, candidate = report["reference"], report["candidate"]
    lines = [
        f"{heading} Run {md_cell(candidate['run_id'])} vs {md_cell(reference['describe'])}",
        "",
        f"This run minus the stored run, paired by example; intervals: {md_cell(_level(report))}.",
    ]
    lines += [f"\n**{who}**: {md_cell(text)}" for who, text in _samples(report)]
    for arm, block in report["arms"].items():
        lines.append("")
        if block["status"] != "compared":
            lines.append(f"**{md_cell(arm)}: refused**: {md_cell(block['reason'])}")
            continue
        change = " (adapter changed)" if block.get("adapter_changed") else ""
        lines += [f"{heading}# {md_cell(arm)} vs {md_cell(block['reference_arm'])}{change}", ""]
        names = _metrics(block)
        lines += md_table(["slice", *names], _rows(block, names))
        mcnemar, flips = block["mcnemar"], block["flips"]
        fixed = md_cell(_ids(flips["fixed"], flips["fixed_count"]))
        broken = md_cell(_ids(flips["broken"], flips["broken_count"]))
        lines += [
            "",
            f"McNemar exact (full_call_exact_match): fixed {mcnemar['candidate_only']}, broken "
            f"{mcnemar['reference_only']}, two-sided p = {mcnemar['p_value']:.4g}. Identical "
            f"outputs: {block['identical_outputs']} of {block['compared_examples']}.",
            "",
            f"- fixed (stored run missed, this run hits): {fixed}",
            f"- broken (stored run hit, this run misses): {broken}",
        ]
    for arm in report.get("only_in_reference") or []:
        where = md_cell(reference["describe"])
        lines += ["", f"{md_cell(arm)}: only in {where} (not in this run)."]
    return "\n".join(lines) + "\n"


def against_lines(against: AgainstStored) -> list[str]:
    """The terminal lines of a run against its stored runs: each comparison once, then a line
    per ``last`` spec with nothing stored yet."""
    lines = [line for report in against.compared() for line in compare_lines(report)]
    return lines + against.missing_lines()


__all__ = ["against_lines", "compare_lines", "compare_markdown", "md_cell"]
