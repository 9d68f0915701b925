"""Parser v2's scoring records through the run's one scoring path (core.metrics,
core.extra_columns, core.misses): a record carrying ``call_order`` scores its call sets, a v1
record is untouched, a one-call v2 record scores and is categorised exactly as v1, the hit test
is order-free under ``any`` and not under ``exact``."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from test_call_sets import CALL_LISTS, FAILURES, SMALL_CALLS

from pytest_sommelier.core.call_sets import CALL_SET_ADDED, call_set_components, call_set_metrics
from pytest_sommelier.core.extra_columns import extra_arrays, extra_metrics, extra_names
from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    compute_metrics,
    example_components,
    record_hit,
)
from pytest_sommelier.core.misses import (
    CALL_SET_CATEGORIES,
    MISS_CATEGORIES,
    miss_categories,
    miss_category,
)
from pytest_sommelier.core.parse import STATUS_OK

ORDERS = st.sampled_from(["any", "exact"])


def v2(parsed: list[dict[str, Any]] | None, gold: list[dict[str, Any]], order: str,
       status: str = STATUS_OK) -> dict[str, Any]:  # fmt: skip
    return {
        "example_id": "e",
        "raw_text": "",
        "parse_status": status if parsed is not None else (status if status != STATUS_OK
                                                           else "no_json"),
        "parsed_call": parsed[0] if parsed else None,
        "parsed_calls": parsed,
        "gold_call": gold[0],
        "gold_calls": gold,
        "call_order": order,
    }  # fmt: skip


def v1(parsed: dict[str, Any] | None, gold: dict[str, Any], status: str) -> dict[str, Any]:
    return {"example_id": "e", "raw_text": "", "parse_status": status, "parsed_call": parsed,
            "gold_call": gold}  # fmt: skip


@settings(max_examples=examples(100))
@given(st.one_of(st.none(), CALL_LISTS), CALL_LISTS, ORDERS, FAILURES)
def test_a_v2_record_scores_its_call_sets(
    parsed: Any, gold: Any, order: str, failure: str
) -> None:
    record = v2(parsed, gold, order, STATUS_OK if parsed is not None else failure)
    full = call_set_components(record, order)
    assert example_components(record) == full[: len(METRIC_NAMES)]
    num, den = extra_arrays([record], CALL_SET_ADDED)
    assert [tuple(pair) for pair in zip(num[0], den[0], strict=True)] == list(full[5:])
    assert record_hit(record) == (full[METRIC_NAMES.index("full_call_exact_match")] == (1, 1))
    category = miss_category(record)  # type: ignore[arg-type]
    assert (category is None) == record_hit(record)
    if category is not None and parsed is not None:
        expected_count = (
            "missing_call" if len(parsed) < len(gold) else
            "extra_call" if len(parsed) > len(gold) else None
        )  # fmt: skip
        if expected_count:
            assert category == expected_count
        else:
            assert category in MISS_CATEGORIES


@settings(max_examples=examples(100))
@given(st.one_of(st.none(), SMALL_CALLS), SMALL_CALLS, ORDERS, FAILURES)
def test_a_one_call_v2_record_is_a_v1_record(
    parsed: Any, gold: Any, order: str, failure: str
) -> None:
    status = STATUS_OK if parsed is not None else failure
    old = v1(parsed, gold, status)
    new = v2(None if parsed is None else [parsed], [gold], order, status)
    assert example_components(new) == example_components(old)
    assert record_hit(new) == record_hit(old)
    assert miss_category(new) == miss_category(old)  # type: ignore[arg-type]
    assert miss_category(new) not in CALL_SET_CATEGORIES  # type: ignore[arg-type]


@settings(max_examples=examples(100))
@given(CALL_LISTS, st.randoms(use_true_random=False))
def test_a_permutation_hits_under_any_and_exact_sees_the_order(
    gold: list[dict[str, Any]], random: Any
) -> None:
    permuted = list(gold)
    random.shuffle(permuted)
    assert record_hit(v2(permuted, gold, "any"))
    assert record_hit(v2(permuted, gold, "exact")) == (permuted == gold)


@settings(max_examples=examples(100))
@given(st.lists(st.tuples(st.one_of(st.none(), CALL_LISTS), CALL_LISTS), max_size=6), ORDERS)
def test_run_totals_are_the_call_set_metrics(rows: list[Any], order: str) -> None:
    records = [v2(parsed, gold, order) for parsed, gold in rows]
    expected = call_set_metrics(records, order)
    totals = {**compute_metrics(records), **extra_metrics(records, CALL_SET_ADDED)}  # type: ignore[arg-type]
    if records:
        assert extra_names(records) == CALL_SET_ADDED
        assert totals == expected
    num, den = extra_arrays(records, CALL_SET_ADDED)
    assert num.shape == den.shape == (len(records), 3)
    assert np.all(num <= den)


@settings(max_examples=examples(100))
@given(st.lists(st.tuples(st.one_of(st.none(), SMALL_CALLS), SMALL_CALLS), max_size=4))
def test_v1_records_add_no_columns_and_no_categories(rows: list[Any]) -> None:
    records = [v1(p, g, STATUS_OK if p is not None else "no_json") for p, g in rows]
    assert extra_names(records) == ()
    assert miss_categories(records) == MISS_CATEGORIES
