"""Fixtures of the store's tests, built once per session where they are read-only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from history_helpers import IMPROVED, V1, save_run, subprocess_session


@pytest.fixture(scope="session")
def two_run_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git folder holding ``.sommelier`` with runs 0001 (``V1``) and 0002 (``IMPROVED``) of
    the scripted suite: two subprocess sessions, so built once per session (per xdist worker)
    and shared by the modules that read it; a test that changes a store copies it first."""
    folder = tmp_path_factory.mktemp("two-run-store")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    save_run(subprocess_session(folder, "one", V1), folder / ".sommelier")
    save_run(subprocess_session(folder, "two", IMPROVED), folder / ".sommelier")
    return folder
