"""Tests for ``sommelier import bfcl`` (pytest_sommelier.data.prepare.bfcl): synthetic BFCL files in
tmp_path, plus BFCL v4's real data when the bfcl_eval wheel is present."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.acceptable import acceptable_component
from pytest_sommelier.data.prepare.bfcl import (
    TYPE_MAP,
    convert_schema,
    first_acceptable,
    import_bfcl,
    import_category,
    locate_source,
)
from pytest_sommelier.errors import InputError

REAL_WHEEL = Path("/work/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl")

TRIANGLE = {
    "id": "simple_python_0",
    "question": [[{"role": "user", "content": "Area of a triangle, base 10, height 5.5?"}]],
    "function": [
        {
            "name": "geometry.triangle_area",
            "description": "Area of a triangle.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "base": {"type": "integer", "description": "base"},
                    "height": {"type": "float", "description": "height"},
                    "unit": {"type": "string", "enum": ["units", "cm"], "default": "units"},
                    "point": {"type": "tuple", "items": {"type": "float"}},
                    "extra": {"type": "any", "description": "anything"},
                    "opts": {
                        "type": "dict",
                        "properties": {"round": {"type": "boolean"}},
                        "optional": True,
                    },
                },
                "required": ["base", "height"],
            },
        }
    ],
}
TRIANGLE_ANSWER = {
    "id": "simple_python_0",
    "ground_truth": [
        {
            "geometry.triangle_area": {
                "base": [10],
                "height": [5.5],
                "unit": ["units", ""],
                "point": ["", [1.0, 2.0]],
                "opts": [{"round": [True, ""]}],
            }
        }
    ],
}


def _row(index: int, **changes: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A (question, answer) pair with id ``simple_python_<index>``."""
    question = json.loads(json.dumps(TRIANGLE))
    answer = json.loads(json.dumps(TRIANGLE_ANSWER))
    question["id"] = answer["id"] = f"simple_python_{index}"
    for key, value in changes.items():
        target, _, field = key.partition("__")
        (question if target == "q" else answer)[field] = value
    return question, answer


def _write(folder: Path, category: str, questions: list, answers: list) -> Path:
    """Write BFCL-style JSON lines into ``folder`` (data root layout)."""
    (folder / "possible_answer").mkdir(parents=True, exist_ok=True)
    name = f"BFCL_v4_{category}.json"
    (folder / name).write_text("".join(json.dumps(q) + "\n" for q in questions))
    (folder / "possible_answer" / name).write_text("".join(json.dumps(a) + "\n" for a in answers))
    return folder


def _pairs(count: int) -> tuple[list, list]:
    pairs = [_row(i) for i in range(count)]
    return [q for q, _ in pairs], [a for _, a in pairs]


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# ---------------------------------------------------------------- conversion


def test_types_converted_keywords_kept_gold_and_acceptable(tmp_path):
    data = _write(tmp_path / "data", "simple_python", *_pairs(1))
    out = tmp_path / "out.jsonl"
    (result,) = import_bfcl(["simple_python"], data, out).categories
    assert result.skipped == []
    (row,) = _read(out)
    assert set(row) == {
        "example_id",
        "language",
        "source_example_id",
        "query",
        "tools",
        "gold_call",
        "acceptable_arguments",
    }
    assert row["language"] == "en" and row["source_example_id"] is None
    assert row["query"] == "Area of a triangle, base 10, height 5.5?"
    parameters = row["tools"][0]["parameters"]
    assert parameters["type"] == "object"
    properties = parameters["properties"]
    assert properties["height"] == {"type": "number", "description": "height"}
    assert properties["point"] == {"type": "array", "items": {"type": "number"}}
    assert properties["extra"] == {"description": "anything"}  # any: no type constraint
    assert properties["unit"] == {"type": "string", "enum": ["units", "cm"], "default": "units"}
    assert properties["opts"]["type"] == "object"
    assert properties["opts"]["optional"] is True  # other keywords kept
    assert properties["opts"]["properties"]["round"] == {"type": "boolean"}
    # first acceptable value that is not "", left out when the first is ""; nested dict values
    # take their own first acceptable value
    assert row["gold_call"] == {
        "name": "geometry.triangle_area",
        "arguments": {"base": 10, "height": 5.5, "unit": "units", "opts": {"round": True}},
    }
    acceptable = row["acceptable_arguments"]
    assert acceptable["language"] == "python"
    assert acceptable["required"] == ["base", "height"]
    assert acceptable["arguments"]["point"] == {
        "type": "tuple",
        "items_type": "float",
        "values": ["", [1.0, 2.0]],
    }
    assert acceptable["arguments"]["unit"]["values"] == ["units", ""]
    # the converted gold call validates and is accepted by BFCL's rules
    jsonschema.validate(row["gold_call"]["arguments"], parameters)
    record = {**row, "parse_status": "ok", "parsed_call": row["gold_call"]}
    assert acceptable_component(record) == (1, 1)


def test_gold_not_validating_is_reported_and_skipped(tmp_path):
    good_q, good_a = _row(0)
    bad_q, bad_a = _row(1)
    bad_a["ground_truth"][0]["geometry.triangle_area"]["unit"] = [True]  # string-typed
    data = _write(tmp_path / "data", "simple_python", [good_q, bad_q], [good_a, bad_a])
    out = tmp_path / "out.jsonl"
    (result,) = import_bfcl(["simple_python"], data, out).categories
    assert [row["example_id"] for row in _read(out)] == ["simple_python_0"]
    (skipped,) = result.skipped
    assert skipped.example_id == "simple_python_1" and skipped.reason == "gold_invalid"
    assert "unit" in skipped.detail and skipped.where.endswith("BFCL_v4_simple_python.json:2")


def test_optional_first_empty_left_out_and_off_type_value_noted(tmp_path):
    question, answer = _row(0)
    answer["ground_truth"][0]["geometry.triangle_area"]["unit"] = ["", True]
    data = _write(tmp_path / "data", "simple_python", [question], [answer])
    (result,) = import_bfcl(["simple_python"], data, tmp_path / "out.jsonl").categories
    (row,) = result.rows
    assert "unit" not in row["gold_call"]["arguments"]
    (note,) = result.notes
    assert note.reason == "off_type_acceptable" and "'unit' accepts true" in note.detail


def test_system_turn_and_undeclared_parameter_skipped(tmp_path):
    q0, a0 = _row(0)
    q0["question"] = [[{"role": "system", "content": "Be brief."}, q0["question"][0][0]]]
    q1, a1 = _row(1)
    a1["ground_truth"][0]["geometry.triangle_area"]["colour"] = ["red"]
    q2, a2 = _row(2)
    data = _write(tmp_path / "data", "live_simple", [q0, q1, q2], [a0, a1, a2])
    (result,) = import_bfcl(["live_simple"], data, tmp_path / "out.jsonl").categories
    assert [s.reason for s in result.skipped] == ["system_message", "undeclared_parameter"]
    assert [row["example_id"] for row in result.rows] == ["simple_python_2"]


# ---------------------------------------------------------------- sources


def _wheel(tmp_path: Path, questions: list, answers: list) -> Path:
    wheel = tmp_path / "bfcl_eval-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("bfcl_eval/__init__.py", "raise RuntimeError('imported')\n")
        archive.writestr(
            "bfcl_eval/data/BFCL_v4_multiple.json", "".join(json.dumps(q) + "\n" for q in questions)
        )
        archive.writestr(
            "bfcl_eval/data/possible_answer/BFCL_v4_multiple.json",
            "".join(json.dumps(a) + "\n" for a in answers),
        )
    return wheel


def test_reads_the_wheel_file_itself(tmp_path):
    wheel = _wheel(tmp_path, *_pairs(2))
    (result,) = import_bfcl(["multiple"], wheel, tmp_path / "out.jsonl").categories
    assert len(result.rows) == 2


@pytest.mark.parametrize("layout", ["data", "pkg", "root"])
def test_reads_unpacked_folders(tmp_path, layout):
    root = tmp_path / "unpacked"
    folder = {"data": root, "pkg": root / "bfcl_eval" / "data", "root": root / "data"}[layout]
    _write(folder, "multiple", *_pairs(1))
    assert locate_source(root).folder == folder


def test_installed_package_found_without_importing_it(tmp_path, monkeypatch):
    package = tmp_path / "site" / "bfcl_eval"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('bfcl_eval code was imported')\n")
    _write(package / "data", "multiple", *_pairs(1))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    (result,) = import_bfcl(["multiple"], None, tmp_path / "out.jsonl").categories
    assert len(result.rows) == 1
    import sys

    assert "bfcl_eval" not in sys.modules


# ------------------------------------------------ bad input: one line, nothing written


def _refused(tmp_path, categories, source, code: str, **options: Any) -> str:
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    with pytest.raises(InputError) as info:
        import_bfcl(categories, source, out, **options)
    assert info.value.code == code
    assert out.read_text() == "previous\n"  # nothing written
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_possible_answer_row(tmp_path):
    questions, answers = _pairs(3)
    data = _write(tmp_path / "data", "simple_python", questions, answers[:2])
    message = _refused(tmp_path, ["simple_python"], data, "SOM-BFCL-ID-MISMATCH")
    assert "BFCL_v4_simple_python.json:3" in message and "'simple_python_2'" in message
    assert "field 'id'" in message


def test_id_mismatch(tmp_path):
    questions, answers = _pairs(2)
    answers[1]["id"] = "simple_python_9"
    data = _write(tmp_path / "data", "simple_python", questions, answers)
    message = _refused(tmp_path, ["simple_python"], data, "SOM-BFCL-ID-MISMATCH")
    assert "possible_answer/BFCL_v4_simple_python.json:2" in message
    assert "'simple_python_9'" in message and "field 'id'" in message


def test_unknown_type_name(tmp_path):
    questions, answers = _pairs(2)
    questions[1]["function"][0]["parameters"]["properties"]["opts"]["properties"]["round"][
        "type"
    ] = "bool_ish"
    data = _write(tmp_path / "data", "simple_python", questions, answers)
    message = _refused(tmp_path, ["simple_python"], data, "SOM-BFCL-TYPE")
    assert "BFCL_v4_simple_python.json:2" in message
    assert "function[0].parameters.properties.opts.properties.round.type" in message
    assert "'bool_ish'" in message


@pytest.mark.parametrize("category", ["parallel", "parallel_multiple", "live_parallel"])
def test_parallel_categories_refused(tmp_path, category):
    message = _refused(tmp_path, ["simple_python", category], tmp_path, "SOM-BFCL-PARALLEL")
    assert "exactly one call" in message and "--category" in message


def test_unknown_category_and_missing_file(tmp_path):
    _refused(tmp_path, ["multi_turn_base"], tmp_path, "SOM-BFCL-CATEGORY")
    data = _write(tmp_path / "data", "simple_python", *_pairs(1))
    message = _refused(tmp_path, ["simple_python", "multiple"], data, "SOM-BFCL-MISSING-FILE")
    assert "BFCL_v4_multiple.json" in message


def test_malformed_line_named(tmp_path):
    data = _write(tmp_path / "data", "simple_python", *_pairs(2))
    path = data / "BFCL_v4_simple_python.json"
    path.write_text(path.read_text() + "{not json\n")
    message = _refused(tmp_path, ["simple_python"], data, "SOM-BFCL-FIELD")
    assert "BFCL_v4_simple_python.json:3" in message


# ---------------------------------------------------------------- properties

BFCL_TYPES = sorted(TYPE_MAP)
KEYWORDS = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=5),
        "title": st.text(max_size=5),
        "default": st.one_of(st.text(max_size=5), st.booleans(), st.integers()),
        "optional": st.booleans(),
    },
)


def _schemas(depth: int = 2):
    base = st.builds(lambda t, extra: {**extra, "type": t}, st.sampled_from(BFCL_TYPES), KEYWORDS)
    if depth == 0:
        return base
    inner = _schemas(depth - 1)
    return st.one_of(
        base,
        st.builds(
            lambda t, items, extra: {**extra, "type": t, "items": items},
            st.sampled_from(["array", "tuple", "ArrayList"]),
            inner,
            KEYWORDS,
        ),
        st.builds(
            lambda props, extra: {**extra, "type": "dict", "properties": props},
            st.dictionaries(st.text(min_size=1, max_size=4), inner, max_size=3),
            KEYWORDS,
        ),
    )


def _walk(bfcl: dict, converted: dict):
    yield bfcl, converted
    if "items" in bfcl:
        yield from _walk(bfcl["items"], converted["items"])
    for name, sub in bfcl.get("properties", {}).items():
        yield from _walk(sub, converted["properties"][name])


@settings(max_examples=examples(200), deadline=None)
@given(_schemas())
def test_converter_maps_types_and_keeps_every_other_keyword(schema):
    converted = convert_schema(schema, "f:1", "p")
    for bfcl, out in _walk(schema, converted):
        mapped = TYPE_MAP[bfcl["type"]]
        assert out.get("type") == mapped  # None: the key is absent
        assert {k: v for k, v in out.items() if k not in ("type", "items", "properties")} == {
            k: v for k, v in bfcl.items() if k not in ("type", "items", "properties")
        }
    assert convert_schema(converted, "f:1", "p") == converted  # JSON Schema names are fixed
    jsonschema.Draft202012Validator.check_schema(converted)


@settings(max_examples=examples(100))
@given(st.lists(st.one_of(st.just(""), st.integers(), st.text(max_size=3)), max_size=4))
def test_first_acceptable(values):
    present, value = first_acceptable(values)
    assert present == (bool(values) and values[0] != "")
    if present:
        assert value == values[0]


# ---------------------------------------------------------------- the real data


@pytest.mark.skipif(not REAL_WHEEL.exists(), reason=f"BFCL wheel absent: {REAL_WHEEL}")
@pytest.mark.parametrize(
    ("category", "converted", "skipped"),
    [
        ("simple_python", 399, {"simple_python_200": "gold_invalid"}),
        ("multiple", 200, {}),
        ("live_simple", 244, None),
    ],
)
def test_real_bfcl_v4(category, converted, skipped):
    from pytest_sommelier.data.prepare.formatting import validate_prepared_row

    result = import_category(locate_source(REAL_WHEEL), category)
    assert len(result.rows) == converted
    if skipped is not None:
        assert {s.example_id: s.reason for s in result.skipped} == skipped
    for number, row in enumerate(result.rows, start=1):
        plain = {k: v for k, v in row.items() if k != "acceptable_arguments"}
        validate_prepared_row(plain, f"row {number}", number)
        record = {**row, "parse_status": "ok", "parsed_call": row["gold_call"]}
        assert acceptable_component(record) == (1, 1)


@pytest.mark.skipif(not REAL_WHEEL.exists(), reason=f"BFCL wheel absent: {REAL_WHEEL}")
def test_real_simple_python_307_keeps_row_and_notes_off_type_venue():
    result = import_category(locate_source(REAL_WHEEL), "simple_python")
    row = next(r for r in result.rows if r["example_id"] == "simple_python_307")
    assert "venue" not in row["gold_call"]["arguments"]  # its first acceptable value is ""
    assert any(n.example_id == "simple_python_307" and "'venue'" in n.detail for n in result.notes)


@pytest.mark.skipif(not REAL_WHEEL.exists(), reason=f"BFCL wheel absent: {REAL_WHEEL}")
def test_real_simple_javascript_refused_for_its_empty_type_name():
    with pytest.raises(InputError) as info:
        import_category(locate_source(REAL_WHEEL), "simple_javascript")
    assert info.value.code == "SOM-BFCL-TYPE"
    assert "BFCL_v4_simple_javascript.json:24" in str(info.value)
    assert "options.properties.issuer.type" in str(info.value)


def test_seeded_sample_keeps_file_order_and_is_reproducible(tmp_path):
    data = _write(tmp_path / "data", "simple_python", *_pairs(10))
    first = import_bfcl(["simple_python"], data, tmp_path / "a.jsonl", sample=4, seed=3)
    import_bfcl(["simple_python"], data, tmp_path / "b.jsonl", sample=4, seed=3)
    assert first.written == 4 and len(first.categories[0].rows) == 10
    ids = [row["example_id"] for row in _read(tmp_path / "a.jsonl")]
    assert ids == [row["example_id"] for row in _read(tmp_path / "b.jsonl")]
    assert ids == sorted(ids, key=lambda i: int(i.rsplit("_", 1)[1])) and len(set(ids)) == 4
    other = import_bfcl(["simple_python"], data, tmp_path / "c.jsonl", sample=4, seed=4)
    assert other.written == 4
    assert import_bfcl(["simple_python"], data, tmp_path / "d.jsonl", sample=99).written == 10
    _refused(tmp_path, ["simple_python"], data, "SOM-BFCL-SAMPLE", sample=0)


def test_live_rows_in_another_language_are_tagged_by_language(tmp_path):
    """Hardening V22: BFCL live rows that are not English were all tagged ``en``; ``--language``
    tags the import (no per-row guess), and a tag the prepared rows refuse is one line."""
    from pytest_sommelier.cli import main

    q0, a0 = _row(0)
    q0["question"] = [[{"role": "user", "content": "Calcula el área de un triángulo."}]]
    data = _write(tmp_path / "data", "live_simple", [q0], [a0])
    out = tmp_path / "es.jsonl"
    (result,) = import_bfcl(["live_simple"], data, out, language="es").categories
    assert [row["language"] for row in result.rows] == ["es"]
    assert json.loads(out.read_text().splitlines()[0])["language"] == "es"
    assert main(["import", "bfcl", "--category", "live_simple", "--source", str(data),
                 "--language", "ES", "--out", str(tmp_path / "x.jsonl")]) == 2  # fmt: skip
    assert not (tmp_path / "x.jsonl").exists()
    (result,) = import_bfcl(["live_simple"], data, tmp_path / "en.jsonl").categories
    assert [row["language"] for row in result.rows] == ["en"]
