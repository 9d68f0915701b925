"""Template options (``[format] template_kwargs``, ``sommelier format --template-kwarg``): they
reach the chat template, are recorded in the formatted split (``formatted_example.v3``) and in
``prompt_sha256``; a split formatted with other options than the suite declares is refused;
hostile values of the new keys are one line. The reasoning preflight reads what the template
rendered. Our own thinking template (``tests/tool_templates.THINKING``) stands for a reasoning
model's."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.cli import format_split, main
from pytest_sommelier.core.canonical import prompt_digest, sha256_text
from pytest_sommelier.core.reasoning import ENGINE, THINK_DELIMITERS, Delimiters
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError
from pytest_sommelier.inference.split_check import (
    check_split_template_kwargs,
    reasoning_warnings,
)

sys.path.insert(0, str(Path(__file__).parents[2]))
from tool_templates import THINKING, tokenizer_folder

ROW = {
    "example_id": "en-0001",
    "language": "en",
    "source_example_id": None,
    "query": "Weather in Paris?",
    "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
    "gold_call": {"name": "get_weather", "arguments": {"city": "Paris"}},
}
OFF = {"enable_thinking": False}


@pytest.fixture(scope="module")
def thinking(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tokenizer_folder(tmp_path_factory.mktemp("thinking") / "tok", THINKING)


def prepared(tmp_path: Path) -> Path:
    path = tmp_path / "prepared.jsonl"
    path.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    return path


def fmt(tmp_path: Path, tokenizer: Path, kwargs: dict[str, Any] | None, name: str) -> dict:
    rows = format_split(prepared(tmp_path), tmp_path / name, tokenizer_ref=str(tokenizer),
                        split="test", template_kwargs=kwargs)
    return rows[0]


def test_options_reach_the_template_and_its_digest(tmp_path: Path, thinking: Path) -> None:
    on = fmt(tmp_path, thinking, None, "on.jsonl")
    off = fmt(tmp_path, thinking, OFF, "off.jsonl")
    assert on["schema_version"] == "sommelier.formatted_example.v2" and "template_kwargs" not in on
    assert on["prompt_sha256"] == sha256_text(on["prompt_text"])
    assert on["prompt_text"].endswith("<|im_start|>assistant\n")
    assert off["schema_version"] == "sommelier.formatted_example.v3"
    assert off["template_kwargs"] == OFF
    assert off["prompt_text"].endswith("<think>\n\n</think>\n\n")  # the option reached it
    assert off["prompt_sha256"] == prompt_digest(off["prompt_text"], OFF)
    # an option the template ignores renders the same text, and still changes the digest
    same = fmt(tmp_path, thinking, {"unused_option": 1}, "same.jsonl")
    assert same["prompt_text"] == on["prompt_text"]
    assert same["prompt_sha256"] != on["prompt_sha256"]
    # v3 rows load (v2 rows unchanged), the options kept on the example
    split = load_split(tmp_path / "off.jsonl", ["en"])
    assert split.examples[0].template_kwargs == OFF
    assert load_split(tmp_path / "on.jsonl", ["en"]).examples[0].template_kwargs is None


def test_the_cli_flag_parses_json_values(tmp_path: Path, thinking: Path) -> None:
    out = tmp_path / "cli.jsonl"
    code = main(["format", str(prepared(tmp_path)), "--tokenizer", str(thinking), "--split",
                 "test", "--out", str(out), "--template-kwarg", "enable_thinking=false",
                 "--template-kwarg", 'style={"a": [1, "x"]}'])
    assert code == 0
    row = json.loads(out.read_text(encoding="utf-8"))
    assert row["template_kwargs"] == {"enable_thinking": False, "style": {"a": [1, "x"]}}


@pytest.mark.parametrize(
    ("flag", "words"),
    [("enable_thinking", "KEY=VALUE"), ("enable_thinking=nope", "not JSON"),
     ("x=NaN", "not JSON"), ("tools=[]", "passes itself"), ("1x=true", "identifier"),
     ("=1", "KEY=VALUE")],
)
def test_bad_flags_are_one_line(tmp_path: Path, thinking: Path, capsys, flag, words) -> None:
    out = tmp_path / "bad.jsonl"
    code = main(["format", str(prepared(tmp_path)), "--tokenizer", str(thinking), "--split",
                 "test", "--out", str(out), "--template-kwarg", flag])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert "SOM-FORMAT-TEMPLATE-KWARG" in err and words in err and "\n" not in err


def test_a_repeated_flag_is_refused(tmp_path: Path, thinking: Path, capsys) -> None:
    code = main(["format", str(prepared(tmp_path)), "--tokenizer", str(thinking), "--split",
                 "test", "--out", str(tmp_path / "o.jsonl"), "--template-kwarg", "a=1",
                 "--template-kwarg", "a=2"])
    assert code == 2 and "given twice" in capsys.readouterr().err


def suite_over(tmp_path: Path, rows: list[dict], **tables: Any):
    suite = load_suite(write_suite(tmp_path, rows=rows, suite={"slices": ["en"]},
                                   comparisons=None, **tables))
    return suite, load_split(suite.test_split, suite.slices)


def test_a_split_with_other_options_is_refused(tmp_path: Path, thinking: Path) -> None:
    off = fmt(tmp_path, thinking, OFF, "off.jsonl")
    on = fmt(tmp_path, thinking, None, "on.jsonl")
    suite, split = suite_over(tmp_path / "a", [off], format={"template_kwargs": OFF})
    assert suite.template_kwargs == OFF
    check_split_template_kwargs(suite, split)  # as declared: accepted
    for rows, tables in (([on], {"format": {"template_kwargs": OFF}}), ([off], {})):
        suite, split = suite_over(tmp_path / f"b{len(tables)}", rows, **tables)
        with pytest.raises(InputError) as info:
            check_split_template_kwargs(suite, split)
        text = str(info.value)
        assert info.value.code == "SOM-SPLIT-TEMPLATE-KWARGS" and "\n" not in text
        assert "[format] template_kwargs" in text and "en-0001" in text


def test_an_edited_option_breaks_the_digest(tmp_path: Path, thinking: Path) -> None:
    off = fmt(tmp_path, thinking, OFF, "off.jsonl")
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps({**off, "template_kwargs": {"enable_thinking": True}}) + "\n")
    with pytest.raises(Exception) as info:
        load_split(path, ["en"])
    assert "SOM-SPLIT-PROMPT-SHA" in str(info.value)


# ---------------------------------------------------------------- the reasoning preflight


def test_the_preflight_names_both_fixes(tmp_path: Path, thinking: Path) -> None:
    on = fmt(tmp_path, thinking, None, "on.jsonl")
    off = fmt(tmp_path, thinking, OFF, "off.jsonl")
    suite, split = suite_over(tmp_path / "on", [on])
    [warning] = reasoning_warnings(suite, split)
    assert "<think>" in warning and "[parser] reasoning" in warning
    assert "template_kwargs" in warning and "enable_thinking=false" in warning
    # declared: no warning; turned off by the template options: no warning either
    assert reasoning_warnings(replace(suite, reasoning=THINK_DELIMITERS), split) == []
    suite, split = suite_over(tmp_path / "off", [off], format={"template_kwargs": OFF})
    assert reasoning_warnings(suite, split) == []
    # a declared delimiter the template never renders, and "engine" on a raw-text engine
    lines = reasoning_warnings(replace(suite, reasoning=Delimiters("<r>", "</think>")), split)
    assert len(lines) == 1 and "'<r>'" in lines[0]
    assert "transformers engine" in reasoning_warnings(replace(suite, reasoning=ENGINE), split)[0]
    assert reasoning_warnings(replace(suite, reasoning=ENGINE), split, "openai") == []


# ---------------------------------------------------------------- hostile suite values

bmp = st.characters(max_codepoint=0xFFFF, exclude_categories=("Cs",))  # what the TOML writer
# of the factory can write (it escapes keys as JSON, and TOML has no surrogate-pair escapes)
toml_values = st.recursive(
    st.one_of(st.booleans(), st.integers(-10, 10), st.floats(allow_nan=True),
              st.text(bmp, max_size=12), st.sampled_from(["think", "engine", " ", "<think>"])),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["start", "end", "enable_thinking", "tools"])
                      | st.text(bmp, max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reasoning=toml_values, kwargs=toml_values)
def test_hostile_values_of_the_new_keys_are_one_line(tmp_path: Path, reasoning, kwargs) -> None:
    for table, value in (("parser", {"reasoning": reasoning}), ("format",
                                                               {"template_kwargs": kwargs})):
        path = write_suite(tmp_path / table, **{table: value})
        try:
            suite = load_suite(path)
        except InputError as error:
            text = str(error)
            assert "\n" not in text and f"[{table}]" in text, text
            continue
        if table == "parser":
            assert suite.reasoning is None or suite.reasoning == ENGINE or isinstance(
                suite.reasoning, Delimiters)
        else:
            assert json.dumps(suite.template_kwargs, allow_nan=False)
