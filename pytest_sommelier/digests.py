"""Content digests: every identity pytest-sommelier records is a SHA-256 hex string.

Invariants kept by every function here:

- a digest is 64 lowercase hex characters;
- text is hashed as UTF-8, JSON as its canonical form (``sort_keys``, separators ``(",", ":")``,
  ``ensure_ascii=True``, no NaN/Infinity), so equal values give equal digests on every machine;
- the set digests are *ordered*: the same rows in another order give another digest, so a
  reordered split or a different selection never passes an identity check.

The exact byte-level definitions are documented in docs/formatted_split.md.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

CHUNK_SIZE = 1 << 20
"""Bytes read per step by :func:`sha256_file` (the file is never held in memory whole)."""


def sha256_bytes(data: bytes) -> str:
    """SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 hex digest of ``text`` encoded as UTF-8 (how ``prompt_sha256`` is defined)."""
    return sha256_bytes(text.encode("utf-8"))


def sha256_file(path: str | os.PathLike[str], chunk_size: int = CHUNK_SIZE) -> str:
    """SHA-256 hex digest of a file's bytes, read in ``chunk_size`` steps (streamed).

    Equal to ``sha256_bytes(Path(path).read_bytes())`` for every file.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def canonical_json_text(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, compact separators, ASCII escapes.

    NaN and infinities are refused (``ValueError``): they are not JSON.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_json(value: Any) -> str:
    """SHA-256 of the canonical JSON text of ``value`` (key order never changes the digest)."""
    return sha256_text(canonical_json_text(value))


def _field(item: Any, name: str) -> Any:
    """Read ``name`` from a mapping (a generation record) or an attribute (an ``Example``)."""
    if isinstance(item, Mapping):
        return item[name]
    return getattr(item, name)


def prompt_set_sha256(examples: Iterable[Any]) -> str:
    """Digest of one slice's ordered prompt identities.

    ``examples`` are ``Example`` objects or records (mappings) with ``example_id`` and
    ``prompt_sha256``, in split order. The digest is
    ``sha256_json([[example_id, prompt_sha256], ...])``: it changes when a prompt is edited,
    an example is added or removed, or the order changes.
    """
    return sha256_json(
        [[_field(item, "example_id"), _field(item, "prompt_sha256")] for item in examples]
    )


def pair_set_sha256(pairs: Iterable[tuple[str, str, str, str]]) -> str:
    """Digest of one target slice's ordered matched pairs.

    ``pairs`` are ``(root_id, root_prompt_sha256, target_id, target_prompt_sha256)`` tuples in
    target-slice split order. The digest is ``sha256_json([[root_id, root_prompt_sha256,
    target_id, target_prompt_sha256], ...])``: it binds both sides' prompts, so editing either
    prompt, re-pairing a row or reordering the target slice changes it.
    """
    rows = []
    for pair in pairs:
        if len(pair) != 4:
            raise ValueError(f"a pair is (root_id, root_sha, target_id, target_sha), got {pair!r}")
        rows.append(list(pair))
    return sha256_json(rows)


_FILE_CACHE: dict[tuple[str, int, int], str] = {}


def _cached_file_digest(path: Path) -> str:
    """``sha256_file(path)``, memoised per process on (real path, size, mtime_ns).

    A file rewritten in place changes its size or mtime and is hashed again.
    """
    stat = path.stat()
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    digest = _FILE_CACHE.get(key)
    if digest is None:
        digest = sha256_file(path)
        _FILE_CACHE[key] = digest
    return digest


def sha256_tree(directory: str | os.PathLike[str]) -> str:
    """Digest of a directory's content, independent of where it lives.

    ``sha256_json([[relative_posix_path, sha256_file], ...])`` over every regular file below
    ``directory`` (symbolic links followed, hidden files included), sorted by relative path.
    Renaming, adding, removing or editing any file changes it; moving the folder does not.
    """
    root = Path(directory)
    entries = []
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=True):
        for filename in filenames:
            full = Path(dirpath) / filename
            if full.is_file():
                entries.append([full.relative_to(root).as_posix(), _cached_file_digest(full)])
    entries.sort()
    return sha256_json(entries)


def sha256_path(path: str | os.PathLike[str]) -> str:
    """Content digest of a file (``sha256_file``) or a directory (``sha256_tree``)."""
    target = Path(path)
    if target.is_dir():
        return sha256_tree(target)
    return _cached_file_digest(target)
