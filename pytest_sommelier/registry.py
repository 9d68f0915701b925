"""The extension registries: one per kind (``scorers``, ``engines``, ``importers``).

Each registry merges, in this order, the built-ins (:data:`BUILTIN`, registered exactly as an
extension is: a name and the ``"module:attribute"`` of what it names), the entry points of
the installed distributions (groups :data:`GROUPS`: ``sommelier.scorers``,
``sommelier.engines``, ``sommelier.importers``), and whatever the caller adds (in pytest: the
results of the ``pytest_sommelier_add_*`` hooks, each named by the plugin that returned it).

Invariants kept:

- a name is defined once per kind: a second definition is one ``SOM-PLUGIN-DUPLICATE`` line
  naming both sources, never a silent override (a built-in cannot be replaced either);
- nothing is imported to build a registry: an entry is loaded (its module imported, its entry
  point resolved) only by :meth:`Entry.load`, when the name is used; a load that fails is one
  ``SOM-PLUGIN-LOAD`` line naming the entry and its source;
- entry points are read only when :func:`registry` is called (a suite collected, a command
  that needs the kind), never when the plugin is loaded (the idle cost, tests/test_idle_cost.py).

A dependency-free leaf (the standard library only), like ``errors``: every layer may ask it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_sommelier.errors import (
    EXTENSION_ERRORS,
    InputError,
    SommelierEnvironmentError,
    exception_text,
)

KINDS: tuple[str, ...] = ("scorers", "engines", "importers")
"""The kinds of extension, each with its own registry."""

GROUPS: dict[str, str] = {kind: f"sommelier.{kind}" for kind in KINDS}
"""The entry-point group of each kind."""

NAME_LIMIT = 64
"""The longest name an extension is registered under (it is printed in lines and listings)."""

BUILTIN_SOURCE = "built-in"
"""The source every built-in entry names."""

TRANSFORMERS = "transformers"
VLLM = "vllm"
OPENAI = "openai"
"""The built-in engines' names: the one place each is spelled (``core.types.ENGINE_NAMES``,
``EngineConfig``'s default, each engine module's ``ENGINE`` and the live engines import them)."""

DEFAULT_ENGINE = TRANSFORMERS
"""The engine of a suite without ``[engine] name`` (and of a stored run that recorded none)."""

BUILTIN: dict[str, dict[str, str]] = {
    "scorers": {},
    "engines": {
        TRANSFORMERS: "pytest_sommelier.inference.transformers_engine:load_engine",
        VLLM: "pytest_sommelier.inference.vllm_engine:load_generators",
        OPENAI: "pytest_sommelier.inference.openai_engine:load_generators",
    },
    "importers": {
        "openai-chat": "pytest_sommelier.data.prepare.importers.openai_chat:IMPORTER",
        "xlam": "pytest_sommelier.data.prepare.importers.xlam:IMPORTER",
        "hermes": "pytest_sommelier.data.prepare.importers.hermes:IMPORTER",
    },
}
"""The built-ins of each kind: name -> ``"module:attribute"`` (imported only when chosen)."""


@dataclass(frozen=True)
class Entry:
    """One registered name: its kind, where it came from, and what loads it (a
    ``"module:attribute"`` string, an entry point, or the object itself)."""

    kind: str
    name: str
    source: str
    target: Any

    def load(self) -> Any:
        """The object this entry names, imported now. Raises SommelierEnvironmentError
        (``SOM-PLUGIN-LOAD``) naming the entry and its source when it cannot be loaded."""
        try:
            if isinstance(self.target, importlib.metadata.EntryPoint):
                return self.target.load()
            if isinstance(self.target, str):
                module, _, attribute = self.target.partition(":")
                return getattr(importlib.import_module(module), attribute)
        except EXTENSION_ERRORS as exc:  # an extension's import error (or exit): one line
            raise SommelierEnvironmentError(
                "SOM-PLUGIN-LOAD",
                f"{self.kind} {self.name!r} from {self.source} could not be loaded: "
                f"{exception_text(exc)}",
                "reinstall the package that provides it, or remove it",
            ) from None
        return self.target


@dataclass(frozen=True)
class Registry:
    """One kind's names, in the order they were registered (built-ins first)."""

    kind: str
    entries: Mapping[str, Entry]

    def names(self) -> tuple[str, ...]:
        """Every registered name, built-ins first."""
        return tuple(self.entries)

    def entry(self, name: str, *, where: str, code: str) -> Entry:
        """The entry of ``name``; an InputError with ``code`` at ``where`` listing the known
        names when it is not registered."""
        found = self.entries.get(name)
        if found is None:
            known = ", ".join(self.entries) or "none"
            raise InputError(
                code,
                f"{self.kind[:-1]} {name!r} is not known",
                f"use one of: {known} (sommelier plugins lists the {self.kind} found and "
                "where from; an extension's package must be installed)",
                where=where,
            )
        return found

    def extensions(self) -> tuple[Entry, ...]:
        """The entries that are not built-ins."""
        return tuple(e for e in self.entries.values() if e.source != BUILTIN_SOURCE)


Source = tuple[str, Mapping[str, Any]]
"""A source of names: its description and ``{name: target}``."""


def check_kind(kind: str) -> None:
    """Refuse a kind that is not one of :data:`KINDS` (a programming error)."""
    if kind not in KINDS:
        raise ValueError(f"unknown extension kind {kind!r}; one of {', '.join(KINDS)}")


def merge(kind: str, sources: Iterable[Source]) -> Registry:
    """The registry of ``kind`` from ``sources`` in order. A name given by two sources (or
    twice by one) is an InputError (``SOM-PLUGIN-DUPLICATE``) naming both; a name that is not
    a non-empty string is ``SOM-PLUGIN-NAME`` naming its source."""
    check_kind(kind)
    entries: dict[str, Entry] = {}
    for source, names in sources:
        for name, target in names.items():
            if (
                not isinstance(name, str)
                or not name.strip()
                or name != name.strip()
                or len(name) > NAME_LIMIT
                or not name.isprintable()
            ):
                shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
                raise InputError(
                    "SOM-PLUGIN-NAME",
                    f"{source} registers {kind[:-1]} name {shown}, not a plain name of 1 to "
                    f"{NAME_LIMIT} printable characters",
                    "register each extension under a plain, non-empty name",
                )
            earlier = entries.get(name)
            if earlier is not None:
                raise InputError(
                    "SOM-PLUGIN-DUPLICATE",
                    f"{kind[:-1]} {name!r} is defined twice: by {earlier.source} and by {source}",
                    "uninstall or rename one of them; a name is defined once",
                )
            entries[name] = Entry(kind, name, source, target)
    return Registry(kind, entries)


def _distribution_label(point: importlib.metadata.EntryPoint) -> str:
    """``entry point <group> of <distribution> <version>`` (or ``of an unknown distribution``)."""
    dist = getattr(point, "dist", None)
    owner = f"{dist.metadata['Name']} {dist.version}" if dist is not None else "an unknown package"
    return f"entry point {point.group}:{point.name} of {owner}"


_POINTS: dict[tuple[Any, ...], list[Source]] = {}


def _path_state() -> tuple[Any, ...]:
    """What importlib.metadata's answer depends on: ``sys.path`` and ``sys.meta_path`` as they
    are, and each path entry's modification time (a distribution installed into or removed
    from a folder changes it; a ``.pth`` or zip entry is a file with its own)."""

    def mtime(entry: str) -> int | None:
        try:
            return os.stat(entry or ".").st_mtime_ns
        except (OSError, ValueError):
            return None

    path = tuple(sys.path)
    return (path, tuple(map(id, sys.meta_path)), tuple(mtime(entry) for entry in path))


def entry_point_sources(kind: str) -> list[Source]:
    """The installed distributions' entry points of ``kind``'s group, one source each (in the
    order importlib.metadata finds them; nothing is loaded).

    Read once per process and state of the import path (:func:`_path_state`): reading every
    installed distribution's metadata is ~10 ms, and a session or a command asks up to once
    per kind and suite."""
    check_kind(kind)
    key = (kind, os.getcwd(), *_path_state())
    found = _POINTS.get(key)
    if found is None:
        points = importlib.metadata.entry_points(group=GROUPS[kind])
        found = [(_distribution_label(point), {point.name: point}) for point in points]
        if len(_POINTS) >= 64:
            _POINTS.clear()
        _POINTS[key] = found
    return list(found)


def registry(kind: str, added: Iterable[Source] = ()) -> Registry:
    """The registry of ``kind``: the built-ins, then the installed entry points, then
    ``added`` (hook results)."""
    check_kind(kind)
    return merge(kind, [(BUILTIN_SOURCE, BUILTIN[kind]), *entry_point_sources(kind), *added])


__all__ = [
    "BUILTIN",
    "BUILTIN_SOURCE",
    "DEFAULT_ENGINE",
    "GROUPS",
    "KINDS",
    "OPENAI",
    "TRANSFORMERS",
    "VLLM",
    "Entry",
    "Registry",
    "entry_point_sources",
    "merge",
    "registry",
]
