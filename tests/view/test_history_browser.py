"""``history.html`` in a real browser: headless Chromium from the system, driven by Playwright
(the pip package only), as for the run page (tests/view/test_html_report_browser.py).

The store holds four runs made by real pytest sessions (history_helpers): 0001, then 0002
under another decoding (not comparable: config_sha256, decoding.max_new_tokens), 0003
incomplete (kept with keep_incomplete, never comparable), 0004 regressed (comparable with
0002). The index's branch of 0001 is replaced by markup that must stay inert text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, save_run, subprocess_session

from pytest_sommelier.commands.history import write_page as write_history

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
