"""One evaluation of a suite with generators already in memory, written and stored as a run.

This is the pytest session's pipeline without pytest: the same fixed batches
(``Runner.batch``: batch ``k`` of an (arm, slice) is examples ``[k*B, (k+1)*B)`` in split
order, each prompt checked against its digest, the generation cache consulted and filled),
the same payloads (``Runner.payload``), the same arms (``runner.arm_runs``), the same reports,
comparisons and verdict (``core.pipeline.evaluate_run``), the same files in the same order
and the same failure handling, through the one sequence the session finish calls
(``data.store.scored_run.write_scored_run``: the reports, the comparisons with the stored runs
the suite's ``stored`` gates name, the page, the summary, the store's copy, the verdict last),
always stored (an evaluated checkpoint is a stored run).

Invariants kept: a generation error of one batch makes its items errored and the run
incomplete (``verdict: incomplete``), never a half-written run: the error's one line is in
:attr:`LiveRun.errors`; a step of the write that fails is one line there too, and the run
then has no verdict and is not stored; nothing is read back from what was just written but the
store's byte copy; the run folder is claimed (one writer) and its earlier files removed,
verdict first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sommelier.core.pipeline import RunOutcome, evaluate_run, noise_plan
from pytest_sommelier.core.stored_comparison import value_intervals_of
from pytest_sommelier.core.types import BatchKey, FormattedSplit, Suite
from pytest_sommelier.core.verdict import stored_specs
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import StoredRun
from pytest_sommelier.data.store.history_verdict import look_up_stored
from pytest_sommelier.data.store.scored_run import StoreOptions, write_scored_run
from pytest_sommelier.data.suite.identity import suite_identity
from pytest_sommelier.errors import SommelierError
from pytest_sommelier.inference.protocol import Generator
from pytest_sommelier.plugin.runner import Runner, arm_runs
from pytest_sommelier.view.run_views import RUN_VIEWS


@dataclass
class LiveRun:
    """One evaluated and stored run: its outcome, folder, stored copy and what went wrong."""

    outcome: RunOutcome
    run_dir: Path
    stored: StoredRun | None
    resolved: dict[str, Any]
    generated: dict[str, int] = field(default_factory=dict)  # arm -> outputs generated now
    cached: dict[str, int] = field(default_factory=dict)  # arm -> outputs from the cache
    errors: list[str] = field(default_factory=list)
    compares: list[dict[str, Any]] = field(default_factory=list)  # with stored runs, once each
    by_spec: dict[str, dict[str, Any]] = field(default_factory=dict)  # stored spec -> comparison
    no_verdict: str | None = None  # why no verdict was written (and nothing stored)


def generate_payloads(
    suite: Suite,
    split: FormattedSplit,
    generators: Mapping[str, Generator],
    runner: Runner,
    *,
    batch_scope: Mapping[str, str],
    errors: list[str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every example's payload of every arm in ``generators`` (the suite's arm order, then slice
    order, then fixed batches in split order), and the ids of the items that errored.

    ``batch_scope`` (arm -> the first field of its ``BatchKey``) keeps the runner's per-process
    memo of batches apart where an arm's weights change between calls (the trained arm at each
    checkpoint); an arm absent from it is scoped by the suite's path (the base: its batches
    are generated once per runner). A batch's error is one line in ``errors``; its items are
    errored."""
    size = int(suite.decoding["batch_size"])
    warmup = split.slices[suite.reference_slice][0].prompt_text
    noise = noise_plan(suite, split)
    payloads: list[dict[str, Any]] = []
    errored: list[str] = []
    nodeid = str(suite.path)
    for arm in (name for name in suite.arms if name in generators):
        generator = generators[arm]
        sample = noise.get(arm, frozenset())
        for language in suite.slices:
            examples = split.slices[language]
            for index in range(0, (len(examples) + size - 1) // size):
                batch = examples[index * size : (index + 1) * size]
                key = BatchKey(batch_scope.get(arm, nodeid), arm, language, index)
                try:
                    outcome = runner.batch(
                        key,
                        batch,
                        suite.decoding,
                        generator,
                        warmup_prompt=warmup,
                        rebatch=[e.example_id for e in batch if e.example_id in sample],
                    )
                except SommelierError as error:
                    if str(error) not in errors:
                        errors.append(str(error))
                    errored += [f"{arm}::{language}::{e.example_id}" for e in batch]
                    continue
                for example in batch:
                    payload = runner.payload(
                        nodeid,
                        key,
                        example,
                        suite.decoding,
                        generator,
                        outcome,
                        arguments_key=suite.arguments_key,
                        reasoning=suite.reasoning,
                    )
                    payloads.append(dict(payload))
    return payloads, errored


def evaluate_live(
    suite: Suite,
    split: FormattedSplit,
    generators: Mapping[str, Generator],
    runner: Runner,
    *,
    run_id: str,
    run_dir: Path,
    store: Path,
    batch_scope: Mapping[str, str],
    record: Mapping[str, Any] | None = None,
    rootdir: Path | None = None,
    pinned: Mapping[str, str] | None = None,
) -> LiveRun:
    """Generate, evaluate, write and store one run of ``suite`` (module docstring); ``record``
    adds fields to the store's record of the run (the callback's ``checkpoint``). The suite's
    ``stored`` gates are compared with the stored runs they name (looked up in ``store`` before
    this run is stored; ``pinned``: specs looked up as another, ``scored_run.pinned_specs``)
    and join its verdict."""
    errors: list[str] = []
    payloads, errored = generate_payloads(
        suite, split, generators, runner, batch_scope=batch_scope, errors=errors
    )
    arms = arm_runs(suite, split, payloads)
    identity = suite_identity(suite)
    resolved = {**identity, "run_id": run_id}
    options = StoreOptions(
        store=store,
        autosave=True,  # an evaluated checkpoint is always a stored run
        keep_incomplete=True,
        rootdir=rootdir,
        record=record,
        environ={},  # a training script is no CI step: GITHUB_STEP_SUMMARY is not appended to
        pinned=dict(pinned or {}),
    )
    evidence = look_up_stored(
        run_dir,
        store,
        stored_specs(suite, None),
        suite=suite.name,
        resolved=artifacts.stored_resolved(resolved, split),
        flips=options.flips,
        pinned=options.pinned,
    )
    outcome = evaluate_run(
        suite, split, arms, run_id=run_id, model=identity["model"], errored=errored,
        stored=evidence,
    )  # fmt: skip
    live = LiveRun(outcome=outcome, run_dir=run_dir, stored=None, resolved=resolved, errors=errors)
    for name, arm in arms.items():
        live.cached[name] = sum(bool(t["cached"]) for t in arm.timings)
        live.generated[name] = len(arm.timings) - live.cached[name]
    with artifacts.claim_run(run_dir):
        done = write_scored_run(
            run_dir, suite, split, outcome, resolved=resolved, options=options, views=RUN_VIEWS,
            intervals=value_intervals_of(outcome.records, suite.statistics),
        )  # fmt: skip
    live.outcome, live.stored, live.no_verdict = done.outcome, done.over.stored_run, done.no_verdict
    live.compares, live.by_spec = done.over.compares, done.over.by_spec
    live.errors += [error for error in done.over.errors if error not in live.errors]
    if done.no_verdict is not None and done.no_verdict not in live.errors:
        live.errors.append(done.no_verdict)
    return live


__all__ = ["LiveRun", "evaluate_live", "generate_payloads"]
