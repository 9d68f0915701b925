"""A run against its stored runs: the comparisons that ``--sommelier-compare`` and the suite's
``stored`` gates ask for, and the verdict with their gates (the session finish and
``sommelier rescore`` both use it).

Invariants kept:

- Each stored run is looked up (``history.resolve_stored``) and compared
  (``history_compare.compare_runs``) once, whatever number of specs name it, and before this
  run is stored; each comparison is written as ``report/compare-<NNNN>.json`` and ``.md``.
- A lookup or comparison that fails is one line, kept as the refusal of every gate that needed
  it: the gate fails with it as its reason, never passes.
- ``last`` with no comparable stored run of the suite is *missing*, not an error: compare-fail
  gates are then not added (the first CI run), while a ``stored`` gate fails (a claim without
  its evidence never passes).
- A selection gate with ``stored`` reads this run's selected candidate against the stored
  run's arm (:func:`stored_selection_arm`: the stored run's own selected candidate when it
  recorded a ``[selection]``, else its arm of the candidate's family), compared once
  (``history_compare.compare_arm_pair``); that arm missing, or nothing selected here, fails
  the gate with the reason.
- The verdict is re-derived from every gate (``core.gates.evaluate_gates``, then
  ``history_gate.with_fail_results``), never edited by hand; under a familywise method the
  compare-fail gates are evaluated with the suite's gates as members of the one family
  (``history_gate.fail_members``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.gates import (
    SELECTION_KIND,
    evaluate_gates,
    family_of,
    resolve_selection_gates,
    selection_subject,
    stored_subject,
)
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import Suite, Verdict
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import (
    LAST,
    LAST_ANY,
    StoredRun,
    resolve_stored,
    run_at,
    stored_runs,
)
from pytest_sommelier.data.store.history_compare import (
    Scored,
    compare_arm_pair,
    compare_runs,
    scored_run,
    write_compare,
)
from pytest_sommelier.data.store.history_gate import (
    FailSpec,
    evaluate_fail_specs,
    fail_members,
    with_fail_results,
    with_member_evidence,
)
from pytest_sommelier.data.store.history_record import NO_BASELINE
from pytest_sommelier.errors import InputError, SommelierError


@dataclass
class AgainstStored:
    """What comparing a run with its stored runs gave, by spec (``last``, ``3``, a path)."""

    suite: str
    store: Path
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)  # spec -> comparison
    refusals: dict[str, str] = field(default_factory=dict)  # spec -> why not (one line)
    missing: list[str] = field(default_factory=list)  # ``last`` with nothing stored yet
    runs: dict[str, StoredRun] = field(default_factory=dict)  # spec -> the stored run found
    sides: dict[Path, Scored] = field(default_factory=dict)  # stored run -> re-derived side
    candidate: tuple[StoredRun, Scored | None] | None = None  # this run (selection gates)
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


def stored_specs(suite: Suite, compare: str | None) -> list[str]:
    """The stored runs a run is compared with: ``--sommelier-compare``'s, then each ``stored``
    gate's, once each in that order."""
    specs = [compare] if compare is not None else []
    specs += [str(gate.stored) for gate in suite.gates
              if gate.kind in ("stored", SELECTION_KIND) and gate.stored is not None]  # fmt: skip
    return list(dict.fromkeys(specs))


def compare_with_stored(
    run_dir: Path,
    store: Path,
    specs: Sequence[str],
    *,
    suite: str,
    flips: int,
    candidate: tuple[StoredRun, Scored] | None = None,
    gated: bool = False,
) -> AgainstStored:
    """Compare the run in ``run_dir`` with the stored run each spec names (see the module
    docstring); ``candidate`` is the run and its scored side when the caller holds them (the
    session finish, from memory), else the run folder is read.

    ``last`` / ``last-any`` with no such run of this suite stored yet is ``missing`` (a first
    run), except when ``gated`` (compare-fail gates given) and the store holds a comparable
    run of another suite name over the same split: the suite was renamed, and its regression
    gates must not vanish with the name, so that is a refusal (the gates fail)."""
    run_dir, store = Path(run_dir), Path(store)
    against = AgainstStored(suite=suite, store=store, flips=flips)
    if not specs:
        return against
    run, scored = candidate if candidate is not None else (run_at(run_dir), None)
    against.candidate = (run, scored)
    done: dict[Path, dict[str, Any]] = {}
    for spec in specs:
        try:
            if spec in (LAST, LAST_ANY):
                found = [r for r in stored_runs(store, suite=suite) if r.comparable]
                if not [r for r in found if r.passed or spec == LAST_ANY]:
                    renamed = _renamed_from(store, suite, run) if gated else None
                    if renamed is None:
                        against.missing.append(spec)
                        continue
                    raise InputError(
                        "SOM-HISTORY-RENAMED",
                        f"{store}: no stored run of suite {suite!r}, but run {renamed.label} of "
                        f"suite {renamed.suite!r} has the same split: the suite was renamed?",
                        f"compare with it by number (--sommelier-compare={renamed.label}) or "
                        "label; the compare-fail gates are not dropped for a new name",
                    )
            reference = resolve_stored(store, spec, suite=suite)
            key = reference.path.resolve()
            if key not in done:
                against.sides[key] = scored_run(reference)
                done[key] = compare_runs(
                    run, reference, flips=flips, scored=scored,
                    reference_scored=against.sides[key],
                )  # fmt: skip
            against.reports[spec] = done[key]
            against.runs[spec] = reference
        except SommelierError as error:
            against.refusals[spec] = str(error)
    return against


def _renamed_from(store: Path, suite: str, run: StoredRun) -> StoredRun | None:
    """The newest comparable stored run of another suite name over this run's split (its
    ``identity.test_split_sha256``), or None."""
    split = (run.entry.get("identity") or {}).get("test_split_sha256")
    if not split:
        return None
    others = [
        r
        for r in stored_runs(store)
        if r.comparable
        and r.suite != suite
        and (r.entry.get("identity") or {}).get("test_split_sha256") == split
    ]
    return others[-1] if others else None


def write_compared(run_dir: Path, against: AgainstStored, markdown: Callable[[Any], str]) -> None:
    """Write each comparison once into ``run_dir/report`` (``compare-NNNN.json`` and its
    Markdown, ``markdown(report)``: the view renders it, the store writes it)."""
    for report in against.compared():
        write_compare(runlayout.report_dir(run_dir), report, markdown(report))


def _stored_gate_inputs(
    suite: Suite, against: AgainstStored
) -> tuple[dict[str, Mapping[str, Any]], dict[str, str]]:
    """Per ``stored`` gate subject: the comparison block of its arm, or why there is none."""
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    for gate in suite.gates:
        if gate.kind != "stored":
            continue
        spec, arm = str(gate.stored), str(gate.arm)
        subject = stored_subject(arm, spec)
        report = against.reports.get(spec)
        if report is None:
            errors[subject] = against.refusals.get(spec) or (
                f"{NO_BASELINE} of suite {against.suite!r} in {against.store}"
            )
            continue
        block = report["arms"].get(arm)
        if block is None:
            errors[subject] = f"arm {arm!r} is not in this run"
        elif block.get("status") != "compared":
            errors[subject] = str(block.get("reason", "refused"))
        else:
            blocks[subject] = block
    return blocks, errors


def stored_selection_arm(reference: StoredRun, selected: str) -> tuple[str | None, str]:
    """The stored run's arm a stored selection gate compares this run's ``selected`` candidate
    with, and how it was chosen: the stored run's own selected candidate when it recorded a
    ``[selection]`` (its ``report/selection.json``, read through the store's one validating
    reader), else its arm named like the candidate's family (``adapter`` for ``adapter@200``);
    ``(None, why)`` when the stored run has no such arm."""
    path = runlayout.selection(reference.path)
    if path.is_file():
        recorded = artifacts.read_json(path, expect="sommelier.selection.v1")
        return str(recorded["selected"]), f"{reference.describe()}'s selected candidate"
    family = family_of(selected)
    if runlayout.arm_report(runlayout.arm_dir(reference.path, family)).is_file():
        return family, f"{reference.describe()}'s arm {family!r}"
    return None, (
        f"{reference.describe()} recorded no [selection] and has no arm {family!r} (the "
        f"family of {selected!r}) to compare the selected candidate with"
    )


def _selection_gate_inputs(
    suite: Suite, outcome: RunOutcome, against: AgainstStored
) -> tuple[dict[str, str | None], dict[str, Mapping[str, Any]], dict[str, str]]:
    """Per stored selection gate: the stored arm it reads (``stored_arms``; None: none), and
    under the gate's subject its comparison block or why there is none (one line, the gate's
    reason). Nothing selected in this run: the gate is left to fail as unresolved."""
    stored_arms: dict[str, str | None] = {}
    blocks: dict[str, Mapping[str, Any]] = {}
    errors: dict[str, str] = {}
    chosen = (outcome.selection or {}).get("selected")
    for gate in suite.gates:
        if gate.kind != SELECTION_KIND or gate.stored is None or not isinstance(chosen, str):
            continue
        arm, found = _stored_selection_block(against, str(gate.stored), chosen)
        stored_arms[gate.name] = arm
        (resolved,) = resolve_selection_gates((gate,), outcome.selection, stored_arms)
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
    try:
        arm, how = stored_selection_arm(reference, chosen)
        if arm is None:
            return None, how
        run, scored = against.candidate
        block = compare_arm_pair(
            run, reference, (chosen, arm), flips=against.flips, scored=scored,
            reference_scored=against.sides.get(reference.path.resolve()),
        )  # fmt: skip
    except SommelierError as error:
        return None, str(error)
    if block.get("status") != "compared":
        return arm, str(block.get("reason", "refused"))
    return arm, block


def verdict_against_stored(
    suite: Suite,
    outcome: RunOutcome,
    against: AgainstStored,
    *,
    compare: str | None,
    fail_specs: Sequence[FailSpec],
) -> Verdict | None:
    """The run's verdict with its ``stored`` gates evaluated on their comparisons and one
    compare-fail gate per spec and arm against ``compare``'s stored run appended (none when
    ``compare`` is ``last`` and nothing is stored yet); None when gates are off."""
    verdict = outcome.verdict
    if verdict is None:
        return None
    interval_at = outcome.interval_at
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
        blocks, errors = _stored_gate_inputs(suite, against)
        stored_arms, chosen, refused_arms = _selection_gate_inputs(suite, outcome, against)
        blocks, errors = {**blocks, **chosen}, {**errors, **refused_arms}
        gates = tuple(suite.gates)
        if members is not None:  # the compare-fail gates join the family
            gates += members.gates
            blocks, errors = {**blocks, **members.blocks}, {**errors, **members.errors}
        verdict = evaluate_gates(
            gates,
            outcome.arm_reports,
            {**outcome.comparison_reports, **blocks},  # type: ignore[dict-item]
            complete=outcome.complete,
            run_id=outcome.run_id,
            errors={**outcome.comparison_errors, **errors},
            statistics=suite.statistics,
            interval_at=interval_at,
            selection=outcome.selection,
            stored_arms=stored_arms,
        )
        if members is not None:
            gate_results = with_member_evidence(verdict["gates"], members)
            return {**verdict, "gates": gate_results}  # type: ignore[return-value]
    if not failing:
        return verdict
    results = evaluate_fail_specs(fail_specs, report, refused=refused)
    return with_fail_results(verdict, results)  # type: ignore[return-value]


__all__ = [
    "AgainstStored",
    "compare_with_stored",
    "stored_selection_arm",
    "stored_specs",
    "verdict_against_stored",
    "write_compared",
]
