"""The ``sommelier_model`` fixture: the extension point for the model backend.

The default returns a callable ``sommelier_model(arm_name, *, suite=None)`` that loads the
suite's base model once per process with transformers, attaches every adapter arm with peft,
and returns that arm's generator. Override the fixture in a ``conftest.py`` to replace the
backend for every arm (see docs/backend.md). Invariant kept: one load per suite per process,
however many items ask.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from pytest_sommelier.errors import EvaluationError


def worker_index() -> int:
    """This process's xdist worker number (``gw3`` -> 3), 0 outside xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    digits = name.removeprefix("gw")
    return int(digits) if digits.isdigit() else 0


@pytest.fixture(scope="session")
def sommelier_model() -> Callable[..., Any]:
    """Return ``get(arm_name, *, suite)``: the arm's generator from the default backend."""
    loaded: dict[str, dict[str, Any]] = {}

    def get(arm_name: str, *, suite: Any = None) -> Any:
        if suite is None:
            raise EvaluationError(
                "SOM-MODEL-FIXTURE",
                "the default sommelier_model needs the suite (suite=...)",
                "call sommelier_model(arm, suite=suite)",
            )
        key = str(suite.path)
        if key not in loaded:
            from pytest_sommelier.inference.transformers_engine import load_generators

            loaded[key] = load_generators(
                suite.model, suite.arms, suite_dir=suite.path.parent, worker_index=worker_index()
            )
        return loaded[key][arm_name]

    return get
