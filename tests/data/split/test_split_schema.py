"""The compiled check of the formatted-example schema answers as jsonschema does.

``data.split.schema.compiled_check`` turns the schema into one function of plain comparisons
(the split loader runs it on every row; jsonschema runs only on a row it refuses, to name the
violation). It must say valid exactly when jsonschema finds no error: checked here on valid
rows, on rows with one field replaced by a value of another JSON type, removed or added, and
on nested parts (messages, tools, acceptable_arguments) changed the same way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import make_row

from pytest_sommelier.data.split.schema import (
    EXAMPLE_SCHEMA_FILE,
    compiled_check,
    schema_validator,
    violation,
)

CHECK = compiled_check(EXAMPLE_SCHEMA_FILE)
VALIDATOR = schema_validator(EXAMPLE_SCHEMA_FILE)

TOOL = {
    "type": "function",
    "function": {"name": "get", "description": "d", "parameters": {"type": "object"}},
}
ACCEPTABLE = {
    "language": "python",
    "required": ["city"],
    "arguments": {"city": {"type": "string", "values": ["Paris", ""]}},
}
SHA = "0" * 64

# small JSON values of every type, and strings near the schema's rules (empty, the digest
# pattern with a trailing newline, upper-case hex, the const and enum values)
SCALARS = st.sampled_from(
    [None, True, False, 0, 1, -2.5, "", "x", SHA, SHA + "\n", "A" * 64, "function", "python",
     "java", "sommelier.formatted_example.v2", "role"]
)  # fmt: skip
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(SCALARS.filter(
        lambda v: isinstance(v, str)), inner, max_size=2),  # type: ignore[arg-type]
    max_leaves=4,
)  # fmt: skip


def base_row() -> dict[str, Any]:
    return make_row("en-1", "en", tools=[TOOL], acceptable_arguments=ACCEPTABLE, cluster_id="c")


def paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a row (keys and indices), the top included."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*path, index))
    return found


def edited(row: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> Any:
    """``row`` (a copy) with the value at ``path`` replaced, removed, or given an extra key."""
    row = json.loads(json.dumps(row))
    if not path:
        return value if how == "replace" else row
    parent = row
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "replace":
        parent[last] = value
    elif how == "remove":
        del parent[last]
    elif isinstance(parent[last], dict):
        parent[last]["extra_key"] = value
    else:
        parent[last] = value
    return row


ROW_PATHS = paths(base_row())


def agree(instance: Any) -> None:
    assert CHECK is not None
    assert CHECK(instance) is VALIDATOR.is_valid(instance), instance
    assert (violation(EXAMPLE_SCHEMA_FILE, instance) is None) is VALIDATOR.is_valid(instance)


def test_the_formatted_example_schema_compiles() -> None:
    assert CHECK is not None
    assert CHECK(base_row()) is True
    assert CHECK(make_row("he-1", "he", "en-1")) is True


@pytest.mark.parametrize("path", ROW_PATHS, ids=lambda p: ".".join(map(str, p)) or "top")
@pytest.mark.parametrize("how", ["remove", "extra"])
def test_removed_and_added_fields(path: tuple[Any, ...], how: str) -> None:
    agree(edited(base_row(), path, how, "x"))


# 300 examples: each draws one path of about 40 and one value of about 60 shapes; the check
# is pure and fast, so the budget goes to covering the pairs (shrinking is cut short, since a
# failure names its instance in full)
@settings(max_examples=examples(300), suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(ROW_PATHS), value=VALUES)
def test_any_field_replaced_by_any_json_value(path: tuple[Any, ...], value: Any) -> None:
    agree(edited(base_row(), path, "replace", value))


def test_a_schema_outside_the_compiled_keywords_is_left_to_jsonschema(tmp_path: Path) -> None:
    for extra in ({"maxLength": 3}, {"$ref": "#"}, {"type": "integer"}, {"const": 1}):
        path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.json"
        body = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
        path.write_text(json.dumps({**body, "properties": {"a": extra}}), encoding="utf-8")
        assert compiled_check(path) is None


def test_the_digest_pattern_is_jsonschemas() -> None:
    for text in (SHA, SHA + "\n", SHA + "a", "g" * 64, SHA.upper()):
        agree(edited(base_row(), ("prompt_sha256",), "replace", text))
        assert (CHECK is not None) and CHECK(
            edited(base_row(), ("prompt_sha256",), "replace", text)
        ) is bool(re.search(r"^[0-9a-f]{64}$(?!\n)", text))


# ---------------------------------------------------------------- parameters_error, remembered

PARAMETER_SCHEMAS = st.recursive(
    st.sampled_from(
        [None, True, 0, 1, 1.0, "", "object", "string", "#", "#/$defs/a", "#/nope",
         "https://json-schema.org/draft/2020-12/schema", "http://x/y"]
    ),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(
        st.sampled_from(["type", "properties", "required", "items", "$ref", "$defs", "a",
                         "$schema", "$id", "minimum", "enum"]), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@settings(max_examples=examples(150))
@given(PARAMETER_SCHEMAS)
def test_a_remembered_parameters_answer_is_the_fresh_one(parameters: Any) -> None:
    """The per-process memory of ``parameters_error`` (keyed by the JSON text) answers as the
    check itself: first call, second call (remembered) and the unremembered check agree."""
    from pytest_sommelier.data.split import schema

    fresh = schema._parameters_error(parameters)
    assert schema.parameters_error(parameters) == fresh
    assert schema.parameters_error(json.loads(json.dumps(parameters))) == fresh


def test_values_json_text_cannot_tell_apart_are_never_remembered() -> None:
    """A tuple dumps as the list it is not (jsonschema's ``array`` is a list only): the
    remembered answer for the list must not answer for the tuple."""
    from pytest_sommelier.data.split import schema

    listed = {"type": "object", "required": ["a"]}
    assert schema.parameters_error(listed) is None  # remembered under its JSON text
    tupled = {"type": "object", "required": ("a",)}
    assert json.dumps(tupled) == json.dumps(listed)
    assert schema.parameters_error(tupled) is not None
    assert schema.parameters_error(tupled) == schema._parameters_error(tupled)
