"""Answers of a pure check, remembered per process by the JSON text of the value checked.

A split or an import offers the same few tool schemas on many rows, and a session, ``sommelier
history`` or ``compare`` reads the same stored documents again and again; their schema checks
(jsonschema, ~7-10 ms each) are pure functions of the value. :class:`JsonMemo` answers a value
it has seen from memory, keyed by ``sha256`` of its ``json.dumps`` text within a scope (the
definition it is checked against).

Invariants kept: only a value made of JSON's own types (dicts with string keys, lists, strings,
numbers, booleans, null; :func:`plain_json`) is remembered, since its text names it exactly
(``1``, ``1.0`` and ``true`` differ, key order counts); anything else (a tuple, a key that is
not a string, a numpy scalar) is checked every time. At most ``limit`` answers are held (the
memory is emptied when full). Nothing here recurses.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Answer = TypeVar("Answer")


def plain_json(value: Any) -> bool:
    """Whether ``value`` is made of JSON's own types only (string keys), walked with a stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not (item is None or isinstance(item, str | int | float)):
            return False
    return True


class JsonMemo(Generic[Answer]):
    """One check's answers by (scope, digest of the value's JSON text), at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._answers: dict[tuple[str, str], Answer] = {}

    def answer(self, scope: str, value: Any, check: Callable[[Any], Answer]) -> Answer:
        """``check(value)``, from memory when this scope has seen the same JSON text."""
        if not plain_json(value):
            return check(value)
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (ValueError, RecursionError):  # a circular or too deep value: no text
            return check(value)
        key = (scope, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
        if key not in self._answers:
            if len(self._answers) >= self.limit:
                self._answers.clear()
            self._answers[key] = check(value)
        return self._answers[key]
