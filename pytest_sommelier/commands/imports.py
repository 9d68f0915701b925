"""``sommelier import bfcl|openai-chat|xlam|hermes|<extension>|hook NAME``: a benchmark or a
training-data file as prepared examples (the file formats are the importer registry's; ``hook``
adds the importers a pytest session in ``--conftest-dir`` sees through its
``pytest_sommelier_add_importers`` hooks)."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_sommelier.numbers import whole_argument

SOURCES = ("bfcl", "hook")
"""The subcommands of ``sommelier import`` that are not file formats: an importer registered
under one of these names is reached as ``sommelier import hook NAME``."""


def cmd_import_bfcl(args: argparse.Namespace) -> int:
    """``sommelier import bfcl``: BFCL single-call (and, ``--parser v2``, parallel) categories
    -> prepared examples (atomic)."""
    from pytest_sommelier.data.prepare.bfcl import import_bfcl
    from pytest_sommelier.data.prepare.importers.common import summary_lines
    from pytest_sommelier.data.store.outputs import check_output

    check_output(args.out, inputs=[args.source], where="--out")
    outcome = import_bfcl(
        args.category,
        args.source,
        args.out,
        sample=args.sample,
        seed=args.seed,
        policy=args.policy,
        language=args.language,
        parser=args.parser,
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
    return _import_file(args, args.benchmark, None)


def cmd_import_hook(args: argparse.Namespace) -> int:
    """``sommelier import hook NAME``: the importer ``NAME`` as a pytest session started in
    ``--conftest-dir`` sees it (a ``pytest_sommelier_add_importers`` hook of a ``conftest.py``
    there or above it, or of a ``-p`` plugin; the built-ins and entry points too), then the
    same import as any other format."""
    from pathlib import Path

    from pytest_sommelier.plugin.extensions import pytest_registry

    importers = pytest_registry("importers", Path(args.conftest_dir), tuple(args.plugin or ()))
    return _import_file(args, args.name, importers)


def _import_file(args: argparse.Namespace, fmt: str, importers: Any) -> int:
    """Import ``args.input`` as format ``fmt`` of ``importers`` (None: the built-ins and the
    installed entry points) and print the summary."""
    from pytest_sommelier.data.prepare.importers.common import ImportOptions, summary_lines
    from pytest_sommelier.data.prepare.importers.driver import import_file
    from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1
    from pytest_sommelier.data.store.outputs import check_output

    check_output(args.out, inputs=[args.input], where="--out")
    options = ImportOptions(
        language=args.language,
        language_field=args.language_field,
        source_field=args.source_field,
        id_field=args.id_field,
        sample=args.sample,
        seed=args.seed,
        drop_system=args.drop_system,
        strict=args.strict,
        abstention=args.abstention,
        parser=args.parser,
    )
    result = import_file(fmt, args.input, args.out, options, importers)
    converted = result.read - len(result.skipped)
    for line in summary_lines(result.label, converted, result.skipped, result.notes):
        print(line)
    if result.with_system:
        print(
            f"{result.with_system} rows keep their own system turn: format them with --policy "
            f"{POLICY_NATIVE_TOOLS_V1} (the default policy writes its own and refuses them), "
            "or import with --drop-system"
        )
    print(f"wrote {result.written} prepared rows to {args.out}")
    return 0


def import_formats() -> dict[str, str]:
    """Every registered file format (``pytest_sommelier.registry``: the built-ins, then the
    installed ``sommelier.importers`` entry points) -> its one-line description. The entry
    points are read when ``sommelier`` builds its parser; an extension that cannot be loaded
    is listed as such (its import then fails with the registry's one line)."""
    from pytest_sommelier.data.prepare.importers.common import Importer
    from pytest_sommelier.errors import SommelierError
    from pytest_sommelier.registry import registry

    formats: dict[str, str] = {}
    for name, entry in registry("importers").entries.items():
        try:
            importer = entry.load()
        except SommelierError as error:
            formats[name] = f"(from {entry.source}; cannot be loaded: {error.code})"
            continue
        text = importer.description if isinstance(importer, Importer) else "(not an Importer)"
        formats[name] = text if entry.source == "built-in" else f"{text} (from {entry.source})"
    return formats


def _add_import_file_parser(sources: argparse._SubParsersAction, name: str, text: str) -> None:
    """Register ``sommelier import NAME INPUT``."""
    parser = sources.add_parser(
        name,
        help=text,
        description=f"Convert {text} to prepared examples (JSONL, a JSON array or Parquet in). "
        "Rows the method cannot score, and malformed rows of a well-formed file, are counted "
        "per reason and skipped (--strict: any skip is fatal); a malformed file is one error "
        "line and nothing is written. See docs/format.md.",
    )
    _add_file_options(parser)
    parser.set_defaults(handler=run, source_handler=cmd_import_file)


def _add_import_hook_parser(sources: argparse._SubParsersAction) -> None:
    """Register ``sommelier import hook NAME INPUT``."""
    parser = sources.add_parser(
        "hook",
        help="an importer a pytest_sommelier_add_importers hook registers (a conftest.py, -p)",
        description="Convert rows with the importer NAME as a pytest session started in "
        "--conftest-dir sees it: pytest loads that folder's conftest.py files (and those above "
        "it up to the rootdir), the installed pytest plugins and every -p plugin, as `pytest "
        "DIR` would, without collecting anything; their pytest_sommelier_add_importers hooks "
        "join the built-ins and the installed entry points. Then the same import as any "
        "format. See docs/extending.md.",
    )
    parser.add_argument("name", help="the importer's name, as the hook registers it")
    parser.add_argument(
        "--conftest-dir",
        default=".",
        help="the folder pytest would run in: its conftest.py files are loaded (default .)",
    )
    parser.add_argument(
        "-p",
        "--plugin",
        action="append",
        default=None,
        help="a plugin module to load, as pytest -p does (repeatable)",
    )
    _add_file_options(parser)
    parser.set_defaults(handler=run, source_handler=cmd_import_hook)


def _add_file_options(parser: argparse.ArgumentParser) -> None:
    """The input and the options every file format takes."""
    parser.add_argument("input", help="the rows: .jsonl, .json (array or lines) or .parquet")
    language = parser.add_mutually_exclusive_group()
    language.add_argument("--language", default=None, help="every row's language (default en)")
    language.add_argument(
        "--language-field", default=None, help="the field holding each row's language"
    )
    parser.add_argument(
        "--source-field", default=None, help="the field naming a translation's root row id"
    )
    parser.add_argument(
        "--id-field",
        default=None,
        help="the field with each row's id (default FORMAT-N; --source-field needs it)",
    )
    parser.add_argument(
        "--drop-system",
        action="store_true",
        help="drop each row's own system turn: the default format policy "
        "(sommelier.tools-in-system.v1) writes its own and refuses rows that keep one; "
        "sommelier.native-tools.v1 takes them",
    )
    parser.add_argument(
        "--abstention",
        choices=("keep", "skip"),
        default="skip",
        help="rows whose assistant answers without a call while tools are offered: keep them "
        'as abstention examples (expect = "no_call") or skip them (the default)',
    )
    parser.add_argument(
        "--sample", type=whole_argument(1), default=None, help="a seeded sample of N rows"
    )
    parser.add_argument(
        "--seed", type=whole_argument(0), default=13, help="seed of --sample (default 13)"
    )
    _add_parser_option(parser, "rows with several calls: skipped as several_calls (v1), or "
                       "kept with gold_calls (v2)")  # fmt: skip
    parser.add_argument(
        "--strict",
        action="store_true",
        help="any skipped row is fatal (a malformed row, a row the method cannot score): "
        "nothing is written",
    )
    parser.add_argument("--out", required=True, help="prepared examples to write (JSONL)")


def _add_parser_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--parser v1|v2``: the parser the prepared rows are for (``[parser] version``)."""
    parser.add_argument(
        "--parser",
        choices=("v1", "v2"),
        default="v1",
        help=f"the parser the rows are for ([parser] version; default v1): {what}; format "
        "v2 rows with sommelier format --parser v2",
    )


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier import bfcl|openai-chat|xlam|hermes``."""
    from pytest_sommelier.data.prepare.bfcl import POLICIES as BFCL_POLICIES

    parser = subparsers.add_parser(
        "import",
        help="import a standard benchmark or a training-data file as prepared examples",
        description="Import a standard benchmark's data, or tool-calling rows in a format "
        "people train on, as prepared examples for sommelier format.",
    )
    sources = parser.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    bfcl = sources.add_parser(
        "bfcl",
        help="Berkeley Function Calling Leaderboard v4, single-call (and, --parser v2, "
        "parallel) categories",
        description="Convert BFCL v4 single-call categories (questions + possible answers; "
        "the parallel ones under --parser v2) to prepared examples with acceptable_arguments; "
        "rows that cannot be converted faithfully "
        "are reported and skipped. BFCL's code is never imported. See docs/benchmarks.md.",
    )
    bfcl.add_argument(
        "--category", action="append", required=True, help="e.g. simple_python (repeatable)"
    )
    bfcl.add_argument(
        "--source", default=None, help="bfcl_eval wheel or data folder (default: installed)"
    )
    bfcl.add_argument(
        "--sample", type=whole_argument(1), default=None, help="a seeded sample of N rows"
    )
    bfcl.add_argument(
        "--seed", type=whole_argument(0), default=13, help="seed of --sample (default 13)"
    )
    bfcl.add_argument(
        "--policy",
        default=BFCL_POLICIES[0],
        choices=BFCL_POLICIES,
        help="the template policy the rows are for: sommelier.native-tools.v1 keeps questions "
        "with a system turn (default: skip them)",
    )
    bfcl.add_argument(
        "--language",
        default=None,
        help="the language tag of every imported row (default en; BFCL's live categories hold "
        "questions in other languages too: import those with their tag)",
    )
    _add_parser_option(bfcl, "v2 imports the parallel categories (parallel, parallel_multiple, "
                       "live_parallel, live_parallel_multiple)")  # fmt: skip
    bfcl.add_argument("--out", required=True, help="prepared examples to write (JSONL)")
    bfcl.set_defaults(handler=run, source_handler=cmd_import_bfcl)
    _add_import_hook_parser(sources)
    for name, text in import_formats().items():
        if name not in SOURCES:  # an importer named like a source: `sommelier import hook NAME`
            _add_import_file_parser(sources, name, text)


def run(args: argparse.Namespace) -> int:
    """``sommelier import``: the handler its source's parser set (``bfcl`` or a file format)."""
    return int(args.source_handler(args))


__all__ = ["add_parser", "run"]
