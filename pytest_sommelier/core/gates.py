"""Gate evaluation and the run's verdict (pure functions over report dicts).

Invariants kept:

- A gate passes only when its subject exists, its observed value is a number, and every
  threshold it sets holds; anything else (missing arm, refused comparison, null metric, missing
  slice or gap, no threshold at all) fails it with ``observed`` null where nothing was observed
  and a ``reason`` that says why.
- The verdict is ``incomplete`` whenever the run is not complete, whatever the gates say;
  otherwise ``fail`` if any gate failed, else ``pass`` (also with no gates).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from pytest_sommelier.core.types import (
    ComparisonReport,
    EvaluationReport,
    GateConfig,
    GateResult,
    Verdict,
    VerdictName,
)

VERDICT_SCHEMA = "sommelier.gate_verdict.v1"


class Threshold(NamedTuple):
    """One threshold key: what it reads, how the observation must compare with it, and the
    signs its reason text uses when it holds and when it does not."""

    reads: str  # "value" (arm gates), "interval" (the lower bound) or "delta" (the difference)
    holds: Callable[[float, float], bool]
    ok_sign: str
    bad_sign: str


THRESHOLDS: dict[str, Threshold] = {
    "min": Threshold("value", operator.ge, ">=", "<"),
    "max": Threshold("value", operator.le, "<=", ">"),
    "ci_lower_above": Threshold("interval", operator.gt, ">", "<="),
    "ci_lower_at_least": Threshold("interval", operator.ge, ">=", "<"),
    "delta_at_least": Threshold("delta", operator.ge, ">=", "<"),
}
"""The one table of threshold keys (``[[gates]]`` keys, ``GateConfig`` fields, verdict
``threshold`` keys), in the order they are reported."""


def _keys(reads: str) -> tuple[str, ...]:
    return tuple(key for key, rule in THRESHOLDS.items() if rule.reads == reads)


ARM_THRESHOLDS = _keys("value")
INTERVAL_THRESHOLDS = _keys("interval")
DELTA_THRESHOLDS = _keys("delta")
COMPARISON_THRESHOLDS = INTERVAL_THRESHOLDS + DELTA_THRESHOLDS
"""The keys a comparison or gap gate takes (exactly one of them)."""
ALL_THRESHOLDS = tuple(THRESHOLDS)


def threshold_text(threshold: Mapping[str, float] | None) -> str:
    """A verdict entry's thresholds as one phrase, ``max 0.9, min 0.1`` (keys sorted): how the
    terminal, the HTML page and the JUnit cases show them."""
    return ", ".join(f"{key} {value}" for key, value in sorted((threshold or {}).items()))


IDENTICAL_METRIC = "identical_outputs"
"""A comparison gate on this metric reads the fraction of examples whose candidate output is
byte-identical to the reference's, and takes ``max`` (require fewer identical outputs)."""


class _Unavailable(Exception):
    """The gate's subject or value could not be found; the message is the reason."""


def _thresholds(gate: GateConfig) -> dict[str, float]:
    """The thresholds a gate sets (None-valued ones left out), in a fixed order."""
    return {
        key: getattr(gate, key) for key in ALL_THRESHOLDS if getattr(gate, key, None) is not None
    }


def _lookup(block: Any, path: Sequence[str], what: str) -> Any:
    """``block[path[0]][path[1]]...`` or ``_Unavailable`` naming what is missing."""
    value = block
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            raise _Unavailable(f"{what} has no {'.'.join(path)}")
        value = value[key]
    return value


def _number(value: Any, label: str) -> float:
    """Return ``value`` as a float, or ``_Unavailable`` when it is null (not a number)."""
    if value is None:
        raise _Unavailable(f"{label} is null (its denominator is 0: nothing was scored)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Unavailable(f"{label} is not a number ({value!r})")
    return float(value)


def _check(value: float, key: str, threshold: float) -> tuple[bool, str]:
    """Apply one threshold; return (holds, a one-phrase description)."""
    rule = THRESHOLDS[key]
    holds = rule.holds(value, threshold)
    return holds, f"{value!r} {rule.ok_sign if holds else rule.bad_sign} {threshold!r} ({key})"


def _apply(observations: Mapping[str, float], thresholds: Mapping[str, float]) -> tuple[bool, str]:
    """Check every threshold against its observation; the reason lists the checks made."""
    if not thresholds:
        return False, "the gate sets no threshold"
    foreign = [key for key in thresholds if key not in observations]
    if foreign:
        return False, f"threshold {foreign[0]} does not apply to this kind of gate"
    outcomes = [_check(observations[key], key, limit) for key, limit in thresholds.items()]
    failed = [text for holds, text in outcomes if not holds]
    if failed:
        return False, "failed: " + "; ".join(failed)
    return True, "; ".join(text for _, text in outcomes)


def _arm_observation(gate: GateConfig, report: EvaluationReport) -> dict[str, float]:
    """Observed value of an arm gate: the metric at ``overall`` or at one slice."""
    if gate.slice == "overall":
        metric = _lookup(report, ["metrics", gate.metric], f"arm {gate.arm!r}")
    else:
        metric = _lookup(
            report, ["slices", gate.slice, "metrics", gate.metric], f"arm {gate.arm!r}"
        )
    value = _number(_lookup(metric, ["value"], "the metric"), f"{gate.metric} of {gate.slice}")
    return dict.fromkeys(ARM_THRESHOLDS, value)


def _interval_observation(
    block: Mapping[str, Any], gate: GateConfig, deltas_key: str, what: str
) -> dict[str, float]:
    """Observed lower bound and point difference of a comparison or gap block.

    Only the numbers a threshold needs are required (a delta gate ignores a null interval).
    """
    thresholds = _thresholds(gate)
    observed: dict[str, float] = {}
    if any(key in thresholds for key in INTERVAL_THRESHOLDS):
        found = _lookup(block, ["ci95", "intervals", gate.metric, "lower"], what)
        lower = _number(found, f"the interval's lower bound for {gate.metric}")
        observed.update(dict.fromkeys(INTERVAL_THRESHOLDS, lower))
    if "delta_at_least" in thresholds:
        delta = _lookup(block, [deltas_key, gate.metric], what)
        observed["delta_at_least"] = _number(delta, f"the point difference of {gate.metric}")
    return observed


def _identical_observation(block: Mapping[str, Any], subject: str) -> dict[str, float]:
    """The fraction of compared examples with byte-identical outputs (``max`` applies)."""
    same = _number(_lookup(block, ["identical_outputs"], f"comparison {subject!r}"), "identical")
    total = _number(_lookup(block, ["compared_examples"], f"comparison {subject!r}"), "examples")
    if total <= 0:
        raise _Unavailable(f"comparison {subject!r} compared no examples")
    return {"max": same / total}


def _comparison_block(
    gate: GateConfig, report: ComparisonReport, subject: str
) -> Mapping[str, Any]:
    """The overall comparison block, or one slice's ``{deltas, ci95}`` block."""
    if gate.slice == "overall":
        return report
    block: Mapping[str, Any] = _lookup(report, ["slices", gate.slice], f"comparison {subject!r}")
    return block


def stored_subject(arm: str, stored: str) -> str:
    """The subject of a ``stored`` gate: ``adapter-vs-adapter@last``, arm ``adapter`` of this
    run against the same arm of the stored run ``stored`` names (``last`` or a number)."""
    return f"{arm}-vs-{arm}@{stored}"


def _subject(gate: GateConfig) -> str:
    """The arm or comparison a gate reads."""
    if gate.kind == "comparison":
        return f"{gate.candidate}-vs-{gate.reference}"
    if gate.kind == "stored":
        return stored_subject(str(gate.arm), str(gate.stored))
    return str(gate.arm)


def _missing_reason(kind: str, subject: str, errors: Mapping[str, str]) -> str:
    """Why a gate's subject is absent: the recorded refusal, or that it was not run."""
    label = "arm" if kind in ("arm", "gap") else "comparison"
    if subject in errors:
        return f"{label} {subject!r} unavailable: {errors[subject]}"
    return f"{label} {subject!r} was not run (no report)"


def _observations(
    gate: GateConfig,
    subject: str,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    errors: Mapping[str, str],
) -> dict[str, float]:
    """Everything the gate's thresholds compare against (``_Unavailable`` when missing)."""
    if gate.kind == "arm":
        if subject not in arm_reports:
            raise _Unavailable(_missing_reason("arm", subject, errors))
        return _arm_observation(gate, arm_reports[subject])
    if gate.kind in ("comparison", "stored"):  # a stored gate reads its stored comparison
        if subject not in comparison_reports:
            raise _Unavailable(_missing_reason("comparison", subject, errors))
        block = _comparison_block(gate, comparison_reports[subject], subject)
        if gate.metric == IDENTICAL_METRIC:
            return _identical_observation(block, subject)
        return _interval_observation(block, gate, "deltas", f"comparison {subject!r}")
    if gate.kind == "gap":
        if subject not in arm_reports:
            raise _Unavailable(_missing_reason("gap", subject, errors))
        block = _lookup(arm_reports[subject], ["paired_slices", str(gate.gap)], f"arm {subject!r}")
        return _interval_observation(block, gate, "gaps", f"gap {gate.gap!r} of arm {subject!r}")
    raise _Unavailable(f"unknown gate kind {gate.kind!r}")


def _observed_value(gate: GateConfig, observations: Mapping[str, float]) -> float | None:
    """The single ``observed`` number reported: the value, else the lower bound, else delta."""
    for key in ("min", "max", "ci_lower_above", "delta_at_least"):
        if key in observations:
            return observations[key]
    return None


def evaluate_gate(
    gate: GateConfig,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    errors: Mapping[str, str] | None = None,
) -> GateResult:
    """One gate's verdict entry: ``{name, kind, metric, slice, passed, observed, threshold,
    subject, reason}``. A gap gate's ``slice`` is its gap language."""
    subject = _subject(gate)
    thresholds = _thresholds(gate)
    try:
        observations = _observations(gate, subject, arm_reports, comparison_reports, errors or {})
    except _Unavailable as missing:
        passed, observed, reason = False, None, str(missing)
    else:
        passed, reason = _apply(observations, thresholds)
        observed = _observed_value(gate, observations)
    return {
        "name": gate.name,
        "kind": gate.kind,
        "metric": gate.metric,
        "slice": gate.gap if gate.kind == "gap" else gate.slice,
        "threshold": thresholds,
        "subject": subject,
        "passed": passed,
        "observed": observed,
        "reason": reason,
    }


def verdict_of(complete: bool, results: Sequence[GateResult]) -> VerdictName:
    """``incomplete`` unless complete; then ``fail`` if any gate failed, else ``pass``."""
    if not complete:
        return "incomplete"
    return "fail" if any(not result["passed"] for result in results) else "pass"


def evaluate_gates(
    gates: Sequence[GateConfig],
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    *,
    complete: bool,
    run_id: str,
    errors: Mapping[str, str] | None = None,
) -> Verdict:
    """The ``gate_verdict.json`` dict: every gate evaluated in configured order, and the verdict.

    ``errors`` maps an arm or comparison name to why it has no report (e.g. the identity
    gate's refusal); gates on that subject fail with that reason.
    """
    results = [evaluate_gate(gate, arm_reports, comparison_reports, errors) for gate in gates]
    return {
        "schema_version": VERDICT_SCHEMA,
        "run_id": run_id,
        "verdict": verdict_of(complete, results),
        "complete": bool(complete),
        "gates": results,
    }
