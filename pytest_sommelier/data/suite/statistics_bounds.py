"""Bounds on the ``[statistics]`` settings, checked when a suite is loaded and when a stored
run's resolved suite is read back (``sommelier rescore``), before any resample is drawn.

Invariant: settings that pass :func:`statistics_problem` give a percentile interval that can
be computed in bounded memory and time (the resample sums hold ``resamples`` rows) and that
has at least one resample beyond each of its bounds, so it can contain its point estimate
(``resamples = 1`` gave an interval that excluded it; a ``confidence_level`` of ``1e-300``
collapsed it to a point).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

MIN_RESAMPLES = 200
MAX_RESAMPLES = 100_000
MIN_CONFIDENCE = 0.5
MAX_CONFIDENCE = 0.99
SEED_LIMIT = 2**64
MAX_NOISE_FLOOR = 100_000
"""The most examples ``noise_floor`` may re-batch (at collection, at most the split's size)."""
MIN_POWER = 0.5
MAX_POWER = 0.999
MIN_EFFECT = 1e-4
MAX_EFFECT = 1.0
"""``power`` in [0.5, 0.999] (below 0.5 a "detectable" difference is one a run misses more often
than not, and the sizing stops being monotone; above 0.999 the normal approximation is the
whole answer) and ``effect`` in [0.0001, 1] (a paired difference is at most 1; below 0.0001 the
pairs needed overflow any run): finite numbers only."""


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def power_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``power`` (None when it is one)."""
    if not _number(value) or not math.isfinite(value):
        return f"= {value!r} is not a finite number (e.g. 0.8)"
    if not MIN_POWER <= value <= MAX_POWER:
        return f"= {value!r} is outside [{MIN_POWER}, {MAX_POWER}] (e.g. 0.8)"
    return None


def effect_problem(value: Any) -> str | None:
    """Why ``value`` is not an ``effect``, a difference to detect (None when it is one)."""
    if not _number(value) or not math.isfinite(value):
        return f"= {value!r} is not a finite number (e.g. 0.03, three points)"
    if not MIN_EFFECT <= abs(value) <= MAX_EFFECT:
        return (
            f"= {value!r} is outside [{MIN_EFFECT:g}, {MAX_EFFECT:g}] in size (an absolute "
            "difference of the metric: 0.03 is three points)"
        )
    return None


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def statistics_problem(settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """``(key, why)`` for the first setting of ``seed``, ``resamples``, ``confidence_level``,
    ``noise_floor``, ``power`` and ``effect`` outside its bounds (only the keys present are
    checked), or None."""
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
    if not math.isfinite(level) or not MIN_CONFIDENCE <= level <= MAX_CONFIDENCE:
        return "confidence_level", (
            f"= {level!r} is outside [{MIN_CONFIDENCE}, {MAX_CONFIDENCE}] (e.g. 0.95)"
        )
    noise = settings.get("noise_floor", 0)
    if not _integer(noise) or not 0 <= noise <= MAX_NOISE_FLOOR:
        return "noise_floor", (
            f"= {noise!r} is not an integer in [0, {MAX_NOISE_FLOOR}] (the examples re-batched; "
            "a suite's split bounds it further)"
        )
    for key, check in (("power", power_problem), ("effect", effect_problem)):
        if settings.get(key) is not None:  # effect null: none declared (a resolved suite)
            why = check(settings[key])
            if why is not None:
                return key, why
    return None
