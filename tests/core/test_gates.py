"""Tests for pytest_sommelier.core.gates: each gate kind and threshold, boundaries, the verdict."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.gates import (
    evaluate_gate,
    evaluate_gates,
    selected_copies,
    sweep_copy,
)
from pytest_sommelier.data.suite.load import GateConfig

METRIC = "full_call_exact_match"


def gate(name: str = "g", kind: str = "arm", **fields: Any) -> GateConfig:
    """A GateConfig with every unset field None (slice defaults to overall)."""
    values: dict[str, Any] = {
        "metric": METRIC, "slice": "overall", "arm": None, "candidate": None, "reference": None,
        "gap": None, "min": None, "max": None, "ci_lower_above": None,
        "ci_lower_at_least": None, "delta_at_least": None,
    }  # fmt: skip
    values.update(fields)
    return GateConfig(name=name, kind=kind, **values)


def metric(value: float | None, numerator: int = 0, denominator: int = 10) -> dict:
    return {"value": value, "numerator": numerator, "denominator": denominator}


def interval_block(lower: float | None, upper: float | None = 0.5) -> dict:
    return {"method": "paired_bootstrap_percentile", "seed": 1, "confidence_level": 0.95,
            "resamples": 100, "pairs": 10,
            "intervals": {METRIC: {"lower": lower, "upper": upper}}}  # fmt: skip


ARMS = {
    "adapter": {
        "metrics": {METRIC: metric(0.7, 7, 10)},
        "slices": {
            "en": {"metrics": {METRIC: metric(0.8, 8, 10)}},
            "he": {"metrics": {METRIC: metric(None, 0, 0)}},
        },
        "paired_slices": {"he": {"gaps": {METRIC: -0.1}, "ci95": interval_block(-0.15, 0.05)}},
    },
}
COMPARISONS = {
    "adapter-vs-base": {
        "deltas": {METRIC: 0.2},
        "ci95": interval_block(0.0, 0.4),
        "slices": {"he": {"deltas": {METRIC: 0.1}, "ci95": interval_block(0.05, 0.3)}},
    }
}


def run(g: GateConfig, errors: dict[str, str] | None = None) -> dict:
    return evaluate_gate(g, ARMS, COMPARISONS, errors)


# --- arm gates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "passed"),
    [
        ({"min": 0.7}, True),  # boundary: value == min passes (>=)
        ({"min": 0.7000001}, False),
        ({"max": 0.7}, True),  # boundary: value == max passes (<=)
        ({"max": 0.6999999}, False),
        ({"min": 0.5, "max": 0.9}, True),
        ({"min": 0.5, "max": 0.6}, False),
        ({"min": 0.8, "slice": "en"}, True),
        ({"min": 0.81, "slice": "en"}, False),
    ],
)
def test_arm_gate_thresholds(fields: dict, passed: bool) -> None:
    result = run(gate(kind="arm", arm="adapter", **fields))
    assert result["passed"] is passed
    assert result["observed"] == (0.8 if fields.get("slice") == "en" else 0.7)
    assert result["subject"] == "adapter"
    assert result["threshold"] == {k: v for k, v in fields.items() if k != "slice"}
    if not passed:
        assert result["reason"].startswith("failed:")


def test_arm_gate_reason_names_value_and_threshold() -> None:
    result = run(gate(kind="arm", arm="adapter", min=0.75))
    assert result["reason"] == "failed: 0.7 < 0.75 (min)"


def test_null_metric_fails_and_says_so() -> None:
    result = run(gate(kind="arm", arm="adapter", slice="he", min=0.0))
    assert result["passed"] is False
    assert result["observed"] is None
    assert "null" in result["reason"]


def test_missing_arm_fails_with_reason() -> None:
    result = run(gate(kind="arm", arm="v3", min=0.0))
    assert (result["passed"], result["observed"]) == (False, None)
    assert "'v3' was not run" in result["reason"]
    errored = run(gate(kind="arm", arm="v3", min=0.0), {"v3": "model crashed"})
    assert "model crashed" in errored["reason"]


def test_missing_slice_fails() -> None:
    result = run(gate(kind="arm", arm="adapter", slice="fr", min=0.0))
    assert result["passed"] is False
    assert "slices.fr" in result["reason"]


# --- comparison gates ----------------------------------------------------------------------


def comparison(**fields: Any) -> GateConfig:
    return gate(kind="comparison", candidate="adapter", reference="base", **fields)


@pytest.mark.parametrize(
    ("fields", "passed", "observed"),
    [
        ({"ci_lower_above": 0.0}, False, 0.0),  # boundary: lower == x fails (>)
        ({"ci_lower_above": -0.01}, True, 0.0),
        ({"ci_lower_at_least": 0.0}, True, 0.0),  # boundary: lower == x passes (>=)
        ({"ci_lower_at_least": 0.01}, False, 0.0),
        ({"delta_at_least": 0.2}, True, 0.2),  # boundary: delta == x passes (>=)
        ({"delta_at_least": 0.21}, False, 0.2),
        ({"ci_lower_at_least": 0.0, "delta_at_least": 0.3}, False, 0.0),
        ({"ci_lower_above": 0.0, "slice": "he"}, True, 0.05),
        ({"delta_at_least": 0.1, "slice": "he"}, True, 0.1),
    ],
)
def test_comparison_gate_thresholds(fields: dict, passed: bool, observed: float) -> None:
    result = run(comparison(**fields))
    assert result["passed"] is passed
    assert result["observed"] == observed
    assert result["subject"] == "adapter-vs-base"
    assert result["kind"] == "comparison"


def test_refused_comparison_fails_with_the_refusal() -> None:
    g = gate(kind="comparison", candidate="v3", reference="base", ci_lower_above=0.0)
    message = "SOM-COMPARE-IDENTITY: decoding.batch_size: arms disagree"
    result = run(g, {"v3-vs-base": message})
    assert (result["passed"], result["observed"]) == (False, None)
    assert message in result["reason"]
    assert result["subject"] == "v3-vs-base"


def test_null_interval_fails() -> None:
    reports = {"adapter-vs-base": {"deltas": {METRIC: 0.0}, "ci95": interval_block(None, None)}}
    result = evaluate_gate(comparison(ci_lower_at_least=-1.0), ARMS, reports)
    assert result["passed"] is False
    assert "lower bound" in result["reason"]


# --- gap gates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "passed", "observed"),
    [
        ({"ci_lower_at_least": -0.15}, True, -0.15),
        ({"ci_lower_above": -0.15}, False, -0.15),
        ({"ci_lower_at_least": -0.1}, False, -0.15),
        ({"delta_at_least": -0.1}, True, -0.1),
        ({"delta_at_least": -0.05}, False, -0.1),
    ],
)
def test_gap_gate_thresholds(fields: dict, passed: bool, observed: float) -> None:
    result = run(gate(kind="gap", arm="adapter", gap="he", slice="he", **fields))
    assert result["passed"] is passed
    assert result["observed"] == observed
    assert result["slice"] == "he"
    assert result["subject"] == "adapter"


def test_gap_gate_on_missing_gap_fails() -> None:
    result = run(gate(kind="gap", arm="adapter", gap="fr", slice="fr", ci_lower_at_least=-1.0))
    assert result["passed"] is False
    assert "paired_slices.fr" in result["reason"]


def test_gate_without_threshold_fails() -> None:
    assert run(gate(kind="arm", arm="adapter"))["passed"] is False


# --- verdict -------------------------------------------------------------------------------


def verdict(gates: tuple[GateConfig, ...], complete: bool = True) -> dict:
    return evaluate_gates(gates, ARMS, COMPARISONS, complete=complete, run_id="r1")


def test_verdict_pass_fail_incomplete() -> None:
    good = gate("good", kind="arm", arm="adapter", min=0.5)
    bad = gate("bad", kind="comparison", candidate="adapter", reference="base",
               ci_lower_above=0.0)  # fmt: skip
    passed = verdict((good,))
    assert passed["verdict"] == "pass"
    assert passed["schema_version"] == "sommelier.gate_verdict.v1"
    assert (passed["run_id"], passed["complete"]) == ("r1", True)
    failed = verdict((good, bad))
    assert failed["verdict"] == "fail"
    assert [g["name"] for g in failed["gates"]] == ["good", "bad"]
    assert [g["passed"] for g in failed["gates"]] == [True, False]
    assert verdict((good,), complete=False)["verdict"] == "incomplete"
    assert verdict((good, bad), complete=False)["verdict"] == "incomplete"


def test_no_gates() -> None:
    assert verdict(())["verdict"] == "pass"
    assert verdict((), complete=False)["verdict"] == "incomplete"
    assert verdict(())["gates"] == []


def test_gate_entry_fields() -> None:
    entry = verdict((gate("x", kind="arm", arm="adapter", min=0.5),))["gates"][0]
    assert set(entry) == {"name", "kind", "metric", "slice", "passed", "observed", "threshold",
                          "subject", "reason"}  # fmt: skip
    assert entry["threshold"] == {"min": 0.5}


# --- the selected interval, margins both ways, familywise, gate lines -----------------------

from pytest_sommelier.core.gates import gate_text  # noqa: E402
from pytest_sommelier.core.types import StatisticsConfig  # noqa: E402


def selected(lower: float, upper: float, estimate: float, b: int = 12, c: int = 3) -> dict:
    """An ``intervals`` block (the selected method) holding one metric's entry."""
    entry = {"estimate": estimate, "lower": lower, "upper": upper, "method": "bonett_price",
             "discordant": {"candidate_only": b, "reference_only": c}, "degenerate": False,
             "design_effect": 1.0, "p_value": 0.01}  # fmt: skip
    return {"confidence_level": 0.95, "interval": "auto", "pairs": 40, "clusters": 40,
            "clustered": False, "null": 0.0, "seed": 1, "resamples": 100,
            "intervals": {METRIC: entry}}  # fmt: skip


def power_entry(pairs: int = 40, psi: float = 0.375) -> dict:
    return {METRIC: {"power": 0.8, "confidence_level": 0.95, "pairs": pairs, "clusters": pairs,
                     "design_effect": 1.0, "discordant_proportion": psi}}  # fmt: skip


WITH_INTERVALS = {
    "adapter-vs-base": {
        "deltas": {METRIC: 0.2},
        "ci95": interval_block(0.0, 0.4),  # the bootstrap: not what the gates read
        "intervals": selected(0.05, 0.35, 0.2),
        "power": power_entry(),
        "slices": {},
    }
}


def run_selected(g: GateConfig) -> dict:
    return evaluate_gate(g, ARMS, WITH_INTERVALS)


def test_gates_read_the_selected_interval_not_the_bootstrap() -> None:
    result = run_selected(comparison(ci_lower_above=0.0))
    assert (result["passed"], result["observed"]) == (True, 0.05)
    assert result["estimate"] == 0.2
    assert result["interval"]["method"] == "bonett_price"
    assert (result["interval"]["lower"], result["interval"]["upper"]) == (0.05, 0.35)


@pytest.mark.parametrize(
    ("fields", "passed", "observed"),
    [
        ({"ci_upper_below": 0.35}, False, 0.35),  # boundary: upper == x fails (<)
        ({"ci_upper_below": 0.36}, True, 0.35),
        ({"ci_upper_at_most": 0.35}, True, 0.35),  # boundary: upper == x passes (<=)
        ({"ci_upper_at_most": 0.34}, False, 0.35),
        ({"ci_lower_at_least": -0.02}, True, 0.05),  # non-inferiority
        ({"ci_lower_at_least": 0.0, "ci_upper_at_most": 0.4}, True, 0.05),  # equivalence
        ({"ci_lower_at_least": 0.0, "ci_upper_at_most": 0.3}, False, 0.05),
        ({"ci_lower_at_least": 0.1, "ci_upper_at_most": 0.4}, False, 0.05),
    ],
)
def test_upper_margins_and_equivalence(fields: dict, passed: bool, observed: float) -> None:
    result = run_selected(comparison(**fields))
    assert result["passed"] is passed
    assert result["observed"] == observed
    assert result["threshold"] == fields


def test_gate_line_names_estimate_interval_and_the_bound_tested() -> None:
    result = run_selected(comparison(ci_lower_above=0.1, ci_upper_at_most=0.3))
    text = gate_text(result)
    assert text.startswith("adapter-vs-base full_call_exact_match [overall] delta +0.200 "
                           "[+0.050, +0.350]: lower bound +0.050 <= 0.1; "
                           "upper bound +0.350 > 0.3 (95% bonett_price)")  # fmt: skip
    assert "discordant" not in text  # 15 discordant pairs: not few


def test_gate_line_states_few_discordant_pairs_and_no_post_hoc_power() -> None:
    reports = {"adapter-vs-base": {**WITH_INTERVALS["adapter-vs-base"],
                                   "intervals": selected(-0.1, 0.5, 0.2, b=4, c=1),
                                   "power": power_entry(pairs=12, psi=5 / 12)}}  # fmt: skip
    result = evaluate_gate(comparison(ci_lower_above=0.0), ARMS, reports)
    assert result["passed"] is False and "underpowered" not in result
    assert "underpowered" not in result["reason"]  # observed power says nothing the p did not
    text = gate_text(result)
    assert "only 5 discordant pairs (fewer than 10)" in text
    assert "underpowered" not in text


def test_a_failure_against_the_data_says_no_power_either() -> None:
    reports = {"adapter-vs-base": {**WITH_INTERVALS["adapter-vs-base"], "deltas": {METRIC: -0.2},
                                   "intervals": selected(-0.5, 0.1, -0.2, b=1, c=4),
                                   "power": power_entry(pairs=12, psi=5 / 12)}}  # fmt: skip
    result = evaluate_gate(comparison(ci_lower_above=0.0), ARMS, reports)
    assert result["passed"] is False and "underpowered" not in result["reason"]


def test_arm_gate_line_is_rounded_and_the_verdict_keeps_full_precision() -> None:
    result = run(gate(kind="arm", arm="adapter", min=0.75))
    assert gate_text(result) == "adapter full_call_exact_match [overall] value 0.700 < 0.75 (min)"
    assert result["observed"] == 0.7


def stats(familywise: str) -> StatisticsConfig:
    return StatisticsConfig(seed=1, resamples=100, confidence_level=0.95, familywise=familywise)


def test_bonferroni_reads_each_member_at_the_adjusted_level() -> None:
    asked: list[tuple[str, float, float]] = []

    def interval_at(g: GateConfig, level: float, null: float) -> dict:
        asked.append((g.name, level, null))
        return {**selected(0.01, 0.4, 0.2)["intervals"][METRIC], "method": "wider"}

    gates = (comparison(name="a", ci_lower_above=0.0), comparison(name="b", ci_lower_above=0.02),
             gate("arm", kind="arm", arm="adapter", min=0.5))  # fmt: skip
    verdict = evaluate_gates(gates, ARMS, WITH_INTERVALS, complete=True, run_id="r",
                             statistics=stats("bonferroni"), interval_at=interval_at)  # fmt: skip
    assert asked == [("a", 0.975, 0.0), ("b", 0.975, 0.0)]
    family = verdict["familywise"]
    assert (family["method"], family["size"], family["family"]) == ("bonferroni", 2, ["a", "b"])
    assert family["adjusted_confidence_level"] == {"a": 0.975, "b": 0.975}
    a, b, _ = verdict["gates"]
    assert a["passed"] is True and b["passed"] is False  # 0.01 > 0 but not > 0.02
    assert a["interval"]["confidence_level"] == 0.975 and a["interval"]["method"] == "wider"
    assert "97.5% wider" in gate_text(a)


def test_holm_steps_down_the_members_p_values_at_their_thresholds() -> None:
    p_at = {("a", 0.0): 0.01, ("b", 0.0): 0.04, ("c", -0.1): 0.03, ("c", 0.5): 0.02}

    def interval_at(g: GateConfig, level: float, null: float) -> dict:
        assert level == 0.95
        return {**selected(0.05, 0.35, 0.2)["intervals"][METRIC], "p_value": p_at[g.name, null]}

    gates = (comparison(name="a", ci_lower_above=0.0), comparison(name="b", ci_lower_above=0.0),
             comparison(name="c", ci_lower_at_least=-0.1, ci_upper_at_most=0.5))  # fmt: skip
    verdict = evaluate_gates(gates, ARMS, WITH_INTERVALS, complete=True, run_id="r",
                             statistics=stats("holm"), interval_at=interval_at)  # fmt: skip
    # raw p: a 0.01, b 0.04, c max(0.03, 0.02) = 0.03; Holm: a 3 x 0.01, c 2 x 0.03, b 0.06
    adjusted = verdict["familywise"]["adjusted_p_value"]
    assert adjusted == pytest.approx({"a": 0.03, "b": 0.06, "c": 0.06})
    assert [g["passed"] for g in verdict["gates"]] == [True, False, False]
    assert "Holm-adjusted p 0.06 >= 0.05" in verdict["gates"][1]["reason"]  # strict: p < alpha
    assert "Holm-adjusted p 0.06 > 0.05" in verdict["gates"][2]["reason"]
    assert verdict["gates"][2]["interval"]["null"] == -0.1  # the larger p-value's threshold


def test_holm_counts_a_difference_in_the_wrong_direction_as_no_evidence() -> None:
    def interval_at(g: GateConfig, level: float, null: float) -> dict:
        estimate = -0.3 if g.name == "wrong" else 0.2
        return {**selected(0.05, 0.35, estimate)["intervals"][METRIC], "p_value": 0.001}

    gates = (comparison(name="wrong", ci_lower_above=0.0), comparison(name="b", ci_lower_above=0.0))
    verdict = evaluate_gates(gates, ARMS, WITH_INTERVALS, complete=True, run_id="r",
                             statistics=stats("holm"), interval_at=interval_at)  # fmt: skip
    assert verdict["familywise"]["adjusted_p_value"] == pytest.approx({"wrong": 1.0, "b": 0.002})


def test_none_records_the_family_without_recomputing() -> None:
    def interval_at(g: GateConfig, level: float, null: float) -> dict:
        raise AssertionError("none adjusts nothing")

    gates = (comparison(name="a", ci_lower_above=0.0), comparison(name="b", ci_lower_above=0.0))
    verdict = evaluate_gates(gates, ARMS, WITH_INTERVALS, complete=True, run_id="r",
                             statistics=stats("none"), interval_at=interval_at)  # fmt: skip
    assert verdict["familywise"]["size"] == 2 and verdict["familywise"]["method"] == "none"
    assert verdict["gates"][0]["interval"]["confidence_level"] == 0.95


# --- a sweep's per-checkpoint copies: the selected checkpoint's decides -----------------------

def copies(name: str, steps: list[int], **fields: Any) -> list[GateConfig]:
    """What ``data.suite.globs`` makes of gate ``name`` on the glob arm ``adapter``."""
    key = "candidate" if fields.get("kind") == "comparison" else "arm"
    return [gate(f"{name}@{s}", **{**fields, key: f"adapter@{s}"}) for s in steps]


def test_a_copy_is_known_by_its_arm_and_name_only_the_expansion_makes() -> None:
    assert sweep_copy(gate("parses@20", arm="adapter@20", min=0.5)) == "parses"
    assert sweep_copy(gate("up@20", "comparison", candidate="adapter@20", reference="base",
                           ci_lower_above=0.0)) == "up"  # fmt: skip
    assert sweep_copy(gate("parses", arm="adapter", min=0.5)) is None  # a plain arm
    assert sweep_copy(gate("parses@30", arm="adapter@20", min=0.5)) is None  # another step
    assert sweep_copy(gate("@20", arm="adapter@20", min=0.5)) is None  # no name before '@'


SELECTION = {"selected": "adapter@20", "among": "adapter@*", "familywise": {"candidates": 3}}


def test_the_selected_copy_decides_under_the_gates_name_over_k_candidates() -> None:
    plain = gate("base-parses", arm="base", min=0.1)
    sweep = copies("parses", [10, 20, 30], min=0.5)
    deciding, reported = selected_copies([sweep[0], plain, *sweep[1:]], SELECTION)
    assert [g.name for g in deciding] == ["parses", "base-parses"]
    assert deciding[0].arm == "adapter@20" and deciding[0].candidates == 3
    assert reported == tuple(sweep)
    # no selection: every copy decides, as before
    assert selected_copies(sweep, None) == (tuple(sweep), ())
    # the selected checkpoint is another family's: the copies decide nothing, all reported
    other = {**SELECTION, "selected": "lora@20", "among": "*"}
    assert selected_copies(sweep, other) == ((), tuple(sweep))
    # copies of arms the selection does not choose among decide, each
    narrow = {**SELECTION, "among": "adapter@2*"}
    deciding, reported = selected_copies(sweep, narrow)
    assert [g.name for g in deciding] == ["parses@10", "parses", "parses@30"]
    assert reported == (sweep[1],)


@settings(max_examples=examples(100))
@given(steps=st.lists(st.integers(0, 10**6), min_size=1, max_size=6, unique=True),
       pick=st.integers(0, 5), names=st.lists(st.sampled_from(["a", "b@x", "c@1", "@"]),
                                              min_size=1, max_size=3, unique=True))  # fmt: skip
def test_each_gate_of_a_sweep_decides_once_and_every_copy_is_reported(
    steps: list[int], pick: int, names: list[str]
) -> None:
    chosen = f"adapter@{steps[pick % len(steps)]}"
    sweep = [g for name in names for g in copies(name, steps, min=0.5)]
    deciding, reported = selected_copies(sweep, {**SELECTION, "selected": chosen})
    assert reported == tuple(sweep)
    assert [g.name for g in deciding] == names
    assert all(g.arm == chosen and g.candidates == 3 for g in deciding)


def test_the_deciding_copy_reads_the_level_adjusted_over_k() -> None:
    sweep = copies("up", [10, 20], kind="comparison", reference="base", ci_lower_above=0.0)
    block = {"deltas": {METRIC: 0.2}, "ci95": interval_block(0.05, 0.4)}
    reports = {f"adapter@{s}-vs-base": block for s in (10, 20)}

    def at(g: GateConfig, level: float, null: float) -> dict:
        return {"lower": 0.01 if level < 0.97 else -0.01, "upper": 0.4, "estimate": 0.2,
                "method": "m"}  # fmt: skip

    verdict = evaluate_gates(sweep, {}, reports, complete=True, run_id="r", interval_at=at,
                             selection={**SELECTION, "familywise": {"candidates": 2}})  # fmt: skip
    (entry,) = verdict["gates"]
    assert entry["name"] == "up" and entry["passed"] is False  # -0.01 at 97.5%
    assert entry["selection"]["candidates"] == 2
    assert entry["selection"]["selected"] == "adapter@20"
    assert entry["interval"]["confidence_level"] == pytest.approx(0.975)
    assert [g["name"] for g in verdict["per_candidate"]] == ["up@10", "up@20"]
    assert all(g["passed"] for g in verdict["per_candidate"])  # each at its own 95%
    assert verdict["verdict"] == "fail" and verdict["familywise"]["family"] == ["up"]
