"""Checkpoint sweeps: an arm whose adapter is a glob (``adapter = "out/checkpoint-*"``).

At load, before any reference is resolved, such an arm becomes one arm per matching folder,
named ``<arm>@<step>`` (the number that ends the folder's name: ``checkpoint-40`` is step 40)
and ordered by step; each is an ordinary adapter arm from there on (resolved, digested,
preflighted, generated from the one base the engine loads). Comparisons and gates that name
the glob arm are repeated for each of its arms (a gate ``g`` becomes ``g@<step>``); when no
comparison names it, each of its arms is compared with the suite's base arm (the first arm
without adapter). Invariants kept: a glob matching no folder is an error naming the glob
(``SOM-SUITE-GLOB-EMPTY``); a match without a trailing step number, two matches with one step,
a glob on a hub id or with ``adapter_revision``, and a glob arm as a comparison's reference are
errors naming the arm; the expansion is the same for the same folders, whatever the order the
file system lists them in.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from pytest_sommelier.errors import InputError

GLOB_CHARS = frozenset("*?[")
STEP = re.compile(r"([0-9]+)\Z")
NOT_A_STEP = re.compile(r"(?:[0-9][eE][+-]?|[0-9]\.|--|-\+|\+)\Z")
"""What before the final digits makes them no plain step: an exponent (``checkpoint-1e3``), a
decimal (``-1.5``), a sign (``checkpoint--3``, ``-+3``)."""


def is_glob(value: object) -> bool:
    """Whether an adapter value is a glob (holds ``*``, ``?`` or ``[``)."""
    return isinstance(value, str) and any(char in GLOB_CHARS for char in value)


def step_name(arm: str, step: int) -> str:
    """The name of one arm of a sweep: ``<arm>@<step>``."""
    return f"{arm}@{step}"


def _shown(path: Path, folder: Path) -> str:
    """``path`` relative to the suite's folder when it is below it (``a/checkpoint-4``), else
    as found: two folders of one step never read the same."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def _matches(arm: str, pattern: str, folder: Path, where: str) -> list[tuple[int, Path]]:
    """``(step, folder)`` of every folder the glob matches, ordered by step."""
    expanded = os.path.expanduser(pattern)
    base = expanded if os.path.isabs(expanded) else str(folder / expanded)
    found = sorted(Path(p) for p in glob.glob(base) if Path(p).is_dir())
    if not found:
        raise InputError(
            "SOM-SUITE-GLOB-EMPTY",
            f"arms.{arm}.adapter glob {pattern!r} matches no folder",
            "train first (the trainer writes checkpoint-N folders), or fix the glob",
            where=where,
        )
    steps: dict[int, Path] = {}
    for path in found:
        match = STEP.search(path.name)
        if match is not None and NOT_A_STEP.search(path.name[: match.start()]):
            raise InputError(
                "SOM-SUITE-GLOB-STEP",
                f"arms.{arm}.adapter glob {pattern!r} matches {path.name!r}, whose name ends in "
                f"{path.name[match.start() - 2 :]!r}, not a plain step number (an exponent, a "
                "decimal or a sign before the digits)",
                "name checkpoints checkpoint-N, as the trainer does, or narrow the glob",
                where=where,
            )
        if match is None:
            raise InputError(
                "SOM-SUITE-GLOB-STEP",
                f"arms.{arm}.adapter glob {pattern!r} matches {path.name!r}, whose name does "
                "not end in a step number",
                "narrow the glob to the checkpoint folders (e.g. checkpoint-*)",
                where=where,
            )
        step = int(match.group(1))
        if step in steps:
            raise InputError(
                "SOM-SUITE-GLOB-STEP",
                f"arms.{arm}.adapter glob {pattern!r} matches two folders of step {step}: "
                f"{_shown(steps[step], folder)!r} and {_shown(path, folder)!r}",
                "narrow the glob to one training run's checkpoints",
                where=where,
            )
        steps[step] = path
    return sorted(steps.items())


def _no_revision(name: str, table: Mapping[str, Any], where: str) -> None:
    """A glob arm names local folders: ``adapter_revision`` (a hub id's) beside it is an
    error naming the arm."""
    if table.get("adapter_revision") is not None:
        raise InputError(
            "SOM-SUITE-GLOB-STEP",
            f"arms.{name}.adapter is a glob, which names local folders; "
            "adapter_revision is for a hub id",
            "remove adapter_revision",
            where=where,
        )


ARMS_OPTION = "--sommelier-arms / ini sommelier_arms"
"""Where an error about an arm given on the command line points (``plugin.settings``)."""


def with_arms(
    data: dict[str, Any], arms: Mapping[str, str], label: str
) -> tuple[dict[str, Any], frozenset[str]]:
    """The suite's tables with each arm ``arms`` names evaluated from the folder it gives
    (``--sommelier-arms adapter=PATH``: an absolute path, checked by the plugin) in place of
    the adapter the file writes, glob or not (``adapter_revision`` dropped: a folder is
    identified by its content digest); and the names of those arms, which
    :func:`expand_globs` leaves as they are. An arm the suite does not have, or its base arm
    (no adapter to replace), is an error naming the option. ``data`` itself is left as it
    is."""
    if not arms:
        return data, frozenset()
    tables = dict(data["arms"])
    for name, folder in arms.items():
        table = tables.get(name)
        if table is None or table.get("adapter") is None:
            what = "does not have" if table is None else "has as its base arm (no adapter)"
            raise InputError(
                "SOM-OPTION-VALUE",
                f"names arm {name!r}, which the suite {data['suite']['name']!r} ({label}) {what}",
                "name one of its adapter arms: "
                + ", ".join(n for n, t in tables.items() if t.get("adapter") is not None),
                where=ARMS_OPTION,
            )
        kept = {key: value for key, value in table.items() if key != "adapter_revision"}
        tables[name] = {**kept, "adapter": folder}
    return {**data, "arms": tables}, frozenset(arms)


def without_idle_selection(data: dict[str, Any]) -> dict[str, Any]:
    """The tables without the ``[selection]`` and its gates (``selected``) when its ``among``
    matches no arm (the sweep it chose among was replaced by one arm, :func:`with_arms`:
    nothing to choose among), as the training callback reads the file; else as they are."""
    selection = data.get("selection")
    if selection is None or any(fnmatchcase(name, selection["among"]) for name in data["arms"]):
        return data
    return _without_selection(data)


def _without_selection(data: dict[str, Any]) -> dict[str, Any]:
    """The tables less ``[selection]`` and every ``selected`` gate."""
    kept = {key: value for key, value in data.items() if key != "selection"}
    kept["gates"] = [entry for entry in data.get("gates", []) if "selected" not in entry]
    return kept


def expand_globs(
    data: dict[str, Any], folder: Path, label: str, fixed: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The suite's tables with every glob arm expanded (module docstring), except the arms
    ``fixed`` names (given a folder by :func:`with_arms`); ``data`` itself is left as it is.
    Without a glob arm the tables are returned unchanged."""
    arms: dict[str, Any] = {}
    sweeps: dict[str, list[str]] = {}
    for name, table in data["arms"].items():
        adapter = table.get("adapter")
        if name in fixed or not is_glob(adapter):
            arms[name] = table
            continue
        where = f"{label}: [arms.{name}]"
        _no_revision(name, table, where)
        sweeps[name] = []
        for step, path in _matches(name, adapter, folder, where):
            sweeps[name].append(step_name(name, step))
            arms[step_name(name, step)] = {**table, "adapter": str(path)}
    if not sweeps:
        return data
    comparisons: list[dict[str, Any]] = []
    for index, entry in enumerate(data.get("comparisons", [])):
        if entry.get("reference") in sweeps:
            raise InputError(
                "SOM-SUITE-GLOB-STEP",
                f"comparison #{index + 1} has the checkpoint sweep {entry['reference']!r} as "
                "its reference",
                "compare each checkpoint with the base (or a shipped adapter) as reference",
                where=f"{label}: [[comparisons]] #{index + 1}",
            )
        names = sweeps.get(entry.get("candidate"), [entry.get("candidate")])
        comparisons += [{**entry, "candidate": name} for name in names]
    base = next((name for name, table in arms.items() if table.get("adapter") is None), None)
    named = {entry.get("candidate") for entry in data.get("comparisons", [])}
    for sweep, names in sweeps.items():
        if sweep not in named and base is not None:
            comparisons += [{"candidate": name, "reference": base} for name in names]
    gates: list[dict[str, Any]] = []
    for entry in data.get("gates", []):
        key = next((k for k in ("arm", "candidate") if entry.get(k) in sweeps), None)
        if key is None:
            gates.append(entry)
            continue
        for name in sweeps[entry[key]]:
            suffix = name.rpartition("@")[2]
            gates.append({**entry, key: name, "name": f"{entry['name']}@{suffix}"})
    expanded = {**data, "arms": arms, "gates": gates}
    if comparisons or "comparisons" in data:
        expanded["comparisons"] = comparisons
    return expanded


def live_tables(data: dict[str, Any], label: str) -> dict[str, Any]:
    """The suite's tables as the training callback reads them: no glob is expanded (a glob
    arm stays one arm, the one the model being trained stands for, whose adapter is the model
    in memory: its checkpoints need not exist yet), and the ``[selection]`` and its gates
    (``selected``) are left out, since they choose among a sweep's ``<arm>@<step>`` arms, which
    only the sweep's own run has. ``data`` itself is left as it is."""
    for name, table in data["arms"].items():
        if is_glob(table.get("adapter")):
            _no_revision(name, table, f"{label}: [arms.{name}]")
    if "selection" not in data and not any("selected" in g for g in data.get("gates", [])):
        return data
    return _without_selection(data)


__all__ = [
    "ARMS_OPTION",
    "GLOB_CHARS",
    "expand_globs",
    "is_glob",
    "live_tables",
    "step_name",
    "with_arms",
    "without_idle_selection",
]
