"""Tests for pytest_sommelier.core.gates: each gate kind and threshold, boundaries, the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_sommelier.core.gates import evaluate_gate, evaluate_gates
from pytest_sommelier.data.suite import GateConfig

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
