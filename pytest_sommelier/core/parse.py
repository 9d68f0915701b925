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

How it is computed: the JSON decoder's ``raw_decode`` starting at the first opener. A strict JSON
value that starts with a bracket ends exactly where the bracket scan of rule 2 balances (JSON
strings are delimited the way the scan skips them), and when no valid JSON value starts there,
the first span either never balances or is not JSON: ``invalid_json`` in every case. So the
statuses are those of the literal scan (a property test checks this against a character-by-
character reference), while the scan runs at C speed inside the decoder. The depth limit is
checked on the decoded value, and only when the span holds more than MAX_DEPTH openers at all.

Invariants kept: the function never raises for any ``str`` (a non-``str`` is a ``TypeError``);
it runs in time linear in ``len(text)``; it returns a call (always the plain object form
``{"name": ..., "arguments": ...}``) exactly when the status is ``ok``.

``arguments_key`` (one of :data:`ARGUMENTS_KEYS`, default ``"arguments"``) names the second key
of rule 4: ``"parameters"`` accepts exactly ``{"name", "parameters"}`` (the call shape Llama 3.x
templates write) with the same strictness, and the call is still returned as ``{"name",
"arguments"}``. The key is part of the parser's identity (:func:`parser_identity`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from pytest_sommelier.core.types import Call

PARSER_VERSION = "sommelier.parser.v1"

STATUS_OK = "ok"
STATUS_NO_JSON = "no_json"
STATUS_INVALID_JSON = "invalid_json"
STATUS_INVALID_SHAPE = "invalid_shape"
STATUSES: tuple[str, ...] = (STATUS_OK, STATUS_NO_JSON, STATUS_INVALID_JSON, STATUS_INVALID_SHAPE)

DEFAULT_ARGUMENTS_KEY = "arguments"
ARGUMENTS_KEYS: tuple[str, ...] = ("arguments", "parameters")
"""The accepted names of a call's argument object: exactly one of them is read per run."""

MAX_DEPTH = 256
"""Deepest bracket nesting accepted (the top level is 1); deeper spans are ``invalid_json``.

A fixed limit well below the decoder's recursion limit (instead of whatever recursion depth
happens to be left) keeps the status of a text the same in every calling context, and keeps
parsed calls shallow enough for every later stage (canonical JSON, flattening, artifact writing)
to handle without recursion errors.
"""

MAX_INT_DIGITS = 4300
"""Longest integer literal accepted (Python's default int/str conversion limit since 3.11)."""


class _NotJSON(ValueError):
    """The span is not strict JSON (a rejected constant or a non-finite number)."""


def _first_opener(text: str) -> int:
    """Index of the first ``{`` or ``[`` in ``text``, or -1 (two bounded C-speed searches)."""
    brace = text.find("{")
    bracket = text.find("[", 0, brace if brace >= 0 else len(text))
    return bracket if bracket >= 0 else brace


def _deeper_than(value: Any, limit: int) -> bool:
    """True if containers in ``value`` nest more than ``limit`` levels (the top level is 1).

    Iterative, so it cannot itself run out of recursion depth.
    """
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        pending.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _reject_constant(name: str) -> Any:
    """Refuse the non-JSON literals ``NaN``, ``Infinity`` and ``-Infinity``."""
    raise _NotJSON(f"{name} is not JSON")


def finite_float(literal: str) -> float:
    """Decode a JSON float literal, refusing one that overflows to infinity (e.g. ``1e400``)
    (also every strict JSON input's rule, ``data.json_input.strict_json``)."""
    value = float(literal)
    if not math.isfinite(value):
        shown = literal if len(literal) <= 40 else literal[:37] + "..."
        raise _NotJSON(f"{shown} is not a finite number")
    return value


def bounded_int(literal: str) -> int:
    """Decode a JSON integer literal of at most MAX_INT_DIGITS digits (same on every Python)."""
    if len(literal) - literal.startswith("-") > MAX_INT_DIGITS:
        raise _NotJSON(f"integer literal longer than {MAX_INT_DIGITS} digits")
    return int(literal)


def _decode_first_span(text: str, start: int) -> tuple[Any, bool, int] | None:
    """Decode the JSON value opened at ``text[start]``: ``(value, had_repeated_key, end)`` (the
    index just past the span, which parser v2 reads on from), or None.

    None means ``invalid_json``: the first span does not balance, is not strict JSON, or nests
    deeper than MAX_DEPTH. Invariant: never raises. A repeated key is reported, not decided, so
    that a span that is not JSON at all stays ``invalid_json`` even if it also repeats a key.
    """
    repeated = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        result = dict(pairs)
        if len(result) != len(pairs):
            repeated = True
        return result

    decoder = json.JSONDecoder(
        object_pairs_hook=pairs_hook,
        parse_constant=_reject_constant,
        parse_float=finite_float,
        parse_int=bounded_int,
    )
    try:
        value, end = decoder.raw_decode(text, start)
    except (ValueError, RecursionError):
        # ValueError covers JSONDecodeError and the _NotJSON refusals of the hooks.
        return None
    openers = text.count("{", start, end) + text.count("[", start, end)
    if openers > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        return None
    return value, repeated, end


def parser_identity(arguments_key: str = DEFAULT_ARGUMENTS_KEY) -> dict[str, str]:
    """The parser's identity: its version and the argument key it reads (ValueError if unknown)."""
    return {"parser_version": PARSER_VERSION, "arguments_key": _checked_key(arguments_key)}


def recorded_arguments_key(record: Mapping[str, Any]) -> str | None:
    """The arguments key a stored report or resolved suite records under ``arguments_key``:
    the key itself, ``arguments`` when the field is absent (written before the key was
    recorded, when parser v1 read only ``arguments``), None when it is not a known key."""
    value = record.get("arguments_key", DEFAULT_ARGUMENTS_KEY)
    return value if isinstance(value, str) and value in ARGUMENTS_KEYS else None


def _checked_key(arguments_key: str) -> str:
    """``arguments_key`` if it is one of ARGUMENTS_KEYS; ValueError otherwise."""
    if arguments_key not in ARGUMENTS_KEYS:
        raise ValueError(f"arguments_key must be one of {ARGUMENTS_KEYS}, got {arguments_key!r}")
    return arguments_key


class CallShapeError(NamedTuple):
    """Why a value is not a call: ``field`` is ``""`` (the value itself), ``"name"`` or the
    arguments key; ``problem`` is a phrase that follows the field's name (``is not ...``)."""

    field: str
    problem: str


def call_shape_error(
    value: object, arguments_key: str = DEFAULT_ARGUMENTS_KEY
) -> CallShapeError | None:
    """The one call-shape rule (rule 4): None when ``value`` is exactly ``{"name": <non-empty
    string>, <arguments_key>: <object>}`` (no other key), else the first thing wrong with it.

    Every reader of a call applies it: the parser (model outputs, with the suite's
    ``arguments_key``), the split loader (gold calls in ``target_text``), ``sommelier format``
    (prepared gold calls) and the metrics (records, always ``arguments``).
    """
    if not isinstance(value, dict) or set(value) != {"name", arguments_key}:
        return CallShapeError("", f'is not {{"name", "{arguments_key}"}} (exactly these two keys)')
    if not isinstance(value["name"], str) or not value["name"]:
        return CallShapeError("name", "is not a non-empty string")
    if not isinstance(value[arguments_key], dict):
        return CallShapeError(arguments_key, "is not an object")
    return None


def _as_call(value: Any, arguments_key: str = DEFAULT_ARGUMENTS_KEY) -> Call | None:
    """Return the plain call (always ``{"name", "arguments"}``) if ``value`` is a call under
    ``arguments_key`` or a one-element array holding one."""
    if isinstance(value, list):
        if len(value) != 1:
            return None
        value = value[0]
    if call_shape_error(value, arguments_key) is not None:
        return None
    return {"name": value["name"], "arguments": value[arguments_key]}


def parse_tool_call(
    text: str, *, arguments_key: str = DEFAULT_ARGUMENTS_KEY
) -> tuple[Call | None, str]:
    """Parse one model output: ``(call, "ok")`` or ``(None, status)`` with a failure status.

    Invariants: never raises for a ``str`` (TypeError otherwise; ValueError for an
    ``arguments_key`` outside ARGUMENTS_KEYS); linear time; the call is returned exactly when the
    status is ``ok``, always as ``{"name": str, "arguments": dict}``.
    """
    _checked_key(arguments_key)
    if not isinstance(text, str):
        raise TypeError(f"parse_tool_call expects str, got {type(text).__name__}")
    start = _first_opener(text)
    if start < 0:
        return None, STATUS_NO_JSON
    decoded = _decode_first_span(text, start)
    if decoded is None:
        return None, STATUS_INVALID_JSON
    value, repeated, _ = decoded
    if repeated:
        return None, STATUS_INVALID_SHAPE
    call = _as_call(value, arguments_key)
    if call is None:
        return None, STATUS_INVALID_SHAPE
    return call, STATUS_OK
