"""The scorer contract (``core.scorers``): every output checked, each way of breaking it one
``SOM-SCORER-*`` line naming the scorer and the example, the components summed like a built-in
metric's (parse failures in every denominator), and scorer versions in the identity gate."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier import Scorer
from pytest_sommelier.core import scorers as sc
from pytest_sommelier.core.types import Example
from pytest_sommelier.errors import EvaluationError, InputError, InvariantError

GOLD = {"name": "book", "arguments": {"room": 4}}
EXAMPLE = Example(
    example_id="en-7",
    language="en",
    source_example_id=None,
    prompt_text="p",
    prompt_sha256="0" * 64,
    gold_call=GOLD,
    line=7,
    tools=[{"name": "book", "parameters": {"type": "object", "properties": {}}}],
)


def scorer(function: Any, kind: str = "rate", name: str = "probe") -> Scorer:
    return sc.check_scorer(Scorer(name, "3", kind, function), "test")


OUTPUTS = st.one_of(
    st.tuples(st.integers(-2, 4), st.integers(-2, 4)),
    st.lists(st.integers(-2, 4), max_size=3),
    st.tuples(st.floats(0, 2), st.integers(0, 2)),
    st.tuples(st.booleans(), st.just(1)),
    st.none(),
    st.text(max_size=3),
    st.integers(),
)


@settings(max_examples=examples(100))
@given(OUTPUTS, st.sampled_from(sc.KINDS))
def test_an_output_is_accepted_exactly_when_it_is_a_valid_component(output: Any, kind: str) -> None:
    valid = (
        isinstance(output, tuple | list)
        and len(output) == 2
        and all(type(x) is int for x in output)
        and 0 <= output[0] <= output[1]
        and (kind == "ratio" or output[1] == 1)
    )
    problem = sc.output_problem(kind, output)
    assert (problem is None) == valid
    if problem is not None:
        assert problem[0] in ("SOM-SCORER-TYPE", "SOM-SCORER-RANGE") and "\n" not in problem[1]


def failure(function: Any, kind: str = "rate") -> EvaluationError:
    with pytest.raises(EvaluationError) as caught:
        sc.score_one(scorer(function, kind), None, EXAMPLE)
    text = str(caught.value)
    assert "\n" not in text and "'probe' 3" in text and "example en-7" in text
    return caught.value


def test_a_scorer_that_raises_is_one_line() -> None:
    def boom(parsed: Any, gold: Any, example: Any) -> Any:
        raise KeyError("arguments")

    error = failure(boom)
    assert error.code == "SOM-SCORER-RAISED" and "KeyError" in str(error)


def test_a_scorer_that_returns_floats_is_one_line() -> None:
    error = failure(lambda parsed, gold, example: (0.5, 1.0), kind="ratio")
    assert error.code == "SOM-SCORER-TYPE" and "integers" in str(error)


def test_a_numerator_above_the_denominator_is_one_line() -> None:
    error = failure(lambda parsed, gold, example: (3, 2), kind="ratio")
    assert error.code == "SOM-SCORER-RANGE" and "(3, 2)" in str(error)


def test_a_rate_is_zero_or_one_of_one() -> None:
    assert failure(lambda parsed, gold, example: (2, 2)).code == "SOM-SCORER-RANGE"


def test_an_impure_scorer_is_one_line() -> None:
    counter = itertools.count()

    def drifting(parsed: Any, gold: Any, example: Any) -> tuple[int, int]:
        return (next(counter) % 2, 1)

    error = failure(drifting)
    assert error.code == "SOM-SCORER-IMPURE" and "[0, 1] and then [1, 1]" in str(error)


def test_a_score_that_differs_from_the_recorded_one_is_impure() -> None:
    steady = scorer(lambda parsed, gold, example: (1, 1))
    same = sc.record_scores([steady], None, EXAMPLE, {"probe": [1, 1]}, compare=True)
    assert same == {"probe": [1, 1]}
    with pytest.raises(EvaluationError) as caught:
        sc.record_scores([steady], None, EXAMPLE, {"probe": [0, 1]}, compare=True)
    assert caught.value.code == "SOM-SCORER-IMPURE" and "on rescore" in str(caught.value)


def test_a_scorer_cannot_change_what_it_is_given() -> None:
    def mutating(parsed: Any, gold: Any, example: Any) -> tuple[int, int]:
        gold["arguments"]["room"] = 5
        example["tools"].clear()
        return (int(parsed is None), 1)

    assert sc.score_one(scorer(mutating), None, EXAMPLE) == [1, 1]
    assert GOLD == {"name": "book", "arguments": {"room": 4}} and EXAMPLE.tools


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (lambda p, g, e: (1, 1), "not a Scorer"),
        (Scorer("Bad-Name", "1", "rate", print), "snake case"),
        (Scorer("full_call_exact_match", "1", "rate", print), "a built-in metric"),
        (Scorer("ok_name", "", "rate", print), "version"),
        (Scorer("ok_name", "1", "mean", print), "kind"),
        (Scorer("ok_name", "1", "rate", "not callable"), "not callable"),
    ],
)
def test_the_contract_is_checked_when_a_scorer_is_registered(value: Any, problem: str) -> None:
    with pytest.raises(InputError) as caught:
        sc.check_scorer(value, "hook of conftest.py", reserved=["full_call_exact_match"])
    assert caught.value.code == "SOM-SCORER-CONTRACT"
    assert problem in str(caught.value) and "hook of conftest.py" in str(caught.value)


def test_a_checked_scorer_declares_its_kind() -> None:
    scorer(lambda p, g, e: (1, 1), kind="ratio", name="kind_probe")
    assert sc.is_ratio("kind_probe") and sc.is_ratio("argument_f1")
    assert not sc.is_ratio("full_call_exact_match")
    scorer(lambda p, g, e: (1, 1), kind="rate", name="kind_probe")
    assert not sc.is_ratio("kind_probe")


@settings(max_examples=examples(100))
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 3)), max_size=12))
def test_scores_sum_like_a_metric_and_parse_failures_count(
    rows: list[tuple[bool, int, int]],
) -> None:
    records: list[Any] = []
    for index, (parsed, a, b) in enumerate(rows):
        numerator, denominator = min(a, b), max(a, b)
        records.append({
            "example_id": f"e{index}", "parse_status": "ok" if parsed else "no_json",
            "scores": {"r": [int(parsed), 1], "q": [numerator, denominator]},
        })  # fmt: skip
    assert sc.score_names(records) == (("q", "r") if records else ())
    metrics = sc.score_metrics(records, ("q", "r"))
    assert metrics["r"]["denominator"] == len(rows)  # every example, parsed or not
    assert metrics["r"]["numerator"] == sum(parsed for parsed, _, _ in rows)
    assert metrics["q"]["numerator"] == sum(min(a, b) for _, a, b in rows)
    den = sum(max(a, b) for _, a, b in rows)
    assert metrics["q"]["denominator"] == den
    assert metrics["q"]["value"] == (metrics["q"]["numerator"] / den if den else None)


def test_a_record_without_a_score_is_an_invariant_error() -> None:
    with pytest.raises(InvariantError) as caught:
        sc.score_arrays([{"example_id": "x", "scores": {}}], ("q",))  # type: ignore[list-item]
    assert caught.value.code == "SOM-SCORER-MISSING" and "example x" in str(caught.value)


def test_scorer_versions_differing_refuse_the_comparison() -> None:
    from pytest_sommelier.core.report_identity import check_identity

    base: dict[str, Any] = {
        "arm": "a", "model_identity": {"m": 1}, "config_sha256": "c", "split": "s",
        "test_split_sha256": "t", "slice_order": ["en"],
        "slices": {"en": {"prompt_set_sha256": "p", "examples": 1}}, "paired_slices": {},
        "parser_version": "sommelier.parser.v1", "arguments_key": "arguments", "decoding": {},
        "metrics": {"probe": {}}, "scorers": [{"name": "probe", "version": "1", "kind": "rate"}],
    }  # fmt: skip
    check_identity(base, dict(base))  # type: ignore[arg-type]
    newer = {**base, "arm": "b", "scorers": [{"name": "probe", "version": "2", "kind": "rate"}]}
    with pytest.raises(EvaluationError) as caught:
        check_identity(newer, base)  # type: ignore[arg-type]
    assert caught.value.code == "SOM-COMPARE-IDENTITY" and "scorers" in str(caught.value)
    # a report of a run without scorers records none, and compares with another like it
    plain = {k: v for k, v in base.items() if k != "scorers"} | {"metrics": {}}
    check_identity(plain, dict(plain))  # type: ignore[arg-type]
