"""The conservative tool-call parser ``sommelier.parser.v1``.

``parse_tool_call(text)`` extracts the first balanced JSON span of a model output and accepts it
only when it is exactly one tool call. Nothing is repaired and no second candidate is looked for.
The rules (user documentation: ``docs/parser.md``):

1. The candidate starts at the first ``{`` or ``[`` of the text; none at all is ``no_json``.
2. From there the text is scanned with a bracket stack, skipping double-quoted strings (and the
   character after each backslash inside them), until the stack is empty. A closing bracket of
   the wrong kind, a string that never closes, the end of the text before the stack empties, or
   nesting deeper than :data:`MAX_DEPTH` is ``invalid_json``.
3. The span must decode as strict JSON: ``NaN``/``Infinity``/``-Infinity`` literals, a number
   that overflows to infinity, an integer literal longer than :data:`MAX_INT_DIGITS` digits,
   raw control characters inside strings, or a decoder recursion error are ``invalid_json``.
4. A repeated key in any object of the span is ``invalid_shape``, and so is anything that is not
   ``{"name": <non-empty string>, "arguments": <object>}`` with exactly those two keys, or a
   one-element array holding exactly that.

Invariants kept: the function never raises for any ``str`` (a non-``str`` is a ``TypeError``);
it runs in time linear in ``len(text)``; it returns a call (always the plain object form
``{"name": ..., "arguments": ...}``) exactly when the status is ``ok``.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

PARSER_VERSION = "sommelier.parser.v1"

STATUS_OK = "ok"
STATUS_NO_JSON = "no_json"
STATUS_INVALID_JSON = "invalid_json"
STATUS_INVALID_SHAPE = "invalid_shape"
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_NO_JSON, STATUS_INVALID_JSON, STATUS_INVALID_SHAPE)

MAX_DEPTH = 256
"""Deepest bracket nesting the parser hands to the JSON decoder; deeper spans are invalid_json.

A fixed limit (instead of whatever recursion depth happens to be left) keeps the status of a
text the same in every calling context, and keeps parsed calls shallow enough for every later
stage (canonical JSON, flattening, artifact writing) to handle without recursion errors.
"""

MAX_INT_DIGITS = 4300
"""Longest integer literal accepted (Python's default int/str conversion limit since 3.11)."""

_OPENERS = "{["
_CLOSER_FOR = {"{": "}", "[": "]"}

# One token of the scan: a bracket, a complete double-quoted string (backslash escapes skipped,
# written unrolled so a failed match backtracks at most linearly), or a lone quote that never
# closes. ``search`` skips every other character (prose, digits, colons) at C speed.
_TOKEN = re.compile(r'[{}\[\]]|"[^"\\]*(?:\\.[^"\\]*)*"|"', re.DOTALL)
_FIRST_OPENER = re.compile(r"[{\[]")


class _NotJSON(ValueError):
    """The span is not strict JSON (a rejected constant or a non-finite number)."""


def _find_span_end(text: str, start: int) -> int | None:
    """Return the index just past the span opened at ``text[start]``, or None if none balances.

    Invariant: the returned span starts with an opener, ends with its matching closer, and every
    bracket outside strings inside it is matched in order; the depth never exceeds MAX_DEPTH.
    """
    stack: list[str] = []
    pos = start
    while True:
        match = _TOKEN.search(text, pos)
        if match is None:
            return None
        token = match.group()
        pos = match.end()
        if token == '"':
            return None
        if token[0] == '"':
            continue
        if token in _OPENERS:
            stack.append(_CLOSER_FOR[token])
            if len(stack) > MAX_DEPTH:
                return None
            continue
        if not stack or stack.pop() != token:
            return None
        if not stack:
            return pos


def _reject_constant(name: str) -> Any:
    """Refuse the non-JSON literals ``NaN``, ``Infinity`` and ``-Infinity``."""
    raise _NotJSON(f"{name} is not JSON")


def _finite_float(literal: str) -> float:
    """Decode a JSON float literal, refusing one that overflows to infinity (e.g. ``1e400``)."""
    value = float(literal)
    if not math.isfinite(value):
        raise _NotJSON(f"{literal} is not a finite number")
    return value


def _bounded_int(literal: str) -> int:
    """Decode a JSON integer literal of at most MAX_INT_DIGITS digits (same on every Python)."""
    if len(literal) - literal.startswith("-") > MAX_INT_DIGITS:
        raise _NotJSON(f"integer literal longer than {MAX_INT_DIGITS} digits")
    return int(literal)


def _decode_span(span: str) -> tuple[Any, bool] | None:
    """Decode ``span`` as strict JSON: ``(value, had_repeated_key)``, or None if it is not JSON.

    Invariant: never raises; a repeated key is reported, not decided, so that a span that is
    not JSON at all stays ``invalid_json`` even if it also repeats a key.
    """
    repeated = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        result = dict(pairs)
        if len(result) != len(pairs):
            repeated = True
        return result

    try:
        value = json.loads(
            span,
            object_pairs_hook=pairs_hook,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError, _NotJSON and integers beyond the int digit limit.
        return None
    return value, repeated


def _as_call(value: Any) -> dict[str, Any] | None:
    """Return the plain call if ``value`` has exactly the accepted shape, else None."""
    if isinstance(value, list):
        if len(value) != 1:
            return None
        value = value[0]
    if not isinstance(value, dict) or set(value) != {"name", "arguments"}:
        return None
    name, arguments = value["name"], value["arguments"]
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return {"name": name, "arguments": arguments}


def parse_tool_call(text: str) -> tuple[dict[str, Any] | None, str]:
    """Parse one model output: ``(call, "ok")`` or ``(None, status)`` with a failure status.

    Invariants: never raises for a ``str`` (TypeError otherwise); linear time; the call is
    returned exactly when the status is ``ok``, always as ``{"name": str, "arguments": dict}``.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_tool_call expects str, got {type(text).__name__}")
    opener = _FIRST_OPENER.search(text)
    if opener is None:
        return None, STATUS_NO_JSON
    start = opener.start()
    end = _find_span_end(text, start)
    if end is None:
        return None, STATUS_INVALID_JSON
    decoded = _decode_span(text[start:end])
    if decoded is None:
        return None, STATUS_INVALID_JSON
    value, repeated = decoded
    if repeated:
        return None, STATUS_INVALID_SHAPE
    call = _as_call(value)
    if call is None:
        return None, STATUS_INVALID_SHAPE
    return call, STATUS_OK
