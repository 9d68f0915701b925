"""The run-folder layout: the one place a path inside a run folder is spelled.

A run folder (``runs/<run_id>``, or ``runs/<run_id>/<suite>`` when one session ran several
suites) holds::

    suite.resolved.json                      the resolved suite (data.suite.identity)
    inputs/test_split.jsonl                  a copy of the formatted split
    eval/<arm>/generations.<slice>.jsonl     generation records, split order
    eval/<arm>/inference_telemetry.json      timings and device of the arm's generation
    eval/<arm>/rebatched.jsonl               the noise floor's re-batched outputs (core.noise)
    eval/<arm>/evaluation_report.json        the arm report
    report/<comparison>.json, .md            comparison reports (and compare-<NNNN>.json/.md)
    report/summary.md                        the CI step summary
    gate_verdict.json                        the gate results, written last
    rescored.json                            only in a rescored run (sommelier rescore)
    report.html                              the page (sommelier report)
    parity/<engine>.json                     sommelier parity reports

Invariant kept: every function here is pure (no file is read or written; the run store,
``data.store.artifacts``, does that through these paths), and every module that reads or writes a
run builds its paths here, so a file's name changes in one place. The layout lives in ``core``
because the arm report records its generation files' run-relative paths
(:func:`generations_artifact`).
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_ROOT = "runs"
"""Where a session writes its runs (``<invocation dir>/runs/<run_id>``) unless told."""

RESOLVED = "suite.resolved.json"
SPLIT_COPY = "inputs/test_split.jsonl"
EVAL = "eval"
ARM_REPORT = "evaluation_report.json"
TELEMETRY = "inference_telemetry.json"
REBATCHED = "rebatched.jsonl"
REPORT = "report"
SUMMARY = f"{REPORT}/summary.md"
VERDICT = "gate_verdict.json"
PAGE = "report.html"
RESCORED = "rescored.json"
PARITY = "parity"


def resolved(run_dir: Path) -> Path:
    """``suite.resolved.json``: the file whose presence makes a folder one suite's run."""
    return run_dir / RESOLVED


def split_copy(run_dir: Path) -> Path:
    """``inputs/test_split.jsonl``: the run's copy of the formatted split."""
    return run_dir / SPLIT_COPY


def eval_dir(run_dir: Path) -> Path:
    """``eval/``: one folder per arm."""
    return run_dir / EVAL


def arm_dir(run_dir: Path, arm: str) -> Path:
    """``eval/<arm>/``."""
    return run_dir / EVAL / arm


def run_of_arm(arm_folder: Path) -> Path:
    """The run folder an arm folder ``<run>/eval/<arm>`` sits in (not checked to be one)."""
    return arm_folder.resolve().parent.parent


def is_arm_path(arm_folder: Path) -> bool:
    """Whether ``arm_folder`` is named as an arm folder of a run (``.../eval/<arm>``)."""
    return arm_folder.parent.name == EVAL


def arm_report(arm_folder: Path) -> Path:
    """``eval/<arm>/evaluation_report.json``."""
    return arm_folder / ARM_REPORT


def telemetry(arm_folder: Path) -> Path:
    """``eval/<arm>/inference_telemetry.json``."""
    return arm_folder / TELEMETRY


def rebatched(arm_folder: Path) -> Path:
    """``eval/<arm>/rebatched.jsonl``: the noise floor's re-batched outputs of a reference arm."""
    return arm_folder / REBATCHED


def generations(arm_folder: Path, slice_name: str) -> Path:
    """``eval/<arm>/generations.<slice>.jsonl``."""
    return arm_folder / generations_name(slice_name)


def generations_name(slice_name: str) -> str:
    """``generations.<slice>.jsonl``: a generations file's name inside its arm folder."""
    return f"generations.{slice_name}.jsonl"


def generations_artifact(arm: str, slice_name: str) -> str:
    """``eval/<arm>/generations.<slice>.jsonl`` relative to the run folder, as an arm report's
    ``generation_artifact`` records it (always with ``/``)."""
    return f"{EVAL}/{arm}/{generations_name(slice_name)}"


def report_dir(run_dir: Path) -> Path:
    """``report/``: the comparison reports and the CI summary."""
    return run_dir / REPORT


def report_files(folder: Path, name: str) -> tuple[Path, Path]:
    """``<folder>/<name>.json`` and ``<folder>/<name>.md``: one comparison report, as data and
    as Markdown (``folder`` is a run's ``report/`` or a folder the user named)."""
    return folder / f"{name}.json", folder / f"{name}.md"


def comparison_report(run_dir: Path, name: str) -> Path:
    """``report/<name>.json``."""
    return report_files(report_dir(run_dir), name)[0]


def summary(run_dir: Path) -> Path:
    """``report/summary.md``."""
    return run_dir / SUMMARY


def verdict(run_dir: Path) -> Path:
    """``gate_verdict.json``."""
    return run_dir / VERDICT


def rescored(run_dir: Path) -> Path:
    """``rescored.json``: when, by what and from what ``sommelier rescore`` re-scored the run."""
    return run_dir / RESCORED


def page(run_dir: Path) -> Path:
    """``report.html``."""
    return run_dir / PAGE


def parity_report(run_dir: Path, engine: str) -> Path:
    """``parity/<engine>.json``."""
    return run_dir / PARITY / f"{engine}.json"


def is_run_file(run_dir: Path, path: Path) -> bool:
    """Whether ``path`` (both resolved by the caller) is, or would be, one of the files the run
    itself owns in ``run_dir``: its resolved suite, verdict, split copy, or anything under
    ``eval/``, ``report/``, ``inputs/`` or ``parity/`` (the page is not: it is re-rendered).
    Pure: compares paths only."""
    try:
        parts = path.relative_to(run_dir).parts
    except ValueError:
        return False
    if not parts:
        return True
    owned_folders = {EVAL, REPORT, PARITY, Path(SPLIT_COPY).parts[0]}
    return parts[0] in owned_folders or parts == (RESOLVED,) or parts == (VERDICT,)

