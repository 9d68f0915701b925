"""The ``sommelier`` command: one argparse subparser and one function per subcommand.

Exit statuses (from :mod:`pytest_sommelier.errors`): 0 success, 2 input error, 3 environment
error, 4 evaluation error, 5 invariant violation. Errors print one line (``CODE: where: message
(hint: ...)``) on stderr, never a traceback.

Wiring only: each subcommand is a module of :mod:`pytest_sommelier.commands` with
``add_parser(subparsers)`` (its parser, ``handler=run``) and ``run(args) -> int``. To add one,
write that module and name it in :data:`COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pytest_sommelier.commands.format import format_split as format_split
from pytest_sommelier.errors import SommelierError

COMMANDS = (
    "format", "rescore", "compare", "history", "imports", "report", "parity", "plan", "check"
)  # fmt: skip
"""The subcommand modules of :mod:`pytest_sommelier.commands`, in ``--help`` order."""


def build_parser() -> argparse.ArgumentParser:
    """The ``sommelier`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="sommelier", description="pytest-sommelier command-line tools"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"pytest_sommelier.commands.{name}").add_parser(subparsers)
    return parser




def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sommelier`` command; returns the exit status (usage errors give 2, like input).

    Never raises SommelierError: it is printed as one line on stderr and its exit code returned.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: usage errors exit 2, --help exits 0
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        return int(args.handler(args))
    except SommelierError as error:
        print(f"sommelier {args.command}: {error}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
