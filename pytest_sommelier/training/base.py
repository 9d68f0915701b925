"""``load_base(suite)``: the base model a suite names, loaded for training.

An adapter records the model it was trained on in ``adapter_config.json``
(``base_model_name_or_path``: peft copies the model's ``name_or_path``), and the adapter
preflight warns when that name is not the suite's ``[model] base``. :func:`load_base` loads the
base exactly as the suite's transformers engine does (the one loader,
``modelcache.load_base_model``: the same weights, dtype and tokenizer), so its name is one the
preflight accepts: a hub id or a folder as ``from_pretrained`` names them; a ``.gguf`` base
read from the converted-model cache names the cache's folder, named by the GGUF file's content
digest (the preflight takes that digest for the suite's base: ``preflight._base_warning``),
a folder that holds the converted ``config.json`` (so peft's vocabulary check at each save
finds it, and ``AutoPeftModelForCausalLM`` reloads the base from it on this machine); with
the cache off, the GGUF file's path.

Invariants kept: the name is :func:`trained_name`'s, set through the public ``name_or_path``
of the model, its config and the tokenizer (nothing private is written), only where the loaded
one would not do; nothing else of the loaded objects is changed.
"""

from __future__ import annotations

from pathlib import Path, PurePath
from typing import Any

from pytest_sommelier.data.digests import sha256_path
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.inference import engines, modelcache


def trained_name(source: engines.BaseSource, loaded: str, sha256: str | None) -> str:
    """The ``name_or_path`` a base loaded for training carries: ``loaded`` (what the loader
    named it) unless the base is a ``.gguf`` file and ``loaded`` is not the model cache's folder
    of its digest ``sha256`` (the cache is off: transformers named the file's folder), then the
    GGUF file's path, whose last part is the suite's."""
    if source.kind != "gguf" or PurePath(loaded).name == sha256:
        return loaded
    return source.location


def load_base(suite: str | Path) -> tuple[Any, Any]:
    """The suite's ``[model] base`` as ``(model, tokenizer)`` on CPU, in the suite's
    ``[model] dtype`` (default float32), named :func:`trained_name` (module docstring); wrap
    the model with ``peft.get_peft_model`` and train it. The suite file is loaded and checked as a
    training callback loads it (``load_suite(live=True)``: a glob arm over checkpoints not yet
    written is fine; one line for a bad suite)."""
    import torch

    loaded = load_suite(Path(suite), live=True)
    suite_dir = Path(loaded.path).parent
    source = engines.resolve_base(loaded.model, suite_dir)
    dtype = getattr(torch, engines.dtype_name(loaded.model))
    model, tokenizer, _ = modelcache.load_base_model(source, dtype, suite_dir)
    sha256 = sha256_path(source.location) if source.kind == "gguf" else None
    name = trained_name(source, str(getattr(model, "name_or_path", "") or ""), sha256)
    if name != getattr(model, "name_or_path", None):
        model.config.name_or_path = name  # the config's public setter
        model.name_or_path = name  # what peft copies into base_model_name_or_path
        tokenizer.name_or_path = name
    return model, tokenizer


__all__ = ["load_base", "trained_name"]
