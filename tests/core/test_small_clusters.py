"""Cluster-robust rate intervals that hold with few or unequal clusters: the CR2 design effect
and Bell & McCaffrey's degrees of freedom (checked against the general matrix definitions),
Kish's worst case, and the views' few-clusters warning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.clusters import (
    bell_mccaffrey_df,
    cluster_index,
    cr2_design_effect_from_sums,
    design_effect,
    effective_clusters,
    informative_clusters,
    informative_df,
    informative_sizes,
    kish_design_effect,
)
from pytest_sommelier.core.intervals import (
    SIZE_WEIGHTED_CLUSTER_WARN,
    rate_interval,
    size_weighted_cluster,
)
from pytest_sommelier.core.stats import paired_intervals_arrays
from pytest_sommelier.view.text import cluster_warning, power_text

SIZES = st.lists(st.integers(1, 12), min_size=2, max_size=25)


def matrix_cr2(residuals: np.ndarray, sizes: list[int]) -> float:
    """CR2 variance of a mean from its definition: ``A_g = (I - H_gg)^(-1/2)`` by
    eigen-decomposition, ``V = sum_g (1' A_g e_g)^2 / n^2`` (Bell & McCaffrey 2002, eq. 8)."""
    n, start, total = sum(sizes), 0, 0.0
    for m in sizes:
        block = np.eye(m) - np.full((m, m), 1.0 / n)
        values, vectors = np.linalg.eigh(block)
        root = vectors @ np.diag(values**-0.5) @ vectors.T
        total += float(np.ones(m) @ root @ residuals[start:start + m]) ** 2
        start += m
    return total / n**2


def matrix_df(sizes: list[int]) -> float:
    """Satterthwaite df from the eigenvalues of ``G'G``, ``G_g = (I - H)_{.g} A_g 1_g``."""
    n = sum(sizes)
    hat = np.full((n, n), 1.0 / n)
    residual_maker = np.eye(n) - hat
    columns, start = [], 0
    for m in sizes:
        block = np.eye(m) - hat[:m, :m]
        values, vectors = np.linalg.eigh(block)
        root = vectors @ np.diag(values**-0.5) @ vectors.T
        columns.append(residual_maker[:, start:start + m] @ root @ np.ones(m) / n)
        start += m
    g = np.stack(columns, axis=1)
    eigen = np.linalg.eigvalsh(g.T @ g)
    return float(eigen.sum() ** 2 / (eigen**2).sum())


@settings(max_examples=examples(60), deadline=None)
@given(SIZES, st.integers(0, 2**32 - 1))
def test_the_closed_forms_match_the_matrix_definitions(sizes: list[int], seed: int) -> None:
    if len(sizes) < 2:
        return
    rng = np.random.default_rng(seed)
    values = rng.normal(size=sum(sizes))
    residuals = values - values.mean()
    index = np.repeat(np.arange(len(sizes)), sizes)
    sums = np.bincount(index, weights=residuals)
    n = sum(sizes)
    iid = float(residuals @ residuals) / (n * (n - 1))
    deff = cr2_design_effect_from_sums(sums, sizes, float(residuals @ residuals))
    assert deff == pytest.approx(max(1.0, matrix_cr2(residuals, sizes) / iid), rel=1e-9)
    assert bell_mccaffrey_df(sizes) == pytest.approx(matrix_df(sizes), rel=1e-9)


@settings(max_examples=examples(60), deadline=None)
@given(SIZES)
def test_degrees_of_freedom_never_exceed_k_minus_1_and_equal_it_for_equal_sizes(
    sizes: list[int],
) -> None:
    k = len(sizes)
    assert 0.0 < bell_mccaffrey_df(sizes) <= k - 1 + 1e-9
    assert bell_mccaffrey_df([sizes[0]] * k) == pytest.approx(k - 1)


def test_a_dominant_cluster_costs_degrees_of_freedom_and_kish_is_the_worst_case() -> None:
    sizes = [20] + [1] * 20
    assert bell_mccaffrey_df(sizes) == pytest.approx(3.63, abs=0.01)  # not K - 1 = 20
    assert kish_design_effect(sizes) == 10.5  # n / K would say 40 / 21 = 1.9
    assert bell_mccaffrey_df([1] * 50) == pytest.approx(49)
    # no residual varies: the worst case, not the mean size
    index = np.repeat(np.arange(21), sizes)
    assert design_effect(np.zeros(40), index) == 10.5


def rows_of(ref: list[int], cand: list[int]) -> np.ndarray:
    return np.array([[r, 1, c, 1] for r, c in zip(ref, cand, strict=True)], dtype=float)


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_a_clustered_rate_interval_is_never_zero_width_and_agrees_with_its_p_value(
    data: st.DataObject,
) -> None:
    n = data.draw(st.integers(2, 40))
    ref = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    cand = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    ids = data.draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    index = cluster_index(ids, n)
    entry = rate_interval(rows_of(ref, cand), index, 0.95)
    assert entry["lower"] < entry["upper"]
    assert entry["lower"] <= entry["estimate"] <= entry["upper"]
    assert -1.0 <= entry["lower"] and entry["upper"] <= 1.0
    if index.max() + 1 < n:  # clustered
        assert entry["method"] == "bonett_price_adjusted_wald_cr2_bm" and "df" in entry
        assert entry["design_effect"] >= 1.0
        excludes = entry["lower"] > 0 or entry["upper"] < 0
        # the Wald centre can differ from the estimate; compare where the bound is not moved
        if entry["lower"] < entry["estimate"] < entry["upper"]:
            assert (entry["p_value"] <= 0.05) is excludes or math.isclose(
                entry["p_value"], 0.05, abs_tol=1e-9)  # fmt: skip


def test_one_cluster_gives_the_whole_range() -> None:
    entry = rate_interval(rows_of([0, 0, 1, 0], [1, 1, 1, 1]), np.zeros(4, dtype=np.int64), 0.95)
    assert (entry["lower"], entry["upper"], entry["df"]) == (-1.0, 1.0, 0.0)


def test_informative_clusters_bound_the_degrees_of_freedom() -> None:
    # 12 clusters of 5; the discordant pairs all sit in two of them (issue 38: Carter,
    # Schnepel & Steigerwald 2017; MacKinnon & Webb 2017)
    index = np.repeat(np.arange(12), 5)
    ref = [1] * 60
    cand = [1] * 60
    for position in (0, 1, 2, 5, 6):  # clusters 0 and 1
        cand[position] = 0
    assert informative_clusters(np.array(cand) != np.array(ref), index) == 2
    entry = rate_interval(rows_of(ref, cand), index, 0.95)
    assert bell_mccaffrey_df(np.full(12, 5)) == pytest.approx(11.0)
    assert entry["informative_clusters"] == 2 and entry["df"] == pytest.approx(1.0)
    # one informative cluster: no spread to measure, the whole range
    cand = [1] * 60
    cand[0] = cand[3] = 0
    entry = rate_interval(rows_of(ref, cand), index, 0.95)
    assert entry["informative_clusters"] == 1 and entry["df"] == 0.0
    assert (entry["lower"], entry["upper"], entry["p_value"]) == (-1.0, 1.0, 1.0)
    # no discordant pair: the variance is not estimated (Kish's worst case), the sizes' df
    entry = rate_interval(rows_of(ref, ref), index, 0.95)
    assert entry["informative_clusters"] == 0 and entry["df"] == pytest.approx(11.0)
    assert entry["design_effect"] == pytest.approx(5.0) and entry["lower"] < 0 < entry["upper"]
    assert informative_df(11.0, 0) == 11.0 and informative_df(11.0, 30) == 11.0
    assert informative_df(11.0, 4) == 3.0 and informative_df(2.5, 4) == 2.5


def block(clusters: int, pairs: int, largest: int, clustered: bool = True) -> dict:
    summary = {"power": 0.8, "confidence_level": 0.95, "pairs": pairs, "clusters": clusters,
               "design_effect": 1.5, "discordant_proportion": 0.3, "discordance_floored": False,
               "minimum_detectable_effect": 0.2, "attainable": True}  # fmt: skip
    return {"intervals": {"clustered": clustered, "clusters": clusters, "pairs": pairs,
                          "largest_cluster": largest, "intervals": {}},
            "power": {"full_call_exact_match": summary}}  # fmt: skip


def test_the_views_warn_of_few_or_dominant_clusters() -> None:
    assert cluster_warning(block(12, 30, 3)) == (
        "few clusters: 12 (under 30): the intervals rest on few independent units")
    assert cluster_warning(block(41, 60, 20)) == (
        "few clusters: the largest holds 20 of 60 pairs (over 10%): the intervals rest on few "
        "independent units")  # fmt: skip
    assert cluster_warning(block(48, 84, 2)) is None
    assert cluster_warning(block(10, 10, 1, clustered=False)) is None
    # an entry that records its informative clusters: those are counted, not all clusters
    counted = block(48, 84, 2)
    counted["intervals"]["intervals"] = {"full_call_exact_match": {"informative_clusters": 4}}
    assert cluster_warning(counted) == (
        "few informative clusters: 4 of 48 hold a discordant pair (under 30): the intervals "
        "rest on few independent units")  # fmt: skip
    counted["intervals"]["intervals"]["full_call_exact_match"]["informative_clusters"] = 40
    assert cluster_warning(counted) is None
    text = power_text(block(12, 30, 3))
    assert text is not None and text.endswith("the intervals rest on few independent units")
    assert text.startswith("minimum detectable difference in full_call_exact_match at 80% power "
                           "(one-sided 2.5%), at the observed discordance 0.300: 0.20")  # fmt: skip


def test_large_dominant_clusters_warn_where_margin_gates_were_measured_above_their_level() -> None:
    """40 clusters of 1-20 pairs (size-weighted about 14) passed a margin gate falsely
    0.043-0.061 against 0.025 (bench_clustered_margins); clusters of 1-10 pairs (about 7) held.
    The block records the size-weighted cluster size and the views warn from 10 on."""
    wide = block(40, 420, 20)
    wide["intervals"]["size_weighted_cluster"] = 13.7
    assert cluster_warning(wide) == (
        "few clusters: pairs per cluster, weighted by size, 13.7 (from 10, a margin gate may "
        "pass falsely above its level): the intervals rest on few independent units")  # fmt: skip
    held = block(50, 275, 10)
    held["intervals"]["size_weighted_cluster"] = 7.0
    assert cluster_warning(held) is None
    assert size_weighted_cluster(np.repeat(np.arange(40), np.arange(1, 41) % 20 + 1)) == (
        pytest.approx(sum(k * k for k in range(1, 21)) / sum(range(1, 21)))
    )
    assert size_weighted_cluster(np.repeat(np.arange(10), np.arange(1, 11))) == pytest.approx(7.0)
    assert size_weighted_cluster(np.arange(30)) == 1.0
    assert size_weighted_cluster(np.repeat(np.arange(5), 12)) == 12.0 >= SIZE_WEIGHTED_CLUSTER_WARN


@settings(max_examples=examples(40), deadline=None)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=40))
def test_the_size_weighted_cluster_lies_between_the_mean_and_the_largest(sizes: list[int]) -> None:
    index = np.repeat(np.arange(len(sizes)), sizes)
    weighted = size_weighted_cluster(index)
    mean = sum(sizes) / len(sizes)
    assert mean - 1e-9 <= weighted <= max(sizes) + 1e-9


def test_a_clustered_block_records_its_size_weighted_cluster_and_a_plain_one_does_not() -> None:
    ref = np.array([[1], [0], [1], [1], [0], [1]])
    cand = np.array([[1], [1], [1], [0], [1], [1]])
    den = np.ones((6, 1), dtype=int)
    clustered = paired_intervals_arrays(ref, den, cand, den, seed=1, resamples=50,
                                        clusters=["a", "a", "a", "b", "b", "c"],
                                        metric_names=("m",))  # fmt: skip
    assert clustered["size_weighted_cluster"] == pytest.approx((9 + 4 + 1) / 6)
    plain = paired_intervals_arrays(ref, den, cand, den, seed=1, resamples=50,
                                    metric_names=("m",))  # fmt: skip
    assert "size_weighted_cluster" not in plain


# --- the effective number of informative clusters (Carter, Schnepel & Steigerwald 2017) ------


def css_g_star(gammas: np.ndarray) -> float:
    """G* from the paper's definition: ``G / (1 + Gamma)``, ``Gamma = mean((gamma_g -
    mean gamma)^2) / mean(gamma)^2`` (the squared coefficient of variation of the clusters'
    variance contributions)."""
    gamma = float(np.mean((gammas - gammas.mean()) ** 2) / gammas.mean() ** 2)
    return gammas.size / (1.0 + gamma)


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.floats(0.0, 1.0))
def test_effective_clusters_is_g_star_at_correlation_one(sizes: list[int], rho: float) -> None:
    m = np.array(sizes, dtype=float)
    g_star = effective_clusters(sizes)
    # the definition with gamma_g = m_g^2 (a mean at within-cluster correlation 1)
    assert g_star == pytest.approx(css_g_star(m * m), rel=1e-9)
    # between 1 and the count, the count for equal sizes
    assert 1.0 - 1e-9 <= g_star <= len(sizes) + 1e-9
    assert effective_clusters([sizes[0]] * len(sizes)) == pytest.approx(len(sizes))
    # the smallest over rho in [0, 1] (gamma_g = m_g (1 + (m_g - 1) rho)): the worst case
    assert g_star <= css_g_star(m * (1.0 + (m - 1.0) * rho)) + 1e-9
    # it depends on the sizes' proportions only
    assert effective_clusters([3 * x for x in sizes]) == pytest.approx(g_star, rel=1e-9)


def test_effective_clusters_worked_cases() -> None:
    assert effective_clusters([]) == 0.0
    # one cluster of 20 among 20 single pairs: (400 + 20)^2 / (20^4 + 20), about one cluster
    assert effective_clusters([20] + [1] * 20) == pytest.approx(420**2 / 160020)
    assert effective_clusters([1, 10]) == pytest.approx(101**2 / 10001)


@settings(max_examples=examples(60), deadline=None)
@given(SIZES, st.integers(0, 2**32 - 1))
def test_informative_sizes_are_the_clusters_holding_a_discordant_pair(
    sizes: list[int], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    index = np.repeat(np.arange(len(sizes)), sizes)
    discordant = rng.random(index.size) < rng.random()
    held = informative_sizes(discordant, index)
    assert held.size == informative_clusters(discordant, index)
    expected = [m for g, m in enumerate(sizes) if discordant[index == g].any()]
    assert held.tolist() == expected


def test_unequal_informative_clusters_lower_the_degrees_of_freedom() -> None:
    # 12 clusters; the discordant pairs sit in three of sizes 1, 2 and 12: their count gives
    # df 2, their effective number (Carter et al.'s G* at correlation 1) about 1.07 -> 0.07,
    # too few for an interval narrower than [-1, 1]
    sizes = [1, 2, 12] + [5] * 9
    index = np.repeat(np.arange(len(sizes)), sizes)
    ref = [1] * index.size
    cand = list(ref)
    cand[0] = 0  # cluster 0 (size 1)
    cand[1] = 0  # cluster 1 (size 2)
    for position in range(3, 9):  # cluster 2 (size 12)
        cand[position] = 0
    entry = rate_interval(rows_of(ref, cand), index, 0.95)
    g_star = effective_clusters([1, 2, 12])
    assert entry["informative_clusters"] == 3
    assert entry["df"] == pytest.approx(g_star - 1.0) and entry["df"] < 2.0
    assert (entry["lower"], entry["upper"]) == (-1.0, 1.0)
    # equal sizes: the effective number is the count (the first round's df)
    index = np.repeat(np.arange(12), 5)
    cand = [1] * 60
    for position in (0, 5, 10, 11):  # clusters 0, 1 and 2
        cand[position] = 0
    entry = rate_interval(rows_of([1] * 60, cand), index, 0.95)
    assert entry["informative_clusters"] == 3 and entry["df"] == pytest.approx(2.0)
    assert -1.0 < entry["lower"] < entry["upper"] < 1.0
