"""The store's runs over time: the ``sommelier history`` table and the ``history.html`` page.

It renders the values ``data.store.history_runs.history_runs(store)`` reads (each stored run's
entry, each arm's values and intervals, the comparability marks) and reads no file itself
(its own templates aside): ``history_lines`` renders the terminal table, ``render_history``
the page; ``commands.history.write_page`` joins the reading, the rendering and the writing.
A suite's training-callback runs are drawn by ``checkpoint_curves``: one line per training
run (``data.store.history_runs.training_lines``) and metric, never one across two training
runs or across a sample and a full evaluation.

Invariants kept: every number shown is a value it is given (nothing is re-scored or read
here); the page is one
self-contained file rendered with autoescaping and no script at all, under a
Content-Security-Policy that allows only its own style block (no network, no other file);
stored text (suite names, branches, reasons) is shown as text; a stored label or checkpoint
name in a table cell is bounded and printable (:func:`cell`); every text of a checkpoints chart
is placed inside its SVG (the estimate ``CHAR`` bounds a character's width).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import math
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
    cell,
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


LABEL_CELL, CHECKPOINT_CELL = 20, 24
"""The most characters of a run's label and checkpoint cells (the table and the page)."""


def run_cells(run: Mapping[str, Any]) -> dict[str, str]:
    """A run's label, step and checkpoint cells (``-`` where it has none): its
    ``--sommelier-label``, and for a training callback's run the step (with its training run,
    ``20 (T2)``) and checkpoint folder's name, each bounded (:func:`cell`)."""
    found = run.get("training")
    training: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    step = training.get("step")
    line = run.get("training_run")
    step_text = "-" if step is None else cell(step, 14)
    if step is not None and isinstance(line, int):
        step_text += f" (T{line})"
    return {
        "label": cell(run.get("run_label"), LABEL_CELL),
        "step": step_text,
        "checkpoint": cell(training.get("checkpoint"), CHECKPOINT_CELL),
    }


def history_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The table ``sommelier history`` prints: one row per run, arm and slice (run columns on
    its first row: number, commit, time, suite, verdict, then :func:`run_cells`' label, step
    and checkpoint), the five metrics, then a column per extension scorer any run has (``-``
    where a run's arm was not scored with it); then one line per non-comparable arm, and per
    arm whose adapter content changed since the previous comparable run."""
    scorers = _scorers_of(runs)
    header = ["run", "commit", "time", "suite", "verdict", "label", "step", "checkpoint"]
    header += ["arm", "slice"] + [SHORT[m] for m in METRIC_NAMES] + scorers
    rows = []
    for run in runs:
        commit = (run["commit"] or "-") + ("-dirty" if run["dirty"] else "")
        sampled = sample_text({"test_split": {"sample": run.get("sample")}})
        verdict = (run["verdict"] or "-") + (" (sample)" if sampled else "")
        first = [run["label"], commit, run["time"], str(run["suite"]), verdict]
        first += list(run_cells(run).values())
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
            named = f" (label {cell(run['run_label'], LABEL_CELL)})" if run.get("run_label") else ""
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


CURVE_WIDTH = 600.0
CURVE_RIGHT = 124.0  # room right of the plot for the reference lines' labels
LOSS_HEIGHT = 90.0
CHAR = 6.6  # an upper bound of one character's width at the charts' 10px monospace
SELECTED_BY = FULL_CALL_EXACT_MATCH
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "plus", "bar")
"""One marker shape per metric of the checkpoints chart (with its colour, ``metric-N``), so
two metrics at one value stay apart; the arms' colours (``arm-N``) are not used there."""
DASHES = 4  # the training runs' line styles (``dash-N``), repeated beyond


def marker_path(shape: str, x: float, y: float, r: float = 3.6) -> str:
    """The SVG path of one marker centred on ``(x, y)`` (``MARKERS``)."""
    if shape == "circle":
        return f"M{x - r:.2f},{y:.2f}a{r},{r} 0 1,0 {2 * r:.2f},0a{r},{r} 0 1,0 {-2 * r:.2f},0Z"
    if shape == "square":
        q = r * 0.85
        return f"M{x - q:.2f},{y - q:.2f}h{2 * q:.2f}v{2 * q:.2f}h{-2 * q:.2f}Z"
    if shape == "triangle":
        return f"M{x:.2f},{y - r:.2f}L{x + r:.2f},{y + r * 0.8:.2f}L{x - r:.2f},{y + r * 0.8:.2f}Z"
    if shape == "diamond":
        return f"M{x:.2f},{y - r:.2f}L{x + r:.2f},{y:.2f}L{x:.2f},{y + r:.2f}L{x - r:.2f},{y:.2f}Z"
    if shape == "cross":
        q = r * 0.8
        return (f"M{x - q:.2f},{y - q:.2f}L{x + q:.2f},{y + q:.2f}"
                f"M{x - q:.2f},{y + q:.2f}L{x + q:.2f},{y - q:.2f}")  # fmt: skip
    if shape == "plus":
        return f"M{x - r:.2f},{y:.2f}H{x + r:.2f}M{x:.2f},{y - r:.2f}V{y + r:.2f}"
    return f"M{x - r:.2f},{y - r * 0.5:.2f}h{2 * r:.2f}v{r:.2f}h{-2 * r:.2f}Z"  # bar


def _value(run: Mapping[str, Any], arm: str, slice_: str, metric: str) -> dict[str, Any]:
    """One arm's value block of a run (``{}`` when it has none)."""
    values = ((run["arms"].get(arm) or {}).get("values") or {}).get(slice_) or {}
    return dict(values.get(metric) or {})


def _sample_words(sample: Any) -> str:
    """``full split`` or ``sample 6 of 20 roots (seed 0)``."""
    if not isinstance(sample, Mapping):
        return "full split"
    return (f"sample {cell(sample.get('roots'), 8)} of {cell(sample.get('of_roots'), 8)} roots "
            f"(seed {cell(sample.get('seed'), 12)})")  # fmt: skip


def training_lines_of(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The training runs of a suite's runs (``training_run``, ``data.store.history_runs``), in
    order: each with its checkpoints by step (a step stored twice in one training run: the
    later), its trained arm, its sample and what the legend says of it."""
    grouped: dict[int, list[Mapping[str, Any]]] = {}
    for run in runs:
        number = run.get("training_run")
        training = run.get("training")
        if isinstance(number, int) and isinstance(training, Mapping):
            grouped.setdefault(number, []).append(run)
    lines = []
    for index, (number, members) in enumerate(grouped.items()):
        by_step = {int(run["training"]["step"]): run for run in members}
        steps = sorted(by_step)
        first = members[0]
        labels = [by_step[step]["label"] for step in steps]
        arm = str(first["training"].get("arm") or "")
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        runs_text = labels[0] if len(labels) == 1 else f"{labels[0]}-{labels[-1]}"
        lines.append(
            {
                "number": number,
                "name": f"T{number}",
                "dash": index % DASHES,
                "arm": arm,
                "sample": first.get("sample"),
                "steps": steps,
                "by_step": by_step,
                "text": f"T{number}: {span}, run{'s' if len(labels) > 1 else ''} {runs_text}, "
                f"arm {cell(arm, 24)}, {_sample_words(first.get('sample'))}",
            }
        )
    return lines


def _selected(line: Mapping[str, Any]) -> int | None:
    """The training run's selected step: the highest overall ``SELECTED_BY`` of its trained
    arm, the first on ties (None when no checkpoint has the value)."""
    best: tuple[float, int] | None = None
    for step in line["steps"]:
        value = _value(line["by_step"][step], line["arm"], OVERALL, SELECTED_BY).get("value")
        if value is not None and (best is None or value > best[0]):
            best = (value, step)
    return None if best is None else best[1]


def _references(
    runs: Sequence[Mapping[str, Any]], lines: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The reference lines of the checkpoints charts: the base arms (every arm but the
    trained one) of the newest training run's last checkpoint, then the newest run of each
    label (``--sommelier-label``: the shipped adapter) that is no training run, its arm of
    the trained arm's name; each with the run, the arm and the sample."""
    newest = lines[-1]
    last = newest["by_step"][newest["steps"][-1]]
    refs = [
        {"name": arm, "run": last["label"], "arm": arm, "sample": last.get("sample"),
         "source": last}
        for arm in last["arms"]
        if arm != newest["arm"]
    ]  # fmt: skip
    labelled: dict[str, Mapping[str, Any]] = {}
    for run in runs:
        if run.get("run_label") and not isinstance(run.get("training"), Mapping):
            labelled[str(run["run_label"])] = run
    for label, run in labelled.items():
        if newest["arm"] in run["arms"]:
            refs.append({"name": label, "run": run["label"], "arm": newest["arm"],
                         "sample": run.get("sample"), "source": run})  # fmt: skip
    return refs


def _text_x(x: float, text: str, low: float, high: float) -> float:
    """Where a left-anchored label of ``text`` near ``x`` starts so that all of it lies
    within ``[low, high]``: 4 px right of ``x`` when it fits, else ending at ``high``."""
    width = len(text) * CHAR
    return round(max(low, min(x + 4, high - width)), 2)


def _x_ticks(steps: Sequence[int], x_of: Any, plot: float) -> list[dict[str, Any]]:
    """The step labels under a chart: every step, or every k-th when they would overlap."""
    widest = max(len(str(step)) for step in steps) * CHAR + 8
    stride = max(1, math.ceil(len(steps) / max(1, int(plot // widest))))
    return [{"x": x_of(step), "label": str(step)} for step in steps[::stride]]


def _slice_chart(
    slice_: str,
    lines: Sequence[Mapping[str, Any]],
    refs: Sequence[Mapping[str, Any]],
    metrics: Sequence[str],
    x_of: Any,
    steps: Sequence[int],
) -> dict[str, Any]:
    """One checkpoints chart: one slice, a line per training run and metric."""
    right = CURVE_WIDTH - CURVE_RIGHT
    series = []
    for line in lines:
        for index, metric in enumerate(metrics):
            offset = (index - (len(metrics) - 1) / 2) * 2.5  # metrics side by side at a step
            points: list[dict[str, Any]] = []
            for step in line["steps"]:
                run = line["by_step"][step]
                value = _value(run, line["arm"], slice_, metric)
                if value.get("value") is None:
                    continue
                x, y = round(x_of(step) + offset, 2), _y(value["value"])
                point = {
                    "x": x,
                    "y": y,
                    "step": step,
                    "run": run["label"],
                    "d": marker_path(MARKERS[index % len(MARKERS)], x, y),
                    "title": f"{line['name']} step {step} ({run['label']}, "
                    f"{cell(run['training'].get('checkpoint'), 40)}) {cell(line['arm'], 40)} "
                    f"{metric} [{slice_}]: {fmt(value['value'])} "
                    f"{fmt_interval(value) if value.get('lower') is not None else '(no interval)'}",
                }
                if value.get("lower") is not None and value.get("upper") is not None:
                    point["y1"], point["y2"] = _y(value["lower"]), _y(value["upper"])
                points.append(point)
            series.append(
                {
                    "line": line["name"],
                    "metric": metric,
                    "index": index,
                    "dash": line["dash"],
                    "points": points,
                    "path": " ".join(f"{p['x']},{p['y']}" for p in points),
                }
            )
    references: list[dict[str, Any]] = []
    room = int((CURVE_RIGHT - 8) / CHAR)
    for ref in refs:
        level = _value(ref["source"], ref["arm"], slice_, SELECTED_BY).get("value")
        if level is None:
            continue
        number = fmt(level)
        name = cell(ref["name"], max(room - len(number) - 1, 4))
        references.append(
            {
                "y": _y(level),
                "text": f"{name} {number}",
                "title": f"{ref['name']}: {ref['arm']} {SELECTED_BY} [{slice_}] {number} "
                f"(run {ref['run']}, {_sample_words(ref['sample'])})",
            }
        )
    references.sort(key=lambda r: r["y"])
    floor = TOP
    for ref in references:  # labels 11 px apart at least, all inside the chart
        ref["label_y"] = round(max(ref["y"] + 3.5, floor), 2)
        floor = ref["label_y"] + 11
    height = TOP + HEIGHT + BOTTOM
    for ref in references:
        ref["label_y"] = min(ref["label_y"], height - 4)
    selected: list[dict[str, Any]] = []
    for line in lines:
        step = _selected(line)
        if step is None:
            continue
        x = x_of(step)
        text = f"{line['name']} selected: step {step}"
        selected.append(
            {
                "line": line["name"],
                "step": step,
                "x": x,
                "text": text,
                "text_x": _text_x(x, text, 2.0, CURVE_WIDTH - 2.0),
                "text_y": round(TOP + 10 + 11 * len(selected), 2),
                "run": line["by_step"][step]["label"],
            }
        )
    return {
        "slice": slice_,
        "width": CURVE_WIDTH,
        "height": height,
        "left": LEFT,
        "right": right,
        "top": TOP,
        "bottom": TOP + HEIGHT,
        "ticks": [{"y": _y(v), "label": f"{v:.2f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "xs": _x_ticks(steps, x_of, right - LEFT),
        "series": series,
        "references": references,
        "selected": selected,
    }


def _loss_chart(lines: Sequence[Mapping[str, Any]], x_of: Any, steps: Sequence[int]) -> dict | None:
    """The training loss each checkpoint recorded (``training.loss``), a line per training
    run on its own scale from 0; None when no checkpoint recorded one."""
    losses = [
        (line, step, float(loss))
        for line in lines
        for step in line["steps"]
        if isinstance(loss := line["by_step"][step]["training"].get("loss"), int | float)
        and not isinstance(loss, bool)
        and math.isfinite(loss)
        and loss >= 0
    ]
    if not losses:
        return None
    high = max(loss for _, _, loss in losses) or 1.0

    def y_of(loss: float) -> float:
        return round(TOP + (1.0 - loss / high) * LOSS_HEIGHT, 2)

    series = []
    for line in lines:
        points = [
            {
                "x": x_of(step),
                "y": y_of(loss),
                "step": step,
                "d": marker_path("circle", x_of(step), y_of(loss), 2.8),
                "title": f"{line['name']} step {step} ({line['by_step'][step]['label']}): "
                f"training loss {loss:.4g}",
            }
            for owner, step, loss in losses
            if owner is line
        ]
        if points:
            series.append({"line": line["name"], "dash": line["dash"], "points": points,
                           "path": " ".join(f"{p['x']},{p['y']}" for p in points)})  # fmt: skip
    right = CURVE_WIDTH - CURVE_RIGHT
    return {
        "width": CURVE_WIDTH,
        "height": TOP + LOSS_HEIGHT + BOTTOM,
        "left": LEFT,
        "right": right,
        "top": TOP,
        "bottom": TOP + LOSS_HEIGHT,
        "ticks": [{"y": y_of(v), "label": f"{v:.3g}"} for v in (0.0, high / 2, high)],
        "xs": _x_ticks(steps, x_of, right - LEFT),
        "series": series,
    }


def checkpoint_curves(runs: Sequence[Mapping[str, Any]]) -> dict | None:
    """The checkpoints of a suite's training-callback runs (store records with ``training``)
    as charts over the step: per slice (overall first) a line per training run and metric
    (the trained arm's value with its interval; a metric's colour and marker, a training
    run's line style; two training runs, or a sample and a full evaluation, are never one
    line), the reference lines (``SELECTED_BY`` of the base arms and of each labelled run:
    :func:`_references`), each training run's selected checkpoint (the highest overall
    ``SELECTED_BY``, the first on ties), and the training loss when recorded; None without
    such runs."""
    lines = training_lines_of(runs)
    if not lines:
        return None
    steps = sorted({step for line in lines for step in line["steps"]})
    low, high = steps[0], steps[-1]
    right = CURVE_WIDTH - CURVE_RIGHT

    def x_of(step: int) -> float:
        if high == low:
            return round((LEFT + right) / 2, 2)
        return round(LEFT + 10 + (step - low) / (high - low) * (right - LEFT - 20), 2)

    metrics = list(METRIC_NAMES)
    slices = list(dict.fromkeys(s for line in lines for r in line["by_step"].values()
                                for s in r["slices"]))  # fmt: skip
    slices = [OVERALL] + [s for s in slices if s != OVERALL]
    refs = _references(runs, lines)
    return {
        "lines": [{k: v for k, v in line.items() if k != "by_step"} for line in lines],
        "metrics": [
            {"metric": m, "index": i, "d": marker_path(MARKERS[i % len(MARKERS)], 11.0, 5.0)}
            for i, m in enumerate(metrics)
        ],
        "references": [
            {**{k: r[k] for k in ("name", "run", "arm")}, "sample": _sample_words(r["sample"])}
            for r in refs
        ],
        "charts": [_slice_chart(s, lines, refs, metrics, x_of, steps) for s in slices],
        "loss": _loss_chart(lines, x_of, steps),
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
        run["cells"] = run_cells(run)
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
                "curve": checkpoint_curves(members),
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
    return _environment().get_template("history.html.j2").render(**context)


@functools.cache
def _environment() -> jinja2.Environment:
    """The history page's Jinja environment, one per process: its compiled template is kept (a
    template file changed on disk is compiled again, Jinja's ``auto_reload``), as the run
    page's (``view.html``); a render no longer compiles the template first."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    return env


__all__ = [
    "build_history_context",
    "cell",
    "chart",
    "checkpoint_curves",
    "history_lines",
    "render_history",
]
