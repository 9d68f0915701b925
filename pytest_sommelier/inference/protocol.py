"""The generator protocol: what an engine hands the runner for one arm.

Every engine (transformers + peft, and any fake or other backend a ``conftest.py`` provides
through the ``sommelier_model`` fixture) returns objects of this shape. The contract, kept by
the runner's checks: ``generate`` returns exactly one completion per prompt, in order;
``model_identity`` is JSON-safe and equal across compared arms; ``adapter_identity`` is a
JSON-safe dict (content digest or pinned revision) or None for a base arm.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Generator(Protocol):
    """What the ``sommelier_model`` fixture hands out per arm (see DESIGN.md)."""

    name: str
    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Exactly one completion per prompt, in order."""
        ...
