"""The one validating reader's rule: every JSON document read back from a run folder or the
run store is checked against its JSON Schema (``data/schemas/run_store.v1.schema.json``).

Which definition applies is decided by the document's own ``schema_version`` (the index, a
``stored_run.json``, an evaluation report, a comparison report, a gate verdict, a run's
``report/selection.json``) or by what the
caller expects to read at that path (``expect``): a document that claims another schema, or
none, where one is expected is refused too.

Invariants kept: the schema file is read, checked and compiled once per process (also into a
plain check per definition, :func:`fits`, which says a document fits exactly when jsonschema
does; jsonschema runs on a document it refuses, to name the violation), and each
document's answer is remembered by its JSON text (``data.json_memo``); a document that does
not fit is one ``InputError`` naming the file and the field (``runs[0].git.commit``) with the
code the caller's command uses (``SOM-STORED-FIELD`` for a run's files, ``SOM-HISTORY-INDEX``
for the index); the reported violation depends on the document alone (shallowest first, then
by path); nothing is coerced or repaired.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from pytest_sommelier.data.json_memo import JsonMemo, plain_json
from pytest_sommelier.data.split.schema import (
    SCHEMAS,
    Check,
    compiled_schema_check,
    json_path_text,
)
from pytest_sommelier.errors import InputError

STORE_SCHEMA_FILE = SCHEMAS / "run_store.v1.schema.json"

KINDS = {
    "sommelier.run_store_index.v1": "index",
    "sommelier.stored_run.v1": "stored_run",
    "sommelier.evaluation_report.v1": "evaluation_report",
    "sommelier.comparison_report.v1": "comparison_report",
    "sommelier.gate_verdict.v1": "gate_verdict",
    "sommelier.selection.v1": "selection",
}
"""``schema_version`` -> the definition of ``run_store.v1.schema.json`` it is checked with."""

ENTRY = "entry"
"""The definition of one index entry (checked on its own by the index reader)."""


def _rooted(kind: str) -> dict[str, Any]:
    """The schema of one definition: the file's ``$defs``, rooted at ``#/$defs/<kind>``."""
    schema = _schema()
    return {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{kind}"}


@cache
def _validator(kind: str) -> Any:
    """The compiled validator of one definition (the schema file read and checked once)."""
    return jsonschema.Draft202012Validator(_rooted(kind))


@cache
def fits(kind: str) -> Check | None:
    """``document -> bool``: whether a decoded JSON document fits definition ``kind``, the
    answer jsonschema gives, as one function of plain comparisons
    (``data.split.schema.compiled_schema_check``); None when the definition uses a keyword
    it does not compile (jsonschema then checks every document)."""
    _validator(kind)
    return compiled_schema_check(_rooted(kind), extended=True, name=f"run_store {kind}")


@cache
def _schema() -> dict[str, Any]:
    schema = json.loads(STORE_SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return dict(schema)


_PROBLEMS: JsonMemo[str | None] = JsonMemo(1024)
""":func:`problem`'s answers by definition and document."""


def problem(kind: str, value: Any) -> str | None:
    """``runs[0].git: 'abc' is not of type 'object', 'null'``: the first violation of ``value``
    against definition ``kind`` (shallowest, then by path), or None when it fits.

    Remembered per process by the document's JSON text (``data.json_memo``: exact for JSON
    values, ``1``, ``1.0`` and ``true`` differ; at most 1024 answers): a session, ``sommelier
    history`` or ``compare`` reads the same stored files again and again, and a schema check
    of a report is ~10 ms. A value that is not made of JSON's own types (a tuple, a key that
    is not a string) is checked every time."""
    return _PROBLEMS.answer(kind, value, lambda document: _problem(kind, document))


def _problem(kind: str, value: Any) -> str | None:
    """:func:`problem` without the memo: a document of JSON's own types that the compiled check
    (:func:`fits`) passes fits; jsonschema runs on the others, to name the violation."""
    check = fits(kind)
    if check is not None and plain_json(value) and check(value):
        return None
    errors = list(_validator(kind).iter_errors(value))
    if not errors:
        return None
    error = min(errors, key=lambda e: (len(e.absolute_path), repr(list(e.absolute_path))))
    where = json_path_text(error.absolute_path) or "the document"
    message = " ".join(error.message.split())
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{where}: {message}"


def check_stored(
    path: Path, value: Any, *, expect: str | None = None, code: str = "SOM-STORED-FIELD"
) -> Any:
    """``value`` (read from ``path``) when it fits its schema, else one ``InputError``.

    ``expect`` is the ``schema_version`` the caller reads at this path (an evaluation report
    at ``eval/<arm>/evaluation_report.json``); without it a document is checked against the
    definition its own ``schema_version`` names, and one with an unknown or no
    ``schema_version`` is returned as it is (the caller checks what it uses of it)."""
    declared = value.get("schema_version") if isinstance(value, dict) else None
    if expect is not None and not isinstance(value, dict):
        kind_of = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        shown = kind_of.get(type(value), "a number" if isinstance(value, int | float) else "")
        raise _refused(path, code, f"is {shown or type(value).__name__}, not a JSON object")
    if expect is not None and declared != expect:
        found = declared if isinstance(value, dict) else type(value).__name__
        raise _refused(path, code, f"schema_version is {found!r}, expected {expect!r}")
    kind = KINDS.get(declared) if isinstance(declared, str) else None
    if kind is None:
        return value
    found_problem = problem(kind, value)
    if found_problem is not None:
        raise _refused(path, code, found_problem)
    return value


def _refused(path: Path, code: str, message: str) -> InputError:
    return InputError(
        code,
        f"{path}: {message}",
        "the file was edited or written by another tool; restore it, or store the run again "
        "(docs/artifacts.md lists every field)",
    )


__all__ = ["ENTRY", "KINDS", "STORE_SCHEMA_FILE", "check_stored", "fits", "problem"]
