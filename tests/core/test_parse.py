"""Unit tests for sommelier.parser.v1: every status and each edge decision of DESIGN.md."""

from __future__ import annotations

import pytest

from pytest_sommelier.core.parse import (
    MAX_DEPTH,
    MAX_INT_DIGITS,
    PARSER_VERSION,
    STATUS_INVALID_JSON,
    STATUS_INVALID_SHAPE,
    STATUS_NO_JSON,
    STATUS_OK,
    STATUSES,
    parse_tool_call,
)

CALL = {"name": "get_weather", "arguments": {"city": "Paris"}}
CALL_TEXT = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


def test_public_constants() -> None:
    assert PARSER_VERSION == "sommelier.parser.v1"
    assert STATUSES == ("ok", "no_json", "invalid_json", "invalid_shape")
    assert (STATUS_OK, STATUS_NO_JSON, STATUS_INVALID_JSON, STATUS_INVALID_SHAPE) == STATUSES


@pytest.mark.parametrize(
    "text",
    [
        CALL_TEXT,
        f"[{CALL_TEXT}]",
        f"Sure! Here is the call:\n{CALL_TEXT}\nLet me know if you need more.",
        f"  [ \n {CALL_TEXT} \n ]  trailing prose }} ] with stray closers",
        f"```json\n{CALL_TEXT}\n```",
        '{"arguments": {"city": "Paris"}, "name": "get_weather"}',
    ],
)
def test_ok_forms(text: str) -> None:
    assert parse_tool_call(text) == (CALL, STATUS_OK)


def test_ok_returns_plain_object_form_for_array_wrapper() -> None:
    call, status = parse_tool_call(f"[{CALL_TEXT}]")
    assert status == STATUS_OK
    assert isinstance(call, dict)
    assert list(call) == ["name", "arguments"]


def test_strings_with_brackets_and_escapes_are_skipped() -> None:
    text = r'{"name": "echo", "arguments": {"s": "a } ] { [ \" \\", "t": "\\"}} tail'
    call, status = parse_tool_call(text)
    assert status == STATUS_OK
    assert call == {"name": "echo", "arguments": {"s": 'a } ] { [ " \\', "t": "\\"}}


def test_unicode_escapes_and_non_ascii_text() -> None:
    text = '{"name": "translate", "arguments": {"q": "\\u05e9\\u05dc\\u05d5\\u05dd", "r": "שלום"}}'
    call, status = parse_tool_call(text)
    assert status == STATUS_OK
    assert call == {"name": "translate", "arguments": {"q": "שלום", "r": "שלום"}}


@pytest.mark.parametrize("text", ["", "no call here", "I cannot help with that.", "a } b ] c"])
def test_no_json(text: str) -> None:
    assert parse_tool_call(text) == (None, STATUS_NO_JSON)


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"name": "f", "arguments": {}',  # never balances
        '{"name": "f", "arguments": {]}',  # wrong closing bracket
        "[}",
        '{"name": "f, "arguments": {}}',  # a quote swallows the rest: never balances
        '{"name": "f", "arguments": {"a": "unterminated\\"}}',
        '{"name": "f", "arguments": {"a": 1,}}',  # trailing comma: balances but not JSON
        "{'name': 'f', 'arguments': {}}",  # single quotes
        '{name: "f", arguments: {}}',
    ],
)
def test_invalid_json(text: str) -> None:
    assert parse_tool_call(text) == (None, STATUS_INVALID_JSON)


def test_first_candidate_only_no_second_hunt() -> None:
    # The first bracket opens a span that never balances: the later valid call is not used.
    assert parse_tool_call(f"{{ oops {CALL_TEXT}") == (None, STATUS_INVALID_JSON)
    # The first span balances but is not JSON: still no second hunt.
    assert parse_tool_call(f"see [note] then {CALL_TEXT}") == (None, STATUS_INVALID_JSON)
    # The first span is JSON of the wrong shape: invalid_shape, not the later call.
    assert parse_tool_call(f"[1, 2] then {CALL_TEXT}") == (None, STATUS_INVALID_SHAPE)


def test_text_after_a_balanced_span_is_ignored() -> None:
    assert parse_tool_call(f"{CALL_TEXT} {{ unbalanced [ tail") == (CALL, STATUS_OK)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_invalid_json(literal: str) -> None:
    text = f'{{"name": "f", "arguments": {{"x": {literal}}}}}'
    assert parse_tool_call(text) == (None, STATUS_INVALID_JSON)


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_numbers_overflowing_to_infinity_are_invalid_json(number: str) -> None:
    text = f'{{"name": "f", "arguments": {{"x": {number}}}}}'
    assert parse_tool_call(text) == (None, STATUS_INVALID_JSON)


def test_integer_digit_limit() -> None:
    longest = "9" * MAX_INT_DIGITS
    call, status = parse_tool_call(f'{{"name": "f", "arguments": {{"x": -{longest}}}}}')
    assert status == STATUS_OK and call is not None and call["arguments"]["x"] == -int(longest)
    too_long = f'{{"name": "f", "arguments": {{"x": {longest}9}}}}'
    assert parse_tool_call(too_long) == (None, STATUS_INVALID_JSON)


def test_raw_control_character_in_string_is_invalid_json() -> None:
    assert parse_tool_call('{"name": "f", "arguments": {"x": "a\tb"}}') == (
        None,
        STATUS_INVALID_JSON,
    )


def _nested(kind: str, depth: int) -> str:
    """Valid JSON nesting ``depth`` containers: objects, arrays, or the two alternating."""
    if depth == 0:
        return "1"
    use_object = kind == "object" or (kind == "mix" and depth % 2 == 0)
    inner = _nested(kind, depth - 1)
    return f'{{"k": {inner}}}' if use_object else f"[{inner}]"


@pytest.mark.parametrize("kind", ["object", "array", "mix"])
def test_nesting_limit_is_exact_for_valid_json(kind: str) -> None:
    # The call object and its arguments are levels 1 and 2.
    at_limit = f'{{"name": "f", "arguments": {{"x": {_nested(kind, MAX_DEPTH - 2)}}}}}'
    call, status = parse_tool_call(at_limit)
    assert status == STATUS_OK and call is not None
    over = f'{{"name": "f", "arguments": {{"x": {_nested(kind, MAX_DEPTH - 1)}}}}}'
    assert parse_tool_call(over) == (None, STATUS_INVALID_JSON)
    wrapped = f'[{{"name": "f", "arguments": {{"x": {_nested(kind, MAX_DEPTH - 3)}}}}}]'
    assert parse_tool_call(wrapped)[1] == STATUS_OK
    assert parse_tool_call("[" + over + "]") == (None, STATUS_INVALID_JSON)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_too_deep_is_invalid_json_not_a_crash(depth: int) -> None:
    assert parse_tool_call("[" * depth + "]" * depth) == (None, STATUS_INVALID_JSON)
    assert parse_tool_call("[" * depth) == (None, STATUS_INVALID_JSON)


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "f", "arguments": {"a": 1, "a": 2}}',  # repeated key in arguments
        '{"name": "f", "arguments": {"a": {"b": 1, "b": 1}}}',  # nested repeated key
        '{"name": "f", "name": "f", "arguments": {}}',  # repeated top-level key
        '[{"name": "f", "arguments": {"l": [{"k": 1, "k": 2}]}}]',  # inside a list
    ],
)
def test_repeated_key_anywhere_is_invalid_shape(text: str) -> None:
    assert parse_tool_call(text) == (None, STATUS_INVALID_SHAPE)


def test_repeated_key_in_a_span_that_is_not_json_is_invalid_json() -> None:
    assert parse_tool_call('{"a": 1, "a": 2,}') == (None, STATUS_INVALID_JSON)


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "{}",
        '{"name": "f"}',
        '{"arguments": {}}',
        '{"name": "f", "arguments": {}, "id": 1}',  # extra key
        '{"name": "", "arguments": {}}',  # empty name
        '{"name": 3, "arguments": {}}',
        '{"name": null, "arguments": {}}',
        '{"name": "f", "arguments": "{}"}',  # arguments as a string
        '{"name": "f", "arguments": []}',
        '{"name": "f", "arguments": null}',
        f"[{CALL_TEXT}, {CALL_TEXT}]",  # multi-call
        f"[[{CALL_TEXT}]]",  # doubly wrapped
        "[1]",
        '["get_weather"]',
        '{"function": {"name": "f", "arguments": {}}}',
    ],
)
def test_invalid_shape(text: str) -> None:
    assert parse_tool_call(text) == (None, STATUS_INVALID_SHAPE)


def test_whitespace_only_name_is_a_non_empty_string() -> None:
    assert parse_tool_call('{"name": " ", "arguments": {}}') == (
        {"name": " ", "arguments": {}},
        STATUS_OK,
    )


@pytest.mark.parametrize("value", [None, b'{"name": "f", "arguments": {}}', 3, ["{}"]])
def test_non_str_input_is_a_type_error(value: object) -> None:
    with pytest.raises(TypeError):
        parse_tool_call(value)  # type: ignore[arg-type]


def test_large_output_is_parsed() -> None:
    padding = "lorem ipsum " * 100_000
    assert parse_tool_call(padding + CALL_TEXT + padding) == (CALL, STATUS_OK)
    long_string = "x" * 1_000_000
    call, status = parse_tool_call(f'{{"name": "f", "arguments": {{"s": "{long_string}"}}}}')
    assert status == STATUS_OK and call is not None and call["arguments"]["s"] == long_string
    assert parse_tool_call('{"a": "' + "y" * 1_000_000) == (None, STATUS_INVALID_JSON)
