"""``sommelier plugins``: every registered scorer, engine and importer, and where it came from.

Outside pytest a registry holds the built-ins and the installed entry points (the
``pytest_sommelier_add_*`` hooks of a ``conftest.py`` exist only in a pytest session, whose
line after collection names the extensions its suites use). Each extension is loaded, so an
entry point that cannot be is listed with its one-line error, and the command exits 3.
"""

from __future__ import annotations

import argparse


def plugin_lines() -> tuple[list[str], bool]:
    """The listing, one line per registered name under a line per kind, and whether every
    extension loaded. A registry that cannot be built (a name defined twice) raises its one
    ``SOM-PLUGIN-DUPLICATE`` line."""
    from pytest_sommelier.errors import SommelierError
    from pytest_sommelier.registry import BUILTIN_SOURCE, GROUPS, KINDS, registry

    lines: list[str] = []
    loaded = True
    for kind in KINDS:
        found = registry(kind)
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
            lines.append(f"  {name}  ({entry.source}){detail}")
    return lines, loaded


def run(args: argparse.Namespace) -> int:
    """``sommelier plugins``: print the listing; 0, or 3 when an extension did not load."""
    lines, loaded = plugin_lines()
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
    parser.set_defaults(handler=run)


__all__ = ["add_parser", "plugin_lines", "run"]
