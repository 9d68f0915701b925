"""``sommelier format``: prepared examples + a tokenizer's chat template -> a formatted split.

A *prepared example* is one JSONL object with exactly the keys ``example_id``, ``language``,
``source_example_id`` (null for a root row), ``query``, ``tools`` (a list of JSON-schema function
descriptions ``{name, description?, parameters}``) and ``gold_call`` (``{name, arguments}``),
and optionally ``acceptable_arguments``, ``system`` and ``cluster_id`` (passed through). A row
with several gold calls (parser v2) has ``gold_calls`` (an array of two or more calls, in the
answer's order) instead of ``gold_call``; it formats under ``parser="v2"`` only
(``sommelier format --parser v2``).

A *formatted example* (``sommelier.formatted_example.v2``) adds the rendered ``messages``,
``prompt_text``, ``target_text``, ``full_text``, ``prompt_sha256``, the tokenizer identity and the
template policy. Evaluation replays ``prompt_text``; it never rebuilds it.

Invariants kept:

- ``target_text`` is the canonical JSON (sorted keys, compact separators, ASCII escapes) of a
  one-element array holding exactly the gold call (of the array of its gold calls, for a row
  with several);
- ``prompt_text`` is a prefix of ``full_text`` and the remainder contains ``target_text``
  (otherwise the example is refused with an InputError naming it);
- ``prompt_sha256`` is the SHA-256 of ``prompt_text`` encoded as UTF-8;
- every prepared row is validated before anything is written (file:line and field named on
  error), and the output file is written atomically: whole or not at all;
- a translated row names a root row of the same file in ``source_example_id``, in another
  language, with byte-identical (canonical) tools and gold call.

Under ``sommelier.native-tools.v1`` (``data.split.native_policy``) the chat template renders
the tools and the gold call itself: ``target_text`` is its rendering of the assistant turn, which
parser v1 must read back as the gold call, and the row records the ``tools`` it was rendered with.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core.abstention import EXPECT_ANY_CALL, EXPECT_CALL, EXPECTS
from pytest_sommelier.core.acceptable import (
    acceptable_entries,
    acceptable_shape_error,
    call_acceptable,
)
from pytest_sommelier.core.call_sets import GOLD_CALLS_LIMIT
from pytest_sommelier.core.canonical import canonical_json_text as canonical_json
from pytest_sommelier.core.canonical import prompt_digest
from pytest_sommelier.core.parse import call_shape_error
from pytest_sommelier.core.types import Call
from pytest_sommelier.data.atomic import write_atomic
from pytest_sommelier.data.prepare.hints import neighbour_shape
from pytest_sommelier.data.split.example_ids import EXAMPLE_ID_TEXT, example_id_problem
from pytest_sommelier.data.split.load import json_lines, lone_surrogate_path, strict_json
from pytest_sommelier.data.split.native_policy import (
    POLICY_NATIVE_TOOLS_V1,
    check_arguments_key,
    native_messages,
    render_native,
    tool_specs,
)
from pytest_sommelier.data.split.schema import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_V3,
    arguments_error,
    parameters_error,
)
from pytest_sommelier.data.split.template_render import render_chat, template_kwargs_problem
from pytest_sommelier.errors import InputError, exception_text

POLICY_TOOLS_IN_SYSTEM_V1 = "sommelier.tools-in-system.v1"
DEFAULT_POLICY = POLICY_TOOLS_IN_SYSTEM_V1
POLICY_TOOLS_IN_SYSTEM_V2 = "sommelier.tools-in-system.v2"
"""Tools-in-system for parser v2: the same prompt, its instruction asking for one or more calls
(the default policy of ``sommelier format --parser v2``)."""
PARSERS = ("v1", "v2")
"""``sommelier format --parser``: the parser the split is for (``[parser] version``)."""

PREPARED_KEYS: tuple[str, ...] = (
    "example_id",
    "language",
    "source_example_id",
    "query",
    "tools",
    "gold_call",
)
FORMATTED_KEYS: tuple[str, ...] = (
    "schema_version",
    "example_id",
    "split",
    "language",
    "source_example_id",
    "messages",
    "prompt_text",
    "target_text",
    "full_text",
    "prompt_sha256",
    "tokenizer_id",
    "tokenizer_revision",
    "template_policy",
)
TOOL_KEYS = frozenset({"name", "description", "parameters"})

_LANGUAGE_RE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*\Z")  # \Z: no trailing newline
LANGUAGE_PATTERN = _LANGUAGE_RE
"""A prepared row's language tag (``en``, ``he``, ``pt-BR``): the one rule, importers' too."""
_SPLIT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")

TOOLS_IN_SYSTEM_V1_INSTRUCTION = (
    "You call tools. Reply with exactly one tool call and nothing else: a JSON array holding "
    'one object {"name": <tool name>, "arguments": <object>}. No prose, no markdown.\n'
    "Tools:\n"
)
TOOLS_IN_SYSTEM_V2_INSTRUCTION = (
    "You call tools. Reply with the tool calls the request needs and nothing else: a JSON "
    'array holding one object {"name": <tool name>, "arguments": <object>} per call. No '
    "prose, no markdown.\nTools:\n"
)


@dataclass(frozen=True)
class PreparedExample:
    """One validated prepared row; ``line`` is its 1-based line in the source file."""

    example_id: str
    language: str
    source_example_id: str | None
    query: str
    tools: tuple[dict[str, Any], ...]
    gold_call: Call | None  # None exactly when ``expect`` is not "call"
    line: int
    acceptable_arguments: dict[str, Any] | list[dict[str, Any]] | None = None
    system: str | None = None
    cluster_id: str | None = None
    expect: str = EXPECT_CALL
    answer: str | None = None  # an abstention row's gold text answer
    # a row with several gold calls (prepared key ``gold_calls``; ``gold_call`` is the first)
    gold_calls: tuple[Call, ...] | None = None

    @property
    def calls(self) -> tuple[Call, ...]:
        """The gold calls: ``gold_calls``, else the one ``gold_call`` (none for abstention)."""
        if self.gold_calls is not None:
            return self.gold_calls
        return () if self.gold_call is None else (self.gold_call,)


OPTIONAL_KEY = "acceptable_arguments"
"""The optional key of a prepared row and a formatted row: BFCL's acceptable values per
argument (written by ``sommelier import bfcl``; see docs/metrics.md); for a row with several
gold calls a list, one object per gold call."""
CALLS_KEY = "gold_calls"
"""The prepared key of a row with several gold calls (parser v2), instead of ``gold_call``."""
SYSTEM_KEY = "system"
"""Optional prepared key: the row's own system turn (used by the native policy only)."""
TOOLS_KEY = "tools"
KWARGS_KEY = "template_kwargs"
"""Optional formatted key (v3): the chat-template options the row was rendered with."""
"""Optional formatted key: the function specs a native-policy row was rendered with."""
EXPECT_KEY = "expect"
"""Optional prepared and formatted key (core.abstention): ``call`` (the default, not written),
``no_call`` (no offered tool fits: the right answer is not to call; no ``gold_call``) or
``any_call`` (any valid call of an offered tool is right; no ``gold_call``)."""
ANSWER_KEY = "answer"
"""Optional prepared key of a ``no_call`` or ``any_call`` row: the assistant's gold text answer
(its ``target_text``; empty when absent)."""
MARKERS_KEY = "call_markers"
"""Formatted key of a ``no_call`` or ``any_call`` row: the template's call markers
(``data.split.native_policy.wrapper_markers``; none under tools-in-system)."""
CLUSTER_KEY = "cluster_id"
"""Optional prepared and formatted key: the cluster a row belongs to (rows whose outcomes are
not independent evidence, e.g. BFCL rows sharing one function document); passed through to
the formatted row, where the statistics read it (docs/statistics.md, Clusters)."""


# ---------------------------------------------------------------- reading and validation


def _bad(where: str, field: str, message: str, hint: str) -> InputError:
    """An InputError for one field of one prepared row."""
    return InputError("SOM-PREPARED-FIELD", f"field {field!r}: {message}", hint, where=where)


def parse_json_line(text: str, where: str) -> Any:
    """Decode one JSONL line strictly (no repeated keys, no NaN/Infinity); InputError if bad."""
    try:
        return strict_json(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(
            "SOM-PREPARED-JSON",
            f"line is not a valid JSON object: {str(exc)[:160]}",
            "write one JSON object per line (UTF-8, no repeated keys, no NaN)",
            where=where,
        ) from exc


def _check_tool(tool: Any, index: int, where: str) -> dict[str, Any]:
    """Validate one tool description: ``{name, description?, parameters}`` with a valid schema."""
    field = f"tools[{index}]"
    if not isinstance(tool, dict):
        raise _bad(where, field, "must be an object", "give {name, description, parameters}")
    unknown = sorted(set(tool) - TOOL_KEYS)
    if unknown:
        raise _bad(where, f"{field}.{unknown[0]}", "unknown key", f"allowed: {sorted(TOOL_KEYS)}")
    name = tool.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _bad(where, f"{field}.name", "must be a non-empty string", "name the function")
    if "description" in tool and not isinstance(tool["description"], str):
        raise _bad(where, f"{field}.description", "must be a string", "describe the function")
    parameters = tool.get("parameters")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise _bad(
            where,
            f"{field}.parameters",
            "must be a JSON Schema object with type 'object'",
            'write {"type": "object", "properties": {...}}',
        )
    problem = parameters_error(parameters)
    if problem is not None:
        raise _bad(where, f"{field}.parameters", f"is not a valid JSON Schema: {problem}", "fix it")
    return tool


def _check_tools(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    """Validate the tool list: non-empty, valid descriptions, unique names."""
    if not isinstance(value, list) or not value:
        raise _bad(where, "tools", "must be a non-empty list", "offer at least the gold tool")
    tools = tuple(_check_tool(tool, index, where) for index, tool in enumerate(value))
    names = [tool["name"] for tool in tools]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise _bad(where, f"tools[{index}].name", f"repeats {name!r}", "tool names are unique")
    return tools


_GOLD_HINTS = {
    "": "one call, no extras",
    "name": "name the tool",
    "arguments": "use {} for no arguments",
}


def _check_gold(
    value: Any, tools: Sequence[dict[str, Any]], where: str, name: str = "gold_call"
) -> Call:
    """Validate the gold call (field ``name``): a call (``core.parse.call_shape_error``), of an
    offered tool, whose arguments match the tool's parameters."""
    shape = call_shape_error(value)
    if shape is not None:
        field = f"{name}.{shape.field}" if shape.field else name
        raise _bad(where, field, shape.problem, _GOLD_HINTS[shape.field])
    call = cast(Call, value)
    by_name = {tool["name"]: tool for tool in tools}
    if call["name"] not in by_name:
        raise _bad(
            where, f"{name}.name", f"{call['name']!r} is not among the offered tools", "add it"
        )
    wrong = arguments_error(by_name[call["name"]]["parameters"], call["arguments"])
    if wrong is not None:
        raise _bad(
            where,
            f"{name}.arguments{wrong[0]}",
            f"does not match the tool's parameters: {wrong[1][:160]}",
            "fix the gold call or the tool schema",
        )
    return call


def _check_string(row: dict[str, Any], field: str, pattern: re.Pattern[str] | None, where: str):
    """Validate a required string field (optionally against a pattern)."""
    value = row[field]
    if not isinstance(value, str) or not value.strip():
        raise _bad(where, field, "must be a non-empty string", f"set {field}")
    if pattern is not None and not pattern.match(value):
        raise _bad(where, field, f"{value!r} does not match {pattern.pattern}", f"fix {field}")
    return value


def _check_id(row: dict[str, Any], field: str, where: str) -> str:
    """An example id (or the root id a translation names) under the one id rule
    (``data.split.example_ids``)."""
    problem = example_id_problem(row[field])
    if problem is not None:
        raise _bad(where, field, problem, f"an id is {EXAMPLE_ID_TEXT}")
    return row[field]


def validate_prepared_row(row: Any, where: str, line: int) -> PreparedExample:
    """Validate one decoded prepared row (exact key set, types, tools, gold) -> PreparedExample."""
    if not isinstance(row, dict):
        raise InputError(
            "SOM-PREPARED-JSON", "line is not a JSON object", "one object per line", where=where
        )
    surrogate = lone_surrogate_path(row)
    if surrogate is not None:
        raise InputError(
            "SOM-PREPARED-ENCODING",
            f"field {surrogate!r} holds a lone UTF-16 surrogate (e.g. \\ud800), which is not "
            "valid Unicode text",
            "write the text as UTF-8; drop or fix the broken escape",
            where=where,
        )
    shape = neighbour_shape(row, _LANGUAGE_RE)
    if shape is not None:
        raise _bad(where, *shape)
    optional = {OPTIONAL_KEY, SYSTEM_KEY, CLUSTER_KEY, EXPECT_KEY, ANSWER_KEY, CALLS_KEY}
    unknown = sorted(set(row) - set(PREPARED_KEYS) - optional)
    if unknown:
        raise _bad(where, unknown[0], "unknown key", f"allowed keys: {', '.join(PREPARED_KEYS)}")
    expect = _check_expect(row, where)
    several = CALLS_KEY in row
    if several and "gold_call" in row:
        raise _bad(
            where, CALLS_KEY, "is given beside gold_call",
            "a row has gold_call (one call) or gold_calls (two or more), not both",
        )  # fmt: skip
    required = PREPARED_KEYS if expect == EXPECT_CALL and not several else PREPARED_KEYS[:-1]
    missing = [key for key in required if key not in row]
    if missing:
        raise _bad(where, missing[0], "missing", f"every row needs: {', '.join(PREPARED_KEYS)}")
    example_id = _check_id(row, "example_id", where)
    language = _check_string(row, "language", _LANGUAGE_RE, where)
    query = _check_string(row, "query", None, where)
    source = row["source_example_id"]
    if source is not None:
        source = _check_id(row, "source_example_id", where)
        if source == example_id:
            raise _bad(where, "source_example_id", "names the row itself", "name its root row")
    tools = _check_tools(row["tools"], where)
    answer = None
    calls: tuple[Call, ...] | None = None
    acceptable: dict[str, Any] | list[dict[str, Any]] | None
    if expect == EXPECT_CALL:
        if ANSWER_KEY in row:
            raise _bad(where, ANSWER_KEY, "is for a row without a gold call", "drop it")
        if several:
            calls = _check_calls(row[CALLS_KEY], tools, where)
            gold: Call | None = calls[0]
        else:
            gold = _check_gold(row["gold_call"], tools, where)
        acceptable = _check_acceptable(row.get(OPTIONAL_KEY), calls or (gold,), where)
    else:
        if several:
            raise _bad(
                where, CALLS_KEY, f"is set on a row with expect {expect!r}", "drop gold_calls"
            )
        if row.get("gold_call") is not None:
            raise _bad(
                where, "gold_call", f"is set on a row with expect {expect!r}", "drop gold_call"
            )
        if row.get(OPTIONAL_KEY) is not None:
            raise _bad(
                where, OPTIONAL_KEY, f"is set on a row with expect {expect!r}", "drop it"
            )
        gold, acceptable = None, None
        if row.get(ANSWER_KEY) is not None:
            answer = row[ANSWER_KEY]
            if not isinstance(answer, str):
                raise _bad(where, ANSWER_KEY, "must be a string", "the assistant's text answer")
    system = _check_string(row, SYSTEM_KEY, None, where) if SYSTEM_KEY in row else None
    cluster = row.get(CLUSTER_KEY)
    if cluster is not None:
        cluster = _check_string(row, CLUSTER_KEY, None, where)
    return PreparedExample(
        example_id, language, source, query, tools, gold, line, acceptable, system, cluster,
        expect, answer, calls,
    )  # fmt: skip


def _check_calls(value: Any, tools: Sequence[dict[str, Any]], where: str) -> tuple[Call, ...]:
    """Validate ``gold_calls``: an array of two to ``GOLD_CALLS_LIMIT`` gold calls (the split
    loader's bound, so no formatted row is refused at run time), each as ``gold_call``."""
    if not isinstance(value, list) or len(value) < 2:
        raise _bad(
            where, CALLS_KEY, "must be an array of two or more calls",
            "write a row with one call as gold_call",
        )  # fmt: skip
    if len(value) > GOLD_CALLS_LIMIT:
        raise _bad(
            where, CALLS_KEY,
            f"holds {len(value)} calls, more than the {GOLD_CALLS_LIMIT} one row may hold",
            "split the request into rows of fewer calls",
        )  # fmt: skip
    return tuple(
        _check_gold(call, tools, where, f"{CALLS_KEY}[{index}]") for index, call in enumerate(value)
    )


def _check_expect(row: dict[str, Any], where: str) -> str:
    """The row's ``expect`` (``call`` when absent); one of ``core.abstention.EXPECTS``."""
    expect = row.get(EXPECT_KEY, EXPECT_CALL)
    if expect not in EXPECTS:
        raise _bad(
            where, EXPECT_KEY, f"{expect!r} is not one of {', '.join(EXPECTS)}",
            'write "no_call" for a row where no offered tool fits',
        )  # fmt: skip
    return str(expect)


def _check_acceptable(
    value: Any, golds: Sequence[Call | None], where: str
) -> dict[str, Any] | list[dict[str, Any]] | None:
    """The optional ``acceptable_arguments``: well formed (one object per gold call: a list for
    several), and accepting each gold call itself."""
    if value is None:
        return None
    problem = acceptable_shape_error(value)
    if problem is not None:
        raise _bad(where, OPTIONAL_KEY, problem, "write it with sommelier import bfcl")
    entries = acceptable_entries(value)
    if len(entries) != len(golds) or isinstance(value, list) != (len(golds) > 1):
        raise _bad(
            where, OPTIONAL_KEY,
            f"holds values of {len(entries)} call(s), the row {len(golds)} gold call(s)",
            "one object for one gold call, a list of one object per call for gold_calls",
        )  # fmt: skip
    for gold, entry in zip(golds, entries, strict=True):
        if gold is None or not call_acceptable(gold, gold["name"], entry):
            raise _bad(
                where,
                OPTIONAL_KEY,
                "does not accept the gold call itself under BFCL's rules",
                "the gold call takes each argument's first acceptable value",
            )
    return cast(dict[str, Any] | list[dict[str, Any]], value)


def check_pairs(examples: Sequence[PreparedExample], path: str) -> None:
    """Check ids are unique and every translation joins a root of this file with equal tools/gold.

    A root has ``source_example_id`` null; a translation's root must be such a row, in another
    language, with canonical-JSON-identical ``tools`` and ``gold_call``.
    """
    by_id: dict[str, PreparedExample] = {}
    for example in examples:
        if example.example_id in by_id:
            first = by_id[example.example_id].line
            raise InputError(
                "SOM-PREPARED-DUPLICATE-ID",
                f"example_id {example.example_id!r} repeats the one on line {first}",
                "example ids are unique within a file",
                where=f"{path}:{example.line}",
            )
        by_id[example.example_id] = example
    for example in examples:
        if example.source_example_id is None:
            continue
        where = f"{path}:{example.line}"
        root = by_id.get(example.source_example_id)
        if root is None or root.source_example_id is not None:
            raise _bad(
                where,
                "source_example_id",
                f"{example.source_example_id!r} is not a root row of this file",
                "a translation names a row with source_example_id null",
            )
        if root.language == example.language:
            raise _bad(
                where,
                "language",
                f"same language as its root {root.example_id!r}",
                "a translation is in another language than its root",
            )
        for field in ("tools", "gold_call", CALLS_KEY, OPTIONAL_KEY, EXPECT_KEY):
            ours, theirs = getattr(example, field), getattr(root, field)
            listed = field in ("tools", CALLS_KEY)
            if canonical_json(list(ours) if listed and ours else ours) != canonical_json(
                list(theirs) if listed and theirs else theirs
            ):
                raise InputError(
                    "SOM-PREPARED-PAIR-MISMATCH",
                    f"field {field!r} differs from root {root.example_id!r}",
                    "tools, gold call and acceptable_arguments of a translation are "
                    "byte-identical to its root's",
                    where=where,
                )


def read_prepared(path: Path | str) -> list[PreparedExample]:
    """Read and validate a prepared JSONL file (blank lines refused); InputError names file:line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(
            "SOM-PREPARED-MISSING", "prepared file not found", "check the path", where=str(path)
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            "SOM-PREPARED-ENCODING", "file is not UTF-8", "save it as UTF-8", where=str(path)
        ) from exc
    examples = []
    for number, line in enumerate(json_lines(text), start=1):
        where = f"{path}:{number}"
        if not line.strip():
            raise InputError("SOM-PREPARED-BLANK-LINE", "blank line", "remove it", where=where)
        examples.append(validate_prepared_row(parse_json_line(line, where), where, number))
    if not examples:
        raise InputError("SOM-PREPARED-EMPTY", "no prepared rows", "add rows", where=str(path))
    check_pairs(examples, str(path))
    return examples


# ---------------------------------------------------------------- policies and rendering


def tools_in_system_v1(example: PreparedExample) -> list[dict[str, str]]:
    """Policy ``sommelier.tools-in-system.v1``: [system (instruction + tools JSON), user query].

    A row with its own ``system`` turn is refused: this policy writes the system turn itself.
    """
    return _tools_in_system(example, POLICY_TOOLS_IN_SYSTEM_V1, TOOLS_IN_SYSTEM_V1_INSTRUCTION)


def tools_in_system_v2(example: PreparedExample) -> list[dict[str, str]]:
    """Policy ``sommelier.tools-in-system.v2``: v1's messages, the instruction asking for one
    or more calls (parser v2)."""
    return _tools_in_system(example, POLICY_TOOLS_IN_SYSTEM_V2, TOOLS_IN_SYSTEM_V2_INSTRUCTION)


def _tools_in_system(
    example: PreparedExample, policy: str, instruction: str
) -> list[dict[str, str]]:
    """[system (``instruction`` + tools JSON), user query]; a row with its own system turn is
    refused (the policy writes the system turn itself)."""
    if example.system is not None:
        raise InputError(
            "SOM-FORMAT-SYSTEM",
            f"example {example.example_id!r} has its own system turn (field 'system'), and "
            f"policy {policy} writes its own",
            f"format it with --policy {POLICY_NATIVE_TOOLS_V1}, or drop the field (sommelier "
            "import --drop-system)",
            where=f"example_id={example.example_id}",
        )
    system = instruction + canonical_json(list(example.tools))
    return [{"role": "system", "content": system}, {"role": "user", "content": example.query}]


POLICIES: dict[str, Callable[[PreparedExample], list[dict[str, str]]]] = {
    POLICY_TOOLS_IN_SYSTEM_V1: tools_in_system_v1,
    POLICY_NATIVE_TOOLS_V1: native_messages,
    POLICY_TOOLS_IN_SYSTEM_V2: tools_in_system_v2,
}


def check_policy_key(policy: str, arguments_key: str) -> str:
    """The arguments key for ``policy``: a key parser v1 knows, and ``arguments`` under
    tools-in-system (whose instruction and target name ``arguments``); InputError otherwise."""
    check_arguments_key(arguments_key)
    if policy != POLICY_NATIVE_TOOLS_V1 and arguments_key != "arguments":
        raise InputError(
            "SOM-FORMAT-ARGUMENTS-KEY",
            f"--arguments-key {arguments_key} with policy {policy}, whose instruction and "
            "target name 'arguments'",
            f"use it with --policy {POLICY_NATIVE_TOOLS_V1}",
            where="--arguments-key",
        )
    return arguments_key


def check_policy(policy: str) -> Callable[[PreparedExample], list[dict[str, str]]]:
    """The message builder of a known policy; InputError naming --policy otherwise."""
    if policy not in POLICIES:
        raise InputError(
            "SOM-FORMAT-POLICY",
            f"unknown template policy {policy!r}",
            f"use one of: {', '.join(POLICIES)}",
            where="--policy",
        )
    return POLICIES[policy]


def default_policy(parser: str) -> str:
    """The policy ``sommelier format`` uses without ``--policy``: tools-in-system, v2's under
    parser v2."""
    return POLICY_TOOLS_IN_SYSTEM_V2 if parser == "v2" else DEFAULT_POLICY


def check_parser(parser: str, policy: str) -> str:
    """``--parser`` (v1 or v2) and a policy it can take: tools-in-system.v2 asks for several
    calls, which parser v1 never reads; InputError naming the option otherwise."""
    if parser not in PARSERS:
        raise InputError(
            "SOM-FORMAT-PARSER",
            f"unknown parser {parser!r}",
            f"use one of: {', '.join(PARSERS)}",
            where="--parser",
        )
    if parser == "v1" and policy == POLICY_TOOLS_IN_SYSTEM_V2:
        raise InputError(
            "SOM-FORMAT-PARSER",
            f"policy {policy} asks for one or more calls, and parser v1 reads one",
            f"format with --parser v2, or with --policy {POLICY_TOOLS_IN_SYSTEM_V1}",
            where="--policy",
        )
    return parser


def check_calls_format(example: PreparedExample, parser: str, policy: str) -> None:
    """A row with several gold calls formats under parser v2 only, and not under
    tools-in-system.v1 (whose instruction asks for exactly one call)."""
    if example.gold_calls is None:
        return
    count = len(example.gold_calls)
    if parser != "v2":
        raise InputError(
            "SOM-FORMAT-PARSER",
            f"example {example.example_id!r} has {count} gold calls (gold_calls), and parser "
            "v1 scores one call per answer",
            'format with --parser v2 (and run the suite with [parser] version = "v2")',
            where=f"example_id={example.example_id}",
        )
    if policy == POLICY_TOOLS_IN_SYSTEM_V1:
        raise InputError(
            "SOM-FORMAT-PARSER",
            f"example {example.example_id!r} has {count} gold calls, and policy {policy} "
            "asks for exactly one",
            f"leave --policy out (--parser v2 formats with {POLICY_TOOLS_IN_SYSTEM_V2}) or use "
            f"{POLICY_NATIVE_TOOLS_V1}",
            where=f"example_id={example.example_id}",
        )


def build_messages(example: PreparedExample, policy: str) -> list[dict[str, str]]:
    """The prompt messages of ``example`` under ``policy``; InputError for an unknown policy."""
    return check_policy(policy)(example)


def target_text(gold_call: Call) -> str:
    """Canonical JSON of a one-element array holding exactly the gold call."""
    return calls_target_text((gold_call,))


def calls_target_text(gold_calls: Sequence[Call]) -> str:
    """Canonical JSON of the array of the gold calls, in order (one call: ``target_text``)."""
    return canonical_json([{"name": c["name"], "arguments": c["arguments"]} for c in gold_calls])


def _render(
    tokenizer: Any,
    example: PreparedExample,
    messages: list[dict[str, str]],
    *,
    prompt: bool,
    template_kwargs: dict[str, Any] | None = None,
) -> str:
    """Apply the tokenizer's chat template as text, bounded (``template_render.render_chat``);
    an exception inside the template (a sandbox ``SecurityError``, its ``raise_exception``) is
    one ``SOM-FORMAT-TEMPLATE-RENDER`` line naming the example."""
    try:
        return render_chat(
            tokenizer,
            list(messages),
            add_generation_prompt=prompt,
            example_id=example.example_id,
            template_kwargs=template_kwargs,
        )
    except InputError:
        raise
    except Exception as exc:
        raise InputError(
            "SOM-FORMAT-TEMPLATE-RENDER",
            f"example {example.example_id!r}: the chat template raised rendering the "
            f"{'prompt' if prompt else 'conversation with the target'}: {exception_text(exc, 160)}",
            "use a chat template that renders [system?, user, assistant] messages",
            where=f"example_id={example.example_id}",
        ) from exc


def format_example(
    example: PreparedExample,
    tokenizer: Any,
    *,
    split: str,
    policy: str,
    tokenizer_id: str,
    tokenizer_revision: str,
    arguments_key: str = "arguments",
    template_kwargs: dict[str, Any] | None = None,
    parser: str = "v1",
) -> dict[str, Any]:
    """Render one prepared example into a ``sommelier.formatted_example.v2`` row (v3 with
    ``template_kwargs``: the chat-template options every rendering of it gets, recorded in the
    row and digested into its ``prompt_sha256``). Under ``parser`` ``v2`` a row may hold
    several gold calls (:func:`check_calls_format`): ``target_text`` is their array.

    Refuses (InputError naming the example) when the prompt is not a prefix of the full text or
    the assistant part does not contain the target text (the native policy's checks:
    ``data.split.native_policy``).
    """
    check_calls_format(example, parser, policy)
    if policy == POLICY_NATIVE_TOOLS_V1:
        return _native_row(
            example,
            tokenizer,
            split=split,
            tokenizer_id=tokenizer_id,
            tokenizer_revision=tokenizer_revision,
            arguments_key=arguments_key,
            template_kwargs=template_kwargs,
            parser=parser,
        )
    messages = build_messages(example, policy)
    gold = example.gold_call
    target = calls_target_text(example.calls) if gold is not None else (example.answer or "")
    prompt = _render(tokenizer, example, messages, prompt=True, template_kwargs=template_kwargs)
    full = _render(
        tokenizer,
        example,
        [*messages, {"role": "assistant", "content": target}],
        prompt=False,
        template_kwargs=template_kwargs,
    )
    if not full.startswith(prompt):
        raise InputError(
            "SOM-FORMAT-TEMPLATE-PREFIX",
            f"example {example.example_id!r}: the chat template's prompt_text is not a prefix of "
            "its full_text, so a generated continuation could never reproduce the target",
            "use a tokenizer whose chat template renders the generation prompt as a prefix of "
            "the conversation with the assistant turn",
            where=f"example_id={example.example_id}",
        )
    if target not in full[len(prompt) :]:
        raise InputError(
            "SOM-FORMAT-TEMPLATE-TARGET",
            f"example {example.example_id!r}: the chat template altered the assistant content",
            "use a chat template that keeps the assistant content verbatim",
            where=f"example_id={example.example_id}",
        )
    extra: dict[str, Any] = {}
    if example.expect == EXPECT_ANY_CALL:  # the offered tools a call must name
        extra[TOOLS_KEY] = tool_specs(example.tools)
    return _formatted_row(
        example,
        split=split,
        messages=messages,
        texts=(prompt, target, full),
        tokenizer=(tokenizer_id, tokenizer_revision),
        policy=policy,
        extra=extra,
        template_kwargs=template_kwargs,
    )


def _formatted_row(
    example: PreparedExample,
    *,
    split: str,
    messages: list[dict[str, Any]],
    texts: tuple[str, str, str],
    tokenizer: tuple[str, str],
    policy: str,
    extra: dict[str, Any] | None = None,
    template_kwargs: dict[str, Any] | None = None,
    markers: Sequence[str] = (),
) -> dict[str, Any]:
    """The one ``sommelier.formatted_example.v2`` row shape, for every template policy:
    ``texts`` is (prompt, target, full), ``tokenizer`` (id, revision); ``extra`` holds the
    policy's own keys (the native policy's tools); the optional acceptable arguments and
    cluster id last. With ``template_kwargs`` the row is v3: it records them and its
    ``prompt_sha256`` digests them with the prompt (``core.canonical.prompt_digest``)."""
    prompt, target, full = texts
    return {
        "schema_version": (
            SCHEMA_VERSION_V3
            if template_kwargs
            or example.expect != EXPECT_CALL
            or isinstance(example.acceptable_arguments, list)  # one per gold call: v3's form
            else SCHEMA_VERSION
        ),
        "example_id": example.example_id,
        "split": split,
        "language": example.language,
        "source_example_id": example.source_example_id,
        "messages": messages,
        "prompt_text": prompt,
        "target_text": target,
        "full_text": full,
        "prompt_sha256": prompt_digest(prompt, template_kwargs),
        "tokenizer_id": tokenizer[0],
        "tokenizer_revision": tokenizer[1],
        "template_policy": policy,
        **(extra or {}),
        **({KWARGS_KEY: dict(template_kwargs)} if template_kwargs else {}),
        **(
            {OPTIONAL_KEY: example.acceptable_arguments}
            if example.acceptable_arguments is not None
            else {}
        ),
        **({CLUSTER_KEY: example.cluster_id} if example.cluster_id is not None else {}),
        **(
            {EXPECT_KEY: example.expect, MARKERS_KEY: list(markers)}
            if example.expect != EXPECT_CALL
            else {}
        ),
    }


def _native_row(
    example: PreparedExample,
    tokenizer: Any,
    *,
    split: str,
    tokenizer_id: str,
    tokenizer_revision: str,
    arguments_key: str,
    template_kwargs: dict[str, Any] | None = None,
    parser: str = "v1",
) -> dict[str, Any]:
    """One row under ``sommelier.native-tools.v1`` (rendered and checked by ``render_native``,
    every gold call, read back by the ``parser`` the split is for)."""
    rendered = render_native(
        example,
        tokenizer,
        arguments_key=arguments_key,
        template_kwargs=template_kwargs,
        calls=example.calls if parser == "v2" else None,
    )
    return _formatted_row(
        example,
        split=split,
        messages=rendered.messages,
        texts=(rendered.prompt_text, rendered.target_text, rendered.full_text),
        tokenizer=(tokenizer_id, tokenizer_revision),
        policy=POLICY_NATIVE_TOOLS_V1,
        extra={TOOLS_KEY: rendered.tools},
        template_kwargs=template_kwargs,
        markers=rendered.call_markers,
    )


def check_template_kwargs(template_kwargs: Any) -> dict[str, Any]:
    """The template options (``template_render.template_kwargs_problem``); InputError naming
    --template-kwarg otherwise. None is no options."""
    problem = None if template_kwargs is None else template_kwargs_problem(template_kwargs)
    if problem is not None:
        raise InputError(
            "SOM-FORMAT-TEMPLATE-KWARG",
            f"template options {problem}",
            "give --template-kwarg NAME=VALUE with a JSON value, e.g. enable_thinking=false",
            where="--template-kwarg",
        )
    return dict(template_kwargs or {})


def check_split_name(split: str) -> str:
    """Validate a split name (``test``, ``train``, ...); InputError naming --split."""
    if not _SPLIT_RE.match(split):
        raise InputError(
            "SOM-FORMAT-SPLIT",
            f"bad split name {split!r}",
            "use letters, digits, '.', '_' or '-'",
            where="--split",
        )
    return split


def format_examples(
    examples: Iterable[PreparedExample],
    tokenizer: Any,
    *,
    split: str,
    policy: str = DEFAULT_POLICY,
    tokenizer_id: str,
    tokenizer_revision: str,
    arguments_key: str = "arguments",
    template_kwargs: dict[str, Any] | None = None,
    parser: str = "v1",
) -> list[dict[str, Any]]:
    """Format every example (input order kept); InputError when the tokenizer has no template
    or the ``template_kwargs`` are not options (``check_template_kwargs``)."""
    check_template_kwargs(template_kwargs)
    check_split_name(split)
    check_policy(policy)
    check_policy_key(policy, arguments_key)
    check_parser(parser, policy)
    if not getattr(tokenizer, "chat_template", None):
        raise InputError(
            "SOM-FORMAT-NO-CHAT-TEMPLATE",
            "the tokenizer has no chat template",
            "use a tokenizer (or .gguf) that ships a chat template",
            where=f"tokenizer={tokenizer_id}",
        )
    return [
        format_example(
            example,
            tokenizer,
            split=split,
            policy=policy,
            tokenizer_id=tokenizer_id,
            tokenizer_revision=tokenizer_revision,
            arguments_key=arguments_key,
            template_kwargs=template_kwargs,
            parser=parser,
        )
        for example in examples
    ]


# ---------------------------------------------------------------- writing


def formatted_line(row: dict[str, Any]) -> str:
    """One JSONL line for a formatted row: UTF-8 text, field order of the v2 schema (the
    optional ``tools``, ``acceptable_arguments`` then ``cluster_id`` last, when present)."""
    optional = (TOOLS_KEY, KWARGS_KEY, OPTIONAL_KEY, CLUSTER_KEY, EXPECT_KEY, MARKERS_KEY)
    keys = (*FORMATTED_KEYS, *(key for key in optional if key in row))
    return json.dumps({key: row[key] for key in keys}, ensure_ascii=False, allow_nan=False)


def write_jsonl_atomic(path: Path | str, rows: Iterable[dict[str, Any]]) -> None:
    """Write rows as JSONL through the one atomic writer (``data.atomic.write_atomic``): the
    old file stays whole until every row is written."""
    write_atomic(path, (formatted_line(row) + "\n" for row in rows))


def format_file(
    prepared: Path | str,
    out: Path | str,
    *,
    tokenizer: Any,
    tokenizer_id: str,
    tokenizer_revision: str,
    split: str,
    policy: str = DEFAULT_POLICY,
    arguments_key: str = "arguments",
    template_kwargs: dict[str, Any] | None = None,
    parser: str = "v1",
) -> list[dict[str, Any]]:
    """Read, validate, format and atomically write a split; returns the formatted rows
    (``parser``: the split's ``[parser] version``, :func:`check_parser`).

    The tokenizer and its identity are given by the caller (``cli.format_split`` loads them
    from a reference), so this module reads and writes files only and never imports an engine.
    Nothing is written unless every row formats.
    """
    check_split_name(split)
    check_policy(policy)
    check_policy_key(policy, arguments_key)
    check_parser(parser, policy)
    check_template_kwargs(template_kwargs)
    examples = read_prepared(prepared)
    rows = format_examples(
        examples,
        tokenizer,
        split=split,
        policy=policy,
        tokenizer_id=tokenizer_id,
        tokenizer_revision=tokenizer_revision,
        arguments_key=arguments_key,
        template_kwargs=template_kwargs,
        parser=parser,
    )
    write_jsonl_atomic(out, rows)
    return rows
