"""Model and tokenizer references: ``pkg:`` paths, local files and folders, hub ids.

A reference is one of:

- ``pkg:<package>/<path inside package>``: a file or folder shipped inside an installed Python
  package (found with :func:`importlib.util.find_spec`, without importing the package);
- a local path (a folder, or a ``.gguf`` file), relative to ``base_dir`` when given;
- a Hugging Face hub id (``org/name``), pinned with a revision.

Invariants kept here:

- resolving a reference never imports the package it names and never touches the network
  unless the reference is a hub id;
- identities are portable: a local file or folder is identified by a content digest
  (``sha256:<hex>``) and at most its base name, never by a machine path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_sommelier.data.digests import sha256_files, sha256_path
from pytest_sommelier.data.references import (
    check_local_kind,
    is_pkg_ref,
    require_revision,
    resolve_local_path,
)
from pytest_sommelier.errors import SommelierEnvironmentError, exception_text

# Files that define a tokenizer in a folder (the union with the tokenizer's own
# ``vocab_files_names`` is digested; weights and model configs are not part of it).
TOKENIZER_FILES: tuple[str, ...] = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
)


def folder_files_sha256(folder: Path, names: list[str] | tuple[str, ...]) -> str:
    """Digest of the named files present in ``folder`` (``data.digests.sha256_files``).

    Only relative names enter the digest, so the same files in two places give the same value.
    Raises SommelierEnvironmentError when none of the files is present.
    """
    present = sorted({name for name in names if (folder / name).is_file()})
    if not present:
        raise SommelierEnvironmentError(
            "SOM-MODELREF-NO-TOKENIZER-FILES",
            f"folder {folder.name!r} holds none of the tokenizer files",
            f"expected one of: {', '.join(TOKENIZER_FILES)}",
            where=str(folder),
        )
    return sha256_files(folder, present)


def load_tokenizer(
    ref: str, *, revision: str | None = None, base_dir: Path | str | None = None
) -> Any:
    """Load a tokenizer from a hub id (+ revision), a local folder, a ``.gguf`` file or ``pkg:``.

    ``trust_remote_code`` is never enabled. A hub id only loads when it is cached or the hub is
    reachable. Failures raise SommelierEnvironmentError naming the reference.
    """
    from transformers import AutoTokenizer

    local = resolve_local_path(ref, base_dir=base_dir)
    kwargs: dict[str, Any] = {"trust_remote_code": False}
    if local is None:
        source: str = ref
        kwargs["revision"] = revision
    elif local.is_file():
        check_local_kind(local, field="tokenizer", adapter=False, where=repr(ref))
        source = str(local.parent)
        kwargs["gguf_file"] = local.name
    else:
        source = str(local)
    try:
        return AutoTokenizer.from_pretrained(source, **kwargs)
    except Exception as exc:
        raise SommelierEnvironmentError(
            "SOM-MODELREF-TOKENIZER-LOAD",
            f"could not load a tokenizer: {exception_text(exc)}",
            "for a hub id, make sure it is cached or the hub is reachable; for a .gguf file, "
            "install the 'gguf' package",
            where=repr(ref),
        ) from exc


def _tokenizer_file_names(tokenizer: Any) -> tuple[str, ...]:
    """The tokenizer file names to digest in a folder: the fixed list plus the tokenizer's own."""
    own = getattr(tokenizer, "vocab_files_names", None) or {}
    extra = [name for name in own.values() if isinstance(name, str)]
    return tuple(dict.fromkeys([*TOKENIZER_FILES, *extra]))


def tokenizer_identity(
    ref: str,
    revision: str | None,
    tokenizer: Any = None,
    *,
    base_dir: Path | str | None = None,
) -> tuple[str, str]:
    """Return ``(tokenizer_id, tokenizer_revision)`` for a reference; never a machine path.

    - hub id: ``(ref, revision)``; the revision is required (InputError otherwise);
    - ``pkg:`` reference: ``(ref, "sha256:<digest>")`` (the reference is portable as written);
    - local ``.gguf`` file: ``("gguf:<file name>", "sha256:<file digest>")``;
    - local folder: ``("dir:<folder name>", "sha256:<digest of its tokenizer files>")``.
    """
    local = resolve_local_path(ref, base_dir=base_dir)
    if local is None:
        looked = "in the working directory" if base_dir is None else f"under {base_dir}"
        return ref, require_revision(
            ref, revision, field="tokenizer", revision_field="--revision", looked=looked
        )
    if local.is_file():
        digest = sha256_path(local)
        label = f"gguf:{local.name}"
    else:
        digest = folder_files_sha256(local, _tokenizer_file_names(tokenizer))
        label = f"dir:{local.name}"
    return (ref if is_pkg_ref(ref) else label), f"sha256:{digest}"
