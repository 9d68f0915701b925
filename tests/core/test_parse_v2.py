"""sommelier.parser.v2 (core/parse_v2.py): hypothesis properties over call sequences, prose
between spans, nested arrays, duplicates, and agreement with v1 on one-call answers."""

from __future__ import annotations

import json
import math
import sys
from types import FrameType
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_budget import examples
from test_parse_properties import (
    ANY_TEXT,
    CALLS,
    PROSE,
    SMALL_CALLS,
    STRUCTURAL,
    _serialize,
    _walk,
)

from pytest_sommelier.core import parse, parse_v2
from pytest_sommelier.core.parse import (
    MAX_DEPTH,
    STATUS_INVALID_JSON,
    STATUS_INVALID_SHAPE,
    STATUS_NO_JSON,
    STATUS_OK,
    STATUSES,
    _first_opener,
    parse_tool_call,
)
from pytest_sommelier.core.parse_v2 import PARSER_V2_VERSION, _Openers, parse_tool_calls

CALL = {"name": "get_weather", "arguments": {"city": "Paris"}}
OTHER = {"name": "get_weather", "arguments": {"city": "London"}}
C, C2 = json.dumps(CALL), json.dumps(OTHER)

# A span of a sequence: one call, or a non-empty array of calls.
SPANS = st.one_of(
    SMALL_CALLS.map(lambda call: [call]),
    st.lists(SMALL_CALLS, min_size=1, max_size=3).map(lambda calls: calls),
)


def _span_text(calls: list[dict[str, Any]], as_array: bool, style: int) -> str:
    """One span: a bare call (only when it holds one call and not ``as_array``) or an array."""
    if len(calls) == 1 and not as_array:
        return _serialize(calls[0], style, False, ["", ""])
    return json.dumps(calls, indent=[None, 2][style % 2])


def _consistent(text: str, calls: Any, status: str) -> None:
    assert status in STATUSES
    assert (calls is not None) == (status == STATUS_OK)
    assert (status == STATUS_NO_JSON) == ("{" not in text and "[" not in text)
    if status == STATUS_OK:
        assert isinstance(calls, list) and calls
        for call in calls:
            assert list(call) == ["name", "arguments"] and call["name"]
            assert isinstance(call["arguments"], dict)
            json.dumps(call, allow_nan=False)


def test_the_version_name() -> None:
    assert PARSER_V2_VERSION == "sommelier.parser.v2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", (None, STATUS_NO_JSON)),
        ("no call here", (None, STATUS_NO_JSON)),
        (C, ([CALL], STATUS_OK)),
        (f"first {C} then {C2}.", ([CALL, OTHER], STATUS_OK)),
        (f"[{C}, {C2}]", ([CALL, OTHER], STATUS_OK)),
        (f"[{C}] and {C2}", ([CALL, OTHER], STATUS_OK)),
        (f"{C}\n{C}", ([CALL, CALL], STATUS_OK)),  # duplicates kept
        (f"```json\n{C}\n```\n```json\n{C2}\n```", ([CALL, OTHER], STATUS_OK)),
        ("[]", (None, STATUS_INVALID_SHAPE)),
        (f"[[{C}]]", (None, STATUS_INVALID_SHAPE)),  # nested arrays
        (f"[{C}, [{C2}]]", (None, STATUS_INVALID_SHAPE)),
        (f"{C} then [1]", (None, STATUS_INVALID_SHAPE)),  # every span must be calls
        (f"{C} then [note]", (None, STATUS_INVALID_JSON)),
        (f"{C} {{ unbalanced", (None, STATUS_INVALID_JSON)),  # v1: ok (text after ignored)
        (f"{{ oops {C}", (None, STATUS_INVALID_JSON)),
        ("[1] { oops", (None, STATUS_INVALID_SHAPE)),  # the first failing span decides
        (f'{C} {{"name": "f", "arguments": {{"a": 1, "a": 2}}}}', (None, STATUS_INVALID_SHAPE)),
    ],
)
def test_documented_cases(text: str, expected: tuple[Any, str]) -> None:
    assert parse_tool_calls(text) == expected


def test_parameters_key_reads_every_call_and_returns_arguments() -> None:
    text = '{"name": "a", "parameters": {"x": 1}} [{"name": "b", "parameters": {}}]'
    calls = [{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]
    assert parse_tool_calls(text, arguments_key="parameters") == (calls, STATUS_OK)
    assert parse_tool_calls(text) == (None, STATUS_INVALID_SHAPE)


def test_refusals_of_the_arguments() -> None:
    with pytest.raises(TypeError):
        parse_tool_calls(b"{}")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="arguments_key"):
        parse_tool_calls("{}", arguments_key="args")


@settings(max_examples=examples(100))
@given(ANY_TEXT)
@example(C * 20_000)
@example(("[" + C + "] x ") * 10_000)
@example("[" * 100_000)
@example("[1]" * 50_000)
@example(C + "[" * 100_000)
@example("\\" * 1000 + C)
def test_never_raises_and_statuses_are_consistent(text: str) -> None:
    calls, status = parse_tool_calls(text)
    _consistent(text, calls, status)


@settings(max_examples=examples(100))
@given(
    st.lists(st.tuples(SPANS, st.booleans(), st.integers(0, 11), PROSE), min_size=1, max_size=4),
    PROSE,
)
def test_a_sequence_of_spans_between_prose_is_read_in_order(
    spans: list[tuple[list[dict[str, Any]], bool, int, str]], before: str
) -> None:
    text = before + "".join(
        _span_text(calls, arr, style) + prose for calls, arr, style, prose in spans
    )
    expected = [call for calls, _, _, _ in spans for call in calls]
    assert parse_tool_calls(text) == (expected, STATUS_OK)


@settings(max_examples=examples(100))
@given(st.lists(SMALL_CALLS, min_size=1, max_size=4), st.integers(1, 3), PROSE)
def test_duplicates_are_kept_as_written(
    calls: list[dict[str, Any]], times: int, prose: str
) -> None:
    text = prose.join(json.dumps(call) for call in calls * times)
    assert parse_tool_calls(text) == (calls * times, STATUS_OK)


@settings(max_examples=examples(100))
@given(st.lists(SMALL_CALLS, min_size=1, max_size=3), st.integers(0, 2), st.integers(2, 4), PROSE)
def test_nested_arrays_are_invalid_shape(
    calls: list[dict[str, Any]], where: int, depth: int, before: str
) -> None:
    nested: Any = [calls[where % len(calls)]]
    for _ in range(depth - 1):
        nested = [nested]
    items = [*calls[: where % len(calls)], nested, *calls[where % len(calls) + 1 :]]
    text = before + json.dumps(items if len(calls) > 1 else nested)
    assert parse_tool_calls(text) == (None, STATUS_INVALID_SHAPE)


@settings(max_examples=examples(100))
@given(
    st.lists(SMALL_CALLS, min_size=1, max_size=3),
    st.sampled_from(["[1]", "{}", "[]", "[[]]"]),
    PROSE,
)
def test_a_span_that_is_not_calls_fails_the_whole_answer(
    calls: list[dict[str, Any]], bad: str, prose: str
) -> None:
    good = [json.dumps(call) for call in calls]
    for position in range(len(good) + 1):
        text = prose.join([*good[:position], bad, *good[position:]])
        assert parse_tool_calls(text) == (None, STATUS_INVALID_SHAPE)


# -- agreement with v1 -------------------------------------------------------------------------

TAILS = st.text(alphabet=st.characters(blacklist_characters="{["), max_size=40)


@settings(max_examples=examples(300))
@given(st.one_of(ANY_TEXT, STRUCTURAL, CALLS.map(json.dumps)), TAILS)
@example('{"name": "f", "arguments": {}}', " trailing")
@example('[{"name": "f", "arguments": {}}]', "")
@example('[{"name": "f", "arguments": {}}, {"name": "f", "arguments": {}}]', "")
@example("[1]", "")
@example("{ oops", "")
def test_with_one_span_v2_is_v1(head: str, tail: str) -> None:
    """On a text whose first span is followed by prose only, v2's status is v1's and its calls
    are ``[v1's call]``, but for an array of two or more calls (v1: ``invalid_shape``), which
    v2 reads as those calls."""
    text = head + tail
    call, status = parse_tool_call(text)
    end = _span_end(text)
    if end is not None and _first_opener(text[end:]) >= 0:
        return  # a second span: v2 reads on
    calls, status_v2 = parse_tool_calls(text)
    if status == STATUS_INVALID_SHAPE and status_v2 == STATUS_OK:
        assert calls is not None and len(calls) >= 2
        value = json.loads(text[_first_opener(text) : end])
        assert isinstance(value, list) and calls == value
        return
    assert status_v2 == status
    assert calls == (None if call is None else [call])


def _span_end(text: str) -> int | None:
    """Where the first span of ``text`` ends when it is JSON (None: no span, or not JSON)."""
    start = _first_opener(text)
    if start < 0:
        return None
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return int(end)


@settings(max_examples=examples(300))
@given(st.one_of(ANY_TEXT, st.builds(lambda a, b: a + b, ANY_TEXT, ANY_TEXT)))
@example(C + " and then { nothing")
@example(C + " [1]")
@example(f"[{C}, {C2}]")
def test_whenever_v2_reads_one_call_v1_reads_the_same(text: str) -> None:
    calls, status = parse_tool_calls(text)
    call, status_v1 = parse_tool_call(text)
    if status == STATUS_OK and calls is not None and len(calls) == 1:
        assert (call, status_v1) == (calls[0], STATUS_OK)
    if status_v1 in (STATUS_NO_JSON, STATUS_INVALID_JSON):  # v1's first span failed: v2's too
        assert status == status_v1
    if status_v1 == STATUS_OK and status == STATUS_OK:
        assert calls is not None and calls[0] == call


@settings(max_examples=examples(100))
@given(CALLS, st.booleans(), PROSE, PROSE)
def test_one_call_answers_equal_v1(
    call: dict[str, Any], wrap: bool, before: str, after: str
) -> None:
    text = before + _serialize(call, 1, wrap, ["", ""]) + after
    assert parse_tool_calls(text) == ([call], STATUS_OK)
    assert parse_tool_call(text) == (call, STATUS_OK)


@settings(max_examples=examples(100))
@given(st.text(alphabet='{}[]"ab \\', max_size=40), st.integers(0, 45))
def test_the_opener_search_is_v1s_rule_from_a_position(text: str, position: int) -> None:
    openers = _Openers(text)
    for pos in sorted({0, min(position, len(text)), len(text)}):
        found = _first_opener(text[pos:])
        assert openers.first(pos) == (found + pos if found >= 0 else -1)


# A naive reference of the v2 rules: a character loop per span, then json.loads.
def _reference(text: str) -> tuple[Any, str]:
    position, calls = 0, []
    while True:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            break
        start, stack, in_string, escaped, end = min(starts), [], False, False, None
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                escaped, in_string = (False, in_string) if escaped else (ch == "\\", ch != '"')
            elif ch == '"':
                in_string = True
            elif ch in "{[":
                stack.append("}" if ch == "{" else "]")
                if len(stack) > MAX_DEPTH:
                    return None, STATUS_INVALID_JSON
            elif ch in "}]":
                if stack.pop() != ch:
                    return None, STATUS_INVALID_JSON
                if not stack:
                    end = i + 1
                    break
        if end is None:
            return None, STATUS_INVALID_JSON
        repeated: list[bool] = []

        def hook(pairs: list[tuple[str, Any]], repeated: list[bool] = repeated) -> dict[str, Any]:
            if len({k for k, _ in pairs}) != len(pairs):
                repeated.append(True)
            return dict(pairs)

        def bad(_: str) -> Any:
            raise ValueError

        try:
            value = json.loads(text[start:end], object_pairs_hook=hook, parse_constant=bad)
        except (ValueError, RecursionError):
            return None, STATUS_INVALID_JSON
        if any(isinstance(v, float) and not math.isfinite(v) for v in _walk(value)):
            return None, STATUS_INVALID_JSON
        items = value if isinstance(value, list) else [value]
        shaped = [
            v
            for v in items
            if isinstance(v, dict)
            and sorted(v) == ["arguments", "name"]
            and isinstance(v["name"], str)
            and v["name"]
            and isinstance(v["arguments"], dict)
        ]
        if repeated or not items or len(shaped) != len(items):
            return None, STATUS_INVALID_SHAPE
        calls += [{"name": v["name"], "arguments": v["arguments"]} for v in shaped]
        position = end
    return (calls, STATUS_OK) if calls else (None, STATUS_NO_JSON)


NEAR_SEQUENCES = st.builds(
    lambda calls, cut, junk, prose: prose.join(json.dumps(c) for c in calls)[:cut] + junk,
    st.lists(SMALL_CALLS, min_size=1, max_size=3),
    st.integers(min_value=0, max_value=300),
    STRUCTURAL,
    st.text(max_size=6),
)


@settings(max_examples=examples(300))
@given(st.one_of(ANY_TEXT, NEAR_SEQUENCES))
@example('{"name": "f", "arguments": {}} [{"name": "g", "arguments": {"x": 1e999}}]')
@example('{"name": "f", "arguments": {}} "{ in a string" [1]')
def test_agrees_with_a_naive_reference(text: str) -> None:
    assert parse_tool_calls(text) == _reference(text)


# -- linear work (counted, never timed; the method of tests/hardening/test_fuzz.py Z04) ------

PARSER_FILES = {parse.__file__, parse_v2.__file__}


def parser_v2_work(text: str) -> int:
    """Python lines executed inside parse.py and parse_v2.py while v2 parses ``text``."""
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        count += event == "line"
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename in PARSER_FILES else None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        parse_tool_calls(text)
    finally:
        sys.settrace(previous)
    return count


LINEAR = {
    "calls between prose": lambda n: " and ".join([C] * n),
    "one array of calls": lambda n: "[" + ",".join([C] * n) + "]",
    "arrays of one call": lambda n: " ".join(f"[{C}]" for _ in range(n)),
    "calls then unclosed": lambda n: " ".join([C] * n) + ' {"a": [' * n,
    "calls then deep": lambda n: " ".join([C] * n) + "[" * n + "]" * n,
    "prose brackets last": lambda n: "x " * (40 * n) + C,
}


@pytest.mark.parametrize("family", sorted(LINEAR))
def test_parser_v2_work_is_linear(family: str) -> None:
    """Work per character does not grow from n = 50 to n = 800 (a factor 16 in length), and
    stays under 8 lines per character plus 120 (v1's bound)."""
    make = LINEAR[family]
    small, large = make(50), make(800)
    assert parser_v2_work(large) <= 8 * len(large) + 120
    assert parser_v2_work(large) / len(large) <= 1.5 * parser_v2_work(small) / len(small) + 0.1
