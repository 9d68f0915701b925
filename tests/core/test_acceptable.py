"""Tests for ``acceptable_call_match`` (pytest_sommelier.core.acceptable): BFCL's rules point by
point, properties, and agreement with BFCL's own checker when its environment is present."""

from __future__ import annotations

import json
import os
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.acceptable import (
    acceptable_arrays,
    acceptable_component,
    acceptable_metric,
    acceptable_shape_error,
    call_acceptable,
    calls_acceptable,
    carries_acceptable,
    standardize_string,
)
from pytest_sommelier.errors import InvariantError

ACCEPTABLE = {
    "language": "python",
    "required": ["city", "days"],
    "arguments": {
        "city": {"type": "string", "values": ["San Francisco, CA", "SF"]},
        "days": {"type": "integer", "values": [3]},
        "ratio": {"type": "float", "values": [2.0, ""]},
        "units": {"type": "string", "values": ["", "metric"]},
        "stops": {"type": "array", "items_type": "string", "values": [["Oakland", "San Jose"]]},
        "point": {"type": "tuple", "items_type": "integer", "values": [[1, 2], ""]},
        "counts": {"type": "array", "items_type": "integer", "values": [[1, 2], [3]]},
        "filters": {"type": "dict", "values": [{"kind": ["Hotel", ""], "stars": [4, 5]}, ""]},
        "rooms": {
            "type": "array",
            "items_type": "dict",
            "values": [[{"beds": [2], "view": ["sea", ""]}], ""],
        },
        "anything": {"type": "any", "values": ["x", ""]},
    },
}
GOLD = {
    "name": "trip.plan",
    "arguments": {
        "city": "San Francisco, CA",
        "days": 3,
        "ratio": 2.0,
        "stops": ["Oakland", "San Jose"],
        "filters": {"kind": "Hotel", "stars": 4},
        "counts": [1, 2],
    },
}


def accepts(**changes: Any) -> bool:
    """The verdict for the gold call with ``changes`` (value None removes the argument)."""
    arguments = dict(GOLD["arguments"])
    for key, value in changes.items():
        if value is None:
            arguments.pop(key, None)
        else:
            arguments[key] = value
    return call_acceptable({"name": "trip.plan", "arguments": arguments}, "trip.plan", ACCEPTABLE)


def test_gold_accepted():
    assert accepts()


def test_rule1_function_name_must_be_equal():
    assert not call_acceptable({**GOLD, "name": "trip_plan"}, "trip.plan", ACCEPTABLE)


def test_rule2_required_argument_present():
    assert not accepts(days=None)


def test_rule3_unexpected_argument():
    assert not accepts(budget=100)


def test_rule4_types():
    assert not accepts(days="3")  # "3" is not 3
    assert not accepts(days=3.0)  # a float is not an integer
    assert not accepts(days=True)  # bool is not int
    assert accepts(ratio=2)  # an integer where a float is expected (Python)
    assert not accepts(ratio="2")
    assert not accepts(stops="Oakland, San Jose")
    assert not accepts(counts=[1.0, 2.0])  # item types checked, one level deep
    # BFCL quirk kept: with "" among the values, item types are not checked, and the list
    # comparison is Python equality, where 1.0 == 1
    assert accepts(point=[1.0, 2.0])


def test_int_for_float_is_python_only():
    java = {**ACCEPTABLE, "language": "java"}
    call = {"name": "trip.plan", "arguments": {**GOLD["arguments"], "ratio": 2}}
    assert call_acceptable(call, "trip.plan", ACCEPTABLE)
    assert not call_acceptable(call, "trip.plan", java)


def test_rule5_string_normalisation():
    assert accepts(city="san francisco ca")  # case, spaces, commas
    assert accepts(city="SAN-FRANCISCO,_CA.")  # - _ , . removed
    assert accepts(city="sf")  # another acceptable value
    assert not accepts(city="San Francisco CA!")  # ! is not removed
    assert not accepts(city="Los Angeles")
    assert standardize_string("It's A/B*c^d") == 'it"sabcd'


def test_rule5_lists_and_tuples():
    assert accepts(stops=["oakland", "SAN JOSE"])  # string elements normalised
    assert not accepts(stops=["San Jose", "Oakland"])  # order matters
    assert not accepts(stops=["Oakland"])
    assert accepts(point=[1, 2])  # a tuple is a list
    assert accepts(point=[])  # "" among the values accepts an empty list (BFCL's list_checker)


def test_rule5_nested_dicts_and_lists_of_dicts():
    assert accepts(filters={"kind": "hotel", "stars": 5})
    assert accepts(filters={"stars": 4})  # "kind" may be left out
    assert not accepts(filters={"kind": "Hotel"})  # "stars" may not
    assert not accepts(filters={"kind": "Hotel", "stars": 4, "pool": True})
    assert accepts(rooms=[{"beds": 2, "view": "SEA"}])
    assert accepts(rooms=[{"beds": 2}])
    assert not accepts(rooms=[{"beds": 3}])
    assert not accepts(rooms=[{"beds": 2}, {"beds": 2}])


def test_rule6_left_out_arguments_need_empty_string():
    assert accepts(ratio=None, filters=None)  # both list ""
    assert not accepts(stops=None)  # listed without ""
    assert accepts(units="METRIC")  # an optional one may also be given


def test_variable_rule_value_of_the_acceptable_type():
    acceptable = {
        "language": "python",
        "required": [],
        "arguments": {"venue": {"type": "string", "values": ["", True]}},
    }
    assert call_acceptable({"name": "f", "arguments": {"venue": True}}, "f", acceptable)
    assert not call_acceptable({"name": "f", "arguments": {"venue": False}}, "f", acceptable)
    assert not call_acceptable({"name": "f", "arguments": {"venue": "true"}}, "f", acceptable)


def test_component_parse_failure_absent_field_and_bad_shape():
    record = {"example_id": "e", "gold_call": GOLD, "acceptable_arguments": ACCEPTABLE}
    assert acceptable_component({**record, "parsed_call": None, "parse_status": "no_json"}) == (
        0,
        1,
    )
    assert acceptable_component({**record, "parsed_call": GOLD, "parse_status": "ok"}) == (1, 1)
    assert acceptable_component({"example_id": "e", "gold_call": GOLD, "parsed_call": GOLD}) == (
        0,
        0,
    )
    bad = {**ACCEPTABLE, "arguments": {"x": {"type": "decimal", "values": [1]}}}
    with pytest.raises(InvariantError) as info:
        acceptable_component({**record, "acceptable_arguments": bad, "parsed_call": GOLD})
    assert info.value.code == "SOM-METRIC-BAD-ACCEPTABLE" and "example e" in str(info.value)


# ---------------------------------------------------------------- properties

SCALARS = {
    "string": st.text(max_size=6),
    "integer": st.integers(-5, 5),
    "float": st.floats(-5, 5, allow_nan=False),
    "boolean": st.booleans(),
}


@st.composite
def acceptable_sets(draw):
    """An acceptable record and a call built from each argument's first acceptable value."""
    names = draw(st.lists(st.sampled_from("abcdef"), unique=True, min_size=1, max_size=4))
    arguments, call = {}, {}
    for name in names:
        kind = draw(st.sampled_from(sorted(SCALARS)))
        values = draw(st.lists(SCALARS[kind], min_size=1, max_size=3))
        if draw(st.booleans()):
            values.insert(draw(st.integers(0, len(values))), "")
        arguments[name] = {"type": kind, "values": values}
        chosen = next((v for v in values if v != ""), None)
        if values[0] != "" and chosen is not None:
            call[name] = chosen
    required = [n for n in names if n in call and draw(st.booleans())]
    return {"language": "python", "required": required, "arguments": arguments}, call


@settings(max_examples=examples(300), deadline=None)
@given(acceptable_sets())
def test_first_acceptable_values_always_accepted(pair):
    acceptable, arguments = pair
    assert call_acceptable({"name": "f", "arguments": arguments}, "f", acceptable)
    assert not call_acceptable({"name": "g", "arguments": arguments}, "f", acceptable)
    assert not call_acceptable({"name": "f", "arguments": {**arguments, "zz": 1}}, "f", acceptable)


@settings(max_examples=examples(100))
@given(st.text(alphabet=string.printable, max_size=20))
def test_standardize_idempotent_and_case_free(text):
    once = standardize_string(text)
    assert standardize_string(once) == once
    assert standardize_string(text.upper()) == standardize_string(text.lower())
    assert not set(once) & set(" ,./-_*^'")


# ---------------------------------------------------------------- agreement with BFCL

WHEEL = Path("/work/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl")
BFCL_PYTHON = Path(os.environ.get("SOMMELIER_BFCL_PYTHON", "/work/venv-bfcl/bin/python"))


@pytest.mark.slow
@pytest.mark.skipif(
    not (WHEEL.exists() and BFCL_PYTHON.exists()),
    reason="needs the BFCL wheel and a venv with bfcl_eval installed (SOMMELIER_BFCL_PYTHON)",
)
def test_agreement_with_bfcl_ast_checker_on_simple_python(tmp_path):
    out = tmp_path / "agreement.json"
    script = Path(__file__).parents[2] / "scripts" / "bfcl_agreement.py"
    subprocess.run(
        [
            sys.executable,
            str(script),
            "--wheel",
            str(WHEEL),
            "--python",
            str(BFCL_PYTHON),
            "--json",
            str(out),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.read_text())
    assert result["examples"] == 399 and result["cases"] > 5000
    assert result["disagreements"] == []
    assert result["agreed"] == result["cases"]


# ---------------------------------------------------------------- totals and columns


def test_metric_and_bootstrap_column_sum_the_components():
    hit = {
        "example_id": "a",
        "parse_status": "ok",
        "parsed_call": GOLD,
        "gold_call": GOLD,
        "acceptable_arguments": ACCEPTABLE,
    }
    miss = {**hit, "example_id": "b", "parsed_call": None, "parse_status": "no_json"}
    plain = {"example_id": "c", "parse_status": "ok", "parsed_call": GOLD, "gold_call": GOLD}
    records = [hit, miss, plain]
    assert acceptable_metric(records) == {"value": 0.5, "numerator": 1, "denominator": 2}
    assert acceptable_metric([plain]) == {"value": None, "numerator": 0, "denominator": 0}
    assert carries_acceptable(records) and not carries_acceptable([plain])
    numerators, denominators = acceptable_arrays(records)
    assert numerators.tolist() == [[1], [0], [0]] and denominators.tolist() == [[1], [1], [0]]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([], "must be an object"),
        ({**ACCEPTABLE, "extra": 1}, "unknown key 'extra'"),
        ({**ACCEPTABLE, "required": "city"}, "required must be a list"),
        ({**ACCEPTABLE, "arguments": {"x": {"type": "array", "values": [[1]]}}}, "items_type"),
        ({**ACCEPTABLE, "arguments": {"x": {"type": "string", "values": "a"}}}, "values"),
    ],
)
def test_shape_errors_name_the_problem(value, problem):
    assert problem in acceptable_shape_error(value)
    assert acceptable_shape_error(ACCEPTABLE) is None


# ---------------------------------------------------------------- several gold calls (parser v2)


def stock(companies: list[str], month: str) -> dict[str, Any]:
    """BFCL parallel_178's shape: one get_stock_price call's acceptable values."""
    return {
        "language": "python",
        "required": ["company_name", "date"],
        "arguments": {
            "company_name": {"type": "string", "values": companies},
            "date": {"type": "string", "values": [month]},
        },
    }


def call(company: str, month: str) -> dict[str, Any]:
    return {"name": "get_stock_price", "arguments": {"company_name": company, "date": month}}


# gold 0 accepts Microsoft or Apple in January, gold 1 Apple in January only: an answer listing
# Apple first strands gold 1 under BFCL's greedy pairing, a maximum matching pairs both
TRAP_GOLD = [call("Microsoft", "2022-01-01"), call("Apple", "2022-01-01")]
TRAP_ENTRIES = [stock(["Microsoft", "Apple"], "2022-01-01"), stock(["Apple"], "2022-01-01")]


def test_several_calls_are_paired_by_a_maximum_matching_not_greedily():
    answer = [call("Apple", "2022-01-01"), call("Microsoft", "2022-01-01")]
    assert calls_acceptable(answer, TRAP_GOLD, TRAP_ENTRIES, "any")
    assert calls_acceptable(list(reversed(answer)), TRAP_GOLD, TRAP_ENTRIES, "exact")
    assert not calls_acceptable(answer, TRAP_GOLD, TRAP_ENTRIES, "exact")


def test_several_calls_need_as_many_calls_each_accepted():
    both = [call("Microsoft", "2022-01-01"), call("Apple", "2022-01-01")]
    assert not calls_acceptable(both[:1], TRAP_GOLD, TRAP_ENTRIES, "any")
    assert not calls_acceptable([*both, both[0]], TRAP_GOLD, TRAP_ENTRIES, "any")
    assert not calls_acceptable([both[0], both[0]], TRAP_GOLD, TRAP_ENTRIES, "any")
    assert not calls_acceptable([both[0], call("Apple", "2022-02-01")], TRAP_GOLD,
                                TRAP_ENTRIES, "any")  # fmt: skip


@settings(max_examples=examples(60), deadline=None)
@given(st.permutations(range(3)), st.sampled_from(["any", "exact"]))
def test_order_any_is_permutation_invariant_and_exact_is_not(order, mode):
    gold = [call("Microsoft", "2022-01-01"), call("Apple", "2022-01-01"), call("IBM", "2022-03")]
    entries = [stock(["Microsoft"], "2022-01-01"), stock(["Apple"], "2022-01-01"),
               stock(["IBM"], "2022-03")]  # fmt: skip
    answer = [gold[i] for i in order]
    accepted = calls_acceptable(answer, gold, entries, mode)
    assert accepted == (mode == "any" or list(order) == [0, 1, 2])


def v2_record(parsed: list[Any] | None, order: str = "any") -> dict[str, Any]:
    return {
        "example_id": "p-1",
        "parse_status": "ok" if parsed else "no_json",
        "parsed_call": parsed[0] if parsed else None,
        "parsed_calls": parsed,
        "gold_call": TRAP_GOLD[0],
        "gold_calls": TRAP_GOLD,
        "call_order": order,
        "acceptable_arguments": TRAP_ENTRIES,
    }


def test_a_v2_record_scores_its_call_set_against_one_entry_per_gold_call():
    permuted = list(reversed(TRAP_GOLD))
    assert acceptable_component(v2_record(permuted)) == (1, 1)
    assert acceptable_component(v2_record(permuted, "exact")) == (0, 1)
    assert acceptable_component(v2_record(None)) == (0, 1)
    assert acceptable_component(v2_record(TRAP_GOLD[:1])) == (0, 1)
    one = {**v2_record([TRAP_GOLD[0]]), "gold_calls": TRAP_GOLD[:1],
           "acceptable_arguments": TRAP_ENTRIES[0]}  # fmt: skip
    assert acceptable_component(one) == (1, 1)  # one object for one gold call, as v1


def test_a_list_of_acceptable_values_on_a_v1_record_is_a_broken_record():
    record = {**v2_record(TRAP_GOLD)}
    del record["call_order"]
    with pytest.raises(InvariantError, match="SOM-METRIC-BAD-ACCEPTABLE"):
        acceptable_component(record)


@settings(max_examples=examples(80), deadline=None)
@given(st.one_of(st.lists(st.none() | st.integers() | st.text(max_size=3), max_size=3),
                 st.lists(st.just(ACCEPTABLE), max_size=1)))  # fmt: skip
def test_hostile_acceptable_lists_are_named(value):
    problem = acceptable_shape_error(value)
    assert problem is not None and len(problem) < 200
