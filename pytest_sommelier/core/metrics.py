"""The five exact metrics, as additive per-example components (pure functions, no I/O).

User documentation, with a worked example: ``docs/metrics.md``. In short, for every example:

- ``valid_json_rate``: 1/1 when the parse status is ``ok``, else 0/1;
- ``function_name_accuracy``: 1/1 when the parsed name equals the gold name, else 0/1;
- ``argument_exact_match``: 1/1 when the canonical JSON of the parsed arguments equals that of
  the gold arguments (the name is not consulted), else 0/1;
- ``argument_f1``: ``2 * matched`` / ``predicted_pairs + gold_pairs`` over flattened
  (path, canonical value) pairs; a parse failure predicts zero pairs and still adds its gold
  pairs to the denominator;
- ``full_call_exact_match``: 1/1 when both the name and the arguments match, else 0/1.

Totals are plain sums of the components over all examples (denominators count every example,
parse failures included), so a metric is never computed over a filtered sample, and argument F1
is pooled micro-F1.

A record of parser v2 (one carrying ``call_order``: a ``call`` example of a v2 suite, with
``parsed_calls`` and ``gold_calls``) gets the same five over call sets,
``core.call_sets.call_set_components``; its three added metrics are extra columns
(``core.call_sets.call_set_arrays``), as the abstention metrics are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pytest_sommelier.core.abstention import EXPECT_CALL, decision_right, expect_of
from pytest_sommelier.core.call_sets import CALL_ORDER_FIELD, call_set_components
from pytest_sommelier.core.metric_parts import (
    ARGUMENT_EXACT_MATCH,
    ARGUMENT_F1,
    BAD_CALL_HINT,
    FULL_CALL_EXACT_MATCH,
    FUNCTION_NAME_ACCURACY,
    METRIC_NAMES,
    ROOT_PATH,
    VALID_JSON_RATE,
    Component,
    canonical_json,
    checked_status,
    example_id_of,
    flatten_arguments,
)
from pytest_sommelier.core.parse import call_shape_error
from pytest_sommelier.core.types import Call, Metrics, ScoringRecord
from pytest_sommelier.errors import InvariantError

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

FULL_CALL = METRIC_NAMES.index(FULL_CALL_EXACT_MATCH)
"""The column of ``full_call_exact_match`` in components and arrays."""


def pair_differences(
    gold_pairs: Mapping[str, str], predicted_pairs: Mapping[str, str]
) -> list[tuple[str, str | None, str | None]]:
    """``(path, gold value or None, predicted value or None)`` for each path whose flattened
    pair differs (missing, extra, or another value), sorted by path.

    Takes ``dict(flatten_arguments(...))`` of both sides. The one argument-diff rule: the
    terminal drilldown and the HTML page both show it. Invariant: empty exactly when the two
    argument objects match exactly.
    """
    paths = gold_pairs.keys() | predicted_pairs.keys()
    return [
        (path, gold_pairs.get(path), predicted_pairs.get(path))
        for path in sorted(paths)
        if gold_pairs.get(path) != predicted_pairs.get(path)
    ]


def argument_diff_paths(
    gold_arguments: dict[str, Any], predicted_arguments: dict[str, Any] | None
) -> list[str]:
    """Sorted paths whose flattened pairs differ: missing, extra, or with a different value.

    ``predicted_arguments`` None (a parse failure) predicts no pairs, so every gold path is
    listed. Invariant: the result is empty exactly when the arguments match exactly.
    """
    gold = dict(flatten_arguments(gold_arguments))
    predicted = {} if predicted_arguments is None else dict(flatten_arguments(predicted_arguments))
    return [path for path, _, _ in pair_differences(gold, predicted)]


def metric_order(names: Iterable[str]) -> list[str]:
    """Metric names once each: the five in METRIC_NAMES order, then any other (a sixth or a
    newer metric) sorted by name. The one ordering of reports, identity checks and pages."""
    known = list(METRIC_NAMES)
    return sorted(set(names), key=lambda n: (known.index(n) if n in known else len(known), n))


class CallMatch(NamedTuple):
    """How a parsed call agrees with the gold call: the name, the arguments (canonical JSON)."""

    name: bool
    arguments: bool

    @property
    def full_call(self) -> bool:
        """The full-call hit rule: name and arguments both exactly the gold's."""
        return self.name and self.arguments


def call_match(parsed_call: Call | None, gold_call: Call) -> CallMatch:
    """Compare a parsed call (None: the output did not parse) with the gold call.

    Invariant: ``full_call`` is exactly the ``full_call_exact_match`` component of
    :func:`example_components` (which is computed from this function).
    """
    if parsed_call is None:
        return CallMatch(False, False)
    return CallMatch(
        parsed_call["name"] == gold_call["name"],
        canonical_json(parsed_call["arguments"]) == canonical_json(gold_call["arguments"]),
    )


def full_call_hit(record: Mapping[str, Any], gold_call: Mapping[str, Any] | None) -> bool:
    """Whether ``record`` (parse status and parsed call) is a full-call exact match of
    ``gold_call``: the one record-level hit test (runner, misses, drilldown, parity).

    Takes any mapping: this is where an unchecked record (a stored line, a fresh parse) is
    checked, like :func:`example_components`.

    The record and the gold call are checked as the metrics check them (``InvariantError`` for
    a self-contradicting record or a gold call that is not a call, None included), and the
    answer is ``full_call_exact_match``'s component, memoised with it.
    """
    return example_components({**record, "gold_call": gold_call})[FULL_CALL][0] == 1


def record_hit(record: Mapping[str, Any]) -> bool:
    """The one hit test of a scoring record (gold call, ``expect`` and the abstention fields of
    ``core.abstention.scoring_fields`` included): for a ``call`` example the full-call exact
    match (:func:`full_call_hit`), for a ``no_call`` or ``any_call`` example the right decision
    (``core.abstention.decision_right``). The record is checked as the metrics check it."""
    if expect_of(record) == EXPECT_CALL:
        return full_call_hit(record, record.get("gold_call"))
    example_components(record)
    return decision_right(record)


def _check_call(record: Mapping[str, Any], field: str) -> Call:
    """Return ``record[field]`` after checking it is a call (``core.parse.call_shape_error``)."""
    call = record.get(field)
    problem = call_shape_error(call)
    if problem is not None:
        path = f"{field}.{problem.field}" if problem.field else field
        raise InvariantError(
            "SOM-METRIC-BAD-CALL",
            f"{path} {problem.problem}",
            BAD_CALL_HINT,
            where=f"example {example_id_of(record)}",
        )
    return cast(Call, call)


def _checked_calls(record: Mapping[str, Any]) -> tuple[Call | None, Call]:
    """Return ``(parsed_call or None, gold_call)`` after the record's consistency checks.

    Invariant: a known status; a parsed call exactly when the status is ``ok``; both calls
    well formed. Any violation is an InvariantError naming the example id.
    """
    has_call = checked_status(record)
    gold = _check_call(record, "gold_call")
    parsed = _check_call(record, "parsed_call") if has_call else None
    return parsed, gold


_COMPONENTS: dict[str, tuple[Component, ...]] = {}
_COMPONENTS_MAX = 1 << 16


def example_components(record: Mapping[str, Any]) -> tuple[Component, ...]:
    """Per-example ``(numerator, denominator)`` pairs, in METRIC_NAMES order.

    Invariant: summing the components of a list of records gives exactly the totals of
    ``compute_metrics``; the rate metrics have denominator 1; ``argument_f1`` has numerator
    ``2 * matched`` and denominator ``predicted_pairs + gold_pairs`` (never 0).

    Computed once per distinct (status, parsed call, gold call): a run scores each record many
    times (slice and overall metrics, paired slices, every comparison, gaps, the bootstrap), so
    the components are memoised per process, keyed by the ``repr`` of the three (exact for JSON
    values: ``"2"``, ``2``, ``2.0`` and ``True`` all differ). Only records that passed the
    checks are remembered; a record that fails them raises every time.
    """
    key = repr(
        (
            record.get("parse_status"),
            record.get("parsed_call"),
            record.get("gold_call"),
            record.get("expect"),
            record.get(CALL_ORDER_FIELD),
            record.get("parsed_calls"),
            record.get("gold_calls"),
        )
    )
    found = _COMPONENTS.get(key)
    if found is None:
        found = _example_components(record)
        if len(_COMPONENTS) >= _COMPONENTS_MAX:
            _COMPONENTS.clear()
        _COMPONENTS[key] = found
    return found


NOT_COUNTED: tuple[Component, ...] = ((0, 0),) * len(METRIC_NAMES)
"""The components of an example the five do not count: one that expects no single gold call
(``expect`` ``no_call`` or ``any_call``, core.abstention), scored by the abstention metrics."""


def _example_components(record: Mapping[str, Any]) -> tuple[Component, ...]:
    """:func:`example_components` without the memo. A record whose ``expect`` is not ``call``
    is checked the same way (status and parsed call agree; no gold call) and counts in none of
    the five: 0/0 each."""
    expect = record.get("expect")
    order = record.get(CALL_ORDER_FIELD)
    if order is not None and (expect is None or expect == "call"):  # parser v2's record
        return call_set_components(record, order)[: len(METRIC_NAMES)]
    if expect is not None and expect != "call":
        if checked_status(record):
            _check_call(record, "parsed_call")
        if record.get("gold_call") is not None:
            raise InvariantError(
                "SOM-METRIC-BAD-CALL",
                f"gold_call is set on an example that expects {expect!r}",
                "an abstention example has no gold call; re-derive the record",
                where=f"example {example_id_of(record)}",
            )
        return NOT_COUNTED
    parsed, gold = _checked_calls(record)
    gold_pairs = flatten_arguments(gold["arguments"])
    if parsed is None:
        return ((0, 1), (0, 1), (0, 1), (0, len(gold_pairs)), (0, 1))
    predicted_pairs = flatten_arguments(parsed["arguments"])
    matched = len(set(gold_pairs) & set(predicted_pairs))
    match = call_match(parsed, gold)
    return (
        (1, 1),
        (int(match.name), 1),
        (int(match.arguments), 1),
        (2 * matched, len(predicted_pairs) + len(gold_pairs)),
        (int(match.full_call), 1),
    )


def component_arrays(
    records: Iterable[ScoringRecord],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators as two int64 arrays of shape ``(len(records), 5)``.

    Invariant: row ``i`` holds ``example_components(records[i])`` in METRIC_NAMES order (this is
    what the paired bootstrap resamples).
    """
    import numpy as np

    rows = [example_components(record) for record in records]
    components = np.array(rows, dtype=np.int64).reshape(len(rows), len(METRIC_NAMES), 2)
    return components[:, :, 0].copy(), components[:, :, 1].copy()


def metric_values(
    numerators: npt.NDArray[np.int64], denominators: npt.NDArray[np.int64]
) -> Metrics:
    """Metrics from summed components: ``{name: {value, numerator, denominator}}``.

    Takes length-5 totals in METRIC_NAMES order. Invariant: ``value`` is
    ``numerator / denominator`` as a float, or None exactly when the denominator is 0; numbers
    are plain ints and floats (JSON-safe).
    """
    result: Metrics = {}
    for name, numerator, denominator in zip(METRIC_NAMES, numerators, denominators, strict=True):
        num, den = int(numerator), int(denominator)
        result[name] = {"value": num / den if den else None, "numerator": num, "denominator": den}
    return result


def compute_metrics(records: Iterable[ScoringRecord]) -> Metrics:
    """The five metrics over all records, each ``{value, numerator, denominator}``.

    Invariant: every record counts in every denominator (parse failures score 0); the result
    does not depend on record order; no records give denominators 0 and values None.
    """
    numerators, denominators = component_arrays(records)
    return metric_values(numerators.sum(axis=0), denominators.sum(axis=0))


__all__ = [  # the parts of core.metric_parts are re-exported: imported from here
    "ARGUMENT_EXACT_MATCH",
    "ARGUMENT_F1",
    "BAD_CALL_HINT",
    "FULL_CALL",
    "FULL_CALL_EXACT_MATCH",
    "FUNCTION_NAME_ACCURACY",
    "METRIC_NAMES",
    "NOT_COUNTED",
    "ROOT_PATH",
    "VALID_JSON_RATE",
    "CallMatch",
    "Component",
    "argument_diff_paths",
    "call_match",
    "canonical_json",
    "checked_status",
    "component_arrays",
    "compute_metrics",
    "example_components",
    "example_id_of",
    "flatten_arguments",
    "full_call_hit",
    "metric_order",
    "metric_values",
    "pair_differences",
    "record_hit",
]
