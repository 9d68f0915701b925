"""Tests for the paired intervals: core.proportions, core.ratio_intervals, core.clusters,
core.distributions, core.multiplicity, core.intervals and the stats.paired_intervals API.

Published worked examples (95% unless stated; difference = first minus second measurement):

- Fagerland, Lydersen & Laake (2014), Stat Med 33:2850, Table V, the airway hyper-
  responsiveness data of Bentur et al. (2009), table [[1, 1], [7, 12]]: Tango (-0.517, -0.026),
  Newcombe hybrid score (-0.507, -0.026), Bonett-Price (-0.508, -0.013), as reproduced by the
  ratesci package's tests (tests/testthat/test3.R) and its SAS validation
  (ratesci-sas tests/v_pairbinci.sas, "(-0.517, -0.026) in Fagerland Table V").
- The complete-response data of Cavo et al. (2012), [[59, 6], [16, 80]], the other worked
  example of the paper and of Fagerland, Lydersen & Laake, *Statistical Analysis of Contingency
  Tables* (2017), ch. 8, as printed by its companion package contingencytables
  (tests/testthat/test-ch8.R): Tango (-0.1240, -0.0054), Newcombe (-0.1186, -0.0046),
  Bonett-Price (-0.1195, -0.0032); McNemar exact P = 0.052479, mid-P = 0.034690, asymptotic
  P = 0.033006.
- Tango (1998) Table VII [4, 9, 3, 16]: (-0.027, 0.390); Table V [43, 0, 1, 0] at 90%:
  (-0.096, 0.037); Agresti & Min (2005) [53, 16, 8, 9]: (-0.020, 0.207); Newcombe (1998)
  method 10, [20, 12, 2, 16]: (0.0562, 0.3292) (all as reproduced in ratesci's tests).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from property_budget import examples
from scipy import optimize
from scipy import stats as scipy_stats

from pytest_sommelier.core import distributions, multiplicity, proportions, ratio_intervals
from pytest_sommelier.core.clusters import (
    cluster_index,
    cluster_sums,
    design_effect,
    design_effect_from_moments,
)
from pytest_sommelier.core.distributions import t_quantile
from pytest_sommelier.core.intervals import (
    AUTO_RATE_METHOD,
    JACKKNIFE_CLUSTERS,
    JACKKNIFE_PAIRS,
    PERCENTILE_PAIRS,
    RATE_METHODS,
    discordant_counts,
)
from pytest_sommelier.core.metrics import METRIC_NAMES, component_arrays
from pytest_sommelier.core.stats import (
    BOOTSTRAP_METHOD,
    mcnemar_p_value,
    paired_bootstrap,
    paired_intervals,
    paired_intervals_arrays,
)
from pytest_sommelier.errors import InputError, InvariantError

RATES = [m for m in METRIC_NAMES if m != "argument_f1"]
GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}


def record(example_id: str, outcome: str) -> dict:
    """A scoring record: 'exact' (right call), 'half' (one argument wrong), 'fail' (no JSON)."""
    if outcome == "fail":
        return {"example_id": example_id, "parse_status": "no_json", "parsed_call": None,
                "gold_call": GOLD}  # fmt: skip
    arguments = dict(GOLD["arguments"])
    if outcome == "half":
        arguments["unit"] = "f"
    return {"example_id": example_id, "parse_status": "ok",
            "parsed_call": {"name": GOLD["name"], "arguments": arguments}, "gold_call": GOLD}


def records(outcomes: list[str]) -> list[dict]:
    """Records ex-0000, ex-0001, ... with the given outcomes."""
    return [record(f"ex-{i:04d}", outcome) for i, outcome in enumerate(outcomes)]


def table_records(both: int, cand_only: int, ref_only: int, neither: int):
    """Reference and candidate records realising a 2x2 table on full_call_exact_match."""
    ref = ["exact"] * both + ["fail"] * cand_only + ["exact"] * ref_only + ["fail"] * neither
    cand = ["exact"] * both + ["exact"] * cand_only + ["fail"] * ref_only + ["fail"] * neither
    return records(ref), records(cand)


# --- published worked examples ---------------------------------------------------------------

BENTUR = (1, 1, 7, 12)  # both, first only, second only, neither
CAVO = (59, 6, 16, 80)


@pytest.mark.parametrize(
    ("method", "table", "level", "expected", "digits"),
    [
        ("tango", BENTUR, 0.95, (-0.517, -0.026), 3),
        ("newcombe", BENTUR, 0.95, (-0.507, -0.026), 3),
        ("bonett_price", BENTUR, 0.95, (-0.508, -0.013), 3),
        ("tango", CAVO, 0.95, (-0.1240, -0.0054), 4),
        ("newcombe", CAVO, 0.95, (-0.1186, -0.0046), 4),
        ("bonett_price", CAVO, 0.95, (-0.1195, -0.0032), 4),
        ("tango", (4, 9, 3, 16), 0.95, (-0.027, 0.390), 3),
        ("tango", (43, 0, 1, 0), 0.90, (-0.096, 0.037), 3),
        ("tango", (53, 16, 8, 9), 0.95, (-0.020, 0.207), 3),
        ("newcombe", (20, 12, 2, 16), 0.95, (0.0562, 0.3292), 4),
    ],
)
def test_published_worked_examples(method, table, level, expected, digits) -> None:
    both, b, c, neither = table
    n = sum(table)
    if method == "tango":
        bounds = proportions.tango_interval(b, c, n, level)
    elif method == "bonett_price":
        bounds = proportions.bonett_price_interval(b, c, n, level)
    else:
        bounds = proportions.newcombe_interval(both, b, c, neither, level)
    assert (round(bounds[0], digits), round(bounds[1], digits)) == expected


def test_published_mcnemar_p_values_for_the_cavo_data() -> None:
    assert round(mcnemar_p_value(6, 16), 6) == 0.052479
    assert round(proportions.mcnemar_mid_p(6, 16), 6) == 0.034690
    assert round(proportions.tango_p_value(6, 16, 161), 6) == 0.033006


def test_the_records_api_gives_the_published_interval_for_the_auto_method() -> None:
    ref, cand = table_records(*BENTUR)
    result = paired_intervals(ref, cand, seed=3)
    entry = result["intervals"]["full_call_exact_match"]
    assert entry["method"] == RATE_METHODS[AUTO_RATE_METHOD] == "bonett_price_adjusted_wald"
    assert (round(entry["lower"], 3), round(entry["upper"], 3)) == (-0.508, -0.013)
    assert entry["discordant"] == {"candidate_only": 1, "reference_only": 7}
    assert entry["estimate"] == pytest.approx(-6 / 21)
    assert entry["design_effect"] == 1.0 and entry["degenerate"] is False


# --- independent implementations (scipy) -------------------------------------------------------


def tango_reference(b: int, c: int, n: int, level: float) -> tuple[float, float]:
    """Tango's interval by scipy root finding on his statistic, written from the paper."""
    z = scipy_stats.norm.ppf(1 - (1 - level) / 2)

    def statistic(delta: float) -> float:
        a, bq, cq = 2 * n, -b - c + (2 * n - b + c) * delta, -c * delta * (1 - delta)
        p21 = (-bq + math.sqrt(bq * bq - 4 * a * cq)) / (2 * a)
        variance = n * (2 * p21 + delta * (1 - delta))
        numerator = b - c - n * delta
        if variance <= 0:  # only where the estimate itself is evaluated: T = 0 there
            return 0.0 if abs(numerator) < 1e-12 else math.copysign(math.inf, numerator)
        return numerator / math.sqrt(variance)

    estimate, eps = (b - c) / n, 1e-12
    lower = -1.0 if statistic(-1 + eps) < z else optimize.brentq(
        lambda d: statistic(d) - z, -1 + eps, estimate, xtol=1e-13)  # fmt: skip
    upper = 1.0 if statistic(1 - eps) > -z else optimize.brentq(
        lambda d: statistic(d) + z, estimate, 1 - eps, xtol=1e-13)  # fmt: skip
    return lower, upper


@settings(max_examples=examples(150))
@given(st.integers(1, 200), st.integers(0, 200), st.integers(0, 200),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))  # fmt: skip
def test_tango_matches_scipy_root_finding(n_extra: int, b: int, c: int, level: float) -> None:
    n = b + c + n_extra
    assume(b + c < n)
    lower, upper = proportions.tango_interval(b, c, n, level)
    ref_lower, ref_upper = tango_reference(b, c, n, level)
    assert lower == pytest.approx(ref_lower, abs=1e-9)
    assert upper == pytest.approx(ref_upper, abs=1e-9)


def test_intervals_broadcast_over_arrays_like_scalars() -> None:
    rng = np.random.default_rng(1)
    tables = rng.multinomial(50, [0.5, 0.1, 0.15, 0.25], size=40).astype(float)
    both, b, c, neither = tables.T
    for vector, one in (
        (proportions.tango_interval(b, c, 50, 0.95), lambda i: proportions.tango_interval(
            b[i], c[i], 50, 0.95)),
        (proportions.newcombe_interval(both, b, c, neither, 0.95),
         lambda i: proportions.newcombe_interval(both[i], b[i], c[i], neither[i], 0.95)),
    ):  # fmt: skip
        for i in range(40):
            assert (vector[0][i], vector[1][i]) == pytest.approx(one(i), abs=1e-15)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(1, 60),
                          st.floats(0.5, 5.0)), min_size=1, max_size=8),
       st.sampled_from([0.0, 0.5]))  # fmt: skip
def test_tango_bounds_take_one_critical_value_per_table(rows, continuity: float) -> None:
    # each table at its own critical value (a t quantile per run, as the clustered benchmark
    # passes them) gives what tango_interval gives at the level of that critical value (up to
    # the level's round trip through the normal tail)
    b, c, extra, z = (np.array(column, dtype=float) for column in zip(*rows, strict=True))
    n = b + c + extra
    lower, upper = proportions.tango_bounds(b, c, n, z, continuity)
    for i in range(b.size):
        level = 1.0 - 2.0 * distributions.normal_cdf(-float(z[i]))
        one = proportions.tango_interval(b[i], c[i], n[i], level, continuity)
        assert (float(np.atleast_1d(lower)[i]), float(np.atleast_1d(upper)[i])) == \
            pytest.approx(one, abs=1e-8)
    # a larger critical value never narrows the interval
    wider = proportions.tango_bounds(b, c, n, z + 0.5, continuity)
    assert np.all(np.atleast_1d(wider[0]) <= np.atleast_1d(lower) + 1e-12)
    assert np.all(np.atleast_1d(wider[1]) >= np.atleast_1d(upper) - 1e-12)


# --- properties of the rate intervals ----------------------------------------------------------

tables = st.tuples(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(0, 60))
levels = st.floats(0.85, 0.999)


@settings(max_examples=examples(150))  # was 300 (tables of four counts under 60: a small space)
@given(tables, levels)
def test_rate_intervals_contain_the_estimate_and_are_never_zero_width(table, level) -> None:
    both, b, c, neither = table
    n = sum(table)
    assume(n > 0)
    estimate = (b - c) / n
    for lower, upper in (
        proportions.tango_interval(b, c, n, level),
        proportions.bonett_price_interval(b, c, n, level),
        proportions.newcombe_interval(both, b, c, neither, level),
    ):
        assert -1.0 <= lower <= estimate + 1e-12 and estimate - 1e-12 <= upper <= 1.0
        assert upper - lower > 1e-6


@settings(max_examples=examples(100))  # was 200 (as above)
@given(tables, levels)
def test_swapping_the_arms_negates_every_rate_interval(table, level) -> None:
    both, b, c, neither = table
    n = sum(table)
    assume(n > 0)
    pairs = [
        (proportions.tango_interval(b, c, n, level), proportions.tango_interval(c, b, n, level)),
        (proportions.bonett_price_interval(b, c, n, level),
         proportions.bonett_price_interval(c, b, n, level)),
        (proportions.newcombe_interval(both, b, c, neither, level),
         proportions.newcombe_interval(both, c, b, neither, level)),
    ]  # fmt: skip
    for (lower, upper), (swapped_lower, swapped_upper) in pairs:
        assert lower == pytest.approx(-swapped_upper, abs=1e-9)
        assert upper == pytest.approx(-swapped_lower, abs=1e-9)


@settings(max_examples=examples(100))  # was 200 (as above)
@given(tables, st.sampled_from([0.9, 0.95, 0.99]), st.sampled_from([0.0, -0.05, 0.1]))
def test_each_p_value_rejects_exactly_when_its_interval_excludes_the_null(table, level, null):
    both, b, c, neither = table
    n = sum(table)
    assume(n > 0)
    alpha = 1 - level
    checks = [
        (proportions.tango_interval(b, c, n, level), proportions.tango_p_value(b, c, n, null)),
        (proportions.bonett_price_interval(b, c, n, level),
         proportions.bonett_price_p_value(b, c, n, null)),
        (proportions.newcombe_interval(both, b, c, neither, level),
         proportions.newcombe_p_value(both, b, c, neither, null)),
    ]  # fmt: skip
    for (lower, upper), p in checks:
        assert 0.0 <= p <= 1.0
        margin = min(abs(lower - null), abs(upper - null))
        assume(margin > 1e-7 and abs(p - alpha) > 1e-7)  # off the exact boundary
        assert (p <= alpha) == (null < lower or null > upper)


def test_no_discordant_pair_gives_a_non_degenerate_interval_around_zero() -> None:
    ref, cand = table_records(20, 0, 0, 16)  # 36 pairs, the arms agree everywhere
    result = paired_intervals(ref, cand, seed=1)
    for name in RATES:
        entry = result["intervals"][name]
        assert entry["discordant"] == {"candidate_only": 0, "reference_only": 0}
        assert entry["lower"] < 0.0 < entry["upper"]
        assert entry["degenerate"] is False and entry["p_value"] == 1.0


def test_the_demo_case_all_candidate_valid_none_reference_is_not_certain() -> None:
    # 'he valid_json +1.000 [+1.000, +1.000]' from 36 pairs under the percentile bootstrap
    ref, cand = records(["fail"] * 36), records(["exact"] * 36)
    assert paired_bootstrap(ref, cand, seed=2)["intervals"]["valid_json_rate"] == {
        "lower": 1.0, "upper": 1.0}
    entry = paired_intervals(ref, cand, seed=2)["intervals"]["valid_json_rate"]
    assert entry["upper"] == 1.0 and entry["lower"] < 0.95
    assert entry["estimate"] == 1.0 and entry["p_value"] < 1e-6


def test_mcnemar_mid_p_is_below_the_exact_p_and_symmetric() -> None:
    for b in range(0, 25):
        for c in range(0, 25):
            mid = proportions.mcnemar_mid_p(b, c)
            assert mid == proportions.mcnemar_mid_p(c, b)
            assert 0.0 < mid <= mcnemar_p_value(b, c)
            if b + c:
                reference = (scipy_stats.binomtest(min(b, c), b + c).pvalue
                             - scipy_stats.binom.pmf(b, b + c, 0.5)) if b != c else (
                    1 - 0.5 * scipy_stats.binom.pmf(b, b + c, 0.5))  # fmt: skip
                assert mid == pytest.approx(reference, rel=1e-12)
    assert proportions.mcnemar_mid_p(0, 0) == 1.0


# --- distributions -----------------------------------------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 4, 9, 29, 49, 149, 999, 20_000])
def test_student_t_matches_scipy(df: int) -> None:
    for level in (0.5, 0.9, 0.95, 0.99, 0.9999):
        expected = scipy_stats.t.ppf(1 - (1 - level) / 2, df)
        assert distributions.t_quantile(level, df) == pytest.approx(expected, rel=1e-10)
    for t in (0.0, 0.3, 1.96, 4.0, 25.0):
        expected = 2 * scipy_stats.t.sf(t, df)
        assert distributions.two_sided_t_p(t, df) == pytest.approx(expected, rel=1e-9, abs=1e-300)
        assert distributions.t_cdf(-t, df) == pytest.approx(scipy_stats.t.cdf(-t, df), rel=1e-9)


# --- argument_f1: the ratio of sums ------------------------------------------------------------

unit_rows = st.lists(
    st.tuples(st.integers(0, 6), st.integers(1, 6), st.integers(0, 6), st.integers(1, 6)).map(
        lambda r: (min(r[0], r[1]), r[1], min(r[2], r[3]), r[3])),
    min_size=1, max_size=25,
)  # fmt: skip


def expanded(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The unit rows repeated by their integer weights."""
    return np.repeat(rows, weights.astype(int), axis=0)


@settings(max_examples=examples(100))
@given(unit_rows, st.lists(st.integers(1, 4), min_size=25, max_size=25))
def test_jackknife_values_and_weights_match_brute_force(rows, weights) -> None:
    matrix = np.array(rows, dtype=float)
    w = np.array(weights[: len(rows)], dtype=float)
    full = expanded(matrix, w)
    brute = [float(ratio_intervals.ratio_difference(np.delete(full, i, axis=0).sum(axis=0)))
             for i in range(full.shape[0])]  # fmt: skip
    values = ratio_intervals.jackknife_values(matrix, w)
    assert np.allclose(np.repeat(values, w.astype(int)), brute, atol=1e-12)
    assert ratio_intervals.jackknife_standard_error(matrix, w) == pytest.approx(
        ratio_intervals.jackknife_standard_error(full), abs=1e-12)
    assert ratio_intervals.acceleration(values, w) == pytest.approx(
        ratio_intervals.acceleration(ratio_intervals.jackknife_values(full)), abs=1e-9)


@settings(max_examples=examples(200))
@given(unit_rows, st.integers(0, 2**32 - 1))
def test_is_constant_agrees_with_random_weightings(rows, seed) -> None:
    matrix = np.array(rows, dtype=float)
    weights = np.random.default_rng(seed).exponential(size=(200, matrix.shape[0]))
    values = ratio_intervals.ratio_difference(weights @ matrix)
    spread = float(values.max() - values.min())
    assert ratio_intervals.is_constant(matrix) == (spread < 1e-9)


@settings(max_examples=examples(200))
@given(unit_rows, levels)
def test_jackknife_t_contains_the_estimate_and_is_zero_width_only_when_degenerate(rows, level):
    matrix = np.array(rows, dtype=float)
    result = ratio_intervals.jackknife_t_interval(matrix, level)
    estimate = result["estimate"]
    assert -1.0 <= result["lower"] <= estimate <= result["upper"] <= 1.0
    if result["degenerate"]:
        assert result["lower"] == result["upper"] == estimate
        assert ratio_intervals.is_constant(matrix)
    elif result["defined"]:
        assert result["upper"] > result["lower"]
        alpha = 1 - level
        assume(abs(result["p_value"] - alpha) > 1e-9 and estimate not in (-1.0, 1.0))
        excluded = result["lower"] > 0 or result["upper"] < 0
        assert (result["p_value"] <= alpha) == excluded


def test_jackknife_t_is_the_t_interval_of_the_jackknife_standard_error() -> None:
    rows = np.array([[1, 2, 2, 2], [0, 3, 2, 4], [2, 2, 1, 2], [0, 1, 1, 1], [3, 4, 4, 4]], float)
    result = ratio_intervals.jackknife_t_interval(rows, 0.95)
    values = np.array([ratio_intervals.ratio_difference(np.delete(rows, i, 0).sum(0))
                       for i in range(5)])  # fmt: skip
    se = math.sqrt(4 / 5 * np.sum((values - values.mean()) ** 2))
    t = scipy_stats.t.ppf(0.975, 4)
    estimate = float(ratio_intervals.ratio_difference(rows.sum(0)))
    assert result["lower"] == pytest.approx(estimate - t * se, abs=1e-12)
    assert result["upper"] == pytest.approx(estimate + t * se, abs=1e-12)
    assert result["p_value"] == pytest.approx(2 * scipy_stats.t.sf(abs(estimate / se), 4), rel=1e-9)


def test_bca_levels_match_an_independent_computation() -> None:
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 5, size=(40, 4)).astype(float)
    rows[:, 1] += 5
    rows[:, 3] += 5
    estimate = float(ratio_intervals.ratio_difference(rows.sum(0)))
    draws = rng.integers(0, 40, size=(3000, 40))
    replicates = ratio_intervals.ratio_difference(rows[draws].sum(axis=1))
    jack = np.array([ratio_intervals.ratio_difference(np.delete(rows, i, 0).sum(0))
                     for i in range(40)])  # fmt: skip
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    z0 = scipy_stats.norm.ppf(np.mean(replicates < estimate))
    z = scipy_stats.norm.ppf(0.975)
    expected = [scipy_stats.norm.cdf(z0 + (z0 + q) / (1 - a * (z0 + q))) for q in (-z, z)]
    result = ratio_intervals.bca_interval(replicates, estimate, rows, 0.95)
    assert result["acceleration"] == pytest.approx(a, rel=1e-9)
    assert result["z0"] == pytest.approx(z0, abs=1e-12)
    assert result["lower"] == pytest.approx(np.quantile(replicates, expected[0]), abs=1e-12)
    assert result["upper"] == pytest.approx(np.quantile(replicates, expected[1]), abs=1e-12)


def test_studentized_standard_errors_expand_the_delta_method() -> None:
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 4, size=(12, 4)).astype(float)
    rows[:, 1] += 4
    rows[:, 3] += 4
    extended = ratio_intervals.studentized_rows(rows)
    for _ in range(5):
        counts = np.bincount(rng.integers(0, 12, size=12), minlength=12).astype(float)
        from_sums = ratio_intervals.studentized_standard_errors((counts @ extended)[None, :])[0]
        direct = ratio_intervals.linearized_standard_error(rows, counts)
        assert from_sums == pytest.approx(direct, rel=1e-9, abs=1e-12)


def test_identical_arms_give_argument_f1_a_width_not_a_point() -> None:
    ref = records(["exact", "half", "fail", "half"] * 9)
    result = paired_intervals(ref, ref, seed=4)
    entry = result["intervals"]["argument_f1"]
    # the pseudo-units: 36 identical pairs still leave room for a difference (0.3: [0, 0])
    assert entry["degenerate"] is False and entry["lower"] < 0.0 < entry["upper"]
    assert entry["lower"] == pytest.approx(-entry["upper"])  # symmetric: the arms are alike
    assert entry["discordant"] == {"candidate_only": 0, "reference_only": 0}
    assert entry["method"] == JACKKNIFE_PAIRS == "jackknife_t_pseudo_paired"
    boot = paired_intervals(ref, ref, seed=4, interval="bootstrap")["intervals"]["argument_f1"]
    assert boot["degenerate"] is True and boot["lower"] == boot["upper"] == 0.0


def test_discordant_counts_compare_per_example_ratios_exactly() -> None:
    rows = np.array([[1, 2, 2, 4], [1, 3, 1, 2], [2, 2, 0, 2], [0, 0, 1, 1]], float)
    assert discordant_counts(rows) == {"candidate_only": 2, "reference_only": 1}


# --- clusters ----------------------------------------------------------------------------------


def test_cluster_index_numbers_by_first_appearance_and_checks_the_length() -> None:
    assert cluster_index(["b", "a", "b", None, "c", None], 6).tolist() == [0, 1, 0, 2, 3, 4]
    assert cluster_index(None, 3).tolist() == [0, 1, 2]
    with pytest.raises(InvariantError, match="SOM-STATS-SHAPE"):
        cluster_index(["a"], 2)


def test_design_effect_is_one_without_clusters_and_two_for_duplicated_pairs() -> None:
    rng = np.random.default_rng(5)
    residuals = rng.normal(size=50)
    assert design_effect(residuals, cluster_index(None, 50)) == 1.0
    doubled = np.repeat(residuals - residuals.mean(), 2)
    index = np.repeat(np.arange(50), 2)
    assert design_effect(doubled, index) == pytest.approx((2 * 50 - 1) / (50 - 1))
    assert design_effect(np.zeros(10), np.repeat(np.arange(5), 2)) == 2.0  # no information
    assert design_effect_from_moments(4.0, 10, 0.1, 5) == 1.0  # never below 1
    assert cluster_sums(np.ones((6, 2)), np.array([0, 0, 1, 2, 2, 2])).tolist() == [
        [2, 2], [1, 1], [3, 3]]  # fmt: skip


def test_cluster_ids_that_are_all_distinct_change_nothing() -> None:
    rng = random.Random(8)
    outcomes = ["exact", "half", "fail"]
    ref = records([rng.choice(outcomes) for _ in range(40)])
    cand = records([rng.choice(outcomes) for _ in range(40)])
    plain = paired_intervals(ref, cand, seed=9)
    distinct = paired_intervals(ref, cand, seed=9, clusters=[f"c{i}" for i in range(40)])
    assert distinct["intervals"] == plain["intervals"] and distinct["clustered"] is False
    plain_b = paired_intervals(ref, cand, seed=9, interval="bootstrap")
    distinct_b = paired_intervals(ref, cand, seed=9, interval="bootstrap",
                                  clusters=list(range(40)))  # fmt: skip
    assert distinct_b["intervals"] == plain_b["intervals"]


def test_duplicated_examples_in_one_cluster_recover_the_unclustered_f1_interval() -> None:
    rng = random.Random(10)
    outcomes = ["exact", "half", "fail"]
    ref_out = [rng.choice(outcomes) for _ in range(30)]
    cand_out = [rng.choice(outcomes) for _ in range(30)]
    single = paired_intervals(records(ref_out), records(cand_out), seed=1)
    ref2 = records([o for o in ref_out for _ in range(2)])
    cand2 = records([o for o in cand_out for _ in range(2)])
    doubled = paired_intervals(ref2, cand2, seed=1, clusters=[i // 2 for i in range(60)])
    f1, f1_doubled = single["intervals"]["argument_f1"], doubled["intervals"]["argument_f1"]
    assert f1_doubled["method"] == JACKKNIFE_CLUSTERS and doubled["clusters"] == 30
    assert (f1_doubled["lower"], f1_doubled["upper"]) == pytest.approx(
        (f1["lower"], f1["upper"]), abs=1e-12)
    naive = paired_intervals(ref2, cand2, seed=1)["intervals"]["argument_f1"]
    assert naive["upper"] - naive["lower"] < 0.8 * (f1["upper"] - f1["lower"])
    rate, rate_doubled = (r["intervals"]["full_call_exact_match"] for r in (single, doubled))
    assert rate_doubled["design_effect"] == pytest.approx(59 / 29)  # CR2 = the sandwich here
    # equal sizes: Bell-McCaffrey df = K - 1 = 29, but never more than the clusters holding a
    # discordant pair minus one (issue 38: a concordant cluster carries no spread)
    informative = sum(1 for r, c in zip(ref_out, cand_out, strict=True)
                      if (r == "exact") != (c == "exact"))  # fmt: skip
    assert rate_doubled["informative_clusters"] == informative < 29
    assert rate_doubled["df"] == pytest.approx(informative - 1)
    width = rate["upper"] - rate["lower"]
    # as wide as the single copy's, times about the t(df) / z factor the informative clusters cost
    factor = t_quantile(0.95, informative - 1.0) / 1.959963984540054
    ratio = (rate_doubled["upper"] - rate_doubled["lower"]) / width
    assert 0.9 * factor < ratio < 1.1 * factor


# --- the API: records, determinism, order, bootstrap --------------------------------------------


def random_pair(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Random reference and candidate records on the same n ids."""
    rng = random.Random(seed)
    outcomes = ["exact", "half", "fail"]
    return (records([rng.choice(outcomes) for _ in range(n)]),
            records([rng.choice(outcomes) for _ in range(n)]))  # fmt: skip


def test_the_result_has_the_documented_keys() -> None:
    ref, cand = random_pair(25, 1)
    result = paired_intervals(ref, cand, seed=5, clusters=[i // 3 for i in range(25)])
    assert {"confidence_level", "interval", "clusters", "intervals"} <= result.keys()
    assert result["clusters"] == 9 and result["pairs"] == 25 and result["clustered"] is True
    for name in METRIC_NAMES:
        entry = result["intervals"][name]
        extra = ({"standard_error", "df", "centre", "informative_units"} if name == "argument_f1"
                 else {"pairs", "df", "informative_clusters"})  # fmt: skip
        assert {"lower", "upper", "method", "discordant", "degenerate", "design_effect",
                "p_value", "estimate"} | extra == entry.keys()  # fmt: skip
        assert entry["discordant"].keys() == {"candidate_only", "reference_only"}
        assert entry["design_effect"] >= 1.0
    assert result["intervals"]["full_call_exact_match"]["method"] == (
        "bonett_price_adjusted_wald_cr2_bm")


@settings(max_examples=examples(30))
@given(st.integers(2, 60), st.integers(0, 10_000), st.integers(0, 2**62))
def test_auto_is_invariant_to_the_order_of_pairs(n, data_seed, seed) -> None:
    ref, cand = random_pair(n, data_seed)
    clusters = [i // 2 for i in range(n)]
    order = list(range(n))
    random.Random(data_seed).shuffle(order)
    shuffled = paired_intervals([ref[i] for i in order], [cand[i] for i in order], seed=seed,
                                clusters=[clusters[i] for i in order])  # fmt: skip
    plain = paired_intervals(ref, cand, seed=seed, clusters=clusters)
    for name in METRIC_NAMES:
        a, b = plain["intervals"][name], shuffled["intervals"][name]
        assert a["method"] == b["method"] and a["discordant"] == b["discordant"]
        assert (a["lower"], a["upper"]) == pytest.approx((b["lower"], b["upper"]), abs=1e-12)


@settings(max_examples=examples(30))
@given(st.integers(1, 60), st.integers(0, 10_000), st.integers(0, 2**62),
       st.sampled_from(["auto", "bootstrap"]), st.booleans())  # fmt: skip
def test_results_are_determined_by_the_seed(n, data_seed, seed, interval, clustered) -> None:
    ref, cand = random_pair(n, data_seed)
    clusters = [i // 2 for i in range(n)] if clustered else None
    first = paired_intervals(ref, cand, seed=seed, resamples=200, interval=interval,
                             clusters=clusters)  # fmt: skip
    again = paired_intervals(ref, cand, seed=seed, resamples=200, interval=interval,
                             clusters=clusters)  # fmt: skip
    assert first == again


@settings(max_examples=examples(40))
@given(st.integers(1, 60), st.integers(0, 10_000), levels)
def test_swapping_the_arms_negates_every_auto_interval(n, data_seed, level) -> None:
    ref, cand = random_pair(n, data_seed)
    forward = paired_intervals(ref, cand, seed=1, confidence_level=level)["intervals"]
    backward = paired_intervals(cand, ref, seed=1, confidence_level=level)["intervals"]
    for name in METRIC_NAMES:
        f, b = forward[name], backward[name]
        assert f["lower"] == pytest.approx(-b["upper"], abs=1e-9)
        assert f["upper"] == pytest.approx(-b["lower"], abs=1e-9)
        assert f["discordant"] == {"candidate_only": b["discordant"]["reference_only"],
                                   "reference_only": b["discordant"]["candidate_only"]}


@settings(max_examples=examples(40))
@given(st.integers(1, 80), st.integers(0, 10_000), st.floats(0.5, 0.999), st.booleans())
def test_every_interval_contains_its_estimate(n, data_seed, level, clustered) -> None:
    ref, cand = random_pair(n, data_seed)
    clusters = [i // 3 for i in range(n)] if clustered else None
    for interval in ("auto", "bootstrap"):
        result = paired_intervals(ref, cand, seed=2, resamples=300, confidence_level=level,
                                  interval=interval, clusters=clusters)  # fmt: skip
        for name, entry in result["intervals"].items():
            assert entry["lower"] <= entry["estimate"] + 1e-12, (interval, name)
            assert entry["estimate"] - 1e-12 <= entry["upper"], (interval, name)
            if interval == "auto" and name in RATES:
                assert entry["upper"] > entry["lower"]
            if entry["upper"] == entry["lower"] and interval == "auto":
                assert entry["degenerate"] is True


def test_include_bootstrap_is_exactly_the_seed_block_and_bootstrap_reuses_it() -> None:
    ref, cand = random_pair(70, 3)
    seed_block = paired_bootstrap(ref, cand, seed=77, resamples=500)
    auto = paired_intervals(ref, cand, seed=77, resamples=500, include_bootstrap=True,
                            clusters=[i // 2 for i in range(70)])  # fmt: skip
    assert auto["bootstrap"] == seed_block
    boot = paired_intervals(ref, cand, seed=77, resamples=500, interval="bootstrap")
    for name in METRIC_NAMES:
        entry = boot["intervals"][name]
        assert entry["method"] == PERCENTILE_PAIRS == BOOTSTRAP_METHOD
        assert (entry["lower"], entry["upper"]) == (
            seed_block["intervals"][name]["lower"], seed_block["intervals"][name]["upper"])


def test_zero_pairs_give_null_bounds() -> None:
    empty = np.zeros((0, 5), dtype=np.int64)
    result = paired_intervals_arrays(empty, empty, empty, empty, seed=1, include_bootstrap=True)
    assert result["pairs"] == 0 and result["clusters"] == 0
    for entry in result["intervals"].values():
        assert entry["lower"] is None and entry["upper"] is None and entry["p_value"] is None
    assert all(v["lower"] is None for v in result["bootstrap"]["intervals"].values())


def test_the_null_moves_every_p_value_consistently() -> None:
    ref, cand = table_records(40, 14, 4, 42)
    result = paired_intervals(ref, cand, seed=1, null=-0.02)
    entry = result["intervals"]["full_call_exact_match"]
    assert result["null"] == -0.02
    assert entry["p_value"] == pytest.approx(
        proportions.bonett_price_p_value(14, 4, 100, -0.02), rel=1e-12)
    assert entry["p_value"] < paired_intervals(ref, cand, seed=1)["intervals"][
        "full_call_exact_match"]["p_value"]


def test_refusals_name_the_problem() -> None:
    ref, cand = random_pair(5, 1)
    with pytest.raises(InputError, match=r"statistics\.interval"):
        paired_intervals(ref, cand, seed=1, interval="bca")
    with pytest.raises(InvariantError, match="SOM-STATS-PAIRING"):
        paired_intervals(ref, cand[:4], seed=1)
    with pytest.raises(InvariantError, match="SOM-STATS-SHAPE"):
        paired_intervals(ref, cand, seed=1, clusters=[1, 2])
    with pytest.raises(InputError, match="SOM-STATS-PARAMETER"):
        paired_intervals(ref, cand, seed=-1)
    num, den = component_arrays(ref)
    bad = num.copy()
    bad[0, 0] = 2  # a rate numerator of 2
    with pytest.raises(InvariantError, match="not 0/1 over 1"):
        paired_intervals_arrays(bad, den, num, den, seed=1)


# --- familywise adjustment ---------------------------------------------------------------------


def test_holm_and_bonferroni_on_a_hand_computed_family() -> None:
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 -> max 0.06)
    assert multiplicity.holm_adjusted(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert multiplicity.bonferroni_adjusted(p) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    assert multiplicity.holm_rejections(p, 0.05) == [True, False, False, True]
    assert multiplicity.bonferroni_confidence_level(0.95, 4) == pytest.approx(0.9875)
    assert multiplicity.bonferroni_confidence_level(0.95, 1) == 0.95
    assert multiplicity.holm_adjusted([0.01, None]) == [0.02, None]
    assert multiplicity.holm_rejections([0.01, None], 0.05) == [True, False]


@settings(max_examples=examples(100))
@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), max_size=12), st.floats(0.001, 0.2))
def test_holm_is_between_the_raw_p_and_bonferroni_and_keeps_the_order(p_values, alpha) -> None:
    holm = multiplicity.holm_adjusted(p_values)
    bonferroni = multiplicity.bonferroni_adjusted(p_values)
    for raw, h, b in zip(p_values, holm, bonferroni, strict=True):
        if raw is None:
            assert h is None
            continue
        assert raw - 1e-15 <= h <= b + 1e-15 and h <= 1.0
    known = [(raw, h) for raw, h in zip(p_values, holm, strict=True) if raw is not None]
    for (_, h1), (_, h2) in zip(sorted(known), sorted(known)[1:], strict=False):
        assert h1 <= h2 + 1e-15
    rejected = multiplicity.holm_rejections(p_values, alpha)
    bonf_rejected = [b is not None and b <= alpha for b in bonferroni]
    assert all(r or not br for r, br in zip(rejected, bonf_rejected, strict=True))
