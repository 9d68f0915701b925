"""Recognise prepared rows written in a neighbouring shape, and say how to fix them.

``sommelier format`` users bring rows shaped the way their training data is: OpenAI tool
wrappers, arguments as JSON strings, Python type names in schemas, upper-case language tags,
whole chat rows. :func:`neighbour_shape` recognises those shapes and returns the one field to
name, what is wrong and the fix; the prepared-row validation turns that into its one-line
error. It returns None for anything else, and the validation's own rules apply.

Invariant kept: a row :func:`neighbour_shape` flags is one the prepared-row rules refuse anyway
(it only chooses a better message), so adding a shape here never changes what is accepted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

PYTHON_TYPES: dict[str, str] = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
    "tuple": "array",
    "NoneType": "null",
}
"""Python type names seen in tool schemas -> the JSON Schema type they mean."""

CHAT_ROW_KEYS: dict[str, str] = {
    "messages": "openai-chat",
    "conversations": "hermes",
    "answers": "xlam",
}
"""A top-level key of a training-data row -> the importer that converts such rows."""

Shape = tuple[str, str, str]
"""``(field, message, hint)``: the one field to name, what is wrong, and the fix."""

_SCHEMA_CHILDREN = ("items", "additionalProperties", "not", "if", "then", "else")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def neighbour_shape(row: dict[str, Any], language_pattern: re.Pattern[str]) -> Shape | None:
    """``(field, message, hint)`` for the first neighbouring shape in ``row``, else None."""
    for finder in (_chat_row, _language, _tools, _gold):
        found = finder(row, language_pattern)
        if found is not None:
            return found
    return None


def _chat_row(row: dict[str, Any], _: re.Pattern[str]) -> Shape | None:
    for key, importer in CHAT_ROW_KEYS.items():
        if key in row and "gold_call" not in row:
            return (
                key,
                f"this is a {importer} training row, not a prepared example",
                f"convert the file with sommelier import {importer}",
            )
    return None


def _language(row: dict[str, Any], pattern: re.Pattern[str]) -> Shape | None:
    value = row.get("language")
    if not isinstance(value, str) or pattern.match(value):
        return None
    primary, dash, rest = value.partition("-")
    fixed = primary.lower() + dash + rest
    if fixed != value and pattern.match(fixed):
        return (
            "language",
            f"{value!r} is not a lower-case language tag",
            f"language tags start lower-case: write {fixed!r}",
        )
    return None


def _tools(row: dict[str, Any], _: re.Pattern[str]) -> Shape | None:
    tools = row.get("tools")
    if isinstance(tools, str):
        return (
            "tools",
            "is a JSON string, not a list",
            "parse the string (xLAM rows: use sommelier import xlam)",
        )
    if not isinstance(tools, list):
        return None
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            continue
        if isinstance(tool.get("function"), dict):
            return (
                f"tools[{index}].function",
                "is an OpenAI tool wrapper",
                'unwrap {"type": "function", "function": ...} or use sommelier import openai-chat',
            )
        parameters = tool.get("parameters")
        if isinstance(parameters, str):
            return (
                f"tools[{index}].parameters",
                "is a JSON string, not an object",
                "parse the string",
            )
        for path, name in _type_names(parameters, f"tools[{index}].parameters"):
            if name in PYTHON_TYPES:
                return (
                    path,
                    f"{name!r} is a Python type name",
                    f"JSON Schema says {PYTHON_TYPES[name]}",
                )
    return None


def _type_names(schema: Any, path: str) -> Iterator[tuple[str, str]]:
    """``(path of the type keyword, type name)`` for every string ``type`` in ``schema``."""
    if not isinstance(schema, dict):
        return
    names = schema.get("type")
    for name in names if isinstance(names, list) else [names]:
        if isinstance(name, str):
            yield f"{path}.type", name
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            yield from _type_names(sub, f"{path}.properties.{key}")
    for key in _SCHEMA_CHILDREN:
        yield from _type_names(schema.get(key), f"{path}.{key}")
    for key in _SCHEMA_LISTS:
        subs = schema.get(key)
        if isinstance(subs, list):
            for index, sub in enumerate(subs):
                yield from _type_names(sub, f"{path}.{key}[{index}]")


def _gold(row: dict[str, Any], _: re.Pattern[str]) -> Shape | None:
    gold = row.get("gold_call")
    if not isinstance(gold, dict):
        return None
    if isinstance(gold.get("function"), dict):
        return (
            "gold_call.function",
            "is an OpenAI tool-call wrapper",
            'unwrap {"type": "function", "function": {"name", "arguments"}} into '
            "gold_call, or use sommelier import openai-chat",
        )
    if "parameters" in gold and "arguments" not in gold:
        return (
            "gold_call.parameters",
            "names the arguments 'parameters'",
            "a prepared gold call is {name, arguments}; sommelier format --arguments-key "
            "parameters sets the key the template writes",
        )
    arguments = gold.get("arguments")
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except ValueError:
            return None
        if isinstance(decoded, dict):
            return (
                "gold_call.arguments",
                "is a JSON string holding an object",
                "parse the string: write the object itself",
            )
    return None
