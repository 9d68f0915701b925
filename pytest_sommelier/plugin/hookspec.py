"""The hook specification extensions implement (added with ``pytest_addhooks``; docs/extending.md).

Three registration hooks, each called once per suite collected (with its path-aware hook proxy,
so a ``conftest.py`` hook adds to the suites below it only), and three events. A hook result is
registered under the plugin that returned it (its ``sommelier plugins`` source); a name it
shares with a built-in, an entry point or another hook is one ``SOM-PLUGIN-DUPLICATE`` line.

Invariant kept: this module imports pytest only, so adding the specification at plugin load
costs nothing (the idle cost).
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec
def pytest_sommelier_add_scorers(config: pytest.Config) -> Any:
    """Return scorers to register: a sequence of ``pytest_sommelier.Scorer`` (each named by its
    ``name``). A suite uses a registered scorer only when ``[suite] scorers`` names it."""


@pytest.hookspec
def pytest_sommelier_add_engines(config: pytest.Config) -> Any:
    """Return ``{name: loader}``: engine loaders of the ``EngineLoader`` signature
    (docs/engines.md), chosen by ``[engine] name`` like the built-ins."""


@pytest.hookspec
def pytest_sommelier_add_importers(config: pytest.Config) -> Any:
    """Return ``{name: Importer}``: importers of the importer contract. The CLI
    (``sommelier import``) sees the ``sommelier.importers`` entry points only."""


@pytest.hookspec
def pytest_sommelier_run_written(config: pytest.Config, run_dir: Any) -> None:
    """A suite's run folder ``run_dir`` (a ``pathlib.Path``) was written (reports, page,
    summary; the verdict follows when the run has one)."""


@pytest.hookspec
def pytest_sommelier_verdict(config: pytest.Config, verdict: Any, run_dir: Any) -> None:
    """The run's verdict is final and written (``gate_verdict.json``'s value, a dict): for
    posting it to a tracker or a chat. Called once per suite with a verdict."""


@pytest.hookspec
def pytest_sommelier_model_identity(config: pytest.Config, arm: str, identity: Any) -> None:
    """An arm's ``model_identity`` (a dict) before it enters the reports: an implementation may
    add fields (in place); removing or changing one is refused (``SOM-PLUGIN-IDENTITY``)."""
