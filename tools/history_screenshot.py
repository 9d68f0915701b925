"""A screenshot of a run store's history page for the docs (docs/img/history.png).

Writes ``<store>/history.html`` (``commands.history.write_page``), opens it in the
system's headless Chromium (Playwright, no browser download) and saves the first suite's runs
table with its ``full_call_exact_match`` charts (the other metrics are left out of the shot).

    python tools/history_screenshot.py .sommelier [--out docs/img] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
from pathlib import Path

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
METRIC = "full_call_exact_match"
KEEP_ONE_METRIC = """metric => {
  for (const h of document.querySelectorAll('section.suite h3')) {
    if (h.textContent.trim() !== metric) { h.nextElementSibling.remove(); h.remove(); }
  }
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from pytest_sommelier.commands.history import write_page

    page_path = write_page(Path(args.store)).resolve()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
        page.goto(page_path.as_uri())
        page.evaluate(KEEP_ONE_METRIC, METRIC)
        page.locator("section.suite").first.screenshot(path=str(out / "history.png"))
        browser.close()
    print(f"wrote {out / 'history.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
