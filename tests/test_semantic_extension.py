"""The reference extension ``examples/sommelier-semantic``, installed as a package (CI installs
it with scripts/install.sh): its scorer and importer reach pytest and the CLI through the entry
points alone, without touching the plugin's code; a run scored with it re-scores to the same
numbers, and a recorded score the scorer no longer gives is refused as impure.

Hand-derived numbers (``semantic_args``, a rate): the adapter hits en-0 (tags reordered where
the schema says ``uniqueItems``, ``"2"`` for ``2``, a basic ISO date for the extended one; the
strict metric misses it), misses en-1 (an ordered list reordered), hits en-2 (exact) and misses
he-0 (prose: a parse failure, still counted): 2 of 3 in en, 0 of 1 in he, 2 of 4 overall. The
base answers prose everywhere: 0 of 4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import read_json, read_jsonl
from property_budget import examples
from suite_factory import make_row, write_suite

from pytest_sommelier.cli import main

semantic = pytest.importorskip(
    "sommelier_semantic.scorer",
    reason="the reference extension is not installed: pip install -e examples/sommelier-semantic "
    "(scripts/install.sh installs it in every CI environment)",
)
glaive = pytest.importorskip("sommelier_semantic.glaive")
FIXTURE = Path(__file__).resolve().parent.parent / "examples" / "sommelier-semantic" / "tests"

TAG_TOOL = {
    "name": "tag",
    "parameters": {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "n": {"type": "integer"},
            "when": {"type": "string", "format": "date"},
        },
    },
}
ROUTE_TOOL = {"name": "route", "parameters": {"type": "object", "properties": {
    "stops": {"type": "array", "items": {"type": "string"}}}}}  # fmt: skip
TAG = {"name": "tag", "arguments": {"tags": ["a", "b"], "n": 2, "when": "2024-03-05"}}
ROUTE = {"name": "route", "arguments": {"stops": ["x", "y"]}}
NOOP = {"name": "route", "arguments": {"stops": []}}
ADAPTER = {
    "en-0": json.dumps(
        {"name": "tag", "arguments": {"tags": ["b", "a"], "n": "2", "when": "20240305"}}
    ),
    "en-1": json.dumps({"name": "route", "arguments": {"stops": ["y", "x"]}}),
    "en-2": json.dumps(NOOP),
}


def example(tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"example_id": "e", "language": "en", "tools": tools}


def score(parsed: Any, gold: Any, tools: list[dict[str, Any]]) -> tuple[int, int]:
    result: tuple[int, int] = semantic.semantic_args(parsed, gold, example(tools))
    return result


@settings(max_examples=examples(100))
@given(st.integers(-(10**6), 10**6))
def test_a_number_and_its_numeric_string_are_equivalent(number: int) -> None:
    gold = {"name": "tag", "arguments": {"n": number}}
    assert score({"name": "tag", "arguments": {"n": str(number)}}, gold, [TAG_TOOL]) == (1, 1)
    assert score({"name": "tag", "arguments": {"n": float(number)}}, gold, [TAG_TOOL]) == (1, 1)
    assert score({"name": "tag", "arguments": {"n": str(number + 1)}}, gold, [TAG_TOOL]) == (0, 1)


@settings(max_examples=examples(100))
@given(st.permutations(["a", "b", "c", "d"]))
def test_an_array_the_schema_calls_unique_is_unordered(order: list[str]) -> None:
    gold = {"name": "tag", "arguments": {"tags": ["a", "b", "c", "d"]}}
    assert score({"name": "tag", "arguments": {"tags": order}}, gold, [TAG_TOOL]) == (1, 1)
    ordered = {"name": "route", "arguments": {"stops": ["a", "b", "c", "d"]}}
    same = order == ["a", "b", "c", "d"]
    got = score({"name": "route", "arguments": {"stops": order}}, ordered, [ROUTE_TOOL])
    assert got == (int(same), 1)


def test_dates_booleans_and_names() -> None:
    gold = {"name": "tag", "arguments": {"when": "2024-03-05T10:00:00Z"}}
    same = {"name": "tag", "arguments": {"when": "2024-03-05T10:00:00+00:00"}}
    later = {"name": "tag", "arguments": {"when": "2024-03-05T11:00:00+00:00"}}
    assert score(same, gold, [TAG_TOOL]) == (1, 1)
    assert score(later, gold, [TAG_TOOL]) == (0, 1)
    assert score({"name": "tag", "arguments": {"n": True}}, {"name": "tag", "arguments": {
        "n": 1}}, [TAG_TOOL]) == (0, 1)  # fmt: skip
    assert score({"name": "other", "arguments": {}}, {"name": "tag", "arguments": {}}, []) == (0, 1)
    assert score(None, TAG, [TAG_TOOL]) == (0, 1)


def test_the_cli_imports_glaive_rows_through_the_entry_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugins"]) == 0
    listing = capsys.readouterr().out
    assert "semantic_args  (entry point sommelier.scorers:semantic_args of sommelier-semantic" in (
        listing
    )
    assert "glaive  (entry point sommelier.importers:glaive of sommelier-semantic" in listing
    out = tmp_path / "prepared.jsonl"
    assert main(["import", "glaive", str(FIXTURE / "fixtures" / "glaive.jsonl"), "--out",
                 str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "2 converted, 2 skipped (no_call 1, no_tools 1)" in printed
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [row["gold_call"] for row in rows] == [
        {"name": "convert_currency", "arguments": {"amount": 12, "from": "EUR", "to": "JPY"}},
        {"name": "add_tags", "arguments": {"note_id": 7, "tags": ["work", "urgent"]}},
    ]
    assert rows[0]["query"] == "How much is 12 euros in yen?"
    assert [tool["name"] for tool in rows[1]["tools"]] == ["add_tags", "delete_note"]


def function(tool: dict[str, Any]) -> list[dict[str, Any]]:
    """A formatted row's tools: OpenAI function specs."""
    return [{"type": "function", "function": tool}]


def semantic_suite(pytester: pytest.Pytester) -> Path:
    rows = [
        make_row("en-0", "en", gold_call=TAG, tools=function(TAG_TOOL)),
        make_row("en-1", "en", gold_call=ROUTE, tools=function(ROUTE_TOOL)),
        make_row("en-2", "en", gold_call=NOOP, tools=function(ROUTE_TOOL)),
        make_row(
            "he-0",
            "he",
            "en-0",
            gold_call=TAG,
            tools=function(TAG_TOOL),
            prompt_text="<user>תייג</user>\n",
        ),
    ]
    gates = [{"name": "semantic", "arm": "adapter", "metric": "semantic_args", "min": 0.5}]
    suite = write_suite(
        pytester.path / "suite", rows=rows, model={"base": "fake-org/fake-model"},
        suite={"scorers": ["semantic_args"]}, gates=gates,
    )  # fmt: skip
    (suite.parent / "conftest.py").write_text(FAKE_CONFTEST)
    (suite.parent / "script.json").write_text(json.dumps({"adapter": ADAPTER, "base": {}}))
    return suite


def counts(report: dict[str, Any], *path: str) -> tuple[int, int]:
    block = report
    for key in path:
        block = block[key]
    value = block["metrics"]["semantic_args"]
    return value["numerator"], value["denominator"]


@pytest.mark.slow
def test_a_run_with_the_installed_scorer_rescores_the_same_and_refuses_an_impure_score(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    semantic_suite(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret == 0, result.stdout.str()
    loaded = "sommelier extensions: scorer semantic_args 1 (from entry point sommelier.scorers"
    result.stdout.fnmatch_lines([f"{loaded}:semantic_args of sommelier-semantic*"])
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    assert counts(adapter) == (2, 4)
    assert counts(adapter, "slices", "en") == (2, 3) and counts(adapter, "slices", "he") == (0, 1)
    assert adapter["metrics"]["full_call_exact_match"]["numerator"] == 1  # strict: en-2 only
    assert counts(read_json(out / "eval" / "base" / "evaluation_report.json")) == (0, 4)
    assert adapter["scorers"] == [{"name": "semantic_args", "version": "1", "kind": "rate"}]
    again = pytester.path / "again"
    assert main(["rescore", str(out), "--out", str(again)]) == 0
    capsys.readouterr()
    rescored = read_json(again / "eval" / "adapter" / "evaluation_report.json")
    assert rescored["metrics"]["semantic_args"] == adapter["metrics"]["semantic_args"]
    # a recorded score the scorer does not give again: the scorer is impure, one line, exit 4
    generations = out / "eval" / "adapter" / "generations.en.jsonl"
    records = read_jsonl(generations)
    records[1]["scores"]["semantic_args"] = [1, 1]
    generations.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["rescore", str(out), "--out", str(pytester.path / "third")]) == 4
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "SOM-SCORER-IMPURE" in error[0]
    assert "scorer 'semantic_args' 1" in error[0] and "example en-1" in error[0]
    assert not (pytester.path / "third").exists()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=4),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=examples(100))
@given(st.dictionaries(st.text(max_size=6), JSON, max_size=5), st.booleans())
def test_semantic_args_is_reflexive_and_total(arguments: dict[str, Any], unique: bool) -> None:
    schema = {"type": "object", "properties": {
        key: {"type": "array", "uniqueItems": unique} for key in arguments}}  # fmt: skip
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    call = {"name": "f", "arguments": arguments}
    assert score(call, call, tools) == (1, 1)
    assert score(None, call, tools) == (0, 1)


@settings(max_examples=examples(100))
@given(st.dictionaries(st.sampled_from(["system", "chat", "other"]), JSON | st.text(), max_size=3))
def test_a_hostile_glaive_row_is_a_candidate_a_skip_or_one_input_error(row: dict[str, Any]) -> None:
    from pytest_sommelier import Candidate, Skip
    from pytest_sommelier.errors import InputError

    try:
        outcome = glaive.convert(row, "rows.jsonl:3")
    except InputError as error:
        assert "\n" not in str(error) and "rows.jsonl:3" in str(error)
    else:
        assert isinstance(outcome, Candidate | Skip)
