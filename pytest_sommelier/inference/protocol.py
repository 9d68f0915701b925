"""The generator protocol: what an engine hands the runner for one arm, and what an engine is.

Every engine (transformers + peft, vllm, openai, and any fake or other backend a ``conftest.py``
provides through the ``sommelier_model`` fixture) returns objects of the :class:`Generator`
shape. The contract, kept by the runner's checks: ``generate`` returns exactly one completion
per prompt, in order; ``model_identity`` is JSON-safe and equal across compared arms;
``adapter_identity`` is a JSON-safe dict (content digest or pinned revision) or None for a base
arm.

Four members are optional, so a user-written generator needs only the three above:
``device_info()`` (telemetry and the generation cache's device fields), ``cache_identity``
(anything else that can change an output, for the generation cache key), ``close()`` (called
once at session end) and ``generate_completions(prompts, decoding)``, which returns
:class:`~pytest_sommelier.core.types.Completion` objects (text, ``finish_reason`` ``stop`` or
``length``, ``generated_tokens``) instead of strings, so truncation is visible. Their typed
shapes are :class:`ReportsDevice`, :class:`HasCacheIdentity`, :class:`Closable` and
:class:`GeneratesCompletions`; the code reads them only through :func:`device_info_of`,
:func:`cache_identity_of`, :func:`close_generator` and :func:`completions_of`, the one place
each optional member is looked up. A generator with only ``generate`` keeps working: its
outputs are recorded with ``finish_reason`` ``unknown``.

An engine is a loader with the :class:`EngineLoader` signature, registered by module path in
:mod:`pytest_sommelier.inference.select_engine` (see docs/engines.md, "Adding an engine").
This module imports nothing at run time beyond :mod:`typing`: importing the protocol costs
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_sommelier.core.report_identity import PREFLIGHT_KEY  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_sommelier.core.types import (
        ArmConfig,
        Completion,
        DeviceInfo,
        EngineConfig,
        ModelConfig,
    )


@runtime_checkable
class Generator(Protocol):
    """What the ``sommelier_model`` fixture hands out per arm (the three required members)."""

    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Exactly one completion per prompt, in order."""
        ...


@runtime_checkable
class ReportsDevice(Protocol):
    """Optional: a generator that says where it runs."""

    def device_info(self) -> DeviceInfo:
        """``{"device": "cpu" | "cuda" | "server" | ..., "device_count": int}``."""
        ...


@runtime_checkable
class HasCacheIdentity(Protocol):
    """Optional: a generator with more output-changing facts than its identities."""

    cache_identity: dict[str, Any] | None


@runtime_checkable
class Closable(Protocol):
    """Optional: a generator holding a resource to release at session end (a vLLM engine)."""

    def close(self) -> None:
        """Release the resource (idempotent)."""
        ...


@runtime_checkable
class GeneratesCompletions(Protocol):
    """Optional: a generator that says why each completion ended (every shipped engine)."""

    def generate_completions(
        self, prompts: list[str], decoding: dict[str, Any]
    ) -> list[Completion]:
        """Exactly one :class:`Completion` per prompt, in order (``generate`` returns their
        texts)."""
        ...


class EngineLoader(Protocol):
    """An engine: one generator per arm of one suite, nothing loaded before ``generate``.

    Every engine's registered loader has exactly this signature (``worker_index`` is the xdist
    worker's number, for engines that place a model on a device themselves).
    """

    def __call__(
        self,
        engine: EngineConfig,
        model: ModelConfig,
        arms: Mapping[str, ArmConfig],
        *,
        suite_dir: Path,
        worker_index: int = 0,
    ) -> Mapping[str, Generator]:
        """arm name -> that arm's generator, in the order of ``arms``."""
        ...


def device_info_of(generator: object) -> DeviceInfo | None:
    """The generator's ``device_info()``, or None when it has none (the one lookup of it)."""
    info = getattr(generator, "device_info", None)
    if not callable(info):
        return None
    result: DeviceInfo = info()
    return result


def cache_identity_of(generator: object) -> dict[str, Any] | None:
    """The generator's ``cache_identity``, or None when it has none (the one lookup of it)."""
    value: dict[str, Any] | None = getattr(generator, "cache_identity", None)
    return value


def completions_of(generator: Any, prompts: list[str], decoding: dict[str, Any]) -> Any:
    """What the generator returns for ``prompts``: its ``generate_completions`` result when it
    has one, else its ``generate`` result (the one lookup of it; the runner checks the
    contract on either and reads a plain string as a completion of unknown finish)."""
    richer = getattr(generator, "generate_completions", None)
    if callable(richer):
        return richer(prompts, decoding)
    return generator.generate(prompts, decoding)


def token_count_of(generator: object, text: str) -> int | None:
    """How many tokens ``text`` is for the generator's tokenizer (its optional
    ``count_tokens(text)``, every shipped engine has one), or None when it has none or the
    answer is not a count (the one lookup of it; used for reasoning lengths)."""
    count = getattr(generator, "count_tokens", None)
    if not callable(count):
        return None
    value = count(text)
    return value if type(value) is int and value >= 0 else None


def close_generator(generator: object) -> None:
    """Call the generator's ``close()`` when it has one (the one lookup of it)."""
    close = getattr(generator, "close", None)
    if callable(close):
        close()
