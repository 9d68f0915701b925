"""Adapter preflight: check a PEFT adapter folder against its base before any weights load.

``check_adapter(adapter_dir, base, engine=...)`` reads only ``adapter_config.json``, the
adapter's tokenizer files and the safetensors *headers* of the adapter and of the base (the
8-byte little-endian header length and the JSON header that follows it; tensor data is never
read). ``read_base(source)`` finds the base's tensor names and shapes: a local or hub-cached
safetensors folder (sharded or not), the model cache's converted copy of a ``.gguf`` base, or,
when that copy does not exist yet, the GGUF header read with the ``gguf`` package's memory-mapped
reader, its names mapped to transformers names by transformers' own GGUF conversion map (what
the model cache's conversion uses), on a model built on the ``meta`` device (no weights).

The rules, each failure one ``SommelierError`` line naming the adapter (see docs/engines.md,
"Is my adapter applied?"):

- ``peft_type`` must be one the engine applies (LoRA for vLLM; any type peft knows for
  transformers);
- every adapter tensor maps to a module of the base by PEFT's rules: the ``base_model.model.``
  prefix, then the module's path, then the tuner's part (``lora_A``/``lora_B`` and an optional
  adapter-name segment, ``lora_magnitude_vector``, ``token_adapter.trainable_tokens_delta``) or
  a whole saved module weight (``modules_to_save``, saved embedding layers; ``base_layer``
  dropped); no mapped tensor, or only some, is an error;
- each LoRA A's input size and B's output size equal the base module's, A and B agree on the
  rank and the rank is the config's ``r`` (or its ``rank_pattern`` entry); a saved whole weight
  has the base's shape (a resized embedding or LM head does not);
- the vLLM engine's limits: a rank above ``max_lora_rank``, ``modules_to_save``, trainable
  tokens, saved embedding or LM-head weights and DoRA are errors naming the feature and the
  engine (the transformers engine applies all of them);
- warnings, not errors: a ``base_model_name_or_path`` that names another base than the suite's
  (a ``.gguf`` base's converted copy in the model cache, a folder named by the GGUF file's
  digest, is the suite's base), and tokenizer files in the adapter folder that differ from the
  split's tokenizer.

Invariant kept: nothing here reads tensor data, loads a tokenizer or a model's weights, or
imports torch, except the GGUF fallback, which builds the model skeleton on the ``meta``
device to reuse transformers' name map.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_sommelier.core.types import Suite
from pytest_sommelier.data import digests
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.data.references import is_hub_id
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    SommelierEnvironmentError,
    SommelierError,
    exception_text,
)
from pytest_sommelier.inference import engines, modelcache, modelref
from pytest_sommelier.inference.engines import VLLM_LORA_RANKS, BaseSource
from pytest_sommelier.inference.protocol import PREFLIGHT_KEY
from pytest_sommelier.inference.tensor_header import HEADER_LENGTH_LIMIT as HEADER_LENGTH_LIMIT
from pytest_sommelier.inference.tensor_header import TensorHeader as TensorHeader
from pytest_sommelier.inference.tensor_header import (
    read_safetensors_header as read_safetensors_header,
)
from pytest_sommelier.registry import TRANSFORMERS, VLLM

PEFT_PREFIX = "base_model.model."
LORA_PARTS = ("lora_A", "lora_B", "lora_embedding_A", "lora_embedding_B")
PART_KINDS: dict[str, str] = {
    **{part: part for part in LORA_PARTS},
    "lora_magnitude_vector": "magnitude",
    "token_adapter": "token_delta",
}
"""A path segment that ends a module's path in an adapter tensor name, and what it marks."""
ENGINE_PEFT_TYPES: dict[str, tuple[str, ...]] = {VLLM: ("LORA",)}
"""The PEFT types an engine applies; an engine not listed applies what the installed peft
knows (transformers), or is not checked (openai: the server decides)."""
SAVED_EMBEDDING_SUFFIXES = ("embed_tokens", "lm_head", "wte", "word_embeddings", "embed_out")
SHOWN = 3
"""How many unmatched tensor names an error shows before the count of the others."""


# --------------------------------------------------------------------------- the base


@dataclass(frozen=True)
class BaseTensors:
    """The base's weight shapes by transformers tensor name, read from headers only.

    ``source`` says where they were read (``safetensors headers``, ``the model cache's
    safetensors headers``, ``the GGUF header``); ``chat_template`` is the base's own template
    where its files hold one (None otherwise); ``tied_head`` says ``lm_head.weight`` was added
    with the embedding's shape because the checkpoint ties it (see ``tensors_of``).
    """

    shapes: Mapping[str, tuple[int, ...]]
    source: str
    chat_template: str | None = None
    tied_head: bool = False

    @property
    def read(self) -> int:
        """How many tensors the headers declared (a tied LM head is not one of them)."""
        return len(self.shapes) - int(self.tied_head)

    def weight(self, module: str) -> tuple[int, ...] | None:
        """The shape of ``<module>.weight``, or None when the base has no such weight."""
        return self.shapes.get(f"{module}.weight")


def read_base(source: BaseSource) -> BaseTensors:
    """The tensor shapes of a resolved base (``resolve_base``: the engines' rule), headers only.

    A folder (or a hub snapshot in the local cache) is read from its safetensors headers; a
    ``.gguf`` base from the model cache's converted copy when one is valid, else from the GGUF
    header. A hub base that is not cached falls back to ``huggingface_hub``'s header-only
    metadata request; failing that, SommelierEnvironmentError.
    """
    if source.kind == "directory":
        return _folder_tensors(Path(source.location), "safetensors headers")
    if source.kind == "gguf":
        path = Path(source.location)
        digest = digests.sha256_path(path)
        cached = modelcache.cache_root() / digest
        if modelcache.is_valid_cache(cached, digest):
            return _folder_tensors(cached, "the model cache's safetensors headers")
        return _gguf_tensors(path)
    return _hub_tensors(source)


def _folder_tensors(folder: Path, source: str) -> BaseTensors:
    """Shapes from a model folder's safetensors files (the shards its index names, else every
    ``*.safetensors`` file), with a tied LM head added when the file leaves it out."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            weight_map = strict_json(index.read_text(encoding="utf-8"))["weight_map"]
            files = sorted({str(name) for name in weight_map.values()})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(
                "SOM-ADAPTER-BASE-INDEX",
                f"{index.name} of base folder {folder.name!r} has no readable weight_map",
                "re-save the base with save_pretrained, or remove the broken index",
                where=folder.name,
            ) from exc
    else:
        files = sorted(path.name for path in folder.glob("*.safetensors"))
    shapes: dict[str, tuple[int, ...]] = {}
    for name in files:
        for tensor, header in read_safetensors_header(folder / name).items():
            shapes[tensor] = header.shape
    return tensors_of(shapes, source, _folder_chat_template(folder))


def tensors_of(
    shapes: Mapping[str, tuple[int, ...]], source: str, chat_template: str | None = None
) -> BaseTensors:
    """A base's tensors from the shapes its headers declare. A checkpoint with tied embeddings
    stores no ``lm_head.weight``; the module exists all the same, with the embedding's shape,
    so an adapter may target it: it is added (``tied_head``)."""
    embeddings = [name for name in shapes if name.endswith(".embed_tokens.weight")]
    if "lm_head.weight" in shapes or len(embeddings) != 1:
        return BaseTensors(dict(shapes), source, chat_template)
    tied = {**shapes, "lm_head.weight": shapes[embeddings[0]]}
    return BaseTensors(tied, source, chat_template, tied_head=True)


def _folder_chat_template(folder: Path) -> str | None:
    """The chat template a tokenizer folder carries (``chat_template.jinja``, else
    ``tokenizer_config.json``'s ``chat_template``), read as text; None when it has none."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = folder / "tokenizer_config.json"
    try:
        template = strict_json(config.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
        template = json.dumps(template, sort_keys=True)
    return template if isinstance(template, str) else None


def _gguf_tensors(path: Path) -> BaseTensors:
    """Shapes from a GGUF header (memory-mapped, no dequantisation), under the names
    transformers' GGUF conversion gives them (its ``get_gguf_hf_weights_map`` on a model built
    on the meta device). GGUF lists dimensions innermost first, so shapes are reversed."""
    try:
        import torch
        from gguf import GGUFReader
        from transformers import AutoConfig, AutoModelForCausalLM
        from transformers.modeling_gguf_pytorch_utils import (
            TENSOR_PROCESSORS,
            TensorProcessor,
            get_gguf_hf_weights_map,
            read_field,
        )
    except ImportError as exc:
        raise SommelierEnvironmentError(
            "SOM-ADAPTER-GGUF-HEADER",
            f"could not read the tensor names of {path.name!r} from its GGUF header: "
            f"{exception_text(exc, 160)}",
            "install the 'gguf' package, or run the suite once so the model cache holds the "
            "converted copy",
            where=path.name,
        ) from exc
    try:
        reader = GGUFReader(str(path), "r")
        architecture = str(read_field(reader, "general.architecture")[0])
        config = AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
        with torch.device("meta"):
            skeleton = AutoModelForCausalLM.from_config(config)
        processor = TENSOR_PROCESSORS.get(architecture, TensorProcessor)(config=config.to_dict())
        with _memoized_name_maps():
            names = get_gguf_hf_weights_map(skeleton, processor)
        template = read_field(reader, "tokenizer.chat_template")
    except Exception as exc:  # the packages are there: the file is what cannot be read
        raise InputError(
            "SOM-ADAPTER-GGUF-READ",
            f"could not read the tensor names of {path.name!r} from its GGUF header: "
            f"{exception_text(exc, 160)}",
            "the file is truncated or not a GGUF model transformers can read: download it again",
            where=path.name,
        ) from exc
    shapes = {
        names[tensor.name]: tuple(int(dim) for dim in reversed(list(tensor.shape)))
        for tensor in reader.tensors
        if tensor.name in names
    }
    chat_template = str(template[0]) if template else None
    return tensors_of(shapes, "the GGUF header", chat_template)


@contextlib.contextmanager
def _memoized_name_maps() -> Iterator[None]:
    """Build each ``gguf.get_tensor_name_map(arch, blocks)`` once while transformers' map is
    made: it asks again for every submodule (hundreds of times), and the table is pure."""
    import gguf

    original = gguf.get_tensor_name_map
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(original)
    try:
        yield
    finally:
        gguf.get_tensor_name_map = original


def _hub_tensors(source: BaseSource) -> BaseTensors:
    """Shapes of a hub base: its snapshot in the local hub cache when there, else the hub's
    header-only safetensors metadata (HTTP range requests, no weights)."""
    from huggingface_hub import snapshot_download

    try:
        folder: Path | None = Path(
            snapshot_download(source.ref, revision=source.revision, local_files_only=True)
        )
    except Exception:  # not in the local hub cache: ask the hub for the headers below
        folder = None
    if folder is not None and any(folder.glob("*.safetensors")):
        return _folder_tensors(folder, "the hub cache's safetensors headers")
    try:
        from huggingface_hub import get_safetensors_metadata

        metadata = get_safetensors_metadata(source.ref, revision=source.revision)
        shapes = {
            name: tuple(int(dim) for dim in info.shape)
            for file in metadata.files_metadata.values()
            for name, info in file.tensors.items()
        }
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-ADAPTER-BASE-HEADERS",
            f"could not read the safetensors headers of base {source.ref!r} at revision "
            f"{source.revision!r}: {type(exc).__name__}",
            "make sure the hub is reachable or the base is in the local hub cache",
            where="model.base",
        ) from exc
    return tensors_of(shapes, "the hub's safetensors headers")


# --------------------------------------------------------------------------- the adapter


@dataclass(frozen=True)
class AdapterPreflight:
    """What the preflight found for one adapter (it is only returned when every check passed).

    ``lora_tensors`` counts the ``lora_A``/``lora_B`` (and embedding LoRA) tensors, every one of
    which maps onto one of ``mapped_modules`` base modules; ``other_tensors`` counts the rest
    (saved whole weights, DoRA magnitudes, trainable-token deltas), mapped as well; ``rank`` is
    the largest LoRA rank. ``warnings`` are the lines to print beside the arm.
    """

    arm: str
    engine: str
    peft_type: str
    lora_tensors: int
    mapped_modules: int
    rank: int
    other_tensors: int = 0
    base_source: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def line(self) -> str:
        """The one line ``sommelier check`` prints for the arm."""
        if self.peft_type != "LORA":
            count = self.lora_tensors + self.other_tensors
            return (
                f"{count} of {count} {self.peft_type} tensors map onto {self.mapped_modules} "
                "modules of the base"
            )
        text = (
            f"{self.lora_tensors} of {self.lora_tensors} LoRA tensors map onto "
            f"{self.mapped_modules} modules of the base (rank {self.rank})"
        )
        if self.other_tensors:
            text += f"; {self.other_tensors} other tensors map onto base weights"
        return text

    def identity(self) -> dict[str, Any]:
        """The JSON-safe record that goes into ``adapter_identity`` (``preflight``)."""
        return {
            "peft_type": self.peft_type,
            "lora_tensors": self.lora_tensors,
            "mapped_modules": self.mapped_modules,
            "other_tensors": self.other_tensors,
            "rank": self.rank,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class _Tensor:
    """One adapter tensor classified: its module path in the base and what part it is."""

    name: str
    module: str | None
    kind: str  # LORA_PARTS, "lora_bias", "magnitude", "token_delta", "weight" or "unknown"
    shape: tuple[int, ...]


def check_adapter(
    adapter_dir: Path,
    base: BaseTensors,
    *,
    engine: str = engines.DEFAULT_ENGINE,
    arm: str = "adapter",
    suite_base: str | None = None,
    split_tokenizer: tuple[str, str] | None = None,
    max_lora_rank: int | None = None,
    base_sha256: str | None = None,
) -> AdapterPreflight:
    """Check ``adapter_dir`` against ``base`` for ``engine``; raise the first failure.

    ``suite_base`` is ``[model].base`` (for the ``base_model_name_or_path`` warning; with
    ``base_sha256``, a ``.gguf`` base's content digest, the model cache's folder of that digest
    names the same base),
    ``split_tokenizer`` the split's ``(tokenizer_id, tokenizer_revision)`` (for the tokenizer
    warning), ``max_lora_rank`` the vLLM limit (default: the largest rank vLLM supports, since
    the vllm engine sizes ``max_lora_rank`` from the adapters). Reads headers and configs only.
    """
    folder = Path(adapter_dir)
    where = f"arms.{arm}.adapter"
    config = _adapter_config(folder, where)
    peft_type = _check_peft_type(config, engine, where)
    header = read_safetensors_header(folder / "adapter_model.safetensors", where=where)
    tensors = [_classify(name, entry.shape, base) for name, entry in sorted(header.items())]
    lora = [tensor for tensor in tensors if tensor.kind in LORA_PARTS]
    _check_mapping(tensors, lora, peft_type, where)
    modules, rank = _check_lora_shapes(lora, base, config, where)
    others = [tensor for tensor in tensors if tensor.kind not in LORA_PARTS]
    if peft_type != "LORA":
        modules = {tensor.module for tensor in tensors if tensor.module is not None}
    _check_whole_weights(others, base, where)
    _check_targets(config, base, where)
    if engine == VLLM:
        _check_vllm_limits(config, others, rank, max_lora_rank, where)
    warnings = [
        *_base_warning(config, suite_base, base_sha256),
        *_tokenizer_warning(folder, base, split_tokenizer),
    ]
    if peft_type != "LORA":
        warnings.append(f"peft type {peft_type}: modules are checked, shapes and rank are not")
    return AdapterPreflight(
        arm=arm,
        engine=engine,
        peft_type=peft_type,
        lora_tensors=len(lora),
        mapped_modules=len(modules),
        rank=rank,
        other_tensors=len(others),
        base_source=base.source,
        warnings=tuple(warnings),
    )


def _adapter_config(folder: Path, where: str) -> dict[str, Any]:
    """``adapter_config.json`` as a dict; unreadable or not an object is an InputError."""
    path = folder / "adapter_config.json"
    try:
        config = strict_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(
            "SOM-ADAPTER-CONFIG-FIELD",
            f"adapter folder {folder.name!r}: adapter_config.json is not readable JSON "
            f"({type(exc).__name__})",
            "give the adapter_config.json written by PeftModel.save_pretrained",
            where=where,
        ) from exc
    if not isinstance(config, dict):
        raise InputError(
            "SOM-ADAPTER-CONFIG-FIELD",
            f"adapter folder {folder.name!r}: adapter_config.json is not a JSON object",
            "give the adapter_config.json written by PeftModel.save_pretrained",
            where=where,
        )
    problem = config_problem(config)
    if problem is not None:
        raise InputError(
            "SOM-ADAPTER-CONFIG-FIELD",
            f"adapter folder {folder.name!r}: adapter_config.json key {problem}",
            "give the adapter_config.json written by PeftModel.save_pretrained",
            where=where,
        )
    return config


def _positive_int(value: Any) -> bool:
    return type(value) is int and value > 0


def _regex(value: Any) -> bool:
    try:
        re.compile(value)
    except (re.error, TypeError, RecursionError):
        return False
    return True


def _names_or_regex(value: Any) -> bool:
    if isinstance(value, str):
        return _regex(value)
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


_CONFIG_RULES: tuple[tuple[str, str, Any], ...] = (
    ("peft_type", "a string", lambda v: isinstance(v, str)),
    ("r", "a positive integer (not true, \"4\" or 4.0)", _positive_int),
    (
        "rank_pattern",
        "a map of module patterns to positive integers",
        lambda v: isinstance(v, dict)
        and all(_regex(k) and _positive_int(rank) for k, rank in v.items()),
    ),
    ("target_modules", "a non-empty list of module names, or a regex string", _names_or_regex),
    (
        "modules_to_save",
        "a list of module names",
        lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    ),
    ("use_dora", "true or false", lambda v: isinstance(v, bool)),
    ("fan_in_fan_out", "true or false", lambda v: isinstance(v, bool)),
    ("base_model_name_or_path", "a string", lambda v: isinstance(v, str)),
    (
        "trainable_token_indices",
        "a list of token ids or a map of them",
        lambda v: isinstance(v, (list, dict)),
    ),
)
"""The keys of ``adapter_config.json`` the preflight reads, and what PEFT writes in each (a
key absent or null is PEFT's default)."""


def config_problem(config: Mapping[str, Any]) -> str | None:
    """``'<key>' = <value> is not <what PEFT writes>`` for the first key the preflight reads
    whose value PEFT would not write (``_CONFIG_RULES``); None when every one fits."""
    for key, wanted, fits in _CONFIG_RULES:
        value = config.get(key)
        if value is None or fits(value):
            continue
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{key!r} = {shown} is not {wanted}"
    return None


def _check_peft_type(config: Mapping[str, Any], engine: str, where: str) -> str:
    """The config's ``peft_type`` (upper case) when the engine applies it; else InputError."""
    peft_type = str(config.get("peft_type") or "").upper()
    supported = ENGINE_PEFT_TYPES.get(engine)
    if supported is not None and peft_type not in supported:
        raise InputError(
            "SOM-ADAPTER-PEFT-TYPE",
            f"adapter peft_type {peft_type or '(missing)'!r} cannot be applied by the {engine} "
            f"engine, which applies {', '.join(supported)} adapters only",
            "use the transformers engine for this adapter, or train a LoRA adapter",
            where=where,
        )
    if engine == TRANSFORMERS and peft_type != "LORA" and peft_type not in _peft_types():
        raise InputError(
            "SOM-ADAPTER-PEFT-TYPE",
            f"adapter peft_type {peft_type or '(missing)'!r} is not a type the installed peft "
            "knows, so the transformers engine cannot apply it",
            "give the adapter_config.json written by PeftModel.save_pretrained, or upgrade peft",
            where=where,
        )
    return peft_type


def _peft_types() -> frozenset[str]:
    """The PEFT types the installed peft knows (imports peft: only asked for non-LoRA types)."""
    try:
        from peft.utils.peft_types import PeftType
    except Exception:
        return frozenset()
    return frozenset(member.value for member in PeftType)


def _classify(name: str, shape: tuple[int, ...], base: BaseTensors) -> _Tensor:
    """Map one adapter tensor name onto a base module by PEFT's naming rules.

    ``base_model.model.<module>.<part>[.<adapter name>][.weight]``: a LoRA part names its module
    directly; a DoRA magnitude or trainable-token delta too; any other tensor is a whole saved
    weight (``<module>[.base_layer].weight``) or maps to the longest module path the base has.
    A name without the prefix, or whose module the base lacks, has ``module`` None (its kind is
    still read from its parts, so a renamed LoRA tensor counts as a LoRA tensor).
    """
    prefixed = name.startswith(PEFT_PREFIX)
    parts = name.removeprefix(PEFT_PREFIX).split(".")

    def found(module: str) -> str | None:
        return module if prefixed and base.weight(module) is not None else None

    for index, part in enumerate(parts):
        kind = PART_KINDS.get(part)
        if kind is not None and index > 0:
            if kind in LORA_PARTS and parts[-1] == "bias":
                kind = "lora_bias"
            module = ".".join(step for step in parts[:index] if step != "base_layer")
            return _Tensor(name, found(module), kind, shape)
    if parts[-1] in ("weight", "bias"):
        module = ".".join(part for part in parts[:-1] if part != "base_layer")
        if found(module) is not None:
            return _Tensor(name, module, "weight", shape)
    for end in range(len(parts) - 1, 0, -1):
        module = ".".join(parts[:end])
        if found(module) is not None:
            return _Tensor(name, module, "unknown", shape)
    return _Tensor(name, None, "unknown", shape)


def _names(tensors: Sequence[_Tensor]) -> str:
    """The first few names and how many more (for one-line errors)."""
    shown = ", ".join(tensor.name for tensor in tensors[:SHOWN])
    more = len(tensors) - SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "")


def _check_mapping(tensors: list[_Tensor], lora: list[_Tensor], peft_type: str, where: str) -> None:
    """Every tensor maps onto a base module; none mapping or only some is an InputError."""
    counted = lora if peft_type == "LORA" else tensors
    noun = "LoRA tensors" if peft_type == "LORA" else f"{peft_type} tensors"
    if not counted:
        raise InputError(
            "SOM-ADAPTER-NO-TENSORS",
            f"adapter_model.safetensors holds no {noun}: the adapter would not change the base",
            "save the trained PeftModel with save_pretrained",
            where=where,
        )
    matched = [tensor for tensor in counted if tensor.module is not None]
    unmatched = [tensor for tensor in tensors if tensor.module is None]
    if not matched:
        raise InputError(
            "SOM-ADAPTER-NO-MATCH",
            f"0 of {len(counted)} {noun} match a module of the base: the adapter would not "
            f"apply; first: {counted[0].name}",
            "train the adapter on this base, or fix the tensor names (PEFT saves "
            "base_model.model.<module>.lora_A.weight)",
            where=where,
        )
    if unmatched:
        raise InputError(
            "SOM-ADAPTER-PARTIAL-MATCH",
            f"{len(tensors) - len(unmatched)} of {len(tensors)} adapter tensors match a module "
            f"of the base, {len(unmatched)} do not: {_names(unmatched)}",
            "the adapter would apply only in part: train it on this base, or fix those names",
            where=where,
        )


def _expected_rank(config: Mapping[str, Any], module: str) -> int:
    """The rank PEFT gives ``module``: its ``rank_pattern`` entry (PEFT's ``get_pattern_key``
    rule: the pattern matches the module path, or a dotted suffix of it), else ``r``."""
    pattern = config.get("rank_pattern") or {}
    if isinstance(pattern, Mapping):
        for key, rank in pattern.items():
            if re.match(rf"(.*\.)?({key})$", module):
                return int(rank)
    return int(config.get("r") or 0)


def _check_lora_shapes(
    lora: list[_Tensor], base: BaseTensors, config: Mapping[str, Any], where: str
) -> tuple[set[str], int]:
    """A and B of each module agree with the base weight and with each other and the config.

    Returns the modules and the largest rank. For a Linear weight ``(out, in)``: A is
    ``(r, in)``, B ``(out, r)``; an embedding LoRA and ``fan_in_fan_out`` (Conv1D) read the base
    shape the other way round.
    """
    by_module: dict[str, dict[str, _Tensor]] = {}
    for tensor in lora:
        assert tensor.module is not None
        side = "A" if tensor.kind.endswith("A") else "B"
        by_module.setdefault(tensor.module, {})[side] = tensor
    largest = 0
    for module, pair in sorted(by_module.items()):
        if set(pair) != {"A", "B"}:
            missing = ({"A", "B"} - set(pair)).pop()
            raise InputError(
                "SOM-ADAPTER-INCOMPLETE",
                f"module {module} has a LoRA {({'A', 'B'} - {missing}).pop()} tensor but no "
                f"lora_{missing}: the adapter file is incomplete",
                "re-save the adapter with save_pretrained",
                where=where,
            )
        a, b = pair["A"].shape, pair["B"].shape
        weight = base.weight(module) or ()
        if len(a) < 2 or len(b) < 2 or len(weight) < 2:
            raise InputError(
                "SOM-ADAPTER-SHAPE",
                f"{pair['A'].name} has shape {list(a)} and lora_B {list(b)}; the base weight of "
                f"{module} has {list(weight)}: not a LoRA pair on a matrix",
                "train the adapter on this base",
                where=where,
            )
        transposed = pair["A"].kind == "lora_embedding_A" or bool(config.get("fan_in_fan_out"))
        out_size, in_size = (weight[1], weight[0]) if transposed else (weight[0], weight[1])
        if a[1] != in_size or b[0] != out_size:
            raise InputError(
                "SOM-ADAPTER-SHAPE",
                f"{module}: LoRA A {list(a)} x B {list(b)} gives a ({b[0]}, {a[1]}) update, the "
                f"base weight is ({out_size}, {in_size})",
                "train the adapter on this base (another size of the same family has other shapes)",
                where=where,
            )
        expected = _expected_rank(config, module)
        if a[0] != b[1] or a[0] != expected:
            raise InputError(
                "SOM-ADAPTER-RANK",
                f"{module}: lora_A has rank {a[0]}, lora_B {b[1]}, adapter_config.json says "
                f"r = {expected}",
                "re-save the adapter with save_pretrained (its config and tensors disagree)",
                where=where,
            )
        largest = max(largest, a[0])
    return set(by_module), largest


def _check_whole_weights(others: list[_Tensor], base: BaseTensors, where: str) -> None:
    """A saved whole weight has the base weight's shape; an embedding or LM head with another
    number of rows is a resized vocabulary, which no engine can put on this base."""
    for tensor in others:
        if tensor.kind != "weight" or tensor.module is None or not tensor.name.endswith("weight"):
            continue
        weight = base.weight(tensor.module) or ()
        if tensor.shape == weight:
            continue
        if _is_embedding(tensor.module) and tensor.shape[1:] == weight[1:]:
            raise InputError(
                "SOM-ADAPTER-RESIZED-EMBEDDING",
                f"{tensor.name} has {tensor.shape[0]} rows, the base's {tensor.module} "
                f"{weight[0]}: the adapter was trained with a resized vocabulary",
                "evaluate against the resized base (save it with its tokenizer and use it as "
                "[model].base)",
                where=where,
            )
        raise InputError(
            "SOM-ADAPTER-SHAPE",
            f"{tensor.name} has shape {list(tensor.shape)}, the base's {tensor.module}.weight "
            f"{list(weight)}",
            "train the adapter on this base",
            where=where,
        )


def _is_embedding(module: str) -> bool:
    """Whether a module path names an input embedding or an LM head."""
    return module.rsplit(".", 1)[-1] in SAVED_EMBEDDING_SUFFIXES


def _module_paths(base: BaseTensors) -> list[str]:
    """The base's module paths (tensor names without their last part)."""
    return sorted({name.rsplit(".", 1)[0] for name in base.shapes})


def _check_targets(config: Mapping[str, Any], base: BaseTensors, where: str) -> None:
    """Every name of a list ``target_modules`` is the last part(s) of a base module (PEFT's
    rule); a regex string must match one. ``all-linear`` and absent targets are not checked."""
    targets = config.get("target_modules")
    modules = _module_paths(base)
    if isinstance(targets, str):
        if targets == "all-linear" or any(re.fullmatch(targets, m) for m in modules):
            return
        missing = [targets]
    elif isinstance(targets, list):
        missing = [
            str(target)
            for target in targets
            if not any(m == target or m.endswith(f".{target}") for m in modules)
        ]
    else:
        return
    if missing:
        raise InputError(
            "SOM-ADAPTER-TARGET",
            f"adapter_config.json target_modules name no module of the base: "
            f"{', '.join(missing[:SHOWN])}",
            "peft would refuse to load it: train the adapter on this base",
            where=where,
        )


def _check_vllm_limits(
    config: Mapping[str, Any],
    others: list[_Tensor],
    rank: int,
    max_lora_rank: int | None,
    where: str,
) -> None:
    """What vLLM's LoRA path cannot apply: each an InputError naming the feature."""
    limit = max_lora_rank if max_lora_rank is not None else VLLM_LORA_RANKS[-1]
    if rank > limit:
        raise InputError(
            "SOM-ADAPTER-VLLM-UNSUPPORTED",
            f"LoRA rank {rank} is above the vllm engine's max_lora_rank {limit} "
            f"(vLLM supports {', '.join(map(str, VLLM_LORA_RANKS))})",
            "use the transformers engine for this adapter",
            where=where,
        )
    if config.get("use_dora") or any(tensor.kind == "magnitude" for tensor in others):
        raise InputError(
            "SOM-ADAPTER-VLLM-UNSUPPORTED",
            "the adapter uses DoRA (use_dora), which the vllm engine cannot apply",
            "use the transformers engine for this adapter",
            where=where,
        )
    tokens = [tensor for tensor in others if tensor.kind == "token_delta"]
    if config.get("trainable_token_indices") or tokens:
        raise InputError(
            "SOM-ADAPTER-VLLM-UNSUPPORTED",
            "the adapter trains token embeddings (trainable_token_indices), which the vllm "
            "engine cannot apply",
            "use the transformers engine for this adapter",
            where=where,
        )
    if config.get("modules_to_save"):
        raise InputError(
            "SOM-ADAPTER-VLLM-UNSUPPORTED",
            f"the adapter replaces whole modules (modules_to_save: "
            f"{', '.join(map(str, config['modules_to_save']))}), which the vllm engine cannot "
            "apply",
            "use the transformers engine for this adapter",
            where=where,
        )
    saved = [tensor for tensor in others if tensor.kind == "weight"]
    if saved:
        raise InputError(
            "SOM-ADAPTER-VLLM-EMBEDDING",
            f"the adapter carries whole embedding, LM-head or other module weights "
            f"({_names(saved)}), which the vllm engine cannot apply",
            "use the transformers engine for this adapter, or save the adapter with "
            "save_embedding_layers=False",
            where=where,
        )


# --------------------------------------------------------------------------- warnings


def _base_warning(
    config: Mapping[str, Any], suite_base: str | None, base_sha256: str | None = None
) -> list[str]:
    """A line when the adapter names another base than the suite's. Two references name the
    same base when their last path parts agree (moved folders, a hub id and its local copy),
    or when the adapter names the model cache's converted copy of the suite's ``.gguf`` base
    (``inference.modelcache``: a folder named by the GGUF file's digest, ``base_sha256``; a
    model loaded through the cache names it, issue 41); the line quotes a hub id as the file or
    the suite writes it, a path by its last part only, so no machine path reaches it."""
    named = config.get("base_model_name_or_path")
    if not suite_base or not isinstance(named, str) or not named:
        return []
    if _last_part(named) in (_last_part(suite_base), base_sha256):
        return []
    return [
        f"adapter_config.json names base_model_name_or_path {_shown(named)!r}, the "
        f"suite's base is {_shown(suite_base)!r}: check the adapter was trained on this base"
    ]


def _shown(reference: str) -> str:
    """A reference as a line may quote it: a hub id whole, a path by its last part."""
    return reference if is_hub_id(reference) else _last_part(reference)


def _last_part(reference: str) -> str:
    """A reference's last path part: ``org/name`` -> ``name``, ``pkg:p/x.gguf`` -> ``x.gguf``."""
    return PurePosixPath(reference.replace("\\", "/").rstrip("/")).name or reference


def _tokenizer_warning(
    folder: Path, base: BaseTensors, split_tokenizer: tuple[str, str] | None
) -> list[str]:
    """A line when the adapter folder ships tokenizer files that differ from the split's.

    Where the split's tokenizer is a folder, the adapter's tokenizer files are compared by the
    same digest (``modelref.folder_files_sha256``); where it is a GGUF file or a hub revision
    (no folder digest to compare), the adapter's chat template is compared with the base's.
    """
    present = [name for name in modelref.TOKENIZER_FILES if (folder / name).is_file()]
    if not present:
        return []
    line = "the split was formatted with another chat template than the adapter folder carries"
    if split_tokenizer is not None and split_tokenizer[0].startswith("dir:"):
        digest = f"sha256:{modelref.folder_files_sha256(folder, modelref.TOKENIZER_FILES)}"
        if digest == split_tokenizer[1]:
            return []
        return [
            f"{line} (split tokenizer {split_tokenizer[0]} {split_tokenizer[1][:19]}, "
            f"adapter tokenizer files {digest[:19]})"
        ]
    own = _folder_chat_template(folder)
    if own is None or own == base.chat_template:
        return []
    return [f"{line} (the adapter's chat template differs from the base's)"]


# --------------------------------------------------------------------------- a suite


def split_tokenizer_identity(path: Path) -> tuple[str, str] | None:
    """``(tokenizer_id, tokenizer_revision)`` of a formatted split's first row, or None when
    the file cannot be read that far (``data.split.load.load_split`` reports its errors)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = strict_json(line)
                    return str(row["tokenizer_id"]), str(row["tokenizer_revision"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


@dataclass(frozen=True)
class SuitePreflight:
    """The base's tensors and, per adapter arm, its preflight or the error it raised."""

    base: BaseTensors
    arms: dict[str, AdapterPreflight | SommelierError]

    @property
    def first_error(self) -> SommelierError | None:
        """The first arm's error, in arm order (None when every arm passed)."""
        return next((o for o in self.arms.values() if isinstance(o, SommelierError)), None)


def preflight_suite(suite: Suite, engine: str | None = None) -> SuitePreflight:
    """Run the preflight for every adapter arm of a loaded suite, nothing loaded.

    ``engine`` is the engine the arms will run on (default: the suite's ``[engine] name``; the
    session passes ``--sommelier-engine`` when given). The base and the adapter folders are
    resolved the way the engines resolve them (``engines.base_ref``, ``engines.adapter_refs``).
    A base whose headers cannot be read raises; an arm's failure is recorded for that arm and
    the others are still checked (an exception that is not a SommelierError too, as
    ``SOM-ADAPTER-PREFLIGHT`` naming the arm).
    """
    suite_dir = Path(suite.path).parent
    base_ref = engines.base_ref(suite.model, suite_dir)
    base = read_base(base_ref.source)
    gguf = base_ref.source.kind == "gguf"
    split_tokenizer = split_tokenizer_identity(Path(suite.test_split))
    outcomes: dict[str, AdapterPreflight | SommelierError] = {}
    for key, arm in suite.arms.items():
        if arm.adapter is None:
            continue
        try:
            ref = engines.adapter_refs({key: arm}, suite_dir)[key]
            assert ref.folder is not None
            outcomes[key] = check_adapter(
                ref.folder,
                base,
                engine=engine or suite.engine.name,
                arm=key,
                suite_base=suite.model.base,
                split_tokenizer=split_tokenizer,
                base_sha256=base_ref.identity.get("sha256") if gguf else None,
            )
        except SommelierError as error:
            outcomes[key] = error
        except Exception as exc:  # a reader's bug is this arm's line, never the base's
            outcomes[key] = EvaluationError(
                "SOM-ADAPTER-PREFLIGHT",
                f"the preflight of arm {key!r}'s adapter failed: {exception_text(exc, 160)}",
                "run sommelier check SUITE; re-save the adapter with save_pretrained",
                where=f"arms.{key}.adapter",
            )
    return SuitePreflight(base, outcomes)


def session_preflight(
    suite: Suite, engine: str | None = None
) -> dict[str, AdapterPreflight | SommelierError]:
    """Every adapter arm's preflight outcome, for a session or ``sommelier parity``: a base
    whose headers cannot be read is every adapter arm's error (an adapter that cannot be
    checked is not trusted), never a raise."""
    adapters = [key for key, arm in suite.arms.items() if arm.adapter is not None]
    if not adapters:
        return {}
    try:
        return dict(preflight_suite(suite, engine).arms)
    except SommelierError as error:
        return dict.fromkeys(adapters, error)


def with_preflight(
    generators: Mapping[str, Any], outcomes: Mapping[str, AdapterPreflight | SommelierError]
) -> dict[str, SommelierError]:
    """Record each passed arm's preflight in its generator's ``adapter_identity`` (under
    ``preflight``: the counts and warnings); return the arms whose preflight failed, with their
    error (those generators are left as they are and must not be used)."""
    failed: dict[str, SommelierError] = {}
    for arm, outcome in outcomes.items():
        if isinstance(outcome, SommelierError):
            failed[arm] = outcome
            continue
        generator = generators.get(arm)
        identity = getattr(generator, "adapter_identity", None)
        if generator is not None and isinstance(identity, dict):
            generator.adapter_identity = {**identity, PREFLIGHT_KEY: outcome.identity()}
    return failed


def check_loaded_modules(
    adapter_identity: Mapping[str, Any] | None, loaded: int | None, *, arm: str, engine: str
) -> None:
    """After load: the number of modules the engine put the adapter's LoRA on must be the
    preflight's ``mapped_modules``; an EvaluationError otherwise. Nothing is checked when the
    engine does not expose the count (``loaded`` None), when the identity holds no preflight
    record (a generator made outside a session) or for a non-LoRA adapter."""
    record = (adapter_identity or {}).get(PREFLIGHT_KEY)
    if loaded is None or not isinstance(record, Mapping) or record.get("peft_type") != "LORA":
        return
    expected = int(record.get("mapped_modules", -1))
    if loaded != expected:
        raise EvaluationError(
            "SOM-ADAPTER-LOADED-COUNT",
            f"the {engine} engine applied the adapter's LoRA to {loaded} modules, the "
            f"preflight mapped {expected} from its tensors: the adapter "
            f"{'applies only in part' if loaded < expected else 'touches more than it carries'}",
            "run sommelier check SUITE; check the adapter's target_modules and tensor names "
            "against the base",
            where=f"arms.{arm}.adapter",
        )
