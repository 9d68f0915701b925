"""Call-set matching and the parser-v2 metrics (core/call_sets.py): the assignment against
scipy's, one-call examples against v1's metrics, permutations, duplicates, worked examples."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from scipy.optimize import linear_sum_assignment
from test_parse_properties import CALLS

from pytest_sommelier.core.call_sets import (
    CALL_SET_METRIC_NAMES,
    call_set_components,
    call_set_metrics,
    match_calls,
    max_assignment,
)
from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    compute_metrics,
    example_components,
    flatten_arguments,
    metric_order,
)
from pytest_sommelier.core.parse import STATUS_INVALID_JSON, STATUS_NO_JSON, STATUS_OK, STATUSES
from pytest_sommelier.errors import InvariantError

# Small call families, so that names, arguments and whole calls collide often.
SMALL_CALLS = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["f", "g", "h"]),
        "arguments": st.dictionaries(
            st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([1, 2, "x", None]), max_size=4
        ),
    }
)
CALL_LISTS = st.lists(SMALL_CALLS, min_size=1, max_size=5)
FAILURES = st.sampled_from([s for s in STATUSES if s != STATUS_OK])


def record(
    parsed: list[dict[str, Any]] | None, gold: list[dict[str, Any]], status: str = ""
) -> dict[str, Any]:
    return {
        "example_id": "e",
        "parse_status": status or (STATUS_OK if parsed is not None else STATUS_NO_JSON),
        "parsed_calls": parsed,
        "gold_calls": gold,
    }


def components(parsed: Any, gold: Any, order: str = "any") -> dict[str, tuple[int, int]]:
    return dict(
        zip(CALL_SET_METRIC_NAMES, call_set_components(record(parsed, gold), order), strict=True)
    )


def shared(p: dict[str, Any], g: dict[str, Any]) -> int:
    return len(set(flatten_arguments(p["arguments"])) & set(flatten_arguments(g["arguments"])))


# -- the assignment ----------------------------------------------------------------------------


@settings(max_examples=examples(300))
@given(
    st.integers(0, 6).flatmap(
        lambda rows: st.integers(0, 6).flatmap(
            lambda cols: st.lists(
                st.lists(st.integers(0, 9), min_size=cols, max_size=cols),
                min_size=rows,
                max_size=rows,
            )
        )
    )
)
def test_the_assignment_is_optimal_as_scipys(weights: list[list[int]]) -> None:
    pairs = max_assignment(weights)
    rows = len(weights)
    cols = len(weights[0]) if rows else 0
    if rows == 0 or cols == 0:
        assert pairs == []
        return
    assert len(pairs) == min(rows, cols)
    assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
    scipy_rows, scipy_cols = linear_sum_assignment(np.array(weights), maximize=True)
    best = int(np.array(weights)[scipy_rows, scipy_cols].sum())
    assert sum(weights[r][c] for r, c in pairs) == best


@settings(max_examples=examples(200))
@given(CALL_LISTS, CALL_LISTS)
def test_exact_pairs_first_keeps_the_optimum(predicted: list[Any], gold: list[Any]) -> None:
    """Pairing equal calls first never lowers the pairs matched (scipy's unconstrained optimum)."""
    matching = match_calls(predicted, gold, "any")
    weights = np.array([[shared(p, g) for g in gold] for p in predicted])
    rows, cols = linear_sum_assignment(weights, maximize=True)
    assert matching.matched_pairs == int(weights[rows, cols].sum())
    assert len(matching.pairs) == min(len(predicted), len(gold))
    assert sum(predicted[p] == gold[g] for p, g in matching.pairs) == matching.exact


# -- one call is v1 ----------------------------------------------------------------------------


# was 300: a call pair and a status, scored both ways per example
@settings(max_examples=examples(150))
@given(st.one_of(CALLS, SMALL_CALLS), st.one_of(st.none(), CALLS, SMALL_CALLS), FAILURES)
def test_one_call_scores_as_v1(gold: Any, parsed: Any, failure: str) -> None:
    status = STATUS_OK if parsed is not None else failure
    v1 = example_components({"parse_status": status, "parsed_call": parsed, "gold_call": gold})
    for order in ("any", "exact"):
        v2 = call_set_components(
            record(None if parsed is None else [parsed], [gold], status), order
        )
        assert v2[: len(METRIC_NAMES)] == v1


@settings(max_examples=examples(100))
@given(st.lists(st.tuples(SMALL_CALLS, st.one_of(st.none(), SMALL_CALLS)), max_size=6))
def test_one_call_totals_equal_compute_metrics(rows: list[tuple[Any, Any]]) -> None:
    v1 = compute_metrics(
        [
            {
                "parse_status": STATUS_OK if p else STATUS_INVALID_JSON,
                "parsed_call": p,
                "gold_call": g,
            }
            for g, p in rows
        ]
    )
    v2 = call_set_metrics(
        [
            record(None if p is None else [p], [g], "" if p else STATUS_INVALID_JSON)
            for g, p in rows
        ],
        "any",
    )
    assert {name: v2[name] for name in METRIC_NAMES} == v1


# -- permutations and duplicates ---------------------------------------------------------------


@settings(max_examples=examples(200))
@given(CALL_LISTS, CALL_LISTS, st.randoms(use_true_random=False))
def test_any_order_is_permutation_invariant(
    predicted: list[Any], gold: list[Any], rnd: Any
) -> None:
    shuffled_predicted, shuffled_gold = predicted[:], gold[:]
    rnd.shuffle(shuffled_predicted)
    rnd.shuffle(shuffled_gold)
    assert components(shuffled_predicted, shuffled_gold) == components(predicted, gold)


DISTINCT_GOLDS = st.lists(
    st.tuples(st.sampled_from(["f", "g"]), st.integers(0, 9)), min_size=2, max_size=5, unique=True
).map(lambda keys: [{"name": name, "arguments": {"a": value}} for name, value in keys])


@settings(max_examples=examples(100))
@given(DISTINCT_GOLDS.flatmap(lambda gold: st.tuples(st.just(gold), st.permutations(gold))))
def test_a_permuted_correct_answer_hits_under_any_and_misses_under_exact(
    pair: tuple[list[Any], list[Any]],
) -> None:
    gold, permuted = pair
    assert components(permuted, gold, "any")["full_call_exact_match"] == (1, 1)
    expected = (1, 1) if permuted == gold else (0, 1)
    assert components(permuted, gold, "exact")["full_call_exact_match"] == expected
    reversed_answer = gold[::-1]  # distinct calls: never the gold order
    assert components(reversed_answer, gold, "exact")["full_call_exact_match"] == (0, 1)


@settings(max_examples=examples(200))
@given(CALL_LISTS, CALL_LISTS, st.sampled_from(["any", "exact"]))
def test_components_are_bounded_and_consistent(
    predicted: list[Any], gold: list[Any], order: str
) -> None:
    got = components(predicted, gold, order)
    for name, (num, den) in got.items():
        assert 0 <= num <= den, name
    assert got["call_precision"][1] == len(predicted) and got["call_recall"][1] == len(gold)
    full = got["full_call_exact_match"][0]
    # a full-call hit is every other rate's hit too
    if full:
        assert all(got[n][0] == got[n][1] for n in CALL_SET_METRIC_NAMES)
    assert full == (
        got["call_precision"][0] == len(predicted) and got["call_recall"][0] == len(gold)
    )


def test_duplicates_are_counted_as_a_multiset() -> None:
    a = {"name": "f", "arguments": {"x": 1}}
    got = components([a], [a, a])
    assert got["full_call_exact_match"] == (0, 1)
    assert got["call_count_match"] == (0, 1)
    assert got["function_name_accuracy"] == (0, 1)  # {f} is not {f, f}
    assert (got["call_precision"], got["call_recall"]) == ((1, 1), (1, 2))
    assert got["argument_f1"] == (2, 3)  # the unmatched gold call adds its pair below
    assert components([a, a, a], [a, a])["call_precision"] == (2, 3)


def test_worked_example() -> None:
    """docs/metrics.md's worked example, number for number."""
    gold = [
        {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}},
        {"name": "get_weather", "arguments": {"city": "London", "unit": "C"}},
    ]
    predicted = [
        {"name": "get_weather", "arguments": {"city": "London", "unit": "C"}},
        {"name": "get_weather", "arguments": {"city": "Paris", "unit": "F"}},
        {"name": "get_time", "arguments": {"city": "Paris"}},
    ]
    got = components(predicted, gold)
    assert got == {
        "valid_json_rate": (1, 1),
        "function_name_accuracy": (0, 1),
        "argument_exact_match": (0, 1),
        "argument_f1": (6, 9),
        "full_call_exact_match": (0, 1),
        "call_count_match": (0, 1),
        "call_precision": (1, 3),
        "call_recall": (1, 2),
    }
    exact = components(predicted, gold, "exact")
    assert exact["argument_f1"] == (2, 9)  # London vs Paris: unit only; Paris/F vs London: none
    assert exact["call_precision"] == (0, 3)
    failure = components(None, gold)
    assert failure["argument_f1"] == (0, 4) and failure["call_precision"] == (0, 0)


def test_metric_names_follow_the_one_metric_order() -> None:
    assert list(CALL_SET_METRIC_NAMES) == metric_order(CALL_SET_METRIC_NAMES)
    empty = call_set_metrics([], "any")
    assert list(empty) == list(CALL_SET_METRIC_NAMES)
    assert all(
        entry == {"value": None, "numerator": 0, "denominator": 0} for entry in empty.values()
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"gold_calls": []}, "gold_calls is not a non-empty array"),
        ({"gold_calls": [{"name": "f"}]}, "gold_calls[0] is not"),
        ({"parsed_calls": [{"name": "", "arguments": {}}]}, "parsed_calls[0].name"),
        ({"parse_status": "maybe"}, "parse_status 'maybe'"),
        ({"parse_status": STATUS_NO_JSON}, "parsed_calls set"),
        ({"parsed_calls": None}, "parsed_calls null"),
    ],
)
def test_a_self_contradicting_record_is_an_invariant_error(
    bad: dict[str, Any], message: str
) -> None:
    good = record([{"name": "f", "arguments": {}}], [{"name": "f", "arguments": {}}])
    with pytest.raises(InvariantError, match=message.replace("[", r"\[")):
        call_set_components({**good, **bad}, "any")


def test_an_unknown_order_is_refused() -> None:
    with pytest.raises(ValueError, match="order"):
        match_calls([], [], "sorted")
