"""JSON Schema checks of the input files: the schemas, the one most useful violation, and what
it is about.

The suite loader (``sommelier.toml`` against ``schemas/suite.schema.json``) and the split loader
(each line against ``schemas/formatted_example.v2.schema.json``) both call :func:`violation`;
each then words the :class:`Violation` in its own terms (TOML tables and keys, JSON fields) and
codes (``SOM-SUITE-*``, ``SOM-SPLIT-*``).

Invariants kept: a schema file is read, checked and compiled once per process; the violation
reported for an invalid instance is a function of the instance alone (unknown keys first, then
missing keys, then types, then other rules; shallow before deep; ties by path).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).with_name("schemas")
SUITE_SCHEMA_FILE = SCHEMAS / "suite.schema.json"
EXAMPLE_SCHEMA_FILE = SCHEMAS / "formatted_example.v2.schema.json"
SCHEMA_VERSION = "sommelier.formatted_example.v2"
"""The ``schema_version`` of a formatted example: what ``sommelier format`` writes and the split
loader accepts."""

UNKNOWN_KEYS = "unknown_keys"
MISSING_KEY = "missing_key"
WRONG_TYPE = "type"
OTHER = "other"
_PRIORITY = {UNKNOWN_KEYS: 0, MISSING_KEY: 1, WRONG_TYPE: 2}
_KINDS = {"additionalProperties": UNKNOWN_KEYS, "required": MISSING_KEY, "type": WRONG_TYPE}


@cache
def schema_validator(schema_file: Path) -> Any:
    """The compiled JSON Schema in ``schema_file`` (checked and loaded once per process)."""
    schema = json.loads(schema_file.read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


@dataclass(frozen=True)
class Violation:
    """One schema violation, in the loader-neutral terms both loaders word.

    ``kind`` is ``unknown_keys`` (``keys``: the instance's keys the schema does not list, sorted;
    ``allowed``: the keys it lists), ``missing_key`` (``keys``: the first required key absent),
    ``type`` (``expected``: the schema's type or types) or ``other`` (``message``: the
    validator's message on one line). ``path`` is where in the document the offending value
    is; ``rule`` is the JSON Schema keyword, ``schema_path`` where in the schema it is.
    """

    kind: str
    path: tuple[str | int, ...]
    instance: Any
    rule: str
    schema_path: tuple[str | int, ...]
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    expected: Any = None
    message: str = ""


def _first_error(schema_file: Path, instance: Any) -> Any:
    """The most useful ``jsonschema.ValidationError`` of ``instance``, or None when valid.

    Unknown keys first (a misspelt key also makes a required key missing, and the unknown one
    names the typo), then missing keys, then types, then other rules; shallow before deep.
    """
    errors = list(schema_validator(schema_file).iter_errors(instance))
    if not errors:
        return None
    return min(
        errors,
        key=lambda e: (
            _PRIORITY.get(_KINDS.get(str(e.validator), OTHER), 3),
            len(e.absolute_path),
            repr(list(e.absolute_path)),
        ),
    )


def violation(schema_file: Path, instance: Any) -> Violation | None:
    """The most useful violation of ``instance`` against ``schema_file``, or None when valid."""
    error = _first_error(schema_file, instance)
    if error is None:
        return None
    rule = str(error.validator)
    kind = _KINDS.get(rule, OTHER)
    keys: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()
    if kind == UNKNOWN_KEYS:
        allowed = tuple(sorted(error.schema.get("properties", {})))
        keys = tuple(sorted(k for k in error.instance if k not in allowed))
    elif kind == MISSING_KEY:
        keys = tuple(k for k in error.validator_value if k not in error.instance)[:1]
    return Violation(
        kind=kind,
        path=tuple(error.absolute_path),
        instance=error.instance,
        rule=rule,
        schema_path=tuple(error.absolute_schema_path),
        keys=keys,
        allowed=allowed,
        expected=error.validator_value if kind == WRONG_TYPE else None,
        message=" ".join(error.message.split()),
    )


def json_path_text(path: Iterable[Any]) -> str:
    """``messages[0].role`` style name of a path inside a JSON/TOML document."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def parameters_error(parameters: Any) -> str | None:
    """Why a tool's ``parameters`` is not a valid JSON Schema (Draft 2020-12), or None."""
    try:
        jsonschema.Draft202012Validator.check_schema(parameters)
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None


def arguments_error(parameters: Any, arguments: Any) -> tuple[str, str] | None:
    """The first violation of ``arguments`` against a tool's (valid) ``parameters`` schema, by
    path: ``(path as [..] segments, message)``, or None when they validate. Used for gold calls
    by ``sommelier format`` and ``sommelier import bfcl`` alike."""
    errors = sorted(
        jsonschema.Draft202012Validator(parameters).iter_errors(arguments),
        key=lambda error: list(error.absolute_path),
    )
    if not errors:
        return None
    return "".join(f"[{part!r}]" for part in errors[0].absolute_path), str(errors[0].message)
