"""Tests for pytest_sommelier.core.power: Connor's (1987) paired sample size and its inverse."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core import power
from pytest_sommelier.errors import InputError

Z_975 = 1.959964  # z_{0.025}, two-sided 5%
Z_80 = 0.841621  # z_{0.20}, power 0.8
Z_90 = 1.281552  # z_{0.10}, power 0.9


def test_connor_by_hand_psi_02_delta_01_power_80() -> None:
    # n = [1.959964 * sqrt(0.2) + 0.841621 * sqrt(0.2 - 0.01)]^2 / 0.01
    #   = [0.876522 + 0.366854]^2 / 0.01 = 1.243376^2 / 0.01 = 154.60
    by_hand = (Z_975 * math.sqrt(0.2) + Z_80 * math.sqrt(0.19)) ** 2 / 0.01
    assert by_hand == pytest.approx(154.60, abs=0.01)
    assert power.connor_pairs(0.1, 0.2) == pytest.approx(by_hand, rel=1e-5)
    assert power.required_pairs(0.1, 0.2) == 155
    assert power.required_pairs(-0.1, 0.2) == 155  # the sign of the effect does not matter


def test_connor_by_hand_psi_03_delta_01_power_90() -> None:
    # [1.959964 * 0.547723 + 1.281552 * 0.538516]^2 / 0.01 = [1.073517 + 0.690137]^2 / 0.01
    by_hand = (Z_975 * math.sqrt(0.3) + Z_90 * math.sqrt(0.29)) ** 2 / 0.01
    assert by_hand == pytest.approx(311.05, abs=0.01)
    assert power.connor_pairs(0.1, 0.3, power=0.9) == pytest.approx(by_hand, rel=1e-5)
    assert power.required_pairs(0.1, 0.3, power=0.9) == 312


def test_the_design_effect_multiplies_the_pairs_needed() -> None:
    assert power.required_pairs(0.1, 0.2, design_effect=1.5) == math.ceil(1.5 * 154.599)
    plan = power.plan(0.1, 15, 5, 100, clusters=50, design_effect=1.5, discordance="observed")
    assert plan["discordant_proportion"] == 0.2
    assert plan["pairs_needed"] == 232 and plan["clusters_needed"] == 116
    assert plan["pilot_pairs"] == 100 and plan["pilot_clusters"] == 50


def wilson_upper(discordant: int, pairs: int, deff: float, level: float = 0.8) -> float:
    """Wilson's one-sided upper limit by hand (Wilson 1927), on n / deff pairs."""
    from statistics import NormalDist

    n, p = pairs / deff, discordant / pairs
    z = NormalDist().inv_cdf(level)
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)  # fmt: skip


def test_a_plan_sizes_on_the_upper_limit_of_the_pilot_discordance() -> None:
    plan = power.plan(0.1, 15, 5, 100, clusters=50, design_effect=1.5)
    upper = wilson_upper(20, 100, 1.5)
    assert plan["planning_discordance"] == pytest.approx(upper)
    assert plan["discordant_proportion"] == 0.2 < upper
    z_sized = math.ceil(1.5 * power.connor_pairs(0.1, upper) - 1e-9)
    # the main run's bound is read at t over its clusters (issue 38), so a few more than z's
    assert z_sized < plan["pairs_needed"] <= 1.03 * z_sized
    assert plan["main_df"] == math.ceil(plan["pairs_needed"] / 2 - 1e-9) - 1
    assert plan["planning_design_effect"] == 1.5  # no df given: the design effect as recorded
    assert plan["sized_on"] == "upper 80% limit of the discordance"
    assert plan["pilot_too_small"] is False
    # none of 10 discordant: sized on at least the 1 / n floor, and it says the pilot is small
    small = power.plan(0.1, 0, 0, 10)
    assert small["planning_discordance"] == max(0.1, wilson_upper(0, 10, 1.0))  # the 1/n floor
    assert small["pilot_too_small"] is True


def test_a_plan_never_calls_an_effect_beyond_the_upper_limit_undetectable() -> None:
    # issue 38: a true difference of 0.29 implies a discordance of at least 0.29, so a pilot
    # whose upper limit is lower (4 of 20 discordant) says nothing against it
    assert power.discordance_upper_limit(4, 0, 20) < 0.29
    row = power.plan(0.29, 4, 0, 20)
    assert row["planning_discordance"] == 0.29 and row["pairs_needed"] is not None
    assert power.plan(0.29, 4, 0, 20, discordance="observed")["pairs_needed"] is None


def test_a_clustered_pilot_sizes_on_an_upper_limit_of_its_design_effect() -> None:
    # Satterthwaite: the estimate is chi2_df / df; the limit is deff * df / chi2_{0.2}(df)
    from scipy import stats

    for df in (3.0, 10.0, 40.0):
        exact = 1.6 * df / stats.chi2.ppf(0.2, df)
        assert power.design_effect_upper_limit(1.6, df) == pytest.approx(exact, rel=0.02)
    assert power.design_effect_upper_limit(1.6, 1e6) == pytest.approx(1.6, rel=0.01)
    few = power.plan(0.1, 10, 4, 60, clusters=30, design_effect=1.6, df=5.0)
    many = power.plan(0.1, 10, 4, 60, clusters=30, design_effect=1.6, df=200.0)
    assert few["planning_design_effect"] > many["planning_design_effect"] > 1.6
    assert few["pairs_needed"] > many["pairs_needed"]


@settings(max_examples=examples(80), deadline=None)
@given(st.integers(0, 50), st.integers(0, 50), st.integers(1, 400), st.floats(1.0, 4.0))
def test_the_upper_limit_never_sizes_below_the_estimate(
    b: int, c: int, extra: int, deff: float
) -> None:
    pairs = b + c + extra
    upper = power.plan(0.05, b, c, pairs, design_effect=deff)
    plug_in = power.plan(0.05, b, c, pairs, design_effect=deff, discordance="observed")
    assert upper["planning_discordance"] >= min(1.0, (b + c) / pairs)
    if plug_in["pairs_needed"] is not None:
        assert upper["pairs_needed"] is not None
        assert upper["pairs_needed"] >= plug_in["pairs_needed"]


def test_minimum_detectable_effect_inverts_connor_by_hand() -> None:
    mde = power.minimum_detectable_effect(154.599, 0.2)
    assert mde == pytest.approx(0.1, abs=1e-5)
    # the same run with clusters (deff 2) counts as half the pairs
    clustered = power.minimum_detectable_effect(2 * 154.599, 0.2, design_effect=2.0)
    assert clustered == pytest.approx(mde, rel=1e-12)


@settings(max_examples=examples(100))
@given(st.floats(5, 100_000), st.floats(0.01, 1.0), st.floats(1.0, 3.0),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]), st.sampled_from([0.5, 0.8, 0.9]))  # fmt: skip
def test_required_pairs_and_minimum_detectable_effect_are_inverse(n, psi, deff, level, pw):
    mde = power.minimum_detectable_effect(n, psi, confidence_level=level, power=pw,
                                          design_effect=deff)  # fmt: skip
    assume(mde is not None and mde <= psi)
    exact = deff * power.connor_pairs(mde, psi, confidence_level=level, power=pw)
    assert exact == pytest.approx(n, rel=1e-9)
    needed = power.required_pairs(mde, psi, confidence_level=level, power=pw, design_effect=deff)
    assert needed == math.ceil(n * (1 - 1e-9))


@settings(max_examples=examples(100))
@given(st.integers(10, 50_000), st.floats(0.02, 1.0))
def test_more_pairs_detect_smaller_effects_and_more_power_needs_larger_ones(n, psi) -> None:
    small, large = (power.minimum_detectable_effect(k, psi) for k in (n, n + 1))
    assert small is not None and large is not None and large < small
    assert power.minimum_detectable_effect(n, psi, power=0.9) > small


def test_what_cannot_be_detected_is_none() -> None:
    assert power.minimum_detectable_effect(3, 0.5) is None  # sqrt(3) < 1.96: no test can reject
    assert power.minimum_detectable_effect(0, 0.5) is None
    assert power.required_pairs(0.3, 0.2) is None  # a difference above the discordance
    assert power.required_pairs(0.0, 0.2) is None
    with pytest.raises(InputError, match="impossible"):
        power.connor_pairs(0.3, 0.2)
    with pytest.raises(InputError, match="power"):
        power.required_pairs(0.1, 0.2, power=1.0)
    with pytest.raises(InputError, match="design_effect"):
        power.minimum_detectable_effect(100, 0.2, design_effect=0.5)


def test_power_summary_from_a_discordance_table() -> None:
    summary = power.power_summary(10, 4, 84)
    psi = 14 / 84
    assert summary["discordant_proportion"] == psi and summary["discordance_floored"] is False
    s = math.sqrt(84)
    by_hand = math.sqrt(psi) * (s * Z_975 + Z_80 * math.sqrt(84 - Z_975**2 + Z_80**2)) / (
        84 + Z_80**2)
    assert summary["minimum_detectable_effect"] == pytest.approx(by_hand, rel=1e-5)
    assert summary["attainable"] is (by_hand <= psi)
    assert summary["effective_pairs"] == 84 and summary["clusters"] == 84


def test_no_discordant_pair_is_floored_at_one_and_clusters_count() -> None:
    summary = power.power_summary(0, 0, 36, clusters=18, design_effect=2.0)
    assert summary["discordance_floored"] is True
    assert summary["discordant_proportion"] == 1 / 36
    assert summary["effective_pairs"] == 18
    assert summary["minimum_detectable_effect"] == pytest.approx(
        power.minimum_detectable_effect(18, 1 / 36), rel=1e-12)
    assert summary["attainable"] is False  # 1 discordant pair in 36 cannot show a real effect
    empty = power.power_summary(0, 0, 0)
    assert empty["minimum_detectable_effect"] is None and empty["attainable"] is False
