"""``stop_when="no_improvement:METRIC:PATIENCE"`` (``training.stop_rule``): hostile texts parse
or are one line naming the option; the rule's evidence over paired records."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.types import StatisticsConfig
from pytest_sommelier.errors import InputError
from pytest_sommelier.training.stop_rule import StopRule


@settings(max_examples=examples(100))
@given(st.text(max_size=40))
def test_any_stop_rule_text_parses_or_is_one_line_naming_stop_when(text: str) -> None:
    from pytest_sommelier.core.metrics import METRIC_NAMES
    from pytest_sommelier.training.stop_rule import parse_stop_rule

    try:
        metric, patience = parse_stop_rule(text)
    except InputError as error:
        assert "\n" not in str(error) and "stop_when" in str(error)
        return
    assert metric in METRIC_NAMES and patience >= 1
    assert text == f"no_improvement:{metric}:{text.rsplit(':', 1)[1]}"


@settings(max_examples=examples(100))
@given(st.one_of(st.text(max_size=40), st.text(max_size=30).map(lambda t: "gate_fail:" + t),
                 st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2)))
def test_any_stop_when_parses_to_one_form_or_is_one_line_naming_stop_when(value: object) -> None:
    from pytest_sommelier.training.stop_rule import GATE_FAIL, RULE, parse_stop_when

    try:
        spec = parse_stop_when(value)
    except InputError as error:
        assert "\n" not in str(error) and "stop_when" in str(error)
        assert len(str(error)) < 400  # a hostile value is quoted, shortened
        return
    assert isinstance(value, str)
    if spec.kind == GATE_FAIL:
        assert value == f"gate_fail:{spec.gate}" and spec.gate and spec.gate.strip()
        assert spec.gate.isprintable() and "::" not in spec.gate
    else:
        assert spec.kind == RULE and spec.patience is not None and spec.patience >= 1
        assert value.startswith(f"no_improvement:{spec.metric}:")


def test_gate_fail_without_a_name_is_refused() -> None:
    from pytest_sommelier.training.stop_rule import parse_stop_when

    for text in ("gate_fail:", "gate_fail: ", "gate_fail:a::b", "gate_fail:\x00"):
        try:
            parse_stop_when(text)
        except InputError as error:
            assert "stop_when" in str(error) and "gate" in str(error)
        else:
            raise AssertionError(text)
    assert parse_stop_when("gate_fail:not-worse").gate == "not-worse"


@settings(max_examples=examples(100))
@given(st.sampled_from(["pass", "fail", "incomplete", None]),
       st.dictionaries(st.text(min_size=1, max_size=8), st.booleans(), max_size=4))
def test_the_logged_verdict_is_one_zero_or_nan_never_a_bare_pass(
    verdict: str | None, gates: dict[str, bool]
) -> None:
    import math

    from pytest_sommelier.training.callback import verdict_numbers

    numbers = verdict_numbers(verdict, gates)
    value = numbers["sommelier/verdict"]
    if verdict is None or (verdict == "pass" and not gates):
        assert math.isnan(value)
    else:
        assert value == (1.0 if verdict == "pass" else 0.0)
    assert {k: v for k, v in numbers.items() if k != "sommelier/verdict"} == {
        f"sommelier/gate/{name}": float(passed) for name, passed in gates.items()
    }


def test_any_unicode_digit_patience_is_refused_not_a_crash() -> None:
    from pytest_sommelier.training.stop_rule import parse_stop_rule

    for text in ("no_improvement:argument_f1:\u00b2", "no_improvement:argument_f1:\u0663"):
        try:
            parse_stop_rule(text)
        except InputError as error:
            assert "stop_when" in str(error)
        else:
            raise AssertionError(text)


def records(hits: list[bool]) -> list[dict]:
    import json

    from pytest_sommelier.core.parse import parse_tool_call

    gold = {"name": "f", "arguments": {}}
    out = []
    for i, hit in enumerate(hits):
        raw = json.dumps(gold) if hit else "no call, sorry"
        parsed, status = parse_tool_call(raw)
        out.append({"example_id": f"en-{i}", "language": "en", "raw_text": raw,
                    "parse_status": status, "parsed_call": parsed, "gold_call": gold,
                    "finish_reason": "stop"})
    return out


def test_the_rule_needs_a_lower_bound_above_zero_to_call_it_a_gain() -> None:
    rule = StopRule.of("no_improvement:full_call_exact_match:2",
                       StatisticsConfig(seed=1, resamples=200, confidence_level=0.95))
    assert rule.update(1, records([False] * 40)) == (
        False, "full_call_exact_match: step 1 is the first, the best so far"
    )
    stop, line = rule.update(2, records([True] + [False] * 39))  # one more hit: no evidence
    assert not stop and "no gain (1 of 2)" in line and rule.best_step == 1
    stop, line = rule.update(3, records([True] * 40))  # every example fixed: a gain
    assert not stop and "beats best step 1" in line and rule.best_step == 3
    assert rule.since_best == 0
    rule.update(4, records([True] * 40))
    stop, line = rule.update(5, records([True] * 40))
    assert stop and line.endswith("no gain (2 of 2); stopping")
