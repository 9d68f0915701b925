"""Runs over time at session finish (controller only), for one suite's run folder.

After the run's reports are written (its verdict not yet): compare it with the stored runs
``--sommelier-compare`` and the suite's ``stored`` gates name (looked up before this run is
stored), from memory (the run's reports and scoring records as the session holds them), and put
the compare-fail and stored gates into the one verdict; write the Markdown summary
(``report/summary.md``, ``$GITHUB_STEP_SUMMARY``) from the same values; after the verdict is
written, with ``--sommelier-autosave``, copy the run into the store.

Invariants kept: nothing here reads back a file of the run folder the session just wrote (the
autosave's byte copy aside); every failure is one line in :attr:`OverTime.errors` (the session
then fails and writes no verdict), never a traceback; nothing here runs on an xdist worker (the
session calls it on the controller only).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import FormattedSplit, Suite
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import run_of
from pytest_sommelier.data.store.history_compare import scored_outcome
from pytest_sommelier.data.store.history_gate import parse_fail_specs
from pytest_sommelier.data.store.history_verdict import (
    compare_with_stored,
    stored_specs,
    verdict_against_stored,
    write_compared,
)
from pytest_sommelier.data.store.runread import summary_inputs_of
from pytest_sommelier.errors import SommelierError
from pytest_sommelier.plugin.settings import settings_of, store_path


@dataclass
class OverTime:
    """What runs over time added to one suite's finish (for the terminal summary)."""

    lines: list[str] = field(default_factory=list)  # the comparisons with stored runs
    compares: list[dict[str, Any]] = field(default_factory=list)  # each comparison, once
    stored: str | None = None  # "stored as run 0004 ..." or "not stored: incomplete ..."
    errors: list[str] = field(default_factory=list)  # one line each; the session fails


def against_stored(
    config: pytest.Config,
    suite: Suite,
    run_dir: Path,
    outcome: RunOutcome,
    over: OverTime,
    *,
    resolved: Mapping[str, Any],
    split: FormattedSplit,
) -> RunOutcome:
    """Compare the run (its values: ``resolved`` as written, ``outcome``) with its stored
    runs and write each comparison into ``report/``; return the outcome with the one verdict
    that holds their gates (nothing is written of it here)."""
    settings = settings_of(config)
    specs = stored_specs(suite, settings.compare)
    if not specs:
        return outcome
    scored = scored_outcome(resolved, suite, split, outcome)
    run = run_of(run_dir, scored.resolved, scored.reports, outcome.verdict)
    against = compare_with_stored(
        run_dir,
        store_path(config),
        specs,
        suite=suite.name,
        flips=settings.misses,
        candidate=(run, scored),
        gated=bool(settings.compare_fail),
    )
    from pytest_sommelier.view.compare import against_lines, compare_markdown

    write_compared(run_dir, against, compare_markdown)
    over.compares = against.compared()
    over.lines += against_lines(against)
    over.errors += against.errors()
    verdict = verdict_against_stored(
        suite,
        outcome,
        against,
        compare=settings.compare,
        fail_specs=parse_fail_specs(settings.compare_fail),
    )
    return replace(outcome, verdict=verdict)


def summarise(
    run_dir: Path,
    outcome: RunOutcome,
    over: OverTime,
    *,
    resolved: Mapping[str, Any],
    split: FormattedSplit,
) -> None:
    """Write the run's Markdown summary, rendered from its values (``outcome.verdict`` the
    final one, ``over.compares`` the comparisons with stored runs)."""
    from pytest_sommelier.view.ci_summary import summary_text

    try:
        inputs = summary_inputs_of(
            run_dir, resolved, outcome, split, outcome.verdict, over.compares
        )
        artifacts.write_summary(run_dir, summary_text(inputs))
    except SommelierError as error:
        over.errors.append(str(error))


def store_run(
    config: pytest.Config,
    suite: Suite,
    run_dir: Path,
    outcome: RunOutcome,
    over: OverTime,
    *,
    resolved: Mapping[str, Any],
    split: FormattedSplit,
) -> bool:
    """With ``--sommelier-autosave``, copy the run into the store with its verdict
    (``outcome.verdict``, written into the stored copy: the run's own ``gate_verdict.json`` is
    written after this) and the record built from its values; False when storing failed (the
    one line is in ``over.errors``)."""
    settings = settings_of(config)
    if not settings.autosave:
        return True
    from pytest_sommelier.data.store.history import save_run
    from pytest_sommelier.data.store.history_record import run_entry, value_intervals_of
    from pytest_sommelier.data.store.runread import summary_inputs_of

    values = summary_inputs_of(run_dir, resolved, outcome, split, outcome.verdict)
    try:
        stored = save_run(
            run_dir,
            store_path(config),
            keep_incomplete=settings.autosave_all,
            only_passing=settings.autosave_pass,
            label=settings.label,
            rootdir=config.rootpath,
            intervals=value_intervals_of(outcome.records, suite.statistics),
            verdict=outcome.verdict,
            record=run_entry(run_dir.name, values.resolved, values.reports, values.verdict),
        )
    except SommelierError as error:
        over.errors.append(f"not stored: {error}")
        return False
    if stored is None and settings.autosave_pass and outcome.complete:
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


__all__ = ["OverTime", "against_stored", "store_run", "summarise"]
