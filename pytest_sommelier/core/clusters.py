"""Clusters of paired examples: cluster ids to indices, cluster sums and the design effect.

Pure functions (numpy and the standard library only). A *cluster* is a set of examples whose
outcomes are not independent evidence (a root example and its translations, BFCL rows sharing
one function document, the turns of one conversation). Intervals that pool clustered examples
either resample whole clusters or inflate the variance of an unclustered interval by the
*design effect*: the cluster-robust (sandwich) variance of the statistic divided by its
independent-examples variance, both computed from the same per-example linearised residuals
(Rao & Scott 1992; for paired proportions this is the variance of Obuchowski 1998).

Invariants kept:

- ``cluster_index`` numbers clusters ``0..K-1`` in order of first appearance, so the same ids
  in the same order always give the same index (and the same bootstrap draws).
- Without clusters (``None``) every example is its own cluster and the design effect is
  exactly 1.0.
- A design effect is never below 1: clustering is never allowed to *narrow* an interval; when
  the data carry no information on the within-cluster correlation it is the worst case for
  the cluster sizes, Kish's ``sum(m^2) / n`` (:func:`kish_design_effect`), in
  :func:`design_effect` and :func:`cr2_design_effect_from_sums`
  (:func:`design_effect_from_moments`, which sees only sums, uses the mean size ``n / K``).
- The degrees of freedom of a clustered interval never exceed the *effective number* of the
  informative clusters minus one (:func:`informative_clusters`, :func:`effective_clusters`,
  :func:`informative_df`): a cluster without a discordant pair adds nothing to the spread the
  variance is estimated from, and among those that hold one, large clusters weigh more. The
  effective number is at most the informative clusters' count and equals it for equal sizes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from pytest_sommelier.errors import InputError, InvariantError


def cluster_index(clusters: Sequence[Hashable | None] | None, pairs: int) -> np.ndarray:
    """Return each pair's cluster number (int64, shape ``(pairs,)``), numbered by first use.

    ``clusters`` is None (every pair its own cluster) or one id per pair, aligned with the
    records; an id of None makes that pair a cluster of its own. A sequence of another length
    raises ``InvariantError`` (``SOM-STATS-SHAPE``).
    """
    if clusters is None:
        return np.arange(pairs, dtype=np.int64)
    ids = list(clusters)
    if len(ids) != pairs:
        raise InvariantError(
            "SOM-STATS-SHAPE",
            f"clusters has {len(ids)} ids for {pairs} paired records",
            "pass one cluster id per record, aligned with the records (None: its own cluster)",
        )
    numbers: dict[Hashable, int] = {}
    index = np.empty(pairs, dtype=np.int64)
    for position, key in enumerate(ids):
        if key is None:
            key = ("<own cluster>", position)
        index[position] = numbers.setdefault(key, len(numbers))
    return index


def cluster_count(index: np.ndarray) -> int:
    """The number of clusters ``K`` of a ``cluster_index`` result (0 for no pairs)."""
    return int(index.max()) + 1 if index.size else 0


def cluster_sums(rows: np.ndarray, index: np.ndarray, count: int | None = None) -> np.ndarray:
    """Sum the rows of ``rows`` (``(n, c)``) within clusters: a ``(K, c)`` float64 matrix.

    Invariant: ``cluster_sums(rows, index).sum(axis=0) == rows.sum(axis=0)`` (exactly, for
    integer-valued rows below 2**53); row ``k`` is cluster ``k``.
    """
    k = cluster_count(index) if count is None else count
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.ndim == 1:
        return np.bincount(index, weights=matrix, minlength=k)
    out = np.zeros((k, matrix.shape[1]))
    for j in range(matrix.shape[1]):
        out[:, j] = np.bincount(index, weights=matrix[:, j], minlength=k)
    return out


def design_effect_from_moments(
    example_square_sum: float, examples: float, cluster_square_sum: float, clusters: float
) -> float:
    """Design effect from sums of squared residuals: per example and per cluster (summed).

    ``deff = [K/(K-1) * sum_k R_k^2] / [n/(n-1) * sum_i r_i^2]`` where ``r_i`` are the
    per-example residuals and ``R_k`` their cluster sums; clamped below at 1.0. When the data
    cannot show how the clusters correlate, the worst case for clusters of mean size is used,
    ``n / K`` (all members of a cluster alike): when every residual is 0 (for a rate: no
    discordant pair) and when there is a single cluster (then ``n``: one observation). It is
    1.0 with fewer than two examples, and always 1.0 when every cluster is a single example.
    """
    if examples < 2 or clusters >= examples:
        return 1.0
    if example_square_sum <= 0.0 or clusters < 2:
        return examples / max(clusters, 1.0)
    clustered = clusters / (clusters - 1.0) * cluster_square_sum
    independent = examples / (examples - 1.0) * example_square_sum
    return max(1.0, clustered / independent)


def design_effect(residuals: np.ndarray, index: np.ndarray) -> float:
    """Design effect of a statistic whose per-example linearised residuals are ``residuals``.

    ``index`` is a ``cluster_index`` result. With every example its own cluster the result is
    exactly 1.0. See :func:`design_effect_from_moments` for the formula and its clamps; where
    the data cannot show the correlation the worst case is Kish's ``sum(m^2) / n``
    (:func:`kish_design_effect`), not the mean size ``n / K``, which is not the worst case for
    unequal sizes.
    """
    values = np.asarray(residuals, dtype=np.float64)
    k = cluster_count(index)
    if k == values.size:
        return 1.0
    if values.size >= 2 and (float(values @ values) <= 0.0 or k < 2):
        return max(1.0, kish_design_effect(np.bincount(index, minlength=k)))
    grouped = np.bincount(index, weights=values, minlength=k)
    return design_effect_from_moments(
        float(values @ values), float(values.size), float(grouped @ grouped), float(k)
    )


def kish_design_effect(sizes: Any) -> float:
    """Kish's design effect when every member of a cluster is alike (intraclass correlation
    1): ``sum(m_g^2) / n`` for cluster sizes ``m_g`` (Kish 1965, *Survey Sampling*, sec. 5.4:
    ``1 + (m_w - 1) rho`` with the size-weighted mean size ``m_w = sum m^2 / n`` at ``rho =
    1``). The worst case for unequal sizes, where ``n / K`` is not: one cluster of 20 among 20
    single pairs gives 10.5 where ``n / K`` gives 1.9. 1.0 with no pairs."""
    m = np.asarray(sizes, dtype=np.float64)
    n = float(m.sum())
    return float(m @ m) / n if n > 0 else 1.0


def cr2_design_effect_from_sums(sums: Any, sizes: Any, square_sum: Any) -> Any:
    """The CR2 (bias-reduced linearisation) design effect of a mean, from its residuals'
    cluster sums ``S_g`` (last axis), the cluster sizes ``m_g`` and the residuals' sum of
    squares (Bell & McCaffrey 2002, "Bias reduction in standard errors for linear regression
    with multi-stage samples", Survey Methodology 28:169-181; Pustejovsky & Tipton 2018, JBES
    36:672-683).

    For a mean the CR2 adjustment has a closed form: the leverage of cluster ``g`` is ``h_g =
    m_g / n`` and ``(I - H_gg)^(-1/2)`` scales the cluster's residual sum by ``(1 - h_g)^(-1/2)``,
    so ``V_CR2 = sum_g S_g^2 / (1 - h_g) / n^2``; over the independent-pairs variance
    ``sum r^2 / (n (n - 1))`` that is ``deff = (n - 1) / n * sum_g S_g^2 / (1 - h_g) / sum r^2``,
    exactly 1 when every cluster is one pair. Where no residual varies (a rate with no
    discordant pair) the worst case, :func:`kish_design_effect`; with a single cluster (``h =
    1``: no between-cluster variation to measure) also that. Never below 1. Broadcasts over
    leading axes (the benchmark passes thousands of runs at once).
    """
    m = np.asarray(sizes, dtype=np.float64)
    n = float(m.sum())
    kish = kish_design_effect(m)
    grouped = np.asarray(sums, dtype=np.float64)
    squares = np.asarray(square_sum, dtype=np.float64)
    if m.size < 2:
        return np.full(np.shape(squares), kish) if np.ndim(squares) else kish
    scaled = (grouped * grouped / (1.0 - m / n)).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(squares > 1e-12, (n - 1.0) / n * scaled / squares, kish)
    out = np.maximum(1.0, deff)
    return float(out) if np.ndim(out) == 0 else out


def bell_mccaffrey_df(sizes: Any) -> float:
    """Bell & McCaffrey's (2002) Satterthwaite degrees of freedom of the CR2 variance of a
    mean under working independence: ``(sum lambda)^2 / sum lambda^2`` over the eigenvalues
    of ``G'G``, ``G_g = (u_g - h_g 1) / sqrt(1 - h_g)`` (``u_g`` cluster g's indicator), so
    ``(G'G)_gh = (delta_gh m_g - m_g m_h / n) / sqrt((1 - h_g)(1 - h_h))``; the traces give it
    without an eigen-decomposition. It depends on the cluster sizes only: ``K - 1`` for equal
    sizes, ``n - 1`` for single pairs, and far fewer than ``K - 1`` when one cluster dominates
    (one of 20 among 20 single pairs: 3.6 where ``K - 1`` is 20). 0.0 with fewer than two
    clusters (no interval can be formed)."""
    m = np.asarray(sizes, dtype=np.float64)
    if m.size < 2:
        return 0.0
    n = float(m.sum())
    scale = 1.0 / np.sqrt(1.0 - m / n)
    gram = (np.diag(m) - np.outer(m, m) / n) * np.outer(scale, scale)
    trace = float(np.trace(gram))
    square = float(np.sum(gram * gram))
    return trace * trace / square if square > 0 else 0.0


def informative_clusters(discordant: Any, index: np.ndarray) -> int:
    """The clusters that hold at least one discordant pair (``discordant``: one bool per pair,
    True where the two arms' outcomes differ; ``index``: a :func:`cluster_index` result).

    Only these clusters carry information on the spread of a paired difference: in a cluster
    where both arms agree on every pair the difference is 0 whatever the truth, so its
    contribution to a cluster-robust variance is a fixed function of the mean, not an
    observation of the spread. This is the few-treated-clusters problem of cluster-robust
    inference (Carter, Schnepel & Steigerwald 2017, "Asymptotic behavior of a t-test robust to
    cluster heterogeneity", Rev Econ Stat 99:698-709, whose effective number of clusters falls
    towards the number of clusters that vary; MacKinnon & Webb 2017, "Wild bootstrap inference
    for wildly different cluster sizes", J Appl Econometrics 32:233-254, on t tests that
    over-reject when few clusters are "treated"). 0 without a discordant pair."""
    flags = np.asarray(discordant, dtype=bool)
    if not flags.any():
        return 0
    return int(np.unique(np.asarray(index)[flags]).size)


def effective_clusters(sizes: Any) -> float:
    """The effective number of clusters of a mean over clusters of sizes ``m_g`` at a
    within-cluster correlation of 1: ``G* = (sum m_g^2)^2 / sum m_g^4`` (0.0 for none).

    Carter, Schnepel & Steigerwald (2017), "Asymptotic behavior of a t-test robust to cluster
    heterogeneity", Rev Econ Stat 99:698-709, show that a cluster-robust t behaves like a t over
    ``G* = G / (1 + Gamma)`` clusters, ``Gamma`` the squared coefficient of variation of the
    clusters' variance contributions ``gamma_g``. For a mean under an exchangeable correlation
    ``rho``, ``gamma_g`` is proportional to ``m_g (1 + (m_g - 1) rho)``, so ``G* = (sum
    gamma)^2 / sum gamma^2``; at ``rho = 1`` (Kish's worst case, the one the design effect
    falls back on) ``gamma_g = m_g^2``, the smallest ``G*`` over ``rho`` in [0, 1]. It equals
    ``G`` for equal sizes and is never more than ``G`` (Cauchy-Schwarz). Passed the sizes of
    the informative clusters (:func:`informative_clusters`), it bounds a clustered interval's
    degrees of freedom (:func:`informative_df`)."""
    m = np.asarray(sizes, dtype=np.float64)
    squares = m * m
    fourth = float(squares @ squares)
    return float(squares.sum()) ** 2 / fourth if fourth > 0 else 0.0


def informative_sizes(discordant: Any, index: np.ndarray) -> np.ndarray:
    """The sizes (pairs) of the clusters that hold a discordant pair (``discordant``: one bool
    per pair; ``index``: a :func:`cluster_index` result), in cluster order; empty without a
    discordant pair. Their count is :func:`informative_clusters`."""
    groups = np.asarray(index, dtype=np.int64)
    k = cluster_count(groups)
    sizes = np.bincount(groups, minlength=k)
    held = np.bincount(groups, weights=np.asarray(discordant, dtype=np.float64), minlength=k)
    return sizes[held > 0].astype(np.float64)


def informative_df(size_df: float, informative: float) -> float:
    """A clustered interval's degrees of freedom: Bell & McCaffrey's ``size_df`` (from the
    cluster sizes, :func:`bell_mccaffrey_df`), never more than ``informative`` minus one:
    the effective number of the informative clusters (:func:`effective_clusters` of
    :func:`informative_sizes`; 0.4 and the first round of 0.5 passed their count,
    :func:`informative_clusters`, which the effective number equals for equal sizes). With no
    discordant pair at all the variance is not estimated (the design effect is Kish's worst
    case) and ``size_df`` stands; with one informative cluster it is 0 (no interval narrower
    than [-1, 1] can be formed)."""
    if informative <= 0:
        return float(size_df)
    return float(min(size_df, informative - 1.0))


CLUSTER_MODES: tuple[str, ...] = ("root", "example")
"""``[statistics] cluster``: ``root`` (a root and its translations form one cluster, or the
cluster a row declares with ``cluster_id``) or ``example`` (every example alone: the seed's)."""


def example_clusters(
    examples: Sequence[Any], mode: str = "root"
) -> dict[str, Hashable] | None:
    """Each example's cluster key under ``mode``, by example id (None under ``example``).

    Under ``root`` an example's key is its own ``cluster_id`` when it declares one, else its
    root's key (a translation inherits the cluster of the row it names in
    ``source_example_id``), else its own id for a root. Declared ids and root ids never
    collide (they are told apart in the key). ``examples`` are ``core.types.Example`` values
    (anything with ``example_id``, ``source_example_id`` and ``cluster_id``).
    """
    if mode not in CLUSTER_MODES:
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"cluster must be one of {', '.join(CLUSTER_MODES)}, got {mode!r}",
            'set [statistics] cluster to "root" (the default) or "example"',
            where="statistics.cluster",
        )
    if mode == "example":
        return None
    by_id = {example.example_id: example for example in examples}

    def own_key(example: Any) -> Hashable:
        declared = getattr(example, "cluster_id", None)
        return ("cluster_id", declared) if declared is not None else ("root", example.example_id)

    keys: dict[str, Hashable] = {}
    for example in examples:
        root = by_id.get(example.source_example_id) if example.source_example_id else None
        if getattr(example, "cluster_id", None) is None and root is not None:
            keys[example.example_id] = own_key(root)
        else:
            keys[example.example_id] = own_key(example)
    return keys
