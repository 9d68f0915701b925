"""``sommelier plugins``: every registered scorer, engine and importer, and where it came from.

Outside pytest a registry holds the built-ins and the installed entry points; with
``--conftest-dir DIR`` (or ``-p PLUGIN``) also the ``pytest_sommelier_add_*`` hooks a pytest
session started in DIR sees (its ``conftest.py`` files and the ``-p`` plugins, loaded through
pytest's own configuration; a pytest run names the extensions its suites use on one line
after collection). Each extension is loaded, so an
entry point that cannot be is listed with its one-line error, and the command exits 3.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def plugin_lines(
    pytest_dir: Path | None = None, plugins: tuple[str, ...] = ()
) -> tuple[list[str], bool]:
    """The listing, one line per registered name under a line per kind, and whether every
    extension loaded. With ``pytest_dir`` the registries are the ones a pytest session started
    there sees (``plugin.extensions.pytest_registry``: its ``conftest.py`` files and the ``-p``
    ``plugins`` add their ``pytest_sommelier_add_*`` hooks). A registry that cannot be built (a
    name defined twice) raises its one ``SOM-PLUGIN-DUPLICATE`` line."""
    from pytest_sommelier.errors import SommelierError
    from pytest_sommelier.registry import BUILTIN_SOURCE, GROUPS, KINDS, registry

    lines: list[str] = []
    loaded = True
    for kind in KINDS:
        if pytest_dir is None:
            found = registry(kind)
        else:
            from pytest_sommelier.plugin.extensions import pytest_registry

            found = pytest_registry(kind, pytest_dir, plugins)
        lines.append(f"{kind} (entry point group {GROUPS[kind]}):")
        if not found.entries:
            lines.append("  (none)")
        for name, entry in found.entries.items():
            detail = ""
            if entry.source != BUILTIN_SOURCE:
                try:
                    value = entry.load()
                except SommelierError as error:
                    loaded = False
                    detail = f"  NOT LOADED: {error}"
                else:
                    version = getattr(value, "version", None)
                    detail = f"  version {version}" if isinstance(version, str) else ""
                    problem = _unusable(kind, name, found)
                    if problem is not None:  # loads, but a suite naming it would be refused
                        loaded = False
                        detail += f"  NOT USABLE: {problem}"
            lines.append(f"  {name}  ({entry.source}){detail}")
    return lines, loaded


def _unusable(kind: str, name: str, found: Any) -> str | None:
    """Why a suite naming scorer ``name`` would be refused (the one resolution a session uses,
    ``core.scorers.resolve_scorers``: the contract, and the object named as registered), or
    None; engines and importers are checked when used."""
    if kind != "scorers":
        return None
    from pytest_sommelier.core.scorers import resolve_scorers
    from pytest_sommelier.data.suite.gates import GATE_METRICS
    from pytest_sommelier.errors import SommelierError

    try:
        resolve_scorers([name], found, where="sommelier plugins", reserved=GATE_METRICS)
    except SommelierError as error:
        return str(error)
    return None


def run(args: argparse.Namespace) -> int:
    """``sommelier plugins``: print the listing; 0, or 3 when an extension did not load."""
    hooked = args.conftest_dir is not None or bool(args.plugin)
    folder = Path(args.conftest_dir or ".") if hooked else None
    lines, loaded = plugin_lines(folder, tuple(args.plugin or ()))
    for line in lines:
        print(line)
    return 0 if loaded else 3


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier plugins``."""
    parser = subparsers.add_parser(
        "plugins",
        help="list the registered scorers, engines and importers and where each came from",
        description="List every scorer, engine and importer: the built-ins and the installed "
        "entry points (groups sommelier.scorers, sommelier.engines, sommelier.importers), each "
        "with its source; an extension that cannot be loaded is named with its error (exit 3). "
        "See docs/extending.md.",
    )
    parser.add_argument(
        "--conftest-dir",
        default=None,
        help="also the pytest_sommelier_add_* hooks a pytest session started in this folder "
        "sees (its conftest.py files, loaded as `pytest DIR` would; nothing is collected)",
    )
    parser.add_argument(
        "-p",
        "--plugin",
        action="append",
        default=None,
        help="a plugin module to load, as pytest -p does (repeatable; implies --conftest-dir .)",
    )
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "plugin_lines", "run"]
