"""The metric columns a run adds to the five from what its records hold (pure, numpy only):
parser v2's ``call_count_match``, ``call_precision``, ``call_recall`` (``core.call_sets``, when
some record is parser v2's) then the abstention metrics (``core.abstention``, when some record
expects no single call). A v1 run without abstention examples has none, so its reports are
what they were. Invariant: :func:`extra_arrays` column ``j`` is metric ``names[j]``, and
:func:`extra_metrics` is its column sums.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_sommelier.core.abstention import (
    ABSTENTION_METRICS,
    abstention_arrays,
    abstention_metrics,
    abstention_names,
)
from pytest_sommelier.core.call_sets import (
    CALL_SET_ADDED,
    added_metrics,
    call_set_arrays,
    call_set_names,
)
from pytest_sommelier.core.types import Metrics

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

EXTRA_METRICS: tuple[str, ...] = (*CALL_SET_ADDED, *ABSTENTION_METRICS)
"""Every built-in metric beyond the five that some runs hold (what a stop rule, a selection or
a training metric may name besides the five)."""


def extra_names(records: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The added metrics a report over ``records`` holds, call-set ones first."""
    rows = list(records)
    return (*call_set_names(rows), *abstention_names(rows))


def _parts(names: Sequence[str]) -> tuple[list[str], list[str]]:
    calls = [name for name in names if name in CALL_SET_ADDED]
    abstention = [name for name in names if name in ABSTENTION_METRICS]
    if [*calls, *abstention] != list(names):
        raise ValueError(f"not added metrics in call-set then abstention order: {list(names)}")
    return calls, abstention


def extra_arrays(
    records: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators of the named added metrics, shape
    ``(len(records), len(names))``."""
    import numpy as np

    calls, abstention = _parts(names)
    num_a, den_a = call_set_arrays(records, calls)
    num_b, den_b = abstention_arrays(records, abstention)
    return np.hstack([num_a, num_b]), np.hstack([den_a, den_b])


def extra_metrics(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> Metrics:
    """``{name: {value, numerator, denominator}}`` of each named added metric."""
    calls, abstention = _parts(names)
    out: Metrics = {}
    if calls:
        out.update(added_metrics(records, calls))
    if abstention:
        out.update(abstention_metrics(records, abstention))
    return out


__all__ = ["EXTRA_METRICS", "extra_arrays", "extra_metrics", "extra_names"]
