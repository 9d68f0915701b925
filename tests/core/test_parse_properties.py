"""Hypothesis properties of sommelier.parser.v1."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.parse import (
    MAX_DEPTH,
    STATUS_INVALID_JSON,
    STATUS_INVALID_SHAPE,
    STATUS_NO_JSON,
    STATUS_OK,
    STATUSES,
    call_shape_error,
    parse_tool_call,
)

# Texts rich in the characters the scanner cares about, so random inputs reach every branch.
STRUCTURAL = st.text(alphabet='{}[]"\\:, \n0123456789.-eEabnrtulfsNI', max_size=60)
ANY_TEXT = st.one_of(st.text(max_size=200), STRUCTURAL)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
def json_values(containers: int, leaves: int) -> st.SearchStrategy[Any]:
    """JSON values: scalars, lists and objects of at most ``containers`` items, ``leaves``
    scalars in all."""
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=containers),
            st.dictionaries(st.text(max_size=8), inner, max_size=containers),
        ),
        max_leaves=leaves,
    )


def calls(arguments: int, containers: int, leaves: int) -> st.SearchStrategy[dict[str, Any]]:
    """Calls ``{"name", "arguments"}`` of at most ``arguments`` arguments, each a JSON value
    of :func:`json_values`."""
    return st.fixed_dictionaries(
        {
            "name": st.text(min_size=1, max_size=20),
            "arguments": st.dictionaries(
                st.text(max_size=10), json_values(containers, leaves), max_size=arguments
            ),
        }
    )


JSON_VALUES = json_values(4, 12)
CALLS = calls(5, 4, 12)
# CALLS, smaller (3 arguments, containers of 3, 6 leaves; not 5, 4 and 12), where a call's
# content is not the point: texts cut short (NEAR_CALLS below, test_parse_v2's near sequences)
# and several calls an example (test_parse_v2's sequences). Each call's content is drawn in full
# where one call is read whole (the round trips). Full calls there were most of their time.
SMALL_CALLS = calls(3, 3, 6)
PROSE = st.text(alphabet=st.characters(blacklist_characters='{}[]"'), max_size=80)
JSON_WHITESPACE = st.text(alphabet=" \t\n\r", max_size=4)


def _assert_consistent(text: str, call: Any, status: str) -> None:
    """Each status agrees with its definition."""
    assert status in STATUSES
    assert (call is not None) == (status == STATUS_OK)
    assert (status == STATUS_NO_JSON) == ("{" not in text and "[" not in text)
    if status == STATUS_OK:
        assert isinstance(call, dict) and list(call) == ["name", "arguments"]
        assert isinstance(call["name"], str) and call["name"]
        assert isinstance(call["arguments"], dict)
        # An accepted call is always finite, strict JSON.
        json.dumps(call, allow_nan=False)


@settings(max_examples=examples(100))
@given(ANY_TEXT)
@example("[" * 100_000)
@example("{" * 100_000)
@example('{"a":' * 50_000)
@example("[" * 100_000 + "]" * 100_000)
@example('"' + "[" * 1000)
@example("\\" * 1000)
def test_never_raises_and_statuses_are_consistent(text: str) -> None:
    call, status = parse_tool_call(text)
    _assert_consistent(text, call, status)


@settings(max_examples=examples(100))
@given(st.integers(min_value=1, max_value=3 * MAX_DEPTH), st.sampled_from(["[]", "{}", "mix"]))
@example(MAX_DEPTH, "[]")
@example(MAX_DEPTH + 1, "[]")
def test_any_nesting_depth_is_handled(depth: int, kind: str) -> None:
    openers = "".join("[{"[i % 2] for i in range(depth)) if kind == "mix" else kind[0] * depth
    closers = "".join("]" if o == "[" else "}" for o in reversed(openers))
    text = openers + closers
    call, status = parse_tool_call(text)
    _assert_consistent(text, call, status)
    if depth > MAX_DEPTH:
        assert status == STATUS_INVALID_JSON
    elif kind == "[]" or depth == 1 or (kind == "mix" and depth == 2):
        assert status == STATUS_INVALID_SHAPE  # valid JSON ("[[]]", "{}", "[{}]"), wrong shape
    else:
        assert status == STATUS_INVALID_JSON  # an object needs string keys: "{{}}" is not JSON


def _serialize(call: dict[str, Any], style: int, wrap: bool, pads: list[str]) -> str:
    """Serialize a call in one of several whitespace styles, optionally array-wrapped."""
    separators = [(",", ":"), (", ", ": "), (" ,\n", " :\t")][style % 3]
    indent = [None, 2, "\t", None][style % 4]
    ascii_only = style % 2 == 0
    body = json.dumps(call, separators=separators, indent=indent, ensure_ascii=ascii_only)
    body = pads[0] + body + pads[1]
    return f"[{body}]" if wrap else body


@settings(max_examples=examples(100))
@given(
    CALLS,
    st.integers(min_value=0, max_value=11),
    st.booleans(),
    st.lists(JSON_WHITESPACE, min_size=2, max_size=2),
    PROSE,
    PROSE,
)
def test_valid_call_round_trips_through_prose(
    call: dict[str, Any], style: int, wrap: bool, pads: list[str], before: str, after: str
) -> None:
    text = before + _serialize(call, style, wrap, pads) + after
    assert parse_tool_call(text) == (call, STATUS_OK)


@settings(max_examples=examples(100))
@given(CALLS, st.booleans(), PROSE, st.text(max_size=80))
def test_anything_after_the_span_is_ignored(
    call: dict[str, Any], wrap: bool, before: str, after: str
) -> None:
    text = before + _serialize(call, 1, wrap, ["", ""]) + after
    assert parse_tool_call(text) == (call, STATUS_OK)


@settings(max_examples=examples(100))
@given(CALLS, st.sampled_from(["extra", "no_args", "empty_name", "two", "list_args"]))
def test_wrong_shapes_of_valid_json_are_invalid_shape(call: dict[str, Any], mutation: str) -> None:
    value: Any
    if mutation == "extra":
        value = {**call, "id": 1}
    elif mutation == "no_args":
        value = {"name": call["name"]}
    elif mutation == "empty_name":
        value = {"name": "", "arguments": call["arguments"]}
    elif mutation == "two":
        value = [call, call]
    else:
        value = {"name": call["name"], "arguments": list(call["arguments"].values())}
    assert parse_tool_call(json.dumps(value)) == (None, STATUS_INVALID_SHAPE)


def _dump_repeating(value: Any, target: int, seen: list[int]) -> str:
    """JSON text of ``value`` in which the ``target``-th non-empty object (pre-order, cyclic)
    writes its first key twice."""
    if isinstance(value, dict):
        items = [json.dumps(k) + ":" + _dump_repeating(v, target, seen) for k, v in value.items()]
        if items:
            seen[0] += 1
            if seen[0] - 1 == target:
                items.append(items[0])
        return "{" + ",".join(items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_dump_repeating(v, target, seen) for v in value) + "]"
    return json.dumps(value)


@settings(max_examples=examples(100))
@given(CALLS, st.integers(min_value=0, max_value=20), st.booleans(), PROSE)
def test_a_repeated_key_in_any_object_is_invalid_shape(
    call: dict[str, Any], which: int, wrap: bool, before: str
) -> None:
    objects = sum(1 for v in _walk(call) if isinstance(v, dict) and v)
    text = _dump_repeating([call] if wrap else call, which % objects, [0])
    assert parse_tool_call(before + text) == (None, STATUS_INVALID_SHAPE)


# A deliberately naive reference: a character loop with an explicit stack, then json.loads.
def _reference(text: str) -> tuple[Any, str]:
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None, STATUS_NO_JSON
    stack: list[str] = []
    in_string = escaped = False
    end = None
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
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
    repeated = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
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
    if repeated:
        return None, STATUS_INVALID_SHAPE
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if (
        isinstance(value, dict)
        and sorted(value) == ["arguments", "name"]
        and isinstance(value["name"], str)
        and value["name"] != ""
        and isinstance(value["arguments"], dict)
    ):
        return {"name": value["name"], "arguments": value["arguments"]}, STATUS_OK
    return None, STATUS_INVALID_SHAPE


def _walk(value: Any) -> list[Any]:
    out, todo = [], [value]
    while todo:
        item = todo.pop()
        out.append(item)
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return out


NEAR_CALLS = st.builds(
    lambda call, cut, junk, style, prose: (
        prose + _serialize(call, style, False, ["", ""])[:cut] + junk
    ),
    SMALL_CALLS,
    st.integers(min_value=0, max_value=200),
    STRUCTURAL,
    st.integers(min_value=0, max_value=11),
    st.text(max_size=10),
)


@settings(max_examples=examples(300))
@given(st.one_of(ANY_TEXT, NEAR_CALLS))
@example('{"a": "\\"}')
@example('{"name": "f", "arguments": {"x": 1e999}}')
@example('[{"name": "f", "arguments": {}}, ]')
def test_agrees_with_a_naive_reference_scanner(text: str) -> None:
    assert parse_tool_call(text) == _reference(text)


CALL_LIKE = st.dictionaries(
    st.sampled_from(["name", "arguments", "id", "type"]),
    st.one_of(
        st.text(max_size=3), st.dictionaries(st.text(max_size=3), SCALARS, max_size=2), SCALARS
    ),
    max_size=4,
)


@settings(max_examples=examples(400), deadline=None)
@given(CALL_LIKE)
def test_the_parser_accepts_exactly_what_the_call_shape_rule_accepts(value: dict) -> None:
    """``call_shape_error`` is the parser's rule 4: the split loader, ``sommelier format`` and
    the metrics use it too, so no reader accepts a call the parser would refuse."""
    _, status = parse_tool_call(json.dumps(value))
    assert (status == STATUS_OK) == (call_shape_error(value) is None)
    _, status = parse_tool_call(json.dumps([value]))
    assert (status == STATUS_OK) == (call_shape_error(value) is None)
