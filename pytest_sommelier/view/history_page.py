"""The store's runs over time: the ``sommelier history`` table and the ``history.html`` page.

``history_runs(store)`` reads, for every stored run, its index entry, its arms' evaluation
reports and its ``stored_run.json`` (value intervals), and marks each arm of each run that
cannot be compared with the previous comparable run of its suite: incomplete, another kind of
arm, or refused by the identity gate (``core.report_identity.check_identity``, whose field is
named).
``history_lines`` renders the terminal table; ``render_history``/``write_history`` the page.

Invariants kept: every number shown is read from a stored report or record (nothing is
re-scored here); comparability is decided only by the identity gate; the page is one
self-contained file rendered with autoescaping and no script at all, under a
Content-Security-Policy that allows only its own style block (no network, no other file);
stored text (suite names, branches, reasons) is shown as text.
"""

from __future__ import annotations

import base64
import hashlib
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import jinja2

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.report_identity import check_identity
from pytest_sommelier.core.types import EvaluationReport
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import PAGE, StoredRun, read_record, stored_runs
from pytest_sommelier.data.store.history_record import arm_reports, identity_field
from pytest_sommelier.errors import EvaluationError
from pytest_sommelier.view.text import SHORT, fmt, fmt_interval, table

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "templates"
OVERALL = "overall"


# --- reading the store ---------------------------------------------------------------------


def _values(report: Mapping[str, Any], record: Mapping[str, Any], arm: str) -> dict:
    """``{slice: {metric: {value, lower, upper}}}`` of one arm: values from its report,
    intervals from the stored record (None where the record has none)."""
    intervals = ((record.get("intervals") or {}).get(arm)) or {}
    blocks = [*((lang, b.get("metrics") or {}) for lang, b in (report.get("slices") or {}).items())]
    blocks.append((OVERALL, report.get("metrics") or {}))
    out: dict[str, dict[str, Any]] = {}
    for label, metrics in blocks:
        out[label] = {}
        for metric in METRIC_NAMES:
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
            adapter_changed = before is not None and sha256_json(
                before[1].get("adapter_identity")
            ) != sha256_json(report.get("adapter_identity"))
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
            }
        )
    return out


def _time(saved_at: Any) -> str:
    """``2026-12-01 10:15Z`` from ``2026-12-01T10:15:00Z`` (the text as it is otherwise)."""
    text = str(saved_at or "")
    return text[:16].replace("T", " ") + "Z" if len(text) >= 16 else text


# --- the terminal table --------------------------------------------------------------------


def history_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table ``sommelier history`` prints: one row per run, arm and slice (run columns on
    its first row), the five metrics; then one line per non-comparable arm."""
    header = ["run", "commit", "time", "suite", "verdict", "arm", "slice"]
    header += [SHORT[m] for m in METRIC_NAMES]
    rows = []
    for run in runs:
        commit = (run["commit"] or "-") + ("-dirty" if run["dirty"] else "")
        first = [run["label"], commit, run["time"], str(run["suite"]), run["verdict"] or "-"]
        lead = first
        for arm, data in run["arms"].items():
            for label, metrics in data["values"].items():
                cells = [fmt(metrics[m]["value"]) for m in METRIC_NAMES]
                rows.append([*lead, arm, label, *cells])
                lead = [""] * len(first)
        if not run["arms"]:
            rows.append([*first, "-", "-", *["-"] * len(METRIC_NAMES)])
    lines = table(header, rows) if rows else ["no stored runs"]
    for run in runs:
        used = [f"{arm} {text}" for arm, text in (run.get("adapters") or {}).items() if text]
        if used or run.get("run_label"):
            named = f" (label {run['run_label']})" if run.get("run_label") else ""
            lines.append(f"adapters of {run['label']}{named}: " + (", ".join(used) or "none"))
        for arm, data in run["arms"].items():
            if data["mark"]:
                lines.append(f"{run['label']} {arm}: {data['mark']['text']}")
            elif data["adapter_changed"]:
                lines.append(f"{run['label']} {arm}: adapter changed")
    return lines


# --- the page ------------------------------------------------------------------------------

LEFT, RIGHT, TOP, HEIGHT, BOTTOM, STEP = 44.0, 16.0, 14.0, 150.0, 34.0, 56.0


def _y(value: float) -> float:
    return round(TOP + (1.0 - value) * HEIGHT, 2)


def chart(runs: Sequence[Mapping[str, Any]], arms: Sequence[str], metric: str, slice_: str) -> dict:
    """Geometry of one chart: per arm, a point per run with its interval, joined by lines
    that break where the identity gate refuses a run against the previous comparable one (an
    incomplete run is drawn hollow and joined to nothing); the breaks, marked."""
    width = LEFT + RIGHT + STEP * max(len(runs), 1)
    xs = [round(LEFT + STEP * (i + 0.5), 2) for i in range(len(runs))]
    series = []
    for index, arm in enumerate(arms):
        points: list[dict[str, Any]] = []
        segments: list[list[str]] = []
        current: list[str] = []  # the points of one line, as "x,y"
        offset = (index - (len(arms) - 1) / 2) * 5.0  # arms side by side at each run
        for base_x, run in zip(xs, runs, strict=True):
            x = round(base_x + offset, 2)
            data = run["arms"].get(arm)
            value = (((data or {}).get("values") or {}).get(slice_) or {}).get(metric) or {}
            if data is None or value.get("value") is None:
                if current:
                    segments.append(current)
                current = []
                continue
            mark = data["mark"]
            if mark is not None and mark["kind"] != "incomplete" and current:
                segments.append(current)  # an identity change breaks the line
                current = []
            point = {
                "x": x,
                "y": _y(value["value"]),
                "run": run["label"],
                "incomplete": not run["comparable"],
                "title": f"{run['label']} {arm} {metric} [{slice_}]: {fmt(value['value'])} "
                f"{fmt_interval(value) if value.get('lower') is not None else '(no interval)'}",
            }
            if value.get("lower") is not None and value.get("upper") is not None:
                point["y1"], point["y2"] = _y(value["lower"]), _y(value["upper"])
            points.append(point)
            if run["comparable"]:
                current.append(f"{x},{point['y']}")
        if current:
            segments.append(current)
        series.append(
            {
                "arm": arm,
                "index": index % 6,
                "points": points,
                "lines": [" ".join(s) for s in segments if len(s) > 1],
            }
        )
    breaks = []
    for x, run in zip(xs, runs, strict=True):
        fields = sorted(
            {f"{arm}: {data['mark']['field']}" for arm, data in run["arms"].items() if data["mark"]}
        )
        if fields:
            incomplete = not run["comparable"]
            breaks.append(
                {
                    "x": round(x - STEP / 2, 2),
                    "run": run["label"],
                    "kind": "incomplete" if incomplete else "identity",
                    "text": "incomplete" if incomplete else "; ".join(fields),
                }
            )
    return {
        "metric": metric,
        "slice": slice_,
        "width": width,
        "height": TOP + HEIGHT + BOTTOM,
        "left": LEFT,
        "right": width - RIGHT,
        "top": TOP,
        "bottom": TOP + HEIGHT,
        "ticks": [{"y": _y(v), "label": f"{v:.2f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "xs": [{"x": x, "label": run["label"]} for x, run in zip(xs, runs, strict=True)],
        "series": series,
        "breaks": breaks,
    }


def _href(target: Path, page: Path) -> str:
    """A relative link from ``page`` to ``target`` (percent-encoded)."""
    relative = os.path.relpath(target.resolve(), page.resolve().parent)
    return urllib.parse.quote(Path(relative).as_posix())


def build_history_context(
    store: Path, page: Path, runs: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Everything ``history.html.j2`` shows, grouped by suite (first stored run first);
    ``runs`` is :func:`history_runs` of the store when already read."""
    runs = history_runs(store) if runs is None else runs
    suites: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        run["href"] = _href(run["page"], page) if run["page"] is not None else None
        suites.setdefault(str(run["suite"]), []).append(run)
    groups = []
    for suite, members in suites.items():
        arms = list(dict.fromkeys(arm for run in members for arm in run["arms"]))
        slices = list(dict.fromkeys(s for run in members for s in run["slices"]))
        slices = [s for s in slices if s != OVERALL] + [OVERALL]
        groups.append(
            {
                "suite": suite,
                "runs": members,
                "arms": [{"name": arm, "index": i % 6} for i, arm in enumerate(arms)],
                "charts": [
                    {"metric": metric, "charts": [chart(members, arms, metric, s) for s in slices]}
                    for metric in METRIC_NAMES
                ],
            }
        )
    return {"store": str(store), "count": len(runs), "groups": groups}


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_history(
    store: Path, page: Path | None = None, runs: list[dict[str, Any]] | None = None
) -> str:
    """The self-contained ``history.html`` of ``store`` (links relative to ``page``, default
    ``<store>/history.html``)."""
    store = Path(store)
    where = Path(page) if page is not None else store / PAGE
    context = build_history_context(store, where, runs)
    style = (TEMPLATES / "history.css").read_text(encoding="utf-8")
    context["style"] = style
    context["csp"] = (
        f"default-src 'none'; style-src {_csp_hash(style)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    return env.get_template("history.html.j2").render(**context)


def write_history(
    store: Path, out: Path | None = None, runs: list[dict[str, Any]] | None = None
) -> Path:
    """Write the page atomically to ``out`` (default ``<store>/history.html``); returns it."""
    store = Path(store)
    target = Path(out) if out is not None else store / PAGE
    artifacts.atomic_write_text(target, render_history(store, target, runs))
    return target


__all__ = [
    "build_history_context",
    "chart",
    "history_lines",
    "history_runs",
    "render_history",
    "write_history",
]
