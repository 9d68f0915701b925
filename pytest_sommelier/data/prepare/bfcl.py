"""``sommelier import bfcl``: BFCL v4 single-call categories (and, under ``--parser v2``, the
parallel ones) -> prepared examples (JSONL).

The Berkeley Function Calling Leaderboard ships its data as plain JSON-lines files inside the
``bfcl-eval`` package: ``bfcl_eval/data/BFCL_v4_<category>.json`` (questions and function docs)
and ``bfcl_eval/data/possible_answer/BFCL_v4_<category>.json`` (acceptable values per argument).
This module reads them from an installed ``bfcl_eval`` (located with ``importlib.util.find_spec``,
which finds the package without running any of its code), an unpacked data folder, or the wheel
file itself, and writes prepared examples that ``sommelier format`` renders.

Invariants kept:

- BFCL's code is never imported: only its data files are read;
- every function doc is converted to JSON Schema (``dict``->``object``, ``float``->``number``,
  ``tuple``->``array``, ``any``-> no ``type``; Java/JavaScript type names as BFCL's own
  ``GORILLA_TO_OPENAPI`` table maps them; every other keyword kept); an unknown type name is an
  InputError naming the file, line and field;
- the gold call takes each argument's first acceptable value that is not ``""``; an argument
  whose first acceptable value is ``""`` is left out; every acceptable list is kept in the
  row's ``acceptable_arguments`` (with BFCL's own parameter types, which its rules need);
- a row whose gold call does not validate against its own converted schema, whose gold call
  BFCL's rules (``core.acceptable``) would not accept, whose question has a system turn (unless
  imported for ``sommelier.native-tools.v1``, which keeps it as the row's ``system``), or
  whose possible answer names an undeclared parameter is reported and skipped, never coerced:
  every converted gold call validates and scores 1 on ``acceptable_call_match``;
- a parallel category's row (parser v2) holds ``gold_calls``, each call converted and checked as
  a single call is, and ``acceptable_arguments`` as a list of one object per call;
- bad input (a parallel category under parser v1, an unknown category, a missing
  possible-answer row, an id mismatch, an unknown type name, a malformed line) is one
  InputError naming file, line and field, and nothing is written: the output is written
  atomically only after every category converted.

Skip records, the gold check, sampling and writing are the importers' shared pieces
(``data.prepare.importers.common``).
"""

from __future__ import annotations

import importlib.util
import json
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from pytest_sommelier.core.acceptable import acceptable_entries, call_acceptable
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.data.prepare.formatting import (
    LANGUAGE_PATTERN,
    POLICY_TOOLS_IN_SYSTEM_V1,
    POLICY_TOOLS_IN_SYSTEM_V2,
)
from pytest_sommelier.data.prepare.importers import common
from pytest_sommelier.data.prepare.importers.common import Skipped, gold_problem, prepared_line
from pytest_sommelier.data.split.example_ids import EXAMPLE_ID_TEXT, example_id_problem
from pytest_sommelier.data.split.load import json_lines, lone_surrogate_path
from pytest_sommelier.data.split.native_policy import POLICY_NATIVE_TOOLS_V1
from pytest_sommelier.data.split.schema import parameters_error
from pytest_sommelier.errors import InputError

__all__ = ["Skipped", "prepared_line"]  # shared with the other importers (data.prepare.importers)

#: single-call categories and the programming language BFCL scores them in
SINGLE_CALL_CATEGORIES: dict[str, str] = {
    "simple_python": "python",
    "simple_java": "java",
    "simple_javascript": "javascript",
    "multiple": "python",
    "live_simple": "python",
    "live_multiple": "python",
}

#: categories whose questions want several calls (BFCL's parallel checker): imported under
#: parser v2 only (``--parser v2``), each row's gold ``gold_calls`` with one acceptable-values
#: object per call
PARALLEL_CATEGORIES: dict[str, str] = {
    "parallel": "python",
    "parallel_multiple": "python",
    "live_parallel": "python",
    "live_parallel_multiple": "python",
}

#: categories where no single call is the answer (core.abstention): BFCL's irrelevance
#: categories (no offered function fits: the right answer is not to call) and live_relevance
#: (some offered function fits: any valid call of an offered tool is right); read without a
#: possible-answer file, which BFCL does not ship for them
ABSTENTION_CATEGORIES: dict[str, str] = {
    "irrelevance": "no_call",
    "live_irrelevance": "no_call",
    "live_relevance": "any_call",
}

#: BFCL type name -> JSON Schema type (None: no type constraint). The Python names are BFCL's
#: own; the Java/JavaScript names follow bfcl_eval/constants/type_mappings.py GORILLA_TO_OPENAPI
#: except ``any``/``Any``, which the issue maps to "no constraint" (BFCL maps it to string).
TYPE_MAP: dict[str, str | None] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "float": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "dict": "object",
    "tuple": "array",
    "any": None,
    # Java / JavaScript spellings
    "String": "string",
    "Boolean": "boolean",
    "bool": "boolean",
    "list": "array",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "Bigint": "integer",
    "double": "number",
    "char": "string",
    "Array": "array",
    "ArrayList": "array",
    "Queue": "array",
    "Stack": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Any": None,
}

DATA_PREFIX = "bfcl_eval/data"
LANGUAGE_TAG = "en"
"""The default tag of every imported row (a root row of slice ``en``): BFCL's questions are
English, but its ``live`` categories hold user-contributed questions in other languages too,
so ``--language`` tags a whole import otherwise (no guess is made per row)."""


@dataclass
class CategoryResult:
    """The rows converted from one category and the rows skipped (in file order)."""

    category: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)
    """Converted rows with an acceptable value outside its declared type (kept, reported)."""


@dataclass
class ImportOutcome:
    """What ``import_bfcl`` did: each category's result and the number of rows written."""

    categories: list[CategoryResult]
    written: int


# ---------------------------------------------------------------- finding the data


class BfclSource:
    """Where BFCL's data files are read from: a folder (``data`` root) or a wheel (zip)."""

    def __init__(self, label: str, folder: Path | None = None, wheel: Path | None = None):
        self.label = label
        self.folder = folder
        self.wheel = wheel

    def relative(self, name: str) -> str:
        """The label of one data file (``<source>/<name>``, ``<wheel>!bfcl_eval/data/<name>``)."""
        if self.wheel is not None:
            return f"{self.wheel}!{DATA_PREFIX}/{name}"
        assert self.folder is not None
        return str(self.folder / name)

    def read(self, name: str) -> str:
        """The text of data file ``name`` (e.g. ``possible_answer/BFCL_v4_multiple.json``)."""
        where = self.relative(name)
        try:
            if self.wheel is not None:
                with zipfile.ZipFile(self.wheel) as archive:
                    data = archive.read(f"{DATA_PREFIX}/{name}")
            else:
                assert self.folder is not None
                data = (self.folder / name).read_bytes()
        except (KeyError, FileNotFoundError) as exc:
            raise InputError(
                "SOM-BFCL-MISSING-FILE",
                "BFCL data file not found",
                "check --source: a bfcl_eval wheel, an installed bfcl-eval, or its data folder",
                where=where,
            ) from exc
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                "SOM-BFCL-FIELD", "file is not UTF-8", "use BFCL's files as shipped", where=where
            ) from exc


def _installed_data_folder() -> Path | None:
    """The ``data`` folder of an installed ``bfcl_eval``, found without importing its code.

    ``find_spec`` of a top-level package only locates it (no module code runs).
    """
    try:
        spec = importlib.util.find_spec("bfcl_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "data"
        if folder.is_dir():
            return folder
    return None


def locate_source(source: str | Path | None) -> BfclSource:
    """Resolve ``--source``: None (installed bfcl_eval), a ``.whl`` file, or a folder.

    A folder may be the data folder itself (holding ``BFCL_v4_*.json``), a folder holding
    ``data/``, or one holding ``bfcl_eval/data/`` (an unpacked wheel).
    """
    if source is None:
        folder = _installed_data_folder()
        if folder is None:
            raise InputError(
                "SOM-BFCL-SOURCE",
                "bfcl_eval is not installed and no --source was given",
                "pip install --no-deps bfcl-eval, or pass --source WHEEL|DIR",
                where="--source",
            )
        return BfclSource(str(folder), folder=folder)
    path = Path(source)
    if path.is_file():
        if not zipfile.is_zipfile(path):
            raise InputError(
                "SOM-BFCL-SOURCE",
                "not a wheel (zip) file",
                "pass a bfcl_eval-*.whl or a data folder",
                where=str(path),
            )
        return BfclSource(str(path), wheel=path)
    for folder in (path, path / "data", path / DATA_PREFIX):
        if folder.is_dir() and any(folder.glob("BFCL_v4_*.json")):
            return BfclSource(str(folder), folder=folder)
    raise InputError(
        "SOM-BFCL-SOURCE",
        "no BFCL_v4_*.json files here (nor under data/ or bfcl_eval/data/)",
        "pass a bfcl_eval-*.whl, an unpacked wheel, or its data folder",
        where=str(path),
    )


# ---------------------------------------------------------------- categories


def check_category(category: str, parser: str = "v1") -> str:
    """The BFCL language of a category the ``parser`` scores (a parallel one under ``v2``
    only); InputError (one line) for any other."""
    if category in PARALLEL_CATEGORIES:
        if parser != "v2":
            raise InputError(
                "SOM-BFCL-PARALLEL",
                f"category {category!r} expects several calls per question, and parser v1 "
                "scores exactly one call per example",
                f"import it with --parser v2 (format with sommelier format --parser v2), or "
                f"use a single-call category: {', '.join(SINGLE_CALL_CATEGORIES)}",
                where="--category",
            )
        return PARALLEL_CATEGORIES[category]
    if category in ABSTENTION_CATEGORIES:
        return "python"
    if category not in SINGLE_CALL_CATEGORIES:
        raise InputError(
            "SOM-BFCL-CATEGORY",
            f"unknown or unsupported category {category!r}",
            f"use a single-call category: {', '.join(SINGLE_CALL_CATEGORIES)}, an "
            f"abstention category: {', '.join(ABSTENTION_CATEGORIES)}, or (--parser v2) a "
            f"parallel one: {', '.join(PARALLEL_CATEGORIES)}",
            where="--category",
        )
    return SINGLE_CALL_CATEGORIES[category]


# ---------------------------------------------------------------- schema conversion


def convert_schema(schema: Any, where: str, path: str) -> Any:
    """BFCL function-doc schema -> JSON Schema (a new object; the input is not changed).

    ``type`` is mapped by TYPE_MAP (a ``None`` mapping drops the key); ``properties`` values,
    ``items`` and a dict ``additionalProperties`` are converted recursively; every other keyword
    is kept as is. An unknown type name is an InputError naming ``where`` and the field path.
    """
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            mapped = _convert_type(value, where, f"{path}.type")
            if mapped is not None:
                result["type"] = mapped
        elif key == "properties" and isinstance(value, dict):
            result[key] = {
                name: convert_schema(sub, where, f"{path}.properties.{name}")
                for name, sub in value.items()
            }
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            result[key] = convert_schema(value, where, f"{path}.{key}")
        else:
            result[key] = value
    return result


def _convert_type(value: Any, where: str, path: str) -> Any:
    """One ``type`` value (a name, or a list of names) mapped to JSON Schema."""
    names = value if isinstance(value, list) else [value]
    mapped = []
    for name in names:
        if not isinstance(name, str) or name not in TYPE_MAP:
            raise InputError(
                "SOM-BFCL-TYPE",
                f"field {path!r}: unknown type name {name!r}",
                f"known BFCL type names: {', '.join(TYPE_MAP)}",
                where=where,
            )
        mapped.append(TYPE_MAP[name])
    if None in mapped:
        return None
    return mapped if isinstance(value, list) else mapped[0]


# ---------------------------------------------------------------- gold calls


def first_acceptable(values: list[Any]) -> tuple[bool, Any]:
    """``(present, value)``: the first acceptable value that is not ``""``.

    An argument whose first acceptable value is ``""`` is optional and left out of the gold
    call (``present`` False), as is one whose only acceptable value is ``""``.
    """
    if not values or values[0] == "":
        return False, None
    return True, values[0]


def gold_value(value: Any, bfcl_type: Any, items_type: Any) -> Any:
    """The gold spelling of one acceptable value.

    For a ``dict`` parameter the acceptable value is itself a dict of acceptable lists, and a
    list of dicts holds such dicts (BFCL's dict_checker/list_dict_checker, one level deep):
    their keys take their first acceptable value the same way.
    """
    if isinstance(value, dict) and _is_dict_type(bfcl_type):
        return _gold_dict(value)
    if isinstance(value, list) and _is_dict_type(items_type):
        return [_gold_dict(item) if isinstance(item, dict) else item for item in value]
    return value


def _is_dict_type(name: Any) -> bool:
    return isinstance(name, str) and TYPE_MAP.get(name) == "object"


def _gold_dict(acceptable: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, values in acceptable.items():
        if isinstance(values, list):
            present, chosen = first_acceptable(values)
            if present:
                out[key] = chosen
        else:
            out[key] = values
    return out


# ---------------------------------------------------------------- reading files


def _jsonl(text: str, label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; InputError naming file:line if bad."""
    for number, line in enumerate(json_lines(text), start=1):  # \n only: U+2028 in a string
        if not line.strip():
            continue
        where = f"{label}:{number}"
        try:
            row = strict_json(line)
        except ValueError as exc:
            raise InputError(
                "SOM-BFCL-FIELD",
                f"line is not JSON: {str(exc)[:120]}",
                "use BFCL's files as shipped",
                where=where,
            ) from exc
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise InputError(
                "SOM-BFCL-FIELD",
                "field 'id': missing or not a string",
                "each line is a BFCL record with an id",
                where=where,
            )
        surrogate = lone_surrogate_path(row)
        if surrogate is not None:
            raise InputError(
                "SOM-BFCL-FIELD",
                f"field {surrogate!r} holds a lone UTF-16 surrogate (e.g. \\ud800), which is "
                "not valid Unicode text",
                "use BFCL's files as shipped",
                where=where,
            )
        problem = example_id_problem(row["id"])  # the id becomes the example id
        if problem is not None:
            raise InputError(
                "SOM-BFCL-FIELD",
                f"field 'id' {problem}",
                f"an example id is {EXAMPLE_ID_TEXT}",
                where=where,
            )
        yield number, row


def _field_error(where: str, name: str, message: str) -> InputError:
    return InputError(
        "SOM-BFCL-FIELD", f"field {name!r}: {message}", "use BFCL's files as shipped", where=where
    )


def _query(question: Any, where: str) -> tuple[str | None, str | None]:
    """``(user text, skip reason)`` of a single-turn BFCL question (list of turns of messages);
    a question with a system turn is skipped here (:func:`_system_query` reads it)."""
    if not isinstance(question, list) or len(question) != 1 or not isinstance(question[0], list):
        raise _field_error(where, "question", "must be one turn (a list holding one list)")
    messages = question[0]
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    if any(not isinstance(m, dict) or not isinstance(m.get("content"), str) for m in messages):
        raise _field_error(where, "question[0]", "messages must be {role, content} objects")
    if "system" in roles:
        return None, "system_message"
    if roles != ["user"]:
        raise _field_error(where, "question[0]", f"expected one user message, got {roles}")
    return messages[0]["content"], None


def _system_query(question: Any, where: str) -> tuple[str | None, str | None]:
    """``(system text, user text)`` of a ``[system, user]`` question, else ``(None, None)``."""
    if not isinstance(question, list) or len(question) != 1 or not isinstance(question[0], list):
        return None, None
    messages = question[0]
    if [m.get("role") if isinstance(m, dict) else None for m in messages] != ["system", "user"]:
        return None, None
    return messages[0]["content"], messages[1]["content"]


def off_type_values(row: dict[str, Any], where: str) -> list[Skipped]:
    """Acceptable values (other than ``""``) that do not validate against their argument's
    converted schema: BFCL accepts them (its checker treats such a value as a "variable"), so
    the row is kept, and each is reported as a note.
    """
    calls = row.get("gold_calls") or [row["gold_call"]]
    entries = row["acceptable_arguments"]
    notes = []
    for call, record in zip(calls, acceptable_entries(entries), strict=True):
        schema = next(t["parameters"] for t in row["tools"] if t["name"] == call["name"])
        notes.extend(_off_type(row["example_id"], schema, record, where))
    return notes


def _off_type(
    example_id: str, schema: dict[str, Any], record: dict[str, Any], where: str
) -> list[Skipped]:
    """:func:`off_type_values` of one gold call's acceptable values."""
    properties = schema.get("properties") or {}
    notes = []
    for argument, entry in record["arguments"].items():
        validator = jsonschema.Draft202012Validator(properties.get(argument, {}))
        for value in entry["values"]:
            if value == "":
                continue
            if not validator.is_valid(gold_value(value, entry["type"], entry.get("items_type"))):
                notes.append(
                    Skipped(
                        example_id,
                        where,
                        "off_type_acceptable",
                        f"{argument!r} accepts {json.dumps(value)}, outside "
                        f"its declared type {entry['type']!r}",
                    )
                )
    return notes


def convert_row(
    question: dict[str, Any],
    answer: dict[str, Any],
    *,
    language: str,
    q_where: str,
    a_where: str,
    keep_system: bool = False,
    tag: str = LANGUAGE_TAG,
    several: bool = False,
) -> tuple[dict[str, Any] | None, Skipped | None]:
    """One BFCL question + possible answer -> ``(prepared row, None)`` or ``(None, Skipped)``.

    With ``keep_system`` (import for ``sommelier.native-tools.v1``), a ``[system, user]``
    question converts with its system turn in the row's ``system`` field instead of being
    skipped. With ``several`` (a parallel category, parser v2) the possible answer holds one
    or more calls: a row with several gets ``gold_calls`` and a list of acceptable values, one
    object per call, each call converted and checked as a single call is (a skip's detail names
    the call). Raises InputError (naming file:line and field) for malformed input and unknown
    type names.
    """
    example_id = question["id"]
    functions = question.get("function")
    if not isinstance(functions, list) or not functions:
        raise _field_error(q_where, "function", "must be a non-empty list of function docs")
    tools = _tools(functions, q_where)
    ground_truth = answer.get("ground_truth")
    if (
        not isinstance(ground_truth, list)
        or not ground_truth
        or (len(ground_truth) != 1 and not several)
        or not all(isinstance(call, dict) and len(call) == 1 for call in ground_truth)
    ):
        count = "one or more calls" if several else "exactly one call"
        raise _field_error(a_where, "ground_truth", f"must hold {count} {{name: args}}")
    by_name = {f.get("name"): f for f in functions}
    wanted = []
    for index, entry in enumerate(ground_truth):
        ((name, acceptable),) = entry.items()
        if not isinstance(acceptable, dict) or not all(
            isinstance(values, list) for values in acceptable.values()
        ):
            raise _field_error(
                a_where, f"ground_truth[{index}].{name}", "must map arguments to lists"
            )
        if name not in by_name:
            raise _field_error(
                a_where, f"ground_truth[{index}]", f"names {name!r}, not an offered function"
            )
        wanted.append((name, acceptable))
    query, reason = _query(question.get("question"), q_where)
    system = None
    if reason == "system_message" and keep_system:
        system, query = _system_query(question.get("question"), q_where)
        reason = None if query is not None else reason

    def skip(why: str, detail: str) -> tuple[None, Skipped]:
        return None, Skipped(example_id, q_where, why, detail)

    if reason is not None:
        return skip(
            reason,
            "the question has a system turn; the tools-in-system policy writes its own system "
            f"turn (import with --policy {POLICY_NATIVE_TOOLS_V1} to keep it)",
        )
    calls, records = [], []
    for index, (name, acceptable) in enumerate(wanted):
        gold = _gold_call(name, acceptable, by_name[name], tools, language)
        if isinstance(gold, tuple):
            why, detail = gold
            return skip(why, detail if len(wanted) == 1 else f"call {index}: {detail}")
        calls.append(gold["call"])
        records.append(gold["acceptable"])
    row = {
        "example_id": example_id,
        "language": tag,
        "source_example_id": None,
        **({"system": system} if system is not None else {}),
        "query": query,
        "tools": tools,
        **({"gold_call": calls[0]} if len(calls) == 1 else {"gold_calls": calls}),
        "acceptable_arguments": records[0] if len(records) == 1 else records,
    }
    return row, None


def _gold_call(
    name: str,
    acceptable: dict[str, Any],
    function: dict[str, Any],
    tools: list[dict[str, Any]],
    language: str,
) -> dict[str, Any] | tuple[str, str]:
    """One possible-answer call -> ``{"call": gold call, "acceptable": its acceptable-values
    object}``, or the ``(reason, detail)`` of the skip it causes."""
    parameters = function["parameters"]
    properties = parameters.get("properties") or {}
    arguments: dict[str, Any] = {}
    record: dict[str, Any] = {}
    for argument, values in acceptable.items():
        if argument not in properties:
            return (
                "undeclared_parameter",
                f"possible answer names {argument!r}, which {name!r} does not declare",
            )
        spec = properties[argument]
        bfcl_type = spec.get("type")
        items = spec.get("items")
        items_type = items.get("type") if isinstance(items, dict) else None
        entry: dict[str, Any] = {"type": bfcl_type}
        if items_type is not None:
            entry["items_type"] = items_type
        entry["values"] = values
        record[argument] = entry
        present, chosen = first_acceptable(values)
        if present:
            arguments[argument] = gold_value(chosen, bfcl_type, items_type)
    tool_schema = next(tool["parameters"] for tool in tools if tool["name"] == name)
    problem = parameters_error(tool_schema)
    if problem is not None:
        return "invalid_schema", f"converted parameters are not JSON Schema: {problem}"
    problem = gold_problem(tool_schema, arguments)
    if problem is not None:
        return "gold_invalid", problem
    required = parameters.get("required") or []
    acceptable_record = {"language": language, "required": list(required), "arguments": record}
    if not call_acceptable({"name": name, "arguments": arguments}, name, acceptable_record):
        return (
            "gold_not_acceptable",
            "BFCL's rules, applied to JSON values, reject the "
            "gold call itself (Java/JavaScript values BFCL reads as source code)",
        )
    return {"call": {"name": name, "arguments": arguments}, "acceptable": acceptable_record}


def import_category(
    source: BfclSource,
    category: str,
    *,
    keep_system: bool = False,
    tag: str = LANGUAGE_TAG,
    parser: str = "v1",
) -> CategoryResult:
    """Convert one category (questions paired with possible answers line by line, by id);
    ``keep_system`` as in :func:`convert_row`; a parallel category under ``parser`` v2 only."""
    language = check_category(category, parser)
    name = f"BFCL_v4_{category}.json"
    if category in ABSTENTION_CATEGORIES:
        return import_abstention_category(source, category, keep_system=keep_system)
    q_label, a_label = source.relative(name), source.relative(f"possible_answer/{name}")
    questions = list(_jsonl(source.read(name), q_label))
    answers = list(_jsonl(source.read(f"possible_answer/{name}"), a_label))
    result = CategoryResult(category)
    for index, (q_line, question) in enumerate(questions):
        q_where = f"{q_label}:{q_line}"
        if index >= len(answers):
            raise InputError(
                "SOM-BFCL-ID-MISMATCH",
                f"field 'id': no possible-answer row for {question['id']!r} (the answer file "
                f"has {len(answers)} rows)",
                "use the question and possible-answer files of the same BFCL release",
                where=q_where,
            )
        a_line, answer = answers[index]
        a_where = f"{a_label}:{a_line}"
        if answer["id"] != question["id"]:
            raise InputError(
                "SOM-BFCL-ID-MISMATCH",
                f"field 'id': {answer['id']!r} where the question file has {question['id']!r} "
                f"({q_where})",
                "use the question and possible-answer files of the same BFCL release",
                where=a_where,
            )
        row, skipped = convert_row(
            question,
            answer,
            language=language,
            q_where=q_where,
            a_where=a_where,
            keep_system=keep_system,
            tag=tag,
            several=category in PARALLEL_CATEGORIES,
        )
        if row is not None:
            result.rows.append(row)
            result.notes.extend(off_type_values(row, a_where))
        else:
            assert skipped is not None
            result.skipped.append(skipped)
    if len(answers) > len(questions):
        a_line, answer = answers[len(questions)]
        raise InputError(
            "SOM-BFCL-ID-MISMATCH",
            f"field 'id': possible answer {answer['id']!r} has no question",
            "use the question and possible-answer files of the same BFCL release",
            where=f"{a_label}:{a_line}",
        )
    return result


def import_abstention_category(
    source: BfclSource, category: str, *, keep_system: bool = False
) -> CategoryResult:
    """Convert one abstention category (:data:`ABSTENTION_CATEGORIES`): every question becomes
    a row with ``expect`` ``no_call`` or ``any_call`` and no gold call, or a named skip."""
    name = f"BFCL_v4_{category}.json"
    label = source.relative(name)
    result = CategoryResult(category)
    for line, question in _jsonl(source.read(name), label):
        row, skipped = convert_abstention_row(
            question, ABSTENTION_CATEGORIES[category], where=f"{label}:{line}",
            keep_system=keep_system,
        )  # fmt: skip
        if row is not None:
            result.rows.append(row)
        else:
            assert skipped is not None
            result.skipped.append(skipped)
    return result


def convert_abstention_row(
    question: dict[str, Any], expect: str, *, where: str, keep_system: bool = False
) -> tuple[dict[str, Any] | None, Skipped | None]:
    """One question of an abstention category -> ``(prepared row, None)`` or ``(None,
    Skipped)``: its function docs converted as for the call categories, ``expect`` set, no
    gold call. No function offered (``no_tools``), a conversation of several turns
    (``multi_turn``), a system turn under the
    tools-in-system policy (``system_message``), repeated function names
    (``duplicate_tool``) or a converted schema that is not JSON Schema (``invalid_schema``)
    is a named skip; malformed input an InputError naming the line and field."""
    example_id = question["id"]
    functions = question.get("function")

    def skip(why: str, detail: str) -> tuple[None, Skipped]:
        return None, Skipped(example_id, where, why, detail)

    if functions == []:
        return skip("no_tools", "no function is offered: there is no call to refrain from")
    if not isinstance(functions, list):
        raise _field_error(where, "function", "must be a list of function docs")
    tools = _tools(functions, where)

    turns = question.get("question")
    if not isinstance(turns, list) or len(turns) != 1 or not isinstance(turns[0], list):
        raise _field_error(where, "question", "must be one turn (a list holding one list)")
    messages = turns[0]
    if any(not isinstance(m, dict) or not isinstance(m.get("content"), str) for m in messages):
        raise _field_error(where, "question[0]", "messages must be {role, content} objects")
    roles = [m["role"] for m in messages]
    system = None
    if roles[:1] == ["system"] and roles[1:] == ["user"]:
        if not keep_system:
            return skip(
                "system_message",
                "the question has a system turn; the tools-in-system policy writes its own "
                f"system turn (import with --policy {POLICY_NATIVE_TOOLS_V1} to keep it)",
            )
        system = messages[0]["content"]
    elif roles != ["user"]:
        return skip("multi_turn", f"turns {roles}: the method scores [system?, user] only")
    names = [tool["name"] for tool in tools]
    for index, tool_name in enumerate(names):
        if tool_name in names[:index]:
            return skip("duplicate_tool", f"function {tool_name!r} is declared twice")
    for tool in tools:
        problem = parameters_error(tool["parameters"])
        if problem is not None:
            return skip(
                "invalid_schema",
                f"{tool['name']!r}: converted parameters are not JSON Schema: {problem}",
            )
    if not messages[-1]["content"].strip():
        return skip("empty_query", "the user turn is empty")
    row = {
        "example_id": example_id,
        "language": LANGUAGE_TAG,
        "source_example_id": None,
        **({"system": system} if system is not None else {}),
        "query": messages[-1]["content"],
        "tools": tools,
        "expect": expect,
    }
    return row, None


def _tools(functions: list[Any], where: str) -> list[dict[str, Any]]:
    """BFCL function docs -> prepared tools (parameters converted to JSON Schema)."""
    tools = []
    for index, function in enumerate(functions):
        if not isinstance(function, dict) or not isinstance(function.get("parameters"), dict):
            raise _field_error(where, f"function[{index}]", "must have a parameters object")
        tool: dict[str, Any] = {"name": function.get("name")}
        if "description" in function:
            tool["description"] = function["description"]
        tool["parameters"] = convert_schema(
            function["parameters"], where, f"function[{index}].parameters"
        )
        tools.append(tool)
    return tools


def sample_rows(rows: list[dict[str, Any]], sample: int | None, seed: int) -> list[dict[str, Any]]:
    """``sample`` rows drawn without replacement with ``random.Random(seed)``, in their original
    order (all rows when ``sample`` is None or not smaller than their number): the importers'
    one draw (``common.sample_rows``), under BFCL's own error code ``SOM-BFCL-SAMPLE``."""
    return common.sample_rows(rows, sample, seed, code="SOM-BFCL-SAMPLE")


def import_bfcl(
    categories: Sequence[str],
    source: str | Path | None,
    out: str | Path,
    *,
    sample: int | None = None,
    seed: int = 13,
    policy: str | None = None,
    language: str | None = None,
    parser: str = "v1",
) -> ImportOutcome:
    """Convert ``categories`` from ``source`` and write all rows to ``out`` atomically
    (a seeded sample of ``sample`` of them when given: see :func:`sample_rows`). With
    ``policy`` ``sommelier.native-tools.v1``, questions with a system turn convert too. Under
    ``parser`` ``v2`` the parallel categories import (rows with ``gold_calls``).

    Every category is checked (parallel ones refused under parser v1) before any file is
    read; nothing is written unless every category converted. Ids stay unique across
    categories (BFCL's ids carry the category name).
    """
    if not categories:
        raise InputError(
            "SOM-BFCL-CATEGORY", "no category given", "pass --category NAME", where="--category"
        )
    if parser not in ("v1", "v2"):
        raise InputError(
            "SOM-BFCL-CATEGORY",
            f"--parser {str(parser)[:40]!r} is not one of v1, v2",
            "give --parser v1 (the default) or v2 (BFCL's parallel categories)",
            where="--parser",
        )
    for category in categories:
        check_category(category, parser)
    tag = LANGUAGE_TAG if language is None else language
    if LANGUAGE_PATTERN.fullmatch(tag) is None:
        raise InputError(
            "SOM-BFCL-LANGUAGE",
            f"--language {tag[:40]!r} is not a language tag",
            "a lower-case tag: en, he, pt-BR (the prepared rows' rule)",
            where="--language",
        )
    keep_system = check_import_policy(policy) == POLICY_NATIVE_TOOLS_V1
    located = locate_source(source)
    results = [
        import_category(located, category, keep_system=keep_system, tag=tag, parser=parser)
        for category in dict.fromkeys(categories)
    ]
    rows = sample_rows([row for result in results for row in result.rows], sample, seed)
    if not rows:
        raise InputError(
            "SOM-BFCL-EMPTY",
            common.nothing_converted([item for result in results for item in result.skipped]),
            "rows BFCL's method does not score as one call are skipped: see docs/benchmarks.md",
            where=located.label,
        )
    common.write_prepared(out, rows)
    return ImportOutcome(results, len(rows))


POLICIES = (POLICY_TOOLS_IN_SYSTEM_V1, POLICY_NATIVE_TOOLS_V1, POLICY_TOOLS_IN_SYSTEM_V2)
"""The template policies an import can be made for (the first is the default; both
tools-in-system policies skip questions with a system turn, the native one keeps them)."""


def check_import_policy(policy: str | None) -> str:
    """The policy rows are imported for (default tools-in-system); InputError otherwise."""
    policy = policy or POLICIES[0]
    if policy not in POLICIES:
        raise InputError(
            "SOM-BFCL-POLICY",
            f"unknown template policy {policy!r}",
            f"use one of: {', '.join(POLICIES)}",
            where="--policy",
        )
    return policy
