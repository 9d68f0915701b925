"""The one atomic writer: whole files only, and the mode the umask gives (not mkstemp's 0600)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_helpers import GOLD, call_text, write_scripted_suite

from pytest_sommelier.data.atomic import CannotCreateError, file_mode, write_atomic
from pytest_sommelier.data.prepare.formatting import write_jsonl_atomic
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.errors import SommelierEnvironmentError
from pytest_sommelier.inference.gencache import GenerationCache


@pytest.fixture(params=[0o022, 0o002, 0o077])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_atomic_gives_the_umask_mode(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "sub" / "a.txt"
    write_atomic(target, "hello\n")
    assert target.read_text() == "hello\n"
    assert mode(target) == 0o666 & ~umask == file_mode()
    write_atomic(target, ["x", "y\n"])
    assert target.read_text() == "xy\n"
    assert mode(target) == 0o666 & ~umask


def test_every_writer_uses_the_umask_mode(tmp_path: Path, umask: int) -> None:
    expected = 0o666 & ~umask
    artifacts.atomic_write_json(tmp_path / "run" / "r.json", {"a": 1})
    write_jsonl_atomic(tmp_path / "split.jsonl", [])

    class Gen:
        def __init__(self) -> None:
            self.model_identity = {"m": 1}
            self.adapter_identity = None

    cache = GenerationCache(tmp_path / "cache")
    cache.put(Gen(), "0" * 64, {"temperature": 0.0, "batch_size": 1}, "out")
    entries = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert entries, "the cache wrote nothing"
    for path in [tmp_path / "run" / "r.json", tmp_path / "split.jsonl", *entries]:
        assert mode(path) == expected, path


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    write_atomic(target, "old")

    def chunks() -> Iterator[str]:
        yield "new"
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_atomic(target, chunks())
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize(
    "chunks", ["text\n", ["te", "xt\n"], b"text\n"], ids=["str", "list", "bytes"]
)
def test_the_whole_temporary_file_is_flushed_to_disk_before_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: str | list[str] | bytes
) -> None:
    """The test process skips the disk flush (tests/conftest.py); the writer still asks for it,
    on the temporary file holding the whole text, before the rename."""
    target = tmp_path / "a.txt"
    events: list[str] = []
    real_replace = os.replace

    def fsync(fd: int) -> None:
        events.append(f"fsync {os.fstat(fd).st_size}")

    def replace(src: str, dst: str) -> None:
        events.append(f"replace {Path(dst).name}")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomic(target, chunks)
    assert events == ["fsync 5", "replace a.txt"]
    assert target.read_bytes() == b"text\n"


def test_an_unwritable_folder_is_cannot_create(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CannotCreateError):
        write_atomic(blocker / "x.json", "{}")
    with pytest.raises(SommelierEnvironmentError) as info:
        artifacts.atomic_write_json(blocker / "x.json", {})
    assert info.value.code == "SOM-OUT-UNWRITABLE"


def test_a_run_folder_is_readable_by_others_under_umask_022(pytester: pytest.Pytester) -> None:
    script = {"adapter": {k: call_text(v) for k, v in GOLD.items()}, "base": {}}
    write_scripted_suite(pytester, script)
    old = os.umask(0o022)
    try:
        result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    finally:
        os.umask(old)
    assert result.ret == 0, result.stdout.str()
    files = [p for p in (pytester.path / "out").rglob("*") if p.is_file()]
    assert len(files) >= 8
    assert {path.name: mode(path) for path in files if mode(path) != 0o644} == {}
