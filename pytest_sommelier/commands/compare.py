"""``sommelier compare``: two stored arm folders, or two runs arm by arm; ``--fail`` gates."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.numbers import whole_argument


def _arm_folder(text: str) -> bool:
    """Whether a ``sommelier compare`` argument is a stored arm folder (``eval/<arm>``)."""
    from pytest_sommelier.core import runlayout

    path = Path(text)
    return runlayout.arm_report(path).is_file() or runlayout.is_arm_path(path)


def _fail_lines(results: list[dict[str, Any]]) -> list[str]:
    """The ``--fail`` gates as gate lines (without the suite verdict line)."""
    from pytest_sommelier.core.types import GateResult
    from pytest_sommelier.view import terminal

    return terminal.gate_result_lines(cast("list[GateResult]", results))


def run(args: argparse.Namespace) -> int:
    """``sommelier compare A B``: two stored arm folders, or two runs (store numbers, ``last``
    or run folders) arm by arm; ``--fail`` gates exit 1 on a regression."""
    from pytest_sommelier.data.store.history_gate import parse_fail_specs
    from pytest_sommelier.data.store.outputs import FOLDER_KIND, check_output

    specs = parse_fail_specs(args.fail or [], option="--fail")
    if args.out:
        check_output(
            args.out,
            kind=FOLDER_KIND,
            inputs=[args.candidate, args.reference, args.store],
            stores=[args.store],
            where="--out",
        )
    if _arm_folder(args.candidate) or _arm_folder(args.reference):
        return _compare_arm_folders(args, specs)
    return _compare_runs(args, specs)


def _compare_arm_folders(args: argparse.Namespace, specs: list[Any]) -> int:
    """Two stored arms through the identity gate (``data.store.stored.compare_arms``)."""
    from pytest_sommelier.core.compare_fail import evaluate_fail_specs
    from pytest_sommelier.core.pipeline import compare_arm_sides
    from pytest_sommelier.data.store import artifacts
    from pytest_sommelier.data.store.history_compare import refuse_same_arm_folder
    from pytest_sommelier.data.store.stored import read_arm_side
    from pytest_sommelier.view.markdown import comparison_markdown

    refuse_same_arm_folder(Path(args.candidate), Path(args.reference))
    candidate = read_arm_side(Path(args.candidate))
    report = compare_arm_sides(candidate, read_arm_side(Path(args.reference)))
    markdown = comparison_markdown(report)
    if args.out:
        json_path, _ = artifacts.write_comparison(Path(args.out), report["name"], report, markdown)
        print(f"wrote {json_path} and .md")
    print(markdown, end="")
    if not specs:
        return 0
    reference = str(report["reference"])
    wrapped = {
        "reference": {"name": reference, "label": reference},
        "arms": {report["candidate"]: {**report, "status": "compared", "reference_arm": reference}},
    }
    results = evaluate_fail_specs(specs, wrapped)
    for line in _fail_lines(results):
        print(line)
    return 0 if all(result["passed"] for result in results) else 1


def _compare_runs(args: argparse.Namespace, specs: list[Any]) -> int:
    """Two runs, arm by arm (``core.stored_comparison.compare_runs``, over what the store read of
    each: ``data.store.history_verdict.read_inputs``)."""
    from pytest_sommelier.core.compare_fail import evaluate_fail_specs
    from pytest_sommelier.core.pipeline import derive_side
    from pytest_sommelier.core.stored_comparison import compare_runs, refuse_runs
    from pytest_sommelier.data.store.history import resolve_stored
    from pytest_sommelier.data.store.history_compare import write_compare
    from pytest_sommelier.data.store.history_verdict import read_inputs
    from pytest_sommelier.view.compare import compare_lines, compare_markdown

    store = Path(args.store)
    candidate = resolve_stored(store, args.candidate)
    reference = resolve_stored(store, args.reference, suite=candidate.suite)
    refuse_runs(candidate, reference)  # before either is read
    report = compare_runs(
        candidate, reference, flips=args.misses,
        scored=derive_side(candidate, read_inputs(candidate)),
        reference_scored=derive_side(reference, read_inputs(reference)),
    )  # fmt: skip
    for line in compare_lines(report):
        print(line)
    if args.out:
        json_path, md_path = write_compare(Path(args.out), report, compare_markdown(report))
        print(f"wrote {json_path} and {md_path.name}")
    results = evaluate_fail_specs(specs, report)
    for line in _fail_lines(results):
        print(line)
    if any(not result["passed"] for result in results):
        return 1
    return 0 if any(b["status"] == "compared" for b in report["arms"].values()) else 4


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier compare``."""
    parser = subparsers.add_parser(
        "compare",
        help="compare two stored arms, or two runs arm by arm (candidate minus reference)",
        description="Compare two stored arm folders (runs/<id>/eval/<arm>), possibly from "
        "different runs, or two runs arm by arm: store numbers (0003), 'last' (the newest "
        "comparable stored run of the candidate's suite) or run folders. Every pair goes "
        "through the identity gate; a refused pair names the field. Exit 1 when a --fail "
        "gate fails, 4 when nothing could be compared, 2 for a run compared with itself.",
    )
    parser.add_argument("candidate", help="candidate: arm folder, store number, last, or run")
    parser.add_argument("reference", help="reference: arm folder, store number, last, or run")
    parser.add_argument("--out", default=None, help="folder for the .json and .md reports")
    parser.add_argument("--store", default=".sommelier", help="the run store (default .sommelier)")
    parser.add_argument(
        "--fail",
        action="append",
        metavar="METRIC[:SLICE]:MARGIN",
        help="fail (exit 1) when candidate minus reference, paired by example, is below "
        "-MARGIN (repeatable), e.g. full_call_exact_match:he:0.03",
    )
    parser.add_argument(
        "--misses",
        type=whole_argument(0),
        default=10,
        help="flipped examples listed per arm (default 10)",
    )
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "run"]
