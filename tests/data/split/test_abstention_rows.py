"""Abstention rows through ``sommelier format`` and the split loader: ``expect`` in prepared
and formatted rows (``sommelier.formatted_example.v3``; v2 rows read unchanged), the call
markers found from each family's template, and the hostile rows refused with one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from suite_factory import make_row, write_split
from tool_templates import FAMILIES, HERMES, LLAMA3, build_tokenizer, tokenizer_folder
from transformers import AutoTokenizer  # noqa: F401  (torch once per process: see test_native_policy)

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.formatting import (
    POLICY_TOOLS_IN_SYSTEM_V1,
    format_example,
    validate_prepared_row,
)
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1, wrapper_markers
from pytest_sommelier.data.split.schema import SCHEMA_VERSION_V3 as SCHEMA_VERSION
from pytest_sommelier.errors import InputError

WEATHER = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def prepared(**changes: Any) -> dict[str, Any]:
    row = {
        "example_id": "en-n1",
        "language": "en",
        "source_example_id": None,
        "query": "Book me a flight to Rome.",
        "tools": [WEATHER],
        "expect": "no_call",
        "answer": "I can't book flights; I can only look up the weather.",
    }
    row.update(changes)
    return row


def formatted(row: dict[str, Any], template: str, policy: str, key: str = "arguments") -> dict:
    example = validate_prepared_row(row, "p.jsonl:1", 1)
    return format_example(
        example, build_tokenizer(template), split="test", policy=policy, tokenizer_id="t",
        tokenizer_revision="r", arguments_key=key,
    )  # fmt: skip


def test_hermes_no_call_row_records_its_wrapper_and_its_answer() -> None:
    row = formatted(prepared(), HERMES, POLICY_NATIVE_TOOLS_V1)
    assert row["schema_version"] == SCHEMA_VERSION == "sommelier.formatted_example.v3"
    assert row["expect"] == "no_call"
    assert row["call_markers"] == ["<tool_call>", "</tool_call>"]
    assert row["target_text"].startswith("I can't book flights")
    assert row["full_text"].startswith(row["prompt_text"])
    assert list(row)[-2:] == ["expect", "call_markers"]


def test_llama3_bare_json_has_no_wrapper() -> None:
    row = formatted(prepared(), LLAMA3, POLICY_NATIVE_TOOLS_V1, "parameters")
    assert row["call_markers"] == []


def test_tools_in_system_no_call_row_has_no_markers_and_may_have_no_answer() -> None:
    row = formatted(prepared(answer=None), LLAMA3, POLICY_TOOLS_IN_SYSTEM_V1)
    assert (row["target_text"], row["call_markers"], row["expect"]) == ("", [], "no_call")
    assert "tools" not in row


def test_any_call_rows_list_their_tools_under_either_policy() -> None:
    row = formatted(prepared(expect="any_call"), HERMES, POLICY_TOOLS_IN_SYSTEM_V1)
    assert [spec["function"]["name"] for spec in row["tools"]] == ["get_weather"]


@pytest.mark.parametrize(
    ("call_target", "empty_target", "markers"),
    [
        ('<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>', "<|im_end|>",
         ("<tool_call>", "</tool_call>")),
        ('<think>\n\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
         "<|im_end|>", "<think>\n\n</think>\n\n<|im_end|>", ("<tool_call>", "</tool_call>")),
        ('{"name": "f", "parameters": {}}<|eot_id|>', "<|eot_id|>", ()),
        ('<|python_tag|>{"name": "f", "arguments": {}}<|eom_id|>', "<|eot_id|>",
         ("<|python_tag|>", "<|eom_id|>")),
        ("no call at all", "", ()),
    ],
)  # fmt: skip
def test_wrapper_markers(call_target: str, empty_target: str, markers: tuple) -> None:
    assert wrapper_markers(call_target, empty_target) == markers


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_scorable_family_formats_a_no_call_row(family: str) -> None:
    template, key = FAMILIES[family]
    row = formatted(prepared(), template, POLICY_NATIVE_TOOLS_V1, key)
    assert all(marker and marker.strip() == marker for marker in row["call_markers"])
    assert not any(marker in row["target_text"] for marker in row["call_markers"])


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"expect": "never"}, "expect", "is not one of call, no_call, any_call"),
        ({"expect": 3}, "expect", "is not one of"),
        ({"gold_call": {"name": "get_weather", "arguments": {}}}, "gold_call", "is set on a row"),
        ({"answer": 7}, "answer", "must be a string"),
        ({"expect": "call", "gold_call": {"name": "get_weather", "arguments": {}}}, "answer",
         "is for a row without a gold call"),
        ({"expect": "call"}, "gold_call", "missing"),
        ({"acceptable_arguments": {"language": "python", "required": [], "arguments": {}}},
         "acceptable_arguments", "is set on a row"),
    ],
)  # fmt: skip
def test_hostile_prepared_rows_are_one_line(changes: dict, field: str, says: str) -> None:
    with pytest.raises(InputError) as info:
        validate_prepared_row(prepared(**changes), "p.jsonl:1", 1)
    assert info.value.code == "SOM-PREPARED-FIELD"
    assert f"field {field!r}" in str(info.value) and says in str(info.value)
    assert "p.jsonl:1" in str(info.value)


def v3_no_call(example_id: str, language: str, **overrides: Any) -> dict[str, Any]:
    prompt = f"<user>{example_id}</user>\n"
    fields = {"schema_version": SCHEMA_VERSION, "target_text": "", "full_text": prompt,
              "expect": "no_call", "call_markers": ["<tool_call>"], **overrides}  # fmt: skip
    return make_row(example_id, language, prompt_text=prompt, **fields)


def test_loader_reads_v2_and_v3_rows_together(tmp_path: Path) -> None:
    path = write_split(tmp_path / "s.jsonl", [make_row("en-0", "en"), v3_no_call("en-1", "en")])
    split = load_split(path, ["en"])
    call, no_call = split.examples
    assert (call.expect, call.gold_call is not None, call.call_markers) == ("call", True, ())
    assert (no_call.expect, no_call.gold_call, no_call.call_markers) == (
        "no_call",
        None,
        ("<tool_call>",),
    )


@pytest.mark.parametrize(
    ("row", "code", "says"),
    [
        (v3_no_call("en-1", "en", expect="maybe"), "SOM-SPLIT-FIELD", "'expect'"),
        (v3_no_call("en-1", "en", call_markers=[""]), "SOM-SPLIT-FIELD", "'call_markers[0]'"),
        (v3_no_call("en-1", "en", call_markers="<tool_call>"), "SOM-SPLIT-FIELD",
         "'call_markers'"),
        (v3_no_call("en-1", "en", expect="any_call"), "SOM-SPLIT-FIELD", "lists no tools"),
        (v3_no_call("en-1", "en", acceptable_arguments={"language": "python", "required": [],
                                                        "arguments": {}}),
         "SOM-SPLIT-FIELD", "acceptable_arguments"),
        (make_row("en-1", "en", expect="no_call"), "SOM-SPLIT-FIELD", "'expect'"),
        (v3_no_call("en-1", "en", expect="call"), "SOM-SPLIT-GOLD-CALL", "is empty"),
        (v3_no_call("en-1", "en", schema_version=["v3"]), "SOM-SPLIT-SCHEMA-VERSION",
         "unknown schema_version"),
    ],
)  # fmt: skip
def test_hostile_split_rows_are_one_line(tmp_path: Path, row: dict, code: str, says: str) -> None:
    path = write_split(tmp_path / "s.jsonl", [make_row("en-0", "en"), row])
    with pytest.raises(InputError) as info:
        load_split(path, ["en"])
    assert info.value.code == code and says in str(info.value), str(info.value)
    assert f"{path}:2" in str(info.value)


def test_cli_formats_a_mixed_file_the_loader_reads(tmp_path: Path) -> None:
    tok = tokenizer_folder(tmp_path / "hermes", HERMES)
    rows = [
        {**prepared(), "example_id": "en-0", "expect": "call", "answer": None,
         "gold_call": {"name": "get_weather", "arguments": {"city": "Rome"}}},
        prepared(),
        {**prepared(), "example_id": "he-n1", "language": "he", "source_example_id": "en-n1",
         "query": "תזמין לי טיסה לרומא.", "answer": "אני לא יכול להזמין טיסות."},
    ]  # fmt: skip
    rows[0].pop("answer")
    prepared_file = tmp_path / "p.jsonl"
    prepared_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = tmp_path / "test.jsonl"
    args = ["format", str(prepared_file), "--tokenizer", str(tok), "--split", "test", "--out",
            str(out), "--policy", POLICY_NATIVE_TOOLS_V1]  # fmt: skip
    assert main(args) == 0
    split = load_split(out, ["en", "he"])
    assert [e.expect for e in split.examples] == ["call", "no_call", "no_call"]
    assert split.pairs["he"] == (("en-n1", "he-n1"),)
    assert split.examples[1].call_markers == ("<tool_call>", "</tool_call>")


def test_a_translation_must_expect_what_its_root_expects(tmp_path: Path, capsys) -> None:
    rows = [prepared(), {**prepared(), "example_id": "he-n1", "language": "he",
                         "source_example_id": "en-n1", "expect": "any_call"}]  # fmt: skip
    prepared_file = tmp_path / "p.jsonl"
    prepared_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tok = tokenizer_folder(tmp_path / "hermes", HERMES)
    code = main(["format", str(prepared_file), "--tokenizer", str(tok), "--split", "test",
                 "--out", str(tmp_path / "o.jsonl")])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "SOM-PREPARED-PAIR-MISMATCH" in err and "'expect'" in err
