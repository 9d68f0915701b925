"""The default engine: one transformers base per process, peft adapters per arm.

``load_generators(model, arms, suite_dir=..., worker_index=...)`` returns one generator per arm
(``load_engine`` is the same with the registry's signature). The base model is loaded once per
process (a module-level cache keyed by the resolved base reference, revision, dtype and device)
from a hub id pinned to a revision, a local folder, a ``.gguf`` file (through
:mod:`pytest_sommelier.inference.modelcache`) or a ``pkg:`` reference. Every adapter arm is
attached to that one model by name with peft; the base arm runs with adapters disabled. Where
the base and adapters are, their identities, the decoding settings and the prompt and decode
rules are :mod:`pytest_sommelier.inference.engines`' (every engine's).

Invariants kept here:

- weights are read from safetensors only (``use_safetensors=True``; folders without them were
  refused when resolved) and ``trust_remote_code`` is never enabled;
- generation is greedy (``do_sample=False`` with a clean generation config, so nothing from a
  model's own ``generation_config.json`` such as a temperature or repetition penalty leaks in),
  batched with left padding and an attention mask, and ``generate`` returns exactly one string
  per prompt, in order (``generate_completions`` the same as completions: a row ``stop``s at
  its first end-of-sequence id, else it hit ``max_new_tokens``: ``length``);
- after an adapter is attached, the modules peft put its LoRA layers on are counted, and the
  count must be the preflight's (``preflight.check_loaded_modules``), or the arm errors;
- identities are JSON-safe and hold no machine paths; ``model_identity`` is the same dict for
  every arm of one base.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
import importlib.util
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_sommelier.core.types import (
    ArmConfig,
    Completion,
    DeviceInfo,
    EngineConfig,
    ModelConfig,
)
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
    exception_text,
)
from pytest_sommelier.inference import engines, gencache, greedy_rows, modelcache, preflight
from pytest_sommelier.inference.engines import BaseSource
from pytest_sommelier.registry import TRANSFORMERS

ENGINE = TRANSFORMERS


# --------------------------------------------------------------------------- runtime facts


def runtime_versions() -> dict[str, str]:
    """Versions of the libraries that can change an output (for the generation cache key)."""
    import peft  # noqa: F401  (imported so that their own __version__ is what is read)
    import torch  # noqa: F401
    import transformers  # noqa: F401

    return gencache.library_versions()


def device_info(device: str | None = None) -> DeviceInfo:
    """``{"device": "cpu"|"cuda"|..., "device_count": int}`` for telemetry.

    With ``device`` (a generator's ``device``, e.g. ``"cuda:1"``) the kind is that device's; else
    CUDA when available. The count is the number of visible devices of that kind (1 for cpu).
    """
    if device == "cpu":  # no torch import: a cached rerun asks this for its cache keys
        return {"device": "cpu", "device_count": 1}
    import torch

    kind = torch.device(device).type if device else ("cuda" if torch.cuda.is_available() else "cpu")
    count = torch.cuda.device_count() if kind == "cuda" else 1
    return {"device": kind, "device_count": int(count)}


def choose_device(configured: str | None, worker_index: int = 0) -> str:
    """The configured device, else CUDA device ``worker_index % device_count``, else ``cpu``.

    ``cpu`` is known without importing torch when configured so, or when torch is not imported
    yet and its build has no GPU backend (:func:`torch_build_without_gpu`): a rerun that finds
    every output in the generation cache then never imports torch (issue 40)."""
    if configured == "cpu" or (
        not configured and sys.modules.get("torch") is None and torch_build_without_gpu()
    ):
        return "cpu"
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


@functools.cache
def torch_build_without_gpu() -> bool:
    """True when the installed torch is built with neither CUDA nor ROCm, read without
    importing it (:func:`version_file_without_gpu` on its ``torch/version.py``; once per
    process): then ``torch.cuda.is_available()`` is False on any machine. False when unsure
    (no torch, no such file): torch then decides."""
    try:
        spec = importlib.util.find_spec("torch")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        if not locations:
            return False
        text = (Path(locations[0]) / "version.py").read_text(encoding="utf-8")
    except (OSError, ValueError, ImportError):
        return False
    return version_file_without_gpu(text)


def version_file_without_gpu(text: str) -> bool:
    """True when ``text`` (torch's generated ``version.py``) binds ``cuda`` and ``hip`` only by
    top-level ``cuda = None`` / ``hip = None`` assignments, as a CPU-only build's does; False
    for anything else (either name missing, assigned a version or a computed value, bound in a
    block or by an import, text that is not Python)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    names = ("cuda", "hip")
    plain = set()  # the top-level `name = None` statements
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (
                len(targets) == 1
                and isinstance(targets[0], ast.Name)
                and isinstance(node.value, ast.Constant)
                and node.value.value is None
            ):
                plain.add(id(targets[0]))
    found = set()
    for each in ast.walk(tree):
        if isinstance(each, ast.Name) and each.id in names and isinstance(each.ctx, ast.Store):
            if id(each) not in plain:
                return False
            found.add(each.id)
        elif isinstance(each, ast.alias) and (each.asname or each.name) in names:
            return False
    return found == set(names)


def parse_dtype(model: ModelConfig) -> Any:
    """The torch dtype named in ``model.dtype`` (the one dtype rule: ``engines.dtype_name``)."""
    import torch

    return getattr(torch, engines.dtype_name(model))


# --------------------------------------------------------------------------- base models


def engine_fields() -> dict[str, Any]:
    """The ``engine`` entry of this engine's ``model_identity`` (read without importing)."""
    try:
        version = importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        version = "absent"
    return {"name": ENGINE, "package": "transformers", "version": version}


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
    rowwise: bool | None = None
    """Whether batches go through :func:`greedy_rows.greedy_batch` (None: not known yet; False
    once the model or one of its prefills does not qualify, for the rest of the process)."""

    @property
    def is_peft(self) -> bool:
        """True once an adapter has been attached."""
        return bool(self.adapters)


_BASES: dict[tuple[str, str, str | None, str, str], LoadedBase] = {}


def _load_model_and_tokenizer(
    source: BaseSource, dtype: Any, suite_dir: Path
) -> tuple[Any, Any, str]:
    """Load weights and tokenizer for a resolved base; returns (model, tokenizer, load status)
    (``modelcache.load_base_model``, the one loader: the training layer's ``load_base`` too)."""
    return modelcache.load_base_model(source, dtype, suite_dir)


def prepare_tokenizer(tokenizer: Any) -> Any:
    """The one generation setup of a tokenizer: a pad token (the end-of-sequence token when it
    has none) and left padding, so a batch's prompts end where generation starts."""
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_base(model: ModelConfig, *, suite_dir: Path, worker_index: int = 0) -> LoadedBase:
    """Return this process's loaded base for ``model``, loading it on first use."""
    source = engines.resolve_base(model, suite_dir)
    dtype_name = engines.dtype_name(model)
    dtype = parse_dtype(model)
    device = choose_device(model.device, worker_index)
    key = (source.kind, source.location, source.revision, dtype_name, device)
    cached = _BASES.get(key)
    if cached is not None:
        return cached
    weights, tokenizer, status = _load_model_and_tokenizer(source, dtype, suite_dir)
    weights.to(device)
    weights.eval()
    prepare_tokenizer(tokenizer)
    identity = engines.model_identity_for(source, None, suite_dir, dtype_name)
    loaded = LoadedBase(weights, tokenizer, device, identity, status)
    _BASES[key] = loaded
    return loaded


# --------------------------------------------------------------------------- adapters


def _peft_name(arm: str, identity: dict[str, Any], base: LoadedBase) -> str:
    """A peft adapter name for the arm: the arm name, made unique if another adapter holds it."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", arm) or "adapter"
    name, counter = stem, 1
    while name in base.adapters and base.adapters[name] != identity:
        counter += 1
        name = f"{stem}-{counter}"
    return name


def attach_adapter(base: LoadedBase, arm: ArmConfig, suite_dir: Path) -> tuple[str, dict[str, Any]]:
    """Attach an arm's adapter to ``base`` (once per identity); return (peft name, identity)."""
    folder, identity = engines.adapter_location(arm, suite_dir)
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
            f"could not attach adapter of arm {arm.name!r}: {exception_text(exc, 200)}",
            "check that the adapter was trained for this base model",
            where=f"arms.{arm.name}.adapter",
        ) from exc
    base.model.to(base.device)
    base.model.eval()
    base.adapters[name] = identity
    return name, identity


def injected_lora_modules(model: Any, adapter_name: str) -> int:
    """How many modules of ``model`` peft put a LoRA layer of ``adapter_name`` on (its
    ``LoraLayer`` instances holding that adapter's A matrix, linear or embedding)."""
    from peft.tuners.lora import LoraLayer

    return sum(
        1
        for module in model.modules()
        if isinstance(module, LoraLayer)
        and (
            adapter_name in getattr(module, "lora_A", {})
            or adapter_name in getattr(module, "lora_embedding_A", {})
        )
    )


# --------------------------------------------------------------------------- generation


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
        """This process's loaded base, with this arm's adapter attached (and its injected LoRA
        layers counted against the preflight's count, once)."""
        loaded = self.handle.get()
        if self.arm is not None and self._peft_name is None:
            name, _ = attach_adapter(loaded, self.arm, self.handle.suite_dir)
            preflight.check_loaded_modules(
                self.adapter_identity,
                injected_lora_modules(loaded.model, name),
                arm=self.name,
                engine=ENGINE,
            )
            self._peft_name = name
        return loaded

    @property
    def adapter_name(self) -> str | None:
        """The peft name of this arm's adapter (attaching it), None for the base arm."""
        if self.arm is None:
            return None
        _ = self.base
        return self._peft_name

    @property
    def cache_identity(self) -> dict[str, Any]:
        """For the generation cache key: the batching procedure (:data:`greedy_rows.PROCEDURE`),
        so outputs generated before it changed are generated again, not served."""
        return {"batching": greedy_rows.PROCEDURE}

    @property
    def device(self) -> str:
        """The torch device the arm generates on (e.g. ``"cpu"``, ``"cuda:0"``)."""
        return self.handle.device

    def device_info(self) -> DeviceInfo:
        """``{"device", "device_count"}`` of the device this generator runs on (telemetry)."""
        return device_info(self.device)

    def _adapter_context(self) -> contextlib.AbstractContextManager[Any]:
        """Select this arm's adapter (only when another one is active: peft's ``set_adapter``
        also resets which adapter trains), or disable adapters for the base arm."""
        if not self.base.is_peft:
            return contextlib.nullcontext()
        if self.adapter_name is None:
            return self.base.model.disable_adapter()
        if getattr(self.base.model, "active_adapter", None) != self.adapter_name:
            self.base.model.set_adapter(self.adapter_name)
        return contextlib.nullcontext()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the base's tokenizer (a reasoning span's length)."""
        return engines.count_text_tokens(self.base.tokenizer, text)

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Greedy completions, one per prompt in order, in batches of ``decoding["batch_size"]``."""
        return [completion.text for completion in self.generate_completions(prompts, decoding)]

    def generate_completions(
        self, prompts: list[str], decoding: dict[str, Any]
    ) -> list[Completion]:
        """:meth:`generate` with each completion's finish reason and generated token count."""
        import torch

        engines.check_prompts(prompts, self.name)
        max_new_tokens, batch_size = engines.decoding_settings(decoding, self.name)
        if not prompts:
            return []
        engines.prompt_token_ids(self.base.tokenizer, prompts, self.name)  # loads on first use
        config = _generation_config(self.base.model, self.base.tokenizer, max_new_tokens)
        outputs: list[Completion] = []
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

    def _generate_batch(self, batch: list[str], config: Any) -> list[Completion]:
        """One batch: through :func:`greedy_rows.greedy_batch` (each prompt prefilled alone,
        finished rows leaving the batch) where the model qualifies and the batch has several
        prompts, else one left-padded ``model.generate``; decodes only the new tokens."""
        tokenizer = self.base.tokenizer
        try:
            new_tokens = self._rowwise(batch, config)
            if new_tokens is None:
                encoded = tokenizer(
                    batch, return_tensors="pt", padding=True, add_special_tokens=False
                ).to(self.base.device)
                with only_this_config(self.base.model, config):
                    generated = self.base.model.generate(
                        input_ids=encoded["input_ids"],
                        attention_mask=encoded["attention_mask"],
                        generation_config=config,
                    )
                new_tokens = generated[:, encoded["input_ids"].shape[1] :].tolist()
        except Exception as exc:
            raise EvaluationError(
                "SOM-BACKEND-GENERATE",
                f"generation failed: {exception_text(exc, 200)}",
                "check the model, the device and the prompt lengths",
                where=f"arm {self.name}",
            ) from exc
        texts = engines.decode_token_rows(tokenizer, new_tokens)
        stops = engines.stop_id_list(config.eos_token_id)
        finishes = [
            engines.finish_of(row, stops, int(config.max_new_tokens)) for row in new_tokens
        ]
        return [
            Completion(text, reason, count)
            for text, (reason, count) in zip(texts, finishes, strict=True)
        ]

    def _rowwise(self, batch: list[str], config: Any) -> list[list[int]] | None:
        """The batch's new token rows from :func:`greedy_rows.greedy_batch`, or None where it
        does not apply (one prompt, no pad id, a model or cache it does not support: then
        ``model.generate`` runs, and keeps running for this base once a prefill was refused)."""
        loaded = self.base
        if len(batch) < 2 or config.pad_token_id is None or loaded.rowwise is False:
            return None
        if loaded.rowwise is None:
            loaded.rowwise = greedy_rows.supported(loaded.model)
            if not loaded.rowwise:
                return None
        rows = loaded.tokenizer(batch, add_special_tokens=False)["input_ids"]
        try:
            return greedy_rows.greedy_batch(
                loaded.model,
                rows,
                stop_ids=engines.stop_id_list(config.eos_token_id),
                max_new_tokens=int(config.max_new_tokens),
                pad_id=int(config.pad_token_id),
                device=loaded.device,
            )
        except greedy_rows.Unsupported:
            loaded.rowwise = False
            return None


@contextlib.contextmanager
def only_this_config(model: Any, config: Any) -> Any:
    """While ``model.generate`` runs, the (peft-unwrapped) model's own ``generation_config`` is
    ``config``: transformers 5 fills every field a passed config leaves unset from the model's
    ``generation_config.json`` (a repetition penalty, no-repeat n-grams), which would make the
    clean greedy config not clean. Restored afterwards (the model may be the user's, in
    training); a public attribute, set and put back."""
    inner = engines.underlying_model(model)
    own = getattr(inner, "generation_config", None)
    if own is None:
        yield
        return
    inner.generation_config = config
    try:
        yield
    finally:
        inner.generation_config = own


def load_generators(
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, TransformersGenerator]:
    """One generator per arm over this process's single base; identities come from references
    and digests, the base is loaded (and adapters attached by name) on the first generation."""
    suite_dir = Path(suite_dir)
    base = engines.base_ref(model, suite_dir)
    engines.dtype_name(model)  # refused here, before anything loads (torch is not imported)
    identity = {**base.identity, "engine": engine_fields()}
    handle = BaseHandle(model, suite_dir, worker_index, choose_device(model.device, worker_index))
    return {
        key: TransformersGenerator(
            key, dict(identity), ref.identity, handle, None if ref.folder is None else arms[key]
        )
        for key, ref in engines.adapter_refs(arms, suite_dir).items()
    }


def load_engine(
    engine: EngineConfig,
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, TransformersGenerator]:
    """The registered loader (:class:`~pytest_sommelier.inference.protocol.EngineLoader`):
    :func:`load_generators`; this engine has no ``[engine]`` settings of its own."""
    del engine
    return load_generators(model, arms, suite_dir=suite_dir, worker_index=worker_index)


_LIVE_TOKENIZERS: dict[tuple[str, str, str | None, str], Any] = {}


def live_tokenizer(source: BaseSource, identity: Mapping[str, Any], suite_dir: Path) -> Any:
    """The base's tokenizer for generators over a model in memory, set up as :func:`load_base`
    sets it, loaded once per process per base and tokenizer content (the training callback
    builds generators at each checkpoint; a GGUF base's tokenizer read from the file took
    seconds each time): ``modelcache.load_base_tokenizer``, the tokenizer a pytest run's
    :func:`load_base` has."""
    key = (source.kind, source.location, source.revision, str(identity.get("tokenizer_revision")))
    tokenizer = _LIVE_TOKENIZERS.get(key)
    if tokenizer is None:
        tokenizer = prepare_tokenizer(modelcache.load_base_tokenizer(source, suite_dir))
        _LIVE_TOKENIZERS[key] = tokenizer
    return tokenizer


def live_generators(
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    live_model: Any,
    adapter_name: str,
) -> dict[str, TransformersGenerator]:
    """Generators over a model already in memory (a ``PeftModel`` being trained,
    ``training.SommelierCallback``): no weights are loaded or copied. The base arms generate
    with peft's ``disable_adapter()``, the adapter arm (exactly one) with ``adapter_name``, the
    adapter being trained; the tokenizer is the suite base's, set up as :func:`load_base` sets
    it (:func:`live_tokenizer`, loaded once per process). Identities are
    :func:`load_generators`' (the adapter arm's folder is the checkpoint its ``ArmConfig``
    names), so the outputs key the generation cache exactly as a pytest run of the same
    checkpoint does. The caller owns the model's mode, gradients and RNG states."""
    suite_dir = Path(suite_dir)
    base = engines.base_ref(model, suite_dir)
    parameter = next(iter(live_model.parameters()), None)
    live_dtype = str(parameter.dtype).removeprefix("torch.") if parameter is not None else ""
    if live_dtype != base.dtype:
        raise InputError(
            "SOM-TRAIN-DTYPE",
            f"the model being trained holds {live_dtype or 'no'} weights, the suite's base is "
            f"{base.dtype}; outputs would not be the suite's",
            f"set [model] dtype = {live_dtype!r} in the suite, or train in {base.dtype}",
            where="model.dtype",
        )
    device = str(parameter.device) if parameter is not None else "cpu"
    loaded = LoadedBase(
        live_model, live_tokenizer(base.source, base.identity, suite_dir), device,
        dict(base.identity), "live",
    )  # fmt: skip
    identity = {**base.identity, "engine": engine_fields()}
    handle = BaseHandle(model, suite_dir, 0, device, loaded)
    generators: dict[str, TransformersGenerator] = {}
    for key, ref in engines.adapter_refs(arms, suite_dir).items():
        if ref.folder is None:
            generators[key] = TransformersGenerator(key, dict(identity), None, handle)
            continue
        loaded.adapters[adapter_name] = dict(ref.identity or {})
        generators[key] = TransformersGenerator(
            key, dict(identity), ref.identity, handle, arms[key], adapter_name
        )
    return generators
