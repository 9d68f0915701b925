"""Unit tests for the five exact metrics, flattening and the record invariants."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    argument_diff_paths,
    canonical_json,
    component_arrays,
    compute_metrics,
    example_components,
    flatten_arguments,
    metric_values,
)
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.errors import InvariantError


def record(raw_text: str, gold: dict[str, Any], example_id: str = "ex-0") -> dict[str, Any]:
    """A scoring record built the way the plugin builds it: parse the raw text."""
    call, status = parse_tool_call(raw_text)
    return {
        "example_id": example_id,
        "parse_status": status,
        "parsed_call": call,
        "gold_call": gold,
    }


def gold(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


# The worked example of docs/metrics.md (keep the two in sync).
WORKED_EXAMPLE = [
    record(
        'Sure: {"name": "get_weather", "arguments": {"city": "Paris", "units": "celsius"}}',
        gold("get_weather", {"city": "Paris", "units": "celsius"}),
        "ex-1",
    ),
    record('[{"name": "get_alarms", "arguments": {}}]', gold("list_alarms", {}), "ex-2"),
    record(
        '{"name": "book_table", "arguments": '
        '{"restaurant": "Nopa", "party_size": "2", "options": {"outdoor": true}}}',
        gold("book_table", {"restaurant": "Nopa", "party_size": 2, "options": {"outdoor": True}}),
        "ex-3",
    ),
    record(
        'I will call it: {"name": "get_time", "arguments": {"tz": "UTC",}}',
        gold("get_time", {"tz": "UTC", "format": "24h"}),
        "ex-4",
    ),
]


def test_metric_names_order() -> None:
    assert METRIC_NAMES == (
        "valid_json_rate",
        "function_name_accuracy",
        "argument_exact_match",
        "argument_f1",
        "full_call_exact_match",
    )


def test_worked_example_totals() -> None:
    metrics = compute_metrics(WORKED_EXAMPLE)
    totals = {name: (m["numerator"], m["denominator"]) for name, m in metrics.items()}
    assert totals == {
        "valid_json_rate": (3, 4),
        "function_name_accuracy": (2, 4),
        "argument_exact_match": (2, 4),
        "argument_f1": (10, 14),
        "full_call_exact_match": (1, 4),
    }
    assert metrics["argument_f1"]["value"] == pytest.approx(10 / 14)
    assert metrics["valid_json_rate"]["value"] == 0.75


def test_worked_example_components_and_pairs() -> None:
    assert [r["parse_status"] for r in WORKED_EXAMPLE] == ["ok", "ok", "ok", "invalid_json"]
    assert [example_components(r) for r in WORKED_EXAMPLE] == [
        ((1, 1), (1, 1), (1, 1), (4, 4), (1, 1)),
        ((1, 1), (0, 1), (1, 1), (2, 2), (0, 1)),
        ((1, 1), (1, 1), (0, 1), (4, 6), (0, 1)),
        ((0, 1), (0, 1), (0, 1), (0, 2), (0, 1)),
    ]
    assert flatten_arguments(WORKED_EXAMPLE[2]["gold_call"]["arguments"]) == [
        (".options.outdoor", "true"),
        (".party_size", "2"),
        (".restaurant", '"Nopa"'),
    ]
    assert flatten_arguments(WORKED_EXAMPLE[2]["parsed_call"]["arguments"])[1] == (
        ".party_size",
        '"2"',
    )
    assert argument_diff_paths(
        WORKED_EXAMPLE[2]["gold_call"]["arguments"], WORKED_EXAMPLE[2]["parsed_call"]["arguments"]
    ) == [".party_size"]


def test_canonical_json() -> None:
    assert canonical_json({"b": 1, "a": [1, "é", None]}) == '{"a":[1,"\\u00e9",null],"b":1}'
    assert canonical_json("2") != canonical_json(2)
    assert canonical_json(1) != canonical_json(1.0)
    assert canonical_json(True) != canonical_json(1)
    with pytest.raises(ValueError):
        canonical_json(float("nan"))


def test_string_two_is_not_number_two() -> None:
    r = record('{"name": "f", "arguments": {"n": "2"}}', gold("f", {"n": 2}))
    assert example_components(r) == ((1, 1), (1, 1), (0, 1), (0, 2), (0, 1))


def test_lists_compare_by_index() -> None:
    r = record(
        '{"name": "f", "arguments": {"l": ["b", "a", "c"]}}', gold("f", {"l": ["a", "b", "c"]})
    )
    # Only index 2 matches: 1 matched pair of 3 predicted + 3 gold.
    assert example_components(r)[2:4] == ((0, 1), (2, 6))
    assert argument_diff_paths({"l": ["a", "b", "c"]}, {"l": ["b", "a", "c"]}) == [".l[0]", ".l[1]"]


def test_f1_denominator_counts_predicted_and_gold_pairs() -> None:
    extra = record('{"name": "f", "arguments": {"a": 1, "b": 2, "c": 3}}', gold("f", {"a": 1}))
    assert example_components(extra)[2:4] == ((0, 1), (2, 4))
    missing = record('{"name": "f", "arguments": {"a": 1}}', gold("f", {"a": 1, "b": 2}))
    assert example_components(missing)[2:4] == ((0, 1), (2, 3))


def test_key_order_does_not_matter() -> None:
    r = record(
        '{"name": "f", "arguments": {"b": 2, "a": {"y": 1, "x": 0}}}',
        gold("f", {"a": {"x": 0, "y": 1}, "b": 2}),
    )
    assert example_components(r) == ((1, 1), (1, 1), (1, 1), (6, 6), (1, 1))


def test_nested_paths() -> None:
    arguments = {"a": {"b": [{"c": 1}, [True, None]], "d": {}}, "e": []}
    assert flatten_arguments(arguments) == [
        (".a.b[0].c", "1"),
        (".a.b[1][0]", "true"),
        (".a.b[1][1]", "null"),
        (".a.d", "{}"),
        (".e", "[]"),
    ]


def test_empty_arguments_flatten_to_root() -> None:
    assert flatten_arguments({}) == [("<root>", "{}")]
    both_empty = record('{"name": "f", "arguments": {}}', gold("f", {}))
    assert example_components(both_empty)[3] == (2, 2)
    predicted_extra = record('{"name": "f", "arguments": {"x": 1}}', gold("f", {}))
    assert example_components(predicted_extra)[2:4] == ((0, 1), (0, 2))
    assert argument_diff_paths({}, {"x": 1}) == [".x", "<root>"]


def test_non_identifier_keys_are_json_quoted() -> None:
    pairs = flatten_arguments({"a.b": 1, "a": {"b": 2}, "": 3, "x[0]": 4, 'q"': 5, "é": 6})
    assert pairs == sorted(
        [
            ('["a.b"]', "1"),
            (".a.b", "2"),
            ('[""]', "3"),
            ('["x[0]"]', "4"),
            ('["q\\""]', "5"),
            ('["\\u00e9"]', "6"),
        ]
    )


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ({"a.b": 1}, {"a": {"b": 1}}),
        ({"0": 1}, {"x": [1]}),
        ({"a": {"0": 1}}, {"a": [1]}),
        ({"a": {}}, {"a": []}),
        ({"a": {}}, {"a": "{}"}),
        ({"a": []}, {"a": "[]"}),
        ({"<root>": {}}, {}),
        ({'a"]["b': 1}, {"a": {"b": 1}}),
    ],
)
def test_different_structures_never_share_pairs(one: dict[str, Any], other: dict[str, Any]) -> None:
    assert set(flatten_arguments(one)).isdisjoint(flatten_arguments(other))


def test_flatten_rejects_non_objects() -> None:
    with pytest.raises(TypeError):
        flatten_arguments([1, 2])  # type: ignore[arg-type]


def test_deeply_nested_arguments_do_not_recurse() -> None:
    value: Any = 1
    for _ in range(5_000):
        value = {"k": value}
    ((path, leaf),) = flatten_arguments({"k": value})
    assert path == ".k" * 5_001 and leaf == "1"


@pytest.mark.parametrize("raw", ["no call", '{"name": "f"', '{"name": "f", "arguments": []}'])
def test_parse_failure_scores_zero_and_keeps_gold_pairs_in_f1(raw: str) -> None:
    r = record(raw, gold("f", {"a": 1, "b": [1, 2]}))
    assert r["parse_status"] != "ok"
    assert example_components(r) == ((0, 1), (0, 1), (0, 1), (0, 3), (0, 1))


def test_name_and_arguments_are_judged_independently() -> None:
    wrong_name = record('{"name": "g", "arguments": {"a": 1}}', gold("f", {"a": 1}))
    wrong_args = record('{"name": "f", "arguments": {"a": 2}}', gold("f", {"a": 1}))
    assert example_components(wrong_name) == ((1, 1), (0, 1), (1, 1), (2, 2), (0, 1))
    assert example_components(wrong_args) == ((1, 1), (1, 1), (0, 1), (0, 2), (0, 1))


def test_f1_is_pooled_micro_not_averaged() -> None:
    records = [
        record('{"name": "f", "arguments": {"a": 1}}', gold("f", {"a": 1}), "x"),
        record(
            '{"name": "f", "arguments": {"a": 0, "b": 0, "c": 0}}',
            gold("f", {"a": 1, "b": 1, "c": 1}),
            "y",
        ),
    ]
    f1 = compute_metrics(records)["argument_f1"]
    assert (f1["numerator"], f1["denominator"]) == (2, 8)
    assert f1["value"] == 0.25  # a macro average would be 0.5


def test_component_arrays_shape_and_dtype() -> None:
    numerators, denominators = component_arrays(WORKED_EXAMPLE)
    assert numerators.shape == denominators.shape == (4, 5)
    assert numerators.dtype == denominators.dtype == np.int64
    assert numerators[:, 3].tolist() == [4, 2, 4, 0]
    assert denominators[:, 3].tolist() == [4, 2, 6, 2]
    empty_n, empty_d = component_arrays([])
    assert empty_n.shape == empty_d.shape == (0, 5)


def test_no_records_give_none_values() -> None:
    metrics = compute_metrics([])
    assert list(metrics) == list(METRIC_NAMES)
    assert all(m == {"value": None, "numerator": 0, "denominator": 0} for m in metrics.values())


def test_metric_values_are_plain_python_numbers() -> None:
    metrics = metric_values(np.array([1, 0, 0, 0, 0]), np.array([2, 2, 2, 0, 2]))
    assert metrics["valid_json_rate"] == {"value": 0.5, "numerator": 1, "denominator": 2}
    assert metrics["argument_f1"]["value"] is None
    assert all(type(m["numerator"]) is int for m in metrics.values())


def test_argument_diff_paths_for_a_parse_failure_lists_every_gold_path() -> None:
    assert argument_diff_paths({"a": 1, "b": {"c": 2}}, None) == [".a", ".b.c"]
    assert argument_diff_paths({"a": 1}, {"a": 1}) == []
    assert argument_diff_paths({"a": 1}, {"a": 1, "z": 0}) == [".z"]


@pytest.mark.parametrize(
    ("mutation", "code"),
    [
        ({"parse_status": "ok", "parsed_call": None}, "SOM-METRIC-STATUS-CALL-MISMATCH"),
        (
            {"parse_status": "no_json", "parsed_call": {"name": "f", "arguments": {}}},
            "SOM-METRIC-STATUS-CALL-MISMATCH",
        ),
        ({"parse_status": "maybe"}, "SOM-METRIC-UNKNOWN-STATUS"),
        ({"gold_call": {"name": "f"}}, "SOM-METRIC-BAD-CALL"),
        ({"gold_call": None}, "SOM-METRIC-BAD-CALL"),
        ({"parsed_call": {"name": "f", "arguments": []}}, "SOM-METRIC-BAD-CALL"),
    ],
)
def test_inconsistent_records_are_invariant_errors(mutation: dict[str, Any], code: str) -> None:
    bad = {**record('{"name": "f", "arguments": {}}', gold("f", {}), "he-0042"), **mutation}
    with pytest.raises(InvariantError) as info:
        compute_metrics([bad])
    assert info.value.code == code
    assert "he-0042" in str(info.value)


@pytest.mark.parametrize(
    ("mutation", "where"),
    [
        ({"gold_call": {"name": "", "arguments": {}}}, "gold_call.name"),
        ({"parsed_call": {"name": "", "arguments": {}}}, "parsed_call.name"),
        ({"parsed_call": {"name": "f", "arguments": {}, "id": 1}}, "parsed_call is not"),
        ({"gold_call": {"name": "f", "arguments": {}, "extra": None}}, "gold_call is not"),
    ],
)
def test_metrics_refuse_every_call_the_parser_refuses(mutation: dict[str, Any], where: str) -> None:
    """One call-shape rule (core.parse.call_shape_error): no empty name, no extra key."""
    bad = {**record('{"name": "f", "arguments": {}}', gold("f", {}), "he-0042"), **mutation}
    with pytest.raises(InvariantError) as info:
        compute_metrics([bad])
    assert info.value.code == "SOM-METRIC-BAD-CALL"
    assert where in str(info.value)
