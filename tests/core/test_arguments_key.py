"""``[suite] arguments_key``: loaded and recorded, passed to every parse of a run, digested into
``config_sha256`` only when it is not the default, and compared by the identity gate.

The plugin sessions (a native split of each family parser v1 reads, scored ``ok``) are in
``tests/data/split/test_native_policy.py``; the gate's field-by-field refusals in
``tests/core/test_reports.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from suite_factory import default_rows, make_row, write_split, write_suite

from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.parse import ARGUMENTS_KEYS, PARSER_VERSION
from pytest_sommelier.core.pipeline import (
    ArmRun,
    build_arm_reports,
    build_comparisons,
    config_sha256,
    evaluate_run,
    generation_record,
)
from pytest_sommelier.core.types import ComparisonConfig
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.split.schema import SUITE_SCHEMA_FILE
from pytest_sommelier.data.store.history_record import config_difference
from pytest_sommelier.data.store.stored import suite_from_resolved
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import InputError

LLAMA_ROW = {"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}
GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}


def native_rows() -> list[dict]:
    """Two native-policy rows whose targets write ``parameters`` (the Llama 3.x shape)."""
    target = json.dumps(LLAMA_ROW) + "<|eot_id|>"
    return [
        make_row(f"en-{i}", "en", target_text=target, full_text=f"p{i}" + target,
                 template_policy="sommelier.native-tools.v1")
        for i in range(2)
    ]


def loaded(tmp_path: Path, key: str | None, rows: list[dict] | None = None):
    """A suite (``arguments_key`` left out when None) and its split, as the plugin loads them."""
    suite = load_suite(write_suite(tmp_path, rows=rows or native_rows(),
                                   suite={"slices": ["en"], "arguments_key": key},
                                   comparisons=None))
    return suite, load_split(suite.test_split, suite.slices, arguments_key=suite.arguments_key)


# ---------------------------------------------------------------- the suite key


def test_the_key_defaults_to_arguments_and_is_recorded(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path / "a"))
    assert suite.arguments_key == "arguments"
    assert suite_identity(suite)["arguments_key"] == "arguments"
    suite, split = loaded(tmp_path / "b", "parameters")
    assert suite.arguments_key == "parameters"
    assert suite_identity(suite)["arguments_key"] == "parameters"
    assert [e.gold_call for e in split.examples] == [GOLD, GOLD]


def test_an_unknown_key_is_one_line_naming_the_table(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, suite={"arguments_key": "args"}))
    text = str(info.value)
    assert info.value.code == "SOM-SUITE-INVALID-VALUE" and "[suite]" in text
    assert "'arguments_key'" in text and "'args'" in text and "\n" not in text


def test_the_schema_lists_exactly_the_parsers_keys() -> None:
    schema = json.loads(Path(SUITE_SCHEMA_FILE).read_text())
    assert tuple(schema["properties"]["suite"]["properties"]["arguments_key"]["enum"]) == (
        ARGUMENTS_KEYS
    )


def test_a_tools_in_system_split_is_refused_under_parameters(tmp_path: Path) -> None:
    """tools-in-system writes and instructs ``arguments``: read with ``parameters`` every output
    would be invalid_shape, so the split is refused at load, naming the row."""
    path = write_split(tmp_path / "t.jsonl", default_rows())
    assert load_split(path, ["en"]).examples  # the default key reads it
    with pytest.raises(InputError) as info:
        load_split(path, ["en", "he"], arguments_key="parameters")
    text = str(info.value)
    assert info.value.code == "SOM-SPLIT-ARGUMENTS-KEY" and f"{path}:1" in text
    assert "'en-0'" in text and "[suite] arguments_key" in text and "\n" not in text


def test_a_native_split_under_the_wrong_key_names_the_suite_key(tmp_path: Path) -> None:
    path = write_split(tmp_path / "t.jsonl", native_rows())
    with pytest.raises(InputError) as info:
        load_split(path, ["en"])
    assert info.value.code == "SOM-SPLIT-GOLD-CALL" and "[suite] arguments_key" in str(info.value)


# ---------------------------------------------------------------- parsing and reports


def run_of(suite, split, texts: list[str], **arm) -> dict:
    records = [
        generation_record(e, arm="base", model_kind="base", raw_text=t, decoding=suite.decoding,
                          cached=False, arguments_key=suite.arguments_key)
        for e, t in zip(split.examples, texts, strict=True)
    ]
    return {"base": ArmRun("base", "base", {"m": 1}, None, {"en": records}, **arm)}


def test_outputs_are_parsed_with_the_suite_key(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path, "parameters")
    texts = [json.dumps(LLAMA_ROW), json.dumps(GOLD)]  # the family's shape, then the other key
    arms = run_of(suite, split, texts)
    assert [r["parse_status"] for r in arms["base"].records["en"]] == ["ok", "invalid_shape"]
    outcome = evaluate_run(suite, split, arms, run_id="r", model={"m": 1}, gates=False)
    report = outcome.arm_reports["base"]
    assert (report["parser_version"], report["arguments_key"]) == (PARSER_VERSION, "parameters")
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 1
    statuses = [r["parse_status"] for r in outcome.records["base"]["en"]]
    assert statuses == ["ok", "invalid_shape"]  # re-parsed from raw_text with the same key


def test_config_digest_is_unchanged_for_the_default_key(tmp_path: Path) -> None:
    """A suite without the key digests exactly as before the key existed (so stored runs stay
    comparable); a ``parameters`` suite digests differently."""
    suite = load_suite(write_suite(tmp_path))
    split = load_split(suite.test_split, suite.slices)
    model = {"kind": "hub", "id": "m", "revision": "r"}
    before_the_key = sha256_json({
        "split": split.split,
        "test_split_sha256": split.sha256,
        "slices": list(suite.slices),
        "model": model,
        "decoding": dict(suite.decoding),
        "parser_version": PARSER_VERSION,
        "statistics": {"seed": 41, "resamples": 200, "confidence_level": 0.95},
    })
    assert config_sha256(suite, split, model) == before_the_key
    assert config_sha256(replace(suite, arguments_key="parameters"), split, model) != (
        before_the_key
    )


def test_a_stored_report_without_the_key_keeps_arguments(tmp_path: Path) -> None:
    """A baseline arm keeps its stored report's conditions; one written before the key was
    recorded read ``arguments``, so that is what it holds, and the gate refuses to compare it
    with a ``parameters`` arm."""
    suite, split = loaded(tmp_path, "parameters")
    fresh = build_arm_reports(suite, split, run_of(suite, split, ["x", "y"]), run_id="r",
                              digest="d").reports["base"]
    old = {k: v for k, v in fresh.items() if k != "arguments_key"}
    arms = run_of(suite, split, ["x", "y"], stored_report=old)
    arms["cand"] = replace(run_of(suite, split, ["x", "y"])["base"], name="cand")
    built = build_arm_reports(suite, split, arms, run_id="r", digest="d")
    assert built.reports["base"]["arguments_key"] == "arguments"
    assert built.reports["cand"]["arguments_key"] == "parameters"
    suite = replace(suite, comparisons=(ComparisonConfig("cand", "base"),))
    reports, errors = build_comparisons(suite, built)
    assert reports == {}
    assert "SOM-COMPARE-IDENTITY" in errors["cand-vs-base"]
    assert "disagree on arguments_key: candidate 'cand' has parameters" in errors["cand-vs-base"]


# ---------------------------------------------------------------- stored runs


def test_a_stored_run_is_read_with_its_key(tmp_path: Path) -> None:
    suite, _ = loaded(tmp_path, "parameters")
    resolved = suite_identity(suite)
    assert suite_from_resolved(resolved, tmp_path).arguments_key == "parameters"
    older = {k: v for k, v in resolved.items() if k != "arguments_key"}
    assert suite_from_resolved(older, tmp_path).arguments_key == "arguments"
    with pytest.raises(InputError) as info:
        suite_from_resolved({**resolved, "arguments_key": "args"}, tmp_path)
    assert info.value.code == "SOM-STORED-FIELD" and "'args'" in str(info.value)


def test_history_names_the_key_when_the_config_digest_differs() -> None:
    old = {"decoding": {"max_new_tokens": 9}}
    assert config_difference(old, {**old, "arguments_key": "arguments"}) is None
    assert config_difference(old, {**old, "arguments_key": "parameters"}) == (
        'arguments_key: "arguments" -> "parameters"'
    )
