"""``sommelier import xlam``: Salesforce xLAM / APIGen function-calling rows.

A row is ``{"query": str, "tools": str, "answers": str}`` where ``tools`` and ``answers`` are JSON
strings (or already decoded lists): ``tools`` a list of ``{name, description, parameters}`` and
``answers`` a list of calls ``{name, arguments}``. ``no_call``: no answer; ``several_calls``: more
than one (kept, every call read, under ``--parser v2``); then the shared checks
(``common.check_candidate``).

xLAM writes a tool's parameters as ``{arg: {type, description, default?}}``; they become JSON
Schema by these rules (:func:`parameters_schema`):

1. ``parameters`` whose ``type`` is a string is JSON Schema already and is kept as is;
2. each argument becomes ``properties[arg]``: its ``type`` converted (below), its
   ``description`` and ``default`` kept as those keywords (a default is an annotation: it
   validates nothing);
3. ``required`` lists, in order, the arguments whose type does not say ``optional`` and that
   have no ``default``;
4. a type string is a type, optionally followed by comma-separated ``optional`` /
   ``default=...`` remarks (either makes the argument optional). Types, case-insensitive:
   ``str``/``string``/``text`` -> ``string``; ``int``/``integer``/``long`` -> ``integer``;
   ``float``/``number``/``double``/``decimal`` -> ``number``; ``bool``/``boolean`` ->
   ``boolean``; ``list``/``array``/``sequence``/``set``/``tuple``/``iterable`` -> ``array``
   (``List[X]`` adds ``items`` of X; a tuple of several types adds none); ``dict``/``object``/
   ``mapping``/``json`` -> ``object``; ``none``/``nonetype``/``null`` -> ``null``; ``any`` -> no
   type constraint; ``Optional[X]`` -> X or ``null``, and optional; ``Union[A, B]``, ``A | B``
   and ``A or B`` -> ``{"type": [A, B]}`` when every member is a plain type, else ``anyOf``;
5. any other type name (``Callable``, ``datetime``, ...) skips the row as ``unknown_type``:
   no guess is made.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import Any

from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT
from pytest_sommelier.data.prepare.importers.common import (
    Candidate,
    Importer,
    Skip,
    call_from_spec,
    decode_text,
    malformed,
    need,
    several_calls,
    type_name,
    wrong_type,
)

SIMPLE_TYPES: dict[str, str | None] = {
    "str": "string",
    "string": "string",
    "text": "string",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "number",
    "number": "number",
    "double": "number",
    "decimal": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "sequence": "array",
    "set": "array",
    "tuple": "array",
    "iterable": "array",
    "dict": "object",
    "object": "object",
    "mapping": "object",
    "json": "object",
    "none": "null",
    "nonetype": "null",
    "null": "null",
    "any": None,
}
ARRAY_GENERICS = frozenset({"list", "array", "sequence", "set", "iterable"})
_REMARK = re.compile(r"^\s*(optional|default\b)", re.IGNORECASE)


class UnknownType(ValueError):
    """A type string outside the documented rules (the row is skipped as ``unknown_type``)."""


def _split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


TYPE_DEPTH_LIMIT = FIELD_DEPTH_LIMIT // 2
"""The deepest generic type read (``List[List[...]]``): each level is two levels of schema."""


def type_schema(text: str) -> tuple[dict[str, Any], bool]:
    """``(schema, optional)`` of one xLAM type string (rule 4); UnknownType otherwise (a type
    whose brackets nest deeper than ``TYPE_DEPTH_LIMIT`` too, before any recursion)."""
    depth = max(accumulate(1 if c == "[" else -1 for c in text if c in "[]"), default=0)
    if depth > TYPE_DEPTH_LIMIT:
        raise UnknownType(f"type {text[:40]!r}...: nested deeper than {TYPE_DEPTH_LIMIT} levels")
    head, *remarks = _split_top(text)
    optional = False
    for remark in remarks:
        if not _REMARK.match(remark):
            raise UnknownType(f"type {text!r}: cannot read the remark {remark.strip()!r}")
        optional = True
    schema, nullable = _parse_union(head.strip(), text)
    return schema, optional or nullable


def _parse_union(text: str, whole: str) -> tuple[dict[str, Any], bool]:
    members = [part for part in re.split(r"\s+or\s+", text) if part]
    members = [piece for member in members for piece in _split_top(member, "|")]
    if len(members) > 1:
        return _union([_parse(member.strip(), whole)[0] for member in members]), False
    return _parse(text, whole)


def _union(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    if any(not schema for schema in schemas):
        return {}
    if all(set(schema) == {"type"} and isinstance(schema["type"], str) for schema in schemas):
        return {"type": list(dict.fromkeys(schema["type"] for schema in schemas))}
    return {"anyOf": schemas}


def _parse(text: str, whole: str) -> tuple[dict[str, Any], bool]:
    """One type (maybe generic): ``(schema, optional)``."""
    match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(?:\[(.*)\])?\s*", text, re.DOTALL)
    if match is None:
        raise UnknownType(f"type {whole!r}: cannot read {text.strip()!r}")
    name = match.group(1).split(".")[-1].lower()
    arguments = [a.strip() for a in _split_top(match.group(2))] if match.group(2) else []
    if name == "optional" and len(arguments) == 1:
        inner, _ = _parse_union(arguments[0], whole)
        return _union([inner, {"type": "null"}]), True
    if name == "union" and arguments:
        return _union([_parse_union(a, whole)[0] for a in arguments]), False
    if name not in SIMPLE_TYPES:
        raise UnknownType(f"type {whole!r}: unknown type name {match.group(1)!r}")
    mapped = SIMPLE_TYPES[name]
    schema: dict[str, Any] = {} if mapped is None else {"type": mapped}
    if name in ARRAY_GENERICS and len(arguments) == 1:
        items, _ = _parse_union(arguments[0], whole)
        if items:
            schema["items"] = items
    elif arguments and mapped not in ("array", "object"):
        raise UnknownType(f"type {whole!r}: {match.group(1)!r} takes no parameters")
    return schema, False


def parameters_schema(parameters: Any, where: str, name: str) -> dict[str, Any] | Skip:
    """xLAM parameters -> JSON Schema (rules 1-5 of the module docstring)."""
    if not isinstance(parameters, dict):
        raise wrong_type(where, name, parameters, "an object")
    if isinstance(parameters.get("type"), str):
        return parameters
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument, spec in parameters.items():
        field = f"{name}.{argument}"
        if not isinstance(spec, dict):
            raise wrong_type(where, field, spec, "an object")
        declared = spec.get("type")
        if not isinstance(declared, str):
            raise malformed(where, f"{field}.type", "must be a type name string")
        try:
            schema, optional = type_schema(declared)
        except UnknownType as exc:
            return Skip("unknown_type", f"{field}: {exc}")
        description = spec.get("description")
        if isinstance(description, str):
            schema["description"] = description
        if "default" in spec:
            schema["default"] = spec["default"]
            optional = True
        properties[argument] = schema
        if not optional:
            required.append(argument)
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    return result


def _list_field(record: dict[str, Any], name: str, where: str) -> list[Any]:
    value = need(record, name, where, (list, str))
    if isinstance(value, str):
        value = decode_text(value, where, name)
    if not isinstance(value, list):
        raise malformed(where, name, f"must hold a JSON array, got {type_name(value)}")
    return value


def convert(record: dict[str, Any], where: str) -> Candidate | Skip:
    """One xLAM row -> Candidate, or the Skip that says why the method cannot score it."""
    query = need(record, "query", where, str)
    raw_tools = _list_field(record, "tools", where)
    answers = _list_field(record, "answers", where)
    tools = []
    for index, spec in enumerate(raw_tools):
        field = f"tools[{index}]"
        if not isinstance(spec, dict):
            raise wrong_type(where, field, spec, "an object")
        tool_name = spec.get("name")
        if not isinstance(tool_name, str) or not tool_name.strip():
            raise malformed(where, f"{field}.name", "must be a non-empty string")
        tool: dict[str, Any] = {"name": tool_name}
        if isinstance(spec.get("description"), str):
            tool["description"] = spec["description"]
        schema = parameters_schema(spec.get("parameters") or {}, where, f"{field}.parameters")
        if isinstance(schema, Skip):
            return schema
        tool["parameters"] = schema
        tools.append(tool)
    if not answers:  # xLAM's irrelevance rows: no offered tool fits (an abstention candidate)
        return Candidate(query=query, tools=tools, gold_call=None, expect="no_call")
    if len(answers) > 1:

        def read() -> Candidate:
            calls = [call_from_spec(a, where, f"answers[{i}]") for i, a in enumerate(answers)]
            return Candidate(query=query, tools=tools, gold_call=calls[0], gold_calls=calls)

        return several_calls(f"answers holds {len(answers)} calls", read)
    gold = call_from_spec(answers[0], where, "answers[0]")
    return Candidate(query=query, tools=tools, gold_call=gold)


IMPORTER = Importer(
    "Salesforce xLAM / APIGen rows {query, tools, answers} (JSON strings); xLAM "
    "parameter types become JSON Schema",
    convert,
)
"""This format's entry in the importer registry (``pytest_sommelier.registry``)."""
