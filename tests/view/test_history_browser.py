"""``history.html`` in a real browser: headless Chromium from the system, driven by Playwright
(the pip package only), as for the run page (tests/view/test_html_report_browser.py).

The store holds four runs made by real pytest sessions (history_helpers): 0001, then 0002
under another decoding (not comparable: config_sha256, decoding.max_new_tokens), 0003
incomplete (kept with keep_incomplete, never comparable), 0004 regressed (comparable with
0002). The index's branch of 0001 is replaced by markup that must stay inert text.

The checkpoints charts are drawn from the training store of issue 41 as the views see it
(``history_helpers.training_store_runs``: three training runs, the second a sample, whose
steps zig-zagged when joined; a shipped run with a long label): one line per training run
and metric, and no text outside its SVG (the "selected" label at the last step was clipped
to "se").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_helpers import (
    REGRESSED,
    V1,
    save_run,
    subprocess_session,
    synthetic_run,
    training_store_runs,
)

from pytest_sommelier.commands.history import write_page as write_history
from pytest_sommelier.core.metrics import METRIC_NAMES

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
from test_html_report_browser import ARGS, CHROMIUM  # noqa: E402  (skips without Chromium)

pytestmark = pytest.mark.slow
INJECTED = '</style><script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def page_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("history")
    store = folder / ".sommelier"
    save_run(subprocess_session(folder, "one", V1), store)
    save_run(subprocess_session(folder, "two", V1, decoding={"max_new_tokens": 9}), store)
    partial = subprocess_session(
        folder, "three", V1, "-k", "not he-1", decoding={"max_new_tokens": 9}
    )
    save_run(partial, store, keep_incomplete=True)
    save_run(subprocess_session(folder, "four", REGRESSED, decoding={"max_new_tokens": 9}), store)
    index_path = store / "index.json"
    index = json.loads(index_path.read_text())
    index["runs"][0]["git"] = {"commit": "0123456789abcdef", "branch": INJECTED, "dirty": True}
    index_path.write_text(json.dumps(index))
    return write_history(store)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, page_path: Path) -> Iterator[Any]:
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.console_lines, page.errors, page.requests = [], [], []  # type: ignore[attr-defined]
    page.on("console", lambda m: page.console_lines.append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("request", lambda r: page.requests.append(r.url))
    page.goto(page_path.as_uri())
    page.wait_for_load_state("load")
    yield page
    page.close()


def test_every_run_is_present(page: Any) -> None:
    rows = page.eval_on_selector_all("table.runs tr[data-run]", "r => r.map(x => x.dataset.run)")
    assert rows == ["0001", "0002", "0003", "0004"]
    chart = 'figure.chart[data-metric="full_call_exact_match"][data-slice="overall"]'
    points = page.eval_on_selector_all(f"{chart} g.pt", "p => p.map(x => x.dataset.run)")
    assert sorted(points) == sorted(["0001", "0002", "0003", "0004"] * 2)  # two arms
    assert page.locator("figure.chart").count() == 5 * 3  # five metrics x (en, he, overall)
    titles = page.eval_on_selector_all(f"{chart} g.pt title", "t => t.map(x => x.textContent)")
    assert any(
        t.startswith("0004 adapter full_call_exact_match [overall]: 0.286 [") for t in titles
    )


def test_runs_not_comparable_are_marked_with_the_field(page: Any) -> None:
    marks = page.eval_on_selector_all(
        ".mark", "m => m.map(x => [x.closest('tr').dataset.run, x.dataset.arm, x.dataset.mark])"
    )
    field = "config_sha256 (decoding.max_new_tokens: 64 -> 9)"
    assert sorted(marks) == sorted(
        [
            ["0002", "adapter", field],
            ["0002", "base", field],
            ["0003", "adapter", "complete"],
            ["0003", "base", "complete"],
        ]
    )
    assert "not comparable with 0001: config_sha256" in page.inner_text('tr[data-run="0002"]')
    chart = page.locator('figure.chart[data-metric="argument_f1"][data-slice="he"]')
    assert chart.locator('g.break-identity[data-run="0002"]').count() == 1
    assert chart.locator('g.break-incomplete[data-run="0003"]').count() == 1
    assert chart.locator('g.break[data-run="0004"]').count() == 0  # comparable with 0002


def test_no_network_no_console_error_and_injected_markup_is_inert(
    page: Any, page_path: Path
) -> None:
    assert page.requests == [page_path.as_uri()]
    assert page.console_lines == [] and page.errors == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and page.locator("script").count() == 0
    branch = page.locator('tr[data-run="0001"] td').nth(2).inner_text()
    assert branch == INJECTED


def test_each_run_links_to_its_page(page: Any, page_path: Path) -> None:
    hrefs = page.eval_on_selector_all("a.report-link", "a => a.map(x => x.getAttribute('href'))")
    assert len(hrefs) == 4
    for href in hrefs:
        assert (page_path.parent / href).resolve().name == "report.html"
        assert (page_path.parent / href).is_file()
    page.click('tr[data-run="0004"] a.report-link')
    page.wait_for_load_state("load")
    assert page.url.endswith("/report.html") and "0004_" in page.url
    assert page.title().startswith("sommelier: factory")


LONG_LABEL = "shipped-adapter-of-the-spanish-and-english-tools-v2"


@pytest.fixture(scope="module")
def training_page_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("training-history")
    runs = training_store_runs()
    runs.insert(1, synthetic_run(99, label=LONG_LABEL, values={"base": 0.25, "adapter": 0.58}))
    for number, step in enumerate((1_000_000, 2_000_000, 3_000_000), start=100):  # long labels
        training = {"step": step, "checkpoint": f"checkpoint-{step}", "arm": "adapter", "run": "x"}
        runs.append(synthetic_run(number, values={"base": 0.1, "adapter": step / 4e6},
                                  training=training, training_run=1, suite="long-steps"))
    return write_history(folder / "store", folder / "history.html", runs=runs)


@pytest.fixture
def training_page(chromium: Any, training_page_path: Path) -> Iterator[Any]:
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.goto(training_page_path.as_uri())
    page.wait_for_load_state("load")
    yield page
    page.close()


def test_one_line_per_training_run_and_metric(training_page: Any) -> None:
    charts = training_page.locator('figure[data-curve="checkpoints"]')
    assert charts.count() == 3 + 3  # overall, en, he; the long-steps suite's
    for index in range(3):
        chart = charts.nth(index)
        for metric in METRIC_NAMES:
            lines = chart.locator(f'g.series[data-metric="{metric}"] polyline').evaluate_all(
                "p => p.map(x => [x.closest('g').dataset.line, x.getAttribute('points')])"
            )
            assert [name for name, _ in lines] == ["T1", "T2", "T3"]
            for _, points in lines:
                xs = [float(pair.split(",")[0]) for pair in points.split()]
                assert xs == sorted(xs) and len(set(xs)) == len(xs)  # rising steps only
    legend = training_page.eval_on_selector_all(
        "ul.curve-lines li", "l => l.map(x => x.textContent.trim())"
    )
    assert legend[1].endswith("sample 6 of 20 roots (seed 0)")


def test_no_text_of_a_chart_lies_outside_its_svg(training_page: Any) -> None:
    boxes = training_page.evaluate(
        """() => [...document.querySelectorAll('figure.chart svg')].flatMap(svg => {
            const box = svg.getBoundingClientRect();
            return [...svg.querySelectorAll('text')].map(t => {
                const r = t.getBoundingClientRect();
                return [t.textContent, r.left >= box.left - 0.5 && r.right <= box.right + 0.5
                        && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5];
            });
        })"""
    )
    texts = [text for text, _ in boxes]
    assert "T1 selected: step 30" in texts  # the last step's label, whole
    assert "T1 selected: step 3000000" in texts
    assert any(text.startswith("shipped-") and "... 0." in text for text in texts)  # cut
    assert [text for text, inside in boxes if not inside] == []
