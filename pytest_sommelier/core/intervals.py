"""Paired intervals for every metric: the method ``interval = "auto"`` chooses, or the seed's
percentile bootstrap (``"bootstrap"``), over pairs or over clusters of pairs.

Pure functions (numpy and the standard library). The public entry points are
``stats.paired_intervals`` (records) and ``stats.paired_intervals_arrays`` (component arrays);
they validate, draw the bootstrap resamples when needed (the seed's draw lives in
``core.stats``) and call :func:`paired_interval_block` here, which never draws anything itself:
it receives the pair resamples' column sums and a ``resample`` function for other unit rows.

What ``auto`` chooses (docs/statistics.md shows the coverage benchmark behind it):

- the four rate metrics: the Bonett-Price adjusted Wald interval on the discordance table
  (:mod:`pytest_sommelier.core.proportions`); with clusters, the same interval on the counts
  divided by the CR2 design effect of the paired difference, at Bell & McCaffrey's (2002)
  Satterthwaite degrees of freedom, never more than the effective number of the clusters
  holding a discordant pair minus one (``_cr2_bm``; the sandwich design effect with z, 0.3's
  ``_cluster_adjusted``, covered 0.907 with one dominant cluster);
- ``argument_f1`` (a ratio of sums): the jackknife-t interval with two half-weight
  pseudo-units (:func:`~pytest_sommelier.core.ratio_intervals.pseudo_jackknife_t_interval`),
  leaving out one pair, or one cluster, at a time; it draws no resamples (the BCa and
  studentized bootstraps covered less at 30 pairs; the plain jackknife-t under-covered and was
  zero-width near the metric's ceiling).

Invariants kept: every interval records its ``method``, its discordant counts, its design
effect and a two-sided ``p_value`` of ``difference == null`` from the same method
(``p <= 1 - confidence_level`` exactly when the interval excludes the null, up to a
bootstrap's resolution, and for Bonett-Price at confidence levels of 0.85 and above); every
interval contains its point estimate (Bonett-Price, centred on the adjusted difference, could
exclude it only below about 84% confidence: the bound is then moved to the estimate); a rate
metric's ``auto`` interval is never zero-width when there are pairs; an ``argument_f1``
interval is zero-width only when ``degenerate`` is true.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pytest_sommelier.core import proportions, ratio_intervals
from pytest_sommelier.core.clusters import (
    bell_mccaffrey_df,
    cluster_count,
    cluster_sums,
    cr2_design_effect_from_sums,
    design_effect,
    effective_clusters,
    informative_clusters,
    informative_df,
    informative_sizes,
)
from pytest_sommelier.core.distributions import (
    normal_cdf,
    normal_inverse_cdf,
    t_quantile,
    two_sided_t_p,
)
from pytest_sommelier.core.scorers import BUILTIN_RATIOS, is_ratio
from pytest_sommelier.core.types import BOOTSTRAP_METHOD
from pytest_sommelier.errors import InputError, InvariantError

INTERVALS: tuple[str, ...] = ("auto", "bootstrap")
"""The accepted values of ``interval`` (``[statistics] interval``)."""

RATIO_OF_SUMS = BUILTIN_RATIOS
"""Metrics that are a ratio of sums (every other metric is a rate: per-example 0/1 over 1)."""

RATE_METHODS: dict[str, str] = {
    "tango": "tango_asymptotic_score",
    "tango_cc": "tango_asymptotic_score_cc",
    "bonett_price": "bonett_price_adjusted_wald",
    "newcombe": "newcombe_hybrid_score",
}
AUTO_RATE_METHOD = "bonett_price"
"""The rate-metric interval ``auto`` uses: the only one of the three that covered >= 0.93 in
every cell of benchmarks/bench_coverage.py (docs/statistics.md has the table)."""

JACKKNIFE_PAIRS = "jackknife_t_pseudo_paired"
JACKKNIFE_CLUSTERS = "jackknife_t_pseudo_cluster"
"""``argument_f1``'s ``auto`` methods: the jackknife-t with two half-weight pseudo-units
(``ratio_intervals.pseudo_jackknife_t_interval``). 0.3 wrote ``jackknife_t_paired`` /
``jackknife_t_cluster`` (no pseudo-units), which near the ceiling under-covered and could be
zero-width; :data:`PLAIN_JACKKNIFE` names them."""
PLAIN_JACKKNIFE = ("jackknife_t_paired", "jackknife_t_cluster")
PERCENTILE_PAIRS = BOOTSTRAP_METHOD  # one name with stats.BOOTSTRAP_METHOD (core.types)
PERCENTILE_CLUSTERS = "cluster_bootstrap_percentile"
CLUSTERED_SUFFIX = "_cr2_bm"
"""The suffix of a rate method over clusters: the counts divided by the CR2 design effect and
the bounds at Bell & McCaffrey's t degrees of freedom (:func:`rate_interval`). 0.3 wrote
``_cluster_adjusted`` (the sandwich design effect and z), which under-covered with few or
unequal clusters; an entry of a stored report may still carry that name."""
LEGACY_CLUSTERED_SUFFIX = "_cluster_adjusted"

Resample = Callable[[np.ndarray], np.ndarray]
Percentile = Callable[[np.ndarray, float], tuple[np.ndarray, np.ndarray]]


def check_interval(interval: str) -> None:
    """Refuse an ``interval`` outside :data:`INTERVALS` (``InputError`` naming the setting)."""
    if interval not in INTERVALS:
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"interval must be one of {', '.join(INTERVALS)}, got {interval!r}",
            'set [statistics] interval to "auto" (the default) or "bootstrap"',
            where="statistics.interval",
        )


def is_clustered(index: np.ndarray) -> bool:
    """True when some cluster holds more than one pair (fewer clusters than pairs)."""
    return cluster_count(index) < index.size


def _unit_rows(matrices: Sequence[np.ndarray], column: int) -> np.ndarray:
    """The ``(n, 4)`` unit rows ``[ref_num, ref_den, cand_num, cand_den]`` of one metric."""
    return np.stack([m[:, column] for m in matrices], axis=1)


def _metric_columns(metrics: int, column: int) -> list[int]:
    """Positions of one metric's four columns in the stacked ``[rn | rd | cn | cd]`` layout."""
    return [column + k * metrics for k in range(4)]


def discordant_counts(rows: np.ndarray) -> dict[str, int]:
    """Pairs where the candidate's per-example ratio beats the reference's, and the reverse.

    Ratios are compared exactly by cross-multiplying the integer components (a 0 denominator
    counts as ratio 0); for a rate metric these are McNemar's b and c.
    """
    rn, rd, cn, cd = (rows[:, k] for k in range(4))
    cand = np.where(cd > 0, cn, 0) * np.where(rd > 0, rd, 1)
    ref = np.where(rd > 0, rn, 0) * np.where(cd > 0, cd, 1)
    return {"candidate_only": int(np.count_nonzero(cand > ref)),
            "reference_only": int(np.count_nonzero(ref > cand))}  # fmt: skip


def counted_rows(rows: np.ndarray) -> np.ndarray:
    """Which pairs a rate metric counts: those whose denominators are 1 (a pair with 0 over 0
    on both sides, e.g. ``acceptable_call_match`` of an example without acceptable values, is
    not an observation of the metric and is left out of its interval)."""
    return (rows[:, 1] > 0) | (rows[:, 3] > 0)


def renumbered(index: np.ndarray) -> np.ndarray:
    """A subset of a ``cluster_index`` renumbered ``0..K-1`` by first appearance (what
    ``cluster_index`` would give for the subset's ids)."""
    _, first, inverse = np.unique(index, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def _check_rate(name: str, rows: np.ndarray) -> None:
    """A rate metric's components are 0/1 over 1 on both sides, or 0 over 0 on both sides (a
    pair the metric does not count), else ``InvariantError``."""
    numerators, denominators = rows[:, [0, 2]], rows[:, [1, 3]]
    counted = np.all(denominators == 1, axis=1)
    uncounted = np.all(rows == 0, axis=1)
    if np.any(~counted & ~uncounted) or np.any((numerators != 0) & (numerators != 1)):
        raise InvariantError(
            "SOM-STATS-SHAPE",
            f"metric {name} is a rate but its components are not 0/1 over 1",
            "pass metrics.component_arrays output (argument_f1 is the only ratio of sums)",
        )


def normal_equivalent_level(confidence_level: float, df: float | None) -> float | None:
    """The confidence level whose normal critical value is the t critical value at ``df``
    degrees of freedom: ``1 - 2 Phi(-t_{df})``, so a normal-theory interval at that level has
    the t interval's half-width factor (``confidence_level`` itself for ``df`` None); None
    when that level rounds to 1 (a t quantile beyond 8 normal deviates: so few degrees of
    freedom that the interval is all of [-1, 1])."""
    if df is None:
        return confidence_level
    level = 1.0 - 2.0 * normal_cdf(-t_quantile(confidence_level, df))
    return level if level < 1.0 - 1e-15 else None


def t_p_from_normal_p(p_value: float, df: float | None) -> float:
    """A two-sided normal p-value re-read on t with ``df`` degrees of freedom (the same
    statistic, ``|z| = -Phi^-1(p/2)``, accurate for tiny p); unchanged for ``df`` None."""
    if df is None or p_value >= 1.0:
        return float(p_value)
    if p_value <= 0.0:
        return 0.0
    return two_sided_t_p(-normal_inverse_cdf(p_value / 2.0), df)


SIZE_WEIGHTED_CLUSTER_WARN = 10.0
"""The size-weighted mean cluster size (:func:`size_weighted_cluster`) from which the views
warn that a clustered margin or equivalence gate may pass falsely above its level: measured in
benchmarks/bench_clustered_margins.py, every design of clusters of 1-10 pairs (about 7) holds
its level, 40 clusters of 1-20 pairs (about 14) reach 0.043-0.061 against 0.025
(docs/statistics.md)."""


def size_weighted_cluster(index: np.ndarray) -> float:
    """Kish's size-weighted mean cluster size ``sum(m^2) / sum(m)`` of the pairs' clusters: the
    number of pairs the average pair shares its cluster with (itself included); 1.0 for
    distinct clusters, the cluster size for equal ones, larger than the mean when large
    clusters dominate (Kish 1965, "Survey Sampling", section 5.4). 0.0 with no pairs."""
    if not index.size:
        return 0.0
    sizes = np.bincount(index).astype(np.float64)
    return float((sizes @ sizes) / sizes.sum())


def cluster_adjustment(difference: np.ndarray, index: np.ndarray) -> tuple[float, float]:
    """``(design effect, degrees of freedom)`` of a mean over clustered pairs: the CR2 design
    effect of the per-pair differences (Kish's worst case where none varies) and Bell &
    McCaffrey's Satterthwaite degrees of freedom of the cluster sizes, never more than the
    effective number of the clusters holding a discordant pair minus one (Carter, Schnepel &
    Steigerwald's ``G*`` of their sizes at a within-cluster correlation of 1: their count for
    equal sizes, fewer when large clusters dominate;
    :func:`~pytest_sommelier.core.clusters.cr2_design_effect_from_sums`,
    :func:`~pytest_sommelier.core.clusters.bell_mccaffrey_df`,
    :func:`~pytest_sommelier.core.clusters.effective_clusters`,
    :func:`~pytest_sommelier.core.clusters.informative_df`). 0 degrees of freedom with a
    single cluster, or a single cluster holding every discordant pair: no interval narrower
    than [-1, 1] can be formed."""
    k = cluster_count(index)
    sizes = np.bincount(index, minlength=k).astype(np.float64)
    residuals = difference - difference.mean()
    sums = np.bincount(index, weights=residuals, minlength=k)
    deff = float(cr2_design_effect_from_sums(sums, sizes, float(residuals @ residuals)))
    effective = effective_clusters(informative_sizes(difference != 0.0, index))
    return deff, informative_df(bell_mccaffrey_df(sizes), effective)


def rate_interval(
    rows: np.ndarray,
    index: np.ndarray,
    confidence_level: float,
    method: str = AUTO_RATE_METHOD,
    null: float = 0.0,
) -> dict[str, Any]:
    """One rate metric's paired interval from its unit rows (0/1 over 1).

    With clusters the counts are divided by the CR2 design effect of the per-pair difference
    ``cand - ref`` and the method is applied at the confidence level whose normal critical
    value is Bell & McCaffrey's t quantile, at no more degrees of freedom than the effective
    number of the clusters holding a discordant pair minus one (:func:`cluster_adjustment`;
    the method name gains ``_cr2_bm``, the entry records ``df`` and ``informative_clusters``,
    their count). The coverage
    benchmarks behind the choice: benchmarks/bench_coverage_small.py and
    benchmarks/bench_clustered_margins.py (docs/statistics.md has the tables). With one
    cluster, or one cluster holding every discordant pair, the interval is [-1, 1].
    """
    ref, cand = rows[:, 0] > 0, rows[:, 2] > 0
    pairs = rows.shape[0]
    cells = np.array(
        [np.count_nonzero(ref & cand), np.count_nonzero(cand & ~ref),
         np.count_nonzero(ref & ~cand), np.count_nonzero(~ref & ~cand)],
        dtype=np.float64,
    )  # fmt: skip
    if method not in RATE_METHODS:
        raise InputError("SOM-STATS-PARAMETER", f"unknown rate interval method {method!r}",
                         f"use one of {', '.join(RATE_METHODS)}")  # fmt: skip
    deff, df = 1.0, None
    clustered = is_clustered(index)
    if clustered:
        difference = cand.astype(np.float64) - ref.astype(np.float64)
        deff, df = cluster_adjustment(difference, index)
    estimate = float((cells[1] - cells[2]) / pairs)
    entry: dict[str, Any] = {
        "estimate": estimate,
        "method": RATE_METHODS[method] + (CLUSTERED_SUFFIX if clustered else ""),
        "discordant": {"candidate_only": int(cells[1]), "reference_only": int(cells[2])},
        "degenerate": False,
        "design_effect": float(deff),
        "pairs": int(pairs),
    }
    if df is not None:
        entry["df"] = df
        entry["informative_clusters"] = informative_clusters(cand != ref, index)
    if df is not None and df <= 0.0:  # one (informative) cluster: nothing to measure the spread by
        return {**entry, "lower": -1.0, "upper": 1.0, "p_value": 1.0}
    lower, upper, p_value = _rate_bounds(method, cells / deff, confidence_level, null, df)
    return {**entry, "lower": min(lower, estimate), "upper": max(upper, estimate),
            "p_value": p_value}  # fmt: skip


def _rate_bounds(
    method: str, cells: np.ndarray, confidence_level: float, null: float, df: float | None
) -> tuple[float, float, float]:
    """``(lower, upper, p_value)`` of one rate method on (possibly scaled) table cells
    ``[both, b, c, neither]``, at t with ``df`` degrees of freedom when given."""
    both, b, c, neither = (float(x) for x in cells)
    n = both + b + c + neither
    level = normal_equivalent_level(confidence_level, df)
    if level is None:
        return -1.0, 1.0, t_p_from_normal_p(
            float(proportions.bonett_price_p_value(b, c, n, null)), df
        )
    if method in ("tango", "tango_cc"):
        continuity = TANGO_CONTINUITY if method == "tango_cc" else 0.0
        lower, upper = proportions.tango_interval(b, c, n, level, continuity)
        p_value = proportions.tango_p_value(b, c, n, null, continuity)
    elif method == "bonett_price":
        lower, upper = proportions.bonett_price_interval(b, c, n, level)
        p_value = proportions.bonett_price_p_value(b, c, n, null)
    else:
        lower, upper = proportions.newcombe_interval(both, b, c, neither, level)
        p_value = proportions.newcombe_p_value(both, b, c, neither, null)
    return float(lower), float(upper), t_p_from_normal_p(float(p_value), df)


def pair_sums_needed(interval: str, index: np.ndarray) -> bool:
    """Whether :func:`paired_interval_block` needs the pair resamples' sums: only for the
    seed's percentile bootstrap over pairs (``auto`` draws none)."""
    return interval == "bootstrap" and not is_clustered(index) and index.size > 0


def ratio_interval(
    rows: np.ndarray,
    index: np.ndarray,
    confidence_level: float,
    pair_replicates: np.ndarray | None,
    resample: Resample,
    percentile: Percentile,
    null: float = 0.0,
) -> dict[str, Any]:
    """``argument_f1``'s jackknife-t interval with two half-weight pseudo-units, over pairs or
    clusters (:func:`~pytest_sommelier.core.ratio_intervals.pseudo_jackknife_t_interval`).

    It is zero-width (degenerate) only when no unit has a denominator. Where it is undefined
    the seed's percentile bootstrap over the same units is used instead (``pair_replicates``
    when given, else drawn with ``resample``), and its method recorded.
    """
    clustered = is_clustered(index)
    units = cluster_sums(rows, index) if clustered else rows
    jackknife = ratio_intervals.pseudo_jackknife_t_interval(units, confidence_level, null=null)
    deff = 1.0
    if clustered:
        deff = design_effect(ratio_intervals.linearized_residuals(rows), index)
    entry = {
        "informative_units": informative_units(rows, index),
        "estimate": jackknife["estimate"],
        "lower": float(jackknife["lower"]),
        "upper": float(jackknife["upper"]),
        "method": JACKKNIFE_CLUSTERS if clustered else JACKKNIFE_PAIRS,
        "discordant": discordant_counts(rows),
        "degenerate": bool(jackknife["degenerate"]),
        "design_effect": float(deff),
        "p_value": jackknife["p_value"],
        "standard_error": float(jackknife["standard_error"]),
        "df": float(jackknife["df"]),
        "centre": float(jackknife.get("centre", jackknife["estimate"])),
    }
    if not jackknife["defined"]:
        replicates = pair_replicates
        if clustered or replicates is None:
            replicates = ratio_intervals.ratio_difference(resample(units))
        lower, upper = percentile(replicates[:, None], confidence_level)
        entry.update(
            lower=float(min(lower[0], entry["estimate"])),
            upper=float(max(upper[0], entry["estimate"])),
            method=PERCENTILE_CLUSTERS if clustered else PERCENTILE_PAIRS,
            p_value=ratio_intervals.percentile_p_value(replicates, null),
        )
        del entry["standard_error"], entry["df"], entry["centre"]
    return entry


def informative_units(rows: np.ndarray, index: np.ndarray) -> int:
    """The units (pairs, or clusters) holding a pair whose two per-example ratios differ: the
    pairs :func:`discordant_counts` counts, or the clusters holding one."""
    rn, rd, cn, cd = (rows[:, k] for k in range(4))
    cand = np.where(cd > 0, cn, 0) * np.where(rd > 0, rd, 1)
    ref = np.where(rd > 0, rn, 0) * np.where(cd > 0, cd, 1)
    return informative_clusters(cand != ref, index)


F1_MARGIN_MIN_INFORMATIVE = 50
"""Below this many informative units (:func:`informative_units`) an ``argument_f1`` gate with
a margin is not evaluable. Near the metric's floor its jackknife-t interval under-covers and
passes a non-inferiority gate at its margin falsely 0.20 of the time at 10 pairs and 0.034-0.042
at 100-250 pairs (16-40 informative units); with this rule at most 0.023 in every floor and
bimodal cell, where 30 still let 0.027 through (issue 38; benchmarks/bench_f1_floor.py, where a
MOVER interval, Zou & Donner 2008, did not hold either): until a method holds there, the gate
says so instead of passing on that evidence."""


def ratio_margin_unevaluable(metric: str, limits: Sequence[float], entry: Any) -> str | None:
    """Why an ``argument_f1`` margin gate's interval is no evidence, or None: fewer than
    :data:`F1_MARGIN_MIN_INFORMATIVE` informative units (an entry of 0.4, which does not
    record them, counts its discordant pairs)."""
    if not is_ratio(metric) or not is_margin(limits) or not isinstance(entry, Mapping):
        return None
    units = entry.get("informative_units")
    if not isinstance(units, int):
        counts = entry.get("discordant") or {}
        units = int(counts.get("candidate_only", 0)) + int(counts.get("reference_only", 0))
    if units >= F1_MARGIN_MIN_INFORMATIVE:
        return None
    return (f"not evaluable: a {metric} margin gate needs at least "
            f"{F1_MARGIN_MIN_INFORMATIVE} informative units (pairs or clusters whose two arms "
            f"differ), this one has {units}: near the metric's floor its interval passes such a "
            "gate falsely too often (docs/statistics.md)")  # fmt: skip


def _empty_interval(method: str) -> dict[str, Any]:
    """The entry of a metric with no pairs: every number null."""
    return {"estimate": None, "lower": None, "upper": None, "method": method,
            "discordant": {"candidate_only": 0, "reference_only": 0}, "degenerate": False,
            "design_effect": None, "p_value": None}  # fmt: skip


def paired_interval_block(
    ref_num: np.ndarray,
    ref_den: np.ndarray,
    cand_num: np.ndarray,
    cand_den: np.ndarray,
    *,
    metric_names: Sequence[str],
    index: np.ndarray,
    confidence_level: float,
    interval: str,
    pair_sums: np.ndarray | None,
    resample: Resample,
    percentile: Percentile,
    null: float = 0.0,
) -> dict[str, Any]:
    """The interval block of candidate minus reference for every metric.

    ``index`` is ``clusters.cluster_index`` of the pairs; ``pair_sums`` the ``(R, 4 * metrics)``
    column sums of the stacked pair rows over the seed's resamples (required when
    :func:`pair_sums_needed`, used when given); ``resample(rows)`` returns such sums for other
    unit rows (clusters), drawn the same way; ``percentile`` is the seed's percentile rule.
    ``p_value`` is each method's two-sided test of ``difference == null`` (a gate's margin;
    0 by default). Returns ``{confidence_level, interval, pairs, clusters, clustered,
    largest_cluster (the pairs of the largest cluster), size_weighted_cluster (clustered
    only: :func:`size_weighted_cluster`), null, intervals: {metric: {estimate,
    lower, upper, method, discordant, degenerate, design_effect, p_value, ...}}}`` (a rate
    entry adds ``pairs``, and ``df`` over clusters; a jackknife-t entry ``standard_error`` and
    ``df``).
    """
    check_interval(interval)
    matrices = [np.asarray(m, dtype=np.float64) for m in (ref_num, ref_den, cand_num, cand_den)]
    pairs, metrics = matrices[0].shape
    clustered = is_clustered(index)
    block: dict[str, Any] = {
        "confidence_level": float(confidence_level),
        "interval": interval,
        "pairs": pairs,
        "clusters": cluster_count(index),
        "clustered": clustered,
        "largest_cluster": int(np.bincount(index).max()) if index.size else 0,
        "null": float(null),
    }
    if clustered:
        block["size_weighted_cluster"] = size_weighted_cluster(index)
    if pair_sums_needed(interval, index) and pair_sums is None:
        raise InvariantError("SOM-STATS-SHAPE", "pair resample sums are missing",
                             "pass the seed's resampled sums of the stacked pair rows")  # fmt: skip
    if interval == "bootstrap":
        block["intervals"] = _bootstrap_intervals(
            matrices, metric_names, index, confidence_level, pair_sums, resample, percentile, null
        )
        return block
    entries: dict[str, Any] = {}
    for column, name in enumerate(metric_names):
        rows = _unit_rows(matrices, column)
        if is_ratio(name):
            if not pairs:
                method = JACKKNIFE_CLUSTERS if clustered else JACKKNIFE_PAIRS
                entries[name] = _empty_interval(method)
                continue
            replicates = None
            if pair_sums is not None and not clustered:
                replicates = ratio_intervals.ratio_difference(
                    pair_sums[:, _metric_columns(metrics, column)]
                )
            entries[name] = ratio_interval(
                rows, index, confidence_level, replicates, resample, percentile, null
            )
        else:
            _check_rate(name, rows)
            counted = counted_rows(rows)
            metric_index = index
            if not counted.all():
                rows, metric_index = rows[counted], renumbered(index[counted])
            method = RATE_METHODS[AUTO_RATE_METHOD] + (
                CLUSTERED_SUFFIX if is_clustered(metric_index) else ""
            )
            entries[name] = (
                rate_interval(rows, metric_index, confidence_level, null=null)
                if rows.shape[0]
                else _empty_interval(method)
            )
    block["intervals"] = entries
    return block


def _bootstrap_intervals(
    matrices: list[np.ndarray],
    metric_names: Sequence[str],
    index: np.ndarray,
    confidence_level: float,
    pair_sums: np.ndarray | None,
    resample: Resample,
    percentile: Percentile,
    null: float = 0.0,
) -> dict[str, Any]:
    """``interval = "bootstrap"``: the seed's percentile interval for every metric, over pairs
    (the very bounds of the ``ci95`` block) or over whole clusters."""
    pairs, metrics = matrices[0].shape
    clustered = is_clustered(index)
    method = PERCENTILE_CLUSTERS if clustered else PERCENTILE_PAIRS
    if not pairs:
        return {name: _empty_interval(method) for name in metric_names}
    stacked = np.concatenate(matrices, axis=1)
    units = cluster_sums(stacked, index) if clustered else stacked
    sums = resample(units) if clustered else pair_sums
    assert sums is not None
    differences = np.stack(
        [ratio_intervals.ratio_difference(sums[:, _metric_columns(metrics, j)])
         for j in range(metrics)], axis=1)  # fmt: skip
    lower, upper = percentile(differences, confidence_level)
    entries: dict[str, Any] = {}
    for column, name in enumerate(metric_names):
        rows = _unit_rows(matrices, column)
        unit_rows = units[:, _metric_columns(metrics, column)]
        residuals = ratio_intervals.linearized_residuals(rows)
        estimate = float(ratio_intervals.ratio_difference(unit_rows.sum(axis=0)))
        entries[name] = {
            "estimate": estimate,
            "lower": float(lower[column]),
            "upper": float(upper[column]),
            "method": method,
            "discordant": discordant_counts(rows),
            "degenerate": ratio_intervals.is_degenerate(differences[:, column], estimate),
            "design_effect": float(design_effect(residuals, index)) if clustered else 1.0,
            "p_value": ratio_intervals.percentile_p_value(differences[:, column], null),
        }
        if not is_ratio(name):
            entries[name]["pairs"] = int(np.count_nonzero(counted_rows(rows)))
    return entries



MARGIN_RATE_METHOD = "tango"
"""The rate interval a gate with a non-zero margin reads: Tango's score interval. Its exact
type I error at the margin was at most 0.0268 (one-sided nominal 0.025) on the margin grid of
benchmarks/bench_coverage_small.py (n 20-300, margins 0.02-0.2), where the Bonett-Price bound
reached 0.069 (its pseudo-pairs pull the estimate towards 0, the passing side of a negative
margin); the supremum over the nuisance discordance for n 10-2000 and margins 0.01-0.2 is
``--part scan`` of the same benchmark (docs/statistics.md states it). Over clusters, at the
effective informative clusters' degrees of freedom: benchmarks/bench_clustered_margins.py."""

EQUIVALENCE_RATE_METHOD = "tango_cc"
"""The rate interval an equivalence gate (a lower and an upper limit) reads: Tango's score
interval with a continuity correction of :data:`TANGO_CONTINUITY`. Uncorrected, its type I
error at 90% reached 0.069 (nominal 0.05) at 20 pairs and 0.060 at 300 with the discordance at
the margin one-sided; corrected, at most 0.046 on the exact margin grid of
benchmarks/bench_coverage_small.py (its ``--part scan`` gives the supremum over the nuisance for
n up to 2000: docs/statistics.md)."""
TANGO_CONTINUITY = 0.5
"""Half a unit of ``b - c`` (on the design-effect-scaled counts over clusters)."""

_RATE_METHOD_OF = {name: key for key, name in RATE_METHODS.items()}


def entry_at(
    entry: Any, confidence_level: float, null: float, method: str | None = None
) -> dict[str, Any] | None:
    """An interval entry recomputed at another ``confidence_level`` and ``null`` from what it
    records, without the records: a rate entry (``method``: one of :data:`RATE_METHODS` but
    ``newcombe``, which needs the whole table; default the entry's own) from its discordant
    counts, counted ``pairs`` and design effect (the counts divided by it, as
    :func:`rate_interval` does); a jackknife-t entry from its ``standard_error`` and ``df``.

    None when the entry does not record what it takes (a bootstrap or ``ci95`` entry, a report
    written before entries recorded their pairs, no pairs, a degenerate entry): a gate that
    needs it then fails as not evaluable.
    """
    if not isinstance(entry, dict) or entry.get("estimate") is None or entry.get("degenerate"):
        return None
    estimate, name = float(entry["estimate"]), str(entry.get("method", ""))
    if name in (JACKKNIFE_PAIRS, JACKKNIFE_CLUSTERS, *PLAIN_JACKKNIFE):
        se, df = entry.get("standard_error"), entry.get("df")
        if not isinstance(se, (int, float)) or not isinstance(df, (int, float)) or se <= 0:
            return None
        centre = float(entry.get("centre", estimate))
        t = t_quantile(confidence_level, float(df))
        return {
            **entry,
            "lower": max(-1.0, min(estimate, centre - t * se)),
            "upper": min(1.0, max(estimate, centre + t * se)),
            "p_value": two_sided_t_p((centre - null) / se, float(df)),
        }
    base = name.removesuffix(CLUSTERED_SUFFIX).removesuffix(LEGACY_CLUSTERED_SUFFIX)
    key = method or _RATE_METHOD_OF.get(base)
    pairs, deff = entry.get("pairs"), entry.get("design_effect")
    counts = entry.get("discordant")
    if key not in ("tango", "tango_cc", "bonett_price") or not isinstance(counts, dict):
        return None
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs <= 0:
        return None
    deff = max(1.0, float(deff)) if isinstance(deff, (int, float)) else 1.0
    df = entry.get("df") if isinstance(entry.get("df"), (int, float)) else None
    suffix = ""
    if name.endswith(LEGACY_CLUSTERED_SUFFIX):
        suffix = LEGACY_CLUSTERED_SUFFIX
    elif df is not None or "cluster" in name:
        suffix = CLUSTERED_SUFFIX
    if df is not None and df <= 0.0:
        return {**entry, "lower": -1.0, "upper": 1.0, "p_value": 1.0,
                "method": RATE_METHODS[key] + suffix}  # fmt: skip
    b, c = counts["candidate_only"], counts["reference_only"]
    cells = np.array([0.0, b, c, pairs - b - c]) / deff
    lower, upper, p_value = _rate_bounds(key, cells, confidence_level, null, df)
    return {
        **entry,
        "lower": min(lower, estimate),
        "upper": max(upper, estimate),
        "method": RATE_METHODS[key] + suffix,
        "design_effect": deff,
        "p_value": p_value,
    }


def is_margin(limits: Sequence[float]) -> bool:
    """Whether interval thresholds at ``limits`` make a margin gate (any limit non-zero:
    non-inferiority, a bounded loss, equivalence) rather than a test against no difference."""
    return any(float(limit) != 0.0 for limit in limits)
