"""A test-only engine package: ``echo-package``, registered through the ``sommelier.engines``
entry point of its ``pyproject.toml`` (tests/plugin/test_installed_engine.py installs it).

Every prompt is answered with one fixed call (the gold of the test split's ``en-0`` and
``he-0``). ``[engine] options.mode`` makes it misbehave, one way per mode, so the plugin's
checks of an engine are tested on a real installed package: ``load-raises``, ``not-a-mapping``,
``missing-arm``, ``extra-arm`` (the loader), ``generate-raises``, ``count`` (one output too
many), ``type`` (an integer for a completion), ``identity`` (a model identity that is not an
object).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.inference import engines

ANSWER = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'
VERSION = "1.0"


class EchoGenerator:
    """One arm's generator: ``ANSWER`` for every prompt (or the mode's fault)."""

    def __init__(self, identity: Any, adapter_identity: Any, mode: str) -> None:
        self.model_identity = identity
        self.adapter_identity = adapter_identity
        self.mode = mode

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[Any]:
        engines.check_prompts(prompts, "echo-package")
        if self.mode == "generate-raises":
            raise RuntimeError("the echo engine lost its voice")
        if self.mode == "count":
            return [ANSWER] * (len(prompts) + 1)
        if self.mode == "type":
            return [7 for _ in prompts]
        return [ANSWER for _ in prompts]


def load_generators(
    engine: Any, model: Any, arms: Mapping[str, Any], *, suite_dir: Path, worker_index: int = 0
) -> Any:
    """The EngineLoader: one EchoGenerator per arm, nothing loaded."""
    mode = str(engine.options.get("mode", "echo"))
    if mode == "load-raises":
        raise RuntimeError("the echo engine cannot start")
    if mode == "not-a-mapping":
        return [EchoGenerator({}, None, mode) for _ in arms]
    identity: Any = {"base": model.base, "engine": {"name": "echo-package", "version": VERSION}}
    if mode == "identity":
        identity = "not an object"
    generators = {
        name: EchoGenerator(identity, None if arm.adapter is None else {"path": str(arm.adapter)},
                            mode)
        for name, arm in arms.items()
    }  # fmt: skip
    if mode == "missing-arm":
        generators.pop(next(iter(generators)))
    if mode == "extra-arm":
        generators["stowaway"] = EchoGenerator(identity, None, mode)
    return generators
