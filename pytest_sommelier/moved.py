"""Import paths of 0.3 that moved in 0.4, kept working: ``MOVED`` maps each old dotted module name
to its new home, and :func:`install` puts a finder first on ``sys.meta_path`` that answers an old
name with the new module itself (one module object under both names, never a second copy).

The package ``__init__`` installs it, so ``from pytest_sommelier.data.formatting import
format_file`` still works; the CHANGELOG's "Moved" list is this table. Each old name, the first
time it is imported in a process, warns with a ``DeprecationWarning`` naming its new path and the
release that removes it (:data:`REMOVED_IN`), as docs/api.md's deprecation rule asks.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

PACKAGE = "pytest_sommelier"
REMOVED_IN = "0.6"
"""The release in which the old paths stop importing."""

MOVED: dict[str, str] = {
    f"{PACKAGE}.{old}": f"{PACKAGE}.{new}"
    for old, new in {
        "data.suite_toml": "data.suite.toml",
        "data.suite_arms": "data.suite.arms",
        "data.suite_gates": "data.suite.gates",
        "data.suite_names": "data.suite.names",
        "data.suite_identity": "data.suite.identity",
        "data.statistics_bounds": "data.suite.statistics_bounds",
        "data.schema": "data.split.schema",
        "data.example_ids": "data.split.example_ids",
        "data.native_policy": "data.split.native_policy",
        "data.formatting": "data.prepare.formatting",
        "data.prepared_hints": "data.prepare.hints",
        "data.bfcl": "data.prepare.bfcl",
        "data.importers": "data.prepare.importers",
        "data.importers.common": "data.prepare.importers.common",
        "data.importers.records": "data.prepare.importers.records",
        "data.importers.openai_chat": "data.prepare.importers.openai_chat",
        "data.importers.xlam": "data.prepare.importers.xlam",
        "data.importers.hermes": "data.prepare.importers.hermes",
        "data.importers.driver": "data.prepare.importers.driver",
        "data.artifacts": "data.store.artifacts",
        "data.stored": "data.store.stored",
        "data.runread": "data.store.runread",
        "data.history": "data.store.history",
        "data.history_record": "data.store.history_record",
        "data.history_compare": "data.store.history_compare",
        "data.history_gate": "data.store.history_gate",
        "data.history_verdict": "data.store.history_verdict",
        "data.view": "view",
        "data.view.text": "view.text",
        "data.view.terminal": "view.terminal",
        "data.view.markdown": "view.markdown",
        "data.view.html": "view.html",
        "data.history_page": "view.history_page",
        "data.ci_summary": "view.ci_summary",
        "data.rescore": "commands.rescore",
        "data.plan": "commands.plan",
    }.items()
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module name with the module now at its new name."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(deprecation(spec.name), DeprecationWarning, stacklevel=2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran under its new name already."""


def deprecation(old: str) -> str:
    """The warning an old path gives: ``pytest_sommelier.data.formatting is deprecated: import
    pytest_sommelier.data.prepare.formatting (the old path is removed in 0.6)``."""
    return f"{old} is deprecated: import {MOVED[old]} (the old path is removed in {REMOVED_IN})"


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before the path finder, which would
    otherwise load a moved package's submodule a second time under the old name."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
