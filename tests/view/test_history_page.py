"""``view.history_page``: the checkpoints charts (one line per training run, sampled and full
never joined, references, loss, per-slice charts, labels inside the chart, a marker and colour
per metric) and the label, step and checkpoint columns, from values as
``data.store.history_runs`` gives them (``history_helpers.training_store_runs``: the store of
issue 41, no store on disk). The same page in a browser: tests/view/test_history_browser.py.
"""

from __future__ import annotations

import itertools
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from history_helpers import SAMPLE, synthetic_run, training_store_runs
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.metrics import FULL_CALL_EXACT_MATCH, METRIC_NAMES
from pytest_sommelier.view.history_page import (
    CHAR,
    CHECKPOINT_CELL,
    CURVE_WIDTH,
    LABEL_CELL,
    MARKERS,
    _text_x,
    cell,
    checkpoint_curves,
    history_lines,
    render_history,
    run_cells,
)


def curves() -> dict[str, Any]:
    found = checkpoint_curves(training_store_runs())
    assert found is not None
    return found


def test_one_line_per_training_run_and_metric_with_rising_steps() -> None:
    found = curves()
    assert [line["name"] for line in found["lines"]] == ["T1", "T2", "T3"]
    overall = found["charts"][0]
    assert overall["slice"] == "overall"
    for metric in METRIC_NAMES:
        series = [s for s in overall["series"] if s["metric"] == metric]
        assert [s["line"] for s in series] == ["T1", "T2", "T3"]
        for s in series:
            xs = [p["x"] for p in s["points"]]
            assert xs == sorted(xs) and len(set(xs)) == len(xs)  # no zig-zag
    runs = {s["line"]: [p["run"] for p in s["points"]] for s in overall["series"]
            if s["metric"] == FULL_CALL_EXACT_MATCH}  # fmt: skip
    assert runs == {"T1": ["0002", "0003", "0004"], "T2": ["0005", "0006", "0007"],
                    "T3": ["0008", "0009"]}  # fmt: skip


def test_the_sample_is_its_own_line_and_says_so() -> None:
    texts = [line["text"] for line in curves()["lines"]]
    assert texts[1] == "T2: steps 10-30, runs 0005-0007, arm adapter, sample 6 of 20 roots (seed 0)"
    assert texts[0].endswith("full split") and texts[2].endswith("full split")


def test_per_slice_charts_overall_first() -> None:
    assert [c["slice"] for c in curves()["charts"]] == ["overall", "en", "he"]


def test_each_metric_has_its_own_marker_and_colour_class() -> None:
    metrics = curves()["metrics"]
    assert [m["metric"] for m in metrics] == list(METRIC_NAMES)
    assert len({m["d"] for m in metrics}) == len(metrics) == len({m["index"] for m in metrics})
    assert len(set(MARKERS)) == len(MARKERS) >= len(METRIC_NAMES)
    css = (Path(__file__).resolve().parents[2] / "pytest_sommelier" / "data" / "templates"
           / "history.css").read_text()  # fmt: skip
    colours = [css.split(f".metric-{i} .mk {{ fill: ")[1][:7] for i in range(len(metrics))]
    arm_colours = {css.split(f".arm-{i} .pt:not")[1].split("fill: ")[1][:7] for i in range(6)}
    assert len(set(colours)) == len(colours) and not set(colours) & arm_colours


def test_references_selected_and_loss() -> None:
    found = curves()
    overall = found["charts"][0]
    assert [(r["name"], r["run"]) for r in found["references"]] == [("base", "0009"),
                                                                   ("shipped", "0001")]
    texts = sorted(r["text"] for r in overall["references"])
    assert texts == ["base 0.090", "shipped 0.440"]  # full call: 0.25 - 0.16, 0.6 - 0.16
    selected = {s["line"]: s["step"] for s in overall["selected"]}
    assert selected == {"T1": 30, "T2": 20, "T3": 20}
    loss = found["loss"]
    assert loss is not None and [s["line"] for s in loss["series"]] == ["T1", "T2", "T3"]
    assert [p["title"].split(": ")[-1] for p in loss["series"][0]["points"]] == [
        "training loss 2.1", "training loss 1.6", "training loss 1.2"]
    without = [dict(r, training={**r["training"], "loss": None}) if r["training"] else r
               for r in training_store_runs()]  # fmt: skip
    assert (checkpoint_curves(without) or {})["loss"] is None


def test_every_label_lies_inside_its_chart() -> None:
    """The selected label at the last step was clipped to "se": each label's estimated box
    lies within the SVG (the browser test measures the real boxes)."""
    for chart in curves()["charts"]:
        for sel in chart["selected"]:
            assert 0 <= sel["text_x"] and sel["text_x"] + len(sel["text"]) * CHAR <= chart["width"]
        for ref in chart["references"]:
            assert chart["right"] + 4 + len(ref["text"]) * CHAR <= chart["width"]
            assert chart["top"] <= ref["label_y"] <= chart["height"] - 4


@settings(max_examples=examples(100))
@given(st.floats(0, CURVE_WIDTH), st.text(min_size=1, max_size=60))
def test_a_left_anchored_label_is_placed_within_the_bounds(x: float, text: str) -> None:
    start = _text_x(x, text, 2.0, CURVE_WIDTH - 2.0)
    if len(text) * CHAR <= CURVE_WIDTH - 4:
        assert 2.0 <= start and start + len(text) * CHAR <= CURVE_WIDTH - 2.0 + 0.01


def test_many_steps_thin_the_step_labels() -> None:
    runs = [synthetic_run(i + 1, training={"step": 1000 + 7 * i, "checkpoint": f"c-{i}",
                                           "arm": "adapter", "run": "a"}, training_run=1)
            for i in range(80)]  # fmt: skip
    chart = (checkpoint_curves(runs) or {})["charts"][0]
    xs = [x["x"] for x in chart["xs"]]
    assert 2 < len(xs) < 80
    assert min(b - a for a, b in itertools.pairwise(xs)) >= 4 * CHAR + 8


def test_no_training_run_no_curve() -> None:
    assert checkpoint_curves([synthetic_run(1), synthetic_run(2, label="shipped")]) is None


# --- the table columns ---------------------------------------------------------------------


def test_label_step_and_checkpoint_columns() -> None:
    lines = history_lines(training_store_runs())
    header = lines[0].split()
    assert header[:10] == ["run", "commit", "time", "suite", "verdict", "label", "step",
                           "checkpoint", "arm", "slice"]  # fmt: skip
    rows: dict[str, str] = {}
    for line in lines:
        rows.setdefault(line[:4], line)
    assert "shipped" in rows["0001"] and "checkpoint" not in rows["0001"]
    assert "30 (T1)  checkpoint-30" in rows["0004"] and "10 (T2)  checkpoint-10" in rows["0005"]
    assert "pass (sample)" in rows["0005"] and "(sample)" not in rows["0004"]
    page = render_history(Path("store"), None, training_store_runs())
    assert '<td class="mono" data-cell="label" title="shipped"><bdi>shipped</bdi></td>' in page
    assert '<td class="mono" data-cell="step">20 (T3)</td>' in page


def test_the_pages_template_is_compiled_once_per_process_and_renders_alike() -> None:
    from pytest_sommelier.view.history_page import _environment

    runs = training_store_runs()
    first = render_history(Path("store"), None, runs)
    assert _environment() is _environment()  # the compiled template is kept
    assert _environment().get_template("history.html.j2") is _environment().get_template(
        "history.html.j2"
    )
    assert render_history(Path("store"), None, runs) == first


def test_adapter_changed_is_said_only_for_an_arm_marked_so() -> None:
    runs = [synthetic_run(1), synthetic_run(2), synthetic_run(3)]
    runs[2]["arms"]["adapter"]["adapter_changed"] = True
    said = [line for line in history_lines(runs) if "adapter changed" in line]
    assert said == ["0003 adapter: adapter changed"]


HOSTILE = st.lists(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)
    | st.sampled_from(["<", ">", "&", '"', "'", "\n", "\x1b", "\u2028", "\u202e",
                       "</td><script>x()</script>", "</bdi>"]),
    min_size=1,
    max_size=40,
).map("".join).filter(bool)


@settings(max_examples=examples(60), deadline=None)
@given(label=HOSTILE, checkpoint=HOSTILE)
def test_hostile_labels_and_checkpoints_are_bounded_and_escaped(
    label: str, checkpoint: str
) -> None:
    run = synthetic_run(1, label=label, sample=SAMPLE, training={
        "step": 3, "checkpoint": checkpoint, "arm": "adapter", "run": label}, training_run=1)
    cells = run_cells(run)
    assert len(cells["label"]) <= LABEL_CELL and len(cells["checkpoint"]) <= CHECKPOINT_CELL
    assert all(c.isprintable() for value in cells.values() for c in value)
    lines = history_lines([run])
    assert all(c.isprintable() for line in lines for c in line)
    page = render_history(Path("store"), None, [run])
    assert page.count("<script") == 0 and page.count("</bdi>") == page.count("<bdi>")
    found = Cells()
    # the browser's reading: the cell's text and title, unescaped; a parser reads a page in
    # order, so the page up to the run table's end reads the same (the 40 KB after it were most
    # of this test's time)
    found.feed(page[: page.index("</table>", page.rfind('data-cell="'))])
    assert found.cells["label"] == (cells["label"], label)
    assert found.cells["checkpoint"] == (cells["checkpoint"], checkpoint)
    assert found.cells["step"] == ("3 (T1)", None)


class Cells(HTMLParser):
    """The run table's ``data-cell`` cells of a page: name -> (text, title)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[str, tuple[str, str | None]] = {}
        self.open: tuple[str, str | None] | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "td" and found.get("data-cell"):
            self.open, self.text = (str(found["data-cell"]), found.get("title")), []

    def handle_data(self, data: str) -> None:
        if self.open is not None:
            self.text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.open is not None:
            self.cells[self.open[0]] = ("".join(self.text), self.open[1])
            self.open = None


@settings(max_examples=examples(100))
@given(st.one_of(st.none(), st.integers(), st.text(max_size=80)), st.integers(4, 40))
def test_cell_is_one_bounded_printable_line(value: Any, limit: int) -> None:
    text = cell(value, limit)
    assert 1 <= len(text) <= limit and all(c.isprintable() for c in text)
