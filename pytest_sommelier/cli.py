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
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.errors import SommelierError


def format_split(
    prepared: Path | str,
    out: Path | str,
    *,
    tokenizer_ref: str,
    split: str,
    revision: str | None = None,
    policy: str | None = None,
    base_dir: Path | str | None = None,
    tokenizer: Any = None,
    arguments_key: str = "arguments",
) -> list[dict[str, Any]]:
    """Load the tokenizer a reference names (unless given), derive its portable identity, and
    format ``prepared`` into ``out`` (``data.formatting.format_file``); returns the rows.

    The identity is always derived from the reference (content digest for local files), so it
    carries no machine path. This is where the inference layer (tokenizer loading) meets the
    data layer (formatting), so that data never imports inference. A hub id without a revision
    is refused before any hub access.
    """
    from pytest_sommelier.data.formatting import DEFAULT_POLICY, format_file
    from pytest_sommelier.data.references import require_revision, resolve_local_path
    from pytest_sommelier.inference.modelref import load_tokenizer, tokenizer_identity

    if tokenizer is None:
        if resolve_local_path(tokenizer_ref, base_dir=base_dir) is None:
            require_revision(
                tokenizer_ref,
                revision,
                field="--tokenizer",
                revision_field="--revision",
                where="--tokenizer",
                looked="in the working directory" if base_dir is None else f"under {base_dir}",
            )
        tokenizer = load_tokenizer(tokenizer_ref, revision=revision, base_dir=base_dir)
    tokenizer_id, tokenizer_revision = tokenizer_identity(
        tokenizer_ref, revision, tokenizer, base_dir=base_dir
    )
    return format_file(
        prepared,
        out,
        tokenizer=tokenizer,
        tokenizer_id=tokenizer_id,
        tokenizer_revision=tokenizer_revision,
        split=split,
        policy=policy or DEFAULT_POLICY,
        arguments_key=arguments_key,
    )


def cmd_format(args: argparse.Namespace) -> int:
    """``sommelier format``: render prepared examples into a formatted split (atomic write)."""
    rows = format_split(
        args.prepared,
        args.out,
        tokenizer_ref=args.tokenizer,
        revision=args.revision,
        split=args.split,
        policy=args.policy,
        arguments_key=args.arguments_key,
    )
    languages = Counter(row["language"] for row in rows)
    summary = ", ".join(f"{language}: {count}" for language, count in languages.items())
    print(f"wrote {len(rows)} formatted rows ({summary}) to {args.out}")
    return 0


def _add_format_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier format``."""
    from pytest_sommelier.core.parse import ARGUMENTS_KEYS
    from pytest_sommelier.data.formatting import DEFAULT_POLICY, POLICIES

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
    parser.add_argument(
        "--arguments-key",
        default="arguments",
        choices=ARGUMENTS_KEYS,
        help="the key the template writes a call's arguments under, for the target check of "
        "sommelier.native-tools.v1 (Llama 3.x: parameters; default arguments)",
    )
    parser.set_defaults(handler=cmd_format)


def cmd_rescore(args: argparse.Namespace) -> int:
    """``sommelier rescore RUN_DIR [--suite FILE]``: re-derive every report and the verdict from
    raw_text (under the suite's current gates and comparisons when given); the same tables as a
    session's summary."""
    from pytest_sommelier import __version__
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data.rescore import rescore
    from pytest_sommelier.data.suite import load_suite
    from pytest_sommelier.data.view import terminal

    suite = load_suite(args.suite) if args.suite else None
    done = rescore(
        Path(args.run_dir),
        Path(args.out) if args.out else None,
        suite=suite,
        store=Path(args.store),
        flips=args.misses,
        by=f"pytest-sommelier {__version__}",
    )
    for note in done.notes:
        print(f"note: {note}")
    for line, _ in terminal.run_summary_lines(
        done.outcome, done.target, 0, args.misses, stored=done.against.lines()
    ):
        print(line)
    for error in done.against.errors():
        print(f"sommelier rescore: {error}", file=sys.stderr)
    record = done.record
    print(
        f"rescored by {record['by']} from generations sha256 "
        f"{record['generations_sha256'][:12]} ({runlayout.rescored(done.target)})"
    )
    print(f"re-derived reports and verdict written to {done.target}")
    print(f"HTML report: {runlayout.page(done.target)}")
    verdict = done.outcome.verdict["verdict"] if done.outcome.verdict else "pass"
    return 0 if verdict == "pass" else 1


def _add_rescore_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier rescore``."""
    parser = subparsers.add_parser(
        "rescore",
        help="re-derive every report and the verdict of a run from its stored raw_text",
        description="Re-parse and re-score a stored run (no model), after the same consistency "
        "checks as a live run, under the run's own gates and comparisons or, with --suite, the "
        "suite file's current ones (its split and slices must be the run's). Prints the same "
        "tables as a session and records the rescore in rescored.json. Exit 0 when the "
        "verdict passes, 1 when it fails or is incomplete.",
    )
    parser.add_argument("run_dir", help="a run directory (runs/<run_id>)")
    parser.add_argument("--suite", default=None, help="apply this suite's gates and comparisons")
    parser.add_argument("--out", default=None, help="write there instead of in place")
    parser.add_argument(
        "--store", default=".sommelier", help="the run store for stored gates (default .sommelier)"
    )
    parser.add_argument(
        "--misses", type=int, default=10, help="misses and flipped examples shown (default 10)"
    )
    parser.set_defaults(handler=cmd_rescore)


def _arm_folder(text: str) -> bool:
    """Whether a ``sommelier compare`` argument is a stored arm folder (``eval/<arm>``)."""
    from pytest_sommelier.core import runlayout

    path = Path(text)
    return runlayout.arm_report(path).is_file() or runlayout.is_arm_path(path)


def _fail_lines(results: list[dict[str, Any]]) -> list[str]:
    """The ``--fail`` gates as gate lines (without the suite verdict line)."""
    from pytest_sommelier.core.types import GateResult
    from pytest_sommelier.data.view import terminal

    return terminal.gate_result_lines(cast("list[GateResult]", results))


def cmd_compare(args: argparse.Namespace) -> int:
    """``sommelier compare A B``: two stored arm folders, or two runs (store numbers, ``last``
    or run folders) arm by arm; ``--fail`` gates exit 1 on a regression."""
    from pytest_sommelier.data.history_gate import parse_fail_specs

    specs = parse_fail_specs(args.fail or [], option="--fail")
    if _arm_folder(args.candidate) or _arm_folder(args.reference):
        return _compare_arm_folders(args, specs)
    return _compare_runs(args, specs)


def _compare_arm_folders(args: argparse.Namespace, specs: list[Any]) -> int:
    """Two stored arms through the identity gate (``data.stored.compare_arms``)."""
    from pytest_sommelier.data import artifacts
    from pytest_sommelier.data.history_compare import refuse_same_arm_folder
    from pytest_sommelier.data.history_gate import evaluate_fail_specs
    from pytest_sommelier.data.stored import compare_arms
    from pytest_sommelier.data.view.markdown import comparison_markdown

    refuse_same_arm_folder(Path(args.candidate), Path(args.reference))
    report = compare_arms(Path(args.candidate), Path(args.reference))
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
        "arms": {
            report["candidate"]: {**report, "status": "compared", "reference_arm": reference}
        },
    }
    results = evaluate_fail_specs(specs, wrapped)
    for line in _fail_lines(results):
        print(line)
    return 0 if all(result["passed"] for result in results) else 1


def _compare_runs(args: argparse.Namespace, specs: list[Any]) -> int:
    """Two runs, arm by arm (``data.history_compare.compare_runs``)."""
    from pytest_sommelier.data.history import resolve_stored
    from pytest_sommelier.data.history_compare import compare_lines, compare_runs, write_compare
    from pytest_sommelier.data.history_gate import evaluate_fail_specs

    store = Path(args.store)
    candidate = resolve_stored(store, args.candidate)
    reference = resolve_stored(store, args.reference, suite=candidate.suite)
    report = compare_runs(candidate, reference, flips=args.misses)
    for line in compare_lines(report):
        print(line)
    if args.out:
        json_path, md_path = write_compare(Path(args.out), report)
        print(f"wrote {json_path} and {md_path.name}")
    results = evaluate_fail_specs(specs, report)
    for line in _fail_lines(results):
        print(line)
    if any(not result["passed"] for result in results):
        return 1
    return 0 if any(b["status"] == "compared" for b in report["arms"].values()) else 4


def _add_compare_parser(subparsers: argparse._SubParsersAction) -> None:
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
    parser.add_argument(
        "--store", default=".sommelier", help="the run store (default .sommelier)"
    )
    parser.add_argument(
        "--fail",
        action="append",
        metavar="METRIC[:SLICE]:MARGIN",
        help="fail (exit 1) when candidate minus reference, paired by example, is below "
        "-MARGIN (repeatable), e.g. full_call_exact_match:he:0.03",
    )
    parser.add_argument(
        "--misses", type=int, default=10, help="flipped examples listed per arm (default 10)"
    )
    parser.set_defaults(handler=cmd_compare)


def cmd_history(args: argparse.Namespace) -> int:
    """``sommelier history [STORE]``: the stored runs as a table, and ``history.html``."""
    from pytest_sommelier.data.history import require_store
    from pytest_sommelier.data.history_page import history_lines, history_runs, write_history

    store = require_store(Path(args.store))
    runs = history_runs(store)
    for line in history_lines(runs):
        print(line)
    target = write_history(store, Path(args.out) if args.out else None, runs)
    print(f"history page: {target}")
    return 0


def _add_history_parser(subparsers: argparse._SubParsersAction) -> None:
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
    parser.set_defaults(handler=cmd_history)


def cmd_import_bfcl(args: argparse.Namespace) -> int:
    """``sommelier import bfcl``: BFCL single-call categories -> prepared examples (atomic)."""
    from pytest_sommelier.data.bfcl import import_bfcl
    from pytest_sommelier.data.importers.common import summary_lines

    outcome = import_bfcl(
        args.category,
        args.source,
        args.out,
        sample=args.sample,
        seed=args.seed,
        policy=args.policy,
    )
    for result in outcome.categories:
        lines = summary_lines(
            result.category, len(result.rows), result.skipped, result.notes, limit=None
        )
        for line in lines:
            print(line)
    print(f"wrote {outcome.written} prepared rows to {args.out}")
    return 0


def cmd_import_file(args: argparse.Namespace) -> int:
    """``sommelier import openai-chat|xlam|hermes``: a training-data file -> prepared examples."""
    from pytest_sommelier.data.importers.common import ImportOptions, summary_lines
    from pytest_sommelier.data.importers.driver import import_file

    options = ImportOptions(
        language=args.language,
        language_field=args.language_field,
        source_field=args.source_field,
        id_field=args.id_field,
        sample=args.sample,
        seed=args.seed,
    )
    result = import_file(args.benchmark, args.input, args.out, options)
    converted = result.read - len(result.skipped)
    for line in summary_lines(result.label, converted, result.skipped):
        print(line)
    print(f"wrote {result.written} prepared rows to {args.out}")
    return 0


IMPORT_FORMATS: dict[str, str] = {
    "openai-chat": "OpenAI / HF chat rows {messages, tools}: [system?, user, assistant with one "
    "tool_calls entry]",
    "xlam": "Salesforce xLAM / APIGen rows {query, tools, answers} (JSON strings); xLAM "
    "parameter types become JSON Schema",
    "hermes": "NousResearch hermes-function-calling rows {conversations}: <tools> in the "
    "system turn, the answer inside <tool_call>",
}


def _add_import_file_parser(sources: argparse._SubParsersAction, name: str, text: str) -> None:
    """Register ``sommelier import NAME INPUT``."""
    parser = sources.add_parser(
        name,
        help=text,
        description=f"Convert {text} to prepared examples (JSONL, a JSON array or Parquet in). "
        "Rows the method cannot score are counted per reason and skipped; a malformed row "
        "is one error line and nothing is written. See docs/format.md.",
    )
    parser.add_argument("input", help="the rows: .jsonl, .json (array or lines) or .parquet")
    language = parser.add_mutually_exclusive_group()
    language.add_argument("--language", default=None, help="every row's language (default en)")
    language.add_argument("--language-field", default=None, help="the field with each row's")
    parser.add_argument(
        "--source-field", default=None, help="the field naming a translation's root row id"
    )
    parser.add_argument(
        "--id-field", default=None, help="the field with each row's id (default FORMAT-N)"
    )
    parser.add_argument("--sample", type=int, default=None, help="a seeded sample of N rows")
    parser.add_argument("--seed", type=int, default=13, help="seed of --sample (default 13)")
    parser.add_argument("--out", required=True, help="prepared examples to write (JSONL)")
    parser.set_defaults(handler=cmd_import_file)


def _add_import_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier import bfcl|openai-chat|xlam|hermes``."""
    from pytest_sommelier.data.bfcl import POLICIES as BFCL_POLICIES

    parser = subparsers.add_parser(
        "import",
        help="import a standard benchmark or a training-data file as prepared examples",
        description="Import a standard benchmark's data, or tool-calling rows in a format "
        "people train on, as prepared examples for sommelier format.",
    )
    sources = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    bfcl = sources.add_parser(
        "bfcl",
        help="Berkeley Function Calling Leaderboard v4, single-call categories",
        description="Convert BFCL v4 single-call categories (questions + possible answers) to "
        "prepared examples with acceptable_arguments; rows that cannot be converted faithfully "
        "are reported and skipped. BFCL's code is never imported. See docs/benchmarks.md.",
    )
    bfcl.add_argument(
        "--category", action="append", required=True, help="e.g. simple_python (repeatable)"
    )
    bfcl.add_argument(
        "--source", default=None, help="bfcl_eval wheel or data folder (default: installed)"
    )
    bfcl.add_argument("--sample", type=int, default=None, help="a seeded sample of N rows")
    bfcl.add_argument("--seed", type=int, default=13, help="seed of --sample (default 13)")
    bfcl.add_argument(
        "--policy",
        default=BFCL_POLICIES[0],
        choices=BFCL_POLICIES,
        help="the template policy the rows are for: sommelier.native-tools.v1 keeps questions "
        "with a system turn (default: skip them)",
    )
    bfcl.add_argument("--out", required=True, help="prepared examples to write (JSONL)")
    bfcl.set_defaults(handler=cmd_import_bfcl)
    for name, text in IMPORT_FORMATS.items():
        _add_import_file_parser(sources, name, text)


def cmd_report(args: argparse.Namespace) -> int:
    """``sommelier report RUN_DIR [--out FILE]``: render a stored run's HTML page."""
    from pytest_sommelier.data.view.html import write_report

    target = write_report(Path(args.run_dir), Path(args.out) if args.out else None)
    print(f"wrote {target}")
    return 0


def _add_report_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier report``."""
    parser = subparsers.add_parser(
        "report",
        help="render the self-contained HTML report of a stored run",
        description="Render a stored run's HTML page (no model, no network; the run's other "
        "files are not touched). Written atomically to RUN_DIR/report.html unless --out.",
    )
    parser.add_argument("run_dir", help="a run directory (runs/<run_id>)")
    parser.add_argument("--out", default=None, help="the HTML file to write")
    parser.set_defaults(handler=cmd_report)


def cmd_plan(args: argparse.Namespace) -> int:
    """``sommelier plan RUN_DIR``: from a pilot run, the pairs and clusters needed per slice."""
    import json

    from pytest_sommelier.data.plan import plan_lines, plan_rows

    rows = plan_rows(
        Path(args.run_dir), comparison=args.comparison, effect=args.effect, power=args.power,
        metric=args.metric,
    )  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        for line in plan_lines(rows):
            print(line)
    return 0


def _probability(text: str) -> float:
    """An argparse type: a power, as ``[statistics] power`` takes it (data.statistics_bounds)."""
    from pytest_sommelier.data.statistics_bounds import power_problem

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (e.g. 0.8)") from None
    why = power_problem(value)
    if why is not None:
        raise argparse.ArgumentTypeError(f"power {why}")
    return value


def _effect(text: str) -> float:
    """An argparse type: a difference to detect, as ``[statistics] effect`` takes it."""
    from pytest_sommelier.data.statistics_bounds import effect_problem

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (e.g. 0.03)") from None
    why = effect_problem(value)
    if why is not None:
        raise argparse.ArgumentTypeError(f"effect {why}")
    return value


def _add_plan_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier plan``."""
    from pytest_sommelier.data.plan import DEFAULT_EFFECT, PLAN_METRIC

    parser = subparsers.add_parser(
        "plan",
        help="from a pilot run, the pairs (and clusters) needed to detect an effect",
        description="Re-score a stored pilot run (no model; nothing is written) and, for each "
        "comparison and slice, apply Connor's (1987) sample-size formula to its discordance and "
        "design effect: the pairs and clusters a run needs to detect --effect at --power.",
    )
    parser.add_argument("run_dir", help="a pilot run directory (runs/<run_id>)")
    parser.add_argument("--comparison", default=None, help="one comparison (default: every one)")
    parser.add_argument(
        "--effect", type=_effect, default=DEFAULT_EFFECT,
        help=f"the difference to detect (default {DEFAULT_EFFECT})",
    )  # fmt: skip
    parser.add_argument(
        "--power", type=_probability, default=None,
        help="the power wanted (default: the suite's [statistics] power, 0.8)",
    )  # fmt: skip
    parser.add_argument(
        "--metric", default=PLAN_METRIC, help=f"a rate metric (default {PLAN_METRIC})"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.set_defaults(handler=cmd_plan)


def cmd_parity(args: argparse.Namespace) -> int:
    """``sommelier parity RUN_DIR --engine NAME``: regenerate a sample on another engine;
    ``--rebatch``: on the run's own engine at batch size 1 in reverse order (the noise floor)."""
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data import artifacts
    from pytest_sommelier.inference import parity

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


def _add_parity_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier parity``."""
    from pytest_sommelier.core.types import ENGINE_NAMES

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
        "--engine", default=None, choices=ENGINE_NAMES, help="engine to use (required unless "
        "--rebatch, whose default is the run's own)"
    )
    parser.add_argument(
        "--rebatch",
        action="store_true",
        help="same engine, batch size 1, reverse order (default out RUN_DIR/parity/rebatch.json)",
    )
    parser.add_argument("--suite", required=True, help="the suite file the run was made with")
    parser.add_argument("--sample", type=int, default=None, help="examples (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="sample seed (default 0)")
    parser.add_argument(
        "--out", default=None, help="default RUN_DIR/parity/<engine>.json (rebatch.json)"
    )
    parser.add_argument(
        "--min-identical", type=float, default=None, help="fail below this identical fraction"
    )
    parser.set_defaults(handler=cmd_parity)


def cmd_check(args: argparse.Namespace) -> int:
    """``sommelier check SUITE``: the split's tokenizer against the base's, then the adapter
    preflight of every adapter arm; nothing loaded."""
    from pytest_sommelier.data.suite import load_suite
    from pytest_sommelier.inference import preflight
    from pytest_sommelier.inference.split_check import check_split_tokenizer

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


def _add_check_parser(subparsers: argparse._SubParsersAction) -> None:
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
    parser.set_defaults(handler=cmd_check)


def build_parser() -> argparse.ArgumentParser:
    """The ``sommelier`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="sommelier", description="pytest-sommelier command-line tools"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_format_parser(subparsers)
    _add_rescore_parser(subparsers)
    _add_compare_parser(subparsers)
    _add_history_parser(subparsers)
    _add_import_parser(subparsers)
    _add_report_parser(subparsers)
    _add_parity_parser(subparsers)
    _add_plan_parser(subparsers)
    _add_check_parser(subparsers)
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
