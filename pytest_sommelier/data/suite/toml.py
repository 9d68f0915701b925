"""Read a suite file: TOML parsing and the structural (JSON Schema) check, worded for TOML.

Invariant kept: :func:`read_toml` returns the parsed document or raises one ``InputError`` naming
the file (and line, for a syntax error); :func:`validate_structure` raises one ``InputError``
naming the TOML table and key of the most useful schema violation
(``schemas/suite.schema.json``: ``additionalProperties`` is false everywhere, so an unknown key
is an error naming the key and its table).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_sommelier.core.misses import json_kind
from pytest_sommelier.data.split.schema import (
    MISSING_KEY,
    SUITE_SCHEMA_FILE,
    UNKNOWN_KEYS,
    WRONG_TYPE,
    Violation,
    json_path_text,
    violation,
)
from pytest_sommelier.errors import InputError


def read_toml(path: Path, label: str) -> dict[str, Any]:
    """Parse the file as TOML (after a leading UTF-8 byte-order mark, which is accepted); a
    missing file, bad UTF-8, bad syntax, nesting too deep to read or a value Python cannot hold
    (an integer over 4300 digits) is an ``InputError``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            "SOM-SUITE-MISSING", "suite file not found", "check the path", where=label
        ) from None
    except OSError as exc:
        raise InputError(
            "SOM-SUITE-UNREADABLE",
            f"cannot read suite file: {exc.strerror}",
            "give a readable sommelier.toml file",
            where=label,
        ) from None
    try:
        # a UTF-8 byte-order mark (what some Windows editors write first) is not TOML: dropped
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            "SOM-SUITE-ENCODING",
            "not valid UTF-8",
            "save the file as UTF-8",
            where=f"{label}:{line}",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, detail = _toml_error_position(str(exc), text)
        raise InputError(
            "SOM-SUITE-TOML",
            f"TOML syntax error: {detail}",
            "fix the TOML syntax at that line",
            where=f"{label}:{line}",
        ) from None
    except RecursionError:
        raise InputError(
            "SOM-SUITE-TOML",
            "TOML arrays or tables are nested too deeply to read",
            "a suite file needs no more than a few levels of nesting",
            where=label,
        ) from None
    except ValueError as exc:  # tomllib lets int()'s digit limit through, for one
        raise InputError(
            "SOM-SUITE-TOML",
            f"TOML value cannot be read: {_short(str(exc), 120)}",
            "fix the value (integers are limited to 4300 digits)",
            where=label,
        ) from None


def _toml_error_position(message: str, text: str) -> tuple[int, str]:
    """Line number and message of a ``TOMLDecodeError`` ("at end of document" -> last line)."""
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        detail = message[: match.start()] + f" (column {match.group(2)})"
        return int(match.group(1)), detail
    match = re.search(r"\s*\(at end of document\)\s*$", message)
    if match:
        return max(1, len(text.splitlines())), message[: match.start()] + " (at end of file)"
    return 1, message


def validate_structure(data: dict[str, Any], label: str) -> None:
    """Raise an ``InputError`` for the most useful schema violation, if any."""
    found = violation(SUITE_SCHEMA_FILE, data)
    if found is not None:
        raise _schema_error(found, data, label)


def _schema_error(found: Violation, data: Any, label: str) -> InputError:
    """Word one schema violation as a one-line ``InputError`` naming the table and key."""
    path = list(found.path)
    table, key = _locate(data, path)
    where = f"{label}: {table}"
    if found.kind == UNKNOWN_KEYS:
        names = ", ".join(repr(k) for k in found.keys)
        return InputError(
            "SOM-SUITE-UNKNOWN-KEY",
            f"unknown key{'s' if len(found.keys) > 1 else ''} {names}",
            f"allowed keys here: {', '.join(found.allowed)} (see docs/suite.md)",
            where=where,
        )
    if found.kind == MISSING_KEY:
        return InputError(
            "SOM-SUITE-MISSING-KEY",
            f"missing required key {found.keys[0]!r}",
            "see docs/suite.md for the required keys",
            where=where,
        )
    if found.kind == WRONG_TYPE:
        expected = _toml_type_name(found.expected)
        return InputError(
            "SOM-SUITE-TYPE",
            f"{_subject(key)} must be {expected}, got {_toml_value_type(found.instance)}",
            "see docs/suite.md for each key's type",
            where=where,
        )
    if "propertyNames" in found.schema_path or (
        path[:2] == ["suite", "slices"] and found.rule in {"pattern", "not"}
    ):
        what = "arm name" if "propertyNames" in found.schema_path else "slice name"
        return InputError(
            "SOM-SUITE-BAD-NAME",
            f"{what} {found.instance!r} is not allowed",
            "use a letter or digit, then letters, digits, '_' or '-'; 'overall' is reserved",
            where=where,
        )
    if found.rule == "minProperties":
        return InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"{table} needs at least one entry",
            "add one, e.g. [arms.base] for the base model itself",
            where=where,
        )
    return InputError(
        "SOM-SUITE-INVALID-VALUE",
        f"{_subject(key)}: {_short(found.message)}",
        "see docs/suite.md for the allowed values",
        where=where,
    )


def _locate(data: Any, path: Sequence[Any]) -> tuple[str, str]:
    """Split a JSON path into the innermost TOML table's label and the key path inside it."""
    node = data
    table_length = 0
    for index, part in enumerate(path):
        node = node[part]
        if isinstance(node, dict):
            table_length = index + 1
    return _table_label(data, path[:table_length]), json_path_text(path[table_length:])


def _table_label(data: Any, table: Sequence[Any]) -> str:
    """``[decoding]``, ``[arms.adapter]``, ``[[gates]] #2 ('uplift')`` or ``top level``."""
    if not table:
        return "top level"
    label = ""
    names: list[str] = []
    for part in table:
        if isinstance(part, int):
            label = f"[[{'.'.join(names)}]] #{part + 1}"
            names = []
        else:
            names.append(str(part))
    if names:
        label = (label + " " if label else "") + f"[{'.'.join(names)}]"
    node = data
    for part in table:
        node = node[part]
    if isinstance(table[-1], int) and isinstance(node.get("name"), str):
        label += f" ({node['name']!r})"
    return label


def _subject(key: str) -> str:
    """How a message refers to the offending key ("key 'seed'" or "this table")."""
    return f"key {key!r}" if key else "this table"


def _toml_type_name(expected: Any) -> str:
    """Human (TOML) name of a JSON Schema type."""
    names = {
        "object": "a table",
        "array": "an array",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean",
    }
    if isinstance(expected, list):
        return " or ".join(names.get(str(item), str(item)) for item in expected)
    return names.get(str(expected), str(expected))


_TOML_KINDS = {
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a float",
    "string": "a string",
    "array": "an array",
    "object": "a table",
}


def _toml_value_type(value: Any) -> str:
    """Human (TOML) name of a parsed value's type (``core.misses.json_kind``, in TOML words;
    a date or time, which JSON lacks, by its Python name)."""
    if not isinstance(value, (bool, int, float, str, list, dict)):
        return f"a {type(value).__name__}"
    return _TOML_KINDS[json_kind(value)]


def _short(message: str, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    line = " ".join(message.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
