"""The store's runs over time: the ``sommelier history`` table and the ``history.html`` page.

It renders the values ``data.store.history_runs.history_runs(store)`` reads (each stored run's
entry, each arm's values and intervals, the comparability marks) and reads no file itself
(its own templates aside): ``history_lines`` renders the terminal table, ``render_history``
the page; ``commands.history.write_page`` joins the reading, the rendering and the writing.

Invariants kept: every number shown is a value it is given (nothing is re-scored or read
here); the page is one
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
from typing import Any

import jinja2

from pytest_sommelier.core.metrics import FULL_CALL_EXACT_MATCH, METRIC_NAMES
from pytest_sommelier.data.store.history import PAGE
from pytest_sommelier.view.text import (
    SHORT,
    fmt,
    fmt_interval,
    sample_text,
    table,
    union_scorer_metrics,
)

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "templates"
OVERALL = "overall"


# --- the terminal table --------------------------------------------------------------------


def _scorers_of(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every extension scorer metric any arm of ``runs`` has, in name order (the columns and
    charts after the five; none when no run has a scorer)."""
    return union_scorer_metrics(
        metrics
        for run in runs
        for data in run["arms"].values()
        for metrics in data["values"].values()
    )


def history_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table ``sommelier history`` prints: one row per run, arm and slice (run columns on
    its first row), the five metrics, then a column per extension scorer any run has (``-``
    where a run's arm was not scored with it); then one line per non-comparable arm."""
    scorers = _scorers_of(runs)
    header = ["run", "commit", "time", "suite", "verdict", "arm", "slice"]
    header += [SHORT[m] for m in METRIC_NAMES] + scorers
    rows = []
    for run in runs:
        commit = (run["commit"] or "-") + ("-dirty" if run["dirty"] else "")
        sampled = sample_text({"test_split": {"sample": run.get("sample")}})
        verdict = (run["verdict"] or "-") + (" (sample)" if sampled else "")
        first = [run["label"], commit, run["time"], str(run["suite"]), verdict]
        lead = first
        for arm, data in run["arms"].items():
            for label, metrics in data["values"].items():
                cells = [fmt(metrics[m]["value"]) for m in METRIC_NAMES]
                cells += [fmt(metrics[m]["value"]) if m in metrics else "-" for m in scorers]
                rows.append([*lead, arm, label, *cells])
                lead = [""] * len(first)
        if not run["arms"]:
            rows.append([*first, "-", "-", *["-"] * (len(METRIC_NAMES) + len(scorers))])
    lines = table(header, rows) if rows else ["no stored runs"]
    for run in runs:
        sampled = sample_text({"test_split": {"sample": run.get("sample")}})
        if sampled:
            lines.append(f"{run['label']}: {sampled}")
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


CURVE_WIDTH = 520.0
SELECTED_BY = FULL_CALL_EXACT_MATCH


def checkpoint_curve(runs: Sequence[Mapping[str, Any]]) -> dict | None:
    """The checkpoints of a suite's training-callback runs (store records with
    ``checkpoint``) as one chart: step on the x axis, one line per metric of the trained
    arm's overall value with its interval, the selected checkpoint (the highest
    ``full_call_exact_match``, the first on ties) marked; None without such runs. A step
    evaluated twice (two training runs) shows its latest run."""
    latest: dict[int, Mapping[str, Any]] = {}
    for run in runs:
        training = run.get("training")
        if isinstance(training, Mapping) and isinstance(training.get("step"), int):
            latest[int(training["step"])] = run
    if not latest:
        return None
    steps = sorted(latest)
    low, high = steps[0], steps[-1]
    span = max(high - low, 1)

    def x_of(step: int) -> float:
        return round(LEFT + (step - low) / span * (CURVE_WIDTH - LEFT - RIGHT), 2)

    series = []
    best: tuple[float, int] | None = None
    for index, metric in enumerate(METRIC_NAMES):
        points: list[dict[str, Any]] = []
        for step in steps:
            run = latest[step]
            arm = str(run["training"].get("arm") or "")
            value = ((((run["arms"].get(arm) or {}).get("values") or {}).get(OVERALL)) or {}).get(
                metric
            ) or {}
            if value.get("value") is None:
                continue
            point = {
                "x": x_of(step),
                "y": _y(value["value"]),
                "step": step,
                "run": run["label"],
                "title": f"step {step} ({run['label']}) {arm} {metric}: {fmt(value['value'])} "
                f"{fmt_interval(value) if value.get('lower') is not None else '(no interval)'}",
            }
            if value.get("lower") is not None and value.get("upper") is not None:
                point["y1"], point["y2"] = _y(value["lower"]), _y(value["upper"])
            points.append(point)
            if metric == SELECTED_BY and (best is None or value["value"] > best[0]):
                best = (value["value"], step)
        line = " ".join(f"{p['x']},{p['y']}" for p in points)
        series.append({"metric": metric, "index": index % 6, "points": points, "line": line})
    selected = None if best is None else {"step": best[1], "x": x_of(best[1]),
                                          "run": latest[best[1]]["label"]}
    return {
        "width": CURVE_WIDTH,
        "height": TOP + HEIGHT + BOTTOM,
        "left": LEFT,
        "right": CURVE_WIDTH - RIGHT,
        "top": TOP,
        "bottom": TOP + HEIGHT,
        "ticks": [{"y": _y(v), "label": f"{v:.2f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "xs": [{"x": x_of(step), "label": str(step)} for step in steps],
        "series": series,
        "selected": selected,
        "selected_by": SELECTED_BY,
    }


def _href(target: Path, page: Path) -> str:
    """A relative link from ``page`` to ``target`` (percent-encoded)."""
    relative = os.path.relpath(target.resolve(), page.resolve().parent)
    return urllib.parse.quote(Path(relative).as_posix())


def build_history_context(store: Path, page: Path, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything ``history.html.j2`` shows, grouped by suite (first stored run first), from
    ``runs`` (``data.store.history_runs.history_runs`` of the store)."""
    suites: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        run["href"] = _href(run["page"], page) if run["page"] is not None else None
        run["sample_text"] = sample_text({"test_split": {"sample": run.get("sample")}})
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
                "curve": checkpoint_curve(members),
                "charts": [
                    {"metric": metric, "charts": [chart(members, arms, metric, s) for s in slices]}
                    for metric in [*METRIC_NAMES, *_scorers_of(members)]
                ],
            }
        )
    return {"store": str(store), "count": len(runs), "groups": groups}


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_history(store: Path, page: Path | None, runs: list[dict[str, Any]]) -> str:
    """The self-contained ``history.html`` of ``store``'s ``runs`` (links relative to ``page``,
    default ``<store>/history.html``)."""
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


__all__ = [
    "build_history_context",
    "chart",
    "checkpoint_curve",
    "history_lines",
    "render_history",
]
