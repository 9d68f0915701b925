"""Screenshots of a run's HTML report for the docs (docs/img/report-*.png).

Opens ``<run>/report.html`` in the system's headless Chromium (Playwright, no browser
download) and saves the header, the first forest plot and one opened translated example (the
first one whose candidate parsed but missed, so the side-by-side shows a highlighted diff).

    python tools/report_screenshots.py runs/demo [--out docs/img] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import sys
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
PICK = """() => {
  const D = JSON.parse(document.getElementById('data').textContent);
  const pair = D.pairs[0] || [D.arms.length - 1, 0];
  const miss = D.ex.find(e => e[3] >= 0 && e[7][pair[0]][0] === 0 && e[7][pair[0]][1] === 0);
  return (miss || D.ex.find(e => e[3] >= 0) || D.ex[0])[0];
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--out", default="docs/img")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    page_path = Path(args.run_dir).resolve() / "report.html"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        page.goto(page_path.as_uri())
        page.wait_for_selector("#count[data-count]")
        page.locator("#header").screenshot(path=str(out / "report-header.png"))
        page.locator(".comparison").first.screenshot(path=str(out / "report-forest.png"))
        example = page.evaluate(PICK)
        page.evaluate("id => { location.hash = 'ex=' + encodeURIComponent(id); }", example)
        page.locator(f'tr.ex-detail[data-id="{example}"]').screenshot(
            path=str(out / "report-hebrew-pair.png")
        )
        browser.close()
    print(f"wrote report-header.png, report-forest.png, report-hebrew-pair.png ({example})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
