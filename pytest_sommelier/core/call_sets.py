"""Call-set matching and the metrics of parser v2 (pure functions, no I/O).

Under ``sommelier.parser.v2`` (``core.parse_v2``) an answer is a sequence of calls and an
example's gold is an array of one or more calls. User documentation: ``docs/metrics.md``
("Metrics under parser v2") and ``docs/parser.md`` ("Parser v2").

**Matching** (:func:`match_calls`). Under ``order = "exact"`` the i-th predicted call is paired
with the i-th gold call (calls past the shorter list stay unpaired). Under ``order = "any"``
(the default, as BFCL's parallel checker) calls that are exactly equal (name and canonical
arguments) are paired first, as many as the two multisets share; the calls left are then paired
by the assignment that maximises the number of matched argument pairs (``flatten_arguments``
pairs two calls share), a maximum-weight bipartite matching solved by :func:`max_assignment`,
the shortest-augmenting-path Hungarian method (Kuhn 1955, Munkres 1957) in the form of Jonker
and Volgenant (1987) as described by Crouse (2016), the algorithm of
``scipy.optimize.linear_sum_assignment`` (which the tests check it against; scipy is not a
runtime dependency of this pure layer). Pairing exactly equal calls first never lowers the
maximum: an exact pair shares all of its pairs, so exchanging it into any optimal assignment
keeps the total (a property test checks this against the unconstrained optimum).

**Components** (:func:`call_set_components`), per example, in :data:`CALL_SET_METRIC_NAMES`
order, each ``(numerator, denominator)``:

- ``valid_json_rate``: 1/1 when the whole answer parses (status ``ok``), else 0/1;
- ``function_name_accuracy``: 1/1 when the multiset of predicted names equals the gold's (under
  ``exact``: the list of names, in order), else 0/1;
- ``argument_exact_match``: 1/1 when the calls' arguments match the gold's one to one (canonical
  JSON, names not consulted, as in v1; a multiset under ``any``, the list under ``exact``);
- ``argument_f1``: ``2 * matched pairs`` over the matched calls / ``predicted pairs + gold
  pairs`` over ALL calls: an unmatched gold call adds its pairs to the denominator, an extra
  predicted call adds its own; a parse failure predicts no pairs;
- ``full_call_exact_match``: 1/1 when every gold call is matched by an exactly equal call and
  nothing is extra (the multisets, or under ``exact`` the lists, are equal), else 0/1;
- ``call_count_match``: 1/1 when there are as many predicted calls as gold calls, else 0/1;
- ``call_precision``: exactly matched calls / predicted calls (a parse failure: 0/0);
- ``call_recall``: exactly matched calls / gold calls.

Invariants kept: an example with one gold call and at most one predicted call has exactly v1's
five components (``core.metrics.example_components``; a property test checks it); under
``any`` the components do not depend on the order of either list; totals are plain sums of
components, as for v1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from pytest_sommelier.core.metric_parts import (
    BAD_CALL_HINT,
    METRIC_NAMES,
    Component,
    canonical_json,
    checked_status,
    column_totals,
    component_columns,
    example_id_of,
    flatten_arguments,
)
from pytest_sommelier.core.parse import call_shape_error
from pytest_sommelier.core.parse_v2 import ORDER_ANY, ORDER_EXACT, ORDERS
from pytest_sommelier.core.types import Call, Metrics
from pytest_sommelier.errors import InvariantError

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

CALL_COUNT_MATCH = "call_count_match"
CALL_PRECISION = "call_precision"
CALL_RECALL = "call_recall"
CALL_SET_ADDED: tuple[str, ...] = (CALL_COUNT_MATCH, CALL_PRECISION, CALL_RECALL)
"""The metrics parser v2 adds to the five (which keep their names over call sets)."""

LABELS: dict[str, str] = {
    CALL_COUNT_MATCH: "call count match (parser v2: as many calls as the gold)",
    CALL_PRECISION: "call precision (parser v2: exactly matched / predicted calls)",
    CALL_RECALL: "call recall (parser v2: exactly matched / gold calls)",
}
"""How the views label the added metrics (shown apart from the five, as the abstention ones)."""

CALL_SET_METRIC_NAMES: tuple[str, ...] = (*METRIC_NAMES, *CALL_SET_ADDED)
"""Every metric under parser v2, in ``core.metrics.metric_order``'s order."""


CALL_ORDER_FIELD = "call_order"
"""The scoring-record field that makes a record parser v2's: the suite's ``[parser] order``,
set on every ``call`` example of a v2 suite beside ``parsed_calls`` and ``gold_calls``."""


class CallMatching(NamedTuple):
    """How predicted calls are paired with gold calls: ``pairs`` of ``(predicted index, gold
    index)`` sorted by gold index; ``exact`` how many of them are exactly equal calls;
    ``matched_pairs`` the argument pairs the paired calls share, summed."""

    pairs: tuple[tuple[int, int], ...]
    exact: int
    matched_pairs: int


def _call_key(call: Call) -> str:
    """Exact-call equality: the name and the canonical JSON of the arguments."""
    return canonical_json([call["name"], call["arguments"]])


def max_assignment(weights: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """A maximum-weight assignment of a rectangular matrix of non-negative integer weights:
    ``(row, column)`` pairs, one per row when there are no more rows than columns (else one per
    column), whose summed weight is the largest possible.

    The shortest-augmenting-path Hungarian method with potentials (Kuhn 1955; Munkres 1957;
    Jonker & Volgenant 1987, "A shortest augmenting path algorithm for dense and sparse linear
    assignment problems", Computing 38; rectangular form: Crouse 2016, "On implementing 2D
    rectangular assignment algorithms", IEEE TAES 52(4)), the algorithm of
    ``scipy.optimize.linear_sum_assignment``, run on costs ``max - weight`` in exact integer
    arithmetic. O(n^2 m) for n = min(rows, columns).
    """
    rows = len(weights)
    columns = len(weights[0]) if rows else 0
    if rows == 0 or columns == 0:
        return []
    transposed = rows > columns
    matrix = [list(col) for col in zip(*weights, strict=True)] if transposed else weights
    n, m = len(matrix), len(matrix[0])
    top = max(max(row) for row in matrix)
    cost = [[top - value for value in row] for row in matrix]
    # 1-based potentials u (rows), v (columns); way[] the augmenting path; owner[j] the row
    # assigned to column j (0: none).
    u, v = [0] * (n + 1), [0] * (m + 1)
    owner, way = [0] * (m + 1), [0] * (m + 1)
    for row in range(1, n + 1):
        owner[0], column0 = row, 0
        best: list[int | None] = [None] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[column0] = True
            i0, delta, column1 = owner[column0], None, 0
            for j in range(1, m + 1):
                if used[j]:
                    continue
                reduced = cost[i0 - 1][j - 1] - u[i0] - v[j]
                current = best[j]
                if current is None or reduced < current:
                    best[j], way[j] = reduced, column0
                    current = reduced
                if delta is None or current < delta:
                    delta, column1 = current, j
            assert delta is not None  # n <= m: an unused column is always left
            for j in range(m + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    found = best[j]
                    best[j] = None if found is None else found - delta
            column0 = column1
            if owner[column0] == 0:
                break
        while column0:
            previous = way[column0]
            owner[column0] = owner[previous]
            column0 = previous
    pairs = [(owner[j] - 1, j - 1) for j in range(1, m + 1) if owner[j]]
    if transposed:
        pairs = [(column, row) for row, column in pairs]
    return sorted(pairs)


GOLD_CALLS_LIMIT = 128
"""The most gold calls one example may hold under parser v2 (BFCL's parallel rows hold a
handful). Pairing an answer's calls with the gold costs ``n^2 m`` (:func:`max_assignment`), so
an unbounded gold set would let one row of a split stall a run; the split loader refuses a row
over the limit in one line (docs/hardening.md, V36)."""


def _pair_set(call: Call) -> frozenset[tuple[str, str]]:
    """A call's flattened argument pairs as a set (paths are unique within a call)."""
    return frozenset(flatten_arguments(call["arguments"]))


def _shared_pairs(predicted: Call, gold: Call) -> int:
    """How many flattened argument pairs two calls share (paths are unique within a call)."""
    return len(_pair_set(predicted) & _pair_set(gold))


def match_calls(predicted: Sequence[Call], gold: Sequence[Call], order: str) -> CallMatching:
    """Pair predicted calls with gold calls under ``order`` (module docstring); ValueError for
    an order outside ``ORDERS``."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if order == ORDER_EXACT:
        pairs = [(i, i) for i in range(min(len(predicted), len(gold)))]
        exact = sum(_call_key(predicted[i]) == _call_key(gold[i]) for i, _ in pairs)
        shared = sum(_shared_pairs(predicted[i], gold[i]) for i, _ in pairs)
        return CallMatching(tuple(pairs), exact, shared)
    waiting: dict[str, list[int]] = {}
    for index, call in enumerate(predicted):
        waiting.setdefault(_call_key(call), []).append(index)
    exact_pairs: list[tuple[int, int]] = []
    gold_left: list[int] = []
    for index, call in enumerate(gold):
        same = waiting.get(_call_key(call))
        if same:
            exact_pairs.append((same.pop(0), index))
        else:
            gold_left.append(index)
    predicted_left = sorted(i for indices in waiting.values() for i in indices)
    shared = sum(len(flatten_arguments(gold[g]["arguments"])) for _, g in exact_pairs)
    # each call's pair set once (not once per cell of the matrix)
    gold_sets = [_pair_set(gold[g]) for g in gold_left]
    weights = [
        [len(p_set & g_set) for g_set in gold_sets]
        for p_set in (_pair_set(predicted[p]) for p in predicted_left)
    ]
    chosen = max_assignment(weights)
    assigned = [(predicted_left[row], gold_left[column]) for row, column in chosen]
    shared += sum(weights[row][column] for row, column in chosen)
    pairs = sorted([*exact_pairs, *assigned], key=lambda pair: pair[1])
    return CallMatching(tuple(pairs), len(exact_pairs), shared)


def _checked_list(record: Mapping[str, Any], field: str) -> list[Call]:
    """``record[field]`` after checking it is a non-empty array of calls
    (``core.parse.call_shape_error``, the one call-shape rule)."""
    calls = record.get(field)
    where = f"example {example_id_of(record)}"
    hint = BAD_CALL_HINT
    if not isinstance(calls, list) or not calls:
        raise InvariantError(
            "SOM-METRIC-BAD-CALL", f"{field} is not a non-empty array of calls", hint, where=where
        )
    for index, call in enumerate(calls):
        problem = call_shape_error(call)
        if problem is not None:
            path = f"{field}[{index}]" + (f".{problem.field}" if problem.field else "")
            raise InvariantError(
                "SOM-METRIC-BAD-CALL", f"{path} {problem.problem}", hint, where=where
            )
    return cast(list[Call], calls)


def checked_call_sets(record: Mapping[str, Any]) -> tuple[list[Call] | None, list[Call]]:
    """``(parsed_calls or None, gold_calls)`` of a v2 scoring record after its consistency
    checks: a known status, ``parsed_calls`` exactly when the status is ``ok``, both non-empty
    arrays of well-formed calls. Any violation is an InvariantError naming the example id."""
    has_calls = checked_status(record, "parsed_calls", "parsed calls are")
    gold = _checked_list(record, "gold_calls")
    parsed = _checked_list(record, "parsed_calls") if has_calls else None
    return parsed, gold


def _same(left: Iterable[str], right: Iterable[str], order: str) -> bool:
    """Equal as multisets (``any``) or as lists (``exact``)."""
    if order == ORDER_ANY:
        return Counter(left) == Counter(right)
    return list(left) == list(right)


def call_set_components(record: Mapping[str, Any], order: str) -> tuple[Component, ...]:
    """Per-example ``(numerator, denominator)`` pairs of a v2 scoring record (``parse_status``,
    ``parsed_calls``, ``gold_calls``), in CALL_SET_METRIC_NAMES order (module docstring).

    Invariant: with one gold call and at most one parsed call, the first five are exactly
    ``core.metrics.example_components`` of the v1 record holding those calls.
    """
    parsed, gold = checked_call_sets(record)
    gold_pairs = sum(len(flatten_arguments(call["arguments"])) for call in gold)
    if parsed is None:
        return ((0, 1), (0, 1), (0, 1), (0, gold_pairs), (0, 1), (0, 1), (0, 0), (0, len(gold)))
    matching = match_calls(parsed, gold, order)
    predicted_pairs = sum(len(flatten_arguments(call["arguments"])) for call in parsed)
    names = _same((c["name"] for c in parsed), (c["name"] for c in gold), order)
    arguments = _same(
        (canonical_json(c["arguments"]) for c in parsed),
        (canonical_json(c["arguments"]) for c in gold),
        order,
    )
    full = matching.exact == len(gold) == len(parsed)
    return (
        (1, 1),
        (int(names), 1),
        (int(arguments), 1),
        (2 * matching.matched_pairs, predicted_pairs + gold_pairs),
        (int(full), 1),
        (int(len(parsed) == len(gold)), 1),
        (matching.exact, len(parsed)),
        (matching.exact, len(gold)),
    )


def call_set_metrics(records: Iterable[Mapping[str, Any]], order: str) -> Metrics:
    """The v2 metrics over all records, each ``{value, numerator, denominator}`` (value None
    exactly when the denominator is 0). Invariant: plain sums of the components; every record
    counts (parse failures score 0); the result does not depend on record order."""
    totals = [[0, 0] for _ in CALL_SET_METRIC_NAMES]
    for record in records:
        for total, (numerator, denominator) in zip(
            totals, call_set_components(record, order), strict=True
        ):
            total[0] += numerator
            total[1] += denominator
    return {
        name: {"value": num / den if den else None, "numerator": num, "denominator": den}
        for name, (num, den) in zip(CALL_SET_METRIC_NAMES, totals, strict=True)
    }


def call_set_names(records: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The added metrics a report over ``records`` holds: :data:`CALL_SET_ADDED` when some
    record is parser v2's (carries ``call_order``), none for a v1 run (whose reports stay as
    they were)."""
    if any(record.get(CALL_ORDER_FIELD) is not None for record in records):
        return CALL_SET_ADDED
    return ()


_NOT_COUNTED_ADDED: tuple[Component, ...] = ((0, 0),) * len(CALL_SET_ADDED)


def added_components(record: Mapping[str, Any]) -> tuple[Component, ...]:
    """The three added components of one record, in CALL_SET_ADDED order: those of
    :func:`call_set_components` for a v2 ``call`` record, 0/0 for any other (an abstention
    example counts in none of them)."""
    order = record.get(CALL_ORDER_FIELD)
    expect = record.get("expect")
    if order is None or (expect is not None and expect != "call"):
        return _NOT_COUNTED_ADDED
    return call_set_components(record, order)[len(METRIC_NAMES) :]


def call_set_arrays(
    records: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators of the named added metrics, two int64 arrays of shape
    ``(len(records), len(names))`` (the columns the paired intervals resample)."""
    columns = [CALL_SET_ADDED.index(name) for name in names]
    rows = [[added_components(record)[c] for c in columns] for record in records]
    return component_columns(rows, len(names))


def added_metrics(records: Sequence[Mapping[str, Any]], names: Sequence[str]) -> Metrics:
    """``{name: {value, numerator, denominator}}`` of each named added metric over the records
    (value None when the denominator is 0)."""
    return column_totals(*call_set_arrays(records, names), names)


__all__ = [
    "CALL_COUNT_MATCH",
    "CALL_ORDER_FIELD",
    "CALL_PRECISION",
    "CALL_RECALL",
    "CALL_SET_ADDED",
    "CALL_SET_METRIC_NAMES",
    "GOLD_CALLS_LIMIT",
    "LABELS",
    "CallMatching",
    "added_components",
    "added_metrics",
    "call_set_arrays",
    "call_set_components",
    "call_set_metrics",
    "call_set_names",
    "checked_call_sets",
    "match_calls",
    "max_assignment",
]
