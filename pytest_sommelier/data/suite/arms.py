"""The suite's model, arm, comparison and engine tables as typed configs.

Invariant kept: every returned config names only what exists: model and adapter references are
classified and resolved (``references.resolve_reference``), comparisons name configured,
distinct arms and appear once, ``engine.options`` is JSON-safe.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core.types import ArmConfig, ComparisonConfig, EngineConfig, ModelConfig
from pytest_sommelier.data.references import resolve_reference
from pytest_sommelier.data.suite.globs import is_glob
from pytest_sommelier.errors import InputError


def model_config(table: dict[str, Any], folder: Path, label: str) -> ModelConfig:
    """``[model]`` with ``base`` resolved (``references.resolve_reference``)."""
    revision = table.get("revision")
    base = resolve_reference(
        table["base"],
        folder,
        field="model.base",
        revision=revision,
        revision_field="model.revision",
        adapter=False,
        where=f"{label}: [model]",
    )
    return ModelConfig(
        base=base,
        revision=revision,
        dtype=table.get("dtype"),
        device=table.get("device"),
        served_name=table.get("served_name"),
    )


def arm_configs(
    table: dict[str, Any], folder: Path, label: str, *, keep_globs: bool = False
) -> dict[str, ArmConfig]:
    """``[arms.*]`` in file order; an arm without ``adapter`` is the base model. With
    ``keep_globs`` (the training callback's reading, ``data.suite.globs.live_tables``) a glob
    adapter is kept as written, unresolved: it names checkpoints that need not exist yet."""
    arms: dict[str, ArmConfig] = {}
    for name, arm in table.items():
        where = f"{label}: [arms.{name}]"
        revision = arm.get("adapter_revision")
        adapter = arm.get("adapter")
        if adapter is None:
            if revision is not None:
                raise InputError(
                    "SOM-SUITE-REVISION-UNUSED",
                    f"arms.{name}.adapter_revision is set but the arm has no adapter",
                    "remove adapter_revision, or add adapter",
                    where=where,
                )
        elif keep_globs and is_glob(adapter):
            pass  # checked by data.suite.globs.live_tables (no adapter_revision)
        else:
            adapter = resolve_reference(
                adapter,
                folder,
                field=f"arms.{name}.adapter",
                revision=revision,
                revision_field=f"arms.{name}.adapter_revision",
                adapter=True,
                where=where,
            )
        arms[name] = ArmConfig(
            name=name,
            adapter=adapter,
            adapter_revision=revision,
            served_name=arm.get("served_name"),
        )
    return arms


def comparison_configs(
    entries: list[dict[str, Any]], arms: Mapping[str, ArmConfig], label: str
) -> tuple[ComparisonConfig, ...]:
    """``[[comparisons]]``: existing, distinct arms; no comparison listed twice."""
    seen: set[tuple[str, str]] = set()
    comparisons = []
    for index, entry in enumerate(entries):
        where = f"{label}: [[comparisons]] #{index + 1}"
        for key in ("candidate", "reference"):
            require_arm(entry[key], arms, f"comparisons.{key}", where)
        pair = (entry["candidate"], entry["reference"])
        if pair[0] == pair[1]:
            raise InputError(
                "SOM-SUITE-COMPARISON-SELF",
                f"comparison compares arm {pair[0]!r} with itself",
                "candidate and reference must be different arms",
                where=where,
            )
        if pair in seen:
            raise InputError(
                "SOM-SUITE-DUPLICATE-COMPARISON",
                f"comparison {pair[0]}-vs-{pair[1]} is listed twice",
                "remove the duplicate",
                where=where,
            )
        seen.add(pair)
        comparisons.append(ComparisonConfig(candidate=pair[0], reference=pair[1]))
    return tuple(comparisons)


def require_arm(name: str, arms: Mapping[str, ArmConfig], field: str, where: str) -> None:
    """``name`` must be a configured arm."""
    if name not in arms:
        raise InputError(
            "SOM-SUITE-UNKNOWN-ARM",
            f"{field} names unknown arm {name!r}",
            f"configured arms: {', '.join(arms)}",
            where=where,
        )


def engine_config(table: Mapping[str, Any], label: str) -> EngineConfig:
    """``[engine]`` (structure checked by the schema); ``options`` must be JSON-safe, since
    they are recorded in the arms' ``model_identity``."""
    options = dict(table.get("options", {}))
    try:
        json.dumps(options, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(
            "SOM-SUITE-ENGINE-OPTIONS",
            f"engine.options holds a value that is not JSON ({exc})",
            "use strings, numbers, booleans, arrays and tables (no dates or times)",
            where=f"{label}: [engine]",
        ) from None
    defaults = EngineConfig()
    return EngineConfig(
        name=table.get("name", defaults.name),
        options=options,
        base_url=table.get("base_url"),
        api_key_env=table.get("api_key_env"),
        concurrency=table.get("concurrency", defaults.concurrency),
        request_timeout_s=float(table.get("request_timeout_s", defaults.request_timeout_s)),
        max_retries=table.get("max_retries", defaults.max_retries),
        prompt_format=table.get("prompt_format", defaults.prompt_format),
    )
