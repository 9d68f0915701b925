"""The decoding rule: what a suite's ``[decoding]`` (and any decoding an engine is handed) may be.

Pure: a mapping in, the validated :class:`~pytest_sommelier.core.types.Decoding` out, or an
``EvaluationError`` naming ``decoding.<field>``. The suite loader (``data.suite.load.load_suite``)
and the engines call the same function, so a decoding an engine accepts is one a suite could
have been loaded with. User documentation: docs/suite.md, ``[decoding]``.

Invariant kept: a value is never coerced; the result always holds the four keys, with the
documented defaults for the absent ones, ``temperature`` 0.0 and ``do_sample`` false.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_sommelier.core.types import Decoding
from pytest_sommelier.errors import EvaluationError

DEFAULT_DECODING: Decoding = {
    "temperature": 0.0,
    "do_sample": False,
    "max_new_tokens": 512,
    "batch_size": 1,
}
_DEFAULTS: dict[str, Any] = dict(DEFAULT_DECODING)


def _is_int(value: object) -> bool:
    """An integer that is not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    """An int or float that is not a boolean and not NaN."""
    if isinstance(value, float):
        return not math.isnan(value)
    return _is_int(value)


def _counted(raw: Mapping[str, Any], key: str, what: str, code: str, where: str | None) -> int:
    """``raw[key]`` (default from DEFAULT_DECODING): an integer >= 1, else the error ``code``
    naming ``decoding.<key>``."""
    default = _DEFAULTS[key]
    value = raw.get(key, default)
    if not _is_int(value) or value < 1:
        raise EvaluationError(
            code,
            f"decoding.{key} must be {what}, got {value!r}",
            f"set {key} to {what} (default {default})",
            where=where,
        )
    return int(value)


def validate_decoding(raw: Mapping[str, Any], *, where: str | None = None) -> Decoding:
    """Return the decoding dict with defaults filled in; never coerce a value.

    ``temperature`` must be exactly 0.0 (an integer 0 is read as 0.0), ``do_sample`` false,
    ``max_new_tokens`` a positive integer (default 512), ``batch_size`` an integer >= 1
    (default 1). Any other value is an ``EvaluationError`` naming ``decoding.<field>``.
    """
    unknown = sorted(set(raw) - set(DEFAULT_DECODING))
    if unknown:
        raise EvaluationError(
            "SOM-DECODING-UNKNOWN-KEY",
            f"unknown decoding key {unknown[0]!r}",
            f"allowed: {', '.join(DEFAULT_DECODING)}",
            where=where,
        )
    temperature = raw.get("temperature", 0.0)
    if not _is_number(temperature) or temperature != 0:
        raise EvaluationError(
            "SOM-DECODING-TEMPERATURE",
            f"decoding.temperature must be exactly 0.0 (greedy decoding), got {temperature!r}",
            "set temperature = 0.0; sampling is never evaluated",
            where=where,
        )
    do_sample = raw.get("do_sample", False)
    if do_sample is not False:
        raise EvaluationError(
            "SOM-DECODING-DO-SAMPLE",
            f"decoding.do_sample must be false, got {do_sample!r}",
            "set do_sample = false; evaluation decodes greedily",
            where=where,
        )
    return {
        "temperature": 0.0,
        "do_sample": False,
        "max_new_tokens": _counted(
            raw, "max_new_tokens", "a positive integer", "SOM-DECODING-MAX-NEW-TOKENS", where
        ),
        "batch_size": _counted(
            raw, "batch_size", "an integer >= 1", "SOM-DECODING-BATCH-SIZE", where
        ),
    }
