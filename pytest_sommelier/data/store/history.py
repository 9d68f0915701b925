"""The run store: complete runs kept over time in numbered folders (default ``.sommelier/``).

Layout of a store (docs/artifacts.md, "The run store")::

    index.json                                one entry per stored run (number order)
    .lock                                     the lock every writer holds (fcntl.flock)
    NNNN_<short commit>[-dirty]_<UTC time>/   a byte-for-byte copy of one suite's run folder,
        stored_run.json                       plus its store record (the index entry and the
                                              value intervals the history page plots)

Invariants kept:

- A stored run folder holds the run's files byte for byte (copied, never re-serialised), plus
  ``stored_run.json``; it appears under its final name whole or not at all (copied to a hidden
  temporary folder inside the store, then renamed).
- Numbers are taken, folders renamed and ``index.json`` rewritten (atomically, through
  ``data.atomic.write_atomic``) while holding an exclusive ``flock`` on ``<store>/.lock``, so
  two saves at once never take the same number or lose an entry.
- An incomplete run is stored only when asked (``keep_incomplete``), and then with
  ``comparable: false``; nothing ever compares with it.
- A store that cannot be read (bad JSON, unknown schema, an entry or folder name that does not
  fit) is one ``InputError`` line naming the file or folder; nothing is written to it.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history_record import (
    describe_run,
    git_state,
    run_entry,
)
from pytest_sommelier.data.store.layout import DEFAULT_STORE as DEFAULT_STORE
from pytest_sommelier.data.store.layout import FOLDER as FOLDER
from pytest_sommelier.data.store.layout import INDEX as INDEX
from pytest_sommelier.data.store.layout import LOCK as LOCK
from pytest_sommelier.data.store.layout import PAGE as PAGE
from pytest_sommelier.data.store.layout import RECORD as RECORD
from pytest_sommelier.data.store.validate import check_stored
from pytest_sommelier.errors import InputError, SommelierEnvironmentError
from pytest_sommelier.numbers import LABEL_PREFIX, LAST, LAST_ANY, run_number

INDEX_SCHEMA = "sommelier.run_store_index.v1"
RECORD_SCHEMA = "sommelier.stored_run.v1"
UNVERSIONED = "unversioned"
SHORT_COMMIT = 7
_KNOWN_FILES = {INDEX, PAGE}


@dataclass(frozen=True)
class StoredRun:
    """One run of the store (or a run folder given by path: ``number`` None).

    ``entry`` is its index entry (``number``, ``folder``, ``run_id``, ``suite``, ``saved_at``,
    ``git``, ``complete``, ``comparable``, ``verdict``, ``identity``).
    """

    number: int | None
    path: Path
    entry: dict[str, Any]

    @property
    def label(self) -> str:
        """``0003`` for a stored run, the folder's name for a run given by path."""
        return f"{self.number:04d}" if self.number is not None else self.path.name

    @property
    def suite(self) -> str | None:
        return self.entry.get("suite")

    @property
    def comparable(self) -> bool:
        return bool(self.entry.get("comparable"))

    @property
    def commit(self) -> str | None:
        """The short commit the run was made at, or None (not in a git work tree)."""
        commit = (self.entry.get("git") or {}).get("commit")
        return commit[:SHORT_COMMIT] if commit else None

    @property
    def passed(self) -> bool:
        """Whether the run may be ``last`` (``history_record.baseline_worthy``, recorded as
        ``baseline``; an entry of 0.3 without it: its verdict is ``pass``)."""
        if "baseline" in self.entry:
            return bool(self.entry["baseline"])
        return self.entry.get("verdict") == "pass"

    def describe(self) -> str:
        """``stored run 0003 (commit abc1234, dirty)``: how the terminal names its origin."""
        git = self.entry.get("git") or {}
        where = f"commit {self.commit}" if self.commit else "no commit recorded"
        if git.get("dirty"):
            where += ", dirty"
        kind = "stored run" if self.number is not None else "run"
        return f"{kind} {self.label} ({where})"


# --- the index -----------------------------------------------------------------------------


def _bad_index(path: Path, message: str) -> InputError:
    return InputError(
        "SOM-HISTORY-INDEX",
        f"{path}: {message}",
        "the store's index was edited or written by another tool; restore it from the CI "
        "cache, or move the store aside and start a new one",
    )


def _check_entry(path: Path, position: int, entry: Any) -> dict[str, Any]:
    """One index entry, checked to name a numbered folder that fits the store's scheme."""
    if not isinstance(entry, dict):
        raise _bad_index(path, f"runs[{position}] is not a JSON object")
    number, folder = entry.get("number"), entry.get("folder")
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise _bad_index(path, f"runs[{position}].number is {number!r}, not a run number")
    match = FOLDER.match(folder) if isinstance(folder, str) else None
    if match is None or int(match.group("number")) != number:
        raise _bad_index(path, f"runs[{position}].folder {folder!r} does not fit run {number:04d}")
    for key, kind in (("suite", str), ("comparable", bool), ("complete", bool)):
        if not isinstance(entry.get(key), kind):
            raise _bad_index(path, f"runs[{position}].{key} is missing or not a {kind.__name__}")
    return entry


def read_index(store: Path) -> list[dict[str, Any]]:
    """The entries of ``<store>/index.json`` in number order ([] for a store not made yet),
    read under a shared ``flock`` on ``<store>/.lock`` so that a save in progress in another
    process (a folder renamed, its index entry not yet written) is never seen half done.

    A file that is not valid JSON, has another schema, or holds an entry whose number or
    folder does not fit is an ``InputError`` naming the file (``SOM-HISTORY-INDEX``); so is a
    store whose folders do not fit (:func:`check_store`).
    """
    store = Path(store)
    if not store.exists():
        return []
    with _shared_lock(store):
        return _read_index(store)


@contextmanager
def _shared_lock(store: Path) -> Iterator[None]:
    """A shared ``flock`` on ``<store>/.lock`` for the block (the file is created if needed,
    as writers do; a read-only store that has none is read without a lock)."""
    handle = None
    for mode in ("a", "r"):
        try:
            handle = open(store / LOCK, mode)
            break
        except OSError:
            continue
    if handle is None:
        yield
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


def _read_index(store: Path) -> list[dict[str, Any]]:
    """:func:`read_index` without the lock (for a caller that holds :func:`store_lock`)."""
    check_store(store)
    path = store / INDEX
    if not path.exists():
        if store.is_dir() and any(FOLDER.match(p.name) for p in store.iterdir()):
            raise _bad_index(path, "missing, but the store holds stored run folders")
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise _bad_index(path, "not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise _bad_index(path, f"line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise _bad_index(path, "nested too deep") from None
    except OSError as exc:
        raise _bad_index(path, exc.strerror or str(exc)) from None
    if not isinstance(data, dict) or data.get("schema_version") != INDEX_SCHEMA:
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise _bad_index(path, f"schema_version is {found!r}, expected {INDEX_SCHEMA!r}")
    runs = data.get("runs")
    if not isinstance(runs, list):
        raise _bad_index(path, "'runs' is not a list")
    entries = [_check_entry(path, i, entry) for i, entry in enumerate(runs)]
    numbers = [entry["number"] for entry in entries]
    if len(set(numbers)) != len(numbers):
        repeated = next(n for n in numbers if numbers.count(n) > 1)
        raise _bad_index(path, f"run {repeated:04d} appears more than once")
    for entry in entries:
        if not (store / entry["folder"]).is_dir():
            raise _bad_index(
                path, f"run {entry['number']:04d}: folder {entry['folder']} is missing"
            )
    check_stored(path, data, code="SOM-HISTORY-INDEX")  # then every field's type and range
    return sorted(entries, key=lambda entry: entry["number"])


def check_store(store: Path) -> None:
    """Refuse a store path that is not a store: a file, or a folder holding an entry that is
    neither ``index.json``, ``history.html``, a hidden file nor a folder named
    ``NNNN_<commit>[-dirty]_<time>`` (``SOM-HISTORY-FOREIGN``, naming the entry)."""
    store = Path(store)
    if not store.exists():
        return
    if not store.is_dir():
        raise InputError(
            "SOM-HISTORY-FOREIGN",
            f"{store}: is a file, not a run store folder",
            "give a folder (default .sommelier at the rootdir) with --sommelier-storage",
        )
    for child in sorted(store.iterdir()):
        name = child.name
        if name.startswith(".") or (name in _KNOWN_FILES and child.is_file()):
            continue
        if FOLDER.match(name) and child.is_symlink():
            raise InputError(
                "SOM-HISTORY-FOREIGN",
                f"{child}: a stored run folder that is a link (to {os.path.realpath(child)}); "
                "the store holds its runs' bytes itself",
                "replace the link with the folder it points to, or remove it and its index entry",
            )
        if child.is_dir() and FOLDER.match(name):
            continue
        raise InputError(
            "SOM-HISTORY-FOREIGN",
            f"{child}: not a stored run (folders are NNNN_<commit>[-dirty]_<UTC time>)",
            "this folder is not a sommelier run store; choose another with "
            "--sommelier-storage, or move the entry out",
        )


def require_store(store: Path) -> Path:
    """``store`` when it is a folder (an empty one is an empty store), else an
    ``InputError`` (``SOM-HISTORY-UNKNOWN``) naming it."""
    store = Path(store)
    if not store.is_dir():
        raise InputError(
            "SOM-HISTORY-UNKNOWN",
            f"{store}: no run store here",
            "store runs with --sommelier-autosave, or give the store folder",
        )
    return store


def _write_index(store: Path, entries: list[dict[str, Any]]) -> None:
    artifacts.atomic_write_text(
        store / INDEX, artifacts.dumps({"schema_version": INDEX_SCHEMA, "runs": entries})
    )


@contextmanager
def store_lock(store: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<store>/.lock`` (created if needed) for the block."""
    store = Path(store)
    try:
        store.mkdir(parents=True, exist_ok=True)
        handle = open(store / LOCK, "a")
    except OSError as exc:
        raise SommelierEnvironmentError(
            "SOM-HISTORY-WRITE",
            f"cannot write to the run store {store}: {exc.strerror or exc}",
            "choose a writable folder with --sommelier-storage",
        ) from exc
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        handle.close()


# --- saving --------------------------------------------------------------------------------


def utc_stamp(moment: datetime | None = None) -> str:
    """``20261201T101500Z``: the UTC time of a folder name."""
    return (moment or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def folder_name(number: int, git: Mapping[str, Any] | None, stamp: str) -> str:
    """``NNNN_<short commit>[-dirty]_<UTC time>`` (``unversioned`` without a commit)."""
    commit = (git or {}).get("commit")
    short = commit[:SHORT_COMMIT] if commit else UNVERSIONED
    dirty = "-dirty" if (git or {}).get("dirty") else ""
    return f"{number:04d}_{short}{dirty}_{stamp}"


def _next_number(store: Path, entries: list[dict[str, Any]]) -> int:
    """One more than any number in the index or on a folder (a folder whose index entry was
    lost in a crash keeps its number)."""
    taken = [entry["number"] for entry in entries]
    taken += [int(m.group("number")) for p in store.iterdir() if (m := FOLDER.match(p.name))]
    return max(taken, default=0) + 1


def save_run(
    run_dir: Path,
    store: Path,
    *,
    keep_incomplete: bool = False,
    rootdir: Path | None = None,
    moment: datetime | None = None,
    intervals: Mapping[str, Any] | None = None,
    verdict: Mapping[str, Any] | None = None,
    record: Mapping[str, Any] | None = None,
    label: str | None = None,
    only_passing: bool = False,
) -> StoredRun | None:
    """Copy one suite's run folder into the store as the next numbered run and index it.

    Returns the stored run, or None when the run is incomplete and ``keep_incomplete`` is
    false (nothing is written). A run is stored once: when its run id is already in the store,
    that stored run is returned and nothing is copied. ``rootdir`` is where git is asked for
    the commit, branch and dirty flag (default: the store's parent folder); outside a git work
    tree none are recorded. An incomplete run kept is marked ``comparable: false``.
    ``intervals`` is ``core.stored_comparison.value_intervals_of`` the run's scoring records,
    computed by the caller (the store computes no interval); without them the record says it
    has none.
    ``verdict`` and ``record`` (``history_record.run_entry``) are the run's verdict and record
    when the caller holds them (the session finish, before its own ``gate_verdict.json`` is
    written): the verdict is written into the stored copy, and nothing of the run is read back
    but the bytes copied. ``label`` (``--sommelier-label``) is recorded in the entry;
    ``only_passing`` (``--sommelier-autosave=pass``) stores nothing unless the verdict is pass.
    """
    run_dir, store = Path(run_dir), Path(store)
    record = dict(record) if record is not None else describe_run(run_dir)
    if not record["complete"] and not keep_incomplete:
        return None
    if only_passing and not record.get("baseline", record.get("verdict") == "pass"):
        return None
    if label is not None:
        record["label"] = label
    if store.resolve().is_relative_to(run_dir.resolve()):
        raise InputError(
            "SOM-HISTORY-NOT-A-RUN",
            f"{run_dir}: the run store {store} is inside the run folder",
            "keep the store (--sommelier-storage) outside the run folder",
        )
    check_store(store)
    already = next(
        (run for run in stored_runs(store) if run.entry.get("run_id") == record["run_id"]), None
    )
    if already is not None:
        return already
    git = git_state(Path(rootdir) if rootdir is not None else store.resolve().parent, exclude=store)
    intervals = (
        dict(intervals)
        if intervals is not None
        else {"intervals": {}, "note": "no intervals: none were given when it was stored"}
    )
    read_index(store)  # refuse a damaged store before copying anything into it
    temporary = store / f".tmp-{secrets.token_hex(6)}"
    try:
        store.mkdir(parents=True, exist_ok=True)
        shutil.copytree(run_dir, temporary, copy_function=shutil.copy2)
        if verdict is not None:
            artifacts.atomic_write_json(runlayout.verdict(temporary), verdict)
        now = (moment or datetime.now(UTC)).astimezone(UTC)
        with store_lock(store):  # the exclusive lock: only the unlocked reader inside
            entries = _read_index(store)
            twin = next((e for e in entries if e.get("run_id") == record["run_id"]), None)
            if twin is not None:  # stored by a concurrent save meanwhile
                return StoredRun(number=twin["number"], path=store / twin["folder"], entry=twin)
            number = _next_number(store, entries)
            entry = {
                "number": number,
                "folder": folder_name(number, git, utc_stamp(now)),
                "saved_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "git": git,
                **record,
            }
            artifacts.atomic_write_json(
                temporary / RECORD, {"schema_version": RECORD_SCHEMA, **entry, **intervals}
            )
            final = store / entry["folder"]
            os.rename(temporary, final)
            _write_index(store, [*entries, entry])
    except OSError as exc:
        raise SommelierEnvironmentError(
            "SOM-HISTORY-WRITE",
            f"storing {run_dir} in {store} failed: {exc.strerror or exc}",
            "check free space and permissions of the run store (--sommelier-storage)",
        ) from exc
    finally:
        if temporary.exists():
            shutil.rmtree(temporary, ignore_errors=True)
    return StoredRun(number=number, path=final, entry=entry)


# --- reading -------------------------------------------------------------------------------


def stored_runs(store: Path, *, suite: str | None = None) -> list[StoredRun]:
    """Every run of the store in number order (only ``suite``'s when given)."""
    store = Path(store)
    return [
        StoredRun(number=entry["number"], path=store / entry["folder"], entry=entry)
        for entry in read_index(store)
        if suite is None or entry["suite"] == suite
    ]


def read_record(stored: StoredRun) -> dict[str, Any]:
    """A stored run's ``stored_run.json`` (its entry plus value intervals), or its entry when
    the record is absent (a run given by path)."""
    path = stored.path / RECORD
    if not path.is_file():
        return dict(stored.entry)
    record = artifacts.read_json(path)
    return record if isinstance(record, dict) else dict(stored.entry)


def run_of(
    run_dir: Path, resolved: Mapping[str, Any], reports: Mapping[str, Any], verdict: Any
) -> StoredRun:
    """:func:`run_at` from the run's values (nothing read): the run the session just wrote."""
    entry = run_entry(Path(run_dir).name, resolved, reports, verdict)
    return StoredRun(number=None, path=Path(run_dir), entry=entry)


def run_at(run_dir: Path) -> StoredRun:
    """A run folder that is not (or not yet) in a store, as a ``StoredRun`` without number."""
    return StoredRun(number=None, path=Path(run_dir), entry=describe_run(Path(run_dir)))


def resolve_stored(store: Path, spec: str, *, suite: str | None = None) -> StoredRun:
    """The run ``spec`` names: a number (``3``, ``0003``: ASCII digits only), ``last`` (the
    newest comparable run whose verdict was pass, of ``suite`` when given), ``last-any`` (the
    newest comparable run, whatever its verdict), ``label:NAME`` (the newest run stored with
    ``--sommelier-label NAME``, of ``suite`` when given) or the path of a run folder (in the
    store or not). A failing run is never ``last``: a damaged adapter's run must not become
    the baseline the next runs are judged against.

    Raises ``InputError`` (``SOM-HISTORY-UNKNOWN``) naming the store when nothing matches.
    """
    store = Path(store)
    text = spec.strip()
    of = f" of suite {suite!r}" if suite else ""
    if text in (LAST, LAST_ANY):
        comparable = [run for run in stored_runs(store, suite=suite) if run.comparable]
        runs = [run for run in comparable if run.passed] if text == LAST else comparable
        if not runs:
            passing = " whose verdict was pass" if text == LAST else ""
            hint = (
                "the stored runs of this suite all failed their gates; compare with one by "
                "number, or with last-any"
                if comparable
                else "store a complete run first (--sommelier-autosave); incomplete runs "
                "never count"
            )
            raise InputError(
                "SOM-HISTORY-UNKNOWN",
                f"{store / INDEX}: no comparable stored run{of}{passing}",
                hint,
            )
        return runs[-1]
    if text.startswith(LABEL_PREFIX):
        label = text.removeprefix(LABEL_PREFIX)
        labelled = [
            run for run in stored_runs(store, suite=suite) if run.entry.get("label") == label
        ]
        if not labelled:
            raise InputError(
                "SOM-HISTORY-UNKNOWN",
                f"{store / INDEX}: no stored run{of} labelled {label!r}",
                "label a run with --sommelier-label NAME when it is stored; `sommelier history` "
                "lists the labels",
            )
        return labelled[-1]
    number = run_number(text)
    if number is not None:
        runs = stored_runs(store)
        found = next((run for run in runs if run.number == number), None)
        if found is None:
            have = f"runs {runs[0].label}-{runs[-1].label}" if runs else "no runs"
            raise InputError(
                "SOM-HISTORY-UNKNOWN",
                f"{store / INDEX}: no stored run {number:04d} (the store has {have})",
                "list the store with `sommelier history`",
            )
        return found
    path = Path(text)
    if path.is_dir() and FOLDER.match(path.name) and (path / RECORD).is_file():
        for run in stored_runs(path.parent):
            if run.path.resolve() == path.resolve():
                return run
    if not runlayout.resolved(path).is_file():
        raise InputError(
            "SOM-HISTORY-UNKNOWN",
            f"{path}: not a stored run number, 'last', 'last-any', 'label:NAME' or a run folder",
            "give NUM (ASCII digits), last, last-any, label:NAME, or a run folder holding "
            "suite.resolved.json",
        )
    return run_at(path)


def describe_arm_folder(arm_dir: Path) -> str:
    """Where a stored arm folder (``.../eval/<arm>``) comes from, as the terminal names it:
    ``stored arm 0003 (commit abc1234)`` for an arm of a stored run, else
    ``stored arm runs/r1/eval/base (run <run id>)``."""
    arm_dir = Path(arm_dir)
    run_dir = arm_dir.parent.parent
    match = FOLDER.match(run_dir.name)
    if match is not None and (run_dir / RECORD).is_file():
        record = artifacts.read_json(run_dir / RECORD)
        entry = record if isinstance(record, dict) else {}
        stored = StoredRun(number=int(match.group("number")), path=run_dir, entry=entry)
        return "stored arm " + stored.describe().removeprefix("stored run ")
    resolved = runlayout.resolved(run_dir)
    data = artifacts.read_json(resolved) if resolved.is_file() else None
    run_id = data.get("run_id") if isinstance(data, dict) else None
    return f"stored arm {arm_dir}" + (f" (run {run_id})" if run_id else "")


__all__ = [
    "DEFAULT_STORE",
    "StoredRun",
    "check_store",
    "describe_arm_folder",
    "folder_name",
    "read_index",
    "read_record",
    "require_store",
    "resolve_stored",
    "run_at",
    "run_of",
    "save_run",
    "store_lock",
    "stored_runs",
]
