"""The hook specification extensions implement (added with ``pytest_addhooks``; docs/extending.md).

Three registration hooks, each called once per suite collected (with its path-aware hook proxy,
so a ``conftest.py`` hook adds to the suites below it only), and three events. A hook result is
registered under the plugin that returned it (its ``sommelier plugins`` source); a name it
shares with a built-in, an entry point or another hook is one ``SOM-PLUGIN-DUPLICATE`` line.

Invariants kept: this module imports pytest only at run time (the types below are imported for
type checkers only), so adding the specification at plugin load costs nothing (the idle cost);
every argument and result is typed with the record it is, none as ``typing.Any``
(``tests/plugin/test_hookspec.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_sommelier.core.scorers import Scorer
    from pytest_sommelier.core.types import Verdict
    from pytest_sommelier.data.prepare.importers.common import Importer
    from pytest_sommelier.inference.protocol import EngineLoader


@pytest.hookspec
def pytest_sommelier_add_scorers(config: pytest.Config) -> Sequence[Scorer] | None:
    """Return scorers to register: a sequence of ``pytest_sommelier.Scorer`` (each named by its
    ``name``). A suite uses a registered scorer only when ``[suite] scorers`` names it."""


@pytest.hookspec
def pytest_sommelier_add_engines(config: pytest.Config) -> Mapping[str, EngineLoader] | None:
    """Return ``{name: loader}``: engine loaders of the ``EngineLoader`` signature
    (docs/engines.md), chosen by ``[engine] name`` like the built-ins."""


@pytest.hookspec
def pytest_sommelier_add_importers(config: pytest.Config) -> Mapping[str, Importer] | None:
    """Return ``{name: Importer}``: importers of the importer contract. The CLI
    (``sommelier import``) sees the ``sommelier.importers`` entry points only."""


@pytest.hookspec
def pytest_sommelier_run_written(config: pytest.Config, run_dir: Path) -> None:
    """A suite's run folder ``run_dir`` was written (reports, page,
    summary; the verdict follows when the run has one)."""


@pytest.hookspec
def pytest_sommelier_verdict(config: pytest.Config, verdict: Verdict, run_dir: Path) -> None:
    """The run's verdict is final and written (``gate_verdict.json``'s value: a copy of the
    ``core.types.Verdict`` record, the implementation's to keep): for posting it to a tracker
    or a chat. Called once per suite with a verdict."""


@pytest.hookspec
def pytest_sommelier_model_identity(
    config: pytest.Config, arm: str, identity: dict[str, object]
) -> None:
    """An arm's ``model_identity`` (a JSON object) before it enters the reports: an
    implementation may add fields (in place); removing or changing one is refused
    (``SOM-PLUGIN-IDENTITY``)."""
