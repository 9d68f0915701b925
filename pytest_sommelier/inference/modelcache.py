"""A load cache for GGUF bases: dequantize once, then read a safetensors copy.

Loading a ``.gguf`` file with transformers dequantizes every tensor (tens of seconds for the demo
model). The first load of a given file converts it and writes a safetensors copy of the model and
its tokenizer into a user cache folder::

    $SOMMELIER_CACHE_DIR/<sha256 of the gguf>/          (when the variable is set)
    ~/.cache/pytest-sommelier/models/<sha256 of the gguf>/

Later loads (in any process) read the copy. Set ``SOMMELIER_MODEL_CACHE=0`` to bypass the cache
and dequantize the GGUF on every load.

Invariants kept here:

- a cache folder is complete or absent: it is written into a temporary sibling and renamed into
  place, and its marker file (written last) must name the same GGUF digest, cache format and
  transformers version, or the folder is rebuilt;
- one process converts a given GGUF at a time (a lock file beside the entry); the others wait
  and read the entry it published;
- every load through the cache, the first included, reads the safetensors copy, so the first
  and later loads return the same weights and tokenizer and give token-identical outputs;
- the caller's identity for the model stays the GGUF's content digest; nothing here changes it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.errors import SommelierEnvironmentError, exception_text

CACHE_DIR_ENV = "SOMMELIER_CACHE_DIR"
CACHE_SWITCH_ENV = "SOMMELIER_MODEL_CACHE"
CACHE_FORMAT = 1
MARKER_NAME = "sommelier-model-cache.json"

# A converter turns a GGUF file into (model, tokenizer) held in memory; it is only called on a
# cache miss. A loader reads a saved folder back as (model, tokenizer).
Converter = Callable[[Path], tuple[Any, Any]]
Loader = Callable[[Path, Any], tuple[Any, Any]]


@dataclass(frozen=True)
class CachedLoad:
    """What one load through the cache returned and how (``status``: hit, miss or disabled)."""

    model: Any
    tokenizer: Any
    status: str
    folder: Path | None


def cache_root() -> Path:
    """The folder that holds one sub-folder per GGUF digest."""
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        from pytest_sommelier.data.store.outputs import FOLDER_KIND, check_output

        # the variable goes through the one output-path rule, as every path written does
        return check_output(
            Path(configured).expanduser(), kind=FOLDER_KIND, where=f"${CACHE_DIR_ENV}"
        )
    return Path.home() / ".cache" / "pytest-sommelier" / "models"


def cache_enabled() -> bool:
    """False when ``SOMMELIER_MODEL_CACHE`` is set to 0, false, no or off."""
    value = os.environ.get(CACHE_SWITCH_ENV, "1").strip().lower()
    return value not in {"0", "false", "no", "off"}


def _transformers_version() -> str:
    """The installed transformers version (part of the marker: conversions may change), read
    from its distribution's metadata: the preflight checks the marker of a cached rerun that
    loads no model, and importing transformers to read it cost that run ~2 s (issue 40); the
    module's own ``__version__`` only where no distribution is installed (a source tree)."""
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        import transformers

        return str(transformers.__version__)


def expected_marker(gguf_sha256: str) -> dict[str, Any]:
    """The marker a valid cache folder for this GGUF digest holds."""
    return {
        "format": CACHE_FORMAT,
        "gguf_sha256": gguf_sha256,
        "transformers": _transformers_version(),
    }


def is_valid_cache(folder: Path, gguf_sha256: str) -> bool:
    """True when ``folder`` is a complete cache entry for this digest under this runtime."""
    marker = folder / MARKER_NAME
    try:
        recorded = strict_json(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return recorded == expected_marker(gguf_sha256)


def dequantize_gguf(gguf_path: Path) -> tuple[Any, Any]:
    """Load a GGUF file with transformers (float32, CPU): the expensive step the cache saves."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, trust_remote_code=False, **dtype_kwargs(torch.float32)
    )
    return model, tokenizer


def load_saved_copy(folder: Path, dtype: Any) -> tuple[Any, Any]:
    """Read a cache folder back (safetensors only, no remote code) in ``dtype`` on CPU."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    model = AutoModelForCausalLM.from_pretrained(
        str(folder), use_safetensors=True, trust_remote_code=False, **dtype_kwargs(dtype)
    )
    return model, tokenizer


def dtype_kwargs(dtype: Any) -> dict[str, Any]:
    """The from_pretrained dtype keyword: ``dtype`` from transformers 4.56, else ``torch_dtype``."""
    major, minor = (int(part) for part in _transformers_version().split(".")[:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


def save_plain_copy(model: Any, tokenizer: Any, folder: Path) -> None:
    """Write a dequantized model and its tokenizer as a plain safetensors checkpoint.

    A model loaded from GGUF carries a GGUF quantizer that refuses to serialize; the weights are
    already dequantized, so the quantizer and its config entry are dropped before saving.
    """
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(folder), safe_serialization=True)
    tokenizer.save_pretrained(str(folder))


def build_cache_entry(
    gguf_path: Path, gguf_sha256: str, folder: Path, converter: Converter = dequantize_gguf
) -> None:
    """Convert ``gguf_path`` and publish it at ``folder`` atomically (temp dir + rename).

    When another process publishes the same entry first, its copy is kept and ours discarded.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        model, tokenizer = converter(gguf_path)
        save_plain_copy(model, tokenizer, staging)
        del model
        marker = json.dumps(expected_marker(gguf_sha256), indent=2, sort_keys=True) + "\n"
        (staging / MARKER_NAME).write_text(marker, encoding="utf-8")
        _publish(staging, folder, gguf_sha256)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, folder: Path, gguf_sha256: str) -> None:
    """Rename ``staging`` to ``folder``, moving a stale entry aside first; keep a valid rival."""
    if folder.exists() and not is_valid_cache(folder, gguf_sha256):
        trash = Path(tempfile.mkdtemp(prefix=f".{folder.name}.stale.", dir=folder.parent))
        try:
            os.replace(folder, trash / "entry")
        except OSError:
            pass
        shutil.rmtree(trash, ignore_errors=True)
    try:
        os.rename(staging, folder)
    except OSError:
        if not is_valid_cache(folder, gguf_sha256):
            raise


def load_gguf(
    gguf_path: Path,
    gguf_sha256: str,
    dtype: Any,
    *,
    use_cache: bool | None = None,
    root: Path | None = None,
    converter: Converter = dequantize_gguf,
    loader: Loader = load_saved_copy,
) -> CachedLoad:
    """Load a GGUF base as (model, tokenizer), through the safetensors cache when enabled.

    ``use_cache`` None follows ``SOMMELIER_MODEL_CACHE``. A cache folder that cannot be written
    falls back to a direct load with a warning; a converter failure raises
    SommelierEnvironmentError naming the file.
    """
    if use_cache is None:
        use_cache = cache_enabled()
    if not use_cache:
        model, tokenizer = _convert(converter, gguf_path)
        return CachedLoad(model.to(dtype), tokenizer, "disabled", None)
    folder = (root if root is not None else cache_root()) / gguf_sha256
    status = "hit"
    if not is_valid_cache(folder, gguf_sha256):
        try:
            with _build_lock(folder.parent, gguf_sha256):
                if not is_valid_cache(folder, gguf_sha256):  # a rival may have built it
                    status = "miss"
                    build_cache_entry(
                        gguf_path, gguf_sha256, folder, lambda path: _convert(converter, path)
                    )
        except OSError as exc:
            warnings.warn(
                f"pytest-sommelier: could not write the model cache at {folder} ({exc}); "
                "loading the GGUF directly",
                stacklevel=2,
            )
            model, tokenizer = _convert(converter, gguf_path)
            return CachedLoad(model.to(dtype), tokenizer, "disabled", None)
    model, tokenizer = loader(folder, dtype)
    return CachedLoad(model, tokenizer, status, folder)


class ResolvedBase(Protocol):
    """What :func:`load_base_model` reads of a resolved base (``engines.BaseSource``, which
    imports this module: the shape, not the class)."""

    @property
    def kind(self) -> str: ...  # "hub", "directory" or "gguf"
    @property
    def ref(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def revision(self) -> str | None: ...


def load_base_model(source: ResolvedBase, dtype: Any, suite_dir: Path) -> tuple[Any, Any, str]:
    """The one loader of a resolved base (``engines.resolve_base``) as (model, tokenizer, load
    status), on CPU in ``dtype``: a ``.gguf`` file through this cache (:func:`load_gguf`,
    status hit, miss or disabled), a folder or a hub id pinned to its revision with
    ``transformers`` (safetensors only, no remote code; status the source's kind). The
    transformers engine loads its base so, and so does ``training.load_base``."""
    from pytest_sommelier.data.digests import sha256_path
    from pytest_sommelier.inference import modelref

    if source.kind == "gguf":
        path = Path(source.location)
        loaded = load_gguf(path, sha256_path(path), dtype)
        return loaded.model, loaded.tokenizer, loaded.status
    from transformers import AutoModelForCausalLM

    tokenizer = modelref.load_tokenizer(source.ref, revision=source.revision, base_dir=suite_dir)
    kwargs: dict[str, Any] = {"use_safetensors": True, "trust_remote_code": False}
    kwargs.update(dtype_kwargs(dtype))
    if source.kind == "hub":
        kwargs["revision"] = source.revision
    try:
        model = AutoModelForCausalLM.from_pretrained(source.location, **kwargs)
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-BACKEND-MODEL-LOAD",
            f"could not load the base model: {exception_text(exc, 200)}",
            "for a hub id, make sure it is cached or the hub is reachable and the revision "
            "exists; for a folder, check it holds config.json and safetensors weights",
            where="model.base",
        ) from exc
    return model, tokenizer, source.kind


def load_base_tokenizer(source: ResolvedBase, suite_dir: Path) -> Any:
    """The tokenizer :func:`load_base_model` returns for ``source``, without the weights: a
    ``.gguf`` base's from this cache's folder when it holds a valid copy (a tokenizer read
    from the GGUF file itself parses the whole file: seconds for the demo model, per call),
    else ``modelref.load_tokenizer`` (the GGUF file, a folder, a hub id at its revision)."""
    from pytest_sommelier.inference import modelref

    if source.kind == "gguf" and cache_enabled():
        from pytest_sommelier.data.digests import sha256_path

        digest = sha256_path(source.location)
        folder = cache_root() / digest
        if is_valid_cache(folder, digest):
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=False)
    return modelref.load_tokenizer(source.ref, revision=source.revision, base_dir=suite_dir)


@contextlib.contextmanager
def _build_lock(root: Path, name: str) -> Iterator[None]:
    """Hold an exclusive lock while one process converts a GGUF (POSIX flock; none elsewhere).

    Other processes (pytest-xdist workers) wait, then find the entry built and read it.
    """
    root.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the atomic rename alone keeps entries whole
        yield
        return
    with open(root / f"{name}.lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _convert(converter: Converter, gguf_path: Path) -> tuple[Any, Any]:
    """Run the converter; wrap its failures in SommelierEnvironmentError naming the file."""
    try:
        return converter(gguf_path)
    except SommelierEnvironmentError:
        raise
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-BACKEND-GGUF-LOAD",
            f"could not load the GGUF file {gguf_path.name!r}: "
            f"{exception_text(exc, 200)}",
            "install the 'gguf' package and check that the file is a complete GGUF model",
            where=gguf_path.name,
        ) from exc
