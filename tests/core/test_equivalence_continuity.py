"""An equivalence gate reads Tango's score interval with a continuity correction of half a unit
of ``b - c``: checked against an independent root-finding implementation (scipy), for the
invariants an interval must keep (it holds the uncorrected one, it and its p-value agree), and
for its exact type I error at 90% where the uncorrected one exceeded its level."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from scipy import optimize, stats

from pytest_sommelier.core import proportions
from pytest_sommelier.core.gates import evaluate_gate, margin_method
from pytest_sommelier.core.intervals import entry_at
from pytest_sommelier.core.types import GateConfig

tables = st.integers(1, 200).flatmap(
    lambda n: st.tuples(st.integers(0, n), st.just(n)).flatmap(
        lambda bn: st.tuples(st.just(bn[0]), st.integers(0, bn[1] - bn[0]), st.just(bn[1]))
    )
)


def corrected_statistic(delta: float, b: float, c: float, n: float, side: float) -> float:
    """Tango's statistic written out from the paper's eq. 4, the numerator moved by 0.5
    towards accepting (``side`` -1 for the lower bound, +1 for the upper)."""
    a = 2 * n
    bb = -b - c + (2 * n - b + c) * delta
    cc = -c * delta * (1 - delta)
    p21 = (math.sqrt(max(bb * bb - 4 * a * cc, 0.0)) - bb) / (2 * a)
    variance = n * (2 * p21 + delta * (1 - delta))
    numerator = b - c - n * delta + side * 0.5
    if variance <= 0:
        return math.copysign(1e300, numerator)
    return numerator / math.sqrt(variance)


@settings(max_examples=examples(150), deadline=None)
@given(tables, st.sampled_from([0.8, 0.9, 0.95]))
def test_the_corrected_interval_matches_root_finding(table: tuple[int, int, int],
                                                     level: float) -> None:  # fmt: skip
    b, c, n = table
    lower, upper = proportions.tango_interval(b, c, n, level, 0.5)
    plain_lower, plain_upper = proportions.tango_interval(b, c, n, level)
    assert lower <= plain_lower + 1e-12 and upper >= plain_upper - 1e-12  # it holds the plain one
    estimate = (b - c) / n
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    for bound, side, edge in ((lower, -1.0, -1.0), (upper, 1.0, 1.0)):
        def f(delta: float, side: float = side) -> float:
            return corrected_statistic(delta, b, c, n, side) + side * z

        low, high = sorted((edge * (1 - 1e-12), estimate - side * 1e-12))
        if f(low) * f(high) > 0:  # the score test accepts every difference on that side
            assert bound == pytest.approx(edge, abs=1e-9)
            continue
        root = optimize.brentq(f, low, high, xtol=1e-14)
        assert bound == pytest.approx(root, abs=1e-9)


@settings(max_examples=examples(150), deadline=None)
@given(tables, st.floats(-0.9, 0.9))
def test_the_corrected_p_value_and_interval_agree(table: tuple[int, int, int],
                                                  null: float) -> None:  # fmt: skip
    b, c, n = table
    lower, upper = proportions.tango_interval(b, c, n, 0.9, 0.5)
    p = float(proportions.tango_p_value(b, c, n, null, 0.5))
    if abs(null - lower) > 1e-6 and abs(null - upper) > 1e-6:
        assert (p <= 0.1) == (null < lower or null > upper)


def type_one_error_90(n: int, margin: float, continuity: float) -> float:
    """P(both bounds of the 90% interval within +-margin | true difference -margin, only the
    reference hits), summed over every table."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    b, c = b[keep].astype(float), c[keep].astype(float)
    p = stats.multinomial.pmf(np.stack([b, c, n - b - c], axis=1), n, [0.0, margin, 1 - margin])
    lower, upper = proportions.tango_interval(b, c, float(n), 0.9, continuity)
    estimate = (b - c) / n
    passes = (np.minimum(lower, estimate) >= -margin) & (np.maximum(upper, estimate) <= margin)
    return float(p[passes].sum())


@pytest.mark.parametrize("n,margin", [(20, 0.2), (100, 0.1), (300, 0.02)])
def test_equivalence_holds_its_level_where_the_plain_score_interval_did_not(
    n: int, margin: float
) -> None:
    assert type_one_error_90(n, margin, 0.0) > 0.055  # 0.069, 0.058, 0.060
    assert type_one_error_90(n, margin, 0.5) <= 0.05


def gate(**fields: float) -> GateConfig:
    values: dict = {"ci_lower_above": None, "ci_lower_at_least": None, "delta_at_least": None,
                    **fields}  # fmt: skip
    return GateConfig(name="g", kind="gap", metric="full_call_exact_match", slice="overall",
                      arm="adapter", candidate=None, reference=None, gap="he", min=None,
                      max=None, **values)  # fmt: skip


def test_only_an_equivalence_gate_reads_the_corrected_interval() -> None:
    assert margin_method(gate(ci_lower_at_least=-0.1)) == "tango"
    assert margin_method(gate(ci_upper_at_most=0.1)) == "tango"
    assert margin_method(gate(ci_lower_at_least=-0.1, ci_upper_at_most=0.1)) == "tango_cc"
    entry = {"estimate": 0.0, "lower": -0.05, "upper": 0.05, "method": "bonett_price_adjusted_wald",
             "degenerate": False, "design_effect": 1.0, "p_value": 1.0, "pairs": 60,
             "discordant": {"candidate_only": 3, "reference_only": 3}}  # fmt: skip
    report = {"adapter": {"paired_slices": {"he": {"gaps": {"full_call_exact_match": 0.0},
              "intervals": {"confidence_level": 0.9,
                            "intervals": {"full_call_exact_match": entry}}}}}}  # fmt: skip
    result = evaluate_gate(gate(ci_lower_at_least=-0.3, ci_upper_at_most=0.3), report, {})
    expected = entry_at(entry, 0.9, -0.3, "tango_cc")
    assert expected is not None
    assert result["interval"]["method"] == "tango_asymptotic_score_cc"
    assert result["interval"]["lower"] == pytest.approx(expected["lower"])
    lower, upper = proportions.tango_interval(3, 3, 60, 0.9, 0.5)
    assert (result["interval"]["lower"], result["interval"]["upper"]) == (
        pytest.approx(lower), pytest.approx(upper))  # fmt: skip
    assert result["passed"] is (lower >= -0.3 and upper <= 0.3)
