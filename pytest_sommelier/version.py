"""The plugin's version, single-sourced from the installed package's metadata.

A dependency-free leaf every layer may import (like ``errors``): the version is read once,
with the standard library, from the distribution's metadata, which ``pyproject.toml``'s
``[project] version`` writes at install time; there is no second copy of the number.
"""

from __future__ import annotations

import importlib.metadata

DISTRIBUTION = "pytest-sommelier"


def _installed_version() -> str:
    """The installed distribution's version; ``0+unknown`` when the package runs from a
    source tree that was never installed (then no run can claim a release number)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


VERSION = _installed_version()
