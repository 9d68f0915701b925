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
SWEEP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*@[0-9]+\Z")
"""An arm of a checkpoint sweep (``data.suite.globs``): ``<arm>@<step>``; never written in a
suite file (the schema's name pattern has no ``@``), only made by the expansion."""


def valid_name(name: object) -> bool:
    """Whether ``name`` may name an arm or a slice (it becomes part of file names):
    letters, digits, ``_`` and ``-``, not starting with ``_``/``-``, and not ``overall``; or
    an arm of a checkpoint sweep, ``<name>@<step>``."""
    if not isinstance(name, str) or name == OVERALL:
        return False
    return bool(NAME.match(name)) or bool(SWEEP_NAME.match(name))
