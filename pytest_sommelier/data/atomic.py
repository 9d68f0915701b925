"""The one atomic writer: every file pytest-sommelier writes goes through :func:`write_atomic`.

Invariants kept:

- a reader sees either the previous whole file (or none) or the new whole file, never a part:
  the text goes to a temporary file in the same folder, is flushed and fsync'ed, then renamed
  over the target with ``os.replace``;
- on any failure (an ``OSError``, an encoding error, an interrupt) the temporary file is
  removed and the target is untouched;
- the file gets the mode any other file the user creates gets: ``0o666`` minus the process
  umask (``0o644`` under the usual umask ``022``, ``0o664`` under ``002``), not the ``0o600``
  of ``tempfile.mkstemp``, so a run folder shared on a team machine or uploaded by a CI step
  running as another user stays readable.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


class CannotCreateError(OSError):
    """The folder could not be created or holds no new file (nothing was written)."""


def current_umask() -> int:
    """The process umask (read by setting it and restoring it at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new file gets: ``0o666`` minus the umask, as ``open()`` would give it."""
    return 0o666 & ~current_umask()


def write_atomic(path: str | os.PathLike[str], chunks: bytes | str | Iterable[str]) -> None:
    """Write ``chunks`` (one string, or strings written in order) to ``path`` atomically, as
    UTF-8 with ``\\n`` line ends, or ``bytes`` exactly as they are (a byte copy of an input);
    creates missing parent folders.

    Raises :class:`CannotCreateError` when the folder or the temporary file cannot be created,
    any other ``OSError`` when writing or renaming fails (the target is then untouched).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name[:32]}.", suffix=".tmp", dir=target.parent
        )
    except OSError as exc:
        raise CannotCreateError(exc.errno, exc.strerror or str(exc), str(target.parent)) from exc
    try:
        try:
            os.fchmod(fd, file_mode())
        except BaseException:
            os.close(fd)
            raise
        if isinstance(chunks, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(chunks)
                binary.flush()
                os.fsync(binary.fileno())
            os.replace(tmp, target)
            return
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            if isinstance(chunks, str):
                handle.write(chunks)
            else:
                for chunk in chunks:
                    handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
