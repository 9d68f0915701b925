"""``sommelier parity``: regenerate a seeded sample of a stored run on another engine, or
(``--rebatch``) on its own engine one example at a time."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_sommelier.numbers import decimal_argument, whole_argument


def run(args: argparse.Namespace) -> int:
    """``sommelier parity RUN_DIR --engine NAME``: regenerate a sample on another engine;
    ``--rebatch``: on the run's own engine at batch size 1 in reverse order (the noise floor)."""
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data.store import artifacts
    from pytest_sommelier.data.store.outputs import check_output
    from pytest_sommelier.inference import parity

    if args.out:
        check_output(args.out, inputs=[args.run_dir, args.suite], where="--out")
    result = parity.run_parity(
        Path(args.run_dir),
        Path(args.suite),
        args.engine,
        sample=args.sample,
        seed=args.seed,
        rebatch=args.rebatch,
    )
    name = "rebatch" if args.rebatch else result["engine"]
    out = Path(args.out) if args.out else runlayout.parity_report(Path(args.run_dir), name)
    artifacts.atomic_write_json(out, result)
    print(parity.render_parity(result))
    print(f"parity report written to {out}")
    if args.min_identical is not None:
        parity.check_min_identical(result, args.min_identical)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier parity``."""
    parser = subparsers.add_parser(
        "parity",
        help="regenerate a seeded sample of a stored run with another engine and compare",
        description="Regenerate a seeded sample of a stored run on another engine and report, "
        "per arm, byte-identical outputs, equal parse status and equal full-call outcome "
        "(docs/engines.md). With --rebatch, regenerate on the run's own engine one example at "
        "a time in reverse order: how much of the run is batch noise. Exit 4 when "
        "--min-identical is not met.",
    )
    parser.add_argument("run_dir", help="a run directory (runs/<run_id>)")
    parser.add_argument(
        "--engine", default=None, help="engine to use: transformers, vllm, openai or an "
        "installed extension's (sommelier plugins); required unless --rebatch, whose default "
        "is the run's own"
    )
    parser.add_argument(
        "--rebatch",
        action="store_true",
        help="same engine, batch size 1, reverse order (default out RUN_DIR/parity/rebatch.json)",
    )
    parser.add_argument("--suite", required=True, help="the suite file the run was made with")
    parser.add_argument(
        "--sample", type=whole_argument(1), default=None, help="examples (default: all)"
    )
    parser.add_argument("--seed", type=whole_argument(0), default=0, help="sample seed (default 0)")
    parser.add_argument(
        "--out", default=None, help="default RUN_DIR/parity/<engine>.json (rebatch.json)"
    )
    parser.add_argument(
        "--min-identical",
        type=decimal_argument(0.0, 1.0),
        default=None,
        help="fail below this identical fraction",
    )
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
