"""The store's runs over time as values: what ``sommelier history``'s table and ``history.html``
show, read from the store.

``history_runs(store)`` reads, for every stored run, its index entry, its arms' evaluation
reports and its ``stored_run.json`` (value intervals), and marks each arm of each run that
cannot be compared with the previous comparable run of its suite: incomplete, another kind of
arm, or refused by the identity gate (``core.report_identity.check_identity``, whose field is
named). The views (``view.history_page``) render these values and read nothing themselves.

A training callback's runs (an entry with ``training``) are grouped into training runs
(:func:`training_lines`): one ``Trainer.train()`` each, by the id the callback records
(``training.run``, kept across ``resume_from_checkpoint``); a store written before that id
was recorded is split where a step does not rise. A sampled and a full evaluation are never
one training run. "Adapter changed" compares the adapters' content only
(``core.report_identity.adapter_differs``: the digest, not the arm's name or preflight).

Invariants kept: every number is read from a stored report or record (nothing is re-scored
here); comparability is decided only by the identity gate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.call_sets import CALL_SET_ADDED
from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.report_identity import adapter_differs, check_identity
from pytest_sommelier.core.types import EvaluationReport
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import StoredRun, read_record, stored_runs
from pytest_sommelier.data.store.history_record import arm_reports, identity_field
from pytest_sommelier.errors import EvaluationError

OVERALL = "overall"


def _scorer_names(report: Mapping[str, Any]) -> list[str]:
    """The extension scorers the arm's report records (``scorers``: name, version, kind), in
    name order; none for a run without scorers."""
    entries = report.get("scorers") or []
    return sorted(str(e["name"]) for e in entries if isinstance(e, Mapping) and "name" in e)


def _values(report: Mapping[str, Any], record: Mapping[str, Any], arm: str) -> dict:
    """``{slice: {metric: {value, lower, upper}}}`` of one arm: the five (then parser v2's
    added metrics, for a v2 run), then each scorer the
    report records (its metric as the report holds it; a run without scorers has the five
    alone), values from its report, intervals from the stored record (None where the record
    has none)."""
    intervals = ((record.get("intervals") or {}).get(arm)) or {}
    overall = report.get("metrics") or {}
    added = [name for name in CALL_SET_ADDED if name in overall]  # parser v2's, when it ran
    names = [*METRIC_NAMES, *added, *_scorer_names(report)]
    blocks = [*((lang, b.get("metrics") or {}) for lang, b in (report.get("slices") or {}).items())]
    blocks.append((OVERALL, report.get("metrics") or {}))
    out: dict[str, dict[str, Any]] = {}
    for label, metrics in blocks:
        out[label] = {}
        for metric in names:
            value = (metrics.get(metric) or {}).get("value")
            interval = (intervals.get(label) or {}).get(metric) or {}
            out[label][metric] = {
                "value": value,
                "lower": interval.get("lower"),
                "upper": interval.get("upper"),
            }
    return out


Previous = tuple[StoredRun, Mapping[str, Any], Mapping[str, Any]]
"""The previous comparable run of an arm: the run, the arm's report, the resolved suite."""


def _mark(
    previous: Previous | None,
    run: StoredRun,
    arm: str,
    report: Mapping[str, Any],
    resolved: Mapping[str, Any],
) -> dict[str, Any] | None:
    """Why this arm of ``run`` is not comparable with its previous comparable run (or None)."""
    if not run.comparable:
        return {"kind": "incomplete", "field": "complete", "text": "incomplete: never comparable"}
    if previous is None:
        return None
    prev_run, prev_report, prev_resolved = previous
    if prev_report.get("model_kind") != report.get("model_kind"):
        return {
            "kind": "identity",
            "field": "model_kind",
            "text": f"not comparable with {prev_run.label}: model_kind "
            f"{prev_report.get('model_kind')} -> {report.get('model_kind')}",
        }
    try:
        check_identity(
            cast(EvaluationReport, {**report, "arm": arm}),
            cast(EvaluationReport, {**prev_report, "arm": f"{arm}@{prev_run.label}"}),
        )
    except EvaluationError as error:
        field = identity_field(error, prev_resolved, resolved)
        return {
            "kind": "identity",
            "field": field,
            "text": f"not comparable with {prev_run.label}: {field} changed",
            "detail": error.message,
        }
    return None


def history_runs(store: Path) -> list[dict[str, Any]]:
    """Every stored run, in number order, with what the table and the page show: entry
    fields, each arm's values and intervals, and per arm the comparability mark and whether
    the adapter changed since the previous comparable run of the same suite."""
    runs = stored_runs(store)
    previous: dict[tuple[str, str], Previous] = {}
    out = []
    for run in runs:
        resolved_path = runlayout.resolved(run.path)
        resolved = artifacts.read_json(resolved_path) if resolved_path.is_file() else {}
        resolved = resolved if isinstance(resolved, dict) else {}
        reports = arm_reports(run.path, resolved)
        record = read_record(run)
        arms: dict[str, Any] = {}
        for arm, report in reports.items():
            key = (str(run.suite), arm)
            mark = _mark(previous.get(key), run, arm, report, resolved)
            before = previous.get(key)
            adapter_changed = before is not None and adapter_differs(
                before[1].get("adapter_identity"), report.get("adapter_identity")
            )
            arms[arm] = {
                "model_kind": report.get("model_kind"),
                "values": _values(report, record, arm),
                "mark": mark,
                "adapter_changed": bool(adapter_changed and mark is None),
            }
            if run.comparable:
                previous[key] = (run, report, resolved)
        page = runlayout.page(run.path)
        git = run.entry.get("git") or {}
        out.append(
            {
                "number": run.number,
                "label": run.label,
                "folder": run.entry["folder"],
                "path": run.path,
                "suite": run.suite,
                "saved_at": run.entry.get("saved_at"),
                "time": _time(run.entry.get("saved_at")),
                "commit": run.commit,
                "branch": git.get("branch"),
                "dirty": bool(git.get("dirty")),
                "verdict": run.entry.get("verdict"),
                "comparable": run.comparable,
                "run_id": run.entry.get("run_id"),
                "run_label": run.entry.get("label"),
                "adapters": run.entry.get("adapters") or {},
                "page": page if page.is_file() else None,
                "slices": [*(resolved.get("slices") or []), OVERALL],
                "arms": arms,
                "training": run.entry.get("training"),  # a training callback's run
                "sample": (resolved.get("test_split") or {}).get("sample"),  # a seeded sample
            }
        )
    for entry, line in zip(out, training_lines(out), strict=True):
        entry["training_run"] = line
    return out


def training_lines(runs: Sequence[Mapping[str, Any]]) -> list[int | None]:
    """Per run (``suite``, ``training``, ``sample`` as :func:`history_runs` gives them), the
    number of its training run within its suite (1, 2, ... in order of first appearance), or
    None for a run that is no training callback's. Runs are one training run when they share
    the suite, the trained arm, the sample (or both are full) and the recorded id
    (``training.run``); runs without a recorded id (stored before it was recorded) of the same
    suite, arm and sample are one training run while their steps rise."""
    keys: dict[str, dict[tuple[Any, ...], int]] = {}
    chains: dict[tuple[Any, ...], tuple[int, int]] = {}  # unnamed chain -> (number, last step)
    out: list[int | None] = []
    counted = 0
    for run in runs:
        training = run.get("training")
        if not isinstance(training, Mapping) or not isinstance(training.get("step"), int):
            out.append(None)
            continue
        suite = str(run.get("suite"))
        step = int(training["step"])
        base = (str(training.get("arm")), sha256_json(run.get("sample")))
        named = training.get("run")
        if isinstance(named, str) and named:
            key: tuple[Any, ...] = (*base, "id", named)
        else:
            number, last = chains.get((suite, *base), (0, step))
            if number == 0 or step <= last:
                counted += 1  # a new chain, under a number no other chain has
                number = counted
            chains[(suite, *base)] = (number, step)
            key = (*base, "chain", number)
        numbers = keys.setdefault(suite, {})
        out.append(numbers.setdefault(key, len(numbers) + 1))
    return out


def _time(saved_at: Any) -> str:
    """``2026-12-01 10:15Z`` from ``2026-12-01T10:15:00Z`` (the text as it is otherwise)."""
    text = str(saved_at or "")
    return text[:16].replace("T", " ") + "Z" if len(text) >= 16 else text


__all__ = ["OVERALL", "history_runs", "training_lines"]
