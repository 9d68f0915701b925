"""Template policy ``sommelier.native-tools.v1``, parser v1's ``arguments_key``, and the errors
``sommelier format`` gives for rows in a neighbouring shape.

Every tokenizer here is built locally from the family templates of ``tests/tool_templates.py``
(our own text, shaped the way each family renders tools and calls); nothing touches the hub.
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
from suite_factory import write_suite
from tool_templates import (
    FAMILIES,
    HERMES,
    IGNORES_TOOLS,
    LLAMA3,
    MISTRAL,
    NO_TOOL_CALLS,
    RAISES_ON_TOOL_CALLS,
    build_tokenizer,
    tokenizer_folder,
)

# A test using pytester drops every module first imported while it runs, and torch (which the
# tokenizer loader's ``transformers.AutoTokenizer`` imports) cannot be imported twice in one
# process: load it once here, before any such test.
from transformers import AutoTokenizer  # noqa: F401

from pytest_sommelier.cli import main
from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.parse import parse_tool_call, parser_identity
from pytest_sommelier.data.prepare.formatting import (
    FORMATTED_KEYS,
    POLICY_TOOLS_IN_SYSTEM_V1,
    PreparedExample,
    format_example,
    format_examples,
    formatted_line,
    read_prepared,
)
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1, tool_specs
from pytest_sommelier.errors import InputError

NATIVE = POLICY_NATIVE_TOOLS_V1
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TIMER = {
    "name": "set_timer",
    "parameters": {"type": "object", "properties": {"minutes": {"type": "integer"}}},
}
GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}


def prepared_row(**changes: Any) -> dict[str, Any]:
    row = {
        "example_id": "en-1",
        "language": "en",
        "source_example_id": None,
        "query": "Weather in Paris, in celsius?",
        "tools": [WEATHER, TIMER],
        "gold_call": GOLD,
    }
    row.update(changes)
    return row


def example(system: str | None = None, **changes: Any) -> PreparedExample:
    row = prepared_row(**changes)
    return PreparedExample(
        row["example_id"], row["language"], row["source_example_id"], row["query"],
        tuple(row["tools"]), row["gold_call"], 1, system=system,
    )


def native(template: str, ex: PreparedExample, key: str = "arguments") -> dict[str, Any]:
    return format_example(
        ex, build_tokenizer(template), split="test", policy=NATIVE, tokenizer_id="t",
        tokenizer_revision="r", arguments_key=key,
    )


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


# ---------------------------------------------------------------- each family


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("system", [None, "Answer briefly."])
def test_family_formats_and_its_target_parses_back_to_the_gold(family: str, system: str | None):
    template, key = FAMILIES[family]
    row = native(template, example(system), key)
    assert row["template_policy"] == NATIVE
    assert tuple(row)[: len(FORMATTED_KEYS)] == FORMATTED_KEYS and tuple(row)[-1] == "tools"
    assert row["tools"] == tool_specs([WEATHER, TIMER])
    assert row["tools"][1] == {"type": "function", "function": TIMER}  # no description kept
    assert [m["role"] for m in row["messages"]] == (["user"] if system is None
                                                    else ["system", "user"])
    assert row["full_text"].startswith(row["prompt_text"])
    assert row["full_text"].rstrip() == row["prompt_text"] + row["target_text"]
    assert row["prompt_sha256"] == sha256_text(row["prompt_text"])
    assert '"get_weather"' in row["prompt_text"]  # the template rendered the tools
    assert (system or "") in row["prompt_text"]
    assert parse_tool_call(row["target_text"], arguments_key=key) == (GOLD, "ok")


def test_hermes_target_is_the_tool_call_block_up_to_end_of_turn():
    row = native(HERMES, example())
    assert row["target_text"] == (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}\n'
        "</tool_call><|im_end|>"
    )
    assert row["prompt_text"].endswith("<|im_start|>assistant\n")
    assert "<tools>" in row["prompt_text"]


def test_llama3_target_writes_parameters_and_needs_the_parameters_key():
    row = native(LLAMA3, example(), "parameters")
    assert row["target_text"] == (
        '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "c"}}<|eot_id|>'
    )
    with pytest.raises(InputError) as info:
        native(LLAMA3, example(), "arguments")
    error = info.value
    assert error.code == "SOM-FORMAT-TEMPLATE-UNPARSEABLE"
    assert "'en-1'" in str(error) and "invalid_shape" in str(error)
    assert "--arguments-key parameters" in str(error) and "\n" not in str(error)


def test_mistral_wrapper_is_refused_at_format_time():
    """``[TOOL_CALLS][...]`` opens with a bracket that is not JSON: parser v1 reads it as
    invalid_json, so the row is refused rather than scored 0% later."""
    with pytest.raises(InputError) as info:
        native(MISTRAL, example())
    assert info.value.code == "SOM-FORMAT-TEMPLATE-UNPARSEABLE"
    assert "[TOOL_CALLS]" in str(info.value) and "invalid_json" in str(info.value)
    assert parse_tool_call('[TOOL_CALLS][{"name": "f", "arguments": {}}]</s>')[1] == "invalid_json"


@pytest.mark.parametrize(
    ("template", "code", "seen"),
    [
        (IGNORES_TOOLS, "SOM-FORMAT-TEMPLATE-IGNORES-TOOLS", "with and without tools="),
        (NO_TOOL_CALLS, "SOM-FORMAT-TEMPLATE-NO-TOOL-CALLS", "drops the assistant's tool_calls"),
        (RAISES_ON_TOOL_CALLS, "SOM-FORMAT-TEMPLATE-NO-TOOL-CALLS",
         "TemplateError: this template knows no tool calls"),
    ],
)
def test_templates_without_tool_support_are_refused(template: str, code: str, seen: str):
    with pytest.raises(InputError) as info:
        native(template, example())
    text = str(info.value)
    assert info.value.code == code and seen in text and "'en-1'" in text and "\n" not in text


def test_a_template_raising_on_the_prompt_is_one_line():
    raising = "{{ raise_exception('system turns are not supported') }}" + HERMES
    with pytest.raises(InputError) as info:
        native(raising, example("Be terse."))
    assert info.value.code == "SOM-FORMAT-TEMPLATE-RENDER"
    assert "TemplateError: system turns are not supported" in str(info.value)


def test_prefix_property_is_checked_under_the_native_policy():
    broken = HERMES.replace("{{ '<|im_start|>assistant\n' }}", "{{ '<|im_start|>assistant>' }}")
    assert broken != HERMES
    with pytest.raises(InputError, match="SOM-FORMAT-TEMPLATE-PREFIX"):
        native(broken, example())


def test_a_template_that_rewrites_the_call_is_refused():
    upper = HERMES.replace("'arguments': f.arguments}", "'arguments': {'city': 'PARIS'}}")
    assert upper != HERMES
    with pytest.raises(InputError) as info:
        native(upper, example())
    assert info.value.code == "SOM-FORMAT-TEMPLATE-UNPARSEABLE"
    assert "not the gold call" in str(info.value)


# ---------------------------------------------------------------- the system field, the key


def test_system_field_is_refused_under_tools_in_system(tmp_path: Path):
    path = write_rows(tmp_path / "p.jsonl", [prepared_row(system="Be terse.")])
    (ex,) = read_prepared(path)
    assert ex.system == "Be terse."
    with pytest.raises(InputError) as info:
        format_examples([ex], build_tokenizer(HERMES), split="test", tokenizer_id="t",
                        tokenizer_revision="r")
    assert info.value.code == "SOM-FORMAT-SYSTEM"
    assert "'en-1'" in str(info.value) and NATIVE in str(info.value)
    with pytest.raises(InputError, match="field 'system'"):
        read_prepared(write_rows(tmp_path / "q.jsonl", [prepared_row(system="  ")]))


def test_arguments_key_is_checked_against_the_policy():
    with pytest.raises(InputError, match="SOM-FORMAT-ARGUMENTS-KEY"):
        format_examples([example()], build_tokenizer(HERMES), split="test",
                        policy=POLICY_TOOLS_IN_SYSTEM_V1, tokenizer_id="t",
                        tokenizer_revision="r", arguments_key="parameters")
    with pytest.raises(InputError, match="SOM-FORMAT-ARGUMENTS-KEY"):
        format_examples([example()], build_tokenizer(HERMES), split="test", policy=NATIVE,
                        tokenizer_id="t", tokenizer_revision="r", arguments_key="args")


def test_parser_arguments_key_is_the_same_strictness_with_another_name():
    text = '{"name": "f", "parameters": {"a": 1}}'
    assert parse_tool_call(text, arguments_key="parameters") == (
        {"name": "f", "arguments": {"a": 1}}, "ok")
    assert parse_tool_call(text) == (None, "invalid_shape")
    assert parse_tool_call('{"name": "f", "arguments": {}}', arguments_key="parameters")[1] == (
        "invalid_shape")
    both = '{"name": "f", "parameters": {}, "arguments": {}}'
    assert parse_tool_call(both, arguments_key="parameters")[1] == "invalid_shape"
    assert parse_tool_call('[{"name": "f", "parameters": []}]', arguments_key="parameters")[1] == (
        "invalid_shape")
    with pytest.raises(ValueError):
        parse_tool_call(text, arguments_key="args")
    assert parser_identity("parameters") == {
        "parser_version": "sommelier.parser.v1", "arguments_key": "parameters"}


def test_formatted_line_keeps_tools_before_acceptable_arguments():
    row = native(HERMES, example())
    row["acceptable_arguments"] = {"language": "python", "required": [], "arguments": {}}
    keys = list(json.loads(formatted_line(row)))
    assert keys[-2:] == ["tools", "acceptable_arguments"]


# ---------------------------------------------------------------- files, split, plugin


def test_cli_formats_a_native_split_that_the_loader_reads(tmp_path: Path, capsys):
    tok = tokenizer_folder(tmp_path / "llama", LLAMA3)
    prepared = write_rows(tmp_path / "p.jsonl", [prepared_row(system="Be terse."),
                                                 prepared_row(example_id="en-2")])
    out = tmp_path / "test.jsonl"
    args = ["format", str(prepared), "--tokenizer", str(tok), "--split", "test", "--out",
            str(out), "--policy", NATIVE]
    assert main(args) == 2  # Llama writes "parameters": the default key cannot read it
    assert "SOM-FORMAT-TEMPLATE-UNPARSEABLE" in capsys.readouterr().err
    assert not out.exists()
    assert main([*args, "--arguments-key", "parameters"]) == 0
    assert "wrote 2 formatted rows (en: 2)" in capsys.readouterr().out
    split = load_split(out, ["en"], arguments_key="parameters")
    assert [e.gold_call for e in split.examples] == [GOLD, GOLD]
    with pytest.raises(InputError) as info:
        load_split(out, ["en"])
    assert info.value.code == "SOM-SPLIT-GOLD-CALL" and f"{out}:1" in str(info.value)


def test_train_split_gives_full_text_for_fine_tuning(tmp_path: Path):
    tok = tokenizer_folder(tmp_path / "hermes", HERMES)
    prepared = write_rows(tmp_path / "p.jsonl", [prepared_row()])
    out = tmp_path / "train.jsonl"
    assert main(["format", str(prepared), "--tokenizer", str(tok), "--split", "train",
                 "--out", str(out), "--policy", NATIVE]) == 0
    (row,) = read_jsonl(out)
    assert row["split"] == "train"
    assert row["full_text"].startswith(row["prompt_text"] + row["target_text"])


def test_hub_id_without_revision_is_refused_before_any_hub_access(tmp_path, monkeypatch, capsys):
    import pytest_sommelier.inference.modelref as modelref

    def no_hub(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the hub was asked")

    monkeypatch.setattr(modelref, "load_tokenizer", no_hub)
    prepared = write_rows(tmp_path / "p.jsonl", [prepared_row()])
    code = main(["format", str(prepared), "--tokenizer", "Qwen/Qwen2.5-0.5B-Instruct",
                 "--split", "test", "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "SOM-SUITE-REVISION-MISSING" in err and "--revision" in err
    assert "no such path exists in the working directory" in err  # not "beside the suite"
    assert len(err.strip().splitlines()) == 1


END_OF_TURN = {"hermes": "<|im_end|>", "llama3": "<|eot_id|>"}
"""The family's end-of-turn token, which engines decode away (skip_special_tokens)."""


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_scripted_run_scores_the_family_output_format_ok(pytester: pytest.Pytester,
                                                           family: str):
    """A plugin session over a native split of each family parser v1 reads, the suite's
    ``arguments_key`` the family's: a fake adapter answering in the family's own output format
    (the call as the template writes it, the end-of-turn token skipped by decoding) scores
    100% ``ok``; the report, the page and ``sommelier rescore`` read the same key."""
    template, key = FAMILIES[family]
    tok = tokenizer_folder(pytester.path / "tok", template)
    prepared = write_rows(pytester.path / "p.jsonl", [
        prepared_row(example_id="en-0"),
        prepared_row(example_id="en-1", query="A timer for 5 minutes",
                     gold_call={"name": "set_timer", "arguments": {"minutes": 5}}),
    ])
    split = pytester.path / "split.jsonl"
    assert main(["format", str(prepared), "--tokenizer", str(tok), "--split", "test",
                 "--out", str(split), "--policy", NATIVE, "--arguments-key", key]) == 0
    rows = read_jsonl(split)
    suite_key = None if key == "arguments" else key  # the default is written by leaving it out
    # the base is the scripted fake, not the family tokenizer the split was formatted with
    suite = write_suite(pytester.path / "suite", rows=rows,
                        suite={"slices": ["en"], "arguments_key": suite_key,
                               "split_tokenizer": "any"}, comparisons=None)
    (suite.parent / "conftest.py").write_text(FAKE_CONFTEST)
    answers = {r["example_id"]: r["target_text"].removesuffix(END_OF_TURN[family]) for r in rows}
    assert all(key in answer for answer in answers.values())  # the family's own key
    (suite.parent / "script.json").write_text(json.dumps({"adapter": answers}))
    result = pytester.runpytest("-p", "no:cacheprovider", "-m", "eval", "--sommelier-out", "out")
    assert result.ret == 0, result.stdout.str()
    out = pytester.path / "out"
    report = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    assert report["metrics"]["full_call_exact_match"]["value"] == 1.0
    assert report["metrics"]["valid_json_rate"]["numerator"] == 2
    assert (report["parser_version"], report["arguments_key"]) == ("sommelier.parser.v1", key)
    records = read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")
    assert [r["parse_status"] for r in records] == ["ok", "ok"]
    assert read_json(out / "suite.resolved.json")["arguments_key"] == key
    page = (out / "report.html").read_text(encoding="utf-8")
    assert f"arguments_key={key}" in page
    assert main(["rescore", str(out), "--out", str(pytester.path / "again")]) == 0
    again = read_json(pytester.path / "again" / "eval" / "adapter" / "evaluation_report.json")
    assert again == report


# ---------------------------------------------------------------- neighbouring shapes


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"tools": [{"type": "function", "function": WEATHER}]}, "tools[0].function",
         'unwrap {"type": "function", "function": ...} or use sommelier import openai-chat'),
        ({"gold_call": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
         "gold_call.arguments", "parse the string"),
        ({"tools": [{**WEATHER, "parameters": {"type": "object",
                                               "properties": {"city": {"type": "str"}}}}]},
         "tools[0].parameters.properties.city.type", "JSON Schema says string"),
        ({"tools": [{**WEATHER, "parameters": {"type": "dict", "properties": {}}}]},
         "tools[0].parameters.type", "JSON Schema says object"),
        ({"language": "EN"}, "language", "write 'en'"),
        ({"language": "PT-BR"}, "language", "write 'pt-BR'"),
        ({"tools": json.dumps([WEATHER])}, "tools", "parse the string"),
        ({"gold_call": {"type": "function", "function": GOLD}}, "gold_call.function", "unwrap"),
        ({"gold_call": {"name": "get_weather", "parameters": {"city": "Paris"}}},
         "gold_call.parameters", "--arguments-key"),
    ],
)
def test_neighbouring_shapes_say_how_to_fix_them(tmp_path: Path, changes, field, says):
    path = write_rows(tmp_path / "p.jsonl", [prepared_row(**changes)])
    with pytest.raises(InputError) as info:
        read_prepared(path)
    text = str(info.value)
    assert info.value.code == "SOM-PREPARED-FIELD" and f"{path}:1" in text
    assert repr(field) in text and says in text and "\n" not in text


def test_a_chat_row_given_to_format_names_its_importer(tmp_path: Path):
    path = write_rows(tmp_path / "p.jsonl", [{"messages": [], "tools": []}])
    with pytest.raises(InputError, match="sommelier import openai-chat"):
        read_prepared(path)


# ---------------------------------------------------------------- the property


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=10,
)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,15}", fullmatch=True)


@settings(max_examples=examples(60), deadline=None)
@given(
    tool_names=st.lists(names, min_size=1, max_size=3, unique=True),
    arguments=st.dictionaries(st.text(min_size=1, max_size=8), json_value, max_size=4),
    query=st.text(min_size=1, max_size=60).filter(str.strip),
    system=st.none() | st.text(min_size=1, max_size=30).filter(str.strip),
    pick=st.integers(0, 2),
)
def test_property_native_target_parses_back_to_the_gold(tool_names, arguments, query, system,
                                                         pick):
    tools = tuple({"name": name, "parameters": {"type": "object"}} for name in tool_names)
    gold = {"name": tool_names[pick % len(tool_names)], "arguments": arguments}
    ex = PreparedExample("x-1", "en", None, query, tools, gold, 1, system=system)
    for template, key in FAMILIES.values():
        row = native(template, ex, key)
        call, status = parse_tool_call(row["target_text"], arguments_key=key)
        assert status == "ok"
        assert json.dumps(call, sort_keys=True) == json.dumps(gold, sort_keys=True)
        assert row["full_text"].startswith(row["prompt_text"] + row["target_text"])
    with pytest.raises(InputError, match="SOM-FORMAT-TEMPLATE-UNPARSEABLE"):
        native(MISTRAL, ex)


# a template that requires a 9-character alphanumeric tool-call id (Mistral-Nemo's rule), in
# the Hermes shape (parseable) and in the Mistral shape (refused for its wrapper)
NEEDS_ID = (
    "{% for m in messages %}{% for call in m.tool_calls or [] %}"
    "{% if call.id is not defined or call.id | length != 9 or not call.id.isalnum() %}"
    "{{ raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}"
    "{% endif %}{% endfor %}{% endfor %}"
)


def test_a_template_that_requires_a_tool_call_id_gets_a_deterministic_one():
    """Hardening V23: the native policy's gold message had no id, so Mistral-Nemo's template
    raised and the line said the template has no tool-call support. Now the gold call gets a
    deterministic 9-character id (the same for every arm: it is in target_text) where the
    template requires one, and the row formats, or is refused for the real reason."""
    from pytest_sommelier.data.split.native_policy import tool_call_id

    row = native(NEEDS_ID + HERMES, example())
    assert parse_tool_call(row["target_text"]) == (GOLD, "ok")
    assert native(NEEDS_ID + HERMES, example()) == row  # deterministic
    ident = tool_call_id("en-1")
    assert len(ident) == 9 and ident.isalnum() and ident == tool_call_id("en-1")
    assert tool_call_id("en-2") != ident
    with pytest.raises(InputError) as info:
        native(NEEDS_ID + MISTRAL, example())
    assert info.value.code == "SOM-FORMAT-TEMPLATE-UNPARSEABLE", str(info.value)
    assert "invalid_json" in str(info.value)
