"""The compiled check of the run store's schema answers as jsonschema does.

``data.store.validate.fits`` turns each definition of ``run_store.v1.schema.json`` into one
function of plain comparisons (``data.split.schema.compiled_schema_check``, extended); the
validating reader runs jsonschema only on a document it refuses, to name the violation. It
must say "fits" exactly when jsonschema finds no error: checked here on the stored documents
of a real two-run store with any field replaced by any small JSON value, removed, or given a
sibling key, and on small schemas of each compiled keyword.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from test_store_reader import document_paths, stored_file

from pytest_sommelier.data.split.schema import compiled_schema_check
from pytest_sommelier.data.store import validate

DOCUMENTS = {
    "index.json": "index",
    "0002/stored_run.json": "stored_run",
    "0002/eval/adapter/evaluation_report.json": "evaluation_report",
    "0002/eval/base/evaluation_report.json": "evaluation_report",
    "0002/report/adapter-vs-base.json": "comparison_report",
    "0002/gate_verdict.json": "gate_verdict",
}

SCALARS = st.sampled_from(
    [None, True, False, 0, 1, -1, 2, 1.0, 0.5, -0.5, -1.5, 1.5, 1e12 + 1, 10**13, -(10**13),
     float("nan"), float("inf"), "", "x", "a/b", "0" * 64, "pass", "adapter", "rate", "?" * 300,
     "sommelier.stored_run.v1", "bonferroni"]
)  # fmt: skip
VALUES = st.recursive(
    SCALARS | st.floats(allow_nan=False) | st.integers(),
    lambda inner: st.lists(inner, max_size=2)
    | st.dictionaries(st.sampled_from(["lower", "upper", "value", "n", "x", "pairs"]), inner,
                      max_size=2),
    max_leaves=4,
)  # fmt: skip


@pytest.fixture(scope="module")
def documents(two_run_store: Path) -> dict[str, tuple[str, Any]]:
    store = two_run_store / ".sommelier"
    return {
        relative: (kind, json.loads(stored_file(store, relative).read_text(encoding="utf-8")))
        for relative, kind in DOCUMENTS.items()
    }


def jsonschema_fits(kind: str, document: Any) -> bool:
    return next(iter(validate._validator(kind).iter_errors(document)), None) is None


def edited(document: Any, where: tuple[Any, ...], how: str, value: Any) -> Any:
    copy = json.loads(json.dumps(document))
    parent = copy
    for part in where[:-1]:
        parent = parent[part]
    if how == "replace":
        parent[where[-1]] = value
    elif how == "remove":
        del parent[where[-1]]
    elif isinstance(parent, dict):
        parent[f"{where[-1]}_extra"] = value
    else:
        parent.append(value)
    return copy


def test_every_definition_is_compiled() -> None:
    for kind in (*sorted(set(validate.KINDS.values())), validate.ENTRY):
        assert validate.fits(kind) is not None, kind


def test_the_stored_documents_fit(documents: dict[str, tuple[str, Any]]) -> None:
    for kind, document in documents.values():
        check = validate.fits(kind)
        assert check is not None and check(document) is True
        assert jsonschema_fits(kind, document)


# 200 examples: one of ~1,000 paths of six documents, one of three edits, one small JSON
# value; each example runs jsonschema once (~5-10 ms), the fast tier's budget for it
@settings(max_examples=examples(200), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(
    name=st.sampled_from(sorted(DOCUMENTS)),
    pick=st.integers(min_value=0),
    how=st.sampled_from(["replace", "remove", "add"]),
    value=VALUES,
)
def test_any_edit_of_a_stored_document_is_judged_as_jsonschema_does(
    documents: dict[str, tuple[str, Any]], name: str, pick: int, how: str, value: Any
) -> None:
    kind, document = documents[name]
    where = document_paths(document)
    changed = edited(document, where[pick % len(where)], how, value)
    check = validate.fits(kind)
    assert check is not None
    assert check(changed) is jsonschema_fits(kind, changed)


DRAFT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS = [
    {"type": "integer", "minimum": 0, "maximum": 10},
    {"type": ["number", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "string", "maxLength": 2, "minLength": 1},
    {"enum": ["a", None]},
    {"anyOf": [{"type": "null"}, {"type": "string", "pattern": "^a"}]},
    {"allOf": [{"$ref": "#/$defs/d"}], "$defs": {"d": {"properties": {"x": {"type": "number"}}}}},
    {"$ref": "#/$defs/d", "unevaluatedProperties": False,
     "$defs": {"d": {"type": "object", "properties": {"x": {"$ref": "#/$defs/d"}}}}},
    {"type": "object", "additionalProperties": {"$ref": "#/$defs/t"},
     "$defs": {"t": {"properties": {"lower": {"minimum": -1}}, "items": {"$ref": "#/$defs/t"}}}},
]  # fmt: skip


@settings(max_examples=examples(300), deadline=None)
@given(schema=st.sampled_from(SCHEMAS), value=VALUES)
def test_each_extended_keyword_is_jsonschemas(schema: dict[str, Any], value: Any) -> None:
    rooted = {"$schema": DRAFT, **schema}
    check = compiled_schema_check(rooted, extended=True, name="test")
    assert check is not None
    expected = next(iter(jsonschema.Draft202012Validator(rooted).iter_errors(value)), None)
    assert check(value) is (expected is None), (schema, value)


def test_what_is_not_compiled_is_left_to_jsonschema() -> None:
    for schema in (
        {"properties": {"a": {}}, "additionalProperties": {}, "unevaluatedProperties": False},
        {"anyOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
        {"unevaluatedProperties": {"type": "string"}},
        {"$ref": "#/$defs/missing"},
        {"$ref": "https://example.com/s.json"},
        {"const": 1},
        {"enum": [1]},
        {"oneOf": [{"type": "string"}]},
        {"minimum": True},
    ):
        assert compiled_schema_check({"$schema": DRAFT, **schema}, extended=True, name="t") is None
    assert compiled_schema_check({"type": "integer"}, extended=True, name="t") is None
