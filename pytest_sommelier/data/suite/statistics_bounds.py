"""Bounds on the ``[statistics]`` settings, checked when a suite is loaded and when a stored
run's resolved suite is read back (``sommelier rescore``), before any resample is drawn.

Invariant: settings that pass :func:`statistics_problem` give a percentile interval that can
be computed in bounded memory and time (the resample sums hold ``resamples`` rows) and that
has at least one resample beyond each of its bounds, so it can contain its point estimate
(``resamples = 1`` gave an interval that excluded it; a ``confidence_level`` of ``1e-300``
collapsed it to a point).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MIN_RESAMPLES = 200
MAX_RESAMPLES = 100_000
MIN_CONFIDENCE = 0.5
MAX_CONFIDENCE = 0.99
SEED_LIMIT = 2**64


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def statistics_problem(settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, why)`` for the first setting of ``seed``, ``resamples`` and
    ``confidence_level`` outside its bounds (only the keys present are checked), or None."""
    seed = settings.get("seed", 0)
    if not _integer(seed) or not 0 <= seed < SEED_LIMIT:
        return "seed", f"= {seed!r} is not an integer in [0, 2**64)"
    resamples = settings.get("resamples", MIN_RESAMPLES)
    if not _integer(resamples) or not MIN_RESAMPLES <= resamples <= MAX_RESAMPLES:
        return "resamples", (
            f"= {resamples!r} is outside [{MIN_RESAMPLES}, {MAX_RESAMPLES}] (fewer leave the "
            "interval's tails empty; more cost memory and time for no precision that matters)"
        )
    level = settings.get("confidence_level", 0.95)
    if not isinstance(level, int | float) or isinstance(level, bool):
        return "confidence_level", f"= {level!r} is not a number"
    if not MIN_CONFIDENCE <= level <= MAX_CONFIDENCE:
        return "confidence_level", (
            f"= {level!r} is outside [{MIN_CONFIDENCE}, {MAX_CONFIDENCE}] (e.g. 0.95)"
        )
    return None
