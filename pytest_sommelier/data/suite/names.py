"""The names a suite gives its arms and slices, which become parts of file names.

Invariant kept: :func:`valid_name` is the one rule for an arm or slice name (the suite schema's
``pattern`` says the same for the loader's structural check); ``overall`` is reserved for the
whole split.
"""

from __future__ import annotations

import re

OVERALL = "overall"
"""The slice name of the whole split (reserved: no configured slice may use it)."""

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*\Z")  # \Z, not $: no trailing newline


def valid_name(name: object) -> bool:
    """Whether ``name`` may name an arm or a slice (it becomes part of file names):
    letters, digits, ``_`` and ``-``, not starting with ``_``/``-``, and not ``overall``."""
    return isinstance(name, str) and bool(NAME.match(name)) and name != OVERALL
