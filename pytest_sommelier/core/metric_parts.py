"""The parts the v1 metrics (``core.metrics``) and the call-set metrics of parser v2
(``core.call_sets``) are both built from: the metric names, canonical JSON, argument flattening
and the record status check (pure functions, no I/O). ``core.metrics`` re-exports every name,
which stays where users import it from; this module exists so that ``core.call_sets`` can sit
between the two without an import cycle."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_sommelier.core.canonical import canonical_json_text
from pytest_sommelier.core.parse import STATUS_OK, STATUSES
from pytest_sommelier.core.types import MetricValue
from pytest_sommelier.errors import InvariantError

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

VALID_JSON_RATE = "valid_json_rate"
FUNCTION_NAME_ACCURACY = "function_name_accuracy"
ARGUMENT_EXACT_MATCH = "argument_exact_match"
ARGUMENT_F1 = "argument_f1"
FULL_CALL_EXACT_MATCH = "full_call_exact_match"
"""The five built-in metrics' names: the one place each is spelled (every layer imports them)."""

METRIC_NAMES: tuple[str, ...] = (
    VALID_JSON_RATE,
    FUNCTION_NAME_ACCURACY,
    ARGUMENT_EXACT_MATCH,
    ARGUMENT_F1,
    FULL_CALL_EXACT_MATCH,
)

ROOT_PATH = "<root>"
"""The path of the single pair that empty arguments flatten to (``("<root>", "{}")``)."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Component = tuple[int, int]


def canonical_json(value: Any) -> str:
    """Canonical JSON text: sorted keys, compact separators, ASCII escapes, no NaN/Infinity.

    Invariant: two JSON values get the same text exactly when they are equal as JSON with the
    decoded types kept (``"2"`` differs from ``2``, ``1`` from ``1.0``, ``true`` from ``1``).
    The one definition is :func:`pytest_sommelier.core.canonical.canonical_json_text`.
    """
    return canonical_json_text(value)


def _key_segment(key: str) -> str:
    """Path segment of an object key: ``.key`` for a plain identifier, else ``["<json key>"]``.

    Invariant: segments are uniquely decodable (an identifier holds no ``.``, ``[`` or ``"``;
    a quoted key is a complete JSON string), so different structures never share a path.
    """
    if not isinstance(key, str):
        raise TypeError(f"argument keys must be str, got {type(key).__name__}")
    if _IDENTIFIER.fullmatch(key):
        return f".{key}"
    return f"[{json.dumps(key, ensure_ascii=True)}]"


def flatten_arguments(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    """Flatten arguments into sorted ``(path, canonical leaf value)`` pairs.

    Paths are built from ``.key`` / ``["key"]`` and ``[i]`` segments; scalars, empty objects
    and empty arrays are leaves; empty arguments are the single pair ``("<root>", "{}")``.
    Invariant: paths are unique within the result, and two argument objects have the same pair
    list exactly when their canonical JSON is equal. Iterative, so depth never recurses.
    """
    if not isinstance(arguments, dict):
        raise TypeError(f"arguments must be a dict, got {type(arguments).__name__}")
    if not arguments:
        return [(ROOT_PATH, "{}")]
    pairs: list[tuple[str, str]] = []
    pending: list[tuple[str, Any]] = [(_key_segment(k), v) for k, v in arguments.items()]
    while pending:
        path, value = pending.pop()
        if isinstance(value, dict) and value:
            pending.extend((path + _key_segment(k), v) for k, v in value.items())
        elif isinstance(value, list) and value:
            pending.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        else:
            pairs.append((path, canonical_json(value)))
    pairs.sort()
    return pairs


BAD_CALL_HINT = (
    "gold calls come from target_text and parsed calls from the parser; "
    "re-derive the record instead of editing it"
)
"""The hint of a ``SOM-METRIC-BAD-CALL`` refusal (v1's calls and v2's call lists alike)."""


def example_id_of(record: Mapping[str, Any]) -> str:
    """The record's example id for error messages (``<unknown>`` if it has none)."""
    return str(record.get("example_id", "<unknown>"))


def checked_status(
    record: Mapping[str, Any], field: str = "parsed_call", present: str = "a parsed call is"
) -> bool:
    """Whether the record has a ``field`` (parser v1's ``parsed_call``, v2's ``parsed_calls``,
    ``present`` naming it in the hint), after checking its status is known and agrees with it
    (set exactly when ``ok``; the shape is the caller's check); InvariantError naming the
    example."""
    status = record.get("parse_status")
    where = f"example {example_id_of(record)}"
    if status not in STATUSES:
        raise InvariantError(
            "SOM-METRIC-UNKNOWN-STATUS",
            f"parse_status {status!r} is not one of {', '.join(STATUSES)}",
            "re-run the parser over raw_text",
            where=where,
        )
    has_call = record.get(field) is not None
    if has_call != (status == STATUS_OK):
        raise InvariantError(
            "SOM-METRIC-STATUS-CALL-MISMATCH",
            f"parse_status {status!r} with {field} {'set' if has_call else 'null'}",
            f"{present} present exactly when the status is ok; re-run the parser",
            where=where,
        )
    return has_call


def component_columns(
    rows: Sequence[Sequence[Component]], width: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators of per-record components (one row of ``width`` pairs per
    record), two int64 arrays of shape ``(len(rows), width)``: the columns the paired intervals
    resample. The one builder of the extra metrics' columns (abstention, call sets)."""
    import numpy as np

    components = np.array(rows, dtype=np.int64).reshape(len(rows), width, 2)
    return components[:, :, 0].copy(), components[:, :, 1].copy()


def column_totals(
    numerators: npt.NDArray[np.int64], denominators: npt.NDArray[np.int64], names: Sequence[str]
) -> dict[str, MetricValue]:
    """``{name: {value, numerator, denominator}}`` of each column summed (value None when the
    denominator is 0)."""
    out: dict[str, MetricValue] = {}
    for column, name in enumerate(names):
        num, den = int(numerators[:, column].sum()), int(denominators[:, column].sum())
        out[name] = {"value": num / den if den else None, "numerator": num, "denominator": den}
    return out
