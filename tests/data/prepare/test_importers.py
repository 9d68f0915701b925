"""``sommelier import openai-chat|xlam|hermes`` (pytest_sommelier.data.prepare.importers) and BFCL
rows
with a system turn under the native policy: hand-written rows of each format, in JSON lines, a
JSON array and Parquet, round-trip into prepared rows that ``sommelier format`` accepts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from tool_templates import HERMES, build_tokenizer, tokenizer_folder

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.bfcl import import_bfcl
from pytest_sommelier.data.prepare.formatting import format_examples, read_prepared
from pytest_sommelier.data.prepare.importers.common import ImportOptions, Skipped, summary_lines
from pytest_sommelier.data.prepare.importers.driver import import_file
from pytest_sommelier.data.prepare.importers.xlam import UnknownType, parameters_schema, type_schema
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1
from pytest_sommelier.errors import InputError, SommelierEnvironmentError

NATIVE = POLICY_NATIVE_TOOLS_V1
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
}
TIMER = {"name": "set_timer", "parameters": {"type": "object",
                                             "properties": {"minutes": {"type": "integer"}}}}


def wrapped(tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": tool}


def call(name: str, arguments: Any) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}


def chat(*messages: dict[str, Any], tools: Any = None) -> dict[str, Any]:
    return {"messages": list(messages), "tools": [wrapped(WEATHER), wrapped(TIMER)]
            if tools is None else tools}


def user(text: str = "Weather in Paris for 2 days?") -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(*calls: dict[str, Any], content: Any = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


OPENAI_ROWS = [
    # 1: converts, arguments as a JSON string (OpenAI), system kept
    chat({"role": "system", "content": "Be brief."}, user(),
         assistant(call("get_weather", '{"city": "Paris", "days": 2}'))),
    # 2: converts, arguments as an object (HF), bare tools, developer role, text parts
    chat({"role": "developer", "content": [{"type": "text", "text": "Dev note."}]},
         {"role": "user", "content": [{"type": "text", "text": "Timer, "},
                                      {"type": "text", "text": "5 minutes"}]},
         assistant({"name": "set_timer", "arguments": {"minutes": 5}}, content="Sure."),
         tools=[WEATHER, TIMER]),
    # 3: several_calls
    chat(user(), assistant(call("get_weather", "{}"), call("set_timer", "{}"))),
    # 4: no_call (prose only)
    chat(user(), {"role": "assistant", "content": "It is sunny."}),
    # 5: multi_turn (a tool result and a second reply)
    chat(user(), assistant(call("get_weather", '{"city": "Paris"}')),
         {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "Sunny."}),
    # 6: undeclared_tool
    chat(user(), assistant(call("get_time", "{}"))),
    # 7: gold_invalid (days must be an integer)
    chat(user(), assistant(call("get_weather", '{"city": "Paris", "days": "two"}'))),
    # 8: converts, tools as a JSON string (as Parquet datasets store them)
    chat(user("Paris weather"), assistant(call("get_weather", {"city": "Paris"})),
         tools=json.dumps([wrapped(WEATHER)])),
]

XLAM_TOOLS = [
    {
        "name": "live_giveaways_by_type",
        "description": "Live giveaways of one type.",
        "parameters": {
            "type": {"description": "game, loot or beta", "type": "str", "default": "game"},
            "limit": {"description": "how many", "type": "int, optional"},
            "platforms": {"description": "which", "type": "List[str]"},
        },
    },
    {
        "name": "convert",
        "description": "Convert an amount.",
        "parameters": {"amount": {"description": "amount", "type": "float"},
                       "to": {"description": "currency", "type": "Optional[str]"}},
    },
]


def xlam(query: str, answers: list[dict[str, Any]], tools: list | None = None, **extra: Any):
    return {"id": extra.pop("id", 0), "query": query,
            "tools": json.dumps(XLAM_TOOLS if tools is None else tools),
            "answers": json.dumps(answers), **extra}


XLAM_ROWS = [
    xlam("Beta giveaways on pc", [{"name": "live_giveaways_by_type",
                                   "arguments": {"type": "beta", "platforms": ["pc"]}}], id=10),
    xlam("10 EUR", [{"name": "convert", "arguments": {"amount": 10}}], id=11),
    xlam("Both", [{"name": "convert", "arguments": {"amount": 1}},
                  {"name": "convert", "arguments": {"amount": 2}}], id=12),
    xlam("Nothing", [], id=13),
    xlam("Strings", [{"name": "convert", "arguments": {"amount": "ten"}}], id=14),
    xlam("Callback", [{"name": "cb", "arguments": {}}],
         tools=[{"name": "cb", "description": "", "parameters": {
             "fn": {"description": "", "type": "Callable"}}}], id=15),
]

HERMES_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within "
    "<tools></tools> XML tags.<tools> {tools} </tools> For each function call return a json "
    "object within <tool_call></tool_call> XML tags."
)


def hermes(tools: str, reply: str, *more: dict[str, str], human: str = "Weather in Paris?"):
    return {"id": "h", "conversations": [
        {"from": "system", "value": HERMES_SYSTEM.format(tools=tools)},
        {"from": "human", "value": human},
        {"from": "gpt", "value": reply}, *more]}


HERMES_ROWS = [
    hermes(json.dumps([wrapped(WEATHER)]),
           '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'),
    # Python literals, as many Hermes rows are written
    hermes(repr([wrapped(WEATHER), wrapped(TIMER)]),
           "<tool_call>\n{'arguments': {'minutes': 5}, 'name': 'set_timer'}\n</tool_call>",
           human="5 minute timer"),
    # one tool per line
    hermes(json.dumps(wrapped(WEATHER)) + "\n" + json.dumps(wrapped(TIMER)),
           'Calling it. <tool_call>{"name": "set_timer", "arguments": {"minutes": 1}}'
           "</tool_call>", human="1 minute timer"),
    hermes(json.dumps([wrapped(WEATHER)]), "It is sunny."),
    hermes(json.dumps([wrapped(WEATHER)]),
           '<tool_call>{"name": "get_weather", "arguments": {"city": "A"}}</tool_call>'
           '<tool_call>{"name": "get_weather", "arguments": {"city": "B"}}</tool_call>'),
    hermes(json.dumps([wrapped(WEATHER)]),
           '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',
           {"from": "tool", "value": "sunny"}, {"from": "gpt", "value": "Sunny."}),
    {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]},
]


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def reasons(skipped: list[Skipped]) -> list[str]:
    return [item.reason for item in skipped]


def formats_under_both_policies(path: Path, tools_in_system: bool = True) -> None:
    """The prepared file passes ``sommelier format``'s validation and renders (native always;
    tools-in-system when no row has a system turn)."""
    examples = read_prepared(path)
    rows = format_examples(examples, build_tokenizer(HERMES), split="test", policy=NATIVE,
                           tokenizer_id="t", tokenizer_revision="r")
    assert len(rows) == len(examples)
    if tools_in_system:
        format_examples(examples, build_tokenizer(HERMES), split="test", tokenizer_id="t",
                        tokenizer_revision="r")


# ---------------------------------------------------------------- openai-chat


def test_openai_chat_converts_and_skips_with_reasons(tmp_path: Path):
    out = tmp_path / "p.jsonl"
    result = import_file("openai-chat", write_jsonl(tmp_path / "chat.jsonl", OPENAI_ROWS), out)
    assert result.read == 8 and result.written == 3
    assert reasons(result.skipped) == ["several_calls", "no_call", "multi_turn",
                                       "undeclared_tool", "gold_invalid"]
    assert [s.example_id for s in result.skipped] == [f"openai-chat-{n}" for n in (3, 4, 5, 6, 7)]
    assert result.skipped[0].where == f"{tmp_path / 'chat.jsonl'}:3"
    first, second, third = read_prepared(out)
    assert first.example_id == "openai-chat-1" and first.system == "Be brief."
    assert first.gold_call == {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
    assert list(first.tools) == [WEATHER, TIMER]
    assert second.system == "Dev note." and second.query == "Timer, 5 minutes"
    assert second.gold_call == {"name": "set_timer", "arguments": {"minutes": 5}}
    assert third.system is None and list(third.tools) == [WEATHER]
    formats_under_both_policies(out, tools_in_system=False)


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"tools": []}, "messages"),
        (chat(user(), assistant(call("get_weather", "{city: Paris}"))),
         "messages[1].tool_calls[0].function.arguments"),
        (chat({"role": 3, "content": "x"}), "messages[0].role"),
        (chat(user(), assistant(call("get_weather", "[1]"))),
         "messages[1].tool_calls[0].function.arguments"),
        (chat(user(), assistant(call("get_weather", "{}")), tools=[{"type": "function"}]),
         "tools[0].name"),
        ({"messages": [user()], "tools": 5}, "tools"),
    ],
)
def test_openai_chat_malformed_row_is_one_line_and_writes_nothing(tmp_path, row, field):
    """With ``--strict``; without it the row is a counted skip (rows V05, docs/hardening.md)."""
    source = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROWS[0], row])
    out = tmp_path / "p.jsonl"
    out.write_text("previous\n")
    with pytest.raises(InputError) as info:
        import_file("openai-chat", source, out, ImportOptions(strict=True))
    text = str(info.value)
    assert f"{source}:2" in text and repr(field) in text and "\n" not in text
    assert out.read_text() == "previous\n"
    result = import_file("openai-chat", source, out)
    (skip,) = result.skipped
    assert skip.reason in ("malformed_row", "gold_unreadable") and repr(field) in skip.detail
    assert skip.where == f"{source}:2" and result.written == 1


def test_not_json_and_not_an_object(tmp_path: Path):
    with pytest.raises(InputError, match=r"SOM-IMPORT-JSON.*chat.jsonl:2"):
        import_file("openai-chat", write_jsonl(tmp_path / "chat.jsonl",
                                               [OPENAI_ROWS[0], "{nope"]), tmp_path / "o.jsonl")
    with pytest.raises(InputError, match=r"SOM-IMPORT-JSON.*row 1"):
        (tmp_path / "a.json").write_text(json.dumps([OPENAI_ROWS[0], [1]]))
        import_file("openai-chat", tmp_path / "a.json", tmp_path / "o.jsonl")
    with pytest.raises(InputError, match="SOM-IMPORT-FILE-TYPE"):
        (tmp_path / "a.csv").write_text("x")
        import_file("openai-chat", tmp_path / "a.csv", tmp_path / "o.jsonl")
    with pytest.raises(InputError, match="SOM-IMPORT-MISSING"):
        import_file("openai-chat", tmp_path / "absent.jsonl", tmp_path / "o.jsonl")
    with pytest.raises(InputError, match="SOM-IMPORT-EMPTY"):
        import_file("openai-chat", write_jsonl(tmp_path / "s.jsonl", OPENAI_ROWS[2:4]),
                    tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()


# ---------------------------------------------------------------- xlam


def test_xlam_converts_parameters_to_json_schema(tmp_path: Path):
    source = tmp_path / "xlam.json"
    source.write_text(json.dumps(XLAM_ROWS, indent=1))  # a JSON array, as xLAM ships
    out = tmp_path / "p.jsonl"
    result = import_file("xlam", source, out, ImportOptions(id_field="id"))
    assert reasons(result.skipped) == ["several_calls", "no_call", "gold_invalid",
                                       "unknown_type"]
    assert [s.example_id for s in result.skipped] == ["12", "13", "14", "15"]
    assert result.skipped[0].where == f"{source}: row 2"
    first, second = read_prepared(out)
    assert first.example_id == "10"
    assert first.tools[0]["parameters"] == {
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "game, loot or beta", "default": "game"},
            "limit": {"type": "integer", "description": "how many"},
            "platforms": {"type": "array", "items": {"type": "string"},
                          "description": "which"},
        },
        "required": ["platforms"],
    }
    assert first.tools[1]["parameters"]["properties"]["to"]["type"] == ["string", "null"]
    assert first.tools[1]["parameters"]["required"] == ["amount"]
    assert second.gold_call == {"name": "convert", "arguments": {"amount": 10}}
    formats_under_both_policies(out)


@pytest.mark.parametrize(
    ("text", "schema", "optional"),
    [
        ("str", {"type": "string"}, False),
        ("int, optional", {"type": "integer"}, True),
        ("float, default=0.5", {"type": "number"}, True),
        ("List[int]", {"type": "array", "items": {"type": "integer"}}, False),
        ("list", {"type": "array"}, False),
        ("Dict[str, Any]", {"type": "object"}, False),
        ("Tuple[int, int]", {"type": "array"}, False),
        ("Optional[List[str]]",
         {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}, True),
        ("Union[str, int]", {"type": ["string", "integer"]}, False),
        ("str or int", {"type": ["string", "integer"]}, False),
        ("int | None", {"type": ["integer", "null"]}, False),
        ("Any", {}, False),
        ("typing.List[bool]", {"type": "array", "items": {"type": "boolean"}}, False),
    ],
)
def test_xlam_type_strings(text: str, schema: dict[str, Any], optional: bool):
    assert type_schema(text) == (schema, optional)


@pytest.mark.parametrize("text", ["Callable", "datetime", "str, e.g. abc", "int[3]", "List[?]"])
def test_xlam_unknown_types_are_not_guessed(text: str):
    with pytest.raises(UnknownType):
        type_schema(text)


def test_xlam_parameters_already_json_schema_are_kept():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert parameters_schema(schema, "w", "p") is schema


# ---------------------------------------------------------------- hermes


def test_hermes_converts_tool_blocks_and_python_literals(tmp_path: Path):
    out = tmp_path / "p.jsonl"
    result = import_file("hermes", write_jsonl(tmp_path / "h.jsonl", HERMES_ROWS), out)
    assert reasons(result.skipped) == ["no_call", "several_calls", "multi_turn", "no_tools"]
    first, second, third = read_prepared(out)
    assert first.system is None and list(first.tools) == [WEATHER]
    assert first.gold_call == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert second.gold_call == {"name": "set_timer", "arguments": {"minutes": 5}}
    assert list(second.tools) == [WEATHER, TIMER]
    assert third.gold_call == {"name": "set_timer", "arguments": {"minutes": 1}}
    formats_under_both_policies(out)


def test_hermes_call_that_is_neither_json_nor_a_literal_is_malformed(tmp_path: Path):
    bad = hermes(json.dumps([wrapped(WEATHER)]), "<tool_call>{name: get_weather}</tool_call>")
    strict = ImportOptions(strict=True)
    with pytest.raises(InputError) as info:
        import_file("hermes", write_jsonl(tmp_path / "h.jsonl", [bad]), tmp_path / "o.jsonl",
                    strict)  # fmt: skip
    assert info.value.code == "SOM-IMPORT-JSON" and "conversations[2] <tool_call>" in str(
        info.value)
    with pytest.raises(InputError) as info:  # without --strict: the file's only row skipped
        import_file("hermes", tmp_path / "h.jsonl", tmp_path / "o.jsonl")
    assert info.value.code == "SOM-IMPORT-EMPTY" and "gold_unreadable 1" in str(info.value)
    evil = hermes(json.dumps([wrapped(WEATHER)]),
                  "<tool_call>__import__('os').system('echo hi')</tool_call>")
    with pytest.raises(InputError, match="neither JSON nor a Python literal"):
        import_file("hermes", write_jsonl(tmp_path / "e.jsonl", [evil]), tmp_path / "o.jsonl",
                    strict)  # fmt: skip


# ---------------------------------------------------------------- Parquet


def _parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    pyarrow = pytest.importorskip("pyarrow")
    import pyarrow.parquet as parquet

    parquet.write_table(pyarrow.Table.from_pylist(rows), path)
    return path


def test_parquet_rows_import_like_json_lines(tmp_path: Path):
    rows = [
        {"messages": [{"role": "user", "content": "Paris weather", "tool_calls": None},
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"type": "function", "function": {
                              "name": "get_weather", "arguments": '{"city": "Paris"}'}}]}],
         "tools": json.dumps([wrapped(WEATHER), wrapped(TIMER)]), "lang": "fr"},
        {"messages": [{"role": "user", "content": "hi", "tool_calls": None}],
         "tools": json.dumps([wrapped(WEATHER)]), "lang": "fr"},
    ]
    source = _parquet(tmp_path / "chat.parquet", rows)
    out = tmp_path / "p.jsonl"
    result = import_file("openai-chat", source, out, ImportOptions(language_field="lang"))
    assert reasons(result.skipped) == ["no_call"]
    assert result.skipped[0].where == f"{source}: row 1"
    (example,) = read_prepared(out)
    assert example.language == "fr" and example.example_id == "openai-chat-0"
    formats_under_both_policies(out)
    xlam_source = _parquet(tmp_path / "xlam.parquet", XLAM_ROWS[:2])
    assert import_file("xlam", xlam_source, tmp_path / "x.jsonl").written == 2


def test_parquet_without_pyarrow_is_an_environment_error(tmp_path, monkeypatch):
    source = tmp_path / "chat.parquet"
    source.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(SommelierEnvironmentError) as info:
        import_file("openai-chat", source, tmp_path / "o.jsonl")
    assert info.value.code == "SOM-IMPORT-PARQUET" and "pytest-sommelier[parquet]" in str(
        info.value)


def test_a_file_that_is_not_parquet_is_refused(tmp_path: Path):
    pytest.importorskip("pyarrow")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="SOM-IMPORT-PARQUET-READ"):
        import_file("xlam", tmp_path / "x.parquet", tmp_path / "o.jsonl")


# ---------------------------------------------------------------- ids, languages, sample, CLI


def _translated_rows() -> list[dict[str, Any]]:
    rows = []
    for index in range(6):
        arguments = {"city": f"C{index}"}
        rows.append({**chat(user(f"weather {index}"),
                            assistant(call("get_weather", json.dumps(arguments)))),
                     "uid": f"en-{index}", "lang": "en", "root": None})
        rows.append({**chat(user(f"מזג אוויר {index}"),
                            assistant(call("get_weather", json.dumps(arguments)))),
                     "uid": f"he-{index}", "lang": "he", "root": f"en-{index}"})
    rows[0]["messages"][1]["tool_calls"] = []  # en-0 has no call: he-0 loses its root
    return rows


def test_translations_pair_and_the_sample_keeps_roots_with_them(tmp_path: Path):
    source = write_jsonl(tmp_path / "t.jsonl", _translated_rows())
    options = dict(id_field="uid", language_field="lang", source_field="root")
    result = import_file("openai-chat", source, tmp_path / "all.jsonl", ImportOptions(**options))
    assert reasons(result.skipped) == ["no_call", "root_skipped"]
    assert result.skipped[1].example_id == "he-0" and result.skipped[1].where.endswith(":2")
    assert result.written == 10
    sampled = import_file("openai-chat", source, tmp_path / "s.jsonl",
                          ImportOptions(**options, sample=2, seed=3))
    ids = [row["example_id"] for row in sampled.rows]
    assert len(ids) == 4 and {i[3:] for i in ids} == {i[3:] for i in ids if i.startswith("en")}
    again = import_file("openai-chat", source, tmp_path / "s2.jsonl",
                        ImportOptions(**options, sample=2, seed=3))
    assert (tmp_path / "s.jsonl").read_bytes() == (tmp_path / "s2.jsonl").read_bytes()
    assert [row["example_id"] for row in again.rows] == ids
    formats_under_both_policies(tmp_path / "s.jsonl")


def test_ids_and_options_are_checked(tmp_path: Path):
    source = write_jsonl(tmp_path / "t.jsonl", [{**OPENAI_ROWS[0], "uid": "a"},
                                                {**OPENAI_ROWS[1], "uid": "a"}])
    with pytest.raises(InputError, match="SOM-IMPORT-DUPLICATE-ID"):
        import_file("openai-chat", source, tmp_path / "o.jsonl", ImportOptions(id_field="uid"))
    with pytest.raises(InputError, match=r"SOM-IMPORT-FIELD.*'nope': missing"):
        import_file("openai-chat", source, tmp_path / "o.jsonl", ImportOptions(id_field="nope"))
    with pytest.raises(InputError, match="SOM-IMPORT-OPTIONS"):
        import_file("openai-chat", source, tmp_path / "o.jsonl",
                    ImportOptions(language="en", language_field="lang"))
    with pytest.raises(InputError, match="SOM-IMPORT-SAMPLE"):
        import_file("openai-chat", source, tmp_path / "o.jsonl", ImportOptions(sample=0))
    with pytest.raises(InputError, match=r"SOM-PREPARED-FIELD.*'language'.*write 'en'"):
        import_file("openai-chat", write_jsonl(tmp_path / "u.jsonl", OPENAI_ROWS[:1]),
                    tmp_path / "o.jsonl", ImportOptions(language="EN"))
    assert not (tmp_path / "o.jsonl").exists()


def test_summary_counts_reasons_and_names_the_first_ids():
    skipped = [Skipped(f"r-{i}", f"f:{i}", "multi_turn", "d") for i in range(7)]
    skipped.append(Skipped("r-9", "f:9", "no_call", "d"))
    lines = summary_lines("hermes f", 3, skipped)
    assert lines[0] == "hermes f: 3 converted, 8 skipped (multi_turn 7, no_call 1)"
    assert lines[1] == "  skipped r-0 (multi_turn): d [f:0]"
    assert "  ... and 2 more skipped multi_turn" in lines
    assert sum(line.startswith("  skipped") for line in lines) == 6


def test_cli_import_then_format(tmp_path: Path, capsys):
    source = write_jsonl(tmp_path / "chat.jsonl", OPENAI_ROWS)
    out = tmp_path / "prepared.jsonl"
    assert main(["import", "openai-chat", str(source), "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == (
        f"openai-chat {source}: 3 converted, 5 skipped (gold_invalid 1, multi_turn 1, "
        "no_call 1, several_calls 1, undeclared_tool 1)"
    )
    assert printed[-1] == f"wrote 3 prepared rows to {out}"
    tok = tokenizer_folder(tmp_path / "tok", HERMES)
    split = tmp_path / "test.jsonl"
    assert main(["format", str(out), "--tokenizer", str(tok), "--split", "test", "--out",
                 str(split), "--policy", NATIVE]) == 0
    assert main(["format", str(out), "--tokenizer", str(tok), "--split", "test", "--out",
                 str(tmp_path / "tis.jsonl")]) == 2
    assert "SOM-FORMAT-SYSTEM" in capsys.readouterr().err
    assert main(["import", "xlam", str(source), "--language", "en", "--language-field", "x",
                 "--out", str(out)]) == 2  # argparse: the two exclude each other


# ---------------------------------------------------------------- BFCL under the native policy


def _bfcl(folder: Path) -> Path:
    function = {"name": "get_weather", "description": "d", "parameters": {
        "type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    questions = [
        {"id": "live_simple_0-0-0", "function": [function], "question": [[
            {"role": "system", "content": "You are a weather bot."},
            {"role": "user", "content": "Weather in Paris?"}]]},
        {"id": "live_simple_1-1-0", "function": [function], "question": [[
            {"role": "user", "content": "Weather in Rome?"}]]},
    ]
    answers = [{"id": q["id"], "ground_truth": [{"get_weather": {"city": [c]}}]}
               for q, c in zip(questions, ["Paris", "Rome"], strict=True)]
    (folder / "possible_answer").mkdir(parents=True)
    name = "BFCL_v4_live_simple.json"
    (folder / name).write_text("".join(json.dumps(q) + "\n" for q in questions))
    (folder / "possible_answer" / name).write_text("".join(json.dumps(a) + "\n" for a in answers))
    return folder


def test_bfcl_system_rows_import_under_the_native_policy(tmp_path: Path, capsys):
    data = _bfcl(tmp_path / "data")
    (default,) = import_bfcl(["live_simple"], data, tmp_path / "a.jsonl").categories
    assert reasons(default.skipped) == ["system_message"]
    assert NATIVE in default.skipped[0].detail
    out = tmp_path / "n.jsonl"
    assert main(["import", "bfcl", "--category", "live_simple", "--source", str(data),
                 "--policy", NATIVE, "--out", str(out)]) == 0
    assert "live_simple: 2 converted, 0 skipped" in capsys.readouterr().out
    first, second = read_prepared(out)
    assert first.system == "You are a weather bot." and first.query == "Weather in Paris?"
    assert second.system is None and first.acceptable_arguments is not None
    rows = format_examples([first, second], build_tokenizer(HERMES), split="test",
                           policy=NATIVE, tokenizer_id="t", tokenizer_revision="r")
    assert "You are a weather bot." in rows[0]["prompt_text"]
    assert list(rows[0])[-2:] == ["tools", "acceptable_arguments"]
    with pytest.raises(InputError, match="SOM-FORMAT-SYSTEM"):
        format_examples([first], build_tokenizer(HERMES), split="test", tokenizer_id="t",
                        tokenizer_revision="r")


# ---------------------------------------------------------------- the round-trip property

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9), st.text(max_size=10))
values = st.recursive(leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.text(max_size=4), inner, max_size=3), max_leaves=6)


@settings(max_examples=examples(40), deadline=None)
@given(
    tool_names=st.lists(names, min_size=1, max_size=3, unique=True),
    arguments=st.dictionaries(st.text(min_size=1, max_size=6), values, max_size=3),
    query=st.text(min_size=1, max_size=40).filter(str.strip),
    system=st.none() | st.text(min_size=1, max_size=20).filter(str.strip),
    string_arguments=st.booleans(),
)
def test_property_openai_chat_round_trips_a_prepared_example(
    tmp_path_factory, tool_names, arguments, query, system, string_arguments
):
    tools = [{"name": name, "parameters": {"type": "object"}} for name in tool_names]
    gold = {"name": tool_names[-1], "arguments": arguments}
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": query},
        assistant(call(gold["name"], json.dumps(arguments) if string_arguments else arguments)),
    ]
    folder = tmp_path_factory.mktemp("rt")
    source = write_jsonl(folder / "c.jsonl", [{"messages": messages,
                                               "tools": [wrapped(t) for t in tools]}])
    import_file("openai-chat", source, folder / "p.jsonl")
    (example,) = read_prepared(folder / "p.jsonl")
    assert (example.query, example.system, list(example.tools), example.gold_call) == (
        query, system, tools, gold)
