"""``data.json_memo``: a check's answer from memory exactly when the same JSON value was
checked before in the same scope; anything that is not plain JSON is checked every time."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.data.json_memo import JsonMemo, plain_json

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)


class Counting:
    """A check that counts its calls and answers the value's JSON text."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, value: Any) -> str:
        self.calls += 1
        return json.dumps(value, sort_keys=False, default=repr)


@settings(max_examples=examples(100))
@given(value=JSON)
def test_a_json_value_is_checked_once_and_answered_the_same(value: Any) -> None:
    memo: JsonMemo[str] = JsonMemo(16)
    check = Counting()
    first = memo.answer("k", value, check)
    assert plain_json(value)
    assert memo.answer("k", json.loads(json.dumps(value)), check) == first == check(value)
    assert check.calls == 2  # once through the memo, once here
    memo.answer("other", value, check)  # another scope is another answer
    assert check.calls == 3


@settings(max_examples=examples(60))
@given(value=JSON, wrap=st.sampled_from(["tuple", "int-key", "object"]))
def test_what_is_not_plain_json_is_checked_every_time(value: Any, wrap: str) -> None:
    odd = {"tuple": (value,), "int-key": {1: value}, "object": [object()]}[wrap]
    memo: JsonMemo[str] = JsonMemo(16)
    check = Counting()
    memo.answer("k", odd, check)
    memo.answer("k", odd, check)
    assert not plain_json(odd) and check.calls == 2


def test_values_python_calls_equal_are_told_apart() -> None:
    memo: JsonMemo[str] = JsonMemo(16)
    answers = [memo.answer("k", value, lambda v: type(v).__name__) for value in (1, 1.0, True)]
    assert answers == ["int", "float", "bool"]


def test_at_most_limit_answers_are_held_and_the_answer_stays_right() -> None:
    memo: JsonMemo[int] = JsonMemo(3)
    check = Counting()
    for value in range(10):
        memo.answer("k", value, check)
    assert check.calls == 10
    assert memo.answer("k", 9, lambda v: -1) != -1  # the latest is still held
    assert memo.answer("k", 0, lambda v: -1) == -1  # the memory was emptied when full


def test_a_value_too_deep_to_write_is_checked_not_raised() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert plain_json(deep)  # walked without recursion
    assert JsonMemo[str](4).answer("k", deep, lambda v: "checked") == "checked"
