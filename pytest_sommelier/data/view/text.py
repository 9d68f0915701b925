"""What the terminal, Markdown and HTML views share: metric short names, number and interval
formatting, plain and Markdown tables. Pure: values in, text out.

Invariant kept: a value is written the same way in every view (three decimals, ``n/a`` for
none, signed bounds for intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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
