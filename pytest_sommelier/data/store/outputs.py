"""The one rule for every output path: each ``--out`` of the ``sommelier`` commands, the
session's run folder, the history page and ``$GITHUB_STEP_SUMMARY``.

A path is refused (one ``InputError`` line, ``SOM-OUTPUT-PATH``, before any work is done) when

- it is one of the command's inputs (the same path, or the same file through another name);
- it is inside a run store or a stored run folder, or is one, unless it is a file the store
  owns (``owned``: ``STORE/history.html`` for ``sommelier history``);
- a file is meant and it is an existing folder, or anything but a regular file (a FIFO, a
  device node, a socket); a folder is meant and it is an existing non-folder.

Invariants kept: the rule only looks (nothing is created or opened for writing); a store is
recognised by its files (``index.json`` beside ``.lock`` or a numbered run folder), a stored
run by its name and ``stored_run.json``, so a store given under any name is protected; the
writes themselves go through ``data.atomic.write_atomic`` (temp file, fsync, rename).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from pytest_sommelier.data.store.history import FOLDER, INDEX, LOCK, RECORD
from pytest_sommelier.errors import InputError

CODE = "SOM-OUTPUT-PATH"
FILE = "file"
FOLDER_KIND = "folder"


def is_store(folder: Path) -> bool:
    """Whether ``folder`` is a run store: an ``index.json`` with a ``.lock`` or a numbered
    stored run folder beside it."""
    if not (folder / INDEX).is_file():
        return False
    if (folder / LOCK).exists():
        return True
    try:
        return any(FOLDER.match(child.name) for child in folder.iterdir())
    except OSError:
        return False


def is_stored_run(folder: Path) -> bool:
    """Whether ``folder`` is a stored run folder (``NNNN_<commit>_<time>/stored_run.json``)."""
    return FOLDER.match(folder.name) is not None and (folder / RECORD).is_file()


def _same(path: Path, other: Path) -> bool:
    """The same path, or the same existing file through another name (a hard or soft link)."""
    if path.resolve() == other.resolve():
        return True
    try:
        return path.exists() and other.exists() and os.path.samefile(path, other)
    except OSError:
        return False


def _refuse(path: Path, message: str, hint: str, where: str | None) -> InputError:
    return InputError(CODE, f"{path}: {message}", hint, where=where)


def check_output(
    path: str | os.PathLike[str],
    *,
    kind: str = FILE,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    stores: Iterable[str | os.PathLike[str] | None] = (),
    owned: Iterable[str | os.PathLike[str]] = (),
    where: str | None = None,
) -> Path:
    """``path`` when the rule (module docstring) lets it be written, else one ``InputError``.

    ``kind`` is ``file`` or ``folder``; ``inputs`` the paths the command reads; ``stores`` run
    stores it names (protected even before they hold a run); ``owned`` the files inside a
    store this output may replace; ``where`` the option named in the error."""
    target = Path(path)
    for given in inputs:
        if given is not None and str(given) and _same(target, Path(given)):
            raise _refuse(
                target,
                "is an input of this command; writing it would replace what is being read",
                "write the output somewhere else",
                where,
            )
    resolved = target.resolve()
    if not any(_same(target, Path(file)) for file in owned):
        protected = [Path(store).resolve() for store in stores if store is not None]
        for folder in (resolved, *resolved.parents):
            if folder in protected or is_store(folder) or is_stored_run(folder):
                what = "a stored run" if is_stored_run(folder) else "the run store"
                raise _refuse(
                    target,
                    f"is inside {what} {folder}; only the store writes there",
                    "write the output outside the run store (its folders and index must stay "
                    "as the store wrote them)",
                    where,
                )
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return target  # not there yet (its writer says so if it cannot be made)
    except OSError as exc:
        raise _refuse(
            target, f"cannot be checked ({exc.strerror or exc})", "check it", where
        ) from None
    if kind == FILE and stat.S_ISDIR(mode):
        raise _refuse(target, "is a folder, and a file is written here", "give a file name", where)
    if kind == FILE and not stat.S_ISREG(mode):
        raise _refuse(
            target,
            "is not a regular file (a FIFO, device or socket); it is never written to",
            "give the path of a regular file",
            where,
        )
    if kind == FOLDER_KIND and not stat.S_ISDIR(mode):
        raise _refuse(target, "exists and is not a folder", "give a folder", where)
    return target


__all__ = ["CODE", "FILE", "FOLDER_KIND", "check_output", "is_store", "is_stored_run"]
