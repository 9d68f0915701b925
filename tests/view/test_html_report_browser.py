"""The HTML report in a real browser: headless Chromium from the system (Debian's package),
driven by Playwright (the pip package only; no browser is ever downloaded).

The run comes from a real pytest session over the scripted suite of ``html_helpers`` (filter
counts worked out by hand there), plus a synthetic run with enough rows to page. Skipped, with
one line saying why, where Playwright or Chromium is absent.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from html_helpers import COUNTS, INJECTED, make_run
from synthetic_run import write_synthetic_run

from pytest_sommelier.view.html import write_report

pytestmark = pytest.mark.slow  # a real browser (Chromium) on a subprocess session's run

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install playwright)"
)
CHROMIUM = os.environ.get("SOMMELIER_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).is_file():
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(make_run(tmp_path_factory.mktemp("browser")))


class Page:
    """A page with its console messages, page errors and requests recorded."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1400, "height": 900})
        self.console: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())
        self.page.wait_for_selector("#count[data-count]")

    def count(self) -> int:
        return int(self.page.get_attribute("#count", "data-count"))

    def visible_ids(self) -> list[str]:
        return self.page.eval_on_selector_all("tr.ex-row", "rows => rows.map(r => r.dataset.id)")

    def search(self, text: str) -> None:
        self.page.fill("#f-search", text)
        self.page.wait_for_timeout(250)  # the search is debounced by 120 ms

    def open(self, example_id: str) -> Any:
        self.page.click(f'tr.ex-row[data-id="{example_id}"]')
        return self.page.locator(f'tr.ex-detail[data-id="{example_id}"]')


@pytest.fixture
def page(browser: Any, report: Path) -> Iterator[Page]:
    page = Page(browser, report)
    yield page
    page.page.close()


def test_page_loads_with_no_console_errors_and_no_network(page: Page) -> None:
    assert page.count() == 7
    assert page.errors == []
    assert [m for m in page.console if m.startswith(("error", "warning"))] == []
    assert all(url.startswith(("file:", "data:")) for url in page.requests), page.requests
    assert page.page.locator("svg.forest").bounding_box()["height"] > 100
    assert page.page.inner_text(".verdict-word") == "FAIL"


@pytest.mark.parametrize("outcome", sorted(COUNTS))
def test_outcome_filters_count_the_hand_derived_rows(page: Page, outcome: str) -> None:
    page.page.select_option("#f-outcome", outcome)
    assert page.count() == COUNTS[outcome]
    assert len(page.visible_ids()) == COUNTS[outcome]


@pytest.mark.parametrize(
    ("control", "value", "expected"),
    [
        ("#f-slice", "he", ["he-0", "he-1", "he-3"]),
        ("#f-slice", "en", ["en-0", "en-1", "en-2", "en-3"]),
        ("#f-tool", "book", ["en-3", "he-3"]),
        ("#f-tool", "search", ["en-1", "he-1"]),
    ],
)
def test_slice_and_tool_filters(page: Page, control: str, value: str, expected: list) -> None:
    page.page.select_option(control, label=value)
    assert page.visible_ids() == expected and page.count() == len(expected)


@pytest.mark.parametrize(
    ("arm", "status", "expected"),
    [
        ("adapter", "no_json", ["he-3"]),
        ("adapter", "invalid_json", ["he-1"]),
        ("adapter", "ok", ["en-0", "en-1", "en-2", "en-3", "he-0"]),
        ("base", "ok", ["en-0", "en-2"]),
        ("base", "no_json", ["en-1", "en-3", "he-0", "he-1", "he-3"]),
    ],
)
def test_parse_status_filter(page: Page, arm: str, status: str, expected: list) -> None:
    page.page.select_option("#f-status-arm", label=arm)
    page.page.select_option("#f-status", label=status)
    assert page.visible_ids() == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("פריז", ["he-0"]), ("EN-", ["en-0", "en-1", "en-2", "en-3"]), ("request en-2", ["en-2"])],
)
def test_search_over_ids_and_prompts(page: Page, text: str, expected: list) -> None:
    page.search(text)
    assert page.visible_ids() == expected


def test_filters_combine_and_reset(page: Page) -> None:
    page.page.select_option("#f-outcome", "fixed")
    page.page.select_option("#f-slice", label="he")
    assert page.visible_ids() == ["he-0"]
    page.page.click("#f-reset")
    assert page.count() == 7


def test_a_row_opens_with_the_differing_paths_highlighted(page: Page) -> None:
    detail = page.open("en-3")
    adapter = detail.locator('.arm-out[data-arm="adapter"]')
    cells = adapter.locator("tr.diff-row td").all_inner_texts()
    assert cells == [".room", "4", '"4"']
    assert adapter.locator("pre.json mark").all_inner_texts() == ['"4"']
    assert "English request en-3" in detail.locator(".user").inner_text()
    assert '"late": true' in detail.locator("pre.json").first.inner_text()  # the gold call
    name = page.open("en-2").locator('.arm-out[data-arm="adapter"] .namediff')
    assert name.locator("mark").all_inner_texts() == ["noop", "nope"]


def test_injected_script_stays_text(page: Page) -> None:
    detail = page.open("he-3")
    raw = detail.locator('.ex-col[data-id="he-3"] .arm-out[data-arm="adapter"] pre.raw')
    assert raw.inner_text() == INJECTED
    assert page.page.evaluate("typeof window.__pwned") == "undefined"
    assert page.page.locator("img[src='x']").count() == 0
    assert page.errors == []


def test_hebrew_runs_right_to_left_and_json_left_to_right(page: Page) -> None:
    def direction(selector: str) -> str:
        return page.page.eval_on_selector(selector, "e => getComputedStyle(e).direction")

    assert direction('tr.ex-row[data-id="he-0"] td.um') == "rtl"
    assert direction('tr.ex-row[data-id="en-0"] td.um') == "ltr"
    page.open("he-0")
    assert direction('.ex-col[data-id="he-0"] .user') == "rtl"
    assert direction('.ex-col[data-id="en-0"] .user') == "ltr"
    assert direction('.ex-col[data-id="he-0"] pre.json') == "ltr"


def test_a_translation_opens_beside_its_root_and_links_to_it(page: Page) -> None:
    detail = page.open("he-1")
    columns = detail.locator(".ex-col").evaluate_all("cs => cs.map(c => c.dataset.id)")
    assert columns == ["en-1", "he-1"]
    detail.locator("a.exlink").first.click()
    page.page.wait_for_function("document.getElementById('count').dataset.count === '1'")
    assert page.visible_ids() == ["en-1"]
    assert page.page.locator('tr.ex-detail[data-id="en-1"] a.exlink').inner_text() == "he-1"


def test_pages_of_fifty_rows(browser: Any, tmp_path: Path) -> None:
    run_dir = write_synthetic_run(tmp_path, roots=80, translated=40)
    page = Page(browser, write_report(run_dir))
    assert page.count() == 120 and len(page.visible_ids()) == 50
    assert page.page.inner_text("#page-info").startswith("1–50")
    page.page.click("#next")
    # split order interleaves each of the first 40 roots with its translation: row 51 is en-25
    assert page.visible_ids()[0] == "en-00025"
    page.page.click("#next")
    assert len(page.visible_ids()) == 20 and page.page.is_disabled("#next")
    assert page.errors == []
