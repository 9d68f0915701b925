"""The suite's ``[model]`` and ``[arms.NAME]`` records as the loader builds them, for the engine
tests (the real config types, a local base or adapter needing no revision)."""

from __future__ import annotations

from pytest_sommelier.core.types import ArmConfig, ModelConfig


def model_config(
    base: str,
    *,
    dtype: str | None = None,
    device: str | None = None,
    served_name: str | None = None,
) -> ModelConfig:
    """The suite's ``[model]`` record as the loader builds it (a local base needs no revision)."""
    return ModelConfig(base, None, dtype, device, served_name)


def arm_config(
    name: str, adapter: str | None = None, *, served_name: str | None = None
) -> ArmConfig:
    """One ``[arms.NAME]`` record (a local adapter needs no revision)."""
    return ArmConfig(name, adapter, None, served_name)
