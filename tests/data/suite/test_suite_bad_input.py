"""One test per bad input: the exact error class, its stable code and a one-line message that
names the problem (file, line, table, key or field)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from suite_factory import default_rows, make_row, write_split, write_suite

from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierError,
)


def expect_error(
    call: Callable[[], Any], cls: type[SommelierError], code: str, *fragments: str
) -> SommelierError:
    """Run ``call``; assert it raises exactly ``cls`` with ``code`` and a one-line message
    containing every fragment."""
    with pytest.raises(SommelierError) as info:
        call()
    error = info.value
    assert type(error) is cls, f"{type(error).__name__}: {error}"
    assert error.code == code, str(error)
    text = str(error)
    assert "\n" not in text
    assert text.startswith(f"{code}: ")
    assert error.hint, "every error carries a hint"
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    return error


def split_with(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    return write_split(tmp_path / "split.jsonl", rows)


def load(path: Path, slices: tuple[str, ...] = ("en", "he")) -> Callable[[], Any]:
    return lambda: load_split(path, slices)


# ----------------------------------------------------------------------------- split rows


def test_broken_json_line(tmp_path: Path) -> None:
    path = split_with(tmp_path, default_rows())
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2][:-10] + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    expect_error(load(path), InputError, "SOM-SPLIT-JSON", f"{path}:3:", "not valid JSON")


def test_unknown_schema_version(tmp_path: Path) -> None:
    rows = default_rows()
    rows[1]["schema_version"] = "sommelier.formatted_example.v1"
    path = split_with(tmp_path, rows)
    expect_error(
        load(path),
        InputError,
        "SOM-SPLIT-SCHEMA-VERSION",
        f"{path}:2:",
        "unknown schema_version 'sommelier.formatted_example.v1'",
    )


def test_missing_field(tmp_path: Path) -> None:
    rows = default_rows()
    del rows[3]["tokenizer_revision"]
    path = split_with(tmp_path, rows)
    expect_error(
        load(path),
        InputError,
        "SOM-SPLIT-FIELD",
        f"{path}:4:",
        "missing field 'tokenizer_revision'",
    )


def test_duplicate_example_id(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("en-1", "en")]
    path = split_with(tmp_path, rows)
    expect_error(
        load(path),
        InputError,
        "SOM-SPLIT-DUPLICATE-ID",
        f"{path}:6:",
        "example_id 'en-1' already used on line 2",
    )


def test_two_gold_calls(tmp_path: Path) -> None:
    rows = default_rows()
    call = {"name": "a", "arguments": {}}
    rows[0]["target_text"] = json.dumps([call, call])
    path = split_with(tmp_path, rows)
    expect_error(
        load(path),
        InputError,
        "SOM-SPLIT-GOLD-CALL",
        f"{path}:1:",
        "'en-0'",
        "target_text",
        "holds 2 calls",
    )


def test_dangling_source_example_id(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("he-2", "he", "en-99")]
    path = split_with(tmp_path, rows)
    expect_error(
        load(path),
        InputError,
        "SOM-SPLIT-DANGLING-SOURCE",
        f"{path}:6:",
        "'he-2'",
        "source_example_id 'en-99'",
        "reference slice 'en'",
    )


def test_empty_configured_slice(tmp_path: Path) -> None:
    path = split_with(tmp_path, default_rows())
    expect_error(
        load(path, ("en", "he", "ar")),
        InputError,
        "SOM-SPLIT-EMPTY-SLICE",
        str(path),
        "configured slice 'ar' has no rows",
    )


def test_prompt_digest_mismatch(tmp_path: Path) -> None:
    rows = default_rows()
    rows[4]["prompt_text"] += " edited"
    path = split_with(tmp_path, rows)
    expect_error(
        load(path), InvariantError, "SOM-SPLIT-PROMPT-SHA", f"{path}:5:", "'he-1'", "prompt_sha256"
    )


# ----------------------------------------------------------------------------- decoding


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("temperature", 0.1, "SOM-DECODING-TEMPERATURE"),
        ("do_sample", True, "SOM-DECODING-DO-SAMPLE"),
        ("max_new_tokens", 0, "SOM-DECODING-MAX-NEW-TOKENS"),
        ("max_new_tokens", -1, "SOM-DECODING-MAX-NEW-TOKENS"),
        ("batch_size", 0, "SOM-DECODING-BATCH-SIZE"),
    ],
)
def test_bad_decoding_value(tmp_path: Path, field: str, value: Any, code: str) -> None:
    suite = write_suite(tmp_path, decoding={field: value})
    expect_error(
        lambda: load_suite(suite),
        EvaluationError,
        code,
        f"{suite}: [decoding]",
        f"decoding.{field}",
        f"got {value!r}",
    )


# ----------------------------------------------------------------------------- suite file


def test_unknown_top_level_key(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, evaluation={"slices": ["en"]})
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-UNKNOWN-KEY",
        f"{suite}: top level: unknown key 'evaluation'",
    )


def test_unknown_nested_key(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, decoding={"temprature": 0.0})
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-UNKNOWN-KEY",
        f"{suite}: [decoding]: unknown key 'temprature'",
    )


def test_unknown_key_in_a_gate(tmp_path: Path) -> None:
    gate = {"name": "g", "arm": "adapter", "metric": "argument_f1", "minimum": 0.5}
    suite = write_suite(tmp_path, gates=[gate])
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-UNKNOWN-KEY",
        f"{suite}: [[gates]] #1 ('g'): unknown key 'minimum'",
    )


def test_missing_split_file(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, suite={"test_split": "data/missing.jsonl"})
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-SPLIT-MISSING",
        str(tmp_path / "data" / "missing.jsonl"),
    )


def test_toml_syntax_error(tmp_path: Path) -> None:
    text = '[suite]\nname = "x"\nslices = ["en",\n\n[model]\n'
    suite = write_suite(tmp_path, text=text)
    error = expect_error(lambda: load_suite(suite), InputError, "SOM-SUITE-TOML", f"{suite}:")
    line = int(error.where.rsplit(":", 1)[1])
    assert line in (3, 4, 5)


def test_hub_id_without_revision(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, model={"base": "some-org/some-model", "revision": None})
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-REVISION-MISSING",
        f"{suite}: [model]",
        "'some-org/some-model' is a hub id and needs model.revision",
    )


def test_adapter_hub_id_without_revision(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path, arms={"base": {}, "v1": {"adapter": "org/adapter-v1"}}, comparisons=None
    )
    expect_error(
        lambda: load_suite(suite),
        InputError,
        "SOM-SUITE-REVISION-MISSING",
        f"{suite}: [arms.v1]",
        "arms.v1.adapter_revision",
    )


def test_an_adapter_path_may_leave_the_suite_folder(tmp_path: Path) -> None:
    """Decision (0.3): model and adapter paths are relative to the suite file and may leave its
    folder (``../checkpoints/checkpoint-500``, where training put it); the split may not."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    suite = write_suite(
        tmp_path / "suite", arms={"base": {}, "adapter": {"adapter": "../elsewhere"}}
    )
    assert load_suite(suite).arms["adapter"].adapter == str(outside)


def test_split_path_escaping_suite_folder(tmp_path: Path) -> None:
    write_split(tmp_path / "test.jsonl", default_rows())
    suite = write_suite(tmp_path / "suite", suite={"test_split": "../test.jsonl"})
    expect_error(lambda: load_suite(suite), InputError, "SOM-SUITE-PATH-ESCAPE", "suite.test_split")


@pytest.mark.parametrize(
    ("gate", "code", "fragment"),
    [
        (
            {"arm": "v9", "metric": "argument_f1", "min": 0.5},
            "SOM-SUITE-UNKNOWN-ARM",
            "gates.arm names unknown arm 'v9'",
        ),
        (
            {"arm": "adapter", "metric": "accuracy", "min": 0.5},
            "SOM-SUITE-UNKNOWN-METRIC",
            "unknown metric 'accuracy'",
        ),
        (
            {"arm": "adapter", "metric": "argument_f1", "slice": "fr", "min": 0.5},
            "SOM-SUITE-UNKNOWN-SLICE",
            "unknown slice 'fr'",
        ),
        (
            {
                "candidate": "adapter",
                "reference": "v0",
                "metric": "argument_f1",
                "ci_lower_above": 0.0,
            },
            "SOM-SUITE-UNKNOWN-ARM",
            "gates.reference names unknown arm 'v0'",
        ),
        (
            {"arm": "adapter", "gap": "en", "metric": "argument_f1", "ci_lower_at_least": -0.1},
            "SOM-SUITE-UNKNOWN-SLICE",
            "gates.gap names 'en', which is not a non-reference slice",
        ),
    ],
    ids=["arm", "metric", "slice", "comparison-arm", "gap-reference-slice"],
)
def test_gate_naming_unknown_thing(
    tmp_path: Path, gate: dict[str, Any], code: str, fragment: str
) -> None:
    suite = write_suite(tmp_path, gates=[{"name": "bad", **gate}])
    expect_error(
        lambda: load_suite(suite), InputError, code, f"{suite}: [[gates]] #1 ('bad')", fragment
    )
