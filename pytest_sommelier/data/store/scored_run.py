"""Writing a scored run: the one sequence that turns an evaluated run's values into its run
folder, its comparisons with stored runs, its page, its summary, its stored copy and, last,
its verdict. The pytest session finish (``plugin.session``) and the training callback
(``training.live_run``) both call :func:`write_scored_run`; what differs between them is given
as plain values (:class:`StoreOptions`) and callables (the views, :class:`RunViews`, and the
two events), so this module imports neither pytest nor a view.

The order, and the invariants it keeps:

1. ``artifacts.write_outcome`` without the verdict (the reports, records, comparisons and their
   Markdown); an error here is raised to the caller (nothing of the run is valid yet).
2. The comparisons with stored runs (``--sommelier-compare`` and the suite's ``stored``
   gates; looked up by ``history_verdict.look_up_stored`` before the run was evaluated and
   this run is stored, so a run is never compared with itself; made, and their gates judged
   with every other gate in the one verdict, by ``core.pipeline.evaluate_run``): each
   written once into ``report/``.
3. The page (``report.html``), rendered from the values in memory with that verdict.
4. The Markdown summary (``report/summary.md``, and ``GITHUB_STEP_SUMMARY`` where the
   environment names it).
5. The store's copy (when ``autosave``), with the verdict from memory.
6. ``on_written(run_dir)``, then ``gate_verdict.json`` and ``on_verdict(verdict, run_dir)``.

A step that fails is one line in :attr:`OverTime.errors`; after the first failure nothing is
stored and no verdict is written (``ScoredRun.no_verdict`` says why), so a run folder with a
verdict is a run whose every other file was written. Nothing written here is read back (the
store's byte copy aside).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import FormattedSplit, Suite, Verdict
from pytest_sommelier.core.verdict import AgainstStored
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import StoredRun, resolve_stored, save_run
from pytest_sommelier.data.store.history_compare import DEFAULT_FLIPS
from pytest_sommelier.data.store.history_record import run_entry
from pytest_sommelier.data.store.history_verdict import write_compared
from pytest_sommelier.data.store.runread import (
    RunFiles,
    SummaryInputs,
    run_files_of,
    summary_inputs_of,
)
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.numbers import BASELINE_WORDS


class RunViews(Protocol):
    """The text a scored run's files hold, rendered by the view layer from values
    (``view.run_views.RUN_VIEWS``): the store writes what it is given."""

    def outcome_markdown(self, outcome: RunOutcome) -> dict[str, str]:
        """Each comparison report's Markdown twin, by comparison name."""
        ...

    def page(self, files: RunFiles, title: str) -> str:
        """The run's HTML page."""
        ...

    def summary(self, inputs: SummaryInputs) -> str:
        """The run's Markdown summary."""
        ...

    def compare_markdown(self, report: Mapping[str, Any]) -> str:
        """A comparison with a stored run as Markdown (``report/compare-NNNN.md``)."""
        ...

    def against_lines(self, against: AgainstStored) -> list[str]:
        """The terminal lines of the run against its stored runs."""
        ...


@dataclass(frozen=True)
class StoreOptions:
    """How a scored run meets the run store, as plain values (the session's from its
    ``Settings``, the callback's from its arguments).

    ``compare`` / ``compare_fail``: ``--sommelier-compare`` and its regression gates;
    ``flips``: how many flipped examples a comparison lists; ``autosave``, ``keep_incomplete``,
    ``only_passing``, ``label``: whether and how the run is stored; ``rootdir``: where git is
    asked for the commit; ``record``: fields added to the store's record of the run (the
    callback's ``checkpoint``); ``environ``: the environment the summary reads
    ``GITHUB_STEP_SUMMARY`` from (None: the process's); ``pinned``: specs looked up as another
    spec (:func:`pinned_specs`: the callback's ``last``, fixed when training began)."""

    store: Path
    compare: str | None = None
    compare_fail: tuple[str, ...] = ()
    flips: int = DEFAULT_FLIPS
    autosave: bool = False
    keep_incomplete: bool = False
    only_passing: bool = False
    label: str | None = None
    rootdir: Path | None = None
    record: Mapping[str, Any] | None = None
    environ: Mapping[str, str] | None = None
    pinned: Mapping[str, str] = field(default_factory=dict)


@dataclass
class OverTime:
    """What runs over time added to one run's finish (for the terminal summary)."""

    lines: list[str] = field(default_factory=list)  # the comparisons with stored runs
    compares: list[dict[str, Any]] = field(default_factory=list)  # each comparison, once
    by_spec: dict[str, dict[str, Any]] = field(default_factory=dict)  # spec -> its comparison
    stored: str | None = None  # "stored as run 0004 ..." or "not stored: incomplete ..."
    stored_run: StoredRun | None = None  # the store's copy, when the run was stored
    errors: list[str] = field(default_factory=list)  # one line each; the finish fails


@dataclass
class ScoredRun:
    """What :func:`write_scored_run` did: the outcome with its final verdict, the runs over
    time, the page (its path, or why it was not written) and why no verdict was written."""

    outcome: RunOutcome
    over: OverTime
    page: str | None = None
    page_written: bool = False
    no_verdict: str | None = None  # the first failure; None when the verdict was written


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def write_scored_run(
    run_dir: Path,
    suite: Suite,
    split: FormattedSplit,
    outcome: RunOutcome,
    *,
    resolved: Mapping[str, Any],
    options: StoreOptions,
    views: RunViews,
    on_written: Callable[[Path], None] = _nothing,
    on_verdict: Callable[[Verdict, Path], None] = _nothing,
    intervals: Mapping[str, Any] | None = None,
) -> ScoredRun:
    """Write the evaluated run into ``run_dir`` (claimed and cleared by the caller) in the
    module docstring's order; ``outcome`` is the evaluated run with its one verdict and its
    comparisons with stored runs (``outcome.against``), ``resolved`` the resolved suite with
    its ``run_id``, ``intervals`` the store record's value intervals
    (``core.stored_comparison.value_intervals_of``, given with ``options.autosave``). Raises
    only when step 1 fails."""
    artifacts.write_outcome(
        run_dir,
        replace(outcome, verdict=None),  # the verdict is written last, below
        resolved=dict(resolved),
        split=split,
        comparison_markdown=views.outcome_markdown(outcome),
    )
    done = ScoredRun(outcome=outcome, over=OverTime())
    over = done.over
    if outcome.against is not None:
        try:
            write_against(run_dir, outcome.against, over, views)
        except SommelierError as error:
            over.errors.append(str(error))
    verdict = done.outcome.verdict
    try:  # the page: a view of the run's values, with the one verdict
        files = run_files_of(run_dir, resolved, done.outcome, split, verdict, over.compares)
        artifacts.atomic_write_text(runlayout.page(run_dir), views.page(files, run_dir.name))
        done.page, done.page_written = str(runlayout.page(run_dir)), True
    except SommelierError as error:
        done.page = str(error)
    try:
        inputs = summary_inputs_of(run_dir, resolved, done.outcome, split, verdict, over.compares)
        artifacts.write_summary(run_dir, views.summary(inputs), environ=options.environ)
    except SommelierError as error:
        over.errors.append(str(error))
    failed = over.errors[0] if over.errors else None
    if failed is None and not done.page_written:
        failed = f"the HTML report was not written: {done.page}"
    if failed is not None:  # a failed finish writes no verdict and stores nothing
        done.no_verdict = failed
        return done
    # the store copies the run with the verdict from memory, so that the run's own verdict is
    # still the last file written, and only when storing worked too
    if not store_run(suite, run_dir, done.outcome, over, resolved=resolved, split=split,
                     options=options, intervals=intervals):  # fmt: skip
        done.no_verdict = over.errors[-1]
        return done
    on_written(run_dir)
    if verdict is not None:
        try:
            artifacts.write_verdict(run_dir, verdict)
        except SommelierError as error:
            over.errors.append(str(error))
            done.no_verdict = str(error)
            return done
        on_verdict(copy.deepcopy(verdict), run_dir)
    return done


def write_against(
    run_dir: Path, against: AgainstStored, over: OverTime, views: RunViews
) -> None:
    """Write each comparison with a stored run once into ``report/`` and keep, for the
    terminal summary, the comparisons, their lines and the lookups that failed."""
    write_compared(run_dir, against, views.compare_markdown)
    over.compares = against.compared()
    over.by_spec = dict(against.reports)
    over.lines += views.against_lines(against)
    over.errors += against.errors()


def pinned_specs(store: Path, suite: Suite, *, where: str) -> dict[str, str]:
    """Each ``stored`` gate's spec resolved once, now: ``last`` and ``last-any`` as the number
    of the run they name now (so runs stored later, the callback's own checkpoints, never
    become their baseline), every spec checked to name a complete stored run of ``suite``.

    Raises ``InputError`` (``SOM-TRAIN-STORED``, ``where`` the caller) in one line naming the
    gate and its spec when a spec names no such run: a claim that cannot get its evidence is
    refused before the work that would be judged by it."""
    pinned: dict[str, str] = {}
    for gate in suite.gates:
        if gate.kind != "stored" or gate.stored is None:
            continue
        spec = str(gate.stored)
        found: StoredRun | None = None
        try:
            found = resolve_stored(Path(store), spec, suite=suite.name)
            problem = (
                f"{found.describe()} is incomplete; an incomplete run is never compared"
                if not found.comparable
                else f"{found.describe()} is suite {found.suite!r}, not {suite.name!r}"
                if found.suite != suite.name
                else None
            )
        except SommelierError as error:
            problem = f"{error.code}: {error.message}"
        if problem is not None or found is None:
            raise InputError(
                "SOM-TRAIN-STORED",
                f"gate {gate.name!r} compares arm {gate.arm!r} with stored run {spec!r}, which "
                f"cannot be used: {problem}",
                "store the shipped adapter's run first (pytest -m eval --sommelier-autosave "
                "--sommelier-label shipped, then stored = \"label:shipped\") in the callback's "
                "store",
                where=where,
            )
        if spec in BASELINE_WORDS and found.number is not None:
            pinned[spec] = str(found.number)
    return pinned


def store_run(
    suite: Suite,
    run_dir: Path,
    outcome: RunOutcome,
    over: OverTime,
    *,
    resolved: Mapping[str, Any],
    split: FormattedSplit,
    options: StoreOptions,
    intervals: Mapping[str, Any] | None = None,
) -> bool:
    """With ``options.autosave``, copy the run into the store with its verdict
    (``outcome.verdict``, written into the stored copy: the run's own ``gate_verdict.json`` is
    written after this), the record built from its values (with ``options.record``) and its
    value ``intervals``; False when storing failed (the one line is in ``over.errors``)."""
    if not options.autosave:
        return True
    values = summary_inputs_of(run_dir, resolved, outcome, split, outcome.verdict)
    entry = run_entry(run_dir.name, values.resolved, values.reports, values.verdict)
    try:
        stored = save_run(
            run_dir,
            options.store,
            keep_incomplete=options.keep_incomplete,
            only_passing=options.only_passing,
            label=options.label,
            rootdir=options.rootdir,
            intervals=intervals,
            verdict=outcome.verdict,
            record={**entry, **(options.record or {})},
        )
    except SommelierError as error:
        over.errors.append(f"not stored: {error}")
        return False
    over.stored_run = stored
    if stored is None and options.only_passing and outcome.complete:
        over.stored = "not stored: its verdict is not pass (--sommelier-autosave=pass)"
        return True
    if stored is None:
        over.stored = (
            "not stored: incomplete (an incomplete run is never compared with; "
            "--sommelier-autosave=all keeps it, marked incomplete)"
        )
        return True
    mark = "" if stored.comparable else ", incomplete: never compared with"
    where = stored.describe().removeprefix("stored run ")  # 0004 (commit abc1234)
    over.stored = f"stored as run {where}{mark} in {stored.path.parent}"
    return True


__all__ = [
    "OverTime",
    "RunViews",
    "ScoredRun",
    "StoreOptions",
    "pinned_specs",
    "store_run",
    "write_against",
    "write_scored_run",
]
