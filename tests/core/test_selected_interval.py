"""The selected-interval rule has one home (pytest_sommelier.core.text): a gate and a view
reading the same report block pick the same interval entry, whichever of ``intervals`` and
``ci95`` it has, and whatever is missing or null inside them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core import gates
from pytest_sommelier.core.gates import evaluate_gate
from pytest_sommelier.core.text import selected_block, selected_interval, selected_key
from pytest_sommelier.data.suite.load import GateConfig

METRIC = "full_call_exact_match"
ARMS: dict[str, Any] = {"adapter": {"metrics": {}}, "base": {"metrics": {}}}

bounds = st.one_of(st.none(), st.floats(-1.0, 1.0))
entries = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"lower": bounds, "upper": bounds},
        optional={"method": st.sampled_from(["wilson", "bonett_price"]), "estimate": bounds},
    ),
)
interval_blocks = st.one_of(
    st.none(),
    st.just({}),
    st.fixed_dictionaries(
        {"intervals": st.dictionaries(st.sampled_from([METRIC, "tool_name_match"]), entries)},
        optional={
            "method": st.sampled_from(["paired_bootstrap_percentile", "auto"]),
            "confidence_level": st.sampled_from([0.9, 0.95]),
        },
    ),
)
report_blocks = st.fixed_dictionaries(
    {"deltas": st.just({METRIC: 0.1})},
    optional={"intervals": interval_blocks, "ci95": interval_blocks},
)


def comparison_gate() -> GateConfig:
    return GateConfig(
        name="g", kind="comparison", metric=METRIC, slice="overall", arm=None,
        candidate="adapter", reference="base", gap=None, min=None, max=None,
        ci_lower_above=None, ci_lower_at_least=-2.0, delta_at_least=None,
    )  # fmt: skip


def without_method(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key != "method"}


# was 500: the blocks vary by which keys they hold, a few dozen shapes
@settings(max_examples=examples(200))
@given(report_blocks)
def test_the_gate_and_the_view_pick_the_same_entry(block: dict[str, Any]) -> None:
    view = selected_interval(block, METRIC)
    try:
        entry, level = gates._report_entry(block, METRIC, "adapter-vs-base")
    except gates._Unavailable as missing:
        assert view is None
        assert f"has no {selected_key(block)}.intervals.{METRIC}" in str(missing)
    else:
        if view is None:
            assert entry is None
        else:
            assert without_method(entry) == without_method(view)
            method = view.get("method")  # a ci95 entry (before 0.3) gets its block's method
            if selected_key(block) == "ci95" and "method" not in view:
                method = selected_block(block).get("method")
            assert entry.get("method") == method
        assert level == selected_block(block).get("confidence_level")

    result = evaluate_gate(comparison_gate(), ARMS, {"adapter-vs-base": block})
    if isinstance(view, Mapping) and isinstance(view.get("lower"), float):
        assert result["observed"] == view["lower"]
        assert (result["interval"]["lower"], result["interval"]["upper"]) == (
            view["lower"],
            view.get("upper"),
        )
    else:
        assert (result["passed"], result["observed"]) == (False, None)


def test_a_block_with_intervals_is_never_read_through_its_ci95() -> None:
    ci95 = {"method": "m", "intervals": {METRIC: {"lower": 0.1, "upper": 0.2}}}
    for intervals in (None, {}, {"intervals": {}}):
        block = {"deltas": {METRIC: 0.1}, "intervals": intervals, "ci95": ci95}
        assert selected_interval(block, METRIC) is None
        result = evaluate_gate(comparison_gate(), ARMS, {"adapter-vs-base": block})
        assert (result["passed"], result["observed"]) == (False, None)
    assert selected_interval({"ci95": ci95}, METRIC) == {"lower": 0.1, "upper": 0.2}
