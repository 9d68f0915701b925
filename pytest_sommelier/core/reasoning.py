"""The declared reasoning channel (``[parser] reasoning``): one span separated before parser v1.

A reasoning model writes a reasoning block before its answer (``<think>...</think>``). Parser
v1 takes the first ``{`` or ``[`` of what it is given, so a bracket inside the reasoning would
be read as the call. A suite may declare the channel; the rule (user documentation:
``docs/parser.md``, "Reasoning models"):

1. No rule (the default): nothing is separated; parser v1 reads the whole ``raw_text``.
2. Delimiters (``"think"`` is ``<think>`` ... ``</think>``, or ``{start, end}``): after leading
   whitespace, if the output starts with ``start``, the reasoning is the text up to the FIRST
   ``end`` after it and the content is everything after that ``end``; parser v1 reads the
   content exactly as it reads any text. An output that does not start with ``start`` has no
   reasoning and its content is the whole ``raw_text``. A ``start`` never followed by ``end``
   leaves no answer (content ``None``): the example scores zero everywhere, its parse status
   is ``no_json`` (v1 found nothing to read) and its miss category is
   :data:`REASONING_UNTERMINATED`.
3. ``"engine"``: the engine returned the reasoning apart from the content (an OpenAI-compatible
   server's ``reasoning_content``); ``raw_text`` is the content as returned (``""`` when the
   server sent none) and the reasoning is recorded as the engine gave it. An engine that gave
   reasoning but no content at all (``content: null``: the reasoning never ended) leaves no
   answer, as an unclosed span does.

Nothing is repaired: at most one span is separated, only at the start, only when it closes;
the same rule applies to every arm, and every record can be re-derived from ``raw_text`` (and,
under ``"engine"``, the recorded engine reasoning) by :func:`split_output`.

Invariants kept: :func:`split_output` never raises for a ``str`` and is linear in its length;
``content_text`` is ``raw_text`` itself whenever no span is separated; with delimiters,
``raw_text`` is recovered exactly from the split (leading whitespace + start + reasoning + end
+ content). Pure: no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY, STATUS_NO_JSON, parse_tool_call
from pytest_sommelier.core.parse_v2 import parse_tool_calls
from pytest_sommelier.core.types import Call

ENGINE: Final = "engine"
THINK: Final = "think"
REASONING_UNTERMINATED: Final = "reasoning_unterminated"
"""The miss category of an output whose reasoning span never closed (no answer)."""

DELIMITER_CHARS = 64
"""Longest delimiter accepted, in characters (real ones are a handful)."""


@dataclass(frozen=True)
class Delimiters:
    """A reasoning span's start and end delimiters (non-empty, checked by :func:`checked_rule`)."""

    start: str
    end: str


THINK_DELIMITERS: Final = Delimiters("<think>", "</think>")

ReasoningRule = Delimiters | Literal["engine"] | None
"""No rule (None), a delimiter pair, or the engine's own reasoning channel."""


class SplitOutput(NamedTuple):
    """One output split by the rule: ``reasoning_text`` (None when no span was separated) and
    ``content_text`` (what parser v1 reads; None when the reasoning never closed)."""

    reasoning_text: str | None
    content_text: str | None

    @property
    def unterminated(self) -> bool:
        """True when the reasoning never closed: there is no answer."""
        return self.content_text is None


def _delimiter_problem(value: Any, name: str) -> str | None:
    """Why ``value`` cannot be a delimiter (a phrase after the key's name), or None."""
    if not isinstance(value, str):
        return f"{name} must be a string"
    if not value.strip():
        return f"{name} must be a non-empty string that is not only whitespace"
    if len(value) > DELIMITER_CHARS:
        return f"{name} is longer than {DELIMITER_CHARS} characters"
    if any(ord(char) < 32 and char not in "\n\t" for char in value) or "\x7f" in value:
        return f"{name} holds a control character"
    if any(0xD800 <= ord(char) <= 0xDFFF for char in value):
        return f"{name} holds a lone surrogate"
    if name == "start" and value != value.lstrip():
        return "start must not begin with whitespace (leading whitespace is skipped before it)"
    return None


def checked_rule(value: Any) -> ReasoningRule:
    """The rule a ``[parser] reasoning`` value (or a report's recorded identity) names:
    ``"think"``, ``"engine"``, ``{start, end}`` (exactly these two keys), or None.
    ``ValueError`` with a one-line reason otherwise."""
    if value is None:
        return None
    if value == THINK:
        return THINK_DELIMITERS
    if value == ENGINE:
        return ENGINE
    if isinstance(value, str):
        raise ValueError(f'must be "think", "engine" or {{start, end}}, got {value[:40]!r}')
    if not isinstance(value, Mapping):
        raise ValueError(f'must be "think", "engine" or {{start, end}}, got {type(value).__name__}')
    keys = sorted(str(key) for key in value)
    if keys != ["end", "start"]:
        raise ValueError(f"a table with exactly the keys start and end, got {keys}")
    for name in ("start", "end"):
        problem = _delimiter_problem(value[name], name)
        if problem is not None:
            raise ValueError(problem)
    return Delimiters(value["start"], value["end"])


def rule_identity(rule: ReasoningRule) -> dict[str, str] | str | None:
    """How reports record a rule: ``{start, end}``, ``"engine"`` or None (no rule)."""
    if isinstance(rule, Delimiters):
        return {"start": rule.start, "end": rule.end}
    return rule


def parser_block(version: str, rule: ReasoningRule) -> dict[str, Any]:
    """The report's parser identity: ``{version, reasoning}`` (DESIGN "Reasoning channel")."""
    return {"version": version, "reasoning": rule_identity(rule)}


def recorded_reasoning(report: Mapping[str, Any]) -> Any:
    """The reasoning rule an evaluation report records (``parser.reasoning``); a report without
    a parser block (written before the rule existed) had none: None. (A resolved suite records
    the rule under ``reasoning``.)"""
    parser = report.get("parser")
    return parser.get("reasoning") if isinstance(parser, Mapping) else None


def split_output(
    raw_text: str,
    rule: ReasoningRule,
    *,
    engine_reasoning: str | None = None,
    engine_content: bool = True,
) -> SplitOutput:
    """Split one output by ``rule`` (module docstring). ``engine_reasoning`` and
    ``engine_content`` (False: the engine sent no content) are read under ``"engine"`` only."""
    if not isinstance(raw_text, str):
        raise TypeError(f"split_output expects str, got {type(raw_text).__name__}")
    if rule is None:
        return SplitOutput(None, raw_text)
    if rule == ENGINE:
        if engine_reasoning is None:
            return SplitOutput(None, raw_text)
        return SplitOutput(engine_reasoning, raw_text if engine_content else None)
    assert isinstance(rule, Delimiters)
    body = raw_text.lstrip()
    if not body.startswith(rule.start):
        return SplitOutput(None, raw_text)
    opened = len(rule.start)
    close = body.find(rule.end, opened)
    if close < 0:
        return SplitOutput(body[opened:], None)
    return SplitOutput(body[opened:close], body[close + len(rule.end) :])


def recorded_split(record: Mapping[str, Any], rule: ReasoningRule) -> SplitOutput:
    """The split of a stored generation record, re-derived from its ``raw_text`` by ``rule``;
    under ``"engine"`` from the reasoning the record keeps (a string or null; anything else is
    read as none) and whether it kept a content (``content_text`` null with a reasoning: the
    engine sent no content)."""
    raw = record["raw_text"]
    if rule != ENGINE:
        return split_output(raw, rule)
    reasoning = record.get("reasoning_text")
    if not isinstance(reasoning, str):
        return split_output(raw, rule)
    has_content = not ("content_text" in record and record["content_text"] is None)
    return split_output(raw, rule, engine_reasoning=reasoning, engine_content=has_content)


def parse_split(
    split: SplitOutput, arguments_key: str = DEFAULT_ARGUMENTS_KEY
) -> tuple[Call | None, str]:
    """Parser v1 over the content of a split output, exactly as over any text; no content (an
    unclosed span) is no answer: ``(None, "no_json")``, v1 found nothing to read."""
    if split.content_text is None:
        return None, STATUS_NO_JSON
    return parse_tool_call(split.content_text, arguments_key=arguments_key)


def parse_fields(
    split: SplitOutput, arguments_key: str = DEFAULT_ARGUMENTS_KEY, parser_version: str = "v1"
) -> dict[str, Any]:
    """The parse fields of a record from a split output: ``parsed_call`` and ``parse_status``
    (:func:`parse_split`, parser v1), or under ``parser_version`` ``"v2"``
    (``core.parse_v2.parse_tool_calls`` over the content) also ``parsed_calls``, every call in
    order, with ``parsed_call`` its first (what a v1 reader of the record shows). The one place
    a record's parse is chosen by the suite's parser."""
    if parser_version != "v2":
        call, status = parse_split(split, arguments_key)
        return {"parsed_call": call, "parse_status": status}
    if split.content_text is None:
        calls, status = None, STATUS_NO_JSON
    else:
        calls, status = parse_tool_calls(split.content_text, arguments_key=arguments_key)
    return {
        "parsed_call": calls[0] if calls else None,
        "parsed_calls": calls,
        "parse_status": status,
    }


def _percentile(values: list[int], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank: the smallest value with at least
    ``share`` of the values at or below it), a float."""
    ranked = sorted(values)
    rank = math.ceil(round(share * len(ranked), 9))
    return float(ranked[max(0, min(len(ranked), rank) - 1)])


def reasoning_summary(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One arm's (or slice's) reasoning figures from its generation records:
    ``{outputs, reasoned, unterminated, truncated_in_reasoning, tokens_counted, median_tokens,
    p95_tokens}``. ``reasoned`` counts outputs with a separated span (closed or not),
    ``truncated_in_reasoning`` the unterminated ones that hit ``max_new_tokens``
    (``finish_reason`` ``length``); the token figures are over the records whose engine counted
    their reasoning's tokens (``reasoning_tokens``; null when none did). The 95th percentile is
    the nearest-rank one."""
    outputs = reasoned = unterminated = truncated = 0
    tokens: list[int] = []
    for record in records:
        outputs += 1
        if record.get("reasoning_text") is None:
            continue
        reasoned += 1
        if record.get("content_text", "") is None:
            unterminated += 1
            truncated += int(record.get("finish_reason") == "length")
        count = record.get("reasoning_tokens")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            tokens.append(count)
    return {
        "outputs": outputs,
        "reasoned": reasoned,
        "unterminated": unterminated,
        "truncated_in_reasoning": truncated,
        "tokens_counted": len(tokens),
        "median_tokens": float(statistics.median(tokens)) if tokens else None,
        "p95_tokens": _percentile(tokens, 0.95) if tokens else None,
    }


__all__ = [
    "DELIMITER_CHARS",
    "ENGINE",
    "REASONING_UNTERMINATED",
    "THINK",
    "THINK_DELIMITERS",
    "Delimiters",
    "ReasoningRule",
    "SplitOutput",
    "checked_rule",
    "parse_split",
    "parser_block",
    "reasoning_summary",
    "recorded_reasoning",
    "recorded_split",
    "rule_identity",
    "split_output",
]
