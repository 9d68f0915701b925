"""The ``sommelier`` command: one argparse subparser and one function per subcommand.

Exit statuses (from :mod:`pytest_sommelier.errors`): 0 success, 2 input error, 3 environment
error, 4 evaluation error, 5 invariant violation. Errors print one line (``CODE: where: message
(hint: ...)``) on stderr, never a traceback.

To add a subcommand: write ``_add_<name>_parser(subparsers)`` that registers the parser and sets
``handler=cmd_<name>``, write ``cmd_<name>(args) -> int``, and call the adder in
:func:`build_parser`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from pytest_sommelier.errors import SommelierError


def cmd_format(args: argparse.Namespace) -> int:
    """``sommelier format``: render prepared examples into a formatted split (atomic write)."""
    from pytest_sommelier.formatting import format_file

    rows = format_file(
        args.prepared,
        args.out,
        tokenizer_ref=args.tokenizer,
        revision=args.revision,
        split=args.split,
        policy=args.policy,
    )
    languages = Counter(row["language"] for row in rows)
    summary = ", ".join(f"{language}: {count}" for language, count in languages.items())
    print(f"wrote {len(rows)} formatted rows ({summary}) to {args.out}")
    return 0


def _add_format_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier format``."""
    from pytest_sommelier.formatting import DEFAULT_POLICY, POLICIES

    parser = subparsers.add_parser(
        "format",
        help="render prepared examples into a formatted split with a chat template",
        description="Render prepared examples (JSONL) into sommelier.formatted_example.v2 rows "
        "with a tokenizer's chat template; the output is written atomically.",
    )
    parser.add_argument("prepared", help="prepared examples (JSONL)")
    parser.add_argument(
        "--tokenizer",
        required=True,
        help="hub id, local folder, .gguf file, or pkg:<package>/<path>",
    )
    parser.add_argument("--revision", default=None, help="hub revision (required for hub ids)")
    parser.add_argument("--split", required=True, help="split name recorded in every row")
    parser.add_argument("--out", required=True, help="formatted split to write (JSONL)")
    parser.add_argument(
        "--policy", default=DEFAULT_POLICY, choices=sorted(POLICIES), help="template policy"
    )
    parser.set_defaults(handler=cmd_format)


def build_parser() -> argparse.ArgumentParser:
    """The ``sommelier`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="sommelier", description="pytest-sommelier command-line tools"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_format_parser(subparsers)
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
