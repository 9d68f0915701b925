"""The one reading of a JSON input: strict, and bounded in depth and size.

Every reader of a JSON input (a split line, a prepared row, an importer's file or row, a JSON
string inside a row, an ``adapter_config.json``, a safetensors header) decodes it with
``strict_json``: a repeated key in one object or ``NaN``/``Infinity`` is refused, and so are a
number that overflows to infinity (``1e400``) and an integer of more than ``MAX_INT_DIGITS``
digits, as parser v1 refuses them in an output (``core.parse.finite_float``, ``bounded_int``:
a gold call the parser could never read back is no gold call); so is a text
longer than ``JSON_TEXT_LIMIT`` characters (checked before decoding) or a value nested deeper
than ``JSON_DEPTH_LIMIT`` arrays and objects (a ``RecursionError`` of the decoder is that same
refusal, never a traceback). ``depth_problem`` is the same depth rule for a value that did not
come from JSON text (a Parquet row) and, with ``FIELD_DEPTH_LIMIT``, for the parts of a row that
later code walks recursively (a tool's parameters schema, a call's arguments).

Invariants kept: nothing here recurses (the depth walk keeps its own stack), so a hostile input
can never exhaust the interpreter's stack; every refusal is a ``ValueError`` whose message is
one line naming the depth or size and, for depth, the path of the first value too deep
(``tools[0].parameters.properties.a...``): ``nested too deeply (deeper than 64 levels,
at ...)``, which each reader words with its file and line.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from pytest_sommelier.core.parse import bounded_int, finite_float

JSON_DEPTH_LIMIT = 64
"""The deepest JSON value read (arrays and objects; a scalar at the top is depth 0)."""
FIELD_DEPTH_LIMIT = 32
"""The deepest tool parameters schema or call arguments value taken, so that a row holding
them (a prepared row, a formatted row, an importer's row with its wrappers) stays well inside
``JSON_DEPTH_LIMIT`` and every recursive walk of them (JSON Schema validation, the argument
diff, a chat template) inside the interpreter's stack."""
JSON_TEXT_LIMIT = 512 * 1024 * 1024
"""The longest JSON text decoded, in characters (a JSON-array file is one text)."""
_SHOWN_PATH = 80
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def strict_json(text: str, *, depth_limit: int = JSON_DEPTH_LIMIT) -> Any:
    """``json.loads`` refusing repeated keys, NaN/Infinity, a number beyond a float's range or an
    integer beyond ``core.parse.MAX_INT_DIGITS`` digits, more than ``JSON_TEXT_LIMIT``
    characters and nesting deeper than ``depth_limit`` (each a one-line ``ValueError``)."""
    if len(text) > JSON_TEXT_LIMIT:
        raise ValueError(
            f"JSON text of {len(text)} characters is longer than the limit of {JSON_TEXT_LIMIT}"
        )
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):
            value = _DECODER.decode(text)  # json.loads' own path for a str, without a new decoder
        else:  # json.loads' BOM refusal and bytes decoding, as they are
            value = json.loads(
                text,
                object_pairs_hook=_unique_keys,
                parse_constant=_no_constant,
                parse_float=finite_float,
                parse_int=bounded_int,
            )
    except RecursionError:
        raise ValueError(
            f"nested too deeply (deeper than {depth_limit} levels: the decoder ran out of stack)"
        ) from None
    # the cheap bounds first (no value nests deeper than the text has opening brackets, then
    # the bracket depth outside strings); the walk names the path
    if text.count("[") + text.count("{") > depth_limit and _text_depth(text) > depth_limit:
        problem = depth_problem(value, depth_limit)
        if problem is not None:
            raise ValueError(problem)
    return value


def _text_depth(text: str) -> int:
    """The bracket depth of a JSON text read outside its strings: for a text ``json.loads``
    decoded, exactly the decoded value's depth (an upper bound is all the caller needs)."""
    if text.count("[") + text.count("{") <= 1:
        return text.count("[") + text.count("{")
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(_STEP[char] for char in brackets), default=0)


def depth_problem(value: Any, limit: int = JSON_DEPTH_LIMIT, path: str = "") -> str | None:
    """A one-line refusal when ``value`` nests arrays and objects deeper than ``limit`` (the
    path of the first value too deep, below ``path``), else None. Iterative: any depth is safe."""
    if not _too_deep(value, limit):
        return None
    where = _first_too_deep(value, limit, path)
    shown = where if len(where) <= _SHOWN_PATH else where[: _SHOWN_PATH - 3] + "..."
    return f"nested too deeply (deeper than {limit} levels, at {shown or 'the top'})"


def _too_deep(value: Any, limit: int) -> bool:
    """Whether a container sits deeper than ``limit`` (no paths built: the common case)."""
    if not isinstance(value, (dict, list, tuple)):
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth + 1 > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, (dict, list, tuple))
        )
    return False


def _first_too_deep(value: Any, limit: int, path: str) -> str:
    """The path of the first container (in document order) deeper than ``limit``."""
    stack: list[tuple[Any, int, str]] = [(value, 0, path)]  # only containers are pushed
    while stack:
        item, depth, where = stack.pop()
        if depth + 1 > limit:
            return where
        if isinstance(item, dict):
            children = [(f"{where}.{key}" if where else str(key), v) for key, v in item.items()]
        else:
            children = [(f"{where}[{index}]", v) for index, v in enumerate(item)]
        stack.extend(
            (child, depth + 1, key)
            for key, child in reversed(children)
            if isinstance(child, (dict, list, tuple))
        )
    return path


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Object hook: a key repeated in one object is an error, not a silent overwrite."""
    result = dict(pairs)
    if len(result) != len(pairs):  # the first key seen twice, in document order
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"repeated key {key!r}")
            seen.add(key)
    return result


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=_no_constant,
    parse_float=finite_float,
    parse_int=bounded_int,
)


__all__ = [
    "FIELD_DEPTH_LIMIT",
    "JSON_DEPTH_LIMIT",
    "JSON_TEXT_LIMIT",
    "depth_problem",
    "strict_json",
]
