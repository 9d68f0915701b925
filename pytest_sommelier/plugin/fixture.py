"""The ``sommelier_model`` fixture: the extension point for the model backend.

The default returns a callable ``sommelier_model(arm_name, *, suite=None)`` that returns the
arm's generator from the suite's engine (``[engine] name``, overridden by
``--sommelier-engine`` / ini ``sommelier_engine``; transformers when neither is set). Every
engine computes identities without loading weights and loads the base (once per process) on the
first generation the cache cannot answer; the worker number passed to the engine is the
session's xdist role (``plugin.role``). Override the fixture in a ``conftest.py`` to replace
the backend for every arm (see docs/backend.md, docs/engines.md). Invariant kept: one set of
generators per suite per process, however many items ask.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from pytest_sommelier.errors import EvaluationError
from pytest_sommelier.plugin.role import role_of
from pytest_sommelier.plugin.settings import settings_of


@pytest.fixture(scope="session")
def sommelier_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """Yield ``get(arm_name, *, suite)``: the arm's generator from the suite's engine; at the
    end of the session every generator with a ``close()`` (a vLLM engine) is closed."""
    loaded: dict[str, dict[str, Any]] = {}
    chosen = settings_of(request.config).engine
    worker_index = role_of(request.config).index  # gw3 -> 3: the CUDA device choice

    def get(arm_name: str, *, suite: Any = None) -> Any:
        if suite is None:
            raise EvaluationError(
                "SOM-MODEL-FIXTURE",
                "the default sommelier_model needs the suite (suite=...)",
                "call sommelier_model(arm, suite=suite)",
            )
        key = str(suite.path)
        if key not in loaded:
            from pytest_sommelier.inference.select_engine import load_generators

            engine = suite.engine if chosen is None else replace(suite.engine, name=chosen)
            loaded[key] = load_generators(
                engine,
                suite.model,
                suite.arms,
                suite_dir=suite.path.parent,
                worker_index=worker_index,
            )
        return loaded[key][arm_name]

    yield get
    if loaded:
        from pytest_sommelier.inference.protocol import close_generator

        for generators in loaded.values():
            for generator in generators.values():
                close_generator(generator)
