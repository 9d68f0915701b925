"""What every importer shares: skip records, the gold and schema checks, sampling, the summary
and the atomic write of prepared examples (``sommelier import bfcl`` uses the same pieces).

An importer turns one input row into a :class:`Candidate` (query, tools, gold call, optional
system turn) or a :class:`Skip` (a row the method cannot score, with a reason), and raises
``InputError`` for malformed input. :func:`import_records` does the rest for the training-data
formats (``openai-chat``, ``xlam``, ``hermes``).

Invariants kept:

- every skipped row is counted with its reason, id and location (never silent);
- every written row passes the prepared-row validation of ``sommelier format``
  (``formatting.validate_prepared_row``) and the pair rules (``formatting.check_pairs``);
- a malformed file (not JSON lines, not a JSON array of objects, not UTF-8, not Parquet) is one
  ``InputError`` naming the file and line or row; nothing is written;
- a malformed row of a well-formed file (a missing field, a wrong type, a call that is neither
  JSON nor a Python literal) is a counted skip (:func:`convert_row`: ``gold_unreadable`` for its
  gold call, ``malformed_row`` for the rest; ``legacy_functions`` for OpenAI's old
  ``functions`` / ``function_call`` rows), never a refusal of the whole file; with ``--strict``
  (``ImportOptions.strict``) any skip is fatal: a malformed row its own line, another skip
  ``SOM-IMPORT-STRICT`` (:func:`strict_refusal`);
- a ``--sample`` draw is seeded (``random.Random(seed)``), keeps file order, and keeps a root
  and its translations together;
- a row with several calls is the ``several_calls`` skip under ``--parser v1`` (the default,
  as before 0.5); under ``--parser v2`` its calls are read (:func:`several_calls`: the skip
  carries how) and the row is kept with ``gold_calls``.
"""

from __future__ import annotations

import ast
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sommelier.core.sampling import sample_positions
from pytest_sommelier.data.atomic import write_atomic
from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT, depth_problem
from pytest_sommelier.data.split.load import strict_json
from pytest_sommelier.data.split.schema import arguments_error, parameters_error
from pytest_sommelier.errors import InputError

DEFAULT_LANGUAGE = "en"
FIRST_IDS = 5
"""How many rows per skip reason the summary of a training-data import names."""
LITERAL_LIMIT = 1_000_000
"""Longest text read as a Python literal (``ast.literal_eval`` is not linear in its input)."""


@dataclass(frozen=True)
class Skipped:
    """One input row left out, with where it is and why (reported, never silent)."""

    example_id: str
    where: str
    reason: str
    detail: str


@dataclass(frozen=True)
class Skip:
    """A converter's verdict on a row the method cannot score: a reason and what was seen;
    ``error``: the malformed row's own line (``gold_unreadable``), raised as it is under
    ``--strict``."""

    reason: str
    detail: str
    error: InputError | None = field(default=None, compare=False)
    several: Callable[[], Candidate | Skip] | None = field(default=None, compare=False)
    """A ``several_calls`` skip's reading of every call, run under ``--parser v2`` only
    (:func:`several_calls`)."""


@dataclass(frozen=True)
class Candidate:
    """The parts of a prepared example a converter read from one row; ``note``: what the
    summary says of a row converted as it is (``python_literal_gold``: a Hermes call written
    as a Python literal), a ``(reason, detail)``."""

    query: str
    tools: list[dict[str, Any]]
    gold_call: dict[str, Any] | None  # None for an abstention row (``expect`` not "call")
    system: str | None = None
    expect: str = "call"  # "no_call": the assistant answered without a call (core.abstention)
    answer: str | None = None  # the assistant's text answer of an abstention row
    note: tuple[str, str] | None = None
    gold_calls: list[dict[str, Any]] | None = None
    """Every call of a row with several (``--parser v2``), in order; ``gold_call`` is the
    first."""

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The gold calls: ``gold_calls``, else the one ``gold_call`` (none for abstention)."""
        if self.gold_calls is not None:
            return self.gold_calls
        return [] if self.gold_call is None else [self.gold_call]


MALFORMED_ROW = "malformed_row"
"""The skip reason of a row of a well-formed file that is malformed (a missing field, a wrong
type): the row's own error line is its detail."""
GOLD_UNREADABLE = "gold_unreadable"
"""The skip reason of a row whose gold call cannot be read (neither JSON nor a Python literal,
no name, arguments that are not an object)."""
LEGACY_FUNCTIONS = "legacy_functions"
"""The skip reason of an OpenAI row in the old ``functions`` / ``function_call`` format."""
PYTHON_LITERAL_GOLD = "python_literal_gold"
"""The note on a row whose gold call is a Python literal (single quotes, ``True``): converted
to JSON, but a model trained on such rows writes that form, which ``sommelier.parser.v1``
reads as ``invalid_json``."""
ROW_CODES = frozenset({"SOM-IMPORT-FIELD", "SOM-IMPORT-JSON"})
"""The codes a converter raises for one malformed row (skipped, or fatal with ``--strict``)."""


@dataclass(frozen=True)
class Importer:
    """The importer contract (built-ins and extensions alike, registered by name in
    ``pytest_sommelier.registry``): a one-line ``description`` (``sommelier import --help``)
    and ``convert(row, where) -> Candidate | Skip``, a pure function of one row (``where`` names
    its file and line for errors). Every candidate then goes through the same checks
    (``check_candidate``, the prepared-row validation of ``sommelier format``)."""

    description: str
    convert: Callable[[dict[str, Any], str], Candidate | Skip]


@dataclass(frozen=True)
class ImportOptions:
    """``sommelier import FORMAT`` options: where ids, languages and roots come from."""

    language: str | None = None
    language_field: str | None = None
    source_field: str | None = None
    id_field: str | None = None
    sample: int | None = None
    seed: int = 13
    drop_system: bool = False
    """Drop each row's own system turn (``--drop-system``), so the default format policy,
    which writes its own, takes the rows."""
    abstention: str = "skip"
    """``--abstention keep|skip``: rows whose assistant answers without a call while tools are
    offered become abstention examples (``expect = "no_call"``), or are skipped (``no_call``,
    the default, as before 0.5)."""
    strict: bool = False
    """Any skipped row is fatal (``--strict``): a malformed row its own line, another skip
    ``SOM-IMPORT-STRICT``; nothing is written."""
    parser: str = "v1"
    """``--parser v1|v2``: the parser the rows are for; under ``v2`` a row with several calls
    is kept (prepared ``gold_calls``) instead of skipped as ``several_calls``."""


@dataclass
class ImportResult:
    """What one import did: rows read, rows converted (written, after any sample), skips."""

    label: str
    read: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    with_system: int = 0
    """Converted rows that keep their own system turn (before any sample)."""
    written: int = 0
    notes: list[Skipped] = field(default_factory=list)
    """Converted rows the summary says something of (``Candidate.note``)."""


# ---------------------------------------------------------------- malformed input


def malformed(where: str, name: str, message: str, hint: str = "") -> InputError:
    """The one error for a malformed input row: file, line or row, and field."""
    return InputError(
        "SOM-IMPORT-FIELD",
        f"field {name!r}: {message}",
        hint or "fix the row, or check the format given to sommelier import",
        where=where,
    )


def wrong_type(where: str, name: str, value: Any, expected: str, hint: str = "") -> InputError:
    """``malformed`` for a field that is missing (None) or not ``expected``."""
    problem = "missing" if value is None else f"must be {expected}, got {type_name(value)}"
    return malformed(where, name, problem, hint)


def type_name(value: Any) -> str:
    """The JSON name of ``value``'s type (``null``, ``string``, ``array``, ...)."""
    if value is None:
        return "null"
    names = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}
    return names.get(type(value), "object" if isinstance(value, dict) else type(value).__name__)


def need(record: dict[str, Any], name: str, where: str, kind: type | tuple[type, ...]) -> Any:
    """``record[name]``, which must be present and of ``kind``; malformed otherwise."""
    if name not in record or record[name] is None:
        raise malformed(where, name, "missing")
    value = record[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        expected = kind if isinstance(kind, tuple) else (kind,)
        names = " or ".join(type_name(k()) for k in expected)
        raise malformed(where, name, f"must be {names}, got {type_name(value)}")
    return value


def decode_text(text: str, where: str, name: str, *, literal: bool = False) -> Any:
    """A JSON value written as a string (OpenAI's arguments, xLAM's columns).

    With ``literal``, a text that is not JSON is read as a Python literal
    (``ast.literal_eval``, which evaluates no code), as Hermes rows write them; the value must
    then be JSON (tuples read as arrays). Anything else is malformed, naming ``name``.
    """
    try:
        return strict_json(text)
    except (ValueError, RecursionError) as exc:
        problem = str(exc)[:120]
    if literal and len(text) <= LITERAL_LIMIT:
        try:
            return json_value(ast.literal_eval(text.strip()), where, name)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass
        problem = "neither JSON nor a Python literal"
    raise InputError(
        "SOM-IMPORT-JSON", f"field {name!r}: {problem}", "write valid JSON", where=where
    )


def json_value(value: Any, where: str, name: str) -> Any:
    """``value`` as a JSON value: tuples become lists; sets, bytes, non-string keys,
    non-finite numbers and nesting deeper than ``FIELD_DEPTH_LIMIT`` (checked first, without
    recursion) are malformed (naming ``name``)."""
    deep = depth_problem(value, FIELD_DEPTH_LIMIT)
    if deep is not None:
        raise malformed(where, name, deep)
    return _json_value(value, where, name)


def _json_value(value: Any, where: str, name: str) -> Any:
    """``json_value`` below its depth check."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise malformed(where, name, f"holds {value}, which is not JSON")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_value(item, where, name) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise malformed(where, name, "holds an object with a key that is not a string")
        return {key: _json_value(item, where, name) for key, item in value.items()}
    raise malformed(where, name, f"holds a {type(value).__name__}, which is not JSON")


def text_content(value: Any, where: str, name: str) -> str:
    """A message's text: a string, or a list of ``{"type": "text", "text": ...}`` parts
    (joined); malformed otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        for part in value
    ):
        return "".join(part["text"] for part in value)
    raise wrong_type(where, name, value, "a string or text parts")


def convert_row(
    convert: Callable[[dict[str, Any], str], Candidate | Skip],
    record: dict[str, Any],
    where: str,
    *,
    strict: bool = False,
) -> Candidate | Skip:
    """``convert(record, where)``, a malformed row (one of :data:`ROW_CODES`) a ``Skip``
    (``malformed_row``, the error's message as its detail); with ``strict`` the error is
    raised as it is. Any other error (a contract breach, an option) is raised."""
    try:
        return convert(record, where)
    except InputError as error:
        if strict or error.code not in ROW_CODES:
            raise
        return Skip(MALFORMED_ROW, error.message)


SEVERAL_CALLS = "several_calls"
"""The skip reason of a row with more than one call under ``--parser v1``."""
PARSERS = ("v1", "v2")
"""``sommelier import ... --parser``: v1 (one call per row, the default) or v2 (several)."""


def several_calls(detail: str, read: Callable[[], Candidate | Skip]) -> Skip:
    """The ``several_calls`` skip of a row with more than one call (``detail`` says how many),
    carrying how ``--parser v2`` keeps it: ``read()`` reads every call and returns the row's
    candidate (``gold_calls`` set), or the skip (or the ``InputError``) a one-call row with such
    a call gets. Nothing of it runs under v1."""
    return Skip(SEVERAL_CALLS, detail, several=read)


def unreadable_gold(error: InputError, text: str | None = None) -> Skip:
    """The ``gold_unreadable`` skip of a gold call that could not be read (``error``, from the
    shared decoders); ``text``, the call as written, adds what is wrong with it when it holds
    a literal backslash-n (a row whose newlines were escaped twice)."""
    detail = error.message
    if text is not None and "\\n" in text:
        detail += " (it holds a literal backslash-n: the row's newlines were escaped twice)"
    return Skip(GOLD_UNREADABLE, detail, error)


def strict_refusal(skipped: Skipped, skip: Skip | None = None) -> InputError:
    """``--strict``: the first skipped row as its own error (a malformed row's, ``skip.error``)
    or one ``SOM-IMPORT-STRICT`` line."""
    if skip is not None and skip.error is not None:
        return skip.error
    return InputError(
        "SOM-IMPORT-STRICT",
        f"row {skipped.example_id} is skipped ({skipped.reason}): {skipped.detail[:200]}",
        "leave --strict out to skip such rows (each counted in the summary), or fix the row",
        where=skipped.where,
    )


def is_python_literal(text: str) -> bool:
    """Whether ``text`` is not JSON but reads as a Python literal (what a Hermes row's
    ``<tool_call>`` often holds): ``decode_text(..., literal=True)`` took the second path."""
    try:
        strict_json(text)
        return False
    except (ValueError, RecursionError):
        pass
    if len(text) > LITERAL_LIMIT:
        return False
    try:
        ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        return False
    return True


# ---------------------------------------------------------------- tools and gold


def tool_from_spec(spec: Any, where: str, name: str) -> dict[str, Any]:
    """One tool in prepared shape ``{name, description?, parameters}`` from an OpenAI function
    spec (``{"type": "function", "function": {...}}``) or a bare ``{name, ...}``.

    ``parameters`` absent or null is ``{"type": "object", "properties": {}}``; one without
    ``type`` gets ``"type": "object"`` (the only type function parameters have); a JSON string
    is decoded. Other keys (``strict``, ``returns``, ...) are dropped.
    """
    if not isinstance(spec, dict):
        raise wrong_type(where, name, spec, "an object")
    if isinstance(spec.get("function"), dict):
        spec, name = spec["function"], f"{name}.function"
    tool_name = spec.get("name")
    if not isinstance(tool_name, str) or not tool_name.strip():
        raise malformed(where, f"{name}.name", "must be a non-empty string")
    tool: dict[str, Any] = {"name": tool_name}
    description = spec.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise malformed(where, f"{name}.description", "must be a string")
        tool["description"] = description
    parameters = spec.get("parameters")
    if isinstance(parameters, str):
        parameters = decode_text(parameters, where, f"{name}.parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise wrong_type(where, f"{name}.parameters", parameters, "an object")
    if "type" not in parameters:
        parameters = {"type": "object", **parameters}
    tool["parameters"] = json_value(parameters, where, f"{name}.parameters")
    return tool


def call_from_spec(spec: Any, where: str, name: str, *, literal: bool = False) -> dict[str, Any]:
    """One call ``{name, arguments}`` from an OpenAI tool call (``{"type": "function",
    "function": {...}}``) or a bare ``{name, arguments}``; arguments given as a JSON string
    (as OpenAI writes them) are decoded, and must be an object."""
    if not isinstance(spec, dict):
        raise wrong_type(where, name, spec, "an object")
    if isinstance(spec.get("function"), dict):
        spec, name = spec["function"], f"{name}.function"
    call_name = spec.get("name")
    if not isinstance(call_name, str) or not call_name:
        raise malformed(where, f"{name}.name", "must be a non-empty string")
    if "arguments" not in spec:
        raise malformed(where, f"{name}.arguments", "missing")
    arguments = spec["arguments"]
    if isinstance(arguments, str):
        arguments = decode_text(arguments, where, f"{name}.arguments", literal=literal)
    if not isinstance(arguments, dict):
        raise wrong_type(where, f"{name}.arguments", arguments, "an object")
    return {"name": call_name, "arguments": json_value(arguments, where, f"{name}.arguments")}


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is not a JSON Schema (Draft 2020-12) object schema, or None."""
    if schema.get("type") != "object":
        return f"parameters have type {schema.get('type')!r}, not 'object'"
    problem = parameters_error(schema)
    if problem is not None:
        return f"parameters are not JSON Schema: {problem[:160]}"
    return None


ABSTENTION_CHOICES = ("keep", "skip")
KEEP_HINT = "--abstention keep imports it as an abstention example"


def abstention_skip(candidate: Candidate, abstention: str) -> Skip | None:
    """The ``no_call`` skip of an abstention candidate under ``--abstention skip`` (the detail
    says how to keep it); None for a call candidate or under ``keep``."""
    if candidate.expect == "call" or abstention == "keep":
        return None
    return Skip("no_call", f"the assistant answers without a call ({KEEP_HINT})")


def gold_problem(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` do not validate against the tool's ``schema`` (first error, by
    ``data.split.schema.arguments_error``, the one gold-arguments rule), or None."""
    wrong = arguments_error(schema, arguments)
    if wrong is None:
        return None
    return f"gold arguments{wrong[0]}: {wrong[1][:160]}"


def check_candidate(candidate: Candidate) -> Skip | None:
    """The skip reasons every importer shares, in this order: ``empty_query``,
    ``duplicate_tool``, ``invalid_schema``, ``undeclared_tool``, ``gold_invalid`` (the last two
    for each gold call, in order; the detail names the call of a row with several)."""
    if not candidate.query.strip():
        return Skip("empty_query", "the user turn is empty")
    names = [tool["name"] for tool in candidate.tools]
    for index, name in enumerate(names):
        if name in names[:index]:
            return Skip("duplicate_tool", f"tool {name!r} is declared twice")
    for tool in candidate.tools:
        problem = schema_problem(tool["parameters"])
        if problem is not None:
            return Skip("invalid_schema", f"tool {tool['name']!r}: {problem}")
    by_name = {tool["name"]: tool for tool in candidate.tools}
    calls = candidate.calls  # none for an abstention row: nothing to check against the tools
    for index, gold in enumerate(calls):
        which = f"call {index}" if len(calls) > 1 else "the call"
        if gold["name"] not in by_name:
            return Skip("undeclared_tool", f"{which} names {gold['name']!r}, not a declared tool")
        problem = gold_problem(by_name[gold["name"]]["parameters"], gold["arguments"])
        if problem is not None:
            return Skip("gold_invalid", problem if len(calls) == 1 else f"{which}: {problem}")
    return None


# ---------------------------------------------------------------- sampling, summary, writing


def sample_rows(
    rows: list[dict[str, Any]],
    sample: int | None,
    seed: int,
    *,
    group: Callable[[dict[str, Any]], str] | None = None,
    code: str = "SOM-IMPORT-SAMPLE",
) -> list[dict[str, Any]]:
    """``sample`` groups drawn without replacement with ``random.Random(seed)``, rows in their
    original order (all rows when ``sample`` is None or not smaller than the number of groups).

    A group is one row, or with ``group`` every row sharing ``group(row)`` (a root and its
    translations). InputError ``code`` (``SOM-IMPORT-SAMPLE``, ``SOM-BFCL-SAMPLE`` for
    ``sommelier import bfcl``) naming --sample when ``sample`` is not positive. The draw is
    ``core.sampling.sample_positions`` over the groups.
    """
    if sample is not None and sample <= 0:
        raise InputError(
            code,
            f"--sample {sample} is not positive",
            "give a positive number of rows",
            where="--sample",
        )
    keys = [group(row) if group else str(index) for index, row in enumerate(rows)]
    order = list(dict.fromkeys(keys))
    if sample is None or sample >= len(order):
        return list(rows)
    chosen = {order[index] for index in sample_positions(len(order), sample, seed)}
    return [row for row, key in zip(rows, keys, strict=True) if key in chosen]


def nothing_converted(skipped: Sequence[Skipped]) -> str:
    """The message of an import that converted no row, with the skips it would otherwise only
    point at: ``no row converted: 3 skipped (several_calls 2, no_call 1); first: ID (reason):
    detail [where]`` (one line; the error's own collapsing of white space keeps it so)."""
    if not skipped:
        return "no row converted: the input holds no row"
    counts = Counter(item.reason for item in skipped)
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
    first = skipped[0]
    detail = first.detail if len(first.detail) <= 160 else first.detail[:157] + "..."
    return (
        f"no row converted: {len(skipped)} skipped ({reasons}); first: {first.example_id} "
        f"({first.reason}): {detail} [{first.where}]"
    )


def summary_lines(
    label: str,
    converted: int,
    skipped: Sequence[Skipped],
    notes: Sequence[Skipped] = (),
    *,
    limit: int | None = FIRST_IDS,
) -> list[str]:
    """The import summary: ``label: C converted, S skipped (reason n, ...)``, then each skipped
    row (and note) as ``  skipped ID (reason): detail [where]``, at most ``limit`` per reason
    (``None``: all), with ``  ... and K more REASON`` for the rest."""
    counts = Counter(item.reason for item in skipped)
    head = f"{label}: {converted} converted, {len(skipped)} skipped"
    if counts:
        head += " (" + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) + ")"
    lines = [head]
    for kind, items in (("skipped", skipped), ("note", notes)):
        shown: Counter[str] = Counter()
        for item in items:
            shown[item.reason] += 1
            if limit is None or shown[item.reason] <= limit:
                lines.append(
                    f"  {kind} {item.example_id} ({item.reason}): {item.detail} [{item.where}]"
                )
        for reason, total in shown.items():
            if limit is not None and total > limit:
                lines.append(f"  ... and {total - limit} more {kind} {reason}")
    return lines


def prepared_line(row: dict[str, Any]) -> str:
    """One prepared JSONL line (UTF-8 text, key order as built)."""
    return json.dumps(row, ensure_ascii=False, allow_nan=False)


def write_prepared(out: str | Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write prepared rows as JSONL through the one atomic writer (whole file or the old one)."""
    write_atomic(out, (prepared_line(row) + "\n" for row in rows))
