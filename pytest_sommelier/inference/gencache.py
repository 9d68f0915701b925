"""The generation cache: a rerun re-scores stored outputs instead of regenerating them.

``GenerationCache(folder)`` stores one completion per key as a small JSON file::

    <folder>/<key[:2]>/<key>.json   {"schema_version", "key_fields", "output",
                                     "finish_reason", "generated_tokens"}

The key is ``sha256_json(key_fields)`` where ``key_fields`` (see :meth:`GenerationCache.
key_fields`) holds everything that can change a greedy output: the generator's class, its
``model_identity`` (base, tokenizer, dtype) and ``adapter_identity``, the prompt digest, the
decoding dict (``batch_size`` included), the device kind (and the GPU's name on CUDA), the
torch/transformers/peft versions and a generator's optional ``cache_identity``. The preflight's
record in ``adapter_identity`` (``core.report_identity.PREFLIGHT_KEY``) is left out: it is
derived from the adapter files the identity already pins.

Invariants kept here:

- an entry is whole or absent: it is written to a temporary file in its own folder, flushed,
  fsynced and renamed over the final name; temporary files are never read;
- ``get`` returns exactly the ``str`` that ``put`` stored, and only when the entry's stored
  ``key_fields`` equal the live ones (a hash collision or a tampered entry is a miss);
  ``get_completion`` returns it with the finish reason and token count stored beside it (an
  entry written before they were stored reads as ``unknown``; neither is part of the key);
- a corrupt, unreadable or mismatched entry is a miss and is removed, never an error;
- only ``str`` outputs are stored (anything else is an :class:`InvariantError`);
- the cache never fails an evaluation: an unwritable folder or a failing write is a warning
  (once per cache) and the output is simply not stored; key fields that are not JSON-safe make
  that generator uncacheable (a miss every time), with the same warning.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sommelier.core.canonical import canonical_json_text, sha256_text
from pytest_sommelier.core.report_identity import adapter_content
from pytest_sommelier.core.types import FINISH_REASONS, FINISH_UNKNOWN, Completion
from pytest_sommelier.data.atomic import write_atomic
from pytest_sommelier.errors import InvariantError
from pytest_sommelier.inference.device import device_of
from pytest_sommelier.inference.protocol import Generator, cache_identity_of

CACHE_SCHEMA = "sommelier.generation_cache.v1"
"""Stored in every entry and in its key fields: a format change invalidates old entries."""

LIBRARIES = ("torch", "transformers", "peft")


class GenerationCacheWarning(UserWarning):
    """The generation cache could not store or key an output (the run itself goes on)."""


@dataclass
class CacheStats:
    """Counters of one cache instance (for benchmarks and diagnostics)."""

    hits: int = 0
    misses: int = 0
    writes: int = 0
    removed: int = 0
    write_errors: int = 0


def library_versions() -> dict[str, str]:
    """Versions of torch, transformers and peft, without importing them when not loaded.

    When all three are already imported (the transformers engine has run), their own
    ``__version__``; otherwise the installed distributions' versions (``importlib.metadata``),
    ``"absent"`` for one not installed, so a fake backend does not pay for importing
    transformers. Either way the value only ever changes when a library does, which makes old
    entries miss, never hit wrongly.
    """
    imported = {name: getattr(sys.modules.get(name), "__version__", None) for name in LIBRARIES}
    if all(version is not None for version in imported.values()):
        return {name: str(version) for name, version in imported.items()}
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def device_fields(generator: Any) -> dict[str, Any]:
    """The device kind a generator runs on (``cpu``, ``cuda``, ...) and, on CUDA, the GPU name.

    The kind is ``inference.device.device_of``'s. The device count is left out: it does not
    change one process's outputs.
    """
    device = getattr(generator, "device", None)
    kind = device_of(generator)["device"]
    fields: dict[str, Any] = {"kind": kind}
    if kind == "cuda" and "torch" in sys.modules:
        fields["name"] = _cuda_name(device)
    return fields


def _cuda_name(device: Any) -> str:
    """The CUDA device's product name (numerics differ across GPU models), or ``"unknown"``."""
    try:
        import torch

        target = torch.device(str(device)) if device is not None else torch.cuda.current_device()
        return str(torch.cuda.get_device_name(target))
    except Exception:
        return "unknown"


def generator_class(generator: Any) -> str:
    """``module.QualName`` of the generator's class (a fake and a real backend never share)."""
    kind = type(generator)
    return f"{kind.__module__}.{kind.__qualname__}"


class GenerationCache:
    """A folder of generation outputs keyed by everything that can change them.

    The runner calls ``get`` before generating an example and ``put`` after; see the module
    docstring for the invariants.
    """

    def __init__(self, folder: Path, *, where: str = "the generation cache") -> None:
        from pytest_sommelier.data.store.outputs import FOLDER_KIND, check_output

        # the one output-path rule: never inside a run store or a stored run (``where`` names
        # the option or argument that chose the folder); a file where the folder should be is
        # the cache's own trouble (it warns once and stores nothing, never failing the run)
        target = Path(folder)
        blocked = target.exists() and not target.is_dir()
        self.folder = target if blocked else check_output(target, kind=FOLDER_KIND, where=where)
        self.stats = CacheStats()
        self._versions: dict[str, str] | None = None
        self._warned = False

    # -- keys -----------------------------------------------------------------------------------

    def versions(self) -> dict[str, str]:
        """The library versions, computed once per cache instance."""
        if self._versions is None:
            self._versions = library_versions()
        return self._versions

    def key_fields(
        self,
        generator: Generator,
        prompt_sha256: str,
        decoding: Mapping[str, Any],
        *,
        batch_prompts: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Everything the key is the digest of (a JSON-safe dict once canonicalised).

        ``batch_prompts`` (optional): the ordered prompt digests of the fixed batch the example
        is generated in; when given with ``batch_size > 1`` it joins the key, because padding
        makes an output depend on its batch-mates.
        """
        fields: dict[str, Any] = {
            "schema_version": CACHE_SCHEMA,
            "generator_class": generator_class(generator),
            "model_identity": generator.model_identity,
            "adapter_identity": adapter_content(generator.adapter_identity),
            "cache_identity": cache_identity_of(generator),
            "prompt_sha256": prompt_sha256,
            "decoding": dict(decoding),
            "device": device_fields(generator),
            "libraries": self.versions(),
        }
        if batch_prompts is not None and int(decoding.get("batch_size", 1)) > 1:
            fields["batch_prompts"] = list(batch_prompts)
        return fields

    def entry_path(self, key: str) -> Path:
        """``<folder>/<key[:2]>/<key>.json``."""
        return self.folder / key[:2] / f"{key}.json"

    def _locate(
        self,
        generator: Generator,
        prompt_sha256: str,
        decoding: Mapping[str, Any],
        batch_prompts: Sequence[str] | None,
    ) -> tuple[str, Path] | None:
        """The one key rule: ``(canonical key fields, entry path)`` with the entry named by
        ``sha256`` of the canonical JSON of :meth:`key_fields`; None (warned) when the fields
        are not JSON-safe."""
        fields = self.key_fields(generator, prompt_sha256, decoding, batch_prompts=batch_prompts)
        canonical = self._canonical(fields)
        if canonical is None:
            return None
        return canonical, self.entry_path(sha256_text(canonical))

    def _canonical(self, fields: dict[str, Any]) -> str | None:
        """Canonical JSON of the key fields, or None (warned) when they are not JSON-safe."""
        try:
            return canonical_json_text(fields)
        except (TypeError, ValueError) as exc:
            self._warn(f"key fields are not JSON-safe ({exc}); this output is not cached")
            return None

    # -- the runner's API -------------------------------------------------------------------------

    def get(
        self,
        generator: Generator,
        prompt_sha256: str,
        decoding: Mapping[str, Any],
        *,
        batch_prompts: Sequence[str] | None = None,
    ) -> str | None:
        """The stored output for this key, or None (a miss; a bad entry is removed)."""
        found = self.get_completion(
            generator, prompt_sha256, decoding, batch_prompts=batch_prompts
        )
        return None if found is None else found.text

    def get_completion(
        self,
        generator: Generator,
        prompt_sha256: str,
        decoding: Mapping[str, Any],
        *,
        batch_prompts: Sequence[str] | None = None,
    ) -> Completion | None:
        """The stored completion for this key (output, finish reason, token count), or None."""
        located = self._locate(generator, prompt_sha256, decoding, batch_prompts)
        if located is None:
            self.stats.misses += 1
            return None
        canonical, path = located
        output = self._read(path, canonical)
        if output is None:
            self.stats.misses += 1
        else:
            self.stats.hits += 1
        return output

    def put(
        self,
        generator: Generator,
        prompt_sha256: str,
        decoding: Mapping[str, Any],
        output: str,
        *,
        batch_prompts: Sequence[str] | None = None,
        finish_reason: str = FINISH_UNKNOWN,
        generated_tokens: int | None = None,
        reasoning: str | None = None,
        has_content: bool = True,
    ) -> None:
        """Store ``output`` atomically under its key, with its finish reason and token count
        and, from an engine with its own reasoning channel, that reasoning and whether a
        content came with it (a failing write is a warning, no entry)."""
        if not isinstance(output, str):
            raise InvariantError(
                "SOM-CACHE-NONSTR",
                f"refusing to cache a {type(output).__name__} output (only str is stored)",
                "a generator must return completions as strings",
                where=f"prompt {prompt_sha256[:12]}",
            )
        located = self._locate(generator, prompt_sha256, decoding, batch_prompts)
        if located is None:
            return
        canonical, path = located
        entry = {
            "schema_version": CACHE_SCHEMA,
            "key_fields": json.loads(canonical),
            "output": output,
            "finish_reason": finish_reason,
            "generated_tokens": generated_tokens,
        }
        if reasoning is not None:  # core.reasoning: the engine's channel ("engine")
            entry["reasoning"] = reasoning
            entry["has_content"] = has_content
        text = json.dumps(entry, sort_keys=True, ensure_ascii=False, allow_nan=False)
        try:
            write_atomic(path, text)
        except OSError as exc:
            self.stats.write_errors += 1
            self._warn(f"cannot write {path}: {exc.strerror or exc}; this output is not cached")
            return
        self.stats.writes += 1

    # -- internals --------------------------------------------------------------------------------

    def _read(self, path: Path, canonical: str) -> Completion | None:
        """The entry's completion when it is whole and its key fields match; else None
        (removed). An entry without a finish reason (written before they were stored) reads
        as ``unknown``; one with a finish reason or count that is not one is bad."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError):
            self._remove(path)
            return None
        try:
            entry = json.loads(text)
            stored = canonical_json_text(entry["key_fields"])
            output = entry["output"]
            finish = entry.get("finish_reason", FINISH_UNKNOWN)
            tokens = entry.get("generated_tokens")
            reasoning = entry.get("reasoning")
            has_content = entry.get("has_content", True)
            valid = (
                entry.get("schema_version") == CACHE_SCHEMA
                and stored == canonical
                and isinstance(output, str)
                and finish in FINISH_REASONS
                and (tokens is None or (type(tokens) is int and tokens >= 0))
                and (reasoning is None or isinstance(reasoning, str))
                and isinstance(has_content, bool)
            )
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            valid = False
        if not valid:
            self._remove(path)
            return None
        return Completion(output, finish, tokens, reasoning, has_content)

    def _remove(self, path: Path) -> None:
        """Remove a bad entry (best effort: a read-only cache just keeps missing)."""
        try:
            path.unlink(missing_ok=True)
            self.stats.removed += 1
        except OSError:
            pass

    def _warn(self, message: str) -> None:
        """Warn once per cache instance."""
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"sommelier generation cache ({self.folder}): {message}",
                GenerationCacheWarning,
                stacklevel=3,
            )
