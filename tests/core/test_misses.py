"""Tests for the taxonomy of misses (pytest_sommelier.core.misses)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.metrics import example_components
from pytest_sommelier.core.misses import (
    LANGUAGE_FLAG,
    MISS_CATEGORIES,
    json_kind,
    miss_category,
    miss_counts,
    miss_fields,
    script_of,
    value_language_mismatch,
)
from pytest_sommelier.errors import InvariantError

GOLD = {"name": "book", "arguments": {"city": "Paris", "people": 2, "opts": {"late": True}}}


def record(parsed: dict | None, status: str = "ok", gold: dict = GOLD) -> dict[str, Any]:
    return {"example_id": "e", "parse_status": status, "parsed_call": parsed, "gold_call": gold}


def call(**arguments: Any) -> dict[str, Any]:
    return {"name": "book", "arguments": arguments}


@pytest.mark.parametrize(
    ("parsed", "status", "expected"),
    [
        (GOLD, "ok", None),
        (None, "no_json", "parse_no_json"),
        (None, "invalid_json", "parse_invalid_json"),
        (None, "invalid_shape", "parse_invalid_shape"),
        ({"name": "reserve", "arguments": GOLD["arguments"]}, "ok", "wrong_function"),
        (call(city="Paris", opts={"late": True}), "ok", "missing_argument"),
        # missing wins over unexpected (a renamed argument is first of all a missing one)
        (call(town="Paris", people=2, opts={"late": True}), "ok", "missing_argument"),
        (call(city="Paris", people=2, opts={"late": True}, note="x"), "ok", "unexpected_argument"),
        (call(city="Paris", people="2", opts={"late": True}), "ok", "wrong_type"),
        (call(city="Paris", people=2.0, opts={"late": True}), "ok", "wrong_type"),
        (call(city="Paris", people=2, opts={"late": "yes"}), "ok", "wrong_type"),  # nested
        (call(city="paris", people=2, opts={"late": True}), "ok", "wrong_value"),
        (call(city="Paris", people=3, opts={"late": True}), "ok", "wrong_value"),
        (call(city="Paris", people=2, opts={"late": True, "x": 1}), "ok", "wrong_value"),
    ],
)
def test_primary_category(parsed, status, expected):
    assert miss_category(record(parsed, status)) == expected


def test_contradicting_record_is_an_invariant_error():
    with pytest.raises(InvariantError):
        miss_category(record(None, "ok"))


def test_scripts_and_language_mismatch():
    assert script_of("תל אביב") == "HEBREW"
    assert script_of("Tel Aviv") == "LATIN"
    assert script_of("東京") == "CJK"
    assert script_of("42 / -") is None
    gold = {"name": "weather", "arguments": {"city": "Tel Aviv", "days": 2}}
    hebrew = record({"name": "weather", "arguments": {"city": "תל אביב", "days": 2}}, gold=gold)
    latin = record({"name": "weather", "arguments": {"city": "Tel-Aviv", "days": 2}}, gold=gold)
    assert value_language_mismatch(hebrew) and not value_language_mismatch(latin)
    assert miss_fields(hebrew, translated=True) == {
        "miss_category": "wrong_value",
        LANGUAGE_FLAG: True,
    }
    assert miss_fields(hebrew, translated=False) == {"miss_category": "wrong_value"}
    assert miss_fields(record(GOLD), translated=True) == {
        "miss_category": None,
        LANGUAGE_FLAG: False,
    }


def test_json_kinds():
    assert [json_kind(v) for v in (None, True, 1, 1.0, "1", [], {})] == [
        "null",
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "object",
    ]


# ---------------------------------------------------------------- property: counts add up

VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-3, 3),
        st.floats(-3, 3, allow_nan=False),
        st.sampled_from(["a", "A", "Paris", "פריז", "東京", "2"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)
    ),
    max_leaves=6,
)
ARGUMENTS = st.dictionaries(st.sampled_from(["city", "people", "opts", "note"]), VALUES, max_size=4)
CALLS = st.builds(
    lambda name, args: {"name": name, "arguments": args},
    st.sampled_from(["book", "reserve"]),
    ARGUMENTS,
)


@st.composite
def records(draw):
    gold = draw(CALLS)
    status = draw(st.sampled_from(["ok", "ok", "ok", "no_json", "invalid_json", "invalid_shape"]))
    if status != "ok":
        parsed = None
    elif draw(st.booleans()):
        parsed = gold  # a hit
    elif gold["arguments"] and draw(st.booleans()):
        # a near miss: one argument's value drawn again (wrong_value, wrong_type, or a hit);
        # two independent calls almost never differ in a value alone
        key = draw(st.sampled_from(sorted(gold["arguments"])))
        parsed = {"name": gold["name"], "arguments": {**gold["arguments"], key: draw(VALUES)}}
    else:
        parsed = draw(CALLS)
    return record(parsed, status, gold)


@settings(max_examples=examples(150), deadline=None)
# batches of up to 10 (was 25) and 150 of them (was 300): the sums hold for any batch; with the
# near misses above, 150 batches reach each category the records can have (wrong_value too,
# which 300 batches of independent calls reached about once); drawing nested calls is most of
# this test's time
@given(st.lists(records(), max_size=10), st.booleans())
def test_counts_sum_to_the_misses_exactly(batch, translated):
    counts = miss_counts(batch, translated=translated)
    misses = sum(1 for r in batch if example_components(r)[-1][0] == 0)
    assert counts["misses"] == misses
    assert sum(counts["categories"].values()) == misses
    assert list(counts["categories"]) == list(MISS_CATEGORIES)
    assert (LANGUAGE_FLAG in counts) == translated
    if translated:
        assert 0 <= counts[LANGUAGE_FLAG] <= misses
    for item in batch:
        category = miss_category(item)
        assert (category is None) == (example_components(item)[-1][0] == 1)
        assert category is None or category in MISS_CATEGORIES
