"""Rows with several calls through ``sommelier import ... --parser v2`` and ``sommelier format
--parser v2`` (pytest_sommelier.data.prepare): each importer keeps them with ``gold_calls``
under v2 and skips them as before under v1 (byte-identical output); prepared ``gold_calls`` and
the formatted ``target_text`` array; the native policy renders every call; hostile values of
the new option and of several-call rows."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from tool_templates import HERMES, build_tokenizer

from pytest_sommelier.cli import main
from pytest_sommelier.core.call_sets import GOLD_CALLS_LIMIT
from pytest_sommelier.data.prepare.formatting import (
    POLICY_TOOLS_IN_SYSTEM_V1,
    POLICY_TOOLS_IN_SYSTEM_V2,
    TOOLS_IN_SYSTEM_V2_INSTRUCTION,
    check_parser,
    format_file,
    read_prepared,
    validate_prepared_row,
)
from pytest_sommelier.data.prepare.importers.common import ImportOptions
from pytest_sommelier.data.prepare.importers.driver import import_file
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1
from pytest_sommelier.errors import InputError

TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
TIMER = {"name": "set_timer", "parameters": {"type": "object",
                                             "properties": {"minutes": {"type": "integer"}}}}
PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
LONDON = {"name": "get_weather", "arguments": {"city": "London"}}
FIVE = {"name": "set_timer", "arguments": {"minutes": 5}}


def xlam_row(calls: list[Any], query: str = "Paris and London?") -> dict[str, Any]:
    tools = [{"name": "get_weather", "description": "Weather.",
              "parameters": {"city": {"type": "str", "description": "city"}}},
             {"name": "set_timer", "description": "Timer.",
              "parameters": {"minutes": {"type": "int", "description": "minutes"}}}]
    return {"query": query, "tools": json.dumps(tools), "answers": json.dumps(calls)}


def chat_row(calls: list[Any], query: str = "Paris and London?") -> dict[str, Any]:
    tool_calls = [{"type": "function", "function": {"name": c["name"],
                                                   "arguments": json.dumps(c["arguments"])}}
                  if isinstance(c, dict) else c for c in calls]  # fmt: skip
    return {"messages": [{"role": "user", "content": query},
                         {"role": "assistant", "content": None, "tool_calls": tool_calls}],
            "tools": [{"type": "function", "function": WEATHER},
                      {"type": "function", "function": TIMER}]}  # fmt: skip


def hermes_row(calls: list[Any], query: str = "Paris and London?") -> dict[str, Any]:
    blocks = "".join(f"<tool_call>\n{c if isinstance(c, str) else json.dumps(c)}\n</tool_call>"
                     for c in calls)  # fmt: skip
    tools = json.dumps([{"type": "function", "function": WEATHER},
                        {"type": "function", "function": TIMER}])  # fmt: skip
    return {"conversations": [
        {"from": "system", "value": f"You call functions. <tools> {tools} </tools>"},
        {"from": "human", "value": query},
        {"from": "gpt", "value": blocks}]}  # fmt: skip


ROWS = {"xlam": xlam_row, "openai-chat": chat_row, "hermes": hermes_row}


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def prepared_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------- the importers


@pytest.mark.parametrize("fmt", sorted(ROWS))
def test_v2_keeps_rows_with_several_calls_and_v1_skips_them_as_before(fmt: str, tmp_path: Path):
    make = ROWS[fmt]
    source = write_rows(tmp_path / "in.jsonl", [
        make([PARIS], "Paris?"), make([PARIS, LONDON]), make([LONDON, FIVE, PARIS], "All three"),
    ])  # fmt: skip
    v1 = import_file(fmt, source, tmp_path / "v1.jsonl")
    v2 = import_file(fmt, source, tmp_path / "v2.jsonl", ImportOptions(parser="v2"))
    assert [s.reason for s in v1.skipped] == ["several_calls", "several_calls"]
    assert v1.written == 1 and v2.written == 3 and not v2.skipped
    one, two, three = prepared_lines(tmp_path / "v2.jsonl")
    assert one == prepared_lines(tmp_path / "v1.jsonl")[0]  # a one-call row: byte for byte v1's
    assert (tmp_path / "v1.jsonl").read_text().splitlines()[0] == (
        (tmp_path / "v2.jsonl").read_text().splitlines()[0]
    )
    assert one["gold_call"] == PARIS and "gold_calls" not in one
    assert two["gold_calls"] == [PARIS, LONDON] and "gold_call" not in two
    assert three["gold_calls"] == [LONDON, FIVE, PARIS]
    examples = read_prepared(tmp_path / "v2.jsonl")
    assert examples[1].gold_call == PARIS and examples[1].calls == (PARIS, LONDON)


@pytest.mark.parametrize("fmt", sorted(ROWS))
def test_v2_checks_every_call_against_the_tools(fmt: str, tmp_path: Path):
    make = ROWS[fmt]
    ghost = {"name": "get_time", "arguments": {}}
    bad = {"name": "set_timer", "arguments": {"minutes": "five"}}
    source = write_rows(tmp_path / "in.jsonl", [make([PARIS, ghost]), make([PARIS, bad]),
                                                make([PARIS])])  # fmt: skip
    result = import_file(fmt, source, tmp_path / "p.jsonl", ImportOptions(parser="v2"))
    assert [s.reason for s in result.skipped] == ["undeclared_tool", "gold_invalid"]
    assert result.skipped[0].detail.startswith("call 1 names 'get_time'")
    assert result.skipped[1].detail.startswith("call 1: gold arguments")


def test_an_unreadable_call_of_several_is_the_rows_skip_and_strict_raises_its_line(tmp_path):
    source = write_rows(tmp_path / "in.jsonl", [
        hermes_row([PARIS, "{not json"]), hermes_row([PARIS], "Paris?"),
    ])  # fmt: skip
    result = import_file("hermes", source, tmp_path / "p.jsonl", ImportOptions(parser="v2"))
    assert [s.reason for s in result.skipped] == ["gold_unreadable"]
    assert "<tool_call>[1]" in result.skipped[0].detail
    with pytest.raises(InputError, match="SOM-IMPORT-JSON"):
        import_file("hermes", source, tmp_path / "q.jsonl",
                    ImportOptions(parser="v2", strict=True))  # fmt: skip
    with pytest.raises(InputError, match=r"SOM-IMPORT-STRICT.*several_calls"):
        import_file("hermes", source, tmp_path / "r.jsonl", ImportOptions(strict=True))
    assert not (tmp_path / "q.jsonl").exists() and not (tmp_path / "r.jsonl").exists()


def test_the_cli_option_imports_several_calls(tmp_path: Path, capsys: pytest.CaptureFixture):
    source = write_rows(tmp_path / "in.jsonl", [xlam_row([PARIS, LONDON])])
    out = tmp_path / "p.jsonl"
    assert main(["import", "xlam", str(source), "--out", str(out), "--parser", "v2"]) == 0
    assert "1 converted, 0 skipped" in capsys.readouterr().out
    assert prepared_lines(out)[0]["gold_calls"] == [PARIS, LONDON]
    assert main(["import", "xlam", str(source), "--out", str(out)]) == 2
    assert "several_calls" in capsys.readouterr().err
    assert main(["import", "xlam", str(source), "--out", str(out), "--parser", "v3"]) == 2
    assert "invalid choice: 'v3'" in capsys.readouterr().err


@settings(max_examples=examples(60), deadline=None)
@given(st.text(max_size=12).filter(lambda text: text not in ("v1", "v2")))
def test_hostile_parser_values_are_one_line(value: str):
    with tempfile.TemporaryDirectory() as folder:
        source = write_rows(Path(folder) / "in.jsonl", [xlam_row([PARIS])])
        with pytest.raises(InputError) as error:
            import_file("xlam", source, Path(folder) / "p.jsonl", ImportOptions(parser=value))
        assert error.value.code == "SOM-IMPORT-OPTIONS" and "--parser" in str(error.value)
        assert not (Path(folder) / "p.jsonl").exists()
    with pytest.raises(InputError, match="SOM-FORMAT-PARSER"):
        check_parser(value, POLICY_TOOLS_IN_SYSTEM_V1)


FLOATS = st.floats(allow_nan=False, allow_infinity=False)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | FLOATS | st.text(max_size=8)
ARGUMENTS = st.dictionaries(st.text(max_size=6), st.recursive(
    JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.text(max_size=4), inner, max_size=3), max_leaves=6), max_size=3)  # fmt: skip
HOSTILE_CALL = st.one_of(
    st.fixed_dictionaries({"name": st.sampled_from(["free", "get_weather", "nope", ""]),
                           "arguments": ARGUMENTS}),
    st.just("{not json"),
    st.just({"name": "free"}),
    st.just({"name": "free", "arguments": "[1]"}),
    JSON_SCALARS,
)  # fmt: skip


def hostile_row(fmt: str, calls: list[Any]) -> dict[str, Any]:
    free = {"name": "free", "parameters": {"type": "object", "properties": {}}}
    if fmt == "xlam":
        tools = [{"name": "free", "parameters": {}}, {"name": "get_weather", "parameters": {
            "city": {"type": "str"}}}]  # fmt: skip
        return {"query": "q", "tools": json.dumps(tools), "answers": json.dumps(calls)}
    if fmt == "openai-chat":
        return {"messages": [{"role": "user", "content": "q"},
                             {"role": "assistant", "tool_calls": calls}],
                "tools": [free, WEATHER]}  # fmt: skip
    blocks = "".join(f"<tool_call>{c if isinstance(c, str) else json.dumps(c)}</tool_call>"
                     for c in calls)  # fmt: skip
    return {"conversations": [
        {"from": "system", "value": f"<tools>{json.dumps([free, WEATHER])}</tools>"},
        {"from": "human", "value": "q"}, {"from": "gpt", "value": blocks}]}  # fmt: skip


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(ROWS)), st.lists(HOSTILE_CALL, min_size=2, max_size=4))
def test_hostile_several_call_rows_convert_or_are_counted_skips(fmt: str, calls: list[Any]):
    with tempfile.TemporaryDirectory() as folder:
        source = write_rows(Path(folder) / "in.jsonl", [hostile_row(fmt, calls)] * 1 + [
            hostile_row(fmt, [{"name": "free", "arguments": {}}])])  # fmt: skip
        out = Path(folder) / "p.jsonl"
        v1 = import_file(fmt, source, out, ImportOptions())
        assert [s.reason for s in v1.skipped] == ["several_calls"]
        v2 = import_file(fmt, source, out, ImportOptions(parser="v2"))
        assert v2.read == 2 and len(v2.skipped) + v2.written == 2
        rows = prepared_lines(out)
        if v2.written == 2:
            several = rows[0]["gold_calls"]
            assert len(several) == len(calls)
            assert [c["name"] for c in several] == [c["name"] for c in calls]
            assert validate_prepared_row(rows[0], "x", 1).calls == tuple(several)
        else:
            assert v2.skipped[0].example_id == f"{fmt}-1" and v2.skipped[0].reason in {
                "gold_unreadable", "malformed_row", "undeclared_tool", "gold_invalid"}


# ---------------------------------------------------------------- prepared rows and format


def prepared(**fields: Any) -> dict[str, Any]:
    row = {"example_id": "e-1", "language": "en", "source_example_id": None,
           "query": "Paris and London?", "tools": [WEATHER, TIMER]}  # fmt: skip
    row.update(fields)
    return row


@settings(max_examples=examples(100), deadline=None)
@given(st.one_of(JSON_SCALARS, st.lists(HOSTILE_CALL, max_size=3),
                 st.just([PARIS]), st.just([PARIS, "x"])))  # fmt: skip
def test_hostile_gold_calls_are_one_line_naming_the_field(value: Any):
    try:
        example = validate_prepared_row(prepared(gold_calls=value), "p.jsonl:1", 1)
    except InputError as error:
        assert error.code == "SOM-PREPARED-FIELD" and "gold_calls" in str(error)
        assert "\n" not in str(error)
    else:
        assert isinstance(value, list) and len(value) >= 2 and example.calls == tuple(value)


@settings(max_examples=examples(10), deadline=None)
@given(extra=st.integers(1, 500))
def test_gold_calls_over_the_split_limit_are_refused_before_formatting(extra: int):
    """A prepared row holds no more gold calls than a split row may (GOLD_CALLS_LIMIT, V36):
    one line at format time, not a formatted split the run then refuses; the limit passes."""
    at_limit = [PARIS, LONDON] * (GOLD_CALLS_LIMIT // 2)
    example = validate_prepared_row(prepared(gold_calls=at_limit), "p.jsonl:1", 1)
    assert len(example.calls) == GOLD_CALLS_LIMIT
    with pytest.raises(InputError) as caught:
        validate_prepared_row(prepared(gold_calls=at_limit + [PARIS] * extra), "p.jsonl:1", 1)
    text = str(caught.value)
    assert caught.value.code == "SOM-PREPARED-FIELD" and "\n" not in text
    assert f"holds {GOLD_CALLS_LIMIT + extra} calls, more than the {GOLD_CALLS_LIMIT}" in text
    assert "p.jsonl:1" in text and "'gold_calls'" in text


def test_gold_calls_beside_gold_call_or_on_an_abstention_row_is_refused():
    with pytest.raises(InputError, match=r"gold_calls.*beside gold_call"):
        validate_prepared_row(prepared(gold_call=PARIS, gold_calls=[PARIS, LONDON]), "p", 1)
    with pytest.raises(InputError, match=r"gold_calls.*expect 'no_call'"):
        validate_prepared_row(prepared(gold_calls=[PARIS, LONDON], expect="no_call"), "p", 1)


def write_prepared_rows(path: Path) -> Path:
    rows = [prepared(example_id="one", gold_call=PARIS),
            prepared(example_id="two", gold_calls=[PARIS, LONDON]),
            prepared(example_id="three", gold_calls=[LONDON, FIVE, PARIS])]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


FORMAT = {"tokenizer_id": "t", "tokenizer_revision": "r", "split": "test"}


def test_format_v2_writes_the_array_of_gold_calls_and_the_v2_instruction(tmp_path: Path):
    source = write_prepared_rows(tmp_path / "p.jsonl")
    rows = format_file(source, tmp_path / "f.jsonl", tokenizer=build_tokenizer(TEMPLATE),
                       policy=POLICY_TOOLS_IN_SYSTEM_V2, parser="v2", **FORMAT)  # fmt: skip
    assert [json.loads(row["target_text"]) for row in rows] == [
        [PARIS], [PARIS, LONDON], [LONDON, FIVE, PARIS]]  # fmt: skip
    assert all(row["template_policy"] == POLICY_TOOLS_IN_SYSTEM_V2 for row in rows)
    assert rows[0]["messages"][0]["content"].startswith(TOOLS_IN_SYSTEM_V2_INSTRUCTION)
    split = load_split(tmp_path / "f.jsonl", ["en"], parser_version="v2")
    assert [e.gold_calls for e in split.examples] == [
        (PARIS,), (PARIS, LONDON), (LONDON, FIVE, PARIS)]  # fmt: skip


def test_format_refuses_several_calls_under_v1_and_the_one_call_policy(tmp_path: Path):
    source = write_prepared_rows(tmp_path / "p.jsonl")
    tokenizer = build_tokenizer(TEMPLATE)
    with pytest.raises(InputError, match=r"SOM-FORMAT-PARSER.*'two' has 2 gold calls.*--parser v2"):
        format_file(source, tmp_path / "f.jsonl", tokenizer=tokenizer, **FORMAT)
    with pytest.raises(InputError, match=r"SOM-FORMAT-PARSER.*asks for exactly one"):
        format_file(source, tmp_path / "f.jsonl", tokenizer=tokenizer, parser="v2",
                    policy=POLICY_TOOLS_IN_SYSTEM_V1, **FORMAT)  # fmt: skip
    with pytest.raises(InputError, match=r"SOM-FORMAT-PARSER.*parser v1 reads one"):
        format_file(source, tmp_path / "f.jsonl", tokenizer=tokenizer,
                    policy=POLICY_TOOLS_IN_SYSTEM_V2, **FORMAT)  # fmt: skip
    assert not (tmp_path / "f.jsonl").exists()


def test_format_v1_of_one_call_rows_is_unchanged_by_the_option(tmp_path: Path):
    source = tmp_path / "p.jsonl"
    source.write_text(json.dumps(prepared(gold_call=PARIS)) + "\n", encoding="utf-8")
    tokenizer = build_tokenizer(TEMPLATE)
    format_file(source, tmp_path / "a.jsonl", tokenizer=tokenizer, **FORMAT)
    format_file(source, tmp_path / "b.jsonl", tokenizer=tokenizer, parser="v1",
                policy=POLICY_TOOLS_IN_SYSTEM_V1, **FORMAT)  # fmt: skip
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    v2 = format_file(source, tmp_path / "c.jsonl", tokenizer=tokenizer, parser="v2",
                     policy=POLICY_TOOLS_IN_SYSTEM_V1, **FORMAT)  # fmt: skip
    assert (tmp_path / "c.jsonl").read_bytes() == (tmp_path / "a.jsonl").read_bytes()
    assert v2[0]["target_text"] == json.dumps([PARIS], separators=(",", ":"), sort_keys=True)


def test_the_native_policy_renders_every_gold_call_and_parser_v2_reads_them(tmp_path: Path):
    source = write_prepared_rows(tmp_path / "p.jsonl")
    rows = format_file(source, tmp_path / "f.jsonl", tokenizer=build_tokenizer(HERMES),
                       policy=POLICY_NATIVE_TOOLS_V1, parser="v2", **FORMAT)  # fmt: skip
    assert rows[2]["target_text"].count("<tool_call>") == 3
    split = load_split(tmp_path / "f.jsonl", ["en"], parser_version="v2")
    assert [list(e.gold_calls or ()) for e in split.examples] == [
        [PARIS], [PARIS, LONDON], [LONDON, FIVE, PARIS]]  # fmt: skip


def test_the_format_cli_takes_the_parser(tmp_path: Path, capsys: pytest.CaptureFixture):
    source = write_prepared_rows(tmp_path / "p.jsonl")
    folder = tmp_path / "tok"
    from tool_templates import tokenizer_folder

    tokenizer_folder(folder, TEMPLATE)
    out = tmp_path / "f.jsonl"
    args = ["format", str(source), "--tokenizer", str(folder), "--split", "test", "--out",
            str(out)]  # fmt: skip
    assert main([*args, "--parser", "v2"]) == 0
    assert "wrote 3 formatted rows" in capsys.readouterr().out
    assert json.loads(out.read_text().splitlines()[1])["template_policy"] == (
        POLICY_TOOLS_IN_SYSTEM_V2
    )
    assert main(args) == 2
    assert "SOM-FORMAT-PARSER" in capsys.readouterr().err


def test_an_extension_candidate_with_several_calls_is_skipped_under_v1(tmp_path: Path):
    from pytest_sommelier import registry
    from pytest_sommelier.data.prepare.importers.common import Candidate, Importer

    def convert(row: dict[str, Any], where: str) -> Candidate:
        return Candidate("q", [WEATHER, TIMER], PARIS, gold_calls=[PARIS, FIVE])

    importers = registry.merge("importers", [("test", {"kv": Importer("kv rows", convert)})])
    source = write_rows(tmp_path / "in.jsonl", [{"a": 1}, {"a": 2}])
    with pytest.raises(InputError, match="several_calls 2"):
        import_file("kv", source, tmp_path / "p.jsonl", importers=importers)
    result = import_file("kv", source, tmp_path / "p.jsonl", ImportOptions(parser="v2"),
                         importers=importers)  # fmt: skip
    assert result.written == 2 and prepared_lines(tmp_path / "p.jsonl")[0]["gold_calls"] == [
        PARIS, FIVE]  # fmt: skip
