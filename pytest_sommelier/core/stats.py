"""Paired statistics over scoring records: the paired bootstrap and McNemar's exact test.

Pure functions: plain records or integer arrays in, JSON-safe dicts out (no I/O, no pytest).

Invariants kept:

- A bootstrap is a function of ``(seed, number of pairs, resamples)`` and the component arrays
  only: the same inputs give bit-identical intervals.
- Each resample sums the additive per-example numerator/denominator components of *both* sides
  over the same resampled example identities, so ``argument_f1`` stays pooled micro-F1 inside
  every resample (it is never an average of per-example F1 values).
- Record-level entry points refuse (``InvariantError``) two sides that are not the same
  examples in the same order, or that repeat an example id.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_sommelier.core.metrics import FULL_CALL_EXACT_MATCH
from pytest_sommelier.core.types import BOOTSTRAP_METHOD as BOOTSTRAP_METHOD
from pytest_sommelier.core.types import IntervalBlock, McNemar, ScoringRecord
from pytest_sommelier.errors import InputError, InvariantError

MCNEMAR_METHOD = "exact_binomial_two_sided"
MCNEMAR_METRIC = FULL_CALL_EXACT_MATCH

# Number of cells (resample rows x pairs) drawn and counted at once: small enough for the count
# block to stay in cache (about 2x faster than one big block at 1,000 pairs) and for memory to
# stay bounded; a constant, so the draw stays a function of (seed, n, R) only.
_CELLS_PER_CHUNK = 1 << 16


def derive_seed(suite_seed: int, name: str) -> int:
    """Return a stable seed in ``[0, 2**63)`` for one named bootstrap.

    The seed is the first 8 bytes (big-endian) of SHA-256 over ``"<suite_seed>:<name>"``,
    shifted right by one bit; it depends on nothing else (no process hash seed, no platform).
    """
    digest = hashlib.sha256(f"{suite_seed}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _metric_names() -> tuple[str, ...]:
    """The five metric names in their canonical order (single source: ``metrics.METRIC_NAMES``)."""
    from pytest_sommelier.core.metrics import METRIC_NAMES

    return tuple(METRIC_NAMES)


def _check_parameters(seed: int, resamples: int, confidence_level: float) -> None:
    """Refuse parameters the percentile bootstrap cannot honour, naming the setting."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"the bootstrap seed must be a non-negative integer, got {seed!r}",
            "set [statistics] seed to an integer >= 0",
            where="statistics.seed",
        )
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 1:
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"resamples must be a positive integer, got {resamples!r}",
            "set [statistics] resamples to an integer >= 1 (2000 is the default)",
            where="statistics.resamples",
        )
    if not (isinstance(confidence_level, (int, float)) and 0.0 < confidence_level < 1.0):
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"confidence_level must lie strictly between 0 and 1, got {confidence_level!r}",
            "set [statistics] confidence_level to e.g. 0.95",
            where="statistics.confidence_level",
        )


def _as_component_matrix(
    name: str, array: npt.ArrayLike, shape: tuple[int, int] | None
) -> npt.NDArray[np.float64]:
    """Return ``array`` as a float64 matrix of non-negative integers, checking its shape.

    Float64 holds every integer below 2**53 exactly, so sums of counts x components stay exact.
    """
    matrix = np.asarray(array)
    if matrix.ndim != 2 or (shape is not None and matrix.shape != shape):
        expected = "2-D" if shape is None else str(shape)
        raise InvariantError(
            "SOM-STATS-SHAPE",
            f"component array {name} has shape {matrix.shape}, expected {expected}",
            "pass metrics.component_arrays output for the same records on both sides",
        )
    return matrix.astype(np.float64, copy=False)


def _index_chunks(
    rng: np.random.Generator, pairs: int, resamples: int
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield consecutive row blocks of the resample index matrix (deterministic chunking)."""
    rows_per_chunk = max(1, _CELLS_PER_CHUNK // max(pairs, 1))
    done = 0
    while done < resamples:
        rows = min(rows_per_chunk, resamples - done)
        yield rng.integers(0, pairs, size=(rows, pairs))
        done += rows


def resample_counts(indices: npt.NDArray[np.int64], pairs: int) -> npt.NDArray[np.int64]:
    """Turn an index matrix ``(R, n)`` into a count matrix ``(R, n)``: how often each pair is drawn.

    Invariant: every row of the result sums to ``n`` and ``counts @ X == X[indices].sum(axis=1)``.
    """
    rows = indices.shape[0]
    offsets = (np.arange(rows, dtype=np.int64) * pairs)[:, None]
    flat = (indices + offsets).ravel()
    return np.bincount(flat, minlength=rows * pairs).reshape(rows, pairs)


def _ratio(
    numerator: npt.NDArray[np.float64], denominator: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Elementwise ``numerator / denominator``, with 0 where the denominator is 0."""
    out = np.zeros_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _differences_from_sums(
    sums: npt.NDArray[np.float64], metrics: int
) -> npt.NDArray[np.float64]:
    """Candidate-minus-reference values from ``(R, 4 * metrics)`` resampled sums laid out as
    [ref_num | ref_den | cand_num | cand_den]; a side whose summed denominator is 0 is 0."""
    ref_values = _ratio(sums[:, :metrics], sums[:, metrics : 2 * metrics])
    cand_values = _ratio(sums[:, 2 * metrics : 3 * metrics], sums[:, 3 * metrics :])
    return cand_values - ref_values


def percentile_interval(
    differences: npt.NDArray[np.float64], confidence_level: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Return per-column (lower, upper) percentile bounds at ``confidence_level``.

    Quantiles ``(1 - cl) / 2`` and ``1 - (1 - cl) / 2`` with numpy's default linear
    interpolation; the lower bound never exceeds the upper.
    """
    tail = (1.0 - confidence_level) / 2.0
    lower, upper = np.quantile(differences, [tail, 1.0 - tail], axis=0)
    return lower, upper


def paired_bootstrap_arrays(
    ref_num: npt.ArrayLike,
    ref_den: npt.ArrayLike,
    cand_num: npt.ArrayLike,
    cand_den: npt.ArrayLike,
    *,
    seed: int,
    resamples: int = 2000,
    confidence_level: float = 0.95,
    metric_names: Sequence[str] | None = None,
) -> IntervalBlock:
    """Paired percentile bootstrap over per-example component arrays (rows are pairs).

    Row ``i`` of the four ``(n, metrics)`` integer arrays is pair ``i`` (the reference and the
    candidate side of the same example identity). Returns the interval block
    ``{method, seed, confidence_level, resamples, pairs, intervals: {metric: {lower, upper}}}``
    of candidate minus reference. With zero pairs every bound is ``None``.
    """
    _check_parameters(seed, resamples, confidence_level)
    names = tuple(metric_names) if metric_names is not None else _metric_names()
    rn = _as_component_matrix("ref_num", ref_num, None)
    shape = rn.shape
    rd = _as_component_matrix("ref_den", ref_den, shape)
    cn = _as_component_matrix("cand_num", cand_num, shape)
    cd = _as_component_matrix("cand_den", cand_den, shape)
    if shape[1] != len(names):
        raise InvariantError(
            "SOM-STATS-SHAPE",
            f"component arrays have {shape[1]} metric columns but {len(names)} metric names",
            "pass one column per metric, in METRIC_NAMES order",
        )
    pairs = shape[0]
    block: IntervalBlock = {
        "method": BOOTSTRAP_METHOD,
        "seed": seed,
        "confidence_level": float(confidence_level),
        "resamples": resamples,
        "pairs": pairs,
        "intervals": {name: {"lower": None, "upper": None} for name in names},
    }
    if pairs == 0:
        return block
    stacked = np.concatenate([rn, rd, cn, cd], axis=1)
    sums = resampled_sums(stacked, seed=seed, resamples=resamples)
    differences = _differences_from_sums(sums, len(names))
    lower, upper = percentile_interval(differences, confidence_level)
    block["intervals"] = {
        name: {"lower": float(lower[j]), "upper": float(upper[j])} for j, name in enumerate(names)
    }
    return block


def check_paired_records(
    reference_records: Sequence[ScoringRecord],
    candidate_records: Sequence[ScoringRecord],
    *,
    where: str | None = None,
) -> None:
    """Refuse two record lists that are not the same unique example ids in the same order.

    Raises ``InvariantError`` naming the first position where the sides disagree (or the
    first repeated id); ``where`` (e.g. the comparison and slice) goes into the error.
    """
    if len(reference_records) != len(candidate_records):
        raise InvariantError(
            "SOM-STATS-PAIRING",
            f"reference has {len(reference_records)} records, candidate has "
            f"{len(candidate_records)}; a paired comparison needs the same examples",
            "score both arms on the same examples (a -k subset must select both arms)",
            where=where,
        )
    seen: set[str | None] = set()
    for position, (ref, cand) in enumerate(zip(reference_records, candidate_records, strict=True)):
        ref_id, cand_id = ref.get("example_id"), cand.get("example_id")
        if ref_id != cand_id:
            raise InvariantError(
                "SOM-STATS-PAIRING",
                f"record {position}: reference example_id {ref_id!r} != candidate "
                f"example_id {cand_id!r}",
                "pass both arms' records in the same (split) order",
                where=where,
            )
        if ref_id in seen:
            raise InvariantError(
                "SOM-STATS-DUPLICATE-ID",
                f"record {position}: example_id {ref_id!r} appears more than once",
                "each example is scored once per arm; remove the duplicated generation",
                where=where,
            )
        seen.add(ref_id)


def paired_bootstrap(
    reference_records: Sequence[ScoringRecord],
    candidate_records: Sequence[ScoringRecord],
    *,
    seed: int,
    resamples: int = 2000,
    confidence_level: float = 0.95,
) -> IntervalBlock:
    """Paired percentile bootstrap of candidate minus reference over scoring records.

    The records must be the same unique example ids in the same order (else
    ``InvariantError``). Returns ``{method, seed, confidence_level, resamples, pairs,
    intervals: {metric: {lower, upper}}}`` (see :func:`paired_bootstrap_arrays`).
    """
    from pytest_sommelier.core.metrics import component_arrays

    check_paired_records(reference_records, candidate_records)
    ref_num, ref_den = component_arrays(list(reference_records))
    cand_num, cand_den = component_arrays(list(candidate_records))
    return paired_bootstrap_arrays(
        ref_num,
        ref_den,
        cand_num,
        cand_den,
        seed=seed,
        resamples=resamples,
        confidence_level=confidence_level,
    )


def mcnemar_p_value(candidate_only: int, reference_only: int) -> float:
    """Exact two-sided binomial p-value of McNemar's test on the discordant counts.

    ``p = min(1, 2 * P[X <= min(b, c)])`` for ``X ~ Binomial(b + c, 1/2)``; 1.0 when there
    are no discordant pairs. Computed in exact integer arithmetic, rounded once.
    """
    discordant = candidate_only + reference_only
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, k) for k in range(min(candidate_only, reference_only) + 1))
    return min(1.0, (2 * tail) / (1 << discordant))


def mcnemar_counts(
    reference_correct: npt.ArrayLike, candidate_correct: npt.ArrayLike
) -> tuple[int, int]:
    """Return ``(candidate_only, reference_only)`` discordant counts from two 0/1 vectors."""
    ref = np.asarray(reference_correct) > 0
    cand = np.asarray(candidate_correct) > 0
    return int(np.sum(cand & ~ref)), int(np.sum(ref & ~cand))


def mcnemar_exact(
    reference_records: Sequence[ScoringRecord], candidate_records: Sequence[ScoringRecord]
) -> McNemar:
    """McNemar's exact test on ``full_call_exact_match`` between two paired record lists.

    Returns ``{metric, candidate_only, reference_only, p_value, method}``; the records must be
    the same unique example ids in the same order (else ``InvariantError``).
    """
    from pytest_sommelier.core.metrics import component_arrays

    check_paired_records(reference_records, candidate_records)
    column = _metric_names().index(MCNEMAR_METRIC)
    ref_num, _ = component_arrays(list(reference_records))
    cand_num, _ = component_arrays(list(candidate_records))
    candidate_only, reference_only = mcnemar_counts(ref_num[:, column], cand_num[:, column])
    return {
        "metric": MCNEMAR_METRIC,
        "candidate_only": candidate_only,
        "reference_only": reference_only,
        "p_value": mcnemar_p_value(candidate_only, reference_only),
        "method": MCNEMAR_METHOD,
    }


# --- Paired intervals per metric (``interval = "auto"`` or the seed's bootstrap) ------------
# The methods live in core/intervals.py, core/proportions.py, core/ratio_bootstrap.py and
# core/clusters.py; these entry points validate, draw the seed's resamples and delegate.


def resampled_sums(rows: Any, *, seed: int, resamples: int) -> np.ndarray:
    """Column sums of ``rows`` over ``resamples`` bootstrap resamples of its rows, drawn exactly
    as :func:`paired_bootstrap_arrays` draws pairs: a ``(resamples, columns)`` float64 matrix.

    Invariant: for the stacked ``[ref_num | ref_den | cand_num | cand_den]`` pair rows these
    are the very sums behind the seed's percentile interval with the same seed, so an interval
    built on them reuses the ``ci95`` block's draws; for cluster rows they resample clusters.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    units = matrix.shape[0]
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            resample_counts(chunk, units).astype(np.float64) @ matrix
            for chunk in _index_chunks(rng, units, resamples)
        ],
        axis=0,
    )


def paired_intervals_arrays(
    ref_num: Any,
    ref_den: Any,
    cand_num: Any,
    cand_den: Any,
    *,
    seed: int,
    resamples: int = 2000,
    confidence_level: float = 0.95,
    clusters: Sequence[Any] | None = None,
    interval: str = "auto",
    include_bootstrap: bool = False,
    metric_names: Sequence[str] | None = None,
    null: float = 0.0,
) -> dict[str, Any]:
    """Per-metric paired intervals of candidate minus reference over component arrays.

    Rows are pairs as in :func:`paired_bootstrap_arrays`; ``clusters`` is None (each pair its
    own cluster) or one cluster id per row; each ``p_value`` tests ``difference == null``.
    Returns ``intervals.paired_interval_block``'s block
    plus ``seed`` and ``resamples``; with ``include_bootstrap`` also ``bootstrap``: exactly the
    :func:`paired_bootstrap_arrays` block (the ``ci95`` block), from one draw shared with
    ``interval="bootstrap"``; ``auto`` itself draws no resamples (closed forms and the jackknife),
    so ``auto`` plus the ``ci95`` block costs about one bootstrap.
    """
    from functools import partial

    from pytest_sommelier.core.clusters import cluster_index
    from pytest_sommelier.core.intervals import (
        check_interval,
        pair_sums_needed,
        paired_interval_block,
    )

    _check_parameters(seed, resamples, confidence_level)
    check_interval(interval)
    names = tuple(metric_names) if metric_names is not None else _metric_names()
    rn = _as_component_matrix("ref_num", ref_num, None)
    matrices = [rn] + [
        _as_component_matrix(label, array, rn.shape)
        for label, array in (("ref_den", ref_den), ("cand_num", cand_num), ("cand_den", cand_den))
    ]
    if rn.shape[1] != len(names):
        raise InvariantError(
            "SOM-STATS-SHAPE",
            f"component arrays have {rn.shape[1]} metric columns but {len(names)} metric names",
            "pass one column per metric, in METRIC_NAMES order",
        )
    pairs = rn.shape[0]
    index = cluster_index(clusters, pairs)
    draw = partial(resampled_sums, seed=seed, resamples=resamples)
    pair_sums = None
    if pairs and (include_bootstrap or pair_sums_needed(interval, index)):
        pair_sums = draw(np.concatenate(matrices, axis=1))
    block = paired_interval_block(
        *matrices, metric_names=names, index=index, confidence_level=confidence_level,
        interval=interval, pair_sums=pair_sums, resample=draw, percentile=percentile_interval,
        null=null,
    )  # fmt: skip
    block["seed"] = seed
    block["resamples"] = resamples
    if include_bootstrap:
        bootstrap: dict[str, Any] = {"method": BOOTSTRAP_METHOD, "seed": seed,
                                     "confidence_level": float(confidence_level),
                                     "resamples": resamples, "pairs": pairs}  # fmt: skip
        if pair_sums is None:
            bootstrap["intervals"] = {name: {"lower": None, "upper": None} for name in names}
        else:
            lower, upper = percentile_interval(
                _differences_from_sums(pair_sums, len(names)), confidence_level
            )
            bootstrap["intervals"] = {
                name: {"lower": float(lower[j]), "upper": float(upper[j])}
                for j, name in enumerate(names)
            }
        block["bootstrap"] = bootstrap
    return block


def paired_intervals(
    reference_records: Sequence[ScoringRecord],
    candidate_records: Sequence[ScoringRecord],
    *,
    seed: int,
    resamples: int = 2000,
    confidence_level: float = 0.95,
    clusters: Sequence[Any] | None = None,
    interval: str = "auto",
    include_bootstrap: bool = False,
    null: float = 0.0,
) -> dict[str, Any]:
    """Per-metric paired intervals of candidate minus reference over scoring records.

    The records must be the same unique example ids in the same order (else
    ``InvariantError``). ``interval="auto"``: the Bonett-Price adjusted Wald interval for the
    rate metrics and the jackknife-t interval for ``argument_f1``; ``"bootstrap"``: the seed's
    percentile bootstrap for every metric. With ``clusters`` (one id per record) both resample
    or variance-adjust whole clusters. ``p_value`` is each method's two-sided test of
    ``difference == null``. Returns ``{confidence_level, interval, pairs, clusters, clustered,
    null, seed, resamples, intervals: {metric: {estimate, lower, upper, method, discordant:
    {candidate_only, reference_only}, degenerate, design_effect, p_value}}}`` (see
    :func:`paired_intervals_arrays`, docs/statistics.md).
    """
    from pytest_sommelier.core.metrics import component_arrays

    check_paired_records(reference_records, candidate_records)
    ref_num, ref_den = component_arrays(list(reference_records))
    cand_num, cand_den = component_arrays(list(candidate_records))
    return paired_intervals_arrays(
        ref_num, ref_den, cand_num, cand_den, seed=seed, resamples=resamples,
        confidence_level=confidence_level, clusters=clusters, interval=interval,
        include_bootstrap=include_bootstrap, null=null,
    )  # fmt: skip
