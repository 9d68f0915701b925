"""``sommelier report``: render a stored run's HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """``sommelier report RUN_DIR [--out FILE]``: render a stored run's HTML page."""
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data.store.outputs import check_output
    from pytest_sommelier.view.html import write_report

    run_dir = Path(args.run_dir)
    if args.out and not runlayout.is_run_file(run_dir.resolve(), Path(args.out).resolve()):
        # a file of the run itself is write_report's SOM-REPORT-OUT; the rest, the one rule
        check_output(args.out, inputs=[run_dir], owned=[runlayout.page(run_dir)], where="--out")
    target = write_report(Path(args.run_dir), Path(args.out) if args.out else None)
    print(f"wrote {target}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier report``."""
    parser = subparsers.add_parser(
        "report",
        help="render the self-contained HTML report of a stored run",
        description="Render a stored run's HTML page (no model, no network; the run's other "
        "files are not touched). Written atomically to RUN_DIR/report.html unless --out.",
    )
    parser.add_argument("run_dir", help="a run directory (runs/<run_id>)")
    parser.add_argument("--out", default=None, help="the HTML file to write")
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
