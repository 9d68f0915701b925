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
upward; only the familywise interval (or a fresh split) is evidence. Every candidate's
adjusted interval is in the block too (pure: numpy only, no I/O).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from pytest_sommelier.core.multiplicity import bonferroni_confidence_level
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
    }


__all__ = ["CURSE", "SCHEMA", "SOLE", "selection_block"]
