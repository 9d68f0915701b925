"""The ``sommelier_model`` fixture: the extension point for the model backend.

The default returns a callable ``sommelier_model(arm_name, *, suite=None)`` that returns the
arm's generator from the suite's engine (``[engine] name``, overridden by
``--sommelier-engine`` / ini ``sommelier_engine``; transformers when neither is set). Every
engine computes identities without loading weights and loads the base (once per process) on the
first generation the cache cannot answer; the worker number passed to the engine is the
session's xdist role (``plugin.role``). Override the fixture in a ``conftest.py`` to replace
the backend for every arm (see docs/backend.md, docs/engines.md).

Before any generator of a suite exists, every adapter arm goes through the adapter preflight
(``inference.preflight``: configs and safetensors headers, no weights): a passed arm's counts
and warnings join its ``adapter_identity`` (``preflight``), a failed arm's error is what asking
for that arm raises (its items error with that one line; the other arms run). Invariants kept:
one preflight and one set of generators per suite per process, however many items ask; no
weights load before the preflight of every adapter arm of the suite has run.
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
    failed: dict[str, dict[str, Any]] = {}  # suite -> arm -> its preflight error
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
            from pytest_sommelier.inference.preflight import session_preflight, with_preflight
            from pytest_sommelier.inference.select_engine import load_generators
            from pytest_sommelier.plugin.extensions import suite_engines

            engine = suite.engine if chosen is None else replace(suite.engine, name=chosen)
            outcomes = session_preflight(suite, engine.name)  # before anything can load
            generators = load_generators(
                engine,
                suite.model,
                suite.arms,
                suite_dir=suite.path.parent,
                worker_index=worker_index,
                engines=suite_engines(request.config, suite, engine.name, request.session),
            )
            failed[key] = with_preflight(generators, outcomes)
            loaded[key] = generators
        error = failed[key].get(arm_name)
        if error is not None:  # a fresh copy each time: one line per item, no growing traceback
            raise type(error)(error.code, error.message, error.hint, where=error.where)
        return loaded[key][arm_name]

    yield get
    if loaded:
        from pytest_sommelier.inference.protocol import close_generator

        for generators in loaded.values():
            for generator in generators.values():
                close_generator(generator)
