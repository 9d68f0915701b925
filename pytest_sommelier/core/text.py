"""How a value and an interval are written, and which interval of a report block is the
selected one: the rules every view and every gate reason share. Pure: values in, text out.

Invariant kept: a value is written the same way everywhere (three decimals, ``n/a`` for none,
signed bounds for intervals); a block's selected intervals are its ``intervals`` (the ones
``[statistics] interval`` chose), or its ``ci95`` for a report written before 0.3.
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


def selected_block(block: Mapping[str, Any]) -> Mapping[str, Any]:
    """The intervals ``[statistics] interval`` selected for a report block (its ``intervals``),
    or its ``ci95`` for a report written before they existed."""
    found: Mapping[str, Any] = block.get("intervals") or block.get("ci95") or {}
    return found


def selected_interval(block: Mapping[str, Any], metric: str) -> Mapping[str, Any] | None:
    """One metric's selected interval entry of a report block (None when absent)."""
    entry: Mapping[str, Any] | None = (selected_block(block).get("intervals") or {}).get(metric)
    return entry


__all__ = ["fmt", "fmt_interval", "selected_block", "selected_interval"]
