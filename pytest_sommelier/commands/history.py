"""``sommelier history``: the stored runs as a table, and ``history.html``."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    """``sommelier history [STORE]``: the stored runs as a table, and ``history.html``."""
    from pytest_sommelier.data.store.history import PAGE, require_store
    from pytest_sommelier.data.store.outputs import check_output
    from pytest_sommelier.view.history_page import history_lines, history_runs, write_history

    store = require_store(Path(args.store))
    if args.out:  # the page in the store is the store's own file; anything else there is not
        check_output(args.out, inputs=[store], stores=[store], owned=[store / PAGE], where="--out")
    runs = history_runs(store)
    for line in history_lines(runs):
        print(line)
    target = write_history(store, Path(args.out) if args.out else None, runs)
    print(f"history page: {target}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier history``."""
    parser = subparsers.add_parser(
        "history",
        help="list the stored runs and write history.html",
        description="Print the stored runs (number, commit, time, suite, verdict, each arm's "
        "five metrics per slice) and write the self-contained history page: per metric and "
        "slice, each arm's value over the runs with its interval, the runs not comparable "
        "with the previous one marked with the identity field that changed.",
    )
    parser.add_argument("store", nargs="?", default=".sommelier", help="default .sommelier")
    parser.add_argument("--out", default=None, help="the page (default STORE/history.html)")
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
