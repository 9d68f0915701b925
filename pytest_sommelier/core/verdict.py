"""A run's verdict over every gate, judged once: the suite's gates, its ``stored`` gates, its
selection gates (against the reference or a stored run's arm), the compare-fail gates, and the
familywise family over all of them (pure: values in, the ``gate_verdict.json`` record out).

``core.pipeline.evaluate_run`` calls :func:`judge` once per run, for the pytest session, the
training callback and ``sommelier rescore`` alike; what the gates need of the run store was
looked up before (``data.store.history_verdict.look_up_stored``) and compared here from values
(:func:`against_stored`, over ``core.stored_comparison``), so no file is read while judging.

Invariants kept:

- Each stored run is compared once, whatever number of specs name it; each comparison is
  written as ``report/compare-<NNNN>.json`` and ``.md`` by the store.
- A lookup or comparison that fails is one line, kept as the refusal of every gate that needed
  it: the gate fails with it as its reason, never passes.
- ``last`` with no comparable stored run of the suite is *missing*, not an error: compare-fail
  gates are then not added (the first CI run), while a ``stored`` gate fails (a claim without
  its evidence never passes).
- A ``stored`` gate reads the stored run's arm :func:`stored_gate_arm` names: the arm of the
  same name, or, for a sweep's checkpoint (``adapter@30``) or an arm the stored run lacks, the
  stored run's recorded selected candidate of the arm's family, else its family arm
  (``adapter``); a pair of two names is compared once (``stored_comparison.compare_arm_pair``).
- A selection gate with ``stored`` reads this run's selected candidate against the stored
  run's arm (:func:`stored_selection_arm`: the stored run's own selected candidate when it
  recorded a ``[selection]``, else its arm of the candidate's family), compared once
  (``stored_comparison.compare_arm_pair``); that arm missing, or nothing selected here, fails
  the gate with the reason.
- The verdict is derived from every gate in one ``core.gates.evaluate_gates`` call (then the
  compare-fail results appended under ``none``: ``core.compare_fail.with_fail_results``), never
  edited by hand; under a familywise method the compare-fail gates are members of the one
  family (``core.compare_fail.fail_members``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from pytest_sommelier.core.compare_fail import (
    FailSpec,
    evaluate_fail_specs,
    fail_members,
    with_fail_results,
    with_member_evidence,
)
from pytest_sommelier.core.gates import (
    SELECTION_KIND,
    IntervalAt,
    evaluate_gates,
    family_of,
    resolve_selection_gates,
    selection_subject,
    stored_subject,
)
from pytest_sommelier.core.stored_comparison import (
    RunRef,
    Scored,
    compare_arm_pair,
    compare_runs,
)
from pytest_sommelier.core.types import (
    ComparisonReport,
    EvaluationReport,
    Suite,
    Verdict,
)
from pytest_sommelier.errors import SommelierError

NO_BASELINE = "no comparable stored run"
"""The reason of a gate whose stored run is missing (``history_record.baseline_worthy`` reads
it: such a failure does not keep a run from becoming ``last``)."""


class Recorded(NamedTuple):
    """What a stored run recorded that a stored selection gate reads: its selected candidate
    (``report/selection.json``; None: it recorded no ``[selection]``), why that file could not
    be read (one line; None: it could, or there is none), and the arms it holds a report of."""

    selected: str | None
    problem: str | None
    reported: frozenset[str]


@dataclass
class AgainstStored:
    """What comparing a run with its stored runs gave, by spec (``last``, ``3``, a path)."""

    suite: str
    store: Path
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # spec -> comparison
    refusals: dict[str, str] = field(default_factory=dict)  # spec -> why not (one line)
    missing: list[str] = field(default_factory=list)  # ``last`` with nothing stored yet
    runs: dict[str, RunRef] = field(default_factory=dict)  # spec -> the stored run found
    sides: dict[Path, Scored] = field(default_factory=dict)  # stored run -> re-derived side
    recorded: dict[Path, Recorded] = field(default_factory=dict)  # stored run -> its selection
    candidate: tuple[RunRef, Scored] | None = None  # this run (selection gates)
    flips: int = 10  # the flipped examples a comparison lists

    def compared(self) -> list[dict[str, Any]]:
        """Each comparison once (two specs naming one stored run share it), in spec order."""
        return list({report["name"]: report for report in self.reports.values()}.values())

    def missing_lines(self) -> list[str]:
        """One line per ``last`` spec with nothing stored yet."""
        return [
            f"no stored run of suite {self.suite!r} to compare with ({spec}: {self.store})"
            for spec in self.missing
        ]

    def errors(self) -> list[str]:
        """One line per spec whose stored run could not be found or compared."""
        return [
            f"not compared with stored run {spec!r}: {why}" for spec, why in self.refusals.items()
        ]


class Found(NamedTuple):
    """A looked-up spec's stored run: the run, its re-derived side (or why it could not be
    re-derived, one line) and what it recorded of its selection."""

    run: RunRef
    side: Scored | str
    recorded: Recorded


def against_stored(
    candidate: RunRef,
    scored: Scored,
    *,
    suite: str,
    store: Path,
    flips: int,
    looked_up: Sequence[tuple[str, Found | str | None]],
    lookup: Mapping[str, str],
) -> AgainstStored:
    """This run (``candidate``, its side ``scored`` from memory) against each stored run the
    store looked up: ``looked_up`` is, per looked-up spec in order, its stored run
    (:class:`Found`), why it could not be found (one line) or None (``last`` with nothing
    stored yet); each stored run is compared once. The result is keyed by the specs the suite
    and the options wrote (``lookup``: written spec -> looked-up spec)."""
    done = AgainstStored(suite=suite, store=Path(store), flips=flips)
    done.candidate = (candidate, scored)
    compared: dict[Path, dict[str, Any]] = {}
    for spec, state in looked_up:
        if state is None:
            done.missing.append(spec)
            continue
        if isinstance(state, str):
            done.refusals[spec] = state
            continue
        key = state.run.path.resolve()
        try:
            if isinstance(state.side, str):
                done.refusals[spec] = state.side
                continue
            done.sides[key], done.recorded[key] = state.side, state.recorded
            if key not in compared:
                compared[key] = compare_runs(
                    candidate, state.run, scored=scored, reference_scored=state.side,
                    flips=flips,
                )  # fmt: skip
            done.reports[spec] = compared[key]
            done.runs[spec] = state.run
        except SommelierError as error:
            done.refusals[spec] = str(error)
    if all(spec == target for spec, target in lookup.items()):
        return done
    return AgainstStored(
        suite=done.suite,
        store=done.store,
        reports={s: done.reports[t] for s, t in lookup.items() if t in done.reports},
        refusals={s: done.refusals[t] for s, t in lookup.items() if t in done.refusals},
        missing=[s for s, t in lookup.items() if t in done.missing],
        runs={s: done.runs[t] for s, t in lookup.items() if t in done.runs},
        sides=done.sides,
        recorded=done.recorded,
        candidate=done.candidate,
        flips=done.flips,
    )


def stored_specs(suite: Suite, compare: str | None) -> list[str]:
    """The stored runs a run is compared with: ``--sommelier-compare``'s, then each ``stored``
    gate's, once each in that order."""
    specs = [compare] if compare is not None else []
    specs += [str(gate.stored) for gate in suite.gates
              if gate.kind in ("stored", SELECTION_KIND) and gate.stored is not None]  # fmt: skip
    return list(dict.fromkeys(specs))


def stored_gate_arm(
    reference: RunRef, recorded: Recorded, stored: Collection[str], arm: str
) -> tuple[str | None, str]:
    """The stored run's arm a ``stored`` gate on this run's ``arm`` compares with, and how it
    was chosen (``stored``: the arms the stored run holds): the arm of the same name when
    ``arm`` is its own family (``adapter``, ``base``) and the stored run has it; else the
    stored run's recorded selected candidate when it is of ``arm``'s family (``adapter@20``
    for ``adapter`` or ``adapter@30``: the checkpoint it shipped); else its arm of the same
    name (``adapter@30`` of a stored sweep without a ``[selection]``); else its arm named like
    the family (``adapter`` for a sweep's ``adapter@30``: the shipped adapter). ``(None,
    why)`` when there is none, or the stored ``selection.json`` that would decide could not be
    read."""
    family = family_of(arm)
    if arm == family and arm in stored:
        return arm, f"{reference.describe()}'s arm {arm!r}"
    if recorded.problem is not None:
        return None, recorded.problem
    if recorded.selected is not None and family_of(recorded.selected) == family:
        return recorded.selected, f"{reference.describe()}'s selected candidate"
    for name in dict.fromkeys((arm, family)):
        if name in stored:
            return name, f"{reference.describe()}'s arm {name!r}"
    also = "" if arm == family else f", its family {family!r},"
    return None, (
        f"{reference.describe()} has no arm {arm!r}{also} nor a recorded [selection] of that "
        "family to compare it with (it was not stored in it)"
    )


def _stored_gate_inputs(
    suite: Suite, against: AgainstStored
) -> tuple[dict[str, str | None], dict[str, Mapping[str, Any]], dict[str, str]]:
    """Per ``stored`` gate: the stored run's arm it reads (:func:`stored_gate_arm`, by gate
    name), and under its subject the comparison block of the pair, or why there is none. The
    pair of one name is the stored comparison's own block (``compare-NNNN.json``); any other
    pair (a sweep's checkpoint against the shipped arm) is compared once here."""
    stored_arms: dict[str, str | None] = {}
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    pairs: dict[tuple[str, str, str], Mapping[str, Any] | str] = {}
    for gate in suite.gates:
        if gate.kind != "stored":
            continue
        spec, arm = str(gate.stored), str(gate.arm)
        report = against.reports.get(spec)
        if report is None:
            errors[stored_subject(arm, spec)] = against.refusals.get(spec) or (
                f"{NO_BASELINE} of suite {against.suite!r} in {against.store}"
            )
            continue
        found = _stored_pair(against, spec, arm, report, pairs)
        stored_arms[gate.name], block = found
        subject = stored_subject(arm, spec, found[0])
        if isinstance(block, str):
            errors[subject] = block
        else:
            blocks[subject] = block
    return stored_arms, blocks, errors


def _stored_pair(
    against: AgainstStored,
    spec: str,
    arm: str,
    report: Mapping[str, Any],
    pairs: dict[tuple[str, str, str], Mapping[str, Any] | str],
) -> tuple[str | None, Mapping[str, Any] | str]:
    """``(stored arm, its comparison block or why not)`` for one stored gate's ``arm``."""
    block = report["arms"].get(arm)
    reference = against.runs.get(spec)
    if block is None:
        return None, f"arm {arm!r} is not in this run"
    if reference is None or against.candidate is None:  # pragma: no cover - set together
        return None, str(block.get("reason", "refused"))
    key = reference.path.resolve()
    side = against.sides[key]
    stored_arm, how = stored_gate_arm(
        reference, against.recorded[key], {*side.reports, *side.problems}, arm
    )
    if stored_arm is None:
        return None, how
    if stored_arm != arm:
        if (spec, arm, stored_arm) not in pairs:
            run, scored = against.candidate
            try:
                pairs[spec, arm, stored_arm] = compare_arm_pair(
                    run, reference, (arm, stored_arm), flips=against.flips, scored=scored,
                    reference_scored=side,
                )  # fmt: skip
            except SommelierError as error:
                pairs[spec, arm, stored_arm] = str(error)
        found = pairs[spec, arm, stored_arm]
        block = {"status": "refused", "reason": found} if isinstance(found, str) else found
    if block.get("status") != "compared":
        return stored_arm, str(block.get("reason", "refused"))
    return stored_arm, block


def stored_selection_arm(
    reference: RunRef, recorded: Recorded, selected: str
) -> tuple[str | None, str]:
    """The stored run's arm a stored selection gate compares this run's ``selected`` candidate
    with, and how it was chosen: the stored run's own selected candidate when it recorded a
    ``[selection]`` (``recorded.selected``), else its arm named like the candidate's family
    (``adapter`` for ``adapter@200``); ``(None, why)`` when the stored run has no such arm or
    its ``selection.json`` could not be read."""
    if recorded.problem is not None:
        return None, recorded.problem
    if recorded.selected is not None:
        return recorded.selected, f"{reference.describe()}'s selected candidate"
    family = family_of(selected)
    if family in recorded.reported:
        return family, f"{reference.describe()}'s arm {family!r}"
    return None, (
        f"{reference.describe()} recorded no [selection] and has no arm {family!r} (the "
        f"family of {selected!r}) to compare the selected candidate with"
    )


def _selection_gate_inputs(
    suite: Suite, selection: Mapping[str, Any] | None, against: AgainstStored
) -> tuple[dict[str, str | None], dict[str, Mapping[str, Any]], dict[str, str]]:
    """Per stored selection gate: the stored arm it reads (``stored_arms``; None: none), and
    under the gate's subject its comparison block or why there is none (one line, the gate's
    reason). Nothing selected in this run: the gate is left to fail as unresolved."""
    stored_arms: dict[str, str | None] = {}
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    chosen = (selection or {}).get("selected")
    for gate in suite.gates:
        if gate.kind != SELECTION_KIND or gate.stored is None or not isinstance(chosen, str):
            continue
        arm, found = _stored_selection_block(against, str(gate.stored), chosen)
        stored_arms[gate.name] = arm
        (resolved,) = resolve_selection_gates((gate,), selection, stored_arms)
        if isinstance(found, str):
            errors[selection_subject(resolved)] = found
        else:
            blocks[selection_subject(resolved)] = found
    return stored_arms, blocks, errors


def _stored_selection_block(
    against: AgainstStored, spec: str, chosen: str
) -> tuple[str | None, Mapping[str, Any] | str]:
    """``(stored arm, its comparison block)`` for this run's ``chosen`` candidate against the
    stored run ``spec`` names, or ``(arm or None, why not)``."""
    reference = against.runs.get(spec)
    if reference is None or against.candidate is None:
        missing = f"{NO_BASELINE} of suite {against.suite!r} in {against.store}"
        return None, against.refusals.get(spec) or missing
    key = reference.path.resolve()
    try:
        arm, how = stored_selection_arm(reference, against.recorded[key], chosen)
        if arm is None:
            return None, how
        run, scored = against.candidate
        block = compare_arm_pair(
            run, reference, (chosen, arm), flips=against.flips, scored=scored,
            reference_scored=against.sides[key],
        )  # fmt: skip
    except SommelierError as error:
        return None, str(error)
    if block.get("status") != "compared":
        return arm, str(block.get("reason", "refused"))
    return arm, block


def judge(
    suite: Suite,
    *,
    arm_reports: Mapping[str, EvaluationReport],
    comparison_reports: Mapping[str, ComparisonReport],
    comparison_errors: Mapping[str, str],
    complete: bool,
    run_id: str,
    interval_at: IntervalAt | None,
    selection: Mapping[str, Any] | None,
    against: AgainstStored | None = None,
    compare: str | None = None,
    fail_specs: Sequence[FailSpec] = (),
) -> Verdict:
    """The run's verdict: every gate of ``suite`` (its ``stored`` and stored selection gates
    on ``against``'s comparisons), and one compare-fail gate per spec and arm against
    ``compare``'s stored run (none when ``compare`` is ``last`` and nothing is stored yet),
    judged in one ``evaluate_gates`` call with the familywise family over all of them."""
    gates = tuple(suite.gates)
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    stored_arms: dict[str, str | None] | None = None
    failing = False
    report: Mapping[str, Any] | None = None
    refused: str | None = None
    members = None
    if against is not None:
        failing = compare is not None and bool(fail_specs) and compare not in against.missing
        report = against.reports.get(compare) if compare is not None else None
        refused = against.refusals.get(compare) if compare is not None else None
        members = (
            fail_members(fail_specs, report, refused=refused)
            if failing and suite.statistics.familywise != "none"
            else None
        )
        stored_gated = any(
            gate.kind == "stored" or (gate.kind == SELECTION_KIND and gate.stored is not None)
            for gate in suite.gates
        )
        if stored_gated or members is not None:
            stored_arms, blocks, errors = _stored_gate_inputs(suite, against)
            selected_arms, chosen, refused_arms = _selection_gate_inputs(
                suite, selection, against
            )
            stored_arms = {**stored_arms, **selected_arms}
            blocks, errors = {**blocks, **chosen}, {**errors, **refused_arms}
            if members is not None:  # the compare-fail gates join the family
                gates += members.gates
                blocks, errors = {**blocks, **members.blocks}, {**errors, **members.errors}
    verdict = evaluate_gates(
        gates,
        arm_reports,
        cast(Mapping[str, ComparisonReport], {**comparison_reports, **blocks}),
        complete=complete,
        run_id=run_id,
        errors={**comparison_errors, **errors},
        statistics=suite.statistics,
        interval_at=interval_at,
        selection=selection,
        stored_arms=stored_arms,
    )
    if members is not None:
        gate_results = with_member_evidence(verdict["gates"], members)
        return cast(Verdict, {**verdict, "gates": gate_results})
    if not failing:
        return verdict
    results = evaluate_fail_specs(fail_specs, report, refused=refused)
    return cast(Verdict, with_fail_results(verdict, results))


__all__ = [
    "NO_BASELINE",
    "AgainstStored",
    "Found",
    "Recorded",
    "against_stored",
    "judge",
    "stored_gate_arm",
    "stored_selection_arm",
    "stored_specs",
]
