"""A malformed row of a well-formed file is a counted skip, never a refusal of the whole file
(docs/hardening.md, row V05): the Hermes function-calling dataset's own "structured extraction"
example and an old-format OpenAI row (``functions`` / ``function_call``) import with the bad
rows counted; ``--strict`` makes any skip fatal; a malformed file (a line that is not JSON)
stays fatal. Hermes gold calls written as Python literals are converted and noted.

The rows below are written from the issue's description of the public data (no hub).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from test_importers import (
    OPENAI_ROWS,
    WEATHER,
    assistant,
    call,
    chat,
    hermes,
    user,
    wrapped,
    write_jsonl,
)

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.importers.common import ImportOptions
from pytest_sommelier.data.prepare.importers.driver import import_file
from pytest_sommelier.errors import InputError

EXTRACT = {
    "name": "extract_company",
    "description": "Structured extraction of a company record.",
    "parameters": {"type": "object", "properties": {"company": {"type": "string"},
                                                    "founded": {"type": "integer"}}},
}  # fmt: skip
TOOLS = json.dumps([wrapped(WEATHER), wrapped(EXTRACT)])
HERMES_FILE = [
    # 1: a JSON gold call
    hermes(TOOLS, '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                  "</tool_call>"),
    # 2: a Python-literal gold call (single quotes): converted, noted
    hermes(TOOLS, "<tool_call>\n{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}\n"
                  "</tool_call>", human="Weather in Oslo?"),
    # 3: the dataset's structured-extraction example: a literal backslash-n around the call
    # and the call's name inside its arguments
    hermes(TOOLS, '<tool_call>\\n{"arguments": {"name": "extract_company", "company": "Acme", '
                  '"founded": 1999}}\\n</tool_call>', human="Extract: Acme, founded 1999."),
    # 4: another JSON gold call
    hermes(TOOLS, '<tool_call>{"name": "extract_company", "arguments": {"company": "Initech"}}'
                  "</tool_call>", human="Extract: Initech."),
]
LEGACY = {
    "functions": [WEATHER],
    "messages": [user("Weather in Rome?"),
                 {"role": "assistant", "content": None,
                  "function_call": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}],
}  # fmt: skip


def test_the_hermes_structured_extraction_example_is_a_counted_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """V05: one unreadable call made ``import hermes`` stop (rc 2, nothing written)."""
    source = write_jsonl(tmp_path / "hermes.jsonl", HERMES_FILE)
    out = tmp_path / "prepared.jsonl"
    assert main(["import", "hermes", str(source), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"hermes {source}: 3 converted, 1 skipped (gold_unreadable 1)" in text
    assert "skipped hermes-3 (gold_unreadable)" in text and "literal backslash-n" in text
    assert f"[{source}:3]" in text
    assert "note hermes-2 (python_literal_gold)" in text and "invalid_json" in text
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["example_id"] for row in written] == ["hermes-1", "hermes-2", "hermes-4"]
    assert written[1]["gold_call"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}
    assert main(["import", "hermes", str(source), "--out", str(tmp_path / "s.jsonl"),
                 "--strict"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "SOM-IMPORT-JSON" in err and f"{source}:3" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "s.jsonl").exists()


def test_an_old_format_openai_row_is_a_counted_legacy_functions_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """V05: one ``functions`` / ``function_call`` row stopped ``import openai-chat`` with
    ``SOM-IMPORT-FIELD: ...:3: field 'tools': missing``."""
    source = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROWS[0], OPENAI_ROWS[1], LEGACY])
    out = tmp_path / "p.jsonl"
    assert main(["import", "openai-chat", str(source), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 converted, 1 skipped (legacy_functions 1)" in text
    assert "skipped openai-chat-3 (legacy_functions)" in text and "tool_calls" in text
    assert len(out.read_text().splitlines()) == 2
    assert main(["import", "openai-chat", str(source), "--out", str(out), "--strict"]) == 2
    err = capsys.readouterr().err
    assert "SOM-IMPORT-STRICT" in err and f"{source}:3" in err and "legacy_functions" in err
    assert len(out.read_text().splitlines()) == 2  # the earlier output kept


def test_a_malformed_file_stays_fatal(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROWS[0], "{not json"])
    with pytest.raises(InputError, match=r"SOM-IMPORT-JSON.*chat.jsonl:2"):
        import_file("openai-chat", source, tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()


def test_a_skip_that_is_no_malformed_row_is_fatal_under_strict(tmp_path: Path) -> None:
    rows = [OPENAI_ROWS[0], chat(user(), assistant())]  # no call: a skip the method has
    source = write_jsonl(tmp_path / "chat.jsonl", rows)
    assert import_file("openai-chat", source, tmp_path / "o.jsonl").written == 1
    with pytest.raises(InputError) as caught:
        import_file("openai-chat", source, tmp_path / "s.jsonl", ImportOptions(strict=True))
    assert caught.value.code == "SOM-IMPORT-STRICT" and "(no_call)" in str(caught.value)


HOSTILE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6,
)
PATHS = [("messages",), ("tools",), ("messages", 0), ("messages", 1), ("messages", 1, "tool_calls"),
         ("messages", 1, "tool_calls", 0), ("messages", 1, "tool_calls", 0, "function"),
         ("messages", 1, "tool_calls", 0, "function", "arguments"), ("tools", 0),
         ("messages", 0, "role"), ("messages", 0, "content")]  # fmt: skip


def _replaced(row: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    row = json.loads(json.dumps(row))
    target: Any = row
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return row


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(path=st.sampled_from(PATHS), value=HOSTILE, strict=st.booleans())
def test_a_hostile_field_in_one_row_skips_that_row_or_with_strict_is_one_line(
    tmp_path: Path, path: tuple[Any, ...], value: Any, strict: bool
) -> None:
    """Hypothesis (fast tier): one row of a well-formed file with a hostile value in any
    field: the other rows are written and that row is converted or counted as a skip; with
    ``--strict`` it converts or is one ``SOM-`` line and nothing is written."""
    good = chat(user(), assistant(call("get_weather", {"city": "Rome"})))
    bad = _replaced(good, path, value)
    source = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROWS[0], bad])
    out = tmp_path / "o.jsonl"
    out.unlink(missing_ok=True)
    try:
        result = import_file("openai-chat", source, out, ImportOptions(strict=strict))
    except InputError as error:
        assert strict and "\n" not in str(error) and str(error).startswith("SOM-IMPORT-")
        assert not out.exists()
        return
    assert result.written + len(result.skipped) == 2 and result.written >= 1
    assert all(item.where == f"{source}:2" for item in result.skipped)
    assert not (strict and result.skipped)
