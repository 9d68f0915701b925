"""Gate evaluation and the run's verdict (pure functions over report dicts).

Invariants kept:

- A gate passes only when its subject exists, its observed value is a number, and every
  threshold it sets holds; anything else (missing arm, refused comparison, null metric, missing
  slice or gap, no threshold at all) fails it with ``observed`` null where nothing was observed
  and a ``reason`` that says why.
- An interval gate reads the interval ``[statistics] interval`` selected (the report's
  ``intervals`` block; a block written before it existed is read through its ``ci95``), and its
  verdict entry records what it compared: the estimate, the interval, its method and level.
- The interval gates of a suite are one family: under ``bonferroni`` each member's interval is
  computed at ``1 - (1 - cl) / m``, under ``holm`` the members' p-values at their thresholds
  (from the same method) are stepped down and a member passes only when its interval checks
  hold *and* its adjusted p-value is at most ``1 - cl``; ``none`` leaves every level alone.
- A selection gate (``selected = true``) is resolved in one place
  (:func:`resolve_selection_gates`, called by :func:`evaluate_gates`) into the comparison it
  reads: the ``[selection]``'s selected candidate against its reference (or against a stored
  run's arm, ``stored``). The candidate is the best of K on these examples, so its interval is
  read at the Bonferroni level over the K candidates, composed with the suite's family
  (:func:`selection_level`); a selection gate with nothing selected fails with the reason.
- In a run with a ``[selection]``, a checkpoint sweep's per-checkpoint copies of a gate
  (``uplift@20``, :func:`sweep_copy`) are one claim about the selected checkpoint
  (:func:`selected_copies`): its copy decides under the gate's name, read at the level adjusted
  over the K candidates; every copy is reported in the verdict's ``per_candidate`` and none of
  them is a member of the family.
- The verdict is ``incomplete`` whenever the run is not complete, whatever the gates say;
  otherwise ``fail`` if any gate failed, else ``pass`` (also with no gates).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, NamedTuple

from pytest_sommelier.core import multiplicity
from pytest_sommelier.core.text import selected_block, selected_entries, selected_key
from pytest_sommelier.core.types import (
    ComparisonReport,
    Discordant,
    EvaluationReport,
    Familywise,
    GateConfig,
    GateInterval,
    GateResult,
    GateSelection,
    StatisticsConfig,
    Verdict,
    VerdictName,
)
from pytest_sommelier.errors import InvariantError

VERDICT_SCHEMA = "sommelier.gate_verdict.v1"
FEW_DISCORDANT = 10
"""Below this many discordant pairs a gate line says so: the interval then rests on a handful
of examples that disagree."""


class Threshold(NamedTuple):
    """One threshold key: what it reads, how the observation must compare with it, and the
    signs its reason text uses when it holds and when it does not."""

    reads: str  # "value" (arm gates), "interval" (a bound) or "delta" (the difference)
    holds: Callable[[float, float], bool]
    ok_sign: str
    bad_sign: str
    bound: str = ""  # "lower" or "upper" for an interval threshold


THRESHOLDS: dict[str, Threshold] = {
    "min": Threshold("value", operator.ge, ">=", "<"),
    "max": Threshold("value", operator.le, "<=", ">"),
    "ci_lower_above": Threshold("interval", operator.gt, ">", "<=", "lower"),
    "ci_lower_at_least": Threshold("interval", operator.ge, ">=", "<", "lower"),
    "ci_upper_below": Threshold("interval", operator.lt, "<", ">=", "upper"),
    "ci_upper_at_most": Threshold("interval", operator.le, "<=", ">", "upper"),
    "delta_at_least": Threshold("delta", operator.ge, ">=", "<"),
}
"""The one table of threshold keys (``[[gates]]`` keys, ``GateConfig`` fields, verdict
``threshold`` keys), in the order they are reported. A comparison or gap gate takes one lower
bound, one upper bound or both (non-inferiority: a lower margin; equivalence: both), or
``delta_at_least`` alone."""

STRICT = frozenset({"ci_lower_above", "ci_upper_below"})
"""Interval thresholds that fail at equality: under ``holm`` their adjusted p-value must be
strictly below ``1 - cl``."""

IntervalAt = Callable[[GateConfig, float, float], Mapping[str, Any] | None]
"""``(gate, confidence_level, null)`` -> the gate's metric entry of its subject's intervals at
that level, its ``p_value`` testing ``difference == null`` (None: the subject is unavailable).
The pipeline builds it over the run's records (``core.pipeline``)."""


def _keys(reads: str) -> tuple[str, ...]:
    return tuple(key for key, rule in THRESHOLDS.items() if rule.reads == reads)


ARM_THRESHOLDS = _keys("value")
INTERVAL_THRESHOLDS = _keys("interval")
LOWER_THRESHOLDS = tuple(k for k in INTERVAL_THRESHOLDS if THRESHOLDS[k].bound == "lower")
UPPER_THRESHOLDS = tuple(k for k in INTERVAL_THRESHOLDS if THRESHOLDS[k].bound == "upper")
DELTA_THRESHOLDS = _keys("delta")
COMPARISON_THRESHOLDS = INTERVAL_THRESHOLDS + DELTA_THRESHOLDS
"""The keys a comparison or gap gate takes (one lower and/or one upper bound, or the delta)."""
ALL_THRESHOLDS = tuple(THRESHOLDS)


def threshold_text(threshold: Mapping[str, float] | None) -> str:
    """A verdict entry's thresholds as one phrase, ``max 0.9, min 0.1`` (keys sorted): how the
    terminal, the HTML page and the JUnit cases show them."""
    return ", ".join(f"{key} {value}" for key, value in sorted((threshold or {}).items()))


IDENTICAL_METRIC = "identical_outputs"
"""A comparison gate on this metric reads the fraction of examples whose candidate output is
byte-identical to the reference's, and takes ``max`` (require fewer identical outputs)."""


NOISE_METRIC = "noise_flips"
"""A comparison gate on this metric reads the noise floor of the comparison's reference arm
(``core.noise``): how many full-call outcomes flip when its sampled examples are re-batched; it
takes ``max`` (a count) and needs ``[statistics] noise_floor`` on."""


SELECTION_KIND = "selection"
"""The kind of a gate with ``selected = true``: a claim about the ``[selection]``'s selected
candidate (``core.selection``), against its reference or, with ``stored``, a stored run's arm."""


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


@dataclass
class _Observed:
    """What a gate's thresholds compare against: one number per threshold key, and for an
    interval gate the interval entry read, the level it was computed at and the block's
    power summary of the metric."""

    values: dict[str, float]
    estimate: float | None = None
    entry: Mapping[str, Any] | None = None
    confidence_level: float | None = None
    power: Mapping[str, Any] | None = None
    not_evaluable: str | None = None  # why the interval read is no evidence (zero-width)
    null: float = 0.0  # the null of the entry's p_value


@dataclass(frozen=True)
class _Plan:
    """How the familywise setting treats one interval gate: the level its interval is read at
    (and the entry recomputed there, when that is not the report's level) and, under
    ``holm``, its adjusted p-value and the familywise alpha it must meet."""

    method: str = "none"
    size: int = 0
    entry: Mapping[str, Any] | None = None
    confidence_level: float | None = None
    adjusted_p_value: float | None = None
    alpha: float | None = None
    p_value: float | None = None  # holm: the member's raw p-value, at the null below
    null: float | None = None
    adjusted: bool = False  # the interval is read at ``confidence_level``, recomputed: ``entry``
    candidates: int = 1  # a selection gate's K (its level and p-value adjusted over them)


def _arm_observation(gate: GateConfig, report: EvaluationReport) -> _Observed:
    """Observed value of an arm gate: the metric at ``overall`` or at one slice."""
    if gate.slice == "overall":
        metric = _lookup(report, ["metrics", gate.metric], f"arm {gate.arm!r}")
    else:
        metric = _lookup(
            report, ["slices", gate.slice, "metrics", gate.metric], f"arm {gate.arm!r}"
        )
    value = _number(_lookup(metric, ["value"], "the metric"), f"{gate.metric} of {gate.slice}")
    return _Observed(dict.fromkeys(ARM_THRESHOLDS, value))


def _report_entry(block: Mapping[str, Any], metric: str, what: str) -> tuple[Any, float | None]:
    """The interval entry of ``metric`` a block's selected intervals hold
    (:func:`~pytest_sommelier.core.text.selected_entries`, the views' rule), and their level;
    a ``ci95`` entry (a block written before 0.3) gets its block's method."""
    entries = selected_entries(block)
    if metric not in entries:
        raise _Unavailable(f"{what} has no {selected_key(block)}.intervals.{metric}")
    entry = entries[metric]
    selected = selected_block(block)
    level = selected.get("confidence_level")
    if selected_key(block) == "ci95" and isinstance(entry, Mapping) and "method" not in entry:
        entry = {**entry, "method": selected.get("method")}
    return entry, level


def _interval_observation(
    block: Mapping[str, Any], gate: GateConfig, deltas_key: str, what: str, plan: _Plan | None
) -> _Observed:
    """Observed bounds and point difference of a comparison or gap block.

    Only the numbers a threshold needs are required (a delta gate ignores a null interval).
    """
    thresholds = _thresholds(gate)
    observed = _Observed({})
    delta = (block.get(deltas_key) or {}).get(gate.metric)
    if any(key in thresholds for key in INTERVAL_THRESHOLDS):
        entry, level = _report_entry(block, gate.metric, what)
        if plan is not None and plan.adjusted:
            if plan.entry is None:
                over = f"{plan.method}, family of {plan.size}"
                if plan.candidates > 1:
                    over += f", {plan.candidates} candidates"
                raise _Unavailable(
                    f"{what}: the {gate.metric} interval cannot be recomputed at the familywise "
                    f"level {_level_text(plan.confidence_level or 0.0)} ({over}); the gate is "
                    "not evaluable"
                )
            entry, level = plan.entry, plan.confidence_level
        null = 0.0
        if is_margin_gate(gate) and isinstance(entry, Mapping) and level is not None:
            margin_entry, margin_null = margin_evidence(gate, entry, level)
            if margin_entry is not None:  # else a block of a report written before 0.4,
                entry, null = margin_entry, margin_null  # read as it was recorded
        observed.null = null
        from pytest_sommelier.core.intervals import ratio_margin_unevaluable

        observed.not_evaluable = zero_width(entry, gate.metric) or ratio_margin_unevaluable(
            gate.metric, [limit for _, limit in interval_limits(gate)], entry)
        for key in INTERVAL_THRESHOLDS:
            bound = THRESHOLDS[key].bound
            if key in thresholds:
                found = entry.get(bound) if isinstance(entry, Mapping) else None
                observed.values[key] = _number(found, f"the interval's {bound} bound for "
                                               f"{gate.metric}")  # fmt: skip
        estimate = delta if delta is not None else entry.get("estimate")
        observed.estimate = None if estimate is None else float(estimate)
        observed.entry, observed.confidence_level = entry, level
        observed.power = (block.get("power") or {}).get(gate.metric)
    if "delta_at_least" in thresholds:
        found = _lookup(block, [deltas_key, gate.metric], what)
        observed.values["delta_at_least"] = _number(found, f"the point difference of {gate.metric}")
        observed.estimate = observed.values["delta_at_least"]
    return observed


def _identical_observation(block: Mapping[str, Any], subject: str) -> _Observed:
    """The fraction of compared examples with byte-identical outputs (``max`` applies)."""
    same = _number(_lookup(block, ["identical_outputs"], f"comparison {subject!r}"), "identical")
    total = _number(_lookup(block, ["compared_examples"], f"comparison {subject!r}"), "examples")
    if total <= 0:
        raise _Unavailable(f"comparison {subject!r} compared no examples")
    return _Observed({"max": same / total})


def _noise_observation(report: Mapping[str, Any], subject: str) -> _Observed:
    """The noise floor's full-call flips (``max`` applies); none measured is unavailable."""
    what = f"comparison {subject!r}"
    block = _lookup(report, ["noise_floor"], f"{what} (its reference arm was not generated here)")
    if not _number(_lookup(block, ["examples"], what), "noise floor examples"):
        raise _Unavailable(f"{what}: the noise floor re-batched no example")
    return _Observed({"max": _number(_lookup(block, ["full_call_flips"], what), "noise flips")})


def _comparison_block(
    gate: GateConfig, report: ComparisonReport, subject: str
) -> Mapping[str, Any]:
    """The overall comparison block, or one slice's ``{deltas, ci95, intervals}`` block."""
    if gate.slice == "overall":
        return report
    block: Mapping[str, Any] = _lookup(report, ["slices", gate.slice], f"comparison {subject!r}")
    return block


def stored_subject(arm: str, stored: str, reference: str | None = None) -> str:
    """The subject of a ``stored`` gate: ``adapter-vs-adapter@last``, arm ``adapter`` of this
    run against the stored run's arm ``reference`` (``core.verdict.stored_gate_arm``; None:
    not resolved, the arm's family) of the stored run ``stored`` names (``last`` or a number):
    ``adapter@30-vs-adapter@label:shipped`` for a sweep's checkpoint against the shipped arm,
    ``adapter@30-vs-adapter@20@label:shipped`` against a stored sweep's selected one."""
    return f"{arm}-vs-{reference or family_of(arm)}@{stored}"


def family_of(arm: str) -> str:
    """A checkpoint arm's family: ``adapter`` for ``adapter@200`` (the part before ``@``), the
    name itself for an arm without ``@`` (``data.suite.globs`` names a sweep's arms so)."""
    return arm.split("@", 1)[0]


def sweep_copy(gate: GateConfig) -> str | None:
    """The suite file's name of a gate the checkpoint sweep repeated per checkpoint
    (``data.suite.globs``: gate ``uplift`` naming the glob arm becomes ``uplift@<step>`` on
    ``adapter@<step>``), None for any other gate. Only that expansion makes an arm name with
    ``@``, so a gate whose arm (or candidate) is ``<family>@<step>`` and whose name ends in the
    same ``@<step>`` is such a copy."""
    arm = gate.candidate if gate.kind == "comparison" else gate.arm
    if gate.kind == SELECTION_KIND or arm is None or family_of(arm) == arm:
        return None
    name, at, step = gate.name.rpartition("@")
    if not at or not name or step != arm.rpartition("@")[2]:
        return None
    return name


def sweep_arm(gate: GateConfig) -> str | None:
    """The checkpoint arm a sweep's per-checkpoint gate copy (:func:`sweep_copy`) is about."""
    return gate.candidate if gate.kind == "comparison" else gate.arm


def selected_copies(
    gates: Sequence[GateConfig], selection: Mapping[str, Any] | None
) -> tuple[tuple[GateConfig, ...], tuple[GateConfig, ...]]:
    """``(deciding, reported)``: in a run with a ``[selection]`` (its ``core.selection``
    block), the per-checkpoint copies of a gate (:func:`sweep_copy`) whose arms are among the
    selection's candidates (its ``among`` pattern) are one claim about the selected
    candidate: the selected candidate's copy decides, under the gate's own name and read at
    the level adjusted over the K candidates (``candidates = K``, as a ``selected = true``
    gate: the winner's curse), in place of the first copy; every copy, that one included, is
    reported as it is. A gate none of whose copies is the selected candidate's (the selected
    one is another family's) decides nothing. Without a selection every copy decides."""
    if not selection or not isinstance(selection.get("selected"), str):
        return tuple(gates), ()
    chosen, among = str(selection["selected"]), str(selection.get("among") or "")
    k = int((selection.get("familywise") or {}).get("candidates") or 1)
    grouped: dict[str, list[GateConfig]] = {}
    for gate in gates:
        name, arm = sweep_copy(gate), sweep_arm(gate)
        if name is not None and arm is not None and fnmatchcase(arm, among):
            grouped.setdefault(name, []).append(gate)
    deciding: list[GateConfig] = []
    reported: list[GateConfig] = []
    for gate in gates:
        name = sweep_copy(gate)
        if name is None or name not in grouped or gate not in grouped[name]:
            deciding.append(gate)
            continue
        reported.append(gate)
        if gate is grouped[name][0]:
            chosen_copy = next((g for g in grouped[name] if sweep_arm(g) == chosen), None)
            if chosen_copy is not None:
                deciding.append(replace(chosen_copy, name=name, candidates=k))
    return tuple(deciding), tuple(reported)


def resolve_stored_gates(
    gates: Sequence[GateConfig], stored_arms: Mapping[str, str | None] | None
) -> tuple[GateConfig, ...]:
    """Each ``stored`` gate with ``reference`` set to the stored run's arm it was compared
    with (``stored_arms[gate.name]``, ``core.verdict.stored_gate_arm``), so its subject names
    it; every other gate, and a stored gate without one, as it is."""
    found = stored_arms or {}
    return tuple(
        replace(gate, reference=found[gate.name])
        if gate.kind == "stored" and found.get(gate.name) is not None
        else gate
        for gate in gates
    )


def selection_subject(gate: GateConfig) -> str:
    """The subject of a selection gate, the same text in every view:
    ``selected(adapter@200)-vs-base`` (the selected candidate against the selection's
    reference), ``selected(adapter@200)-vs-adapter@last`` with ``stored`` (against the stored
    run's arm of the candidate's family, or its own selected candidate: the entry's
    ``selection.reference`` names which); ``selected(none)-vs-reference`` /
    ``selected(none)-vs-stored@last`` while nothing is selected."""
    chosen = gate.candidate or "none"
    if gate.stored is not None:
        family = family_of(gate.candidate) if gate.candidate else "stored"
        return f"selected({chosen})-vs-{family}@{gate.stored}"
    return f"selected({chosen})-vs-{gate.reference or 'reference'}"


def _report_key(gate: GateConfig) -> str:
    """The name of the comparison report a gate reads: its subject, except a selection gate
    against the reference, which reads the comparison ``<selected>-vs-<reference>``."""
    if gate.kind == SELECTION_KIND and gate.stored is None:
        return f"{gate.candidate}-vs-{gate.reference}"
    return _subject(gate)


def _subject(gate: GateConfig) -> str:
    """The arm or comparison a gate reads."""
    if gate.kind == SELECTION_KIND:
        return selection_subject(gate)
    if gate.kind == "comparison":
        return f"{gate.candidate}-vs-{gate.reference}"
    if gate.kind == "stored":
        return stored_subject(str(gate.arm), str(gate.stored), gate.reference)
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
    plan: _Plan | None = None,
) -> _Observed:
    """Everything the gate's thresholds compare against (``_Unavailable`` when missing)."""
    if gate.kind == "arm":
        if subject not in arm_reports:
            raise _Unavailable(_missing_reason("arm", subject, errors))
        return _arm_observation(gate, arm_reports[subject])
    if gate.kind in ("comparison", "stored"):  # a stored gate reads its stored comparison
        if subject not in comparison_reports:
            raise _Unavailable(_missing_reason("comparison", subject, errors))
        if gate.metric == NOISE_METRIC:
            return _noise_observation(comparison_reports[subject], subject)
        block = _comparison_block(gate, comparison_reports[subject], subject)
        if gate.metric == IDENTICAL_METRIC:
            return _identical_observation(block, subject)
        return _interval_observation(block, gate, "deltas", f"comparison {subject!r}", plan)
    if gate.kind == SELECTION_KIND:
        if gate.candidates <= 0 or gate.candidate is None:
            raise _Unavailable(
                errors.get(subject)
                or "nothing was selected: no candidate of [selection] and "
                "its reference were both run (a claim about the selected candidate needs one)"
            )
        key = _report_key(gate)
        if key not in comparison_reports:
            raise _Unavailable(errors.get(subject) or _missing_reason("comparison", key, errors))
        block = _comparison_block(gate, comparison_reports[key], key)
        return _interval_observation(block, gate, "deltas", f"comparison {subject!r}", plan)
    if gate.kind == "gap":
        if subject not in arm_reports:
            raise _Unavailable(_missing_reason("gap", subject, errors))
        block = _lookup(arm_reports[subject], ["paired_slices", str(gate.gap)], f"arm {subject!r}")
        what = f"gap {gate.gap!r} of arm {subject!r}"
        return _interval_observation(block, gate, "gaps", what, plan)
    raise _Unavailable(f"unknown gate kind {gate.kind!r}")


def _observed_value(observations: Mapping[str, float]) -> float | None:
    """The single ``observed`` number reported: the value, else the tested lower bound, else
    the tested upper bound, else the delta."""
    for key in ("min", "max", *LOWER_THRESHOLDS, *UPPER_THRESHOLDS, "delta_at_least"):
        if key in observations:
            return observations[key]
    return None


def is_interval_gate(gate: GateConfig) -> bool:
    """Whether a gate tests an interval bound: the members of the familywise family."""
    return gate.metric != IDENTICAL_METRIC and any(
        getattr(gate, key, None) is not None for key in INTERVAL_THRESHOLDS
    )


def interval_limits(gate: GateConfig) -> list[tuple[str, float]]:
    """The interval thresholds a gate sets, ``(key, limit)`` in table order."""
    return [(key, float(getattr(gate, key))) for key in INTERVAL_THRESHOLDS
            if getattr(gate, key, None) is not None]  # fmt: skip


def is_margin_gate(gate: GateConfig) -> bool:
    """A rate-metric interval gate with a non-zero limit (non-inferiority, a bounded loss,
    equivalence): judged on Tango's score interval (``core.intervals.MARGIN_RATE_METHOD``)."""
    from pytest_sommelier.core.intervals import is_margin
    from pytest_sommelier.core.scorers import is_ratio

    limits = [limit for _, limit in interval_limits(gate)]
    return (
        bool(limits) and not is_ratio(gate.metric) and gate.metric != IDENTICAL_METRIC
        and is_margin(limits)
    )  # fmt: skip


def margin_method(gate: GateConfig) -> str:
    """The rate method a margin gate reads: Tango's score interval, continuity-corrected for an
    equivalence gate (both bounds: its uncorrected size at 90% reached 0.069 for a nominal
    0.05, ``core.intervals.EQUIVALENCE_RATE_METHOD``)."""
    from pytest_sommelier.core.intervals import EQUIVALENCE_RATE_METHOD, MARGIN_RATE_METHOD

    return EQUIVALENCE_RATE_METHOD if len(interval_limits(gate)) > 1 else MARGIN_RATE_METHOD


def _side_p(key: str, limit: float, entry: Mapping[str, Any]) -> float:
    """A member's evidence at one threshold: the p-value at ``limit``, or 1 when the estimate
    lies on the failing side of it (a difference in the wrong direction is no evidence)."""
    estimate = float(entry["estimate"])
    lower = THRESHOLDS[key].bound == "lower"
    passing_side = estimate > limit if lower else estimate < limit
    return float(entry["p_value"]) if passing_side else 1.0


def margin_evidence(
    gate: GateConfig, entry: Mapping[str, Any], level: float
) -> tuple[dict[str, Any] | None, float]:
    """A margin gate's Tango interval at ``level`` from its entry, with the p-value (and its
    null) of the threshold that binds: the largest over its limits, as for Holm."""
    from pytest_sommelier.core.intervals import entry_at

    best: tuple[float, float, dict[str, Any]] | None = None
    for key, limit in interval_limits(gate):
        tango = entry_at(dict(entry), level, limit, margin_method(gate))
        if tango is None:
            return None, 0.0
        tango["p_value"] = _side_p(key, limit, tango)
        if best is None or tango["p_value"] > best[0]:
            best = (tango["p_value"], limit, tango)
    if best is None:
        return None, 0.0
    return best[2], best[1]


def zero_width(entry: Any, metric: str) -> str | None:
    """Why an interval entry is no evidence, or None: a zero-width interval from a finite
    sample (degenerate: every resample or leave-one-out value equals the estimate) says
    nothing about the difference, so a gate reading it fails as not evaluable."""
    if not isinstance(entry, Mapping):
        return None
    lower, upper = entry.get("lower"), entry.get("upper")
    flat = isinstance(lower, (int, float)) and isinstance(upper, (int, float)) and lower >= upper
    if not (flat or entry.get("degenerate")):
        return None
    return (
        f"not evaluable: the {metric} interval is zero-width ({entry.get('method')}): the "
        "sample shows no variation to measure the difference by (too few pairs or clusters, "
        "or identical outputs); a zero-width interval is no evidence"
    )


def _power_at(observed: _Observed) -> tuple[float | None, float | None, int | None]:
    """``(power, minimum detectable effect, pairs)`` at the level the gate's interval was
    read at, from the block's power summary of the metric (Nones without one)."""
    from pytest_sommelier.core.power import minimum_detectable_effect

    summary, level = observed.power, observed.confidence_level
    if not summary or level is None or not summary.get("pairs"):
        return None, None, None
    mde = minimum_detectable_effect(
        summary["pairs"], summary["discordant_proportion"], confidence_level=level,
        power=summary["power"], design_effect=max(1.0, summary.get("design_effect") or 1.0),
    )  # fmt: skip
    return float(summary["power"]), mde, int(summary["pairs"])


def _discordant(counts: Any) -> Discordant | None:
    """An interval entry's discordant counts (None for a ``ci95`` entry, which has none)."""
    if not isinstance(counts, Mapping):
        return None
    return {"candidate_only": int(counts["candidate_only"]),
            "reference_only": int(counts["reference_only"])}  # fmt: skip


def _effect_power(gate: GateConfig, observed: _Observed) -> tuple[float, float | None] | None:
    """``(effect, power)``: where the gate (``effect = ...``) or the suite (``[statistics]
    effect``) declares the difference it cares about, the design's power for the gate's claim
    at that difference (``core.power.design_power``: Connor for a limit at 0, Nam's score test
    at a margin), at the observed discordance and the level the gate read; None without one."""
    from pytest_sommelier.core.intervals import RATIO_OF_SUMS
    from pytest_sommelier.core.power import design_power

    summary, level = observed.power, observed.confidence_level
    effect = gate.effect if gate.effect is not None else (summary or {}).get("effect")
    if effect is None or gate.metric in RATIO_OF_SUMS:
        return None
    if not summary or level is None or not summary.get("pairs"):
        return float(effect), None
    limits = tuple((THRESHOLDS[key].bound, limit) for key, limit in interval_limits(gate))
    found = design_power(
        limits, float(effect), summary["pairs"], summary["discordant_proportion"],
        confidence_level=level, design_effect=max(1.0, summary.get("design_effect") or 1.0),
    )  # fmt: skip
    return float(effect), found


def _gate_interval(observed: _Observed, gate: GateConfig | None = None) -> GateInterval:
    """The ``interval`` a verdict entry records for an interval gate (full precision)."""
    entry = observed.entry or {}
    power, mde, pairs = _power_at(observed)
    interval: GateInterval = {
        "lower": entry.get("lower"),
        "upper": entry.get("upper"),
        "method": str(entry.get("method")),
        "confidence_level": float(observed.confidence_level or 0.0),
        "discordant": _discordant(entry.get("discordant")),
        "degenerate": bool(entry.get("degenerate", False)),
        "design_effect": entry.get("design_effect"),
        "p_value": entry.get("p_value"),
        "null": observed.null,
        "minimum_detectable_effect": mde,
        "pairs": pairs,
        "power": power,
    }
    at_effect = None if gate is None else _effect_power(gate, observed)
    if at_effect is not None:
        interval["effect"], interval["power_at_effect"] = at_effect
    return interval


def evaluate_gate(
    gate: GateConfig,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    errors: Mapping[str, str] | None = None,
    *,
    plan: _Plan | None = None,
) -> GateResult:
    """One gate's verdict entry: ``{name, kind, metric, slice, passed, observed, threshold,
    subject, reason}``, plus ``estimate`` and ``interval`` for an interval gate (and
    ``adjusted_p_value`` under ``holm``). A gap gate's ``slice`` is its gap language. A gate
    whose interval is zero-width fails as not evaluable whatever its bounds say.
    """
    subject = _subject(gate)
    thresholds = _thresholds(gate)
    observed: _Observed | None = None
    try:
        observed = _observations(gate, subject, arm_reports, comparison_reports, errors or {}, plan)
    except _Unavailable as missing:
        passed, value, reason = False, None, str(missing)
    else:
        passed, reason = _apply(observed.values, thresholds)
        value = _observed_value(observed.values)
        if observed.not_evaluable is not None:
            passed, reason = False, f"{observed.not_evaluable}; {reason}"
    result: GateResult = {
        "name": gate.name,
        "kind": gate.kind,
        "metric": gate.metric,
        "slice": gate.gap if gate.kind == "gap" else gate.slice,
        "threshold": thresholds,
        "subject": subject,
        "passed": passed,
        "observed": value,
        "reason": reason,
    }
    if gate.kind == SELECTION_KIND or getattr(gate, "candidates", 0) > 0:
        result["selection"] = _selection_entry(gate, observed, plan)
    if observed is None or observed.entry is None:
        return result
    result["estimate"] = observed.estimate
    result["interval"] = _gate_interval(observed, gate)
    if plan is not None and plan.method == "holm" and plan.size > 1:
        result["interval"]["p_value"] = plan.p_value
        result["interval"]["null"] = plan.null
        result["adjusted_p_value"] = plan.adjusted_p_value
        alpha, adjusted = plan.alpha or 0.0, plan.adjusted_p_value
        strict = any(key in STRICT for key in thresholds)
        meets = adjusted is not None and (adjusted < alpha if strict else adjusted <= alpha)
        phrase = holm_phrase(adjusted, alpha, strict) + f" (family of {plan.size})"
        if passed and not meets:
            passed, reason = False, f"failed: {phrase}; {reason}"
        else:
            reason = f"{reason}; {phrase}"
    result["passed"], result["reason"] = passed, reason
    return result


def _selection_entry(
    gate: GateConfig, observed: _Observed | None, plan: _Plan | None
) -> GateSelection:
    """What a selection gate's verdict entry records of its selection: the selected arm (None:
    nothing selected), what it was compared with, K, and the level its interval was read at."""
    level = plan.confidence_level if plan is not None and plan.adjusted else None
    if level is None and observed is not None:
        level = observed.confidence_level
    selected = gate.candidate if gate.kind in (SELECTION_KIND, "comparison") else gate.arm
    return {
        "selected": selected if gate.candidates > 0 else None,
        "reference": gate.reference if gate.candidates > 0 else None,
        "stored": gate.stored,
        "candidates": gate.candidates,
        "confidence_level": level,
        "method": "bonferroni",
    }


def holm_phrase(adjusted: float | None, alpha: float, strict: bool) -> str:
    """``Holm-adjusted p 0.012 <= 0.05`` (``<`` for a strict threshold)."""
    if adjusted is None:
        return "no Holm-adjusted p-value (the subject is unavailable)"
    holds = adjusted < alpha if strict else adjusted <= alpha
    sign = ("<" if holds else ">=") if strict else ("<=" if holds else ">")
    return f"Holm-adjusted p {adjusted:.4g} {sign} {alpha:.4g}"


def verdict_of(complete: bool, results: Sequence[GateResult]) -> VerdictName:
    """``incomplete`` unless complete; then ``fail`` if any gate failed, else ``pass``."""
    if not complete:
        return "incomplete"
    return "fail" if any(not result["passed"] for result in results) else "pass"


def _gate_p_value(
    gate: GateConfig, level: float, interval_at: IntervalAt
) -> tuple[float | None, float | None]:
    """A member's p-value for Holm and its null: the method's two-sided p-value at each of its
    interval thresholds as the null, 1 where the estimate lies on the failing side of that
    threshold (a difference in the wrong direction never counts as evidence, and so never
    eases another member's test), the largest of them (an equivalence gate passes only when
    both reject); ``(None, None)`` when its subject is unavailable."""
    from pytest_sommelier.core.intervals import entry_at

    found: list[tuple[float, float]] = []
    margin = is_margin_gate(gate)
    for key, limit in interval_limits(gate):
        entry = interval_at(gate, level, limit)
        if margin and entry is not None:  # a pre-0.4 entry without counts: as recorded
            entry = entry_at(dict(entry), level, limit, margin_method(gate)) or entry
        if entry is None or zero_width(entry, gate.metric) is not None:
            return None, None
        if entry.get("p_value") is None or entry.get("estimate") is None:
            return None, None
        found.append((_side_p(key, limit, entry), limit))
    return max(found) if found else (None, None)


def selection_level(confidence_level: float, members: int, candidates: int) -> float:
    """The level a selection gate's interval is read at: Bonferroni (Dunn 1961, "Multiple
    comparisons among means", JASA 56:52-64) over the ``members`` of the suite's family times
    the K ``candidates`` it was selected among, ``1 - (1 - cl) / (m * K)``. The selected
    candidate is the best of K on these examples (the winner's curse); an interval that holds
    for all K at once holds for whichever was picked, and the family's adjustment composes
    with it (``m = 1`` outside a family, ``K = 1`` for any other gate)."""
    return multiplicity.bonferroni_confidence_level(
        confidence_level, max(1, members) * max(1, candidates)
    )


def _candidates(gate: GateConfig) -> int:
    """K for a resolved selection gate and for the deciding copy of a sweep's gate
    (:func:`selected_copies`), 1 for every other gate."""
    return max(1, gate.candidates)


def familywise_plans(
    gates: Sequence[GateConfig],
    statistics: StatisticsConfig | None,
    interval_at: IntervalAt | None,
) -> tuple[dict[str, _Plan], Familywise]:
    """Each interval gate's plan under ``[statistics] familywise`` and the verdict's
    ``familywise`` block (the family, its size, the method and the adjusted levels).

    A selection gate over K candidates is always read at :func:`selection_level`: under
    ``none`` (or a family of one) at ``1 - (1 - cl) / K``, under ``bonferroni`` at
    ``1 - (1 - cl) / (m * K)``; under ``holm`` (Holm 1979, Scand J Statist 6:65-70) its raw
    p-value enters the step-down multiplied by K (``min(1, K p)``, its Bonferroni p-value over
    the candidates, a valid p-value for the selected candidate's claim whichever was picked)
    and its interval is read at ``1 - (1 - cl) / K``."""
    method = statistics.familywise if statistics is not None else "none"
    level = statistics.confidence_level if statistics is not None else 0.95
    family = [gate for gate in gates if is_interval_gate(gate)]
    size = len(family)
    block: Familywise = {
        "method": method, "family": [gate.name for gate in family], "size": size,
        "confidence_level": float(level), "adjusted_confidence_level": {},
        "adjusted_p_value": {},
    }  # fmt: skip
    selecting = any(_candidates(gate) > 1 for gate in family)
    if (method == "none" or size <= 1) and not selecting:
        return {gate.name: _Plan(method, size) for gate in family}, block
    if interval_at is None:
        raise InvariantError(
            "SOM-GATE-FAMILYWISE",
            f"familywise {method!r} needs the run's records to recompute the gates' intervals",
            "evaluate the gates through core.pipeline.evaluate_run",
        )
    if method != "holm" or size <= 1:
        members = size if method == "bonferroni" else 1
        plans: dict[str, _Plan] = {}
        for gate in family:
            k = _candidates(gate)
            adjusted = selection_level(level, members, k)
            recompute = members * k > 1
            entry = interval_at(gate, adjusted, 0.0) if recompute else None
            plans[gate.name] = _Plan(method, size, entry, adjusted, adjusted=recompute,
                                     candidates=k)  # fmt: skip
        if method == "bonferroni" and size > 1:
            block["adjusted_confidence_level"] = {
                gate.name: plans[gate.name].confidence_level or level for gate in family
            }
        return plans, block
    raw = [_gate_p_value(gate, level, interval_at) for gate in family]
    over_k = [None if p is None else min(1.0, _candidates(g) * p)
              for g, (p, _) in zip(family, raw, strict=True)]  # fmt: skip
    holm = multiplicity.holm_adjusted(over_k)
    alpha = 1.0 - level
    plans = {}
    for gate, p, r in zip(family, holm, raw, strict=True):
        k = _candidates(gate)
        read_at = selection_level(level, 1, k)
        entry = interval_at(gate, read_at, 0.0) if k > 1 else None
        plans[gate.name] = _Plan(
            method, size, entry, read_at, adjusted_p_value=p, alpha=alpha, p_value=r[0],
            null=r[1], adjusted=k > 1, candidates=k,
        )  # fmt: skip
    block["adjusted_confidence_level"] = {
        gate.name: plans[gate.name].confidence_level or level for gate in family
    }
    block["adjusted_p_value"] = {gate.name: p for gate, p in zip(family, holm, strict=True)}
    return plans, block


def resolve_selection_gates(
    gates: Sequence[GateConfig],
    selection: Mapping[str, Any] | None,
    stored_arms: Mapping[str, str | None] | None = None,
) -> tuple[GateConfig, ...]:
    """The one resolution of selection gates into the comparison each reads: ``candidate`` the
    selection's selected arm, ``candidates`` its K, ``reference`` the selection's reference or,
    for a gate with ``stored``, ``stored_arms[gate.name]`` (the stored run's arm, None when it
    has none: the gate then fails with the reason its caller records). A gate already resolved,
    any other gate, and every gate without a selection (nothing selected: it fails) are
    returned as they are."""
    resolved: list[GateConfig] = []
    for gate in gates:
        if gate.kind != SELECTION_KIND or gate.candidates > 0 or not selection:
            resolved.append(gate)
            continue
        chosen = selection.get("selected")
        if not isinstance(chosen, str):
            resolved.append(gate)
            continue
        k = int((selection.get("familywise") or {}).get("candidates") or 1)
        reference = (
            str(selection["reference"])
            if gate.stored is None
            else (stored_arms or {}).get(gate.name)
        )
        resolved.append(replace(gate, candidate=chosen, reference=reference, candidates=k))
    return tuple(resolved)


def _recorded_entry(
    gate: GateConfig,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
) -> Mapping[str, Any] | None:
    """The interval entry a gate's subject report holds for its metric (None: unavailable)."""
    subject = _subject(gate)
    try:
        key = _report_key(gate)
        if gate.kind in ("comparison", "stored", SELECTION_KIND) and key in comparison_reports:
            block = _comparison_block(gate, comparison_reports[key], key)
        elif gate.kind == "gap" and subject in arm_reports:
            block = _lookup(arm_reports[subject], ["paired_slices", str(gate.gap)], subject)
        else:
            return None
        entry, _ = _report_entry(block, gate.metric, subject)
    except _Unavailable:
        return None
    return entry if isinstance(entry, Mapping) else None


def _with_recorded(
    interval_at: IntervalAt | None,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
) -> IntervalAt:
    """``interval_at``, falling back to recomputing the recorded entry where it gives none."""
    from pytest_sommelier.core.intervals import entry_at


    def at(gate: GateConfig, level: float, null: float) -> Mapping[str, Any] | None:
        found = interval_at(gate, level, null) if interval_at is not None else None
        if found is not None:
            return found
        entry = _recorded_entry(gate, arm_reports, comparison_reports)
        return None if entry is None else entry_at(dict(entry), level, null)

    return at


def evaluate_gates(
    gates: Sequence[GateConfig],
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    *,
    complete: bool,
    run_id: str,
    errors: Mapping[str, str] | None = None,
    statistics: StatisticsConfig | None = None,
    interval_at: IntervalAt | None = None,
    selection: Mapping[str, Any] | None = None,
    stored_arms: Mapping[str, str | None] | None = None,
) -> Verdict:
    """The ``gate_verdict.json`` dict: every gate evaluated in configured order, the verdict
    and the ``familywise`` block.

    ``errors`` maps an arm or comparison name to why it has no report (e.g. the identity
    gate's refusal); gates on that subject fail with that reason. ``statistics`` gives the
    familywise method (none without it); ``interval_at`` recomputes a gate's interval at an
    adjusted level or null from the run's records; where it cannot (a ``stored`` gate, whose
    comparison was made from another run's records, or no ``interval_at``) the interval is
    recomputed from what its entry records (``core.intervals.entry_at``), and a gate whose
    entry cannot be recomputed fails as not evaluable: every interval gate of the verdict is
    a member of the one family, whatever its subject. Selection gates are resolved here
    (:func:`resolve_selection_gates`: ``selection`` is the run's ``core.selection`` block,
    ``stored_arms`` the stored run's arm of each stored selection gate).
    """
    gates = resolve_stored_gates(resolve_selection_gates(gates, selection, stored_arms),
                                 stored_arms)  # fmt: skip
    gates, copies = selected_copies(gates, selection)
    recompute = _with_recorded(interval_at, arm_reports, comparison_reports)
    plans, family = familywise_plans(gates, statistics, recompute)
    results = [
        evaluate_gate(gate, arm_reports, comparison_reports, errors, plan=plans.get(gate.name))
        for gate in gates
    ]
    verdict: Verdict = {
        "schema_version": VERDICT_SCHEMA,
        "run_id": run_id,
        "verdict": verdict_of(complete, results),
        "complete": bool(complete),
        "gates": results,
        "familywise": family,
    }
    if copies:  # each checkpoint's copy, reported at its own level; the verdict is the chosen's
        verdict["per_candidate"] = [
            evaluate_gate(gate, arm_reports, comparison_reports, errors) for gate in copies
        ]
    return verdict


# --- the text a gate line shows (terminal, Markdown, HTML, JUnit) ---------------------------


def _signed(value: Any) -> str:
    return "n/a" if value is None else f"{value:+.3f}"


def _level_text(level: float) -> str:
    """``95%``, ``98.3%``: a confidence level as shown."""
    return f"{level * 100:.3g}%"


def selection_phrase(selection: Mapping[str, Any], kind: str = SELECTION_KIND) -> str:
    """``selected among 3 candidates: level adjusted to 98.3% (bonferroni over 3)``: what a
    selection gate's line (or the deciding copy of a sweep's gate, ``kind`` its kind) says of
    its selection (every view shows it through :func:`gate_text`)."""
    k = int(selection.get("candidates") or 0)
    level = selection.get("confidence_level")
    if level is None:  # a delta or arm gate: a point number, biased upward by the selection
        point = "a point value" if kind == "arm" else "a point difference"
        return (f"selected among {k} candidates: {point}, no level to adjust (the "
                "best of K is biased upward)")  # fmt: skip
    return (f"selected among {k} candidates: level adjusted to {_level_text(float(level))} "
            f"(bonferroni over {k})")  # fmt: skip


def gate_text(result: Mapping[str, Any]) -> str:
    """What a gate compared, rounded as displayed (the verdict keeps full precision):
    ``adapter full_call_exact_match [he] gap -0.333 [-1.000, +0.000]: lower bound -1.000 <
    -0.15 (95% bonett_price_adjusted_wald)``, with the discordant pairs when fewer than 10,
    and the Holm-adjusted p-value; a zero-width interval says it is no evidence."""
    where = f"{result.get('subject', '')} {result['metric']} [{result['slice']}]".strip()
    thresholds = result.get("threshold") or {}
    observed = result.get("observed")
    interval = result.get("interval")
    if interval is None:
        if observed is None:
            return f"{where}: {result.get('reason', '')}"
        if result.get("selection"):  # a delta (or arm) gate on the selected candidate
            where += f" ({selection_phrase(result['selection'], result['kind'])})"
        label, shown = "value", f"{observed:.3f}"
        if result["metric"] == NOISE_METRIC:  # a count of flips, not a difference
            label, shown = "flips", f"{observed:g}"
        elif result["kind"] != "arm":
            identical = result["metric"] == IDENTICAL_METRIC
            label = "identical fraction" if identical else "delta"
            shown = f"{observed:.3f}" if identical else _signed(observed)
        checks = []
        for key, limit in thresholds.items():
            rule = THRESHOLDS[key]
            sign = rule.ok_sign if rule.holds(observed, limit) else rule.bad_sign
            checks.append(f"{sign} {limit:g} ({key})")
        return f"{where} {label} {shown} " + ", ".join(checks)
    label = "gap" if result["kind"] == "gap" else "delta"
    lower_shown, upper_shown = interval.get("lower"), interval.get("upper")
    flat = interval.get("degenerate") or (
        lower_shown is not None and upper_shown is not None and lower_shown >= upper_shown
    )
    degenerate = " (zero-width: not evaluable)" if flat else ""
    text = (
        f"{where} {label} {_signed(result.get('estimate'))} "
        f"[{_signed(interval.get('lower'))}, {_signed(interval.get('upper'))}]{degenerate}: "
    )
    checks = []
    for key, limit in thresholds.items():
        rule = THRESHOLDS[key]
        if rule.reads == "interval":
            value = interval.get(rule.bound)
            sign = rule.ok_sign if value is not None and rule.holds(value, limit) else rule.bad_sign
            checks.append(f"{rule.bound} bound {_signed(value)} {sign} {limit:g}")
        elif result.get("estimate") is not None:
            estimate = result["estimate"]
            sign = rule.ok_sign if rule.holds(estimate, limit) else rule.bad_sign
            checks.append(f"delta {_signed(estimate)} {sign} {limit:g}")
    text += "; ".join(checks)
    text += f" ({_level_text(interval['confidence_level'])} {interval['method']})"
    discordant = interval.get("discordant") or {}
    pairs = sum(discordant.values()) if discordant else None
    if pairs is not None and pairs < FEW_DISCORDANT:
        text += f"; only {pairs} discordant pairs (fewer than {FEW_DISCORDANT})"
    selection = result.get("selection")
    if selection:
        text += "; " + selection_phrase(selection)
    if "adjusted_p_value" in result:
        strict = any(key in STRICT for key in thresholds)
        alpha = 1.0 - interval["confidence_level"]
        if selection:  # read at 1 - alpha / K: the family's alpha is K times its tail
            alpha *= max(1, int(selection.get("candidates") or 1))
        text += "; " + holm_phrase(result["adjusted_p_value"], alpha, strict)
    if "effect" in interval:
        at = interval.get("power_at_effect")
        shown = "n/a" if at is None else f"{at:.0%}"
        text += (f"; the design's power for this claim at a difference of "
                 f"{interval['effect']:.3g}: {shown} (at the observed discordance)")  # fmt: skip
    return text
