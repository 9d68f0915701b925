"""The one rule for every output path: each ``--out`` of the ``sommelier`` commands, the
session's run folder, the history page and ``$GITHUB_STEP_SUMMARY`` (:func:`check_step_summary`,
at collection and again before the append: a variable naming the store's index or a stored
run's file is refused like any ``--out``).

A path is refused (one ``InputError`` line, ``SOM-OUTPUT-PATH``, before any work is done) when

- it is one of the command's inputs (the same path, or the same file through another name);
- it is inside a run store or a stored run folder, or is one, unless it is a file the store
  owns (``owned``: ``STORE/history.html`` for ``sommelier history``);
- a file is meant and it is an existing folder, or anything but a regular file (a FIFO, a
  device node, a socket); a folder is meant and it is an existing non-folder;
- a file is meant and its folder is one of the kernel's (``/proc``, ``/sys``, ``/dev`` but
  ``/dev/shm``): an output is written as a new file beside its path and renamed over it, and
  those folders never take a new file (``/proc/self/fd/1`` is standard output, not a path).

Invariants kept: the rule only looks (nothing is created or opened for writing); a store is
recognised by its files (``index.json`` beside ``.lock`` or a numbered run folder), a stored
run by its name and ``stored_run.json``, so a store given under any name is protected; the
writes themselves go through ``data.atomic.write_atomic`` (temp file, fsync, rename).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pytest_sommelier.core import runlayout
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.layout import FOLDER, INDEX, LOCK, RECORD
from pytest_sommelier.errors import InputError, SommelierEnvironmentError

CODE = "SOM-OUTPUT-PATH"
FILE = "file"
FOLDER_KIND = "folder"
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
"""The variable GitHub Actions names the job summary file with (appended to, never replaced)."""
KERNEL_FOLDERS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Folders of pseudo file systems, which hold no new file (``/dev/shm`` aside: a tmpfs)."""


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
    appended: bool = False,
) -> Path:
    """``path`` when the rule (module docstring) lets it be written, else one ``InputError``.

    ``kind`` is ``file`` or ``folder``; ``inputs`` the paths the command reads; ``stores`` run
    stores it names (protected even before they hold a run); ``owned`` the files inside a
    store this output may replace; ``where`` the option named in the error; ``appended``: the
    file is appended to in place (``$GITHUB_STEP_SUMMARY``), not replaced, so a regular file
    reached through a kernel folder (``/proc/self/fd/N``) may be one."""
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
    kernel = _kernel_folder(target) if kind == FILE and not appended else None
    if kernel is not None:
        raise _refuse(
            target,
            f"is in {kernel}, a folder of the kernel's that takes no new file; an output is "
            "written as a new file beside its path, then renamed over it",
            "give the path of a file in an ordinary folder (to see the output, write it to a "
            "file and print that)",
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


def _kernel_folder(target: Path) -> Path | None:
    """The folder of ``target`` (the link itself, not what it points to: ``/proc/self/fd/1``
    is in ``/proc/<pid>/fd``) when it is in a pseudo file system, else None."""
    try:
        folder = Path(os.path.realpath(Path(os.path.abspath(target)).parent))
    except (OSError, ValueError):
        return None
    if folder == Path("/dev/shm") or Path("/dev/shm") in folder.parents:
        return None
    for root in KERNEL_FOLDERS:
        if folder == root or root in folder.parents:
            return folder
    return None


def check_step_summary(
    environ: Mapping[str, str] | None = None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
    stores: Iterable[str | os.PathLike[str] | None] = (),
) -> Path | None:
    """The file ``$GITHUB_STEP_SUMMARY`` names (in ``environ``, default the process's) when the
    rule lets it be appended to, None when it is unset or empty; one ``SOM-OUTPUT-PATH`` line
    otherwise: inside the run being written (``run_dir``), a run store (``stores``, and any
    folder holding a store's files) or a stored run, a folder, a FIFO or device, a kernel
    folder. The variable is the job's, but the rule is the same as for an ``--out``."""
    step = (os.environ if environ is None else environ).get(STEP_SUMMARY)
    if not step:
        return None
    return check_output(
        step, kind=FILE, stores=[run_dir, *stores], where=f"${STEP_SUMMARY}", appended=True
    )


def write_summary(
    run_dir: Path,
    text: str,
    *,
    environ: Mapping[str, str] | None = None,
    stores: Sequence[Path | None] = (),
) -> Path:
    """Write ``<run_dir>/report/summary.md`` (the view's ``summary_text``) atomically and
    append the same text to the file named by ``GITHUB_STEP_SUMMARY`` (in ``environ``, default
    the process environment) when set; returns the summary's path. The variable's file goes
    through the one output-path rule first (:func:`check_step_summary`: never inside
    ``run_dir``, a run store of ``stores`` or any store or stored run; ``SOM-OUTPUT-PATH``)."""
    target = runlayout.summary(Path(run_dir))
    checked = check_step_summary(environ, run_dir=run_dir, stores=stores)
    artifacts.atomic_write_text(target, text)
    step = None if checked is None else str(checked)
    if step:
        try:
            artifacts.append_regular(step, (text + "\n").encode("utf-8"))
        except OSError as exc:
            raise SommelierEnvironmentError(
                "SOM-SUMMARY-WRITE",
                f"appending to {STEP_SUMMARY} file {step} failed: {exc.strerror or exc}",
                "the CI runner sets this variable to a writable file; unset it outside CI",
            ) from exc
    return target


__all__ = [
    "CODE",
    "FILE",
    "FOLDER_KIND",
    "STEP_SUMMARY",
    "check_output",
    "check_step_summary",
    "is_store",
    "is_stored_run",
    "write_summary",
]
