"""Choosing the best of several candidates with honest evidence (``[selection]``).

The selected candidate is the one with the highest value of the metric on the selection's
slice (``overall`` by default; a configured slice reads that slice's value and pairs that
slice's examples) (ties: the first in the suite's arm order, which for a checkpoint sweep is
step order). Its comparison
with the reference is the paired interval of candidate minus reference at the Bonferroni level
over all K candidates (``core.multiplicity.bonferroni_confidence_level``: ``1 - (1 - cl) / K``),
so the interval would cover every candidate's true delta simultaneously with the suite's
confidence, whichever one was picked. The winner's curse is stated, not hidden: the selected
candidate's observed delta is the maximum of K noisy deltas on the same examples and so biased
upward; only the familywise interval (or a fresh split) is evidence. Since 0.5 the block also
states that bias for the run's K and n (``winners_curse_bias``: :func:`winners_curse`) beside
the selected delta, a debiased delta, and which number to quote. Every candidate's adjusted
interval is in the block too (pure: numpy only, no I/O).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from pytest_sommelier.core.metrics import METRIC_NAMES, component_arrays
from pytest_sommelier.core.multiplicity import bonferroni_confidence_level
from pytest_sommelier.core.ratio_intervals import linearized_residuals
from pytest_sommelier.core.report_blocks import comparison_interval_block
from pytest_sommelier.core.types import (
    EvaluationReport,
    ScoringRecord,
    SelectionConfig,
    StatisticsConfig,
)

SCHEMA = "sommelier.selection.v1"
CURSE = (
    "the selected candidate is the best of {k} on these examples, so its observed delta is "
    "biased upward (the winner's curse); its interval is Bonferroni-adjusted over all {k} "
    "candidates, and a fresh split gives an unbiased estimate"
)
SOLE = (
    "the selected candidate is the only one: nothing was chosen among several, so its delta "
    "carries no winner's curse and its interval is the plain one"
)
"""The ``winners_curse`` text of a selection among one candidate (K = 1)."""


OVERALL = "overall"
CURSE_DRAWS = 20_000
"""Monte Carlo draws of :func:`winners_curse`'s expected maximum (its error: about
``sd / sqrt(20000)``, under 1% of the bias)."""
CURSE_SEED = 38
QUOTE = (
    "quote the interval (its lower bound holds for whichever candidate was picked) or the "
    "debiased delta, not the selected delta: under no true difference the best of {k} "
    "candidates' observed delta is {bias:+.3f} on average"
)


def winners_curse(
    reference: Sequence[ScoringRecord], candidates: Sequence[Sequence[ScoringRecord]],
    metric: str, clusters: Mapping[str, Hashable] | None = None,
) -> dict[str, Any] | None:  # fmt: skip
    """The winner's-curse bias of the selected delta for this run's K and n: the expected
    maximum of the K candidates' estimated deltas when every true delta is the same, ``E[max_k
    Z_k]`` with ``Z ~ N(0, S)``, ``S`` the covariance of the K deltas (the sum over clusters, or
    pairs, of the products of each candidate's linearised residuals, so the correlation through
    the shared reference and the examples is kept; Efron 2011, "Tweedie's formula and selection
    bias", JASA 106:1602-1614, on the selection bias of the largest of many estimates; Zhong &
    Prentice 2008, Biostatistics 9:621-634, on bias-reduced estimates for the winner's curse).
    Equal true deltas is where the bias is largest, so ``selected delta - bias`` is a
    conservative (downward) debiased estimate. Monte Carlo with :data:`CURSE_DRAWS` draws from
    a fixed seed (the same records give the same figure). None for a metric outside the five
    or with fewer than two examples."""
    if metric not in METRIC_NAMES or not candidates:
        return None
    column = METRIC_NAMES.index(metric)
    ids = [record["example_id"] for record in reference]
    ref_num, ref_den = component_arrays(reference)
    columns = []
    for records in candidates:
        by_id = {record["example_id"]: record for record in records}
        if any(example not in by_id for example in ids) or len(ids) < 2:
            return None
        num, den = component_arrays([by_id[example] for example in ids])
        rows = np.stack([ref_num[:, column], ref_den[:, column], num[:, column],
                         den[:, column]], axis=1).astype(np.float64)  # fmt: skip
        columns.append(linearized_residuals(rows))
    residuals = np.stack(columns, axis=1)
    if clusters is not None:
        keys: dict[Hashable, int] = {}
        index = np.array([keys.setdefault(clusters.get(e, ("own", e)), len(keys)) for e in ids])
        residuals = np.stack([np.bincount(index, weights=residuals[:, j])
                              for j in range(residuals.shape[1])], axis=1)  # fmt: skip
    covariance = residuals.T @ residuals
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    draws = np.random.default_rng(CURSE_SEED).standard_normal((CURSE_DRAWS, len(candidates)))
    maxima = (draws @ root.T).max(axis=1)
    k = len(candidates)
    bias = float(maxima.mean())
    return {"bias": bias, "method": "expected maximum of the K deltas under equal true deltas "
            f"(normal, {CURSE_DRAWS} Monte Carlo draws)", "candidates": k,
            "quote": QUOTE.format(k=k, bias=bias)}  # fmt: skip


def flat(by_slice: Mapping[str, Sequence[ScoringRecord]]) -> list[ScoringRecord]:
    """An arm's scoring records in slice order, then split order."""
    return [record for records in by_slice.values() for record in records]


def records_of(
    by_slice: Mapping[str, Sequence[ScoringRecord]], part: str
) -> list[ScoringRecord]:
    """An arm's scoring records of one slice (``overall``: every slice, :func:`flat`)."""
    return flat(by_slice) if part == OVERALL else list(by_slice[part])


def selection_block(
    selection: SelectionConfig,
    reports: Mapping[str, EvaluationReport],
    scoring: Mapping[str, Mapping[str, Sequence[ScoringRecord]]],
    statistics: StatisticsConfig,
    clusters: Mapping[str, Hashable] | None = None,
) -> dict[str, Any] | None:
    """The selection of a run (module docstring), or None when the reference or every
    candidate was not run."""
    ran = [name for name in selection.candidates if name in reports]
    if not ran or selection.reference not in reports:
        return None
    metric, k, part = selection.metric, len(selection.candidates), selection.slice

    def value_of(name: str) -> float | None:
        block = reports[name] if part == OVERALL else reports[name]["slices"][part]
        value: float | None = block["metrics"][metric]["value"]
        return value

    level = bonferroni_confidence_level(statistics.confidence_level, k)
    values = {name: value_of(name) for name in ran}
    selected = max(
        ran, key=lambda name: (values[name] is not None, values[name] or 0.0, -ran.index(name))
    )
    reference = records_of(scoring[selection.reference], part)
    candidates = []
    for name in ran:
        block = comparison_interval_block(
            reference,
            records_of(scoring[name], part),
            statistics,
            label=f"selection:{name}" if part == OVERALL else f"selection:{name}:{part}",
            clusters=clusters,
            acceptable=False,
            confidence_level=level,
            include_bootstrap=False,
        )
        entry = dict(block["intervals"][metric])
        candidates.append({"arm": name, "value": values[name], **entry})
    chosen = next(c for c in candidates if c["arm"] == selected)
    curse = winners_curse(reference, [records_of(scoring[name], part) for name in ran], metric,
                          clusters)  # fmt: skip
    if curse is not None and chosen.get("estimate") is not None:
        curse["debiased_estimate"] = float(chosen["estimate"]) - curse["bias"]
    return {
        "schema_version": SCHEMA,
        "metric": metric,
        "among": selection.among,
        "slice": part,
        "reference": selection.reference,
        "reference_value": value_of(selection.reference),
        "selected": selected,
        "selected_value": values[selected],
        "interval": {key: chosen.get(key) for key in ("estimate", "lower", "upper", "method")},
        "familywise": {"method": "bonferroni", "candidates": k, "confidence_level": level},
        "candidates": candidates,
        "winners_curse": CURSE.format(k=k) if k > 1 else SOLE,
        "winners_curse_bias": curse,
    }


__all__ = ["CURSE", "SCHEMA", "SOLE", "selection_block", "winners_curse"]
