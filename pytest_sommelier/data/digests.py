"""File and folder content digests (SHA-256), with one per-process cache.

Invariants kept: a file's digest is the SHA-256 of its bytes (streamed, never held whole); a
folder's digest depends only on its files' relative paths and contents (moving the folder does
not change it); a file rewritten in place (size or mtime changed) is hashed again. Digests of
text and JSON values are pure and live in ``pytest_sommelier.core.canonical``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pytest_sommelier.core.canonical import sha256_json

CHUNK_SIZE = 1 << 20
"""Bytes read per step by :func:`sha256_file` (the file is never held in memory whole)."""


def sha256_file(path: str | os.PathLike[str], chunk_size: int = CHUNK_SIZE) -> str:
    """SHA-256 hex digest of a file's bytes, read in ``chunk_size`` steps (streamed).

    Equal to ``sha256_bytes(Path(path).read_bytes())`` for every file.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


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


def sha256_files(directory: str | os.PathLike[str], relative_paths: list[str]) -> str:
    """Digest of the named files of a folder: ``sha256_json([[relative_posix_path,
    sha256_file], ...])`` sorted by path. The one folder-digest definition: ``sha256_tree`` is
    this over every file, a tokenizer's identity is this over its tokenizer files."""
    root = Path(directory)
    return sha256_json(sorted([rel, _cached_file_digest(root / rel)] for rel in relative_paths))


def sha256_tree(directory: str | os.PathLike[str]) -> str:
    """Digest of a directory's content, independent of where it lives.

    ``sha256_json([[relative_posix_path, sha256_file], ...])`` over every regular file below
    ``directory`` (symbolic links followed, hidden files included), sorted by relative path.
    Renaming, adding, removing or editing any file changes it; moving the folder does not.
    """
    root = Path(directory)
    names = []
    for dirpath, _dirnames, filenames in os.walk(root, followlinks=True):
        for filename in filenames:
            full = Path(dirpath) / filename
            if full.is_file():
                names.append(full.relative_to(root).as_posix())
    return sha256_files(root, names)


def sha256_path(path: str | os.PathLike[str]) -> str:
    """Content digest of a file (``sha256_file``) or a directory (``sha256_tree``), cached.

    The one digest of a local model, adapter or split: ``suite.resolved.json``,
    ``model_identity`` and ``adapter_identity`` all use it, so the same files have the same
    sha256 in every artifact."""
    target = Path(path)
    if target.is_dir():
        return sha256_tree(target)
    return _cached_file_digest(target)
