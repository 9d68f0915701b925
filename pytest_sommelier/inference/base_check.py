"""Is the model in memory the suite's ``[model] base``? What can be told without a second copy
of the weights: the base's ``config.json`` against the model's config, and the base's
safetensors headers (``inference.preflight.read_base``: headers only) against the shapes of
the model's own state dict. The training callback asks it at ``on_train_begin``.

Invariants kept: nothing is loaded but JSON and headers (the state dict is the model's own
tensors, not copied); a mismatch is one ``SOM-TRAIN-BASE`` line naming the first field or
tensor that differs and both values, raised before any training step; what cannot be read
cheaply is not guessed at: a hub base outside the local hub cache, and the tensor shapes of
a quantized model (packed weights), are left unchecked. Dtypes are not compared: a base
stored in one dtype is trained in another on purpose (``SOM-TRAIN-DTYPE`` checks the loaded
dtype against ``[model] dtype``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core.types import ModelConfig
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.inference.engines import (
    BaseSource,
    local_model_folder,
    resolve_base,
    underlying_model,
)

CONFIG_FIELDS = ("architectures", "model_type", "vocab_size", "hidden_size", "num_hidden_layers")
"""The ``config.json`` fields compared, in this order (absent on either side: not compared)."""
LISTED = 3
"""How many tensor names a refusal lists."""
PEFT_PARTS = ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B", "lora_magnitude_vector")


def base_folder(source: BaseSource) -> Path | None:
    """The folder the base's ``config.json`` and safetensors headers are read from: a local
    folder as is, a ``.gguf`` base's safetensors folder in the load cache (built on first
    use, as a pytest run builds it), a hub base's snapshot in the local hub cache (None when
    it is not there: nothing is downloaded)."""
    if source.kind == "directory":
        return Path(source.location)
    if source.kind == "gguf":
        return Path(local_model_folder(source))
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(source.ref, revision=source.revision, local_files_only=True))
    except Exception:  # not in the local hub cache: the check is not made (module docstring)
        return None


def live_shapes(state: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """A peft-wrapped base model's state dict as the base checkpoint names its tensors: the
    LoRA tensors and ``modules_to_save`` copies left out, ``.base_layer.`` and
    ``.original_module.`` (peft's wrappers) removed from the names."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, tensor in state.items():
        parts = name.split(".")
        if any(part in PEFT_PARTS for part in parts) or "modules_to_save" in parts:
            continue
        kept = [part for part in parts if part not in ("base_layer", "original_module")]
        shapes[".".join(kept)] = tuple(int(size) for size in tensor.shape)
    return shapes


def config_difference(base: Mapping[str, Any], model: Mapping[str, Any]) -> str | None:
    """The first of ``CONFIG_FIELDS`` both configs set to different values, as text."""
    for key in CONFIG_FIELDS:
        if key in base and key in model and base[key] is not None and model[key] is not None:
            left, right = base[key], model[key]
            if left != right:
                return f"config.json {key} is {left!r} in the base, {right!r} in the model"
    return None


def shape_difference(
    base: Mapping[str, tuple[int, ...]], model: Mapping[str, tuple[int, ...]]
) -> str | None:
    """The first difference between the base's header shapes and the model's: a tensor of
    both with other shapes, tensors only the base has, tensors only the model has."""
    for name in base:
        if name in model and tuple(base[name]) != tuple(model[name]):
            return (
                f"tensor {name} has shape {list(base[name])} in the base's headers, "
                f"{list(model[name])} in the model"
            )
    for only, side in ((base.keys() - model.keys(), "base"), (model.keys() - base.keys(), "model")):
        if only:
            names = sorted(only)
            more = f" (+{len(names) - LISTED} more)" if len(names) > LISTED else ""
            return f"{len(names)} tensors only in the {side}: {', '.join(names[:LISTED])}{more}"
    return None


def _quantized(model: Any) -> bool:
    """A quantized model's weights are packed: their shapes are not the checkpoint's."""
    config = getattr(model, "config", None)
    quantization = getattr(config, "quantization_config", None)
    return bool(getattr(model, "is_quantized", False) or quantization)


def check_live_base(model: ModelConfig, suite_dir: Path, live_model: Any, *, where: str) -> None:
    """Refuse (``SOM-TRAIN-BASE``) a peft model whose base is not ``model.base`` by what its
    config and headers can tell (module docstring); return quietly when it agrees or cannot be
    checked cheaply."""
    source = resolve_base(model, suite_dir)
    folder = base_folder(source)
    if folder is None:
        return
    base = underlying_model(live_model)
    problem = None
    config_path = folder / "config.json"
    if config_path.is_file():
        try:
            stored = strict_json(config_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(
                "SOM-TRAIN-BASE",
                f"{config_path} cannot be read: {exc}",
                "the suite's [model] base must be a model folder saved with save_pretrained",
                where=where,
            ) from exc
        live = base.config.to_dict() if hasattr(base.config, "to_dict") else {}
        problem = config_difference(stored if isinstance(stored, dict) else {}, live)
    if problem is None and not _quantized(base):
        from pytest_sommelier.inference.preflight import read_base

        try:
            headers = read_base(BaseSource("directory", source.ref, str(folder), None))
        except SommelierError as error:
            raise InputError(
                "SOM-TRAIN-BASE",
                f"the headers of base {source.ref!r} cannot be read: {error}",
                "the suite's [model] base must be a model folder saved with save_pretrained",
                where=where,
            ) from None
        state = live_shapes(base.state_dict())
        expected = dict(headers.shapes)
        if headers.tied_head and "lm_head.weight" not in state:
            expected.pop("lm_head.weight", None)
        problem = shape_difference(expected, state)
    if problem is not None:
        raise InputError(
            "SOM-TRAIN-BASE",
            f"the model being trained is not the suite's [model] base {source.ref!r}: {problem}",
            "load the model being trained from the suite's [model] base (or point [model] base "
            "at the folder it was loaded from); SommelierCallback(check_base=False) skips this "
            "check",
            where=where,
        )


__all__ = ["CONFIG_FIELDS", "base_folder", "check_live_base", "config_difference",
           "live_shapes", "shape_difference"]  # fmt: skip
