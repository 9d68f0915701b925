"""What a run's gates need of the run store, looked up before the run is evaluated: the stored
runs ``--sommelier-compare`` and the suite's ``stored`` gates name, what was stored of each
(its resolved suite, split, arms, scorers and recorded ``[selection]``), handed to
``core.pipeline.evaluate_run`` as a typed value (``core.pipeline.StoredEvidence``), where the
comparisons are made and every gate is judged once (``core.verdict``); and writing the
comparisons it made (``report/compare-NNNN.json`` and ``.md``). The session finish, the training
callback and ``sommelier rescore`` all look up through :func:`look_up_stored`.

Invariants kept:

- Each stored run is looked up (``history.resolve_stored``) and read once, whatever number of
  specs name it, and before this run is stored (so a run is never compared with itself).
- A lookup or a read that fails is one line, kept as the refusal of the spec: every gate that
  needed it fails with it as its reason, never passes.
- ``last`` with no comparable stored run of the suite is *missing*, not an error (the first
  CI run), except when ``gated`` (compare-fail gates given) and the store holds a comparable
  run of another suite name over the same split: the suite was renamed, and its regression
  gates must not vanish with the name, so that is a refusal (``SOM-HISTORY-RENAMED``).
- ``label:NAME`` before any stored run of the suite carries the label is *missing* too (the
  baseline run that will be stored under it), except when ``gated``.
- Nothing here computes an interval, a test or a gate (``tests/test_layering.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import StoredEvidence, StoredInputs
from pytest_sommelier.core.stored_comparison import RunRef
from pytest_sommelier.core.verdict import AgainstStored, Recorded
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import StoredRun, resolve_stored, stored_runs
from pytest_sommelier.data.store.history_compare import write_compare
from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm, stored_scorers
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.numbers import BASELINE_WORDS, LABEL_PREFIX, LAST_ANY


def recorded_selection(run: RunRef) -> Recorded:
    """What a stored run recorded that a stored selection gate reads: its ``report/
    selection.json``'s selected candidate (read through the store's one validating reader;
    None without the file) and the arms it holds a report of. An edited ``selection.json`` is
    an ``InputError`` (``SOM-STORED-FIELD``), and so is one whose ``selected`` field does not
    name one of its own ``candidates`` (``base``, the reference: a
    gate would otherwise compare with it under the candidate family's name)."""
    path = runlayout.selection(run.path)
    eval_dir = runlayout.eval_dir(run.path)
    reported = frozenset(
        folder.name
        for folder in (sorted(eval_dir.iterdir()) if eval_dir.is_dir() else ())
        if runlayout.arm_report(folder).is_file()
    )
    selected = None
    if path.is_file():
        document = artifacts.read_json(path, expect="sommelier.selection.v1")
        selected = str(document["selected"])
        problem = _selected_problem(document, selected)
        if problem is not None:
            raise InputError(
                "SOM-STORED-FIELD",
                f"{path}: field 'selected' names {_shown(selected)}, {problem}",
                "the file was edited or written by another tool; restore it, or store the run "
                "again (docs/artifacts.md lists every field)",
            )
    return Recorded(selected, None, reported)


def _selected_problem(document: Mapping[str, Any], selected: str) -> str | None:
    """Why a stored selection's ``selected`` arm cannot be its selected candidate (None: it
    can): it is the selection's reference, or none of its ``candidates``."""
    arms = [str(entry["arm"]) for entry in document["candidates"]]
    listed = ", ".join(_shown(arm) for arm in arms[:3]) + (" ..." if len(arms) > 3 else "")
    if selected == document["reference"]:
        return f"the selection's reference, not one of its candidates ({listed})"
    if selected not in arms:
        return f"not one of the selection's candidates ({listed})"
    return None


def _shown(value: str) -> str:
    """``repr`` of a stored name for an error line, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_inputs(run: RunRef) -> StoredInputs:
    """What a comparison with the stored run ``run`` needs of its files (``core.pipeline.
    StoredInputs``): its resolved suite and split copy (digest checked), each arm it stored
    (an arm that cannot be read is one line in ``problems``), the scorers it recorded, and
    its recorded selection (a ``selection.json`` that cannot be read is one line there).
    Raises the ``SommelierError`` of a run that cannot be read at all."""
    resolved, suite, split = load_run_inputs(run.path)
    arms = {}
    problems: dict[str, str] = {}
    for name in suite.arms:
        arm_dir = runlayout.arm_dir(run.path, name)
        if not runlayout.arm_report(arm_dir).is_file():
            continue
        try:
            arms[name] = stored_arm(suite, split, arm_dir)
        except SommelierError as error:
            problems[name] = str(error)
    scorers = stored_scorers(suite, run.path)
    try:
        recorded = recorded_selection(run)
    except SommelierError as error:
        recorded = Recorded(None, str(error), frozenset())
    return StoredInputs(resolved, suite, split, arms, problems, scorers, recorded)


def look_up_stored(
    run_dir: Path,
    store: Path,
    specs: Sequence[str],
    *,
    suite: str,
    resolved: Mapping[str, Any],
    flips: int,
    gated: bool = False,
    pinned: Mapping[str, str] | None = None,
) -> StoredEvidence | None:
    """Look up the stored run each spec names (see the module docstring) for the run that will
    be written into ``run_dir`` (``resolved``: its resolved suite as written); ``pinned`` maps a
    spec to the spec looked up in its place (``scored_run.pinned_specs``). None when there is
    nothing to look up."""
    if not specs:
        return None
    lookup = {spec: (pinned or {}).get(spec, spec) for spec in specs}
    store = Path(store)
    read: dict[Path, StoredInputs | str] = {}
    looked_up: list[tuple[str, tuple[RunRef, StoredInputs | str] | str | None]] = []
    split_sha = (resolved.get("test_split") or {}).get("sha256")
    for spec in dict.fromkeys(lookup.values()):
        try:
            if spec in BASELINE_WORDS:
                found = [r for r in stored_runs(store, suite=suite) if r.comparable]
                if not [r for r in found if r.passed or spec == LAST_ANY]:
                    renamed = _renamed_from(store, suite, split_sha) if gated else None
                    if renamed is None:
                        looked_up.append((spec, None))
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
            if key not in read:
                try:
                    read[key] = read_inputs(reference)
                except SommelierError as error:
                    read[key] = str(error)
            looked_up.append((spec, (reference, read[key])))
        except SommelierError as error:
            looked_up.append((spec, None if _not_labelled_yet(spec, error, gated) else str(error)))
    return StoredEvidence(
        store=store,
        suite=suite,
        flips=flips,
        candidate=Path(run_dir),
        resolved=dict(resolved),
        looked_up=tuple(looked_up),
        lookup=lookup,
    )


def _not_labelled_yet(spec: str, error: SommelierError, gated: bool) -> bool:
    """Whether a failed lookup is ``label:NAME`` before any stored run of the suite carries
    the label: nothing stored yet, as ``last`` with nothing stored (the baseline run that will
    be stored under that label fails its stored gates with that reason, and is stored),
    except when ``gated``: compare-fail gates must not vanish for a mistyped label."""
    return (
        spec.startswith(LABEL_PREFIX) and not gated
        and getattr(error, "code", None) == "SOM-HISTORY-UNKNOWN"
    )  # fmt: skip


def _renamed_from(store: Path, suite: str, split: str | None) -> StoredRun | None:
    """The newest comparable stored run of another suite name over this run's split (its
    ``identity.test_split_sha256``), or None."""
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


__all__ = [
    "look_up_stored",
    "read_inputs",
    "recorded_selection",
    "write_compared",
]
