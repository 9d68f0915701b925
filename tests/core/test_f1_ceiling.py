"""``argument_f1`` near its ceiling: the jackknife-t with two half-weight pseudo-units
(``core.ratio_intervals.pseudo_jackknife_t_interval``), what ``auto`` reads now."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.distributions import t_quantile
from pytest_sommelier.core.ratio_intervals import pseudo_jackknife_t_interval


def by_hand(units: list[list[float]], level: float = 0.95) -> tuple[float, float]:
    """The definition written out with loops: append [0, d, d, d] and [d, d, 0, d] (d the mean
    denominator) at weight 0.5, leave each unit out in turn, weighted jackknife variance."""

    def f1(rows: list[tuple[float, list[float]]]) -> float:
        rn = sum(w * r[0] for w, r in rows)
        rd = sum(w * r[1] for w, r in rows)
        cn = sum(w * r[2] for w, r in rows)
        cd = sum(w * r[3] for w, r in rows)
        return (cn / cd if cd > 0 else 0.0) - (rn / rd if rd > 0 else 0.0)

    d = sum(u[1] + u[3] for u in units) / (2 * len(units))
    rows = [(1.0, u) for u in units] + [(0.5, [0, d, d, d]), (0.5, [d, d, 0, d])]
    loo = [f1(rows[:i] + rows[i + 1:]) for i in range(len(rows))]
    weights = [w for w, _ in rows]
    k = sum(weights)
    mean = sum(w * v for w, v in zip(weights, loo, strict=True)) / k
    se = math.sqrt((k - 1) / k * sum(w * (v - mean) ** 2 for w, v in zip(weights, loo,
                                                                          strict=True)))
    centre, raw = f1(rows), f1([(1.0, u) for u in units])
    t = t_quantile(level, k - 1)
    return max(-1.0, min(raw, centre - t * se)), min(1.0, max(raw, centre + t * se))


UNIT = st.tuples(st.integers(0, 8), st.integers(1, 8), st.integers(0, 8), st.integers(1, 8)).map(
    lambda u: [float(min(u[0], u[1])), float(u[1]), float(min(u[2], u[3])), float(u[3])]
)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(UNIT, min_size=1, max_size=12))
def test_the_interval_matches_its_definition_written_out(units: list[list[float]]) -> None:
    got = pseudo_jackknife_t_interval(np.array(units), 0.95)
    lower, upper = by_hand(units)
    assert (got["lower"], got["upper"]) == (pytest.approx(lower, abs=1e-12),
                                            pytest.approx(upper, abs=1e-12))  # fmt: skip
    assert got["df"] == pytest.approx(len(units))


@settings(max_examples=examples(120), deadline=None)
@given(st.lists(UNIT, min_size=1, max_size=30))
def test_never_zero_width_holds_the_estimate_and_swapping_arms_negates(
    units: list[list[float]],
) -> None:
    rows = np.array(units)
    got = pseudo_jackknife_t_interval(rows, 0.95)
    assert got["degenerate"] is False and got["lower"] < got["upper"]
    assert -1.0 <= got["lower"] <= got["estimate"] <= got["upper"] <= 1.0
    swapped = pseudo_jackknife_t_interval(rows[:, [2, 3, 0, 1]], 0.95)
    assert swapped["lower"] == pytest.approx(-got["upper"], abs=1e-12)
    assert swapped["upper"] == pytest.approx(-got["lower"], abs=1e-12)


def test_every_pair_perfect_on_both_arms_is_no_longer_a_point() -> None:
    rows = np.array([[4.0, 4.0, 4.0, 4.0]] * 20)  # 0.3: [+0.000, +0.000], and a gate passed
    got = pseudo_jackknife_t_interval(rows, 0.95)
    assert got["lower"] < 0.0 < got["upper"] and got["p_value"] == pytest.approx(1.0)


def test_weights_are_multiplicities() -> None:
    rows = np.array([[2.0, 4.0, 4.0, 4.0], [4.0, 4.0, 4.0, 4.0]])
    weighted = pseudo_jackknife_t_interval(rows, 0.95, weights=[3, 5])
    expanded = pseudo_jackknife_t_interval(np.repeat(rows, [3, 5], axis=0), 0.95)
    for key in ("lower", "upper", "standard_error", "df", "p_value"):
        assert weighted[key] == pytest.approx(expanded[key], abs=1e-12)


def test_no_denominator_at_all_is_degenerate() -> None:
    got = pseudo_jackknife_t_interval(np.zeros((5, 4)), 0.95)
    assert got["degenerate"] is True and got["lower"] == got["upper"] == 0.0


def test_an_argument_f1_margin_gate_with_few_informative_units_is_not_evaluable() -> None:
    # issue 38: near the floor the interval passes a margin gate falsely too often, so below
    # F1_MARGIN_MIN_INFORMATIVE units whose arms differ such a gate says it is not evaluable
    from pytest_sommelier.core.intervals import (
        F1_MARGIN_MIN_INFORMATIVE,
        ratio_margin_unevaluable,
    )

    few = {"informative_units": F1_MARGIN_MIN_INFORMATIVE - 1, "discordant": {}}
    enough = {"informative_units": F1_MARGIN_MIN_INFORMATIVE}
    reason = ratio_margin_unevaluable("argument_f1", [-0.05], few)
    assert reason is not None and reason.startswith("not evaluable")
    assert ratio_margin_unevaluable("argument_f1", [-0.05], enough) is None
    assert ratio_margin_unevaluable("argument_f1", [0.0], few) is None  # a gate at 0 reads it
    assert ratio_margin_unevaluable("full_call_exact_match", [-0.05], few) is None
    # an entry of 0.4 without the count: its discordant pairs
    old = {"discordant": {"candidate_only": 30, "reference_only": 30}}
    assert ratio_margin_unevaluable("argument_f1", [-0.05, 0.05], old) is None
