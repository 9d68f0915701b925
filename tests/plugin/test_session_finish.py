"""The session finish computes the verdict once, from memory: the page, the summary, the
terminal and JUnit render that one value; ``gate_verdict.json`` is written once, last, and only
when everything before it was written; nothing of the run folder just written is read back.
Real pytester sessions over the scripted fake (history_helpers)."""

from __future__ import annotations

import builtins
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, script
from plugin_helpers import write_scripted_suite

from pytest_sommelier.data.store import artifacts, history, history_verdict, runread, stored
from pytest_sommelier.data.store.history import stored_runs

STORED_GATE = [
    {
        "name": "not-worse-than-shipped",
        "arm": "adapter",
        "stored": "last",
        "metric": "full_call_exact_match",
        "ci_lower_at_least": -0.5,
    }
]
FAIL = "--sommelier-compare-fail=full_call_exact_match:0.02"


def session(
    pytester: pytest.Pytester, out: str, outputs: dict[str, str], *args: str, **suite: Any
) -> pytest.RunResult:
    write_scripted_suite(pytester, script(outputs), **suite)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-no-cache", "--sommelier-out", out, *args
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return result


def inside(path: Any, folder: Path) -> bool:
    try:
        return Path(os.fsdecode(path)).resolve().is_relative_to(folder.resolve())
    except (TypeError, ValueError):
        return False


@pytest.fixture
def no_read_back(monkeypatch: pytest.MonkeyPatch, pytester: pytest.Pytester) -> Iterator[
    Callable[[str], list[str]]
]:
    """Arm a guard on the run folder ``out``: reading back a file the finish wrote there
    (``open`` for reading) and any call of the store's named readers on the folder raise;
    returns the list of files written there, in order."""
    written: list[str] = []
    on: list[bool] = []  # non-empty while the guard is armed

    def arm(out: str) -> list[str]:
        """Arm the guard on ``out``; ``arm("")`` disarms it."""
        if not out:
            on.clear()
            return written
        on.append(True)
        folder = pytester.path / out

        def refuse(what: str, path: Any) -> None:
            if on and inside(path, folder):
                raise AssertionError(f"the finish read back {what} {path}")

        real_open = builtins.open

        def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if not any(flag in mode for flag in "wax+") and inside(file, folder):
                relative = Path(os.fsdecode(file)).resolve().relative_to(folder.resolve())
                if relative.as_posix() in written:  # a file this finish wrote, read back
                    refuse("open", file)
            return real_open(file, mode, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", guarded_open)
        monkeypatch.setattr(io, "open", guarded_open)
        for module, name in [
            (artifacts, "read_json"), (artifacts, "read_jsonl"), (artifacts, "read_arm"),
            (artifacts, "read_resolved"), (runread, "read_run"), (runread, "summary_inputs"),
            (history, "run_at"), (history, "describe_run"), (stored, "load_run_inputs"),
            (stored, "stored_arm"), (history_verdict, "load_run_inputs"),
            (history_verdict, "stored_arm"),
        ]:  # fmt: skip
            real = getattr(module, name)

            def reader(path: Any, *args: Any, _real: Any = real, _name: str = name,
                       **kwargs: Any) -> Any:  # fmt: skip
                target = path if not isinstance(path, (list, tuple)) else path[0]
                for candidate in (target, *args[:2]):
                    refuse(_name, getattr(candidate, "path", candidate))
                return _real(path, *args, **kwargs)

            monkeypatch.setattr(module, name, reader)
        real_text, real_json = artifacts.atomic_write_text, artifacts.atomic_write_json

        def record_text(path: Path, text: Any) -> None:
            if inside(path, folder):
                written.append(Path(path).resolve().relative_to(folder.resolve()).as_posix())
            real_text(path, text)

        monkeypatch.setattr(artifacts, "atomic_write_text", record_text)
        del real_json  # atomic_write_json writes through atomic_write_text
        return written

    yield arm


def test_the_finish_reads_nothing_back_and_writes_the_verdict_once_last(
    pytester: pytest.Pytester, no_read_back: Callable[[str], list[str]]
) -> None:
    first = session(pytester, "one", V1, "--sommelier-autosave")
    assert first.ret == 0, first.stdout.str()
    written = no_read_back("two")
    result = session(
        pytester, "two", REGRESSED, "--sommelier-compare", "last", FAIL,
        "--junitxml", "results.xml", gates=STORED_GATE,
    )  # fmt: skip
    no_read_back("")
    text = result.stdout.str()
    assert "read back" not in text, text
    assert result.ret == 1 and "verdict: FAIL" in text
    two = pytester.path / "two"
    assert written.count("gate_verdict.json") == 1 and written[-1] == "gate_verdict.json"
    assert "report.html" in written and "report/summary.md" in written
    verdict = json.loads((two / "gate_verdict.json").read_text(encoding="utf-8"))
    names = [gate["name"] for gate in verdict["gates"]]
    assert "not-worse-than-shipped" in names
    assert any(name.startswith("compare-fail:adapter:") for name in names)
    # every view shows the one verdict: the page, the summary and JUnit
    assert verdict["verdict"] == "fail"
    assert "suite factory: FAIL" in (two / "report" / "summary.md").read_text(encoding="utf-8")
    page = (two / "report.html").read_text(encoding="utf-8")
    assert all(name in page for name in names)
    junit = (pytester.path / "results.xml").read_text(encoding="utf-8")
    assert all(name in junit for name in names)


def test_the_page_and_summary_from_memory_equal_those_read_from_disk(
    pytester: pytest.Pytester,
) -> None:
    from pytest_sommelier.commands.rescore import summary_markdown
    from pytest_sommelier.view.html import render_report

    first = session(pytester, "one", V1, "--sommelier-autosave")
    assert first.ret == 0, first.stdout.str()
    result = session(pytester, "two", REGRESSED, "--sommelier-compare", "last", FAIL,
                     gates=STORED_GATE)  # fmt: skip
    assert result.ret == 1
    two = pytester.path / "two"
    assert (two / "report.html").read_text(encoding="utf-8") == render_report(two)
    summary = (two / "report" / "summary.md").read_text(encoding="utf-8")
    assert summary == summary_markdown(two)


def fake_git(folder: Path) -> Path:
    """A ``git`` that says it is in a work tree on a branch whose name is not UTF-8."""
    folder.mkdir()
    tool = folder / "git"
    tool.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  rev-parse) if [ "$2" = "--is-inside-work-tree" ]; then echo true; '
        "else echo 0123456789abcdef0123456789abcdef01234567; fi ;;\n"
        "  symbolic-ref) printf 'feature-\\377\\376\\n' ;;\n"
        "  *) ;;\n"
        "esac\n",
        encoding="utf-8",
    )
    tool.chmod(0o755)
    return folder


def test_a_branch_name_that_is_not_utf8_is_stored_with_replacement_characters(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Was SOM-SESSION-FINISH (UnicodeDecodeError), then a SOM-HISTORY-GIT line and no run
    stored: git's answer is now decoded with U+FFFD and the run is stored (hardening R05)."""
    bin_dir = fake_git(pytester.path / "fakebin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    result = session(pytester, "one", V1, "--sommelier-autosave")
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "one" / "gate_verdict.json").is_file()
    runs = stored_runs(pytester.path / ".sommelier")
    assert [run.number for run in runs] == [1]
    assert runs[0].entry["git"]["branch"] == "feature-\ufffd\ufffd"
    assert "Traceback" not in result.stdout.str()


def test_a_file_name_that_is_not_utf8_under_quotepath_false_is_stored(
    pytester: pytest.Pytester,
) -> None:
    """A real work tree whose changed tracked file is named with byte 0xff, shown raw by
    ``core.quotepath=false``: the run is stored, marked dirty (hardening R05)."""
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    root = bytes(pytester.path)
    name = os.path.join(root, b"caf\xff.txt")
    with open(name, "wb") as handle:
        handle.write(b"one")
    for command in (["init", "-q"], ["config", "core.quotepath", "false"], ["add", "-A"],
                    ["commit", "-qm", "first"]):  # fmt: skip
        subprocess.run(["git", *command], cwd=pytester.path, env=env, check=True)
    with open(name, "wb") as handle:
        handle.write(b"two")
    result = session(pytester, "one", V1, "--sommelier-autosave")
    assert result.ret == 0, result.stdout.str()
    runs = stored_runs(pytester.path / ".sommelier")
    assert len(runs) == 1 and runs[0].entry["git"]["dirty"] is True


def test_a_run_after_a_failed_finish_is_not_stored_and_the_next_one_is(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed finish (GITHUB_STEP_SUMMARY naming a FIFO nobody reads: one line, never a
    hang, hardening R17) stores nothing; the next run is stored as run 1."""
    fifo = pytester.path / "step-summary"
    os.mkfifo(fifo)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(fifo))
    result = session(pytester, "one", V1, "--sommelier-autosave")
    assert result.ret == 1
    why = [line for line in result.stdout.lines if "SOM-SUMMARY-WRITE" in line]
    assert why and ("not a regular file" in why[0] or "No such device" in why[0]), why
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    result = session(pytester, "two", V1, "--sommelier-autosave")
    assert result.ret == 0, result.stdout.str()
    runs = stored_runs(pytester.path / ".sommelier")
    assert [run.number for run in runs] == [1]
    stored_verdict = json.loads((runs[0].path / "gate_verdict.json").read_text(encoding="utf-8"))
    own = json.loads((pytester.path / "two" / "gate_verdict.json").read_text(encoding="utf-8"))
    assert stored_verdict == own


def test_junit_marks_each_missed_example_with_a_property(pytester: pytest.Pytester) -> None:
    import xml.etree.ElementTree as ET

    result = session(pytester, "one", V1, "--junitxml", "results.xml")
    import re

    missed = int(re.findall(r"(\d+) missed", result.stdout.str())[-1])
    cases = list(ET.parse(pytester.path / "results.xml").getroot().iter("testcase"))
    outcome = {}
    for case in cases:
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        if "sommelier_outcome" in props:
            outcome[f"{case.get('classname')}::{case.get('name')}"] = props
    assert missed > 0
    misses = [props for props in outcome.values() if props["sommelier_outcome"] == "miss"]
    assert len(misses) == missed and len(outcome) == 14
    assert all("gold:" in props["sommelier_miss"] and "\n" not in props["sommelier_miss"]
               for props in misses)  # fmt: skip
    hits = [props for props in outcome.values() if props["sommelier_outcome"] == "hit"]
    assert len(hits) == 14 - missed and not any("sommelier_miss" in props for props in hits)


def test_gates_are_written_rounded_as_the_terminal_says_them(pytester: pytest.Pytester) -> None:
    import re

    gates = [{"name": "adapter-solid", "arm": "adapter", "metric": "full_call_exact_match",
              "min": 0.9}, *STORED_GATE]  # fmt: skip
    assert session(pytester, "one", V1, "--sommelier-autosave").ret == 0
    result = session(pytester, "two", REGRESSED, gates=gates)
    assert result.ret == 1
    two = pytester.path / "two"
    verdict = json.loads((two / "gate_verdict.json").read_text(encoding="utf-8"))
    raw = [g["reason"] for g in verdict["gates"] if re.search(r"\d\.\d{6,}", g.get("reason", ""))]
    assert raw, "the verdict keeps full precision"
    summary = (two / "report" / "summary.md").read_text(encoding="utf-8")
    section = summary.split("### Gates", 1)[1].split("###", 1)[0]
    page = (two / "report.html").read_text(encoding="utf-8")
    rows = re.findall(r'<tr class="(?:pass|fail)"><td><bdi>.*?</tr>', page)
    assert rows and section.strip()
    for text in (section, *rows):
        assert not re.search(r"\d\.\d{6,}", text), text
    from pytest_sommelier.core.gates import gate_text
    from pytest_sommelier.view.compare import md_cell

    for gate in verdict["gates"]:  # the terminal's words for each gate, in the summary's row
        assert f"{gate['name']}: {gate_text(gate)}" in result.stdout.str()
        assert md_cell(gate_text(gate)) in section
