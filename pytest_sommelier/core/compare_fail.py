"""The compare-fail gates (``--sommelier-compare-fail=METRIC[:SLICE]:MARGIN``, ``sommelier
compare ... --fail``) judged on a comparison with a stored run (pure: values in, gate results
out; the spec's text is parsed by ``data.store.history_gate.parse_fail_spec``).

A spec fails when this run's value minus the stored run's, paired by example, is below
``-MARGIN``: the rule pytest-benchmark's ``--benchmark-compare-fail`` applies to timings, so
identical outputs (difference 0) always pass.

Invariants kept: each spec gives one gate result per arm of the comparison, shaped like
``core.gates.evaluate_gate``'s and evaluated by it (a ``delta_at_least = -MARGIN`` threshold on
the comparison block), so a refused or missing pair fails with its reason like any gate; the
reason also carries the paired interval and the flipped examples.

Under a familywise method (``[statistics] familywise`` other than ``none``) the specs are
members of the suite's one family instead (:func:`fail_members`): each is the non-inferiority
gate ``ci_lower_at_least = -MARGIN`` on the same comparison, judged with the suite's gates at
the family's level (``core.verdict``), since a point difference makes no claim at any level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_sommelier.core.gates import evaluate_gate, verdict_of
from pytest_sommelier.core.selection import OVERALL
from pytest_sommelier.core.text import fmt, fmt_interval, selected_interval
from pytest_sommelier.core.types import GateConfig


@dataclass(frozen=True)
class FailSpec:
    """One parsed ``METRIC[:SLICE]:MARGIN`` (``slice`` is ``overall`` when not given)."""

    metric: str
    slice: str
    margin: float
    text: str


def _gate(spec: FailSpec, arm: str, reference_arm: str) -> GateConfig:
    """The ``core.gates`` form of a spec on one arm: ``delta_at_least = -MARGIN``."""
    return GateConfig(
        name=f"compare-fail:{arm}:{spec.text}",
        kind="comparison",
        metric=spec.metric,
        slice=spec.slice,
        arm=None,
        candidate=arm,
        reference=reference_arm,
        gap=None,
        min=None,
        max=None,
        ci_lower_above=None,
        ci_lower_at_least=None,
        delta_at_least=-spec.margin if spec.margin else 0.0,
    )


def _evidence(block: Mapping[str, Any], spec: FailSpec, label: str) -> str:
    """``this run minus stored run 0003: -0.057 [-0.114, +0.000]; fixed 0, broken 2 (en-1,
    en-2)``: the paired difference, its interval and the flips of the spec's slice."""
    part = block if spec.slice == OVERALL else (block.get("slices") or {}).get(spec.slice)
    if not isinstance(part, Mapping):
        return ""
    interval = selected_interval(part, spec.metric)
    delta = (part.get("deltas") or {}).get(spec.metric)
    text = f"this run minus {label} [{spec.slice}]: {fmt(delta, True)} {fmt_interval(interval)}"
    flips = part.get("flips")
    if flips:
        for kind in ("fixed", "broken"):
            ids = ", ".join(item["example_id"] for item in flips[kind])
            more = flips[f"{kind}_count"] - len(flips[kind])
            ids += f", +{more} more" if more > 0 else ""
            text += f"; {kind} {flips[f'{kind}_count']}" + (f" ({ids})" if ids else "")
    return text


def evaluate_fail_specs(
    specs: Sequence[FailSpec], report: Mapping[str, Any] | None, *, refused: str | None = None
) -> list[dict[str, Any]]:
    """The gate results of ``specs`` against a comparison with a stored run
    (``history_compare.compare_runs``): one per spec and arm, in spec then arm order.

    With ``refused`` (the whole comparison was refused, or there is no report) each spec gives
    one failing result whose reason is that line.
    """
    if report is None or refused is not None:
        reason = refused or "no comparison with a stored run"
        return [
            {
                "name": f"compare-fail:{spec.text}",
                "kind": "comparison",
                "metric": spec.metric,
                "slice": spec.slice,
                "threshold": {"delta_at_least": -spec.margin if spec.margin else 0.0},
                "subject": "stored run",
                "passed": False,
                "observed": None,
                "reason": reason,
            }
            for spec in specs
        ]
    label = report["reference"]["name"]
    stored = report["reference"]["label"]
    results = []
    for spec in specs:
        for arm, block in report["arms"].items():
            reference_arm = block.get("reference_arm") or f"{arm}@{stored}"
            gate = _gate(spec, arm, reference_arm)
            subject = f"{arm}-vs-{reference_arm}"
            compared = block.get("status") == "compared"
            result = evaluate_gate(
                gate,
                {},
                {subject: block} if compared else {},
                {} if compared else {subject: block.get("reason", "refused")},
            )
            evidence = _evidence(block, spec, label) if compared else ""
            if evidence:
                result["reason"] = f"{result['reason']}; {evidence}"
                result["evidence"] = evidence
            results.append({**result, "stored": stored})
    return results


@dataclass(frozen=True)
class FailMembers:
    """Compare-fail specs as members of the suite's familywise family: each spec and arm a
    non-inferiority gate (``ci_lower_at_least = -MARGIN`` on this run minus the stored run),
    the comparison blocks they read and the refusals of those that have none."""

    gates: tuple[GateConfig, ...]
    blocks: dict[str, Mapping[str, Any]]
    errors: dict[str, str]
    evidence: dict[str, str]
    stored: dict[str, str]


REFUSED_SUBJECT = "this run-vs-stored run"


def fail_members(
    specs: Sequence[FailSpec], report: Mapping[str, Any] | None, *, refused: str | None = None
) -> FailMembers:
    """The compare-fail gates of ``specs`` as familywise members (one per spec and arm, in spec
    then arm order; one per spec, failing with the refusal, when there is no comparison).

    A member claims what a passing compare-fail gate says, that this run lost no more than
    ``MARGIN``, at the family's level: its lower bound at the member's level must be at least
    ``-MARGIN`` (the point difference alone makes no claim at a level)."""
    gates: list[GateConfig] = []
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    evidence: dict[str, str] = {}
    stored: dict[str, str] = {}
    if report is None or refused is not None:
        for spec in specs:
            gates.append(_member(f"compare-fail:{spec.text}", spec, "this run", "stored run"))
        errors[REFUSED_SUBJECT] = refused or "no comparison with a stored run"
        return FailMembers(tuple(gates), blocks, errors, evidence, stored)
    label, label_stored = report["reference"]["name"], report["reference"]["label"]
    for spec in specs:
        for arm, block in report["arms"].items():
            reference_arm = block.get("reference_arm") or f"{arm}@{label_stored}"
            member = _member(f"compare-fail:{arm}:{spec.text}", spec, arm, reference_arm)
            subject = f"{arm}-vs-{reference_arm}"
            gates.append(member)
            stored[member.name] = label_stored
            if block.get("status") == "compared":
                blocks[subject] = block
                evidence[member.name] = _evidence(block, spec, label)
            else:
                errors[subject] = str(block.get("reason", "refused"))
    return FailMembers(tuple(gates), blocks, errors, evidence, stored)


def _member(name: str, spec: FailSpec, arm: str, reference_arm: str) -> GateConfig:
    """A spec on one arm as a family member: ``ci_lower_at_least = -MARGIN``."""
    return GateConfig(
        name=name, kind="comparison", metric=spec.metric, slice=spec.slice, arm=None,
        candidate=arm, reference=reference_arm, gap=None, min=None, max=None,
        ci_lower_above=None, ci_lower_at_least=-spec.margin if spec.margin else 0.0,
        delta_at_least=None,
    )  # fmt: skip


def with_member_evidence(
    results: Sequence[Mapping[str, Any]], members: FailMembers
) -> list[dict[str, Any]]:
    """The verdict's gate results with each compare-fail member's evidence (the paired
    difference and the flips) and its stored run added, as ``evaluate_fail_specs`` adds them."""
    out = []
    for result in results:
        name = str(result["name"])
        if name not in {gate.name for gate in members.gates}:
            out.append(dict(result))
            continue
        extra: dict[str, Any] = {}
        if members.evidence.get(name):
            extra["reason"] = f"{result['reason']}; {members.evidence[name]}"
            extra["evidence"] = members.evidence[name]
        if name in members.stored:
            extra["stored"] = members.stored[name]
        out.append({**result, **extra})
    return out


def with_fail_results(
    verdict: Mapping[str, Any] | None, results: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The verdict with the compare-fail results appended to its gates and the verdict word
    re-derived (``core.gates.verdict_of``); None stays None (gates off)."""
    if verdict is None:
        return None
    gates = [*verdict["gates"], *results]
    return {**verdict, "gates": gates, "verdict": verdict_of(bool(verdict["complete"]), gates)}


__all__ = [
    "REFUSED_SUBJECT",
    "FailMembers",
    "FailSpec",
    "evaluate_fail_specs",
    "fail_members",
    "with_fail_results",
    "with_member_evidence",
]
