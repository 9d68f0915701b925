"""Tests for ``core.ratio_intervals.mover_interval``, the MOVER interval for a difference of two
pooled ratios (Zou & Donner 2008, "Construction of confidence limits about effect measures: a
general approach", Stat Med 27:1693-1702).

Worked examples:

- Independent arms (correlation 0, effective sample sizes the trials): MOVER with Wilson limits
  is Newcombe's (1998) method 10, "Interval estimation for the difference between independent
  proportions: comparison of eleven methods", Stat Med 17:873-890, Table II, example (a),
  56/70 - 48/80: 95% limits 0.0524 to 0.3339; Zou & Donner 2008 derive Newcombe's interval as
  the MOVER special case.
- Correlated arms: a hand-computed example from the formula (the derivation is in the test's
  docstring), computed here with ``math`` and scipy's t quantile, independent of the module.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from scipy import stats as scipy_stats

from pytest_sommelier.core.ratio_intervals import _mover_bounds, mover_interval


def test_mover_bounds_reproduce_newcombe_method_10() -> None:
    """Newcombe (1998) Table II (a): 56/70 - 48/80 at 95%, method 10 (0.0524, 0.3339)."""
    parts = {"cand": np.array(56 / 70), "cand_n": np.array(70.0), "ref": np.array(48 / 80),
             "ref_n": np.array(80.0), "correlation": np.array(0.0)}  # fmt: skip
    lower, upper = _mover_bounds(parts, scipy_stats.norm.ppf(0.975))
    assert round(float(lower), 4) == 0.0524
    assert round(float(upper), 4) == 0.3339


def _wilson(p: float, n: float, z: float) -> tuple[float, float]:
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_mover_interval_correlated_pairs_by_hand() -> None:
    """Ten pairs of 0/1 outcomes (a unit's row: reference hit, 1, candidate hit, 1):

    reference hits 1 1 1 1 0 0 0 0 0 0 (R2 = 0.4), candidate hits 1 1 1 1 1 1 0 0 0 0 (R1 = 0.6),
    so d = 0.2. Linearised residuals ``e = (hit - R) / n``; the ratio's variance
    ``V = n/(n-1) sum e^2 = R (1 - R) / (n - 1)``, so the effective sample size
    ``R (1 - R) / V = n - 1 = 9`` for both arms; the correlation of the residuals is the phi
    coefficient of the 2x2 table [[4, 0], [2, 4]] (candidate x reference):
    ``(4*4 - 2*0) / sqrt(6*4*4*6) = 16/24 = 2/3``. The critical value is t with n - 1 = 9
    degrees of freedom at 97.5%. With Wilson limits ``[l1, u1]`` of 0.6 and ``[l2, u2]`` of 0.4
    on 9 trials at that t:

        L = d - sqrt((R1 - l1)^2 + (u2 - R2)^2 - 2 r (R1 - l1)(u2 - R2))
        U = d + sqrt((u1 - R1)^2 + (R2 - l2)^2 - 2 r (u1 - R1)(R2 - l2))
    """
    ref = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    cand = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    rows = [(a, 1, b, 1) for a, b in zip(ref, cand, strict=True)]
    t = scipy_stats.t.ppf(0.975, 9)
    r1, r2, rho = 0.6, 0.4, 2 / 3
    l1, u1 = _wilson(r1, 9, t)
    l2, u2 = _wilson(r2, 9, t)
    lower = 0.2 - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2 - 2 * rho * (r1 - l1) * (u2 - r2))
    upper = 0.2 + math.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2 - 2 * rho * (u1 - r1) * (r2 - l2))
    result = mover_interval(rows, 0.95)
    assert math.isclose(result["estimate"], 0.2)
    assert math.isclose(result["correlation"], rho, rel_tol=1e-12)
    assert np.allclose(result["effective"], [9.0, 9.0], rtol=1e-12)
    assert math.isclose(result["lower"], lower, rel_tol=1e-9)
    assert math.isclose(result["upper"], upper, rel_tol=1e-9)
    # The correlation narrows the interval: the same arms as independent are wider.
    independent = 0.2 - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2)
    assert result["lower"] > independent


UNIT = st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)).map(
    lambda t: (min(t[0], t[1]), t[1], min(t[2], t[3]), t[3])
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(UNIT, min_size=1, max_size=25), st.floats(0.5, 0.99), st.floats(0.001, 0.009))
def test_mover_interval_holds_the_estimate_and_widens_with_the_level(
    rows: list[tuple[int, int, int, int]], level: float, step: float
) -> None:
    """Invariant: ``-1 <= lower <= estimate <= upper <= 1`` (an arm with no denominator gives
    ``[-1, 1]``, not NaN), and where the arms' correlation is at most 0 a higher level gives an
    interval that contains the lower level's: each Wilson distance ``a``, ``b`` grows with the
    critical value and so does ``a^2 + b^2 - 2 r a b`` for ``r <= 0``. (For ``r > 0`` it need
    not: two units ``(0, 1, 1, 2), (1, 1, 1, 1)`` have ``r = 1`` and a lower bound 0.1464 at
    50% but 0.1493 at 51%; the construction does not promise nesting there.)"""
    low = mover_interval(rows, level)
    high = mover_interval(rows, level + step)
    for result in (low, high):
        assert -1.0 <= result["lower"] <= result["estimate"] <= result["upper"] <= 1.0
        assert 0.0 <= result["p_value"] <= 1.0
    if all(row[1] == 0 for row in rows) or all(row[3] == 0 for row in rows):
        assert (low["lower"], low["upper"]) in ((-1.0, 1.0), (low["estimate"],) * 2)
    if low["correlation"] > 0:
        return
    assert high["lower"] <= low["lower"] + 1e-12
    assert high["upper"] >= low["upper"] - 1e-12
