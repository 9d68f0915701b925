"""The ``sommelier`` command: one argparse subparser and one function per subcommand.

Exit statuses (from :mod:`pytest_sommelier.errors`): 0 success, 2 input error, 3 environment
error, 4 evaluation error, 5 invariant violation. Errors print one line (``CODE: where: message
(hint: ...)``) on stderr, never a traceback.

Wiring only: each subcommand is a module of :mod:`pytest_sommelier.commands` with
``add_parser(subparsers)`` (its parser, ``handler=run``) and ``run(args) -> int``. To add one,
write that module and name it in :data:`COMMANDS` (and its command word in :data:`WORDS`
when that is not the module's name).
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from collections.abc import Sequence

from pytest_sommelier.commands.format import format_split as format_split
from pytest_sommelier.errors import SommelierError

COMMANDS = (
    "format", "rescore", "compare", "history", "imports", "report", "parity", "plan", "check",
    "plugins",
)  # fmt: skip
"""The subcommand modules of :mod:`pytest_sommelier.commands`, in ``--help`` order."""

WORDS = {"import": "imports"}
"""The command word a module of :data:`COMMANDS` registers, where it is not the module's name
(``tests/test_cli.py`` checks every module's word against a parser with all registered)."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``sommelier`` argument parser with every subcommand registered; for ``argv`` whose
    first word is a subcommand's, only that subcommand (the one ``parse_args(argv)`` hands the
    rest to: the top parser has no option but ``-h``, so its usage, its errors and the
    subcommand's parse are the same; building every parser, with the importers' registry,
    was ~5 ms of each command)."""
    parser = argparse.ArgumentParser(
        prog="sommelier", description="pytest-sommelier command-line tools"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules: tuple[str, ...] = COMMANDS
    named = {name: name for name in COMMANDS if name not in WORDS.values()} | WORDS
    if argv and argv[0] in named:
        modules = (named[argv[0]],)
    for name in modules:
        importlib.import_module(f"pytest_sommelier.commands.{name}").add_parser(subparsers)
    return parser


BROKEN_PIPE_STATUS = 141
"""The exit status when the reader of standard output went away (``sommelier history | head``):
128 + SIGPIPE, what ``git log | head`` or any C tool killed by SIGPIPE gives, so a pipeline under
``set -o pipefail`` still sees that the output was cut."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sommelier`` command; returns the exit status (usage errors give 2, like input).

    Never raises SommelierError: it is printed as one line on stderr and its exit code returned.
    A closed standard output (a ``BrokenPipeError`` from any command, while it runs or when its
    output is flushed) is no traceback: standard output is pointed at ``os.devnull`` (so the
    interpreter's own flush at exit cannot fail again) and the status is ``BROKEN_PIPE_STATUS``.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words)
    try:
        args = parser.parse_args(words)
    except SystemExit as exit_:  # argparse: usage errors exit 2, --help exits 0
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        try:
            status = int(args.handler(args))
        except SommelierError as error:
            print(f"sommelier {args.command}: {error}", file=sys.stderr)
            status = error.exit_code
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_STATUS
    return status


def _silence_stdout() -> None:
    """Point the standard output's file descriptor at ``os.devnull`` (the Python documentation's
    recipe for SIGPIPE); a stream without one (a test's capture) is left as it is."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, descriptor)
    finally:
        os.close(devnull)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
