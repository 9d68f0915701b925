"""``sommelier import openai-chat|hermes|xlam --abstention keep|skip``: rows whose assistant
answers without a call while tools are offered become abstention examples, or are skipped
with a line that says how to keep them; hostile rows stay one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.formatting import read_prepared
from pytest_sommelier.data.prepare.importers.common import ImportOptions
from pytest_sommelier.data.prepare.importers.driver import import_file
from pytest_sommelier.errors import InputError

WEATHER = {
    "name": "get_weather",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
CALL = {"name": "get_weather", "arguments": {"city": "Paris"}}


def chat_row(reply: dict[str, Any], query: str = "Weather in Paris?") -> dict[str, Any]:
    return {
        "messages": [{"role": "user", "content": query}, {"role": "assistant", **reply}],
        "tools": [{"type": "function", "function": WEATHER}],
    }


def hermes_row(reply: str) -> dict[str, Any]:
    system = f"Functions: <tools> {json.dumps([WEATHER])} </tools>"
    return {"conversations": [{"from": "system", "value": system},
                              {"from": "human", "value": "Book a flight."},
                              {"from": "gpt", "value": reply}]}  # fmt: skip


def xlam_row(answers: list[dict[str, Any]], query: str = "Book a flight.") -> dict[str, Any]:
    tools = [{"name": "get_weather", "description": "", "parameters": {
        "city": {"description": "", "type": "str"}}}]  # fmt: skip
    return {"query": query, "tools": json.dumps(tools), "answers": json.dumps(answers)}


ROWS = {
    "openai-chat": [
        chat_row({"tool_calls": [{"type": "function", "function": CALL}]}),
        chat_row({"content": "I can't book flights."}, query="Book a flight."),
    ],
    "hermes": [
        hermes_row(f"<tool_call>{json.dumps(CALL)}</tool_call>"),
        hermes_row("I can't book flights."),
    ],
    "xlam": [xlam_row([CALL], query="Weather in Paris?"), xlam_row([])],
}


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("fmt", sorted(ROWS))
def test_default_skips_and_says_how_to_keep(tmp_path: Path, fmt: str) -> None:
    result = import_file(fmt, write(tmp_path / "in.jsonl", ROWS[fmt]), tmp_path / "p.jsonl")
    assert result.written == 1
    (skipped,) = result.skipped
    assert skipped.reason == "no_call" and "--abstention keep" in skipped.detail


@pytest.mark.parametrize("fmt", sorted(ROWS))
def test_keep_writes_an_abstention_example(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "p.jsonl"
    options = ImportOptions(abstention="keep")
    result = import_file(fmt, write(tmp_path / "in.jsonl", ROWS[fmt]), out, options)
    assert result.written == 2 and result.skipped == []
    call, abstain = read_prepared(out)
    assert (call.expect, call.gold_call) == ("call", CALL)
    assert (abstain.expect, abstain.gold_call) == ("no_call", None)
    assert abstain.answer == (None if fmt == "xlam" else "I can't book flights.")
    line = json.loads(out.read_text().splitlines()[1])
    assert "gold_call" not in line and line["expect"] == "no_call"


def test_cli_option_and_its_refusal(tmp_path: Path, capsys) -> None:
    source = write(tmp_path / "in.jsonl", ROWS["openai-chat"])
    out = tmp_path / "p.jsonl"
    assert main(["import", "openai-chat", str(source), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "1 skipped (no_call 1)" in printed and "--abstention keep" in printed
    assert main(["import", "openai-chat", str(source), "--abstention", "keep", "--out",
                 str(out)]) == 0  # fmt: skip
    assert "2 converted, 0 skipped" in capsys.readouterr().out
    bad = ["import", "openai-chat", str(source), "--abstention", "maybe", "--out", str(out)]
    assert main(bad) == 2
    assert "--abstention" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("fmt", "row", "reason"),
    [
        # no reply at all is no answer, not an abstention
        ("openai-chat", {"messages": [{"role": "user", "content": "hi"}],
                         "tools": [WEATHER]}, "no_call"),
        # an unclosed <tool_call> in the reply is never kept as an abstention
        ("hermes", hermes_row('<tool_call>{"name": "get_weather"'), "no_call"),
        # an empty user turn is skipped as before, abstention or not
        ("openai-chat", chat_row({"content": "No."}, query="  "), "empty_query"),
    ],
)  # fmt: skip
def test_rows_that_are_not_abstentions_stay_skipped(
    tmp_path: Path, fmt: str, row: dict, reason: str
) -> None:
    rows = [*ROWS[fmt][:1], row]
    options = ImportOptions(abstention="keep")
    result = import_file(fmt, write(tmp_path / "in.jsonl", rows), tmp_path / "p.jsonl", options)
    assert [s.reason for s in result.skipped] == [reason]


@pytest.mark.parametrize(
    ("content", "field"),
    [(7, "messages[1].content"), ({"text": "x"}, "messages[1].content")],
)
def test_hostile_answer_content_is_one_line(tmp_path: Path, content: Any, field: str) -> None:
    """With ``--strict`` the row's own line; without it a counted ``malformed_row`` skip (a
    malformed row of a well-formed file never refuses the file, hardening V05)."""
    rows = [ROWS["openai-chat"][0], chat_row({"content": content})]
    with pytest.raises(InputError) as info:
        import_file("openai-chat", write(tmp_path / "in.jsonl", rows), tmp_path / "p.jsonl",
                    ImportOptions(abstention="keep", strict=True))  # fmt: skip
    assert field in str(info.value) and f"{tmp_path / 'in.jsonl'}:2" in str(info.value)
    assert not (tmp_path / "p.jsonl").exists()
    result = import_file("openai-chat", tmp_path / "in.jsonl", tmp_path / "p.jsonl",
                         ImportOptions(abstention="keep"))  # fmt: skip
    (skip,) = result.skipped
    assert skip.reason == "malformed_row" and field in skip.detail


@settings(max_examples=examples(40), deadline=None)
@given(st.text(max_size=40))
def test_any_text_answer_keeps_or_skips_but_never_breaks(answer: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder) / "in.jsonl", [ROWS["openai-chat"][0],
                                                 chat_row({"content": answer})])  # fmt: skip
        result = import_file("openai-chat", path, Path(folder) / "p.jsonl",
                             ImportOptions(abstention="keep"))  # fmt: skip
        assert result.written + len(result.skipped) == 2
        rows = read_prepared(Path(folder) / "p.jsonl")
        assert rows[-1].expect == "no_call"
        assert rows[-1].answer == (answer or None)
