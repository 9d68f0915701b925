"""How a value and an interval are written, and which interval of a report block is the
selected one: the rules every view and every gate reason share. Pure: values in, text out.

Invariant kept: a value is written the same way everywhere (three decimals, ``n/a`` for none,
signed bounds for intervals); a block's selected intervals are its ``intervals`` (the ones
``[statistics] interval`` chose), or its ``ci95`` for a block with no ``intervals`` key (a
report written before 0.3); the gates read them through the same functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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


def selected_key(block: Mapping[str, Any]) -> str:
    """Which block of a report block holds its selected intervals: ``intervals`` (what
    ``[statistics] interval`` chose), or ``ci95`` when the block has no ``intervals`` key (a
    report written before 0.3). The one rule gates and views share."""
    return "intervals" if "intervals" in block else "ci95"


def selected_block(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """The intervals ``[statistics] interval`` selected for a report block (its ``intervals``),
    or its ``ci95`` for a report written before they existed; ``{}`` when that is not a block."""
    found = block.get(selected_key(block))
    return found if isinstance(found, Mapping) else {}


def selected_entries(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """The per-metric entries of a report block's selected intervals (``{}`` when none)."""
    entries = selected_block(block).get("intervals")
    return entries if isinstance(entries, Mapping) else {}


def selected_interval(block: Mapping[str, Any], metric: str) -> Mapping[str, Any] | None:
    """One metric's selected interval entry of a report block (None when absent)."""
    entry: Mapping[str, Any] | None = selected_entries(block).get(metric)
    return entry


__all__ = [
    "fmt",
    "fmt_interval",
    "selected_block",
    "selected_entries",
    "selected_interval",
    "selected_key",
]
