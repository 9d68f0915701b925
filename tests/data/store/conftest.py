"""Fixtures of the store's tests, built once per session where they are read-only."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from history_helpers import IMPROVED, V1, save_run, subprocess_session


def build_two_run_store(folder: Path) -> Path:
    """``folder``: a git folder holding ``.sommelier`` with runs 0001 (``V1``) and 0002
    (``IMPROVED``) of the scripted suite, made by two subprocess sessions."""
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    save_run(subprocess_session(folder, "one", V1), folder / ".sommelier")
    save_run(subprocess_session(folder, "two", IMPROVED), folder / ".sommelier")
    return folder


@pytest.fixture(scope="session")
def two_run_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-run store (:func:`build_two_run_store`), shared by the modules that read it; a
    test that changes a store copies it first. Under xdist the workers share one: the first
    worker that asks builds it in the run's temporary root (under a lock), the others wait for
    it and read it (its two subprocess sessions were the store tests' largest cost, paid once
    per worker before). Without ``fcntl`` (Windows) each worker builds its own."""
    base = tmp_path_factory.getbasetemp()
    try:
        import fcntl
    except ImportError:
        return build_two_run_store(tmp_path_factory.mktemp("two-run-store") / "store")
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / "two-run-store", root / "two-run-store.done"
    with open(root / "two-run-store.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            if folder.exists():  # a worker that failed while building it
                import shutil

                shutil.rmtree(folder)
            build_two_run_store(folder)
            done.touch()
    return folder
