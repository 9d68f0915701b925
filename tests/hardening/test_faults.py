"""Injected faults (issue 7, item 2): one test per row of docs/hardening.md, "Faults".

The one scripted fake model (tests/fakes.py, ``"__fault__"`` in its script) misbehaves on
purpose: it kills its own process,
raises ``KeyboardInterrupt``, ``SystemExit`` or an ordinary exception, hangs, returns things
that are not one string per prompt, or reports identities that are not JSON. Other rows break
the output folder (a path under a file; ``ENOSPC`` from ``fsync``/``os.replace``, injected with
monkeypatch since no tiny tmpfs is available) or the generation cache's writes.

What every row checks: the run stops or reports ``incomplete`` (never a passing verdict, never
exit 0); the problem is named in one line; what was already written stays whole (every JSON
artifact parses, no temporary file is left, nothing earlier is half-overwritten); the
generation cache never holds a partial entry.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import (
    GOLD,
    cache_key,
    call_text,
    read_json,
    read_jsonl,
    write_scripted_suite,
)

from pytest_sommelier.data import atomic
from pytest_sommelier.inference.gencache import GenerationCache

ADAPTER = {k: call_text(v) for k, v in GOLD.items()}
SCRIPT = {"adapter": ADAPTER, "base": {}}
SUBPROCESS_TIMEOUT = 180
GATES = [{"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]


# ----------------------------------------------------------------------------- helpers


def fault_suite(pytester: pytest.Pytester, fault: dict[str, Any], **overrides: Any) -> Path:
    """The scripted two-arm suite (tests/fakes.py) with ``fault`` in its script."""
    overrides.setdefault("gates", GATES)
    return write_scripted_suite(pytester, {**SCRIPT, "__fault__": fault}, **overrides)


def run(
    pytester: pytest.Pytester, *args: str, subprocess: bool = False, interrupt: bool = False
) -> tuple[pytest.RunResult, str]:
    base = ("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    if subprocess:  # a hang (e.g. a lost worker never replaced) fails the test, not CI
        result = pytester.runpytest_subprocess(*base, timeout=SUBPROCESS_TIMEOUT)
    elif interrupt:  # the inner session's KeyboardInterrupt stays inside it
        result = pytester.runpytest(*base, no_reraise_ctrlc=True)
    else:
        result = pytester.runpytest(*base)
    return result, result.stdout.str() + "\n" + result.stderr.str()


def assert_whole(folder: Path) -> None:
    """Every artifact under ``folder`` is whole: JSON parses, JSONL parses line by line, and no
    temporary file of an atomic write is left behind."""
    for path in folder.rglob("*"):
        if path.is_dir():
            continue
        assert not path.name.endswith(".tmp"), f"temporary file left: {path}"
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                assert isinstance(json.loads(line), dict), path


def assert_not_passing(out: Path, *broken_arms: str) -> None:
    """No passing verdict; the broken arms' reports (if written) say ``complete: false``."""
    verdict = out / "gate_verdict.json"
    if verdict.exists():
        assert read_json(verdict)["verdict"] == "incomplete"
    for arm in broken_arms:
        report = out / "eval" / arm / "evaluation_report.json"
        if report.exists():
            assert read_json(report)["complete"] is False, arm


def calls(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    path = pytester.path / "suite" / "calls.jsonl"
    return read_jsonl(path) if path.exists() else []


# ============================================================================ lost workers


@pytest.mark.slow
def test_F01_worker_killed_under_xdist(pytester: pytest.Pytester) -> None:
    fault_suite(pytester, {"arm": "adapter", "example": "en-2", "kind": "exit"})
    cache = pytester.path / "gencache"
    result, text = run(pytester, "-n", "2", "--sommelier-cache-dir", str(cache), subprocess=True)
    assert result.ret != 0
    assert "crashed" in text and "adapter::en::en-2" in text
    assert "INCOMPLETE" in text and "verdict: INCOMPLETE" in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    assert read_json(out / "gate_verdict.json")["verdict"] == "incomplete"
    # the arm that ran whole is intact: every example generated and a complete report
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert base["complete"] is True and base["metrics"]["valid_json_rate"]["denominator"] == 7
    adapter_ids = [
        r["example_id"]
        for lang in ("en", "he")
        for r in read_jsonl(out / "eval" / "adapter" / f"generations.{lang}.jsonl")
    ]
    assert "en-2" not in adapter_ids and len(adapter_ids) == 6
    # the generation cache holds only whole entries, one per generated output
    assert_whole(cache)
    entries = list(cache.rglob("*.json"))
    assert entries and all(isinstance(read_json(e)["output"], str) for e in entries)


@pytest.mark.slow
def test_F01b_rerun_after_a_lost_worker_rescores_from_the_cache(pytester: pytest.Pytester) -> None:
    suite = fault_suite(pytester, {"arm": "adapter", "example": "en-2", "kind": "exit"})
    cache = str(pytester.path / "gencache")
    run(pytester, "-n", "2", "--sommelier-cache-dir", cache, subprocess=True)
    (suite.parent / "calls.jsonl").unlink()
    (suite.parent / "script.json").write_text(json.dumps(SCRIPT))  # the fault is gone
    result, _ = run(pytester, "--sommelier-cache-dir", cache, subprocess=True)
    assert result.ret == 0
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "pass"
    regenerated = {i for call in calls(pytester) for i in call["ids"]}
    # only the lost example (and the untimed warm-up on en-0) is generated again
    assert regenerated <= {"en-0", "en-2"} and "en-2" in regenerated


# ============================================================================ interrupts


@pytest.mark.parametrize("timeout", [[], ["--sommelier-timeout=30"]], ids=["plain", "timeout"])
def test_F02_interrupt_mid_run(pytester: pytest.Pytester, timeout: list[str]) -> None:
    fault_suite(pytester, {"arm": "adapter", "example": "he-0", "kind": "interrupt"})
    result, text = run(pytester, *timeout, interrupt=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "KeyboardInterrupt" in text and "verdict: PASS" not in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    generated = {i for call in calls(pytester) if call["arm"] == "adapter" for i in call["ids"]}
    assert "he-3" not in generated, "nothing runs after the interrupt"


def test_F03_model_calls_sys_exit(pytester: pytest.Pytester) -> None:
    fault_suite(pytester, {"arm": "adapter", "example": "en-1", "kind": "sysexit"})
    result, text = run(pytester)
    assert result.ret != 0
    assert "SystemExit" in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    assert read_json(out / "eval" / "base" / "evaluation_report.json")["complete"] is True


# ============================================================================ output folder


@pytest.mark.parametrize("target", ["blocker/out", "blocker"], ids=["under-a-file", "a-file"])
def test_F04_output_folder_under_a_file(pytester: pytest.Pytester, target: str) -> None:
    """Tests run as root, which ignores permissions: a path under a regular file (or the file
    itself) is the portable way to make an unwritable output folder."""
    fault_suite(pytester, {})
    blocker = pytester.path / "blocker"
    blocker.write_text("not a folder\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", target)
    text = result.stdout.str() + result.stderr.str()
    # refused at collection (issue 20): before any model runs, not after every item ran
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "Traceback" not in text
    line = next(x for x in text.splitlines() if "SOM-OUT-UNWRITABLE" in x)
    assert "blocker" in line and "not a folder" in line
    assert "verdict: PASS" not in text and calls(pytester) == [], "no model was called"
    assert blocker.read_text() == "not a folder\n", "the blocking file is untouched"


@pytest.mark.parametrize("failing", ["fsync", "replace"])
@pytest.mark.parametrize("victim", ["evaluation_report.json", "gate_verdict.json"])
def test_F05_disk_full_while_writing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, failing: str, victim: str
) -> None:
    """A complete passing run is written; a rerun into the same folder hits ENOSPC on one
    file: one line, exit 1, the old passing verdict does not survive, every file left is
    whole."""
    fault_suite(pytester, {})
    result, _ = run(pytester)
    out = pytester.path / "out"
    assert result.ret == 0 and read_json(out / "gate_verdict.json")["verdict"] == "pass"
    first_generations = (out / "eval" / "base" / "generations.en.jsonl").read_text()
    state = {"armed": False}
    real_replace, real_fsync = os.replace, os.fsync

    def full_replace(src: Any, dst: Any) -> None:
        if Path(dst).name == victim:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    def full_fsync(fd: int) -> None:
        if state["armed"]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    real_mkstemp = atomic.tempfile.mkstemp

    def arming_mkstemp(*args: Any, **kwargs: Any) -> Any:
        state["armed"] = str(kwargs.get("prefix", "")).startswith(f".{victim}.")
        return real_mkstemp(*args, **kwargs)

    if failing == "replace":
        monkeypatch.setattr(os, "replace", full_replace)
    else:
        monkeypatch.setattr(os, "fsync", full_fsync)
        monkeypatch.setattr(atomic.tempfile, "mkstemp", arming_mkstemp)
    result, text = run(pytester)
    monkeypatch.undo()
    assert result.ret == 1
    line = next(x for x in text.splitlines() if "SOM-OUT-WRITE-FAILED" in x)
    assert victim in line and "No space left on device" in line
    assert "Traceback" not in text and "verdict: PASS" not in text
    assert not (out / "gate_verdict.json").exists(), "no verdict from this or the earlier run"
    assert_whole(out)
    assert (out / "eval" / "base" / "generations.en.jsonl").read_text() == first_generations


# ============================================================================ models


def test_F06_model_fails_to_load(pytester: pytest.Pytester) -> None:
    fault_suite(pytester, {"arm": "adapter", "kind": "load-raise"})
    result, text = run(pytester)
    assert result.ret == 1
    assert result.parseoutcomes().get("errors") == 7
    assert "SOM-MODEL-LOAD" in text and "weights vanished (scripted)" in text
    assert "Traceback" not in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    assert read_json(out / "eval" / "base" / "evaluation_report.json")["complete"] is True


def test_F07_model_raises_on_one_batch(pytester: pytest.Pytester) -> None:
    fault_suite(
        pytester, {"arm": "adapter", "example": "he-1", "kind": "raise"}, decoding={"batch_size": 2}
    )
    result, text = run(pytester)
    assert result.ret == 1
    # he-0 and he-1 share the failing batch; every other adapter example is scored
    assert result.parseoutcomes().get("errors") == 2
    line = next(x for x in text.splitlines() if "SOM-MODEL-ERROR" in x)
    assert "ValueError: scripted model failure" in line
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    report = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    assert report["slices"]["en"]["examples"] == 4 and report["slices"]["he"]["examples"] == 1


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_F08_model_hangs_timeout_from_the_ini_file(pytester: pytest.Pytester, xdist: bool) -> None:
    fault_suite(pytester, {"arm": "adapter", "example": "en-1", "kind": "hang"})
    pytester.makeini("[pytest]\nsommelier_timeout = 0.5\n")
    result, text = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    assert result.ret == 1
    assert "SOM-MODEL-TIMEOUT" in text and "did not return within 0.5 s" in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")
    assert read_json(out / "gate_verdict.json")["verdict"] == "incomplete"


NON_STRINGS = [
    ("none-items", "SOM-GEN-TYPE", "NoneType"),
    ("bytes", "SOM-GEN-TYPE", "bytes"),
    ("ints", "SOM-GEN-TYPE", "int"),
    ("dicts", "SOM-GEN-TYPE", "dict"),
    ("one-str", "SOM-GEN-COUNT", "str"),
    ("iterator", "SOM-GEN-COUNT", "list_iterator"),
    ("one-extra", "SOM-GEN-COUNT", "returned 2 outputs for 1 prompts"),
    ("none", "SOM-GEN-COUNT", "NoneType"),
]


@pytest.mark.parametrize(("kind", "code", "fragment"), NON_STRINGS, ids=[k[0] for k in NON_STRINGS])
def test_F09_generator_returns_non_strings(
    pytester: pytest.Pytester, kind: str, code: str, fragment: str
) -> None:
    fault_suite(pytester, {"arm": "adapter", "kind": kind})
    result, text = run(pytester)
    assert result.ret == 1
    assert result.parseoutcomes().get("errors") == 7
    line = next(x for x in text.splitlines() if code in x)
    assert fragment in line and "arm 'adapter'" in line
    assert "Traceback" not in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_F10_generator_returns_a_lone_surrogate(pytester: pytest.Pytester, cache: bool) -> None:
    fault_suite(pytester, {"arm": "adapter", "kind": "surrogate"})
    args = ["--sommelier-cache-dir", str(pytester.path / "gencache")] if cache else []
    result, text = run(pytester, *args)
    assert result.ret == 1
    assert "SOM-GEN-TYPE" in text and "Traceback" not in text
    out = pytester.path / "out"
    assert_whole(out)
    assert_not_passing(out, "adapter")


def test_F11_generator_identity_is_not_json(pytester: pytest.Pytester) -> None:
    fault_suite(pytester, {"arm": "adapter", "kind": "set-identity"})
    result, text = run(pytester)
    assert result.ret == 1
    assert "SOM-MODEL-CONTRACT" in text and "model_identity" in text
    assert "Traceback" not in text
    assert_not_passing(pytester.path / "out", "adapter")


# ============================================================================ generation cache


class _Gen:
    """The least a generator needs for the cache's key."""

    def __init__(self) -> None:
        self.model_identity = {"fake": "m"}
        self.adapter_identity = None


DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 8, "batch_size": 1}


@pytest.mark.parametrize("fault", [KeyboardInterrupt, SystemExit])
def test_F12_cache_write_interrupted_leaves_no_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: type[BaseException]
) -> None:
    cache = GenerationCache(tmp_path / "c")
    cache.put(_Gen(), "a" * 64, DECODING, "first")

    def interrupted(fd: int) -> None:
        raise fault()

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(fault):
        cache.put(_Gen(), "b" * 64, DECODING, "second")
    with pytest.raises(fault):
        cache.put(_Gen(), "a" * 64, DECODING, "overwrite")
    monkeypatch.undo()
    assert_whole(tmp_path / "c")
    assert [p.name for p in (tmp_path / "c").rglob("*") if p.is_file()] == [
        cache.entry_path(cache_key(cache, _Gen(), "a" * 64, DECODING)).name
    ]
    assert cache.get(_Gen(), "a" * 64, DECODING) == "first"
    assert cache.get(_Gen(), "b" * 64, DECODING) is None


def test_F13_cache_write_of_an_unencodable_output_leaves_no_entry(tmp_path: Path) -> None:
    """Whatever happens to such an output upstream (see F10), the cache keeps no trace of it."""
    cache = GenerationCache(tmp_path / "c")
    try:
        cache.put(_Gen(), "c" * 64, DECODING, "\ud800")
    except (UnicodeError, ValueError):
        pass
    assert cache.get(_Gen(), "c" * 64, DECODING) is None
    assert [p for p in (tmp_path / "c").rglob("*") if p.is_file()] == []


def test_F14_a_truncated_entry_is_never_served(tmp_path: Path) -> None:
    cache = GenerationCache(tmp_path / "c")
    cache.put(_Gen(), "d" * 64, DECODING, "whole output")
    path = cache.entry_path(cache_key(cache, _Gen(), "d" * 64, DECODING))
    text = path.read_text(encoding="utf-8")
    for cut in (1, len(text) // 2, len(text) - 1):
        path.write_text(text[:cut], encoding="utf-8")
        assert cache.get(_Gen(), "d" * 64, DECODING) is None
        assert not path.exists(), "a partial entry is removed, not kept"
        path.parent.mkdir(parents=True, exist_ok=True)


def test_assert_whole_can_fail(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"a": ')
    with pytest.raises(ValueError):
        assert_whole(tmp_path)
    (tmp_path / "a.json").unlink()
    (tmp_path / ".x.json.abc.tmp").write_text("")
    with pytest.raises(AssertionError):
        assert_whole(tmp_path)
