"""``sommelier import bfcl --parser v2``: BFCL's four parallel categories (real data from the
bfcl_eval wheel when present) become rows with ``gold_calls`` and one acceptable-values object
per call, which ``sommelier format --parser v2`` and a v2 split read; under parser v1 they are
refused with one line naming ``--parser v2``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.core.acceptable import calls_acceptable
from pytest_sommelier.data.prepare.bfcl import (
    PARALLEL_CATEGORIES,
    convert_row,
    import_bfcl,
    import_category,
    locate_source,
)
from pytest_sommelier.data.prepare.formatting import format_file, read_prepared
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.errors import InputError

REAL_WHEEL = Path("/work/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl")
needs_wheel = pytest.mark.skipif(not REAL_WHEEL.exists(), reason=f"BFCL wheel absent: {REAL_WHEEL}")
TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
FUNCTION = {
    "name": "spotify.play",
    "description": "Play songs.",
    "parameters": {
        "type": "dict",
        "properties": {"artist": {"type": "string"}, "duration": {"type": "integer"}},
        "required": ["artist", "duration"],
    },
}


def question(example_id: str = "parallel_0") -> dict[str, Any]:
    return {"id": example_id, "question": [[{"role": "user", "content": "Swift and Maroon 5"}]],
            "function": [FUNCTION]}  # fmt: skip


def answer(*calls: dict[str, Any], example_id: str = "parallel_0") -> dict[str, Any]:
    return {"id": example_id, "ground_truth": [{"spotify.play": c} for c in calls]}


SWIFT = {"artist": ["Taylor Swift", "T. Swift"], "duration": [20]}
MAROON = {"artist": ["Maroon 5"], "duration": [15]}


def convert(*calls: dict[str, Any], several: bool = True) -> Any:
    return convert_row(question(), answer(*calls), language="python", q_where="q:1",
                       a_where="a:1", several=several)  # fmt: skip


def test_a_parallel_row_holds_every_call_and_one_acceptable_object_per_call():
    row, skipped = convert(SWIFT, MAROON)
    assert skipped is None and row is not None
    assert row["gold_calls"] == [
        {"name": "spotify.play", "arguments": {"artist": "Taylor Swift", "duration": 20}},
        {"name": "spotify.play", "arguments": {"artist": "Maroon 5", "duration": 15}},
    ]
    assert "gold_call" not in row
    entries = row["acceptable_arguments"]
    assert [e["arguments"]["artist"]["values"] for e in entries] == [SWIFT["artist"],
                                                                     MAROON["artist"]]
    assert calls_acceptable(list(reversed(row["gold_calls"])), row["gold_calls"], entries, "any")
    one, _ = convert(SWIFT)
    assert one is not None and "gold_calls" not in one and isinstance(
        one["acceptable_arguments"], dict)


def test_a_bad_call_of_several_skips_the_row_naming_the_call():
    row, skipped = convert(SWIFT, {"artist": ["x"], "duration": [15], "volume": [3]})
    assert row is None and skipped is not None
    assert skipped.reason == "undeclared_parameter" and skipped.detail.startswith("call 1: ")
    with pytest.raises(InputError, match=r"ground_truth.*exactly one call"):
        convert(SWIFT, MAROON, several=False)


@pytest.mark.parametrize("category", sorted(PARALLEL_CATEGORIES))
def test_parallel_categories_under_v1_are_one_line_naming_the_option(category, tmp_path):
    with pytest.raises(InputError) as error:
        import_bfcl([category], tmp_path, tmp_path / "out.jsonl")
    assert error.value.code == "SOM-BFCL-PARALLEL" and "--parser v2" in str(error.value)
    assert "\n" not in str(error.value) and not (tmp_path / "out.jsonl").exists()


@settings(max_examples=examples(40), deadline=None)
@given(st.text(max_size=10).filter(lambda text: text not in ("v1", "v2")))
def test_hostile_parser_values_are_refused_before_any_file_is_read(value):
    with pytest.raises(InputError) as error:
        import_bfcl(["parallel"], "/nonexistent", "/nonexistent/out.jsonl", parser=value)
    assert error.value.code == "SOM-BFCL-CATEGORY" and "--parser" in str(error.value)


@needs_wheel
def test_the_real_parallel_categories_import_format_and_load_under_v2(tmp_path: Path):
    source = locate_source(REAL_WHEEL)
    counts = {}
    for category in PARALLEL_CATEGORIES:
        result = import_category(source, category, parser="v2")
        counts[category] = (len(result.rows), len(result.skipped))
        for row in result.rows:
            calls = row.get("gold_calls") or [row["gold_call"]]
            entries = row["acceptable_arguments"]
            entries = entries if isinstance(entries, list) else [entries]
            assert len(entries) == len(calls)
            assert calls_acceptable(list(reversed(calls)), calls, entries, "any")
    assert counts == {"parallel": (200, 0), "parallel_multiple": (196, 4),
                      "live_parallel": (15, 1), "live_parallel_multiple": (23, 1)}  # fmt: skip
    out = tmp_path / "p.jsonl"
    outcome = import_bfcl(list(PARALLEL_CATEGORIES), REAL_WHEEL, out, parser="v2", sample=40)
    assert outcome.written == 40
    examples = read_prepared(out)
    assert sum(example.gold_calls is not None for example in examples) >= 30
    from tool_templates import build_tokenizer

    format_file(out, tmp_path / "f.jsonl", tokenizer=build_tokenizer(TEMPLATE), parser="v2",
                policy="sommelier.tools-in-system.v2", tokenizer_id="t", tokenizer_revision="r",
                split="test")  # fmt: skip
    split = load_split(tmp_path / "f.jsonl", ["en"], parser_version="v2")
    assert [len(e.gold_calls or ()) for e in split.examples] == [
        len(example.calls) for example in examples]  # fmt: skip
    assert all(
        isinstance(e.acceptable_arguments, list) == (len(e.gold_calls or ()) > 1)
        for e in split.examples
    )


@needs_wheel
def test_the_cli_imports_a_parallel_category(tmp_path: Path, capsys: pytest.CaptureFixture):
    out = tmp_path / "p.jsonl"
    args = ["import", "bfcl", "--category", "live_parallel", "--source", str(REAL_WHEEL),
            "--out", str(out)]  # fmt: skip
    assert main([*args, "--parser", "v2"]) == 0
    assert "live_parallel: 15 converted, 1 skipped (system_message 1)" in capsys.readouterr().out
    assert all("gold_calls" in json.loads(line) for line in out.read_text().splitlines())
    assert main(args) == 2
    assert "SOM-BFCL-PARALLEL" in capsys.readouterr().err
