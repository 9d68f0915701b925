"""The opt-in parser ``sommelier.parser.v2``: every call of an answer, in order.

``parse_tool_calls(text)`` reads each balanced top-level JSON span of a model output in turn and
accepts the output only when every span is one call of v1's exact shape or an array of such
calls; the answer is the sequence of calls. Nothing is repaired. The rules (user
documentation: ``docs/parser.md``, "Parser v2"):

1. A span starts at the first ``{`` or ``[`` at or after the cursor (v1's rule 1; the cursor
   starts at 0 and moves to the end of each span read). No span at all is ``no_json``; prose
   before, between and after spans is ignored.
2. Each span is found and decoded exactly as v1 finds and decodes its one span
   (``core.parse``: the bracket scan carried out by the strict JSON decoder, the depth and
   number limits). A span that never balances, or balances but is not strict JSON, ends the
   parse as ``invalid_json`` (its end is not known, so nothing after it is read).
3. A decoded span is a call (``core.parse.call_shape_error``, the one call-shape rule, with the
   run's ``arguments_key``) or a non-empty array whose every element is such a call object (no
   nested arrays). Anything else, or a repeated key in any object of the span, ends the parse as
   ``invalid_shape``.
4. The first span that fails decides the status; when every span passes the status is ``ok``
   and the calls are returned in the order written (duplicates kept).

Invariants kept: never raises for a ``str`` (``TypeError`` otherwise, ``ValueError`` for an
unknown ``arguments_key``); linear in ``len(text)`` (each character is searched and decoded at
most once: spans are disjoint and the opener searches never rescan text); a non-empty list of
calls, each the plain ``{"name", "arguments"}`` form, exactly when the status is ``ok``.

Agreement with v1: on a text with at most one top-level span (nothing but prose after the
first span), v2's status is v1's and, when it is ``ok``, v2's calls are ``[v1's call]``, except
for an array of two or more calls (v1: ``invalid_shape``), which v2 reads as those calls;
whenever v2 answers ``ok`` with one call, v1 answers ``ok`` with that call; whenever v1's first
span is ``no_json`` or ``invalid_json``, so is v2's answer (the property tests check all
three). v1 itself is unchanged: this module imports its rules (the opener rule, the span
decoding, the call shape) and implements none of them again.
"""

from __future__ import annotations

from typing import Any

from pytest_sommelier.core.parse import (
    DEFAULT_ARGUMENTS_KEY,
    PARSER_VERSION,
    STATUS_INVALID_JSON,
    STATUS_INVALID_SHAPE,
    STATUS_NO_JSON,
    STATUS_OK,
    _as_call,
    _checked_key,
    _decode_first_span,
)
from pytest_sommelier.core.types import Call

PARSER_V2_VERSION = "sommelier.parser.v2"

PARSER_VERSIONS: dict[str, str] = {"v1": PARSER_VERSION, "v2": PARSER_V2_VERSION}
"""``[parser] version`` -> the parser's full name (the identity a report records)."""

ORDER_ANY = "any"
ORDER_EXACT = "exact"
ORDERS: tuple[str, ...] = (ORDER_ANY, ORDER_EXACT)
"""``[parser] order``: how predicted calls are paired with gold calls (``core.call_sets``)."""
DEFAULT_ORDER = ORDER_ANY


class _Openers:
    """The next ``{`` or ``[`` at or after a position (v1's rule 1 from a cursor).

    Each bracket kind's next position is cached and searched again only once the cursor has
    passed it, so over a whole parse every character is searched at most once per kind.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._next = {"{": -1, "[": -1}

    def first(self, position: int) -> int:
        """Index of the first opener at or after ``position``, or -1."""
        found = []
        for char in "{[":
            index = self._next[char]
            if index != len(self._text) and index < position:
                index = self._text.find(char, position)
                index = len(self._text) if index < 0 else index
                self._next[char] = index
            found.append(index)
        first = min(found)
        return -1 if first >= len(self._text) else first


def _span_calls(value: Any, arguments_key: str) -> list[Call] | None:
    """The calls of one decoded span (rule 3): a call, or a non-empty array of call objects."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, dict) for item in items):
        return None
    calls = [_as_call(item, arguments_key) for item in items]
    if any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def parse_tool_calls(
    text: str, *, arguments_key: str = DEFAULT_ARGUMENTS_KEY
) -> tuple[list[Call] | None, str]:
    """Parse one model output: ``(calls, "ok")`` or ``(None, status)`` with a failure status.

    Invariants: never raises for a ``str``; linear time; ``calls`` is a non-empty list exactly
    when the status is ``ok``, each call ``{"name": str, "arguments": dict}``.
    """
    _checked_key(arguments_key)
    if not isinstance(text, str):
        raise TypeError(f"parse_tool_calls expects str, got {type(text).__name__}")
    openers = _Openers(text)
    calls: list[Call] = []
    start = openers.first(0)
    if start < 0:
        return None, STATUS_NO_JSON
    while start >= 0:
        decoded = _decode_first_span(text, start)
        if decoded is None:
            return None, STATUS_INVALID_JSON
        value, repeated, end = decoded
        span = None if repeated else _span_calls(value, arguments_key)
        if span is None:
            return None, STATUS_INVALID_SHAPE
        calls.extend(span)
        start = openers.first(end)
    return calls, STATUS_OK


__all__ = [
    "DEFAULT_ORDER",
    "ORDERS",
    "ORDER_ANY",
    "ORDER_EXACT",
    "PARSER_V2_VERSION",
    "PARSER_VERSIONS",
    "parse_tool_calls",
]
