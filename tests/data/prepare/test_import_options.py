"""``sommelier import openai-chat|xlam|hermes`` options that left users guessing (rows R55-R57
of docs/hardening.md): ``--source-field`` without ``--id-field``, a kept ``system`` turn the
default format policy refuses, and ``--language-field``'s help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tool_templates import tokenizer_folder

from pytest_sommelier.cli import build_parser, main

PLAIN = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def row(query: str, *, system: str | None = None, **extra: object) -> dict[str, object]:
    messages = [{"role": "system", "content": system}] if system else []
    messages += [
        {"role": "user", "content": query},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ]  # fmt: skip
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    return {"messages": messages, "tools": tools, **extra}


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_source_field_without_an_id_field_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R55: the translation's source_example_id failed with "is not a root row of this file"
    (the ids were openai-chat-N, which the hint did not say)."""
    source = write(tmp_path / "rows.jsonl", [
        row("hi", rid="a1", lang="en"), row("shalom", rid="b1", root="a1", lang="he")])  # fmt: skip
    out = tmp_path / "out.jsonl"
    argv = ["import", "openai-chat", str(source), "--language-field", "lang",
            "--source-field", "root", "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "SOM-IMPORT-OPTIONS: --source-field:" in err and "without --id-field" in err
    assert len(err.splitlines()) == 1 and not out.exists()
    assert main([*argv, "--id-field", "rid"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["example_id"], r["source_example_id"]) for r in rows] == [("a1", None), ("b1", "a1")]


def test_a_kept_system_turn_names_the_policy_and_drop_system_drops_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R56: the importer kept `system`, which the default format policy refused, with no flag
    to drop it and no word on which policy takes it."""
    source = write(tmp_path / "rows.jsonl", [row("hi", system="Be brief.")])
    kept, dropped = tmp_path / "kept.jsonl", tmp_path / "dropped.jsonl"
    assert main(["import", "openai-chat", str(source), "--out", str(kept)]) == 0
    out = capsys.readouterr().out
    assert "1 rows keep their own system turn: format them with --policy " \
        "sommelier.native-tools.v1" in out and "--drop-system" in out
    tok = tokenizer_folder(tmp_path / "tok", PLAIN)
    split = tmp_path / "split.jsonl"
    fmt = ["format", "--tokenizer", str(tok), "--split", "test", "--out", str(split)]
    assert main([*fmt, str(kept)]) == 2
    assert "sommelier import --drop-system" in capsys.readouterr().err
    assert main(["import", "openai-chat", str(source), "--drop-system", "--out", str(dropped)]) == 0
    assert "system" not in json.loads(dropped.read_text())
    assert "keep their own system turn" not in capsys.readouterr().out
    assert main([*fmt, str(dropped)]) == 0


@pytest.mark.parametrize("source", ["openai-chat", "xlam", "hermes"])
def test_the_language_field_help_is_a_whole_phrase(
    source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """R57: `--language-field`'s help read "the field with each row's"."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["import", source, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the field holding each row's language" in text
    assert "--drop-system" in text
