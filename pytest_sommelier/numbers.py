"""The one parser of numbers, run numbers and true/false words written as text: on the command
line (``sommelier ...`` arguments, ``--sommelier-*`` options and their ini twins) and in suite
files (``stored = "3"``); and the one home of the words that name a stored run beside a number
(:data:`LAST`, :data:`LAST_ANY`, :data:`LABEL_PREFIX`: ``--sommelier-compare``, ``stored =``,
``sommelier compare``, the run store's lookup all import them).

Invariants kept: a number is ASCII digits only (``str.isdigit`` and ``int()`` also take ``²``,
``٢``, ``１`` and ``1_0``: none of them is a number here), finite, and inside the bounds the
caller gives; a true/false word is one of :data:`TRUE_WORDS` / :data:`FALSE_WORDS` and is never
read where a name is meant (callers that take names never call :func:`bool_word`). Every
function returns None (or a reason) instead of raising, so each caller words its own one-line
error with its own code. Dependency-free: any layer, and the idle plugin, may import it.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

_WHOLE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_RUN_NUMBER = re.compile(r"[0-9]{1,8}", re.ASCII)

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")

LAST = "last"
"""The newest complete stored run of the suite whose verdict was pass."""
LAST_ANY = "last-any"
"""The newest complete stored run of the suite, whatever its verdict."""
LABEL_PREFIX = "label:"
"""``label:v5``: the newest stored run carrying that ``--sommelier-label``."""
BASELINE_WORDS = (LAST, LAST_ANY)
"""The words a stored-run spec may be instead of a number or a label."""


def whole_number(text: object, *, low: int | None = None, high: int | None = None) -> int | None:
    """``text`` as an ``int`` when it is ASCII digits (an optional sign) within ``[low, high]``,
    else None (``"²"``, ``"1_0"``, ``"１"``, ``"1.0"``, ``" "`` are None)."""
    if not isinstance(text, str) or _WHOLE.fullmatch(text.strip()) is None:
        return None
    value = int(text.strip())
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def decimal_number(
    text: object, *, low: float | None = None, high: float | None = None
) -> float | None:
    """``text`` as a finite ``float`` when it is an ASCII decimal (``0.02``, ``.5``, ``1e-3``)
    within ``[low, high]``, else None (``nan``, ``inf``, ``1_0``, ``０.１`` are None)."""
    if not isinstance(text, str) or _DECIMAL.fullmatch(text.strip()) is None:
        return None
    value = float(text.strip())
    if not math.isfinite(value):
        return None
    if (low is not None and value < low) or (high is not None and value > high):
        return None
    return value


def run_number(text: object) -> int | None:
    """A store run number (``3``, ``0003``): 1 to 8 ASCII digits, at least 1; else None."""
    if not isinstance(text, str) or _RUN_NUMBER.fullmatch(text.strip()) is None:
        return None
    value = int(text.strip())
    return value if value >= 1 else None


def bool_word(text: object) -> bool | None:
    """True or False for a true/false word (any case, surrounding blanks ignored), else None.
    Only options that take a boolean call this; an option that takes names never does."""
    if not isinstance(text, str):
        return None
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def whole_argument(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` taking a whole number in ``[low, high]`` by :func:`whole_number`
    (a refusal is argparse's one usage line, naming the value and the bounds)."""

    def whole(text: str) -> int:
        value = whole_number(text, low=low, high=high)
        if value is None:
            bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a whole number {bounds} (ASCII digits, e.g. {max(low, 10)})"
            )
        return value

    return whole


def decimal_argument(low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type`` taking a finite decimal in ``[low, high]`` by
    :func:`decimal_number`."""

    def decimal(text: str) -> float:
        value = decimal_number(text, low=low, high=high)
        if value is None:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a finite number in [{low:g}, {high:g}] (ASCII digits)"
            )
        return value

    return decimal


__all__ = [
    "BASELINE_WORDS",
    "FALSE_WORDS",
    "LABEL_PREFIX",
    "LAST",
    "LAST_ANY",
    "TRUE_WORDS",
    "bool_word",
    "decimal_argument",
    "decimal_number",
    "run_number",
    "whole_argument",
    "whole_number",
]
