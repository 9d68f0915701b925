"""``sommelier import openai-chat|xlam|hermes``: a training-data file -> prepared examples.

:func:`import_file` reads the rows (``records.read_rows``), takes each row's id, language and
root from the options, converts it with the format's converter, applies the shared checks
(``common.check_candidate``), validates every converted row exactly as ``sommelier format``
will (``formatting.validate_prepared_row``, then ``check_pairs``), draws the optional sample and
writes the file atomically.

Ids, languages and roots:

- ``example_id``: the ``--id-field`` value (a string, or an integer written in decimal), else
  ``<format>-<N>`` with N the line (JSON lines) or row (array, Parquet) the location names;
- ``language``: ``--language`` (default ``en``), or the ``--language-field`` value;
- ``source_example_id``: the ``--source-field`` value (null or absent: a root row). A
  translation whose root was skipped is skipped too (``root_skipped``).

Under ``--parser v2`` (``ImportOptions.parser``) a row with several calls is read (the
converter's ``several_calls`` skip carries how) and written with ``gold_calls``; under v1 it is
skipped as before.

Invariant kept: the output holds exactly the converted rows (or a seeded sample of them), each
valid for ``sommelier format``; nothing is written when any row is malformed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_sommelier.data.prepare.formatting import (
    PreparedExample,
    check_pairs,
    validate_prepared_row,
)
from pytest_sommelier.data.prepare.importers.common import (
    DEFAULT_LANGUAGE,
    PARSERS,
    SEVERAL_CALLS,
    Candidate,
    Importer,
    ImportOptions,
    ImportResult,
    Skip,
    Skipped,
    abstention_skip,
    check_candidate,
    convert_row,
    nothing_converted,
    sample_rows,
    strict_refusal,
    write_prepared,
    wrong_type,
)
from pytest_sommelier.data.prepare.importers.records import read_rows
from pytest_sommelier.errors import EXTENSION_ERRORS, InputError, SommelierError, exception_text
from pytest_sommelier.registry import Registry, registry

Converter = Callable[[dict[str, Any], str], Candidate | Skip]

Converted = tuple[dict[str, Any], PreparedExample, str]
"""A converted row, its validated prepared example, and where it was read."""

def importer_registry() -> Registry:
    """The importers: the built-ins and the installed ``sommelier.importers`` entry points
    (``pytest_sommelier.registry``), read when an import runs."""
    return registry("importers")


def check_format(name: str, importers: Registry | None = None) -> Converter:
    """The converter of a registered format (``importers``, default :func:`importer_registry`),
    loaded now and checked to be an :class:`Importer`; InputError naming the format otherwise."""
    found = (importers or importer_registry()).entry(
        name, where="sommelier import", code="SOM-IMPORT-FORMAT"
    )
    importer = found.load()
    if not isinstance(importer, Importer) or not callable(importer.convert):
        raise InputError(
            "SOM-IMPORT-CONTRACT",
            f"importer {name!r} from {found.source} is a {type(importer).__name__}, not an "
            "Importer(description, convert)",
            "register a pytest_sommelier.data.prepare.importers.common.Importer",
            where="sommelier import",
        )
    return _kept_to_contract(name, found.source, importer.convert)


def _kept_to_contract(name: str, source: str, convert: Converter) -> Converter:
    """``convert`` held to the contract on every row: it returns a ``Candidate`` or a ``Skip``
    or raises a ``SommelierError`` (a built-in's one line about the row); anything else it
    raises or returns is one ``SOM-IMPORT-CONTRACT`` line naming the importer, where it came
    from and the row, never a traceback and never a half-written output (nothing is written
    before every row converted)."""

    def checked(record: dict[str, Any], where: str) -> Candidate | Skip:
        try:
            outcome = convert(record, where)
        except SommelierError:
            raise
        except EXTENSION_ERRORS as exc:  # an extension's bug (or exit), as the row's line
            raise InputError(
                "SOM-IMPORT-CONTRACT",
                f"importer {name!r} from {source} raised on this row: {exception_text(exc)}",
                "fix the importer: convert(row, where) returns a Candidate or a Skip "
                "(docs/extending.md)",
                where=where,
            ) from exc
        if not isinstance(outcome, Candidate | Skip):
            raise InputError(
                "SOM-IMPORT-CONTRACT",
                f"importer {name!r} from {source} returned a {type(outcome).__name__} for "
                "this row, not a Candidate or a Skip",
                "fix the importer: convert(row, where) returns a Candidate or a Skip "
                "(docs/extending.md)",
                where=where,
            )
        return outcome

    return checked


def check_options(options: ImportOptions) -> None:
    """``--language`` and ``--language-field`` exclude each other; ``--source-field`` needs
    ``--id-field`` (without it the rows are numbered ``FORMAT-N``, so no root id a row names
    could match); ``--sample`` is positive."""
    if options.language is not None and options.language_field is not None:
        raise InputError(
            "SOM-IMPORT-OPTIONS",
            "--language and --language-field both given",
            "give one: a language for every row, or the field that holds each row's",
            where="--language-field",
        )
    if options.source_field is not None and options.id_field is None:
        raise InputError(
            "SOM-IMPORT-OPTIONS",
            f"--source-field {options.source_field} names each translation's root by its id, "
            "but without --id-field the rows get ids FORMAT-N, so no root id can match",
            "give --id-field, the field holding each row's id (the one --source-field refers to)",
            where="--source-field",
        )
    sample_rows([], options.sample, options.seed)
    if options.parser not in PARSERS:
        raise InputError(
            "SOM-IMPORT-OPTIONS",
            f"--parser {str(options.parser)[:40]!r} is not one of {', '.join(PARSERS)}",
            "give --parser v1 (one call per row, the default) or v2 (rows with several calls)",
            where="--parser",
        )


def _example_id(record: dict[str, Any], where: str, options: ImportOptions, default: str) -> str:
    if options.id_field is None:
        return default
    value = record.get(options.id_field)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        expected = "a non-empty string or an integer"
        raise wrong_type(where, options.id_field, value, expected, "or choose another --id-field")
    return value


def _language(record: dict[str, Any], where: str, options: ImportOptions) -> str:
    if options.language_field is None:
        return options.language or DEFAULT_LANGUAGE
    value = record.get(options.language_field)
    if not isinstance(value, str):
        raise wrong_type(where, options.language_field, value, "a string", "give every row one")
    return value


def _source(record: dict[str, Any], where: str, options: ImportOptions) -> str | None:
    if options.source_field is None:
        return None
    value = record.get(options.source_field)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise wrong_type(
            where, options.source_field, value, "a string, an integer or null", "name a root id"
        )
    return value


def import_file(
    fmt: str,
    path: str | Path,
    out: str | Path,
    options: ImportOptions | None = None,
    importers: Registry | None = None,
) -> ImportResult:
    """Convert ``path`` (a ``fmt`` file) into prepared examples written to ``out`` atomically;
    ``fmt`` is a name of ``importers`` (default: the built-ins and installed extensions)."""
    convert = check_format(fmt, importers)
    options = options or ImportOptions()
    check_options(options)
    result = ImportResult(label=f"{fmt} {path}")
    converted: list[Converted] = []
    seen: dict[str, str] = {}
    for where, number, record in read_rows(path):
        result.read += 1
        example_id = _example_id(record, where, options, f"{fmt}-{number}")
        if example_id in seen:
            raise InputError(
                "SOM-IMPORT-DUPLICATE-ID",
                f"example id {example_id!r} repeats the one of {seen[example_id]}",
                "ids are unique: choose another --id-field, or leave it out",
                where=where,
            )
        seen[example_id] = where
        language = _language(record, where, options)
        source = _source(record, where, options)
        outcome = convert_row(convert, record, where, strict=options.strict)
        if isinstance(outcome, Skip) and outcome.several is not None and options.parser == "v2":
            outcome = convert_row(_reader(outcome.several), record, where, strict=options.strict)
        if isinstance(outcome, Candidate):
            outcome = abstention_skip(outcome, options.abstention) or outcome
        if isinstance(outcome, Candidate) and len(outcome.calls) > 1 and options.parser != "v2":
            outcome = Skip(SEVERAL_CALLS, f"the row holds {len(outcome.calls)} calls")
        if isinstance(outcome, Candidate):
            outcome = check_candidate(outcome) or outcome
        if isinstance(outcome, Skip):
            result.skipped.append(Skipped(example_id, where, outcome.reason, outcome.detail))
            if options.strict:
                raise strict_refusal(result.skipped[-1], outcome)
            continue
        if outcome.note is not None:
            result.notes.append(Skipped(example_id, where, *outcome.note))
        row: dict[str, Any] = {
            "example_id": example_id,
            "language": language,
            "source_example_id": source,
        }
        if outcome.system is not None and not options.drop_system:
            row["system"] = outcome.system
            result.with_system += 1
        row.update(query=outcome.query, tools=outcome.tools)
        if outcome.expect == "call" and outcome.gold_calls is not None:  # --parser v2
            row["gold_calls"] = outcome.gold_calls
        elif outcome.expect == "call":
            row["gold_call"] = outcome.gold_call
        else:  # an abstention example (--abstention keep)
            row["expect"] = outcome.expect
            if outcome.answer:
                row["answer"] = outcome.answer
        converted.append((row, validate_prepared_row(row, where, number), where))
    kept = _drop_orphans(converted, result)
    rows = sample_rows(
        [row for row, _, _ in kept],
        options.sample,
        options.seed,
        group=lambda row: row["source_example_id"] or row["example_id"],
    )
    if not rows:
        raise InputError(
            "SOM-IMPORT-EMPTY",
            nothing_converted(result.skipped),
            "rows the method cannot score are skipped: see docs/format.md for each reason",
            where=str(path),
        )
    chosen = {row["example_id"] for row in rows}
    check_pairs([example for row, example, _ in kept if row["example_id"] in chosen], str(path))
    write_prepared(out, rows)
    result.rows = rows
    result.written = len(rows)
    return result


def _reader(read: Callable[[], Candidate | Skip]) -> Converter:
    """A ``several_calls`` skip's reading of every call as a converter (so an unreadable call
    is a counted skip, or fatal under ``--strict``, as in any row)."""
    return lambda record, where: read()


def _drop_orphans(converted: list[Converted], result: ImportResult) -> list[Converted]:
    """Translations whose root is not among the converted rows, moved to the skipped ones."""
    roots = {row["example_id"] for row, _, _ in converted if row["source_example_id"] is None}
    skipped_ids = {item.example_id: item for item in result.skipped}
    kept = []
    for row, example, where in converted:
        source = row["source_example_id"]
        if source is not None and source not in roots and source in skipped_ids:
            result.skipped.append(
                Skipped(
                    row["example_id"],
                    where,
                    "root_skipped",
                    f"its root {source!r} was skipped ({skipped_ids[source].reason})",
                )
            )
            continue
        kept.append((row, example, where))
    return kept
