"""A scripted run for the HTML report's tests: English roots, Hebrew translations, a script
injected into one output, and filter counts worked out by hand.

``make_run(folder, *pytest_args)`` writes the suite (``suite_factory`` + the scripted fake
backend of ``plugin_helpers``) and runs a real pytest session over it in a subprocess; it
returns the run directory. Hand-derived outcomes (adapter = candidate, base = reference):

    en-0 both hit    en-1 fixed       en-2 broken (adapter names 'nope')
    en-3 both miss (adapter: .room "4")          he-0 fixed
    he-1 both miss (adapter: invalid_json)       he-3 both miss (adapter: injected script)
"""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from fakes import FAKE_CONFTEST
from plugin_helpers import GOLD, SOURCES, call_text
from suite_factory import make_row, write_suite

HEBREW = {
    "he-0": "מה מזג האוויר בפריז ביומיים הקרובים?",
    "he-1": "חפש תה עם מסנן של שלושה לכל היותר",
    "he-3": "הזמן את חדר 4, הגעה מאוחרת",
}
INJECTED = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
ADAPTER = {
    "en-0": call_text(GOLD["en-0"]),
    "en-1": call_text(GOLD["en-1"], prose="Sure! Here is the call: "),
    "en-2": call_text({"name": "nope", "arguments": {}}),
    "en-3": call_text({"name": "book", "arguments": {"room": "4", "late": True}}),
    "he-0": call_text(GOLD["he-0"]),
    "he-1": '{"name": "search", "arguments": {"q": "tea"',
    "he-3": INJECTED,
}
BASE = {"en-0": call_text(GOLD["en-0"]), "en-2": call_text(GOLD["en-2"])}
GATES = [
    {"name": "adapter-valid", "arm": "adapter", "metric": "valid_json_rate", "min": 0.7},
    {
        "name": "uplift",
        "candidate": "adapter",
        "reference": "base",
        "metric": "full_call_exact_match",
        "ci_lower_above": 0.0,
    },
]
HITS = {"adapter": {"en-0", "en-1", "he-0"}, "base": {"en-0", "en-2"}}
COUNTS = {
    "fixed": 2,
    "broken": 1,
    "both_miss": 3,
    "both_hit": 1,
}


def write_report_suite(folder: Path) -> Path:
    """The suite folder (suite file, split, fake conftest and script)."""
    rows = []
    for example_id, gold in GOLD.items():
        user = HEBREW.get(example_id, f"English request {example_id}")
        rows.append(
            make_row(
                example_id,
                example_id[:2],
                SOURCES.get(example_id),
                gold,
                prompt_text=f"<user>{user}</user>\n",
                messages=[
                    {"role": "system", "content": "You call tools."},
                    {"role": "user", "content": user},
                ],
            )
        )
    suite = folder / "suite"
    write_suite(suite, rows=rows, model={"base": "fake-org/fake-model"}, gates=GATES)
    (suite / "conftest.py").write_text(FAKE_CONFTEST)
    (suite / "script.json").write_text(json.dumps({"adapter": ADAPTER, "base": BASE}))
    return suite


def make_run(folder: Path, *args: str) -> Path:
    """Run a real pytest session over the scripted suite; return its run directory."""
    suite = write_report_suite(folder)
    out = folder / "out"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            str(suite),
            "--sommelier-out",
            str(out),
            *args,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (out / "suite.resolved.json").exists(), result.stdout + result.stderr
    return out


class _Cells(HTMLParser):
    """Text of each ``<tr>`` (a list of cell texts) inside tables of one class."""

    def __init__(self, table_class: str) -> None:
        super().__init__()
        self.table_class, self.depth, self.rows = table_class, 0, []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "table":
            self.depth += 1 if (self.depth or self.table_class in classes) else 0
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self.depth:
            self.depth -= 1
        elif self.depth and tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def table_rows(page: str, table_class: str) -> list[list[str]]:
    """The cell texts of every row of the tables with ``table_class`` in ``page``."""
    parser = _Cells(table_class)
    parser.feed(page)
    return parser.rows


def page_blob(page: str) -> dict[str, Any]:
    """The per-example JSON blob embedded in a page."""
    start = page.index('<script type="application/json" id="data">') + len(
        '<script type="application/json" id="data">'
    )
    return json.loads(page[start : page.index("</script>", start)])
