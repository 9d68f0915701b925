"""The session-level aggregator: collects per-example results and, at session finish on the
controller, derives and writes every artifact and the verdict.

Roles are decided once (``plugin.role``): an xdist worker only runs items; its results travel
to the controller as JSON-safe report attributes; the controller (or a plain run) aggregates
them from the suite items' reports (handed over by ``hooks.SuiteReports``; the aggregator is
created on the first) and writes the run once. Invariants kept: nothing is written by a
worker; a suite whose items errored or were not all run gets ``complete: false`` and verdict
``incomplete``; any SommelierError at finish is shown as one line and makes the exit status
non-zero, and leaves no report that looks complete. The run is written by the one sequence the
training callback uses too (``data.store.scored_run.write_scored_run``, with this session's
options from ``plugin.history.store_options``); what its gates need of the run store is looked
up before it is evaluated (``data.store.history_verdict.look_up_stored``) and every gate is
judged once (``core.pipeline.evaluate_run``); the page, JUnit cases and exit status all follow
that one verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import ArmRun, RunOutcome, evaluate_run
from pytest_sommelier.data.split.load import FormattedSplit
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.suite.load import Suite, suite_identity
from pytest_sommelier.errors import (
    EXTENSION_ERRORS,
    InvariantError,
    SommelierError,
    exception_text,
)
from pytest_sommelier.plugin.collect import load_suite_once
from pytest_sommelier.plugin.extensions import call_event, with_identity_hook
from pytest_sommelier.plugin.junit import add_gate_cases
from pytest_sommelier.plugin.keys import suite_nodeid
from pytest_sommelier.plugin.role import role_of
from pytest_sommelier.plugin.settings import settings_of
from pytest_sommelier.view import terminal
from pytest_sommelier.view.text import sample_text

if TYPE_CHECKING:
    from pytest_sommelier.data.store.scored_run import OverTime


FINISH_ERRORS: tuple[type[BaseException], ...] = (*EXTENSION_ERRORS, KeyboardInterrupt)
"""What the session finish turns into its one line (``errors.EXTENSION_ERRORS``, an interrupt)."""


@dataclass
class SuiteResult:
    """What the session finish produced for one suite (for the terminal summary)."""

    nodeid: str
    name: str
    run_dir: Path | None
    outcome: RunOutcome | None = None
    error: str | None = None
    errored_items: list[str] = field(default_factory=list)
    page: str | None = None  # the HTML report written after the verdict, or why it was not
    page_written: bool = False
    notices: list[str] = field(default_factory=list)  # said before the run's lines
    origins: list[str] = field(default_factory=list)  # per arm: generated, cached or stored
    over_time: OverTime | None = None  # stored-run comparisons, summary, autosave
    no_verdict: str | None = None  # why gate_verdict.json was not written (the first failure)


class SommelierSession:
    """Owns aggregation and the session-finish pipeline."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.is_worker = role_of(config).is_worker
        self.payloads: dict[str, list[dict]] = {}
        self.errored: dict[str, list[str]] = {}
        self.results: list[SuiteResult] = []
        self.run_id = artifacts.new_run_id()
        self.pytest_session: pytest.Session | None = None  # set at the session finish

    # -- aggregation -------------------------------------------------------------------------

    def record(self, report: pytest.TestReport) -> None:
        """Take one suite item's report: its payload, or its error (a setup error, a lost
        worker)."""
        suite = suite_nodeid(report.nodeid)
        if suite is None:
            return
        payload = getattr(report, "sommelier", None)
        if report.when == "call" and payload is not None:
            self.payloads.setdefault(suite, []).append(payload)
        if report.failed and not (report.when == "call" and payload is not None):
            # errors (setup/teardown, lost workers); strict-mode misses carry a payload
            self.errored.setdefault(suite, []).append(report.nodeid)

    # -- finish ------------------------------------------------------------------------------

    def out_dir(self, suite: Suite, several: bool) -> Path:
        out = settings_of(self.config).out
        root = self.config.invocation_params.dir / runlayout.DEFAULT_ROOT
        base = Path(out) if out else root / self.run_id
        if not base.is_absolute():
            base = self.config.invocation_params.dir / base
        return base / suite.name if several else base

    def finish(self) -> int | None:
        """Write every evaluated suite's run; return the exit status to force, if any."""
        if self.is_worker:
            return None
        suites = sorted(set(self.payloads) | set(self.errored))
        exit_override = None
        for nodeid in suites:
            result = self._finish_suite(nodeid, several=len(suites) > 1)
            self.results.append(result)
            verdict = result.outcome.verdict if result.outcome else None
            if verdict is not None and result.no_verdict is None:
                add_gate_cases(self.config, nodeid, verdict)
            failed = (
                result.error is not None
                or (result.outcome is not None and not result.page_written)
                or bool(result.over_time is not None and result.over_time.errors)
            )
            if failed or (verdict is not None and verdict["verdict"] != "pass"):
                exit_override = int(pytest.ExitCode.TESTS_FAILED)
        return exit_override

    def _finish_suite(self, nodeid: str, several: bool) -> SuiteResult:
        result = SuiteResult(nodeid=nodeid, name=nodeid, run_dir=None)
        result.errored_items = self.errored.get(nodeid, [])
        try:
            suite, split = load_suite_once(self.config, self.config.rootpath / nodeid)
            result.name = suite.name
            left_out = terminal.left_out_line(split.left_out, suite.slices)
            result.notices += [left_out] if left_out else []
            sampled = sample_text({"test_split": {"sample": split.sample}})
            result.notices += [sampled] if sampled else []
            asked = settings_of(self.config).sample
            if asked is not None and split.sample is None:  # N at or above the roots
                from pytest_sommelier.data.split.sample import whole_split_note

                whole = whole_split_note(split, asked[0], "--sommelier-sample")
                result.notices += [whole] if whole else []
            from pytest_sommelier.inference.split_check import reasoning_warnings

            result.notices += [
                f"warning: {line}"
                for line in reasoning_warnings(suite, split, settings_of(self.config).engine)
            ]
            result.run_dir = self.out_dir(suite, several)
            # the folder is claimed (one writer) and the earlier run's files removed, verdict
            # first, before anything is evaluated: whatever fails below, no stale verdict stays
            with artifacts.claim_run(result.run_dir):
                self._evaluate_and_write(result, suite, split)
        except SommelierError as error:
            result.error = str(error)
        except FINISH_ERRORS as exc:  # a bug, exhausted resources, an extension's sys.exit()
            # or an interrupt: one line, never a traceback, never exit 0
            result.outcome = None
            result.error = str(
                InvariantError(
                    "SOM-SESSION-FINISH",
                    f"finishing suite {result.name!r} failed: {exception_text(exc)}",
                    "the items' results are above; re-run (check memory and the statistics "
                    "settings), and report it if it persists",
                )
            )
        return result

    def _evaluate_and_write(self, result: SuiteResult, suite: Suite, split: FormattedSplit) -> None:
        """Evaluate one suite's run and write it into its (claimed, cleared) folder: what the
        gates need of the run store looked up first (the stored runs ``--sommelier-compare``
        and the ``stored`` gates name, before this run is stored, so it is never compared with
        itself), then the run evaluated with every gate judged once (``core.pipeline.
        evaluate_run``), then the reports, the comparisons with stored runs, the page and the
        summary, all from the one verdict held in memory; then that verdict, last, only when
        everything before it was written; then the autosave. Nothing written here is read
        back."""
        assert result.run_dir is not None
        run_dir = result.run_dir
        arms = self._arm_runs(suite, split, self.payloads.get(result.nodeid, []))
        arms.update(self._baselines(suite, split))
        result.origins = self._origins(suite, arms)
        identity = suite_identity(suite)
        resolved = {**identity, "run_id": self.run_id}
        # imported here, not at plugin load: Jinja2, the template module and the run store cost
        # every pytest run start-up time, and only a session finish with a suite needs them
        from pytest_sommelier.core.stored_comparison import value_intervals_of
        from pytest_sommelier.core.verdict import stored_specs
        from pytest_sommelier.data.store.history_gate import parse_fail_specs
        from pytest_sommelier.data.store.history_verdict import look_up_stored
        from pytest_sommelier.data.store.scored_run import write_scored_run
        from pytest_sommelier.plugin.extensions import controller_scorers
        from pytest_sommelier.plugin.history import store_options
        from pytest_sommelier.view.run_views import RUN_VIEWS

        options = store_options(self.config)
        evidence = look_up_stored(
            run_dir,
            options.store,
            stored_specs(suite, options.compare),
            suite=suite.name,
            resolved=artifacts.stored_resolved(resolved, split),
            flips=options.flips,
            gated=bool(options.compare_fail),
        )
        outcome = evaluate_run(
            suite,
            split,
            arms,
            run_id=self.run_id,
            model=identity["model"],
            errored=result.errored_items,
            gates=settings_of(self.config).gates,
            scorers=controller_scorers(
                self.config, suite, self.pytest_session, self.payloads.get(result.nodeid, [])
            ),
            stored=evidence,
            compare=options.compare,
            fail_specs=parse_fail_specs(options.compare_fail),
        )
        done = write_scored_run(
            run_dir,
            suite,
            split,
            outcome,
            resolved=resolved,
            options=options,
            views=RUN_VIEWS,
            on_written=lambda folder: call_event(
                self.config, "pytest_sommelier_run_written", run_dir=folder
            ),
            on_verdict=lambda verdict, folder: call_event(
                self.config, "pytest_sommelier_verdict", verdict=verdict, run_dir=folder
            ),
            intervals=value_intervals_of(outcome.records, suite.statistics)
            if options.autosave
            else None,
        )
        result.outcome, result.over_time = done.outcome, done.over
        result.page, result.page_written = done.page, done.page_written
        result.no_verdict = done.no_verdict

    def _origins(self, suite: Suite, arms: dict[str, ArmRun]) -> list[str]:
        """Per arm, where its generations came from: ``84 of 84 from the generation cache``,
        ``84 generated``, or the stored arm (``stored arm 0003 (commit abc1234)``)."""
        from pytest_sommelier.plugin.baseline import baseline_origins

        stored = baseline_origins(self.config)
        lines = []
        for name in (name for name in suite.arms if name in arms):  # the suite's order
            arm = arms[name]
            if name in stored:
                lines.append(f"{name}: {stored[name]}")
                continue
            total = len(arm.timings)
            cached = sum(bool(t["cached"]) for t in arm.timings)
            if cached == total:
                lines.append(f"{name}: {cached} of {total} from the generation cache")
            elif cached:
                lines.append(
                    f"{name}: {total - cached} generated, {cached} of {total} from the "
                    "generation cache"
                )
            else:
                lines.append(f"{name}: {total} generated")
        return lines

    def _arm_runs(
        self, suite: Suite, split: FormattedSplit, payloads: list[dict]
    ) -> dict[str, ArmRun]:
        from pytest_sommelier.plugin.runner import arm_runs

        return {
            name: replace(
                arm, model_identity=with_identity_hook(self.config, name, arm.model_identity)
            )
            for name, arm in arm_runs(suite, split, payloads).items()
        }

    def _baselines(self, suite: Suite, split: FormattedSplit) -> dict[str, ArmRun]:
        from pytest_sommelier.plugin.baseline import baseline_arms

        return baseline_arms(self.config, suite, split)

    # -- terminal ----------------------------------------------------------------------------

    def summary(self, terminalreporter: Any) -> None:
        """Write each suite's summary; every line comes from ``view.terminal``."""
        misses_wanted = settings_of(self.config).misses
        for result in self.results:
            terminalreporter.write_sep("=", f"sommelier: {result.name}")
            for notice in result.notices:
                terminalreporter.write_line(notice, yellow=True)
            if result.error is not None:
                terminalreporter.write_line(f"ERROR {result.error}", red=True)
                terminalreporter.write_line("no verdict was written for this suite", red=True)
                continue
            assert result.outcome is not None
            over = result.over_time
            for line, markup in terminal.run_summary_lines(
                result.outcome,
                result.run_dir,
                len(result.errored_items),
                misses_wanted,
                origins=result.origins,
                stored=over.lines if over is not None else (),
                no_verdict=result.no_verdict,
            ):
                terminalreporter.write_line(line, **markup)
            if result.page_written:
                terminalreporter.write_line(f"HTML report: {result.page}")
            else:
                terminalreporter.write_line(f"HTML report not written: {result.page}", red=True)
            if over is not None and over.stored:
                terminalreporter.write_line(over.stored)
            for error in over.errors if over is not None else ():
                terminalreporter.write_line(f"ERROR {error}", red=True)
