"""``data.store.artifacts``' stored form: what ``dumps`` and ``jsonl`` write is
``stored_form(value)``, so reading a written file back gives exactly the value held in memory
(key order, types, ``-0.0``, large integers and every float's digits), for values a JSON round
trip changes: tuples, numpy scalars, keys out of order, non-string keys."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.data.store.artifacts import dumps, jsonl, stored_form


def shape(value: Any) -> Any:
    """``value`` with its types, key order and float digits made comparable (``-0.0`` is not
    ``0.0``, ``1`` is not ``1.0`` nor ``True``)."""
    if isinstance(value, dict):
        return ("dict", tuple((type(k).__name__, k, shape(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list", tuple(shape(v) for v in value))
    if type(value) is float:
        return ("float", repr(value))
    return (type(value).__name__, value)


FINITE = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**100), max_value=2**100),
    FINITE,
    st.sampled_from([-0.0, 0.1 + 0.2, 1 / 3, 1e300, 5e-324, 2.0**53 + 2]),
    st.text(max_size=8),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
    st.integers(min_value=0, max_value=2**32 - 1).map(np.uint32),
    FINITE.map(np.float64),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(np.float32),
    st.booleans().map(np.bool_),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=6), inner, max_size=4),
        st.dictionaries(st.integers(-50, 50), inner, max_size=3),
    ),
    max_leaves=20,
)


# was 300: each value nests up to 20 scalars of 9 kinds
@settings(max_examples=examples(150), deadline=None)
@given(VALUES)
def test_a_written_value_reads_back_as_its_stored_form(value: Any) -> None:
    held = stored_form(value)
    assert shape(json.loads(dumps(value))) == shape(held)
    assert shape(stored_form(held)) == shape(held)  # the stored form is its own stored form
    if isinstance(value, dict):
        text = jsonl([value])
        assert text.count("\n") == 1 and shape(json.loads(text)) == shape(held)


def test_the_stored_form_of_the_values_a_json_round_trip_changes() -> None:
    value = {
        "z": (1, (2, "x")),
        "f32": np.float32(0.1),
        "f64": np.float64(0.1) + np.float64(0.2),
        "i64": np.int64(-7),
        "flag": np.bool_(False),
        "neg": -0.0,
        "big": 2**70 + 1,
        3: "three",
        "a": {"b": 1, "a": 2},
    }
    held = stored_form(value)
    assert list(held) == ["3", "a", "big", "f32", "f64", "flag", "i64", "neg", "z"]
    assert held["z"] == [1, [2, "x"]] and held["a"] == {"a": 2, "b": 1}
    assert list(held["a"]) == ["a", "b"]  # type: ignore[arg-type]
    assert type(held["i64"]) is int and type(held["flag"]) is bool
    assert held["f32"] == 0.10000000149011612 and repr(held["f64"]) == "0.30000000000000004"
    assert math.copysign(1.0, held["neg"]) == -1.0 and held["big"] == 2**70 + 1  # type: ignore
    assert json.loads(dumps(value)) == held


@pytest.mark.parametrize("value", [{"x": math.nan}, [math.inf]])
def test_a_non_finite_float_is_kept_in_memory_and_refused_when_written(value: Any) -> None:
    assert shape(stored_form(value)) == shape(value)
    with pytest.raises(ValueError):
        dumps(value)


@pytest.mark.parametrize("value", [{"x": object()}, {(1, 2): 1}, {"s": {1, 2}}])
def test_what_json_cannot_hold_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        stored_form(value)
    with pytest.raises(TypeError):
        dumps(value)
