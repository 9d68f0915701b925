"""Familywise error control for a family of interval gates: Bonferroni and Holm.

Pure functions (standard library only). A *family* is the set of interval gates of a suite;
``m`` is its size.

- Bonferroni: every member's interval is computed at confidence ``1 - (1 - cl) / m``
  (:func:`bonferroni_confidence_level`); equivalently each p-value is multiplied by ``m``.
- Holm (1979, Scand J Statist 6:65-70): the step-down procedure over the members' p-values
  (each from the same method as its interval): sort ascending, the ``i``-th smallest is
  adjusted to ``max_{j <= i} min(1, (m - j + 1) p_(j))``, and a member passes at level alpha
  when its adjusted p-value is at most alpha. Uniformly more powerful than Bonferroni, with
  the same familywise guarantee.

Invariants kept: adjusted p-values lie in ``[p, 1]``, keep the members' order, are monotone in
the raw p-values, and Holm's never exceed Bonferroni's; a member without a p-value (None: its
subject is missing) counts in ``m``, never passes and stays None.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_sommelier.errors import InputError


def bonferroni_confidence_level(confidence_level: float, family_size: int) -> float:
    """The per-member confidence level ``1 - (1 - cl) / m`` (``cl`` itself for ``m <= 1``)."""
    if not (0.0 < confidence_level < 1.0):
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"confidence_level must lie strictly between 0 and 1, got {confidence_level!r}",
            "set [statistics] confidence_level to e.g. 0.95",
            where="statistics.confidence_level",
        )
    if family_size <= 1:
        return float(confidence_level)
    return 1.0 - (1.0 - confidence_level) / family_size


def bonferroni_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """``min(1, m p)`` for every member (None stays None; it still counts in ``m``)."""
    m = len(p_values)
    return [None if p is None else min(1.0, m * p) for p in p_values]


def holm_adjusted(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the members' order (ties keep their order)."""
    m = len(p_values)
    order = sorted((i for i, p in enumerate(p_values) if p is not None),
                   key=lambda i: (p_values[i], i))  # fmt: skip
    adjusted: list[float | None] = [None] * m
    running = 0.0
    for rank, i in enumerate(order):
        p = p_values[i]
        assert p is not None
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def holm_rejections(p_values: Sequence[float | None], alpha: float) -> list[bool]:
    """Which members Holm's procedure rejects (passes) at familywise level ``alpha``."""
    return [p is not None and p <= alpha for p in holm_adjusted(p_values)]
