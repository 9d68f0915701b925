"""Runs over time at session finish (controller only), for one suite's run folder.

After the run is written: compare it with the stored runs ``--sommelier-compare`` and the
suite's ``stored`` gates name (looked up before this run is stored), put the compare-fail and
stored gates into the verdict and rewrite ``gate_verdict.json``; after the page: write the
Markdown summary (``report/summary.md``, ``$GITHUB_STEP_SUMMARY``) and, with
``--sommelier-autosave``, copy the run into the store.

Invariants kept: ``gate_verdict.json`` is rewritten before the page, the summary and the stored
copy are written, so every view shows the same verdict (and JUnit and the exit status follow
it); every failure is one line in :attr:`OverTime.errors` (the session then fails), never a
traceback; nothing here runs on an xdist worker (the session calls it on the controller only).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import Suite
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history_gate import parse_fail_specs
from pytest_sommelier.data.store.history_verdict import (
    compare_with_stored,
    stored_specs,
    verdict_against_stored,
    write_compared,
)
from pytest_sommelier.errors import SommelierError
from pytest_sommelier.plugin.settings import settings_of, store_path


@dataclass
class OverTime:
    """What runs over time added to one suite's finish (for the terminal summary)."""

    lines: list[str] = field(default_factory=list)  # the comparisons with stored runs
    stored: str | None = None  # "stored as run 0004 ..." or "not stored: incomplete ..."
    errors: list[str] = field(default_factory=list)  # one line each; the session fails


def against_stored(
    config: pytest.Config, suite: Suite, run_dir: Path, outcome: RunOutcome, over: OverTime
) -> RunOutcome:
    """Compare the written run with its stored runs; return the outcome with the verdict that
    holds their gates (``gate_verdict.json`` rewritten when it changed)."""
    settings = settings_of(config)
    specs = stored_specs(suite, settings.compare)
    if not specs:
        return outcome
    against = compare_with_stored(
        run_dir, store_path(config), specs, suite=suite.name, flips=settings.misses
    )
    from pytest_sommelier.view.compare import against_lines, compare_markdown

    write_compared(run_dir, against, compare_markdown)
    over.lines += against_lines(against)
    over.errors += against.errors()
    verdict = verdict_against_stored(
        suite,
        outcome,
        against,
        compare=settings.compare,
        fail_specs=parse_fail_specs(settings.compare_fail),
    )
    if verdict is not None and verdict != outcome.verdict:
        artifacts.atomic_write_json(runlayout.verdict(run_dir), verdict)
    return replace(outcome, verdict=verdict)


def summarise_and_store(
    config: pytest.Config, suite: Suite, run_dir: Path, outcome: RunOutcome, over: OverTime
) -> None:
    """Write the run's Markdown summary, then (``--sommelier-autosave``) store the run."""
    from pytest_sommelier.view.ci_summary import write_summary

    try:
        write_summary(run_dir)
    except SommelierError as error:
        over.errors.append(str(error))
    settings = settings_of(config)
    if not settings.autosave:
        return
    from pytest_sommelier.data.store.history import save_run
    from pytest_sommelier.data.store.history_record import value_intervals_of

    try:
        stored = save_run(
            run_dir,
            store_path(config),
            keep_incomplete=settings.autosave_all,
            rootdir=config.rootpath,
            intervals=value_intervals_of(outcome.records, suite.statistics),
        )
    except SommelierError as error:
        over.errors.append(f"not stored: {error}")
        return
    if stored is None:
        over.stored = (
            "not stored: incomplete (an incomplete run is never compared with; "
            "--sommelier-autosave=all keeps it, marked incomplete)"
        )
        return
    mark = "" if stored.comparable else ", incomplete: never compared with"
    where = stored.describe().removeprefix("stored run ")  # 0004 (commit abc1234)
    over.stored = f"stored as run {where}{mark} in {stored.path.parent}"


__all__ = ["OverTime", "against_stored", "summarise_and_store"]
