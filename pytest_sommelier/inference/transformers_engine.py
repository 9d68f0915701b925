"""The default model backend: one transformers base per process, peft adapters per arm.

``load_generators(model, arms, suite_dir=..., worker_index=...)`` returns one generator per arm.
The base model is loaded once per process (a module-level cache keyed by the resolved base
reference, revision, dtype and device) from a hub id pinned to a revision, a local folder, a
``.gguf`` file (through :mod:`pytest_sommelier.inference.modelcache`) or a ``pkg:`` reference. Every
adapter arm is attached to that one model by name with peft; the base arm runs with adapters
disabled.

Invariants kept here:

- weights are read from safetensors only (an adapter or model folder without safetensors is
  refused) and ``trust_remote_code`` is never enabled;
- generation is greedy (``do_sample=False`` with a clean generation config, so nothing from a
  model's own ``generation_config.json`` such as a temperature or repetition penalty leaks in),
  batched with left padding and an attention mask, and ``generate`` returns exactly one string
  per prompt, in order;
- identities are JSON-safe and hold no machine paths; ``model_identity`` is the same dict for
  every arm of one base.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sommelier.core.types import ArmConfig, ModelConfig
from pytest_sommelier.data import digests, references
from pytest_sommelier.data.suite import validate_decoding
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
)
from pytest_sommelier.inference import modelcache, modelref

DTYPES = ("float32", "float16", "bfloat16")
DEFAULT_DTYPE = "float32"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")


# --------------------------------------------------------------------------- runtime facts


def runtime_versions() -> dict[str, str]:
    """Versions of the libraries that can change an output (for the generation cache key)."""
    import peft
    import torch
    import transformers

    return {
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
        "peft": str(peft.__version__),
    }


def device_info(device: str | None = None) -> dict[str, Any]:
    """``{"device": "cpu"|"cuda"|..., "device_count": int}`` for telemetry.

    With ``device`` (a generator's ``device``, e.g. ``"cuda:1"``) the kind is that device's; else
    CUDA when available. The count is the number of visible devices of that kind (1 for cpu).
    """
    import torch

    kind = torch.device(device).type if device else ("cuda" if torch.cuda.is_available() else "cpu")
    count = torch.cuda.device_count() if kind == "cuda" else 1
    return {"device": kind, "device_count": int(count)}


def choose_device(configured: str | None, worker_index: int = 0) -> str:
    """The configured device, else CUDA device ``worker_index % device_count``, else ``cpu``."""
    import torch

    if configured:
        try:
            device = torch.device(configured)
        except (RuntimeError, ValueError) as exc:
            raise InputError(
                "SOM-BACKEND-DEVICE",
                f"model.device {configured!r} is not a torch device",
                "use e.g. 'cpu', 'cuda' or 'cuda:1', or remove the key to choose automatically",
                where="model.device",
            ) from exc
        if device.type == "cuda" and not torch.cuda.is_available():
            raise SommelierEnvironmentError(
                "SOM-BACKEND-NO-CUDA",
                f"model.device is {configured!r} but CUDA is not available",
                "remove model.device to run on the CPU, or install a CUDA build of torch",
                where="model.device",
            )
        return str(device)
    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return f"cuda:{worker_index % torch.cuda.device_count()}"
    return "cpu"


def parse_dtype(name: str | None) -> Any:
    """The torch dtype named in ``model.dtype`` (default float32); InputError otherwise."""
    import torch

    name = name or DEFAULT_DTYPE
    if name not in DTYPES:
        raise InputError(
            "SOM-BACKEND-DTYPE",
            f"model.dtype {name!r} is not supported",
            f"use one of: {', '.join(DTYPES)}",
            where="model.dtype",
        )
    return getattr(torch, name)


# --------------------------------------------------------------------------- base models


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
        references.require_revision(
            model.base, model.revision, field="model.base", revision_field="model.revision"
        )
        return BaseSource("hub", model.base, model.base, model.revision)
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


def engine_fields() -> dict[str, Any]:
    """The ``engine`` entry of this engine's ``model_identity`` (read without importing)."""
    try:
        version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        version = "absent"
    return {"name": "transformers", "package": "transformers", "version": version}


def base_identity(model: ModelConfig, suite_dir: Path) -> tuple[BaseSource, dict[str, Any], str]:
    """``(source, identity, dtype name)`` of ``[model]`` from references and digests only: no
    weights read, no tokenizer loaded, torch not imported (every engine's base identity)."""
    source = resolve_base(model, Path(suite_dir))
    dtype_name = model.dtype or DEFAULT_DTYPE
    if dtype_name not in DTYPES:
        raise InputError(
            "SOM-BACKEND-DTYPE",
            f"model.dtype {dtype_name!r} is not supported",
            f"use one of: {', '.join(DTYPES)}",
            where="model.dtype",
        )
    return source, model_identity_for(source, model, None, Path(suite_dir), dtype_name), dtype_name


def model_identity_for(
    source: BaseSource, model: ModelConfig, tokenizer: Any, suite_dir: Path, dtype_name: str
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
    identity.update(
        tokenizer_id=tokenizer_id, tokenizer_revision=tokenizer_revision, dtype=dtype_name
    )
    return identity


@dataclass
class LoadedBase:
    """One base model in memory with its tokenizer, device, identity and attached adapters.

    ``model`` becomes a ``PeftModel`` when the first adapter is attached; ``adapters`` maps the
    peft adapter name to the adapter's identity, so an adapter is attached once per process.
    """

    model: Any
    tokenizer: Any
    device: str
    identity: dict[str, Any]
    load_status: str
    adapters: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_peft(self) -> bool:
        """True once an adapter has been attached."""
        return bool(self.adapters)


_BASES: dict[tuple[str, str, str | None, str, str], LoadedBase] = {}


def _load_model_and_tokenizer(
    source: BaseSource, dtype: Any, suite_dir: Path
) -> tuple[Any, Any, str]:
    """Load weights and tokenizer for a resolved base; returns (model, tokenizer, load status)."""
    from transformers import AutoModelForCausalLM

    if source.kind == "gguf":
        path = Path(source.location)
        loaded = modelcache.load_gguf(path, digests.sha256_path(path), dtype)
        return loaded.model, loaded.tokenizer, loaded.status
    tokenizer = modelref.load_tokenizer(source.ref, revision=source.revision, base_dir=suite_dir)
    kwargs: dict[str, Any] = {"use_safetensors": True, "trust_remote_code": False}
    kwargs.update(modelcache.dtype_kwargs(dtype))
    if source.kind == "hub":
        kwargs["revision"] = source.revision
    try:
        model = AutoModelForCausalLM.from_pretrained(source.location, **kwargs)
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-BACKEND-MODEL-LOAD",
            f"could not load the base model: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''}",
            "for a hub id, make sure it is cached or the hub is reachable and the revision "
            "exists; for a folder, check it holds config.json and safetensors weights",
            where="model.base",
        ) from exc
    return model, tokenizer, source.kind


def load_base(model: ModelConfig, *, suite_dir: Path, worker_index: int = 0) -> LoadedBase:
    """Return this process's loaded base for ``model``, loading it on first use."""
    source = resolve_base(model, suite_dir)
    dtype_name = model.dtype or DEFAULT_DTYPE
    dtype = parse_dtype(dtype_name)
    device = choose_device(model.device, worker_index)
    key = (source.kind, source.location, source.revision, dtype_name, device)
    cached = _BASES.get(key)
    if cached is not None:
        return cached
    weights, tokenizer, status = _load_model_and_tokenizer(source, dtype, suite_dir)
    weights.to(device)
    weights.eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    identity = model_identity_for(source, model, None, suite_dir, dtype_name)
    loaded = LoadedBase(weights, tokenizer, device, identity, status)
    _BASES[key] = loaded
    return loaded


# --------------------------------------------------------------------------- adapters


def adapter_location(arm: ArmConfig, suite_dir: Path) -> tuple[Path, dict[str, Any]]:
    """Resolve an arm's adapter to a local folder and its identity (without the arm name)."""
    assert arm.adapter is not None
    where = f"arms.{arm.name}.adapter"
    local = references.resolve_local_path(arm.adapter, base_dir=suite_dir)
    if local is None:
        references.require_revision(
            arm.adapter,
            arm.adapter_revision,
            field=f"arms.{arm.name}.adapter",
            revision_field=f"arms.{arm.name}.adapter_revision",
            where=where,
        )
        folder = _download_adapter(arm.adapter, arm.adapter_revision, where)
        _check_adapter_folder(folder, where)
        return folder, {"hub_id": arm.adapter, "revision": arm.adapter_revision}
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
    """Refuse an adapter folder without adapter_model.safetensors (pickle adapters never load)."""
    if not (folder / "adapter_model.safetensors").is_file():
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


def _peft_name(arm: str, identity: dict[str, Any], base: LoadedBase) -> str:
    """A peft adapter name for the arm: the arm name, made unique if another adapter holds it."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", arm) or "adapter"
    name, counter = stem, 1
    while name in base.adapters and base.adapters[name] != identity:
        counter += 1
        name = f"{stem}-{counter}"
    return name


def attach_adapter(base: LoadedBase, arm: ArmConfig, suite_dir: Path) -> tuple[str, dict]:
    """Attach an arm's adapter to ``base`` (once per identity); return (peft name, identity)."""
    folder, identity = adapter_location(arm, suite_dir)
    name = _peft_name(arm.name, identity, base)
    if name in base.adapters:
        return name, identity
    try:
        with warnings.catch_warnings():
            # peft calls a transformers property deprecated in transformers 5: not our users' news.
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
            if base.is_peft:
                base.model.load_adapter(str(folder), adapter_name=name, is_trainable=False)
            else:
                from peft import PeftModel

                base.model = PeftModel.from_pretrained(
                    base.model, str(folder), adapter_name=name, is_trainable=False
                )
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-BACKEND-ADAPTER-LOAD",
            f"could not attach adapter of arm {arm.name!r}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''}",
            "check that the adapter was trained for this base model",
            where=f"arms.{arm.name}.adapter",
        ) from exc
    base.model.to(base.device)
    base.model.eval()
    base.adapters[name] = identity
    return name, identity


# --------------------------------------------------------------------------- generation


def decoding_settings(decoding: dict[str, Any], arm: str) -> tuple[int, int]:
    """(max_new_tokens, batch_size) of a decoding dict, checked by the one decoding rule
    (``data.suite.validate_decoding``, which also validated the suite's ``[decoding]`` at load):
    a caller of the public ``generate`` gets the same refusal, never a sampled output."""
    try:
        checked = validate_decoding(decoding)
    except EvaluationError as exc:
        raise EvaluationError(
            "SOM-BACKEND-DECODING", exc.message, exc.hint, where=f"arm {arm}"
        ) from None
    return checked["max_new_tokens"], checked["batch_size"]


def _generation_config(model: Any, tokenizer: Any, max_new_tokens: int) -> Any:
    """A clean greedy GenerationConfig: only the special token ids are taken from the model."""
    from transformers import GenerationConfig

    own = getattr(model, "generation_config", None)
    eos = getattr(own, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    bos = getattr(own, "bos_token_id", None)
    return GenerationConfig(
        do_sample=False,
        num_beams=1,
        max_new_tokens=max_new_tokens,
        eos_token_id=eos,
        bos_token_id=bos,
        pad_token_id=tokenizer.pad_token_id,
    )


@dataclass
class BaseHandle:
    """A base to load on first use: its device is chosen (and checked) up front, the weights
    only when a generation needs them (``load_base``, once per process)."""

    model: ModelConfig
    suite_dir: Path
    worker_index: int
    device: str
    loaded: LoadedBase | None = None

    def get(self) -> LoadedBase:
        """The loaded base (loading it now if this is the first use)."""
        if self.loaded is None:
            self.loaded = load_base(
                self.model, suite_dir=self.suite_dir, worker_index=self.worker_index
            )
        return self.loaded


@dataclass
class TransformersGenerator:
    """The generator of one arm; identities are known at creation, the base is loaded (and the
    arm's adapter attached) on first use of :attr:`base`."""

    name: str
    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None
    handle: BaseHandle
    arm: ArmConfig | None = None
    _peft_name: str | None = None

    @property
    def base(self) -> LoadedBase:
        """This process's loaded base, with this arm's adapter attached."""
        loaded = self.handle.get()
        if self.arm is not None and self._peft_name is None:
            self._peft_name, _ = attach_adapter(loaded, self.arm, self.handle.suite_dir)
        return loaded

    @property
    def adapter_name(self) -> str | None:
        """The peft name of this arm's adapter (attaching it), None for the base arm."""
        if self.arm is None:
            return None
        _ = self.base
        return self._peft_name

    @property
    def device(self) -> str:
        """The torch device the arm generates on (e.g. ``"cpu"``, ``"cuda:0"``)."""
        return self.handle.device

    def device_info(self) -> dict[str, Any]:
        """``{"device", "device_count"}`` of the device this generator runs on (telemetry)."""
        return device_info(self.device)

    def _adapter_context(self) -> contextlib.AbstractContextManager[Any]:
        """Select this arm's adapter, or disable adapters for the base arm."""
        if not self.base.is_peft:
            return contextlib.nullcontext()
        if self.adapter_name is None:
            return self.base.model.disable_adapter()
        self.base.model.set_adapter(self.adapter_name)
        return contextlib.nullcontext()

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Greedy completions, one per prompt in order, in batches of ``decoding["batch_size"]``."""
        import torch

        if not isinstance(prompts, list) or not all(isinstance(p, str) for p in prompts):
            raise EvaluationError(
                "SOM-BACKEND-PROMPTS",
                "generate() takes a list of prompt strings",
                "pass prompts as list[str]",
                where=f"arm {self.name}",
            )
        max_new_tokens, batch_size = decoding_settings(decoding, self.name)
        if not prompts:
            return []
        _ = self.base  # load on first use
        self._refuse_empty_prompts(prompts)
        config = _generation_config(self.base.model, self.base.tokenizer, max_new_tokens)
        outputs: list[str] = []
        with torch.inference_mode(), self._adapter_context():
            for start in range(0, len(prompts), batch_size):
                outputs.extend(self._generate_batch(prompts[start : start + batch_size], config))
        if len(outputs) != len(prompts):
            raise InvariantError(
                "SOM-BACKEND-COUNT",
                f"backend returned {len(outputs)} completions for {len(prompts)} prompts",
                "report this as a bug",
                where=f"arm {self.name}",
            )
        return outputs

    def _refuse_empty_prompts(self, prompts: list[str]) -> None:
        """A prompt that tokenizes to nothing has no context to continue: an error, not a guess."""
        lengths = self.base.tokenizer(prompts, add_special_tokens=False)["input_ids"]
        empty = [index for index, ids in enumerate(lengths) if not ids]
        if empty:
            raise EvaluationError(
                "SOM-BACKEND-EMPTY-PROMPT",
                f"{len(empty)} prompt(s) tokenize to no tokens (first at index {empty[0]})",
                "give every example a non-empty prompt_text",
                where=f"arm {self.name}",
            )

    def _generate_batch(self, batch: list[str], config: Any) -> list[str]:
        """One left-padded batch through ``model.generate``; decodes only the new tokens."""
        tokenizer = self.base.tokenizer
        encoded = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(
            self.base.device
        )
        try:
            generated = self.base.model.generate(
                input_ids=encoded["input_ids"],
                attention_mask=encoded["attention_mask"],
                generation_config=config,
            )
        except Exception as exc:
            raise EvaluationError(
                "SOM-BACKEND-GENERATE",
                f"generation failed: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}",
                "check the model, the device and the prompt lengths",
                where=f"arm {self.name}",
            ) from exc
        new_tokens = generated[:, encoded["input_ids"].shape[1] :]
        return list(tokenizer.batch_decode(new_tokens, skip_special_tokens=True))


def load_generators(
    model: ModelConfig,
    arms: dict[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, TransformersGenerator]:
    """One generator per arm over this process's single base; identities come from references
    and digests, the base is loaded (and adapters attached by name) on the first generation."""
    suite_dir = Path(suite_dir)
    _, identity, dtype_name = base_identity(model, suite_dir)
    parse_dtype(dtype_name)
    identity["engine"] = engine_fields()
    handle = BaseHandle(model, suite_dir, worker_index, choose_device(model.device, worker_index))
    generators: dict[str, TransformersGenerator] = {}
    for key, arm in arms.items():
        if arm.adapter is None:
            generators[key] = TransformersGenerator(key, dict(identity), None, handle)
            continue
        _, adapter = adapter_location(arm, suite_dir)
        generators[key] = TransformersGenerator(
            key, dict(identity), {"name": key, **adapter}, handle, arm
        )
    return generators
