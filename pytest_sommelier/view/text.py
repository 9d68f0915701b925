"""What the terminal, Markdown and HTML views share: metric short names, number and interval
formatting (``core.text``, re-exported), plain and Markdown tables. Pure: values in, text out.

Invariant kept: a value is written the same way in every view (three decimals, ``n/a`` for
none, signed bounds for intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_sommelier.core.text import fmt as fmt
from pytest_sommelier.core.text import fmt_interval as fmt_interval
from pytest_sommelier.core.text import selected_block as selected_block
from pytest_sommelier.core.text import selected_interval as selected_interval

SHORT = {
    "valid_json_rate": "valid_json",
    "function_name_accuracy": "name_acc",
    "argument_exact_match": "args_exact",
    "argument_f1": "args_f1",
    "full_call_exact_match": "full_call",
}


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """Left-aligned columns as wide as their widest cell, two spaces apart."""
    table = list(rows)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *table, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip()]
    for row in table:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return out


def md_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out.extend("| " + " | ".join(row) + " |" for row in rows)
    return out


POWER_METRIC = "full_call_exact_match"
"""The metric whose design effect and minimum detectable effect the views show per block."""


def methods_text(block: Mapping[str, Any]) -> str:
    """``rates bonett_price_adjusted_wald, args_f1 jackknife_t_paired``: the rate metrics'
    method, then any other metric's whose method differs."""
    entries = selected_block(block).get("intervals") or {}
    rate = (entries.get(POWER_METRIC) or {}).get("method")
    if rate is None:
        return str(selected_block(block).get("method") or "n/a")
    others = [
        f"{SHORT.get(name, name)} {entry['method']}"
        for name, entry in entries.items()
        if entry and entry.get("method") != rate and name != POWER_METRIC
    ]
    return ", ".join([f"rates {rate}", *others])


def power_text(block: Mapping[str, Any], metric: str = POWER_METRIC) -> str | None:
    """``detectable at 80% power: ±0.12 with 84 pairs (48 clusters, design effect 1.30)``
    from a block's power summary (None without one)."""
    summary = (block.get("power") or {}).get(metric)
    if not summary:
        return None
    power, pairs = summary["power"], summary["pairs"]
    mde = summary.get("minimum_detectable_effect")
    head = f"detectable at {power:.0%} power:"
    if not pairs:
        text = f"{head} nothing (no pairs)"
    elif summary.get("discordance_floored"):
        text = f"{head} nothing (no discordant pair in {pairs} pairs)"
    elif mde is None:
        text = f"{head} nothing with {pairs} pairs"
    elif not summary.get("attainable", True):
        psi = summary["discordant_proportion"]
        text = f"{head} nothing at discordance {psi:.3f} with {pairs} pairs (±{mde:.2f} needed)"
    else:
        text = f"{head} ±{mde:.2f} with {pairs} pairs"
    if summary.get("clusters") is not None and summary["clusters"] < pairs:
        text += f" ({summary['clusters']} clusters, design effect {summary['design_effect']:.2f})"
    return text


def discordant_text(entry: Mapping[str, Any] | None) -> str:
    """``12/3``: candidate-only / reference-only pairs of an interval entry (``n/a`` without)."""
    counts = (entry or {}).get("discordant")
    if not counts:
        return "n/a"
    return f"{counts['candidate_only']}/{counts['reference_only']}"
