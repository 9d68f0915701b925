"""The borrowed-evidence rule (pure): a stored arm is evidence about this suite's arm only when it
is the same kind of arm, of the same suite, and (standing in for a configured arm) the same
adapter. ``core.stored_comparison`` applies it to every pair compared with a stored run,
``data.store.history_compare.refuse_borrowed_stand_in`` to a stored arm folder standing in for
an arm (``--sommelier-baseline``, ``stored = "last"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.errors import EvaluationError


def arm_origin(
    resolved: Mapping[str, Any], report: Mapping[str, Any] | None, name: str
) -> dict[str, Any]:
    """What an arm is: its suite, its configured kind and its adapter reference (content
    digest or hub revision), from ``suite.resolved.json``; the report's kind when the suite
    does not configure the arm."""
    configured = (resolved.get("arms") or {}).get(name) or {}
    kind = configured.get("model_kind") or (report or {}).get("model_kind")
    return {"suite": resolved.get("name"), "model_kind": kind, "adapter": configured.get("adapter")}


def _short_identity(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, Mapping):
        for key in ("sha256", "revision"):
            if isinstance(value.get(key), str):
                return f"{key} {value[key][:12]}"
    return sha256_json(value)[:12]


def refuse_borrowed(
    name: str,
    current: Mapping[str, Any],
    stored: Mapping[str, Any],
    *,
    stored_label: str,
    stand_in: bool,
) -> None:
    """Refuse a stored arm that would be borrowed evidence for this suite's arm ``name``.

    ``current`` and ``stored`` are :func:`arm_origin` dicts. Always refused: a stored arm of
    another kind (a base arm mapped onto an adapter arm or the reverse) and another suite's
    adapter arm. When the stored arm stands in for the configured arm (``stand_in``: a
    baseline, ``stored = "last"``), its adapter must also be the configured adapter; else it
    is a reference under its own name. ``EvaluationError`` ``SOM-HISTORY-BORROWED``.
    """
    problem = None
    if stored.get("model_kind") != current.get("model_kind"):
        problem = (
            f"{stored_label}'s arm {name!r} has model_kind {stored.get('model_kind')}, this "
            f"suite's {name!r} has model_kind {current.get('model_kind')}"
        )
    elif stored.get("model_kind") == "adapter" and stored.get("suite") != current.get("suite"):
        problem = (
            f"{stored_label}'s arm {name!r} is an adapter of suite {stored.get('suite')!r}, "
            f"not of suite {current.get('suite')!r}"
        )
    elif (
        stand_in
        and current.get("model_kind") == "adapter"
        and sha256_json(stored.get("adapter")) != sha256_json(current.get("adapter"))
    ):
        problem = (
            f"{stored_label}'s arm {name!r} ran adapter {_short_identity(stored.get('adapter'))}, "
            f"the configured adapter is {_short_identity(current.get('adapter'))}"
        )
    if problem:
        raise EvaluationError(
            "SOM-HISTORY-BORROWED",
            f"{problem}; refusing to use it as arm {name!r}",
            "a stored arm stands in for an arm only when it is the same arm; compare against "
            "it as a reference under its own name (NAME=DIR with another NAME)",
            where=name,
        )


__all__ = ["arm_origin", "refuse_borrowed"]
