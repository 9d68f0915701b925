"""Load a formatted split (``sommelier.formatted_example.v3`` JSONL; v2 rows read unchanged)
into slices and pairs.

Every line is validated on its own (JSON, then ``schemas/formatted_example.v3.schema.json``, or
v2's for a v2 row,
then the row rules), in file order, so the first bad line is the one reported; errors name
``file:line`` and the field. Then the slice rules run (see docs/formatted_split.md).

Invariants kept by a returned ``FormattedSplit``:

- ``sha256`` is the SHA-256 of the file's bytes exactly as read (every line, blank or not),
  and ``raw`` holds those bytes (what a run copies into its folder);
- every example's ``prompt_sha256`` equals ``sha256(prompt_text)`` (else ``InvariantError``);
- example ids are unique in the file, every row has the same ``split`` value, and every
  ``gold_call`` is one ``{"name": non-empty str, "arguments": object}`` call;
- ``slices`` holds every configured language, in configured order, each non-empty and in
  file order; rows of other languages are left out of ``examples`` and ``slices`` and
  counted in ``left_out`` (which the session summary says);
- ``pairs[target]`` lists ``(root_id, target_id)`` in target-slice file order, each root a
  row of the reference slice (``slices[0]``) and used at most once per target slice.

A row of template policy ``sommelier.native-tools.v1`` holds the template's rendering of the
assistant turn in ``target_text``; its gold call is what parser v1 reads there with the given
``arguments_key`` (:func:`row_gold_call`), status ``ok`` or the row is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core.abstention import EXPECT_ANY_CALL, EXPECT_CALL, expect_of
from pytest_sommelier.core.acceptable import acceptable_shape_error
from pytest_sommelier.core.call_sets import GOLD_CALLS_LIMIT
from pytest_sommelier.core.canonical import pair_set_sha256, prompt_digest, prompt_set_sha256
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY, call_shape_error
from pytest_sommelier.core.parse_v2 import DEFAULT_ORDER, parse_tool_calls
from pytest_sommelier.core.types import Call, Example, FormattedSplit, Suite
from pytest_sommelier.data.json_input import strict_json as strict_json
from pytest_sommelier.data.split.example_ids import EXAMPLE_ID_TEXT, example_id_problem
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1, read_gold_call
from pytest_sommelier.data.split.schema import (
    EXAMPLE_SCHEMA_FILE,
    EXAMPLE_SCHEMAS,
    MISSING_KEY,
    UNKNOWN_KEYS,
    Violation,
    json_path_text,
    violation,
)
from pytest_sommelier.data.split.template_render import template_kwargs_problem
from pytest_sommelier.errors import InputError, InvariantError


def load_split(
    path: str | os.PathLike[str],
    slices: Sequence[str],
    *,
    arguments_key: str = "arguments",
    parser_version: str = "v1",
    parser_order: str = DEFAULT_ORDER,
) -> FormattedSplit:
    """Read and validate the split at ``path`` for the configured ``slices`` (root first);
    ``arguments_key`` is the key parser v1 reads native-policy targets with. Under
    ``parser_version`` ``"v2"`` (``[parser] version``) a call row's ``target_text`` holds one or
    more gold calls (:func:`row_gold_calls`), each example carries them with ``parser_order``;
    under ``"v1"`` exactly one, as always."""
    label = str(path)
    slice_names = _check_slice_names(slices)
    digest = _Digest()
    examples: list[Example] = []
    lines_by_id: dict[str, int] = {}
    split_value: tuple[str, int] | None = None
    tokenizers: dict[tuple[str, str], None] = {}
    for line, record in _records(Path(path), label, digest):
        where = f"{label}:{line}"
        example = _example(record, line, where, arguments_key, parser_version, parser_order)
        first = lines_by_id.setdefault(example.example_id, line)
        if first != line:
            raise InputError(
                "SOM-SPLIT-DUPLICATE-ID",
                f"example_id {example.example_id!r} already used on line {first}",
                "example ids must be unique in the split",
                where=where,
            )
        if split_value is None:
            split_value = (record["split"], line)
        elif record["split"] != split_value[0]:
            raise InputError(
                "SOM-SPLIT-MIXED-SPLIT",
                f"field 'split' is {record['split']!r} but line {split_value[1]} has "
                f"{split_value[0]!r}",
                "a split file holds one split only",
                where=where,
            )
        examples.append(example)
        tokenizers[row_tokenizer(record)] = None
    by_slice = _partition(examples, slice_names, label)
    pairs = _pairs(by_slice, slice_names, label)
    return FormattedSplit(
        path=Path(path),
        sha256=digest.hexdigest(),
        raw=b"".join(digest.chunks),
        left_out=dict(Counter(e.language for e in examples if e.language not in by_slice)),
        split=split_value[0] if split_value else "",
        examples=tuple(e for e in examples if e.language in by_slice),
        slices=by_slice,
        prompt_set_sha256={name: prompt_set_sha256(rows) for name, rows in by_slice.items()},
        pairs={
            target: tuple((r.example_id, t.example_id) for r, t in p) for target, p in pairs.items()
        },
        pair_set_sha256={
            target: pair_set_sha256(
                (r.example_id, r.prompt_sha256, t.example_id, t.prompt_sha256) for r, t in p
            )
            for target, p in pairs.items()
        },
        tokenizers=tuple(tokenizers),
    )


def row_tokenizer(record: dict[str, Any]) -> tuple[str, str]:
    """A formatted row's tokenizer identity, ``(tokenizer_id, tokenizer_revision)`` as text (a
    null revision reads as ``"None"``): what the loader records in ``FormattedSplit.tokenizers``
    and ``inference.split_check`` compares with the base's."""
    return str(record["tokenizer_id"]), str(record["tokenizer_revision"])


def load_suite_split(suite: Suite) -> FormattedSplit:
    """:func:`load_split` of a suite's test split, read as the suite reads it (its slices,
    ``arguments_key`` and ``[parser] version`` / ``order``): the one way a run, a re-score and
    ``sommelier check`` read a suite's split."""
    return load_split(
        suite.test_split,
        suite.slices,
        arguments_key=suite.arguments_key,
        parser_version=suite.parser_version,
        parser_order=suite.parser_order,
    )


class _Digest:
    """SHA-256 of the bytes fed in, which it keeps too (the split's ``raw``)."""

    def __init__(self) -> None:
        self.sha = hashlib.sha256()
        self.chunks: list[bytes] = []

    def update(self, data: bytes) -> None:
        self.sha.update(data)
        self.chunks.append(data)

    def hexdigest(self) -> str:
        return self.sha.hexdigest()


def _check_slice_names(slices: Sequence[str]) -> tuple[str, ...]:
    """At least one slice, no repeats (the suite loader guarantees this for suites)."""
    names = tuple(slices)
    if not names or len(set(names)) != len(names):
        raise InputError(
            "SOM-SPLIT-SLICES",
            f"slices must be a non-empty list of distinct names, got {list(names)!r}",
            "configure suite.slices, the reference slice first",
        )
    return names


# --------------------------------------------------------------------------- reading


def _records(path: Path, label: str, digest: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line, record)`` per non-blank line, feeding every byte read into ``digest``.

    Blank (whitespace-only) lines are allowed only at the end of the file: a blank line
    followed by a record is an error naming the blank line.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise InputError(
            "SOM-SPLIT-MISSING", "split file not found", "check suite.test_split", where=label
        ) from None
    except OSError as exc:  # a folder where the file should be, no permission, ...
        raise InputError(
            "SOM-SPLIT-MISSING",
            f"split file cannot be read: {exc.strerror or exc}",
            "point suite.test_split at a readable JSONL file",
            where=label,
        ) from None
    blank_line: int | None = None
    with handle:
        for line, raw in enumerate(handle, start=1):
            digest.update(raw)
            if not raw.strip():
                blank_line = blank_line or line
                continue
            if blank_line is not None:
                raise InputError(
                    "SOM-SPLIT-BLANK-LINE",
                    "blank line inside the split",
                    "remove it: only trailing blank lines are ignored",
                    where=f"{label}:{blank_line}",
                )
            yield line, _validated_record(raw, f"{label}:{line}")


def _validated_record(raw: bytes, where: str) -> dict[str, Any]:
    """Decode one line as a JSON object that matches the v2 schema.

    Every string of a returned record is valid Unicode (encodable as UTF-8): a ``\\ud800``
    style escape of a lone surrogate is refused here, so digests and artifact writes of the
    record's text can never fail later.
    """
    try:
        record = strict_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(
            "SOM-SPLIT-ENCODING", "line is not valid UTF-8", "write the split as UTF-8", where=where
        ) from None
    except RecursionError:
        raise InputError(
            "SOM-SPLIT-JSON",
            "line is not valid JSON: nested too deeply to decode",
            "each line must be one JSON object",
            where=where,
        ) from None
    except ValueError as exc:
        raise InputError(
            "SOM-SPLIT-JSON",
            f"line is not valid JSON: {_one_line(str(exc))}",
            "each line must be one JSON object",
            where=where,
        ) from None
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(record):
        raise InputError(
            "SOM-SPLIT-ENCODING",
            "line escapes a lone UTF-16 surrogate (e.g. \\ud800), which is not valid Unicode",
            "write the split as UTF-8; re-run sommelier format",
            where=where,
        )
    if not isinstance(record, dict):
        raise InputError(
            "SOM-SPLIT-JSON",
            f"line is a JSON {type(record).__name__}, not an object",
            "each line must be one JSON object",
            where=where,
        )
    version = record.get("schema_version")
    known = isinstance(version, str) and version in EXAMPLE_SCHEMAS
    if "schema_version" in record and not known:
        raise InputError(
            "SOM-SPLIT-SCHEMA-VERSION",
            f"unknown schema_version {_one_line(repr(version), 80)}",
            f"expected {' or '.join(repr(v) for v in EXAMPLE_SCHEMAS)}; re-run sommelier format",
            where=where,
        )
    schema_file = EXAMPLE_SCHEMAS[str(version)] if known else EXAMPLE_SCHEMA_FILE
    found = violation(schema_file, record)
    if found is not None:
        raise _schema_error(found, where)
    return record


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_TEXT = re.compile(r"\\u[dD][89a-fA-F]")
"""What a line holding a lone surrogate must contain: UTF-8 cannot encode one, so only a
``\\uD800``-``\\uDFFF`` escape decodes to one (a line without such an escape skips the walk)."""


def _has_lone_surrogate(value: Any) -> bool:
    """True if a string anywhere in the decoded JSON ``value`` cannot be encoded as UTF-8."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def lone_surrogate_path(value: Any, path: str = "") -> str | None:
    """The path (``query``, ``tools[0].description``) of the first string, key or value, in
    the decoded JSON ``value`` that holds a lone UTF-16 surrogate (a ``\\ud800`` escape,
    which JSON allows and UTF-8 cannot encode), or None. The one check every reader of JSON
    input applies before the text is digested, written or printed."""
    if not _has_lone_surrogate(value):
        return None
    if isinstance(value, str):
        return path or "(the value)"
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if _has_lone_surrogate(key):
                return f"{where} (a key)"
            found = lone_surrogate_path(item, where)
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = lone_surrogate_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return path or "(the value)"


def _one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def json_lines(text: str) -> list[str]:
    """The lines of a JSON-lines text, split at ``\n`` only (a trailing ``\r`` kept, which JSON
    reads as whitespace): ``str.splitlines`` would also split inside a string holding a raw
    U+2028, U+0085 or form feed, which JSON allows unescaped. A final newline ends the last
    line; it does not start an empty one."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def _schema_error(found: Violation, where: str) -> InputError:
    """One schema violation as an ``InputError`` naming the field."""
    if found.kind == MISSING_KEY:
        field = json_path_text([*found.path, found.keys[0]])
        return InputError(
            "SOM-SPLIT-FIELD",
            f"missing field {field!r}",
            "every v2 field is required (see docs/formatted_split.md)",
            where=where,
        )
    if found.kind == UNKNOWN_KEYS:
        return InputError(
            "SOM-SPLIT-FIELD",
            f"unknown field {found.keys[0]!r}",
            "a v2 row has exactly the documented fields",
            where=where,
        )
    message = found.message
    if len(message) > 120:
        message = message[:117] + "..."
    return InputError(
        "SOM-SPLIT-FIELD",
        f"field {json_path_text(found.path)!r}: {message}",
        "see docs/formatted_split.md for the field types",
        where=where,
    )


# --------------------------------------------------------------------------- rows


def _example(
    record: dict[str, Any],
    line: int,
    where: str,
    arguments_key: str = "arguments",
    parser_version: str = "v1",
    parser_order: str = DEFAULT_ORDER,
) -> Example:
    """An ``Example`` from a schema-valid record, after the id, digest and gold-call checks."""
    for field in ("example_id", "source_example_id"):
        problem = None if record[field] is None else example_id_problem(record[field])
        if problem is not None:
            raise InputError(
                "SOM-SPLIT-FIELD",
                f"field {field!r} {problem}",
                f"an example id is {EXAMPLE_ID_TEXT}: re-run sommelier format",
                where=where,
            )
    kwargs = record.get("template_kwargs")
    problem = None if kwargs is None else template_kwargs_problem(kwargs)
    if problem is not None:
        raise InputError(
            "SOM-SPLIT-FIELD",
            f"field 'template_kwargs' {problem}",
            "re-run sommelier format with valid --template-kwarg options",
            where=where,
        )
    if prompt_digest(record["prompt_text"], kwargs) != record["prompt_sha256"]:
        covered = "sha256(prompt_text)" if not kwargs else "the digest of prompt_text and "
        raise InvariantError(
            "SOM-SPLIT-PROMPT-SHA",
            f"example {record['example_id']!r}: prompt_sha256 does not match "
            f"{covered}{'' if not kwargs else 'template_kwargs'}",
            "the prompt or its template options were edited after formatting: re-run "
            "sommelier format",
            where=where,
        )
    example = Example(
        example_id=record["example_id"],
        language=record["language"],
        source_example_id=record["source_example_id"],
        prompt_text=record["prompt_text"],
        prompt_sha256=record["prompt_sha256"],
        gold_call=_row_gold(record, where, arguments_key, several=parser_version == "v2"),
        line=line,
        acceptable_arguments=_acceptable(record, where, several=parser_version == "v2"),
        cluster_id=record.get("cluster_id"),
        tools=record.get("tools"),
        template_kwargs=kwargs or None,
        full_text=record["full_text"],
        expect=expect_of(record),
        call_markers=tuple(record.get("call_markers") or ()),
    )
    if parser_version == "v2":
        return _v2_example(example, record, where, arguments_key, parser_order)
    return example


def _v2_example(
    example: Example, record: dict[str, Any], where: str, arguments_key: str, order: str
) -> Example:
    """``example`` under parser v2: its gold calls (a ``call`` row) and the suite's order; the
    first gold call stays ``gold_call`` (what a v1 reader of the record shows). A row's
    ``acceptable_arguments`` hold one object per gold call (a list for several,
    ``core.acceptable``)."""
    if example.expect != EXPECT_CALL:
        return replace(example, parser_version="v2")
    calls = row_gold_calls(record, where, arguments_key)
    acceptable = example.acceptable_arguments
    entries = 1 if isinstance(acceptable, dict) else len(acceptable or ())
    if acceptable is not None and entries != len(calls):
        raise InputError(
            "SOM-SPLIT-FIELD",
            f"example {record['example_id']!r}: field 'acceptable_arguments' holds values of "
            f"{entries} call{'s' if entries != 1 else ''}, the row {len(calls)} gold calls",
            "acceptable values hold one object per gold call: re-run sommelier import bfcl "
            "--parser v2 and sommelier format --parser v2",
            where=where,
        )
    return replace(
        example,
        gold_call=calls[0],
        gold_calls=tuple(calls),
        call_order=order,
        parser_version="v2",
    )


def row_gold_calls(
    record: dict[str, Any], where: str = "", arguments_key: str = "arguments"
) -> list[Call]:
    """The gold calls of a schema-valid ``call`` row under parser v2: ``target_text`` read by
    ``sommelier.parser.v2`` (a native-policy row, with ``arguments_key``) or, for
    tools-in-system rows, a JSON array of one or more call objects; InputError naming the row
    otherwise."""
    if record.get("template_policy") != POLICY_NATIVE_TOOLS_V1:
        _check_arguments_key(record, where, arguments_key)
        return _gold_calls(record["target_text"], record["example_id"], where, several=True)
    calls, status = parse_tool_calls(record["target_text"], arguments_key=arguments_key)
    if calls is None:
        raise InputError(
            "SOM-SPLIT-GOLD-CALL",
            f"example {record['example_id']!r}: field 'target_text' reads as {status} under "
            f"parser v2 with arguments_key {arguments_key!r}",
            "set [suite] arguments_key to the key it was formatted with (sommelier format "
            "--arguments-key), or re-run sommelier format",
            where=where or None,
        )
    return calls


def _row_gold(
    record: dict[str, Any], where: str, arguments_key: str, *, several: bool = False
) -> Call | None:
    """The gold call of a ``call`` row (:func:`row_gold_call`); None for a row that expects no
    single gold call (``core.abstention``), whose ``target_text`` is its gold text answer. An
    ``any_call`` row must list its ``tools`` (the offered tools a call must name), and neither
    kind may carry ``acceptable_arguments`` (values of a gold call it does not have)."""
    expect = expect_of(record)
    if expect == EXPECT_CALL:
        if not record["target_text"]:
            raise InputError(
                "SOM-SPLIT-GOLD-CALL",
                f"example {record['example_id']!r}: field 'target_text' is empty",
                "a call example's target_text holds its gold call; an abstention example "
                'says expect = "no_call"',
                where=where,
            )
        if several:  # parser v2: one or more gold calls, the first is gold_call
            return row_gold_calls(record, where, arguments_key)[0]
        return row_gold_call(record, where, arguments_key)
    if expect == EXPECT_ANY_CALL and not record.get("tools"):
        raise InputError(
            "SOM-SPLIT-FIELD",
            f"example {record['example_id']!r}: an any_call row lists no tools",
            "re-run sommelier format: it writes the offered tools of an any_call row",
            where=where,
        )
    if record.get("acceptable_arguments") is not None:
        raise InputError(
            "SOM-SPLIT-FIELD",
            f"example {record['example_id']!r}: field 'acceptable_arguments' on a row that "
            f"expects {expect!r}",
            "acceptable values belong to a gold call; drop the field",
            where=where,
        )
    return None


def _acceptable(
    record: dict[str, Any], where: str, *, several: bool = False
) -> dict[str, Any] | list[dict[str, Any]] | None:
    """The optional ``acceptable_arguments`` (BFCL's acceptable values), shape-checked; a list
    (one object per gold call) only under parser v2 (``several``)."""
    value = record.get("acceptable_arguments")
    if value is None:
        return None
    problem = acceptable_shape_error(value)
    if problem is None and isinstance(value, list) and not several:
        problem = "a list (values of several gold calls) is read under parser v2 only"
    if problem is not None:
        raise InputError(
            "SOM-SPLIT-FIELD",
            f"field 'acceptable_arguments': {problem}",
            "write it with sommelier import bfcl and sommelier format, or leave it out",
            where=where,
        )
    return value


def row_gold_call(
    record: dict[str, Any], where: str = "", arguments_key: str = "arguments"
) -> Call:
    """The gold call of a schema-valid formatted row, by its template policy: parser v1 over a
    native-policy ``target_text`` (``data.split.native_policy.read_gold_call``), else the one-call
    JSON array of tools-in-system, whose instruction and target name ``arguments`` (so such a
    row is refused under any other key: every output would read as invalid_shape); InputError
    naming the row otherwise, and a native target holding several calls (parser v2 reads them
    all; v1 would keep the first), as a JSON array of several is."""
    if record.get("template_policy") != POLICY_NATIVE_TOOLS_V1:
        _check_arguments_key(record, where, arguments_key)
        return _gold_calls(record["target_text"], record["example_id"], where)[0]
    call, status = read_gold_call(record["target_text"], arguments_key)
    if call is None:
        raise InputError(
            "SOM-SPLIT-GOLD-CALL",
            f"example {record['example_id']!r}: field 'target_text' reads as {status} under "
            f"parser v1 with arguments_key {arguments_key!r}",
            "set [suite] arguments_key to the key it was formatted with (sommelier format "
            "--arguments-key), or re-run sommelier format",
            where=where or None,
        )
    calls, _ = parse_tool_calls(record["target_text"], arguments_key=arguments_key)
    if calls is not None and len(calls) > 1:  # v1 reads the first: the rest would be lost
        raise InputError(
            "SOM-SPLIT-GOLD-CALL",
            f"example {record['example_id']!r}: field 'target_text' holds {len(calls)} calls, "
            "not exactly one (parser v1 reads one call per answer)",
            'read several gold calls with [parser] version = "v2", or give the row one call',
            where=where or None,
        )
    return call


def _check_arguments_key(record: dict[str, Any], where: str, arguments_key: str) -> None:
    """A tools-in-system row's instruction and target name ``arguments``: refused under any
    other key (every output would read as invalid_shape)."""
    if arguments_key != DEFAULT_ARGUMENTS_KEY:
        raise InputError(
            "SOM-SPLIT-ARGUMENTS-KEY",
            f"example {record['example_id']!r}: template policy "
            f"{record.get('template_policy')!r} names the call's arguments 'arguments', but "
            f"the split is read with arguments_key {arguments_key!r}",
            "remove [suite] arguments_key, or format the split with --policy "
            f"{POLICY_NATIVE_TOOLS_V1} --arguments-key {arguments_key}",
            where=where or None,
        )


def _gold_calls(
    target_text: str, example_id: str, where: str, *, several: bool = False
) -> list[Call]:
    """The gold calls in ``target_text``: a JSON array of exactly one call object, or (parser
    v2, ``several``) of one or more."""
    try:
        value = strict_json(target_text)
    except RecursionError:
        problem = "is not valid JSON (nested too deeply to decode)"
    except ValueError as exc:
        problem = f"is not valid JSON ({_one_line(str(exc))})"
    else:
        found = _gold_problem(value, several)
        if (
            found is None
            and _SURROGATE_ESCAPE_TEXT.search(target_text)
            and _has_lone_surrogate(value)
        ):
            found = "escapes a lone UTF-16 surrogate, which is not valid Unicode"
        if found is None:
            return cast(list[Call], value)
        problem = found
    count = f"one to {GOLD_CALLS_LIMIT} calls" if several else "exactly one call"
    raise InputError(
        "SOM-SPLIT-GOLD-CALL",
        f"example {example_id!r}: field 'target_text' {problem}",
        f'target_text must be [{{"name": "...", "arguments": {{...}}}}] with {count}',
        where=where,
    )


def _gold_problem(value: Any, several: bool = False) -> str | None:
    """Why ``value`` is not a one-call array, or (``several``) an array of one or more calls
    (None when it is one)."""
    if not isinstance(value, list):
        return "is not a JSON array"
    if several and not value:
        return "holds no call"
    if several and len(value) > GOLD_CALLS_LIMIT:
        return f"holds {len(value)} calls, more than the {GOLD_CALLS_LIMIT} one row may hold"
    if not several and len(value) != 1:
        return f"holds {len(value)} calls, not exactly one"
    for index, call in enumerate(value):
        shape = call_shape_error(call)
        if shape is None:
            continue
        which = f"call {index}" if several and len(value) > 1 else "a call"
        if not shape.field:
            return f"holds {which} that {shape.problem}"
        whose = f"call {index} whose" if several and len(value) > 1 else "a call whose"
        return f"holds {whose} {shape.field!r} {shape.problem}"
    return None


# --------------------------------------------------------------------------- slices


def _partition(
    examples: Sequence[Example], slices: Sequence[str], label: str
) -> dict[str, tuple[Example, ...]]:
    """Configured slices in configured order; rows of other languages are left out."""
    by_slice: dict[str, list[Example]] = {name: [] for name in slices}
    for example in examples:
        if example.language in by_slice:
            by_slice[example.language].append(example)
    for name, rows in by_slice.items():
        if not rows:
            present = sorted({e.language for e in examples})
            raise InputError(
                "SOM-SPLIT-EMPTY-SLICE",
                f"configured slice {name!r} has no rows",
                f"languages in the split: {', '.join(present) or '(none)'}; "
                "fix suite.slices or the split",
                where=label,
            )
    return {name: tuple(rows) for name, rows in by_slice.items()}


def _pairs(
    by_slice: dict[str, tuple[Example, ...]], slices: Sequence[str], label: str
) -> dict[str, list[tuple[Example, Example]]]:
    """Matched (root, target) pairs of every non-reference slice, in target file order.

    Rows with a null ``source_example_id`` are unpaired; a non-null one must name a row of the
    reference slice that expects what it expects (``expect``: a pair whose rows expect a call
    and no call has no paired outcome), and a root pairs with at most one row per target slice.
    """
    reference = slices[0]
    roots = {e.example_id: e for e in by_slice[reference]}
    pairs: dict[str, list[tuple[Example, Example]]] = {}
    for target in slices[1:]:
        used: dict[str, str] = {}
        pairs[target] = []
        for example in by_slice[target]:
            source = example.source_example_id
            if source is None:
                continue
            where = f"{label}:{example.line}"
            if source not in roots:
                raise InputError(
                    "SOM-SPLIT-DANGLING-SOURCE",
                    f"example {example.example_id!r}: source_example_id {source!r} is not a "
                    f"row of the reference slice {reference!r}",
                    "point it at a reference-slice example, or set it to null (unpaired)",
                    where=where,
                )
            if source in used:
                raise InputError(
                    "SOM-SPLIT-DUPLICATE-PAIR",
                    f"example {example.example_id!r}: root {source!r} is already paired with "
                    f"{used[source]!r} in slice {target!r}",
                    "a root example pairs with at most one row per slice",
                    where=where,
                )
            if example.expect != roots[source].expect:
                raise InputError(
                    "SOM-SPLIT-FIELD",
                    f"example {example.example_id!r}: field 'expect' is {example.expect!r}, but "
                    f"its root {source!r} expects {roots[source].expect!r}",
                    "a translation expects what its root expects (sommelier format refuses "
                    "such a pair); fix the row or re-run sommelier format",
                    where=where,
                )
            used[source] = example.example_id
            pairs[target].append((roots[source], example))
    return pairs
