"""The engine registry: ``[engine] name`` (or ``--sommelier-engine``) to that engine's generators.

:data:`ENGINES` maps each engine name to its loader, written as ``"module:function"``; a
loader is imported only when its engine is chosen, so importing this module imports no engine
(no torch, no vllm). Adding an engine is one module with a loader of the
:class:`~pytest_sommelier.inference.protocol.EngineLoader` signature and one line here (see
docs/engines.md, "Adding an engine").

Invariant kept: every engine is reached through :func:`load_generators`, with the same
arguments, so the fixture and ``sommelier parity`` cannot disagree on what an engine name
means; an unknown name is an input error listing the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_sommelier.errors import InputError

if TYPE_CHECKING:
    from pytest_sommelier.core.types import ArmConfig, EngineConfig, ModelConfig
    from pytest_sommelier.inference.protocol import EngineLoader, Generator

ENGINES: dict[str, str] = {
    "transformers": "pytest_sommelier.inference.transformers_engine:load_engine",
    "vllm": "pytest_sommelier.inference.vllm_engine:load_generators",
    "openai": "pytest_sommelier.inference.openai_engine:load_generators",
}
"""Engine name -> ``"module:function"`` of its loader (the names ``[engine] name`` accepts)."""

LIVE_ENGINES: dict[str, str] = {
    "transformers": "pytest_sommelier.inference.transformers_engine:live_generators",
}
"""Engine name -> ``"module:function"`` of its generators over a model already in memory (the
model being trained: ``training.SommelierCallback``); only transformers + peft trains here."""


def engine_loader(name: str) -> EngineLoader:
    """The loader registered for ``name`` (its module imported now); InputError when unknown."""
    spec = ENGINES.get(name)
    if spec is None:
        raise InputError(
            "SOM-ENGINE-NAME",
            f"engine {name!r} is not known",
            f"use one of: {', '.join(ENGINES)}",
            where="engine.name",
        )
    module, _, function = spec.partition(":")
    loader: EngineLoader = getattr(importlib.import_module(module), function)
    return loader


def load_generators(
    engine: EngineConfig,
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, Generator]:
    """One generator per arm from the named engine (nothing is loaded before ``generate``)."""
    loader = engine_loader(engine.name)
    return dict(loader(engine, model, arms, suite_dir=Path(suite_dir), worker_index=worker_index))


def live_generators(
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    live_model: object,
    adapter_name: str,
) -> dict[str, Generator]:
    """One generator per arm over ``live_model``, the model being trained (``LIVE_ENGINES``:
    the transformers engine's generation, batching and identities, nothing loaded)."""
    module, _, function = LIVE_ENGINES["transformers"].partition(":")
    build = getattr(importlib.import_module(module), function)
    return dict(
        build(
            model, arms, suite_dir=Path(suite_dir), live_model=live_model, adapter_name=adapter_name
        )
    )
