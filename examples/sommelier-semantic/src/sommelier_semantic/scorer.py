"""The ``semantic_args`` scorer: argument equality up to number spelling, ISO dates and the
order of arrays the tool's schema declares unordered (see this package's README).

A pure function of one example, as the scorer contract requires: it reads only its arguments
and returns ``(1, 1)`` or ``(0, 1)``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from typing import Any

from pytest_sommelier import Scorer

UNORDERED_KEY = "x-sommelier-unordered"
"""The documented schema key that marks an array as unordered (beside ``uniqueItems``)."""


def _number(value: Any) -> float | None:
    """The number a JSON number or a numeric string denotes (None for anything else)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) and text.lower() not in ("nan", "inf") else None
    return None


def _instant(value: Any) -> Any:
    """The date or the (UTC-normalised) date-time an ISO 8601 string denotes, or None."""
    if not isinstance(value, str) or len(value) < 8 or not value[:4].isdigit():
        return None
    text = value.strip()
    try:
        if "T" not in text and " " not in text:
            return dt.date.fromisoformat(text)
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(dt.UTC) if moment.tzinfo else moment


def _unordered(schema: Mapping[str, Any]) -> bool:
    return schema.get("uniqueItems") is True or schema.get(UNORDERED_KEY) is True


def _key(value: Any, schema: Mapping[str, Any]) -> str:
    """A canonical text of ``value`` under the rules (to sort an unordered array). A string
    the schema declares a string (or a date) is read as a date before a number, so the basic
    ISO date ``"20240305"`` is a date there; elsewhere a number comes first."""
    dated = schema.get("format") in ("date", "date-time") or schema.get("type") == "string"
    instant = _instant(value) if dated else None
    if instant is not None:
        return f"d:{instant.isoformat()}"
    number = _number(value)
    if number is not None:
        return f"n:{number!r}"
    instant = _instant(value)
    if instant is not None:
        return f"d:{instant.isoformat()}"
    if isinstance(value, list):
        items = [_key(item, _items(schema)) for item in value]
        return "l:" + json.dumps(sorted(items) if _unordered(schema) else items)
    if isinstance(value, dict):
        properties = _properties(schema)
        return "o:" + json.dumps(
            {k: _key(v, properties.get(k, {})) for k, v in sorted(value.items())}
        )
    return "j:" + json.dumps(value, sort_keys=True)


def _items(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    items = schema.get("items")
    return items if isinstance(items, Mapping) else {}


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    properties = schema.get("properties")
    return properties if isinstance(properties, Mapping) else {}


def equivalent(left: Any, right: Any, schema: Mapping[str, Any]) -> bool:
    """Whether two JSON values are equal under the rules, ``schema`` describing them."""
    return _key(left, schema) == _key(right, schema)


def _parameters(example: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """The parameters schema of the tool named ``name`` in the example's tools (or empty)."""
    for tool in example.get("tools") or ():
        if not isinstance(tool, Mapping):
            continue
        spec = tool.get("function") if isinstance(tool.get("function"), Mapping) else tool
        if spec.get("name") == name and isinstance(spec.get("parameters"), Mapping):
            return spec["parameters"]
    return {}


def semantic_args(
    parsed_call: Mapping[str, Any] | None, gold_call: Mapping[str, Any], example: Mapping[str, Any]
) -> tuple[int, int]:
    """1 of 1 when the name is the gold's and the arguments are equivalent, else 0 of 1."""
    if parsed_call is None or parsed_call["name"] != gold_call["name"]:
        return (0, 1)
    schema = {"type": "object", "properties": _properties(_parameters(example, gold_call["name"]))}
    return (int(equivalent(parsed_call["arguments"], gold_call["arguments"], schema)), 1)


SEMANTIC_ARGS = Scorer(
    name="semantic_args",
    version="1",
    kind="rate",
    score=semantic_args,
    label="full call with semantically equivalent arguments",
)
