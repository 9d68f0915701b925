"""The engine registry: ``[engine] name`` (or ``--sommelier-engine``) to that engine's generators.

:data:`ENGINES` maps each engine name to its loader, written as ``"module:function"``; a
loader is imported only when its engine is chosen, so importing this module imports no engine
(no torch, no vllm). Adding an engine is one module with a loader of the
:class:`~pytest_sommelier.inference.protocol.EngineLoader` signature, registered by name: a
built-in in ``registry.BUILTIN``, an extension through the ``sommelier.engines`` entry points or
the ``pytest_sommelier_add_engines`` hook (docs/engines.md, "Adding an engine";
docs/extending.md).

Invariant kept: every engine is reached through :func:`load_generators`, with the same
arguments, so the fixture and ``sommelier parity`` cannot disagree on what an engine name
means; an unknown name is an input error listing the known ones.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from pytest_sommelier.errors import EvaluationError, InputError, SommelierError, exception_text
from pytest_sommelier.registry import (
    BUILTIN,
    BUILTIN_SOURCE,
    TRANSFORMERS,
    Registry,
    Source,
    merge,
    registry,
)

if TYPE_CHECKING:
    from pytest_sommelier.core.types import ArmConfig, EngineConfig, ModelConfig
    from pytest_sommelier.inference.protocol import EngineLoader, Generator

ENGINES: dict[str, str] = BUILTIN["engines"]
"""The built-in engines: name -> ``"module:function"`` of its loader (``registry.BUILTIN``; an
extension adds its own through the ``sommelier.engines`` entry points or the
``pytest_sommelier_add_engines`` hook)."""

LIVE_ENGINES: dict[str, str] = {
    TRANSFORMERS: "pytest_sommelier.inference.transformers_engine:live_generators",
}
"""Engine name -> ``"module:function"`` of its generators over a model already in memory (the
model being trained: ``training.SommelierCallback``); only transformers + peft trains here."""


def engine_registry(added: Iterable[Source] = ()) -> Registry:
    """The engines: the built-ins, the installed entry points, then ``added`` (hook results)."""
    return registry("engines", added)


def engine_loader(name: str, engines: Registry | None = None) -> EngineLoader:
    """The loader registered for ``name`` in ``engines`` (default :func:`engine_registry`), its
    module imported now; InputError (``SOM-ENGINE-NAME``) listing the known names when unknown,
    ``SOM-ENGINE-CONTRACT`` when what is registered is not callable."""
    if engines is None and name in ENGINES:  # a built-in: no entry point needs reading
        engines = merge("engines", [(BUILTIN_SOURCE, ENGINES)])
    found = (engines or engine_registry()).entry(name, where="engine.name", code="SOM-ENGINE-NAME")
    loader = found.load()
    if not callable(loader):
        raise InputError(
            "SOM-ENGINE-CONTRACT",
            f"engine {name!r} from {found.source} is a {type(loader).__name__}, not a loader",
            "register a function of the EngineLoader signature (docs/engines.md)",
            where="engine.name",
        )
    return cast("EngineLoader", loader)


def load_generators(
    engine: EngineConfig,
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
    engines: Registry | None = None,
) -> dict[str, Generator]:
    """One generator per arm from the named engine of ``engines`` (default: the built-ins and
    the installed extensions); nothing is loaded before ``generate``. The loader's answer is
    checked the same way for every engine, built-in or extension: a loader that raises is one
    ``SOM-MODEL-LOAD`` line naming the engine; an answer that is not a mapping of exactly the
    suite's arms is one ``SOM-ENGINE-CONTRACT`` line (each generator is then checked by
    ``inference.model_call.check_generator``, its outputs by ``ModelCall``)."""
    loader = engine_loader(engine.name, engines)
    try:
        answer = loader(engine, model, arms, suite_dir=Path(suite_dir), worker_index=worker_index)
    except SommelierError:
        raise
    except Exception as exc:  # an engine's bug or a missing dependency: one line naming it
        raise EvaluationError(
            "SOM-MODEL-LOAD",
            f"engine {engine.name!r} failed to load the generators: {exception_text(exc)}",
            "check the [model], [arms] and [engine] tables, or the engine's package",
            where="engine.name",
        ) from None
    return checked_generators(engine.name, answer, arms)


def checked_generators(
    name: str, answer: object, arms: Mapping[str, object]
) -> dict[str, Generator]:
    """``answer`` (what engine ``name``'s loader returned) as ``{arm: generator}``, refused
    with one ``SOM-ENGINE-CONTRACT`` line unless it is a mapping whose keys are exactly
    ``arms``."""

    def refuse(problem: str) -> InputError:
        return InputError(
            "SOM-ENGINE-CONTRACT",
            f"engine {name!r} {problem}",
            "a loader returns {arm name: generator} for exactly the arms it is given "
            "(docs/engines.md)",
            where="engine.name",
        )

    from pytest_sommelier.core.scorers import exception_safe  # the one short repr for a line

    if not isinstance(answer, Mapping):
        raise refuse(f"returned a {type(answer).__name__}, not {{arm name: generator}}")
    keys = list(answer)
    missing = [arm for arm in arms if arm not in answer]
    extra = [key for key in keys if key not in arms]
    if missing:
        raise refuse(f"returned no generator for arm {missing[0]!r}")
    if extra:
        raise refuse(f"returned a generator for {exception_safe(extra[0])}, not an arm")
    return {arm: cast("Generator", answer[arm]) for arm in arms}


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
    module, _, function = LIVE_ENGINES[TRANSFORMERS].partition(":")
    build = getattr(importlib.import_module(module), function)
    return dict(
        build(
            model, arms, suite_dir=Path(suite_dir), live_model=live_model, adapter_name=adapter_name
        )
    )
