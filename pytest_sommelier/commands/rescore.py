"""``sommelier rescore``: a stored run re-scored from its own generations, no model, under its
own gates and comparisons or (``--suite``) a suite's current ones.

Invariants kept:

- The run's conditions are the run's: its split copy (digest checked), slices, decoding, model
  and arm identities come from its own files; a suite given with ``--suite`` contributes only
  its ``[[comparisons]]`` and ``[[gates]]``, and only when its split and slices are the run's
  (else one ``InputError`` line, nothing written). What else differs is named in a note.
- Every record is re-parsed from ``raw_text``; what the ``stored`` gates need of the run store
  is looked up first, as in a session (``data.store.history_verdict.look_up_stored``), and
  every gate is judged once (``core.pipeline.evaluate_run``).
- The result records that it was rescored: ``rescored.json`` (when, by which version, from
  which folder and run, with which suite file, and the SHA-256 of the generation files it was
  scored from, taken before anything is written).
- A stored run (a folder of the run store) is never rewritten in place: give ``--out``.
- Nothing is written unless every check passed; the page and ``report/summary.md`` come last.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import ArmRun, RunOutcome, evaluate_run
from pytest_sommelier.core.scorers import Scorer, resolve_scorers, scorer_identity
from pytest_sommelier.core.types import Suite
from pytest_sommelier.core.verdict import AgainstStored, stored_specs
from pytest_sommelier.data.digests import sha256_files, sha256_path
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import FOLDER, RECORD
from pytest_sommelier.data.store.history_gate import FailSpec
from pytest_sommelier.data.store.history_record import config_difference
from pytest_sommelier.data.store.history_verdict import look_up_stored, write_compared
from pytest_sommelier.data.store.runread import summary_inputs
from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm
from pytest_sommelier.data.suite.load import suite_identity
from pytest_sommelier.errors import InputError
from pytest_sommelier.numbers import whole_argument
from pytest_sommelier.view.ci_summary import summary_text
from pytest_sommelier.view.html import write_report
from pytest_sommelier.view.run_views import RUN_VIEWS

RESCORED = runlayout.RESCORED
RESCORED_SCHEMA = "sommelier.rescored.v1"


@dataclass
class Rescored:
    """What ``rescore`` wrote: the folder, the outcome (final verdict), the comparisons with
    stored runs, notes for the terminal and the ``rescored.json`` record."""

    target: Path
    outcome: RunOutcome
    against: AgainstStored
    record: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def generation_files(run_dir: Path, arms: Any) -> list[str]:
    """The generation files of a run's arms, relative to the run folder (sorted)."""
    names = []
    for arm in arms:
        for path in runlayout.arm_dir(Path(run_dir), arm).glob(runlayout.generations_name("*")):
            names.append(f"{runlayout.EVAL}/{arm}/{path.name}")
    return sorted(names)


def _refuse_stored_in_place(run_dir: Path, out_dir: Path | None) -> None:
    if out_dir is None and FOLDER.match(run_dir.name) and (run_dir / RECORD).is_file():
        raise InputError(
            "SOM-RESCORE-STORED",
            f"{run_dir}: a run of the run store is never rewritten in place",
            "give --out DIR for the rescored copy",
        )


def apply_suite(
    resolved: dict[str, Any], run_suite: Suite, current: Suite, identity: dict[str, Any]
) -> tuple[Suite, dict[str, Any], str | None]:
    """The run's suite and resolved suite with ``current``'s comparisons and gates
    (``identity`` is its ``suite_identity``), and a note naming the first other part of the
    suite that differs from the run (kept as the run's); ``InputError`` ``SOM-RESCORE-SUITE``
    when the suite is not about this run's split and slices."""
    split = (resolved.get("test_split") or {}).get("sha256")
    if identity["test_split"]["sha256"] != split:
        raise InputError(
            "SOM-RESCORE-SUITE",
            f"{current.path}: its test split {identity['test_split']['sha256'][:12]} is not the "
            f"run's {str(split)[:12]}",
            "rescore a run with the suite it was made from (its gates and comparisons may "
            "have changed; its split may not)",
        )
    if list(current.slices) != list(resolved.get("slices") or []):
        raise InputError(
            "SOM-RESCORE-SUITE",
            f"{current.path}: its slices {list(current.slices)} are not the run's "
            f"{list(resolved.get('slices') or [])}",
            "rescore a run with the suite it was made from",
        )
    suite = replace(run_suite, gates=current.gates, comparisons=current.comparisons)
    resolved = {**resolved, "gates": identity["gates"], "comparisons": identity["comparisons"]}
    change = config_difference(resolved, identity)
    note = (
        f"the suite now differs from the run in {change}; the run's conditions are kept "
        "(its generations were made under them)"
        if change
        else None
    )
    return suite, resolved, note


def run_scorers(run_suite: Suite, run_dir: Path) -> tuple[Scorer, ...]:
    """The scorers the run's suite enabled, from the installed ``sommelier.scorers`` entry
    points (``SOM-SCORER-UNKNOWN`` when one is not installed)."""
    if not run_suite.scorers:
        return ()
    from pytest_sommelier.data.suite.gates import GATE_METRICS
    from pytest_sommelier.registry import registry

    return resolve_scorers(
        run_suite.scorers,
        registry("scorers"),
        where=f"{runlayout.resolved(run_dir)}: scorers",
        reserved=GATE_METRICS,
    )


def same_scorer_versions(scorers: tuple[Scorer, ...], run_dir: Path, arms: Any) -> bool:
    """Whether every stored arm report recorded exactly these scorers' versions: then a
    recorded score must be what the scorer gives again (an impure scorer is refused)."""
    if not scorers:
        return False
    current = scorer_identity(scorers)
    for name in arms:
        report = artifacts.read_json(runlayout.arm_report(runlayout.arm_dir(run_dir, name)))
        if not isinstance(report, dict) or report.get("scorers") != current:
            return False
    return True


def scorer_version_notes(scorers: tuple[Scorer, ...], run_dir: Path, arms: Any) -> list[str]:
    """One note per scorer whose version differs from the one the run recorded: ``rescore``
    recomputes its scores under the installed version (the rescored run then compares only
    with runs of that version), and says so rather than upgrading silently."""
    current = {s.name: s.version for s in scorers}
    notes: list[str] = []
    for name in arms:
        report = artifacts.read_json(runlayout.arm_report(runlayout.arm_dir(run_dir, name)))
        recorded = report.get("scorers") if isinstance(report, dict) else None
        for entry in recorded if isinstance(recorded, list) else ():
            scorer = entry.get("name") if isinstance(entry, dict) else None
            before = entry.get("version") if isinstance(entry, dict) else None
            if scorer in current and before != current[scorer]:
                note = (
                    f"scorer {scorer}: the run recorded version {before}, rescored with version "
                    f"{current[scorer]} (its scores are recomputed; the rescored run compares "
                    f"only with runs scored by {current[scorer]})"
                )
                notes += [note] if note not in notes else []
    return notes


def rescore(
    run_dir: Path,
    out_dir: Path | None = None,
    *,
    suite: Suite | None = None,
    store: Path | None = None,
    flips: int = 10,
    by: str = "pytest-sommelier",
    compare: str | None = None,
    fail_specs: Sequence[FailSpec] = (),
) -> Rescored:
    """Re-derive every report and the verdict of ``run_dir`` from stored ``raw_text`` (under
    ``suite``'s comparisons and gates when given), evaluate its ``stored`` gates (and, with
    ``compare``, the compare-fail ``fail_specs`` against that stored run) against
    ``store``, and write reports, verdict, ``rescored.json``, the page and the summary into
    ``out_dir`` (default: in place); ``by`` names the tool and its version in the record."""
    run_dir = Path(run_dir)
    _refuse_stored_in_place(run_dir, out_dir)
    resolved, run_suite, split = load_run_inputs(run_dir)
    notes: list[str] = []
    scored = run_suite
    if suite is not None:
        scored, resolved, note = apply_suite(resolved, run_suite, suite, suite_identity(suite))
        notes += [note] if note else []
    arms: dict[str, ArmRun] = {}
    for name in run_suite.arms:
        arm_dir = runlayout.arm_dir(run_dir, name)
        if arm_dir.is_dir():
            arms[name] = stored_arm(run_suite, split, arm_dir)
    record = {
        "schema_version": RESCORED_SCHEMA,
        "rescored_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "by": by,
        "from": {"folder": str(run_dir), "run_id": resolved.get("run_id")},
        "generations_sha256": sha256_files(run_dir, generation_files(run_dir, arms)),
        "suite": None
        if suite is None
        else {"file": suite.path.name, "sha256": sha256_path(suite.path)},
    }
    scorers = run_scorers(run_suite, run_dir)
    notes += scorer_version_notes(scorers, run_dir, arms)
    target = out_dir or run_dir
    in_place = target.resolve() == run_dir.resolve()
    # everything is checked before anything is written: the run is written whole (page and
    # summary included, the page's record checks being the last checks) into a staging folder
    # of the target's name; only then is the target claimed and the staged files installed
    with tempfile.TemporaryDirectory(prefix="sommelier-rescore-") as folder:
        stage = Path(folder) / target.name
        store_dir = Path(store or ".sommelier")
        evidence = look_up_stored(
            stage,
            store_dir,
            stored_specs(scored, compare),
            suite=scored.name,
            resolved=artifacts.stored_resolved(resolved, split),
            flips=flips,
        )
        outcome = evaluate_run(
            scored,
            split,
            arms,
            run_id=resolved.get("run_id", run_dir.name),
            model=resolved["model"],
            gates=True,
            scorers=scorers,
            compare_stored=same_scorer_versions(scorers, run_dir, arms),
            stored=evidence,
            compare=compare,
            fail_specs=fail_specs,
        )
        against = outcome.against or AgainstStored(suite=scored.name, store=store_dir, flips=flips)
        artifacts.write_outcome(
            stage,
            replace(outcome, verdict=None),
            resolved=resolved,
            split=split,
            comparison_markdown=RUN_VIEWS.outcome_markdown(outcome),
        )
        artifacts.atomic_write_json(runlayout.rescored(stage), record)
        write_compared(stage, against, RUN_VIEWS.compare_markdown)
        verdict = outcome.verdict
        if verdict is not None:  # once, after the comparisons; the page and summary read it
            artifacts.write_verdict(stage, verdict)
        write_report(stage)
        write_summary(stage, stores=[target, Path(store or ".sommelier")])
        # in place: keep generations and inputs until replaced; elsewhere: a fresh folder
        with artifacts.claim_run(target, keep_generations=in_place):
            artifacts.install_run(stage, target)
    return Rescored(target=target, outcome=outcome, against=against, record=record, notes=notes)


# --- the subcommand ----------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """``sommelier rescore RUN_DIR [--suite FILE]``: re-derive every report and the verdict from
    raw_text (under the suite's current gates and comparisons when given); the same tables as a
    session's summary."""
    from pytest_sommelier import __version__
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data.store.history_gate import parse_fail_specs
    from pytest_sommelier.data.store.outputs import FOLDER_KIND, check_output, check_step_summary
    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.view import terminal
    from pytest_sommelier.view.compare import against_lines

    if args.out:
        check_output(
            args.out,
            kind=FOLDER_KIND,
            inputs=[args.run_dir, args.suite, args.store],
            stores=[args.store],
            where="--out",
        )
    check_step_summary(  # before any work, as every output path
        run_dir=args.out or args.run_dir, stores=[args.store or ".sommelier", args.run_dir]
    )
    suite = load_suite(args.suite) if args.suite else None
    specs = parse_fail_specs(args.compare_fail or [], option="--compare-fail")
    if specs and args.compare is None:
        raise InputError(
            "SOM-HISTORY-FAIL-SPEC",
            "--compare-fail needs --compare (the stored run to compare with)",
            "e.g. --compare last --compare-fail full_call_exact_match:0.02",
        )
    done = rescore(
        Path(args.run_dir),
        Path(args.out) if args.out else None,
        suite=suite,
        store=Path(args.store),
        flips=args.misses,
        by=f"pytest-sommelier {__version__}",
        compare=args.compare,
        fail_specs=specs,
    )
    for note in done.notes:
        print(f"note: {note}")
    for line, _ in terminal.run_summary_lines(
        done.outcome, done.target, 0, args.misses, stored=against_lines(done.against)
    ):
        print(line)
    for error in done.against.errors():
        print(f"sommelier rescore: {error}", file=sys.stderr)
    record = done.record
    print(
        f"rescored by {record['by']} from generations sha256 "
        f"{record['generations_sha256'][:12]} ({runlayout.rescored(done.target)})"
    )
    print(f"re-derived reports and verdict written to {done.target}")
    print(f"HTML report: {runlayout.page(done.target)}")
    verdict = done.outcome.verdict["verdict"] if done.outcome.verdict else "pass"
    return 0 if verdict == "pass" else 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier rescore``."""
    parser = subparsers.add_parser(
        "rescore",
        help="re-derive every report and the verdict of a run from its stored raw_text",
        description="Re-parse and re-score a stored run (no model), after the same consistency "
        "checks as a live run, under the run's own gates and comparisons or, with --suite, the "
        "suite file's current ones (its split and slices must be the run's). Prints the same "
        "tables as a session and records the rescore in rescored.json. Exit 0 when the "
        "verdict passes, 1 when it fails or is incomplete.",
    )
    parser.add_argument("run_dir", help="a run directory (runs/<run_id>)")
    parser.add_argument("--suite", default=None, help="apply this suite's gates and comparisons")
    parser.add_argument("--out", default=None, help="write there instead of in place")
    parser.add_argument(
        "--store", default=".sommelier", help="the run store for stored gates (default .sommelier)"
    )
    parser.add_argument(
        "--misses",
        type=whole_argument(0),
        default=10,
        help="misses and flipped examples shown (default 10)",
    )
    parser.add_argument(
        "--compare", default=None, metavar="NUM|last",
        help="compare with this stored run, as the session's --sommelier-compare",
    )  # fmt: skip
    parser.add_argument(
        "--compare-fail", action="append", default=None, metavar="METRIC[:SLICE]:MARGIN",
        help="a regression gate against --compare's run, as --sommelier-compare-fail "
        "(repeatable)",
    )  # fmt: skip
    parser.set_defaults(handler=run)



def summary_markdown(run_dir: Path, compares: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The Markdown summary of the stored run in ``run_dir``, read by the store
    (``data.store.runread.summary_inputs``) and rendered by ``view.ci_summary``; ``compares``
    are comparisons with stored runs (default: every ``report/compare-*.json``)."""
    inputs = summary_inputs(Path(run_dir))
    if compares is not None:
        inputs = replace(inputs, compares=[dict(report) for report in compares])
    return summary_text(inputs)


def write_summary(
    run_dir: Path,
    compares: Sequence[Mapping[str, Any]] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stores: Sequence[Path | None] = (),
) -> Path:
    """Write the summary of the stored run in ``run_dir`` (``data.store.outputs.write_summary``:
    ``report/summary.md`` and ``$GITHUB_STEP_SUMMARY``, never inside ``run_dir`` or ``stores``);
    returns the summary's path."""
    from pytest_sommelier.data.store.outputs import write_summary as write_run_summary

    return write_run_summary(
        Path(run_dir), summary_markdown(Path(run_dir), compares), environ=environ, stores=stores
    )


__all__ = [
    "RESCORED",
    "Rescored",
    "add_parser",
    "apply_suite",
    "generation_files",
    "rescore",
    "run",
    "scorer_version_notes",
]
