"""Every view of a run renders the same bytes from memory, at the session finish, as from the
run's files read back through the validating reader: the HTML page (``sommelier report``), the
Markdown summary and the CI step summary (``runread.summary_inputs``), the comparison Markdown
and the comparisons with stored runs, the JUnit gate cases (from ``gate_verdict.json``) and the
terminal tables (``sommelier rescore``, which reads the run's files). The run holds values a
JSON round trip changes: an identity hook adds tuples, numpy scalars (``float64``, ``float32``,
``int64``, ``bool_``), ``-0.0``, an integer past 2**64, a float whose repr is long and keys out of
order; the suite's slices and arms are not in sorted order, a gate's bound is ``-0.0`` and the
seed is past 2**53. Real pytester sessions over the scripted fake (history_helpers)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, script
from plugin_helpers import write_scripted_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.runread import read_run, summary_inputs
from pytest_sommelier.view.ci_summary import summary_text
from pytest_sommelier.view.compare import compare_markdown

HOSTILE_HOOK = """

import numpy as np


def pytest_sommelier_model_identity(config, arm, identity):
    identity["zz_hostile"] = {
        "tuple": (1, (2.5, "x")),
        "f64": np.float64(0.1) + np.float64(0.2),
        "f32": float(np.float32(0.1)),
        "i64": -7,
        "np_bool": True,
        "neg_zero": -0.0,
        "big": 2**70 + 1,
        "third": 1 / 3,
        "b": 1,
        "a": 2,
    }
"""
GATES = [
    {"name": "adapter-solid", "arm": "adapter", "metric": "full_call_exact_match", "min": -0.0},
    {"name": "not-worse-than-shipped", "arm": "adapter", "stored": "last",
     "metric": "full_call_exact_match", "ci_lower_at_least": -0.5},
]  # fmt: skip
SUITE: dict[str, Any] = {
    "suite": {"slices": ["he", "en"]},
    "arms": {"zeta": {}, "adapter": {"adapter": "adapter"}, "base": {}},
    "statistics": {"seed": 2**53 + 1},
}
FAIL = "--sommelier-compare-fail=full_call_exact_match:0.02"


def session(
    pytester: pytest.Pytester, out: str, outputs: dict[str, str], *args: str, gates: int = 2
) -> Any:
    suite = {**SUITE, "gates": GATES[:gates]}
    write_scripted_suite(pytester, {**script(outputs), "zeta": script(outputs)["base"]}, **suite)
    conftest = pytester.path / "suite" / "conftest.py"
    conftest.write_text(conftest.read_text(encoding="utf-8") + HOSTILE_HOOK, encoding="utf-8")
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-no-cache", "--sommelier-out", out, *args
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str(), result.stdout.str()
    return result


def gate_cases(path: Path) -> list[bytes]:
    """The JUnit test cases of the gates and the verdict, without their durations."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if (case.get("classname") or "").endswith(".gates"):
            case.attrib.pop("time", None)
            cases.append(ET.tostring(case))
    return cases


def junit_from_disk(run_dir: Path, nodeid: str, target: Path) -> Path:
    """The JUnit file of the gate cases rendered from the run's ``gate_verdict.json``."""
    from _pytest.junitxml import LogXML, xml_key

    from pytest_sommelier.plugin.junit import add_gate_cases

    class Config:
        stash = pytest.Stash()

    xml = LogXML(str(target), None, family="xunit2")  # pytest's default family
    Config.stash[xml_key] = xml
    xml.pytest_sessionstart()
    verdict = artifacts.read_json(run_dir / "gate_verdict.json")
    add_gate_cases(Config(), nodeid, verdict)  # type: ignore[arg-type]
    xml.pytest_sessionfinish()
    return target


def summary_block(text: str) -> list[str]:
    """A run's terminal tables: from the run directory line to the end of its misses, the
    lines naming where each arm came from (said by the session only) left out."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("run directory: "))
    end = next(i for i, line in enumerate(lines) if i > start and (
        line.startswith(("HTML report", "rescored by", "=")) or "passed" in line))  # fmt: skip
    origin = re.compile(r"^\w+: (\d+ generated|\d+ of \d+ from the generation cache)")
    return [line for line in lines[start + 1 : end] if not origin.match(line)]


def test_every_view_from_memory_equals_the_view_from_the_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    first = session(pytester, "one", V1, "--sommelier-autosave", gates=1)
    assert first.ret == 0, first.stdout.str()
    step = pytester.path / "step-summary.md"
    step.write_text("", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    result = session(pytester, "two", REGRESSED, "--sommelier-compare", "last", FAIL,
                     "--junitxml", "two.xml", "--sommelier-misses=0")  # fmt: skip
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert result.ret == 1, result.stdout.str()
    two = pytester.path / "two"
    memory_page = (two / "report.html").read_bytes()
    # the hostile values reached the page, as JSON writes them
    identity = read_run(two).arms["base"][0]["model_identity"]["zz_hostile"]  # type: ignore
    assert identity["tuple"] == [1, [2.5, "x"]] and identity["big"] == 2**70 + 1
    assert identity["f32"] == float.fromhex("0x1.99999a0000000p-4")
    assert str(identity["neg_zero"]) == "-0.0" and list(identity)[:2] == ["a", "b"]
    for shown in (b'title="1180591620717411303425"', b"hostile.f32=0.10000000149011612",
                  b"hostile.third=0.3333333333333333", b"hostile.f64=0.30000000000000004",
                  b"hostile.neg_zero=-0.0", b"seed=9007199254740993"):  # fmt: skip
        assert shown in memory_page, shown

    # the page: `sommelier report`
    assert main(["report", str(two), "--out", str(pytester.path / "page.html")]) == 0
    assert (pytester.path / "page.html").read_bytes() == memory_page
    # the Markdown summary and the CI step summary
    summary = (two / "report" / "summary.md").read_text(encoding="utf-8")
    assert summary_text(summary_inputs(two)) == summary
    assert step.read_text(encoding="utf-8") == summary + "\n"  # a blank line after each run
    # the comparisons with stored runs, rendered from their reports read back
    compared = sorted((two / "report").glob("compare-*.json"))
    assert compared
    for path in compared:
        markdown = path.with_suffix(".md").read_text(encoding="utf-8")
        assert compare_markdown(artifacts.read_json(path)) == markdown
    # JUnit: the gate cases from the verdict in memory and from gate_verdict.json
    nodeid = "suite/sommelier.toml"
    disk = junit_from_disk(two, nodeid, pytester.path / "disk.xml")
    memory_cases = gate_cases(pytester.path / "two.xml")
    assert len(memory_cases) == 6 and gate_cases(disk) == memory_cases
    # the terminal tables and the comparison Markdown: `sommelier rescore` reads the run's files
    capsys.readouterr()
    three = pytester.path / "three"
    code = main(["rescore", str(two), "--out", str(three), "--store",
                 str(pytester.path / ".sommelier"), "--compare", "last", "--compare-fail",
                 "full_call_exact_match:0.02", "--misses", "0"])  # fmt: skip
    assert code == 1
    rescored = capsys.readouterr().out
    # the same lines, the arms in another order: the session lists them in the suite's order,
    # rescore in the order of the run's files (sorted keys: the resolved suite records no other)
    from_disk, from_memory = summary_block(rescored)[1:], summary_block(result.stdout.str())[1:]
    per_arm = re.compile(r"^\s*(zeta|adapter|base)\s|^outputs that hit max_new_tokens")
    assert sorted(line for line in from_disk if not line.startswith("outputs that hit")) == sorted(
        line for line in from_memory if not line.startswith("outputs that hit")
    )
    assert [line for line in from_disk if not per_arm.match(line)] == [
        line for line in from_memory if not per_arm.match(line)
    ]
    for path in sorted((two / "report").glob("*.md")):
        if path.name != "summary.md":
            assert (three / "report" / path.name).read_bytes() == path.read_bytes(), path.name
