"""``sommelier history``: the stored runs as a table, and ``history.html``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def write_page(
    store: Path, out: Path | None = None, runs: list[dict[str, Any]] | None = None
) -> Path:
    """Read the store's runs (``data.store.history_runs``, unless given), render
    ``history.html`` (``view.history_page``) and write it atomically to ``out`` (default
    ``<store>/history.html``); returns the page's path."""
    from pytest_sommelier.data.store import artifacts
    from pytest_sommelier.data.store.history import PAGE
    from pytest_sommelier.data.store.history_runs import history_runs
    from pytest_sommelier.view.history_page import render_history

    store = Path(store)
    target = Path(out) if out is not None else store / PAGE
    runs = history_runs(store) if runs is None else runs
    artifacts.atomic_write_text(target, render_history(store, target, runs))
    return target


def run(args: argparse.Namespace) -> int:
    """``sommelier history [STORE]``: the stored runs as a table, and ``history.html``."""
    from pytest_sommelier.data.store.history import PAGE, require_store
    from pytest_sommelier.data.store.history_runs import history_runs
    from pytest_sommelier.data.store.outputs import check_output
    from pytest_sommelier.view.history_page import history_lines

    store = require_store(Path(args.store))
    if args.out:  # the page in the store is the store's own file; anything else there is not
        check_output(args.out, inputs=[store], stores=[store], owned=[store / PAGE], where="--out")
    runs = history_runs(store)
    for line in history_lines(runs):
        print(line)
    target = write_page(store, Path(args.out) if args.out else None, runs)
    print(f"history page: {target}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier history``."""
    parser = subparsers.add_parser(
        "history",
        help="list the stored runs and write history.html",
        description="Print the stored runs (number, commit, time, suite, verdict, label, "
        "step and checkpoint of a training callback's run, each arm's five metrics per slice) "
        "and write the self-contained history page: per metric and slice, each arm's value "
        "over the runs with its interval, the runs not comparable with the previous one "
        "marked with the identity field that changed; a suite's training checkpoints as "
        "charts over the step, one line per training run and metric.",
    )
    parser.add_argument("store", nargs="?", default=".sommelier", help="default .sommelier")
    parser.add_argument("--out", default=None, help="the page (default STORE/history.html)")
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run", "write_page"]
