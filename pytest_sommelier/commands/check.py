"""``sommelier check``: the split's tokenizer and every adapter arm against the base, before
any weights load."""

from __future__ import annotations

import argparse
import sys

from pytest_sommelier.errors import SommelierError


def run(args: argparse.Namespace) -> int:
    """``sommelier check SUITE``: the split's tokenizer against the base's, the reasoning
    channel against what the chat template rendered (``split_check.reasoning_warnings``), then
    the adapter preflight of every adapter arm; nothing loaded."""
    from pytest_sommelier.data.split.load import load_suite_split
    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.inference import preflight
    from pytest_sommelier.inference.split_check import check_split_tokenizer, reasoning_warnings

    suite = load_suite(args.suite)
    result = preflight.preflight_suite(suite)
    tied = " (LM head tied to the embedding)" if result.base.tied_head else ""
    print(f"base: {result.base.read} tensors read from {result.base.source}{tied}")
    split_error: SommelierError | None = None
    if suite.split_tokenizer == "any":
        print('split: tokenizer not checked ([suite] split_tokenizer = "any")')
    else:
        try:
            check_split_tokenizer(suite)
            print("split: formatted with the base model's tokenizer")
        except SommelierError as error:
            print(f"sommelier check: {error}", file=sys.stderr)
            split_error = error
    try:
        split = load_suite_split(suite)
        for warning in reasoning_warnings(suite, split):
            print(f"reasoning: warning: {warning}")
    except SommelierError as error:
        print(f"sommelier check: {error}", file=sys.stderr)
        split_error = split_error or error
    if not result.arms:
        print("no adapter arm: nothing to check")
    for arm, outcome in result.arms.items():
        if isinstance(outcome, SommelierError):
            print(f"sommelier check: {outcome}", file=sys.stderr)
            continue
        print(f"{arm}: {outcome.line()}")
        for warning in outcome.warnings:
            print(f"{arm}: warning: {warning}")
    first = split_error or result.first_error
    return first.exit_code if first is not None else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier check``."""
    parser = subparsers.add_parser(
        "check",
        help="check every adapter arm of a suite against its base before any weights load",
        description="Read the adapters' configs and the safetensors headers of adapters and "
        "base (no weights) and check that every adapter tensor maps onto a module of the base "
        "with the right shapes and rank, and that the suite's engine can apply it "
        "(docs/engines.md, 'Is my adapter applied?'). Exit 0 when every arm passes, else the "
        "first error's exit status.",
    )
    parser.add_argument("suite", help="a suite file (sommelier.toml)")
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
