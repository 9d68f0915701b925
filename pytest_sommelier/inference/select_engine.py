"""Choosing an engine: ``[engine] name`` (or ``--sommelier-engine``) to that engine's generators.

Invariant kept: every engine is reached through this one function, with the same arguments, so
the fixture and ``sommelier parity`` cannot disagree on what an engine name means; an unknown
name is an input error listing the known ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.errors import InputError
from pytest_sommelier.inference.engines import ENGINE_NAMES, EngineConfig


def load_generators(
    engine: EngineConfig,
    model: Any,
    arms: Mapping[str, Any],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, Any]:
    """One generator per arm from the named engine (nothing is loaded before ``generate``)."""
    if engine.name == "vllm":
        from pytest_sommelier.inference import vllm_engine

        return dict(
            vllm_engine.load_generators(
                engine, model, arms, suite_dir=suite_dir, worker_index=worker_index
            )
        )
    if engine.name == "openai":
        from pytest_sommelier.inference import openai_engine

        return dict(
            openai_engine.load_generators(
                engine, model, arms, suite_dir=suite_dir, worker_index=worker_index
            )
        )
    if engine.name == "transformers":
        from pytest_sommelier.inference import transformers_engine

        return dict(
            transformers_engine.load_generators(
                model, dict(arms), suite_dir=suite_dir, worker_index=worker_index
            )
        )
    raise InputError(
        "SOM-ENGINE-NAME",
        f"engine {engine.name!r} is not known",
        f"use one of: {', '.join(ENGINE_NAMES)}",
        where="engine.name",
    )
