"""The declared reasoning channel (``core.reasoning``): one span separated before parser v1,
recorded and re-derivable, refused by the identity gate when two arms' rules differ.

Session-level checks (pytester, serial and ``-n 2``, a thinking template on the tiny Llama)
are in ``tests/plugin/test_reasoning_session.py``; the suite keys' hostile values in
``tests/data/suite/test_reasoning_keys.py``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.core.canonical import prompt_digest, sha256_text
from pytest_sommelier.core.misses import MISS_CATEGORIES, miss_category
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.pipeline import (
    ArmRun,
    build_arm_reports,
    build_comparisons,
    config_sha256,
    evaluate_run,
    generation_record,
    rescored,
)
from pytest_sommelier.core.reasoning import (
    ENGINE,
    REASONING_UNTERMINATED,
    THINK_DELIMITERS,
    Delimiters,
    checked_rule,
    parse_split,
    reasoning_summary,
    recorded_split,
    rule_identity,
    split_output,
)
from pytest_sommelier.core.report_identity import check_identity
from pytest_sommelier.core.types import ComparisonConfig
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import EvaluationError

ISSUE_EXAMPLE = (
    "<think>\nThe interval is [1, 3].\n</think>\n\n<tool_call>\n"
    '{"name":"calculate_area_under_curve","arguments":{"function":"x**2","interval":[1.0,3.0]}}'
    "\n</tool_call>"
)
CALL = {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
CALL_TEXT = json.dumps([CALL])


def parsed(text: str, rule=THINK_DELIMITERS) -> tuple:
    return parse_split(split_output(text, rule))


# ---------------------------------------------------------------- the issue's example


def test_the_issue_example_is_ok_under_think_and_invalid_shape_without() -> None:
    assert parse_tool_call(ISSUE_EXAMPLE) == (None, "invalid_shape")
    assert parsed(ISSUE_EXAMPLE, None) == (None, "invalid_shape")  # no rule: v1 as before
    call, status = parsed(ISSUE_EXAMPLE)
    assert status == "ok"
    assert call == {
        "name": "calculate_area_under_curve",
        "arguments": {"function": "x**2", "interval": [1.0, 3.0]},
    }


# ---------------------------------------------------------------- the split rule


def test_only_a_leading_span_is_separated() -> None:
    assert split_output("  \n<think>a</think>b", THINK_DELIMITERS) == ("a", "b")
    assert split_output("x<think>a</think>b", THINK_DELIMITERS) == (None, "x<think>a</think>b")
    assert split_output("<think>a", THINK_DELIMITERS) == ("a", None)  # never closed
    assert split_output("<think>a</think>", THINK_DELIMITERS).content_text == ""
    assert split_output("<think>a</think>", None) == (None, "<think>a</think>")
    custom = Delimiters("[[R]]", "[[/R]]")
    assert split_output("[[R]]{x}[[/R]]{}", custom) == ("{x}", "{}")


def test_engine_rule_reads_the_engines_channel() -> None:
    assert split_output("answer", ENGINE) == (None, "answer")
    assert split_output("answer", ENGINE, engine_reasoning="r") == ("r", "answer")
    assert split_output("", ENGINE, engine_reasoning="r", engine_content=False) == ("r", None)
    # delimiters are not looked for under "engine": the server already split
    assert split_output("<think>a</think>b", ENGINE) == (None, "<think>a</think>b")


reasoning_text = st.text(
    st.sampled_from(list('{}[]"\\ ,:<>/thinkabc\n')) | st.characters(), max_size=40
).filter(lambda r: "</think>" not in r)
answer_text = st.one_of(
    st.just(CALL_TEXT),
    st.builds(lambda s: json.dumps({"name": "f", "arguments": {"s": s}}),
              st.sampled_from(["<think>", "</think>", "a</think>b", "[", '"'])),
    st.text(max_size=30),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from(["", " ", "\n\n", "\t "]), reasoning_text, answer_text)
def test_a_closed_span_never_reaches_the_parser(lead: str, reasoning: str, answer: str) -> None:
    """Brackets, quotes and delimiters inside the reasoning never change the parse: the
    content is parsed exactly as the answer alone (v1 unchanged), and the raw text is
    recovered from the split."""
    raw = lead + "<think>" + reasoning + "</think>" + answer
    split = split_output(raw, THINK_DELIMITERS)
    assert split == (reasoning, answer)
    assert parse_split(split) == parse_tool_call(answer)
    assert lead + "<think>" + split.reasoning_text + "</think>" + split.content_text == raw


@settings(max_examples=examples(200), deadline=None)
@given(reasoning_text)
def test_an_unclosed_span_leaves_no_answer(reasoning: str) -> None:
    split = split_output("<think>" + reasoning + CALL_TEXT, THINK_DELIMITERS)
    assert split.unterminated and split.content_text is None
    assert parse_split(split) == (None, "no_json")


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=60))
def test_without_a_leading_start_the_text_is_read_whole(text: str) -> None:
    split = split_output(text, THINK_DELIMITERS)
    if not text.lstrip().startswith("<think>"):
        assert split == (None, text)
        assert parse_split(split) == parse_tool_call(text)
    assert split_output(text, None) == (None, text)


def test_delimiters_inside_the_answers_json_strings_stay_there() -> None:
    answer = json.dumps([{"name": "say", "arguments": {"text": "<think>x</think>"}}])
    call, status = parsed("<think>[r]</think>" + answer)
    assert status == "ok" and call["arguments"]["text"] == "<think>x</think>"


# ---------------------------------------------------------------- the rule's values


@pytest.mark.parametrize(
    ("value", "rule"),
    [(None, None), ("think", THINK_DELIMITERS), ("engine", ENGINE),
     ({"start": "<r>", "end": "</r>"}, Delimiters("<r>", "</r>"))],
)
def test_rules_and_their_identities(value, rule) -> None:
    assert checked_rule(value) == rule
    assert checked_rule(rule_identity(rule)) == rule  # a report's record reads back


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(
    st.text(max_size=10), st.integers(), st.none(), st.lists(st.text(), max_size=2),
    st.dictionaries(st.sampled_from(["start", "end", "x"]),
                    st.one_of(st.text(max_size=80), st.integers(), st.none()), max_size=3),
))
def test_hostile_rule_values_are_one_line_value_errors(value) -> None:
    try:
        rule = checked_rule(value)
    except ValueError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 200
        return
    assert rule is None or rule == ENGINE or isinstance(rule, Delimiters)
    if isinstance(rule, Delimiters):
        assert rule.start.strip() and rule.end.strip() and rule.start == rule.start.lstrip()


# ---------------------------------------------------------------- records, misses, figures


def test_miss_category_of_an_unterminated_span() -> None:
    assert MISS_CATEGORIES[0] == REASONING_UNTERMINATED
    record = {"parse_status": "no_json", "parsed_call": None, "gold_call": CALL,
              "content_text": None, "finish_reason": "length"}
    assert miss_category(record) == REASONING_UNTERMINATED
    assert miss_category({**record, "content_text": ""}) == "truncated"
    summary = reasoning_summary([
        {**record, "reasoning_text": "abc", "reasoning_tokens": 10},
        {**record, "reasoning_text": "ab", "content_text": "x", "reasoning_tokens": 4,
         "finish_reason": "stop"},
        {**record, "reasoning_text": None, "content_text": "x"},
    ])
    assert summary == {"outputs": 3, "reasoned": 2, "unterminated": 1,
                       "truncated_in_reasoning": 1, "tokens_counted": 2,
                       "median_tokens": 7.0, "p95_tokens": 10.0}


def test_percentiles_are_nearest_rank() -> None:
    records = [{"reasoning_text": "r", "content_text": "", "reasoning_tokens": n}
               for n in range(1, 101)]
    summary = reasoning_summary(records)
    assert (summary["median_tokens"], summary["p95_tokens"]) == (50.5, 95.0)
    assert reasoning_summary([])["median_tokens"] is None


def loaded(tmp_path: Path, reasoning=None):
    tables = {} if reasoning is None else {"parser": {"reasoning": reasoning}}
    suite = load_suite(write_suite(tmp_path, suite={"slices": ["en"]}, comparisons=None,
                                   **tables))
    return suite, load_split(suite.test_split, suite.slices)


def records_of(suite, split, texts, arm="base"):
    return [
        generation_record(e, arm=arm, model_kind="base", raw_text=t, decoding=suite.decoding,
                          cached=False, reasoning=suite.reasoning, count_tokens=len)
        for e, t in zip(split.examples, texts, strict=True)
    ]


def texts_for(split) -> list[str]:
    gold = [json.dumps([e.gold_call]) for e in split.examples]
    return [
        "<think>[not, a, call]</think>" + gold[0],
        "<think>never closed [" + gold[1],
        gold[2],
    ]


def test_records_carry_the_split_and_rescore_rederives_it(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path, "think")
    records = records_of(suite, split, texts_for(split))
    assert [r["reasoning_text"] for r in records] == [
        "[not, a, call]", "never closed [" + json.dumps([split.examples[1].gold_call]), None,
    ]
    assert [r["parse_status"] for r in records] == ["ok", "no_json", "ok"]
    assert records[1]["content_text"] is None and records[2]["content_text"] == records[2][
        "raw_text"]
    assert records[0]["reasoning_tokens"] == len("[not, a, call]")
    again, _ = rescored(records, split, reasoning=suite.reasoning)
    assert [{k: v for k, v in r.items() if k != "miss_category"} for r in again] == records
    assert [r["miss_category"] for r in again] == [None, REASONING_UNTERMINATED, None]
    # a stored record edited to claim another split is written back with raw_text's
    edited = [{**records[0], "reasoning_text": "x", "content_text": "{}", "parse_status": "ok"}]
    fixed, _ = rescored(edited, split, reasoning=suite.reasoning)
    assert (fixed[0]["reasoning_text"], fixed[0]["parse_status"]) == ("[not, a, call]", "ok")
    assert fixed[0]["reasoning_tokens"] is None  # the count was of another span
    # under the engine rule the recorded channel is the input
    engine = {**records[2], "reasoning_text": "r", "content_text": None, "raw_text": ""}
    assert recorded_split(engine, ENGINE) == ("r", None)


def test_a_report_records_the_rule_and_the_reasoning_figures(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path, "think")
    arms = {"base": ArmRun("base", "base", {"m": 1}, None,
                           {"en": records_of(suite, split, texts_for(split))})}
    outcome = evaluate_run(suite, split, arms, run_id="r", model={"m": 1}, gates=False)
    report = outcome.arm_reports["base"]
    assert report["parser"] == {"version": "sommelier.parser.v1",
                                "reasoning": {"start": "<think>", "end": "</think>"}}
    assert report["reasoning"]["reasoned"] == 2 and report["reasoning"]["unterminated"] == 1
    assert report["reasoning"]["slices"]["en"]["outputs"] == 3
    assert report["misses"]["categories"][REASONING_UNTERMINATED] == 1
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 2


def test_the_config_digest_changes_only_with_a_declared_rule(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path)
    model = {"m": 1}
    before = config_sha256(suite, split, model)
    assert config_sha256(replace(suite, reasoning=None), split, model) == before
    assert config_sha256(replace(suite, reasoning=THINK_DELIMITERS), split, model) != before


def test_the_identity_gate_refuses_arms_with_other_rules(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path, "think")
    arms = {name: ArmRun(name, "base", {"m": 1}, None,
                         {"en": records_of(suite, split, texts_for(split), arm=name)})
            for name in ("cand", "base")}
    built = build_arm_reports(suite, split, arms, run_id="r", digest="d")
    shared = check_identity(built.reports["cand"], built.reports["base"])
    assert shared["parser"]["reasoning"] == {"start": "<think>", "end": "</think>"}
    other = {**built.reports["base"], "parser": {"version": "sommelier.parser.v1",
                                                 "reasoning": "engine"}}
    with pytest.raises(EvaluationError) as info:
        check_identity(built.reports["cand"], other)
    assert "parser.reasoning" in str(info.value) and "\n" not in str(info.value)
    # a stored report written before the rule existed has none: refused against "think" ...
    old = {k: v for k, v in built.reports["base"].items() if k != "parser"}
    with pytest.raises(EvaluationError):
        check_identity(built.reports["cand"], old)
    # ... and a baseline arm keeps its stored (absent) rule, so the comparison is refused
    arms["base"] = replace(arms["base"], stored_report=old)
    built = build_arm_reports(suite, split, arms, run_id="r", digest="d")
    assert built.reports["base"]["parser"]["reasoning"] is None
    suite = replace(suite, comparisons=(ComparisonConfig("cand", "base"),))
    reports, errors = build_comparisons(suite, built)
    assert reports == {} and "parser.reasoning" in errors["cand-vs-base"]


def test_two_reports_without_a_rule_compare_as_before(tmp_path: Path) -> None:
    suite, split = loaded(tmp_path)
    arms = {name: ArmRun(name, "base", {"m": 1}, None,
                         {"en": records_of(suite, split, texts_for(split), arm=name)})
            for name in ("cand", "base")}
    built = build_arm_reports(suite, split, arms, run_id="r", digest="d")
    old = {k: v for k, v in built.reports["base"].items() if k != "parser"}
    assert check_identity(built.reports["cand"], old)["parser"]["reasoning"] is None


# ---------------------------------------------------------------- template options digest


def test_template_kwargs_change_the_prompt_digest() -> None:
    assert prompt_digest("p") == prompt_digest("p", {}) == sha256_text("p")
    on, off = prompt_digest("p", {"enable_thinking": True}), prompt_digest(
        "p", {"enable_thinking": False})
    assert len({on, off, sha256_text("p")}) == 3
