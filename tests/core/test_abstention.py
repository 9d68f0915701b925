"""The conservative abstention rule (core.abstention): outputs near the boundary, by property
and by hand, and the components the metrics sum."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.abstention import (
    ABSTAINED,
    ATTEMPTED_CALL,
    OVER_CALL,
    abstention_components,
    abstention_metrics,
    abstention_names,
    abstention_outcome,
    decision_right,
    usable_markers,
)
from pytest_sommelier.core.metrics import compute_metrics, example_components, record_hit
from pytest_sommelier.core.misses import miss_category, miss_counts
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.errors import InvariantError

MARKERS = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
CALL = {"name": "search", "arguments": {"q": "tea"}}


def outcome(text: str, markers=MARKERS) -> str:
    """The rule over one output, parsed as the runner parses it."""
    _, status = parse_tool_call(text)
    return abstention_outcome(text, status, markers)


def record(text: str, expect: str = "no_call", **extra) -> dict:
    call, status = parse_tool_call(text)
    return {
        "example_id": "x",
        "raw_text": text,
        "parsed_call": call,
        "parse_status": status,
        "gold_call": None,
        "expect": expect,
        "call_markers": list(MARKERS),
        **extra,
    }


prose = st.text(
    alphabet=st.characters(blacklist_characters="{}[]<>", blacklist_categories=("Cs",)),
    max_size=60,
)


@settings(max_examples=examples(300), deadline=None)
@given(prose)
def test_prose_without_brackets_or_markers_abstains(text: str) -> None:
    assert outcome(text) == ABSTAINED


@settings(max_examples=examples(300), deadline=None)
@given(prose, st.sampled_from("{["), prose)
def test_any_bracket_is_never_an_abstention(before: str, opener: str, after: str) -> None:
    """Prose with a bracket counts as an attempt: the conservative edge, by design."""
    assert outcome(before + opener + after) != ABSTAINED


@settings(max_examples=examples(300), deadline=None)
@given(prose, st.sampled_from(MARKERS), prose)
def test_a_marker_alone_or_with_anything_after_it_is_an_attempt(
    before: str, marker: str, after: str
) -> None:
    assert outcome(before + marker + after) == ATTEMPTED_CALL


@settings(max_examples=examples(300), deadline=None)
@given(prose, st.sampled_from(MARKERS), st.text(max_size=80))
def test_an_unparseable_tool_call_is_never_an_abstention(
    before: str, marker: str, after: str
) -> None:
    text = before + marker + after
    assert outcome(text) in (ATTEMPTED_CALL, OVER_CALL)
    assert not decision_right(record(text))


@settings(max_examples=examples(200), deadline=None)
@given(prose, prose)
def test_a_valid_call_is_an_over_call_wherever_it_is(before: str, after: str) -> None:
    text = before + json.dumps(CALL) + after
    assert outcome(text) == OVER_CALL


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=80), st.lists(st.sampled_from(MARKERS), max_size=3))
def test_abstained_exactly_when_no_json_and_no_marker(text: str, markers: list[str]) -> None:
    _, status = parse_tool_call(text)
    expected = status == "no_json" and not any(m in text for m in markers)
    assert (abstention_outcome(text, status, markers) == ABSTAINED) == expected


@pytest.mark.parametrize("text", ["", " ", "\n\t  \n", "\u00a0"])
def test_empty_output_and_whitespace_abstain(text: str) -> None:
    assert outcome(text) == ABSTAINED


def test_a_marker_inside_a_string_of_a_valid_call_is_still_an_over_call() -> None:
    text = json.dumps({"name": "search", "arguments": {"q": "<tool_call>"}})
    assert outcome(text) == OVER_CALL


def test_a_marker_quoted_in_prose_is_an_attempt() -> None:
    assert outcome('I would write "<tool_call>" here, but no tool fits.') == ATTEMPTED_CALL


def test_an_empty_marker_is_never_looked_for() -> None:
    assert usable_markers(["", "  ", "\n", "<tool_call>\n", "<tool_call>"]) == ("<tool_call>",)
    assert outcome("Sorry, I can't.", markers=("", " ")) == ABSTAINED


def test_components_and_metrics() -> None:
    records = [
        record("No tool fits."),
        record("<tool_call>"),
        record(json.dumps(CALL)),
        record(json.dumps(CALL), expect="any_call", tool_names=["search"]),
        record(json.dumps(CALL), expect="any_call", tool_names=["other"]),
        record("prose", expect="any_call", tool_names=["search"]),
    ]
    assert [abstention_components(r) for r in records] == [
        ((1, 1), (1, 1)),
        ((0, 1), (0, 1)),
        ((0, 1), (0, 1)),
        ((0, 0), (1, 1)),
        ((0, 0), (0, 1)),
        ((0, 0), (0, 1)),
    ]
    names = abstention_names(records)
    assert names == ("abstention_accuracy", "decision_accuracy")
    metrics = abstention_metrics(records, names)
    assert metrics["abstention_accuracy"] == {"value": 1 / 3, "numerator": 1, "denominator": 3}
    assert metrics["decision_accuracy"] == {"value": 2 / 6, "numerator": 2, "denominator": 6}
    # the five count call examples only: none here
    five = compute_metrics(records)
    assert all(value["denominator"] == 0 and value["value"] is None for value in five.values())
    assert [miss_category(r) for r in records] == [
        None,
        "attempted_call",
        "over_call",
        None,
        "wrong_function",
        "parse_no_json",
    ]
    counts = miss_counts(records, translated=False)
    assert counts["misses"] == 4 == sum(counts["categories"].values())
    assert [record_hit(r) for r in records] == [True, False, False, True, False, False]


def test_only_any_call_examples_report_decision_alone() -> None:
    assert abstention_names([record("x", expect="any_call")]) == ("decision_accuracy",)
    assert abstention_names([{"expect": "call"}, {}]) == ()


def test_a_call_example_decides_right_with_any_valid_call() -> None:
    call = record(json.dumps({"name": "other", "arguments": {}}), expect="call")
    call["gold_call"] = CALL
    assert decision_right(call) and not record_hit(call)
    assert abstention_components(call) == ((0, 0), (1, 1))


def test_an_abstention_record_with_a_gold_call_is_refused() -> None:
    bad = record("No tool fits.")
    bad["gold_call"] = CALL
    with pytest.raises(InvariantError, match="SOM-METRIC-BAD-CALL"):
        example_components(bad)


def test_an_abstention_record_whose_status_contradicts_its_parse_is_refused() -> None:
    bad = record("No tool fits.")
    bad["parse_status"] = "ok"
    with pytest.raises(InvariantError, match="SOM-METRIC-STATUS-CALL-MISMATCH"):
        example_components(bad)


@settings(max_examples=examples(100))
@given(prose)
def test_an_unclosed_reasoning_span_is_never_an_abstention(thought: str) -> None:
    """A declared reasoning span that never closed leaves no answer (``content_text`` null):
    however harmless the raw text, the no_call example is wrong, ``reasoning_unterminated``."""
    rec = record(f"<think>{thought}", content_text=None, reasoning_text=thought)
    rec["parsed_call"], rec["parse_status"] = None, "no_json"  # no content: nothing parsed
    assert not decision_right(rec)
    assert miss_category(rec) == "reasoning_unterminated"
    closed = record("I can't help with that.", reasoning_text=thought,
                    content_text="I can't help with that.")  # fmt: skip
    assert decision_right(closed) and miss_category(closed) is None
