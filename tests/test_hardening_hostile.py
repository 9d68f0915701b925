"""What a hostile tester broke (issue 20): one test per row `H` of docs/hardening.md.

Each test feeds one bad or odd input, as a user would, through the real components (a
pytester session with a scripted fake model, the ``sommelier`` command, the loaders) and pins
the promise the project makes: one clear line with a stable code, nothing half-written, never a
passing verdict from bad evidence, and a re-scored run equal to the run it re-scores.

The fake (``HOSTILE_CONFTEST``) answers from ``script.json`` like tests/plugin_helpers.py's, and
misbehaves on purpose where ``script["__hostile__"]`` says so (per arm): it edits the split while
the run is in progress, raises an exception whose ``__str__`` raises, or reports an identity
that does not fit its arm.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, write_scripted_suite

from pytest_sommelier.cli import main
from pytest_sommelier.core.canonical import sha256_bytes

HOSTILE_CONFTEST = """
import json
import pathlib

import pytest

HERE = pathlib.Path(__file__).parent
SCRIPT = json.loads((HERE / "script.json").read_text())
HOSTILE = SCRIPT.get("__hostile__", {})
SPLIT = HERE / "data" / "test.jsonl"
PROMPTS = {row["prompt_text"]: row["example_id"]
           for row in map(json.loads, SPLIT.read_text().splitlines())}


class Unprintable(ValueError):
    def __str__(self):
        raise ValueError("__str__ of this exception raises")


class Fake:
    def __init__(self, arm):
        self.arm = arm
        self.kind = HOSTILE.get(arm)
        self.model_identity = {"fake": "model-1"}
        self.adapter_identity = None if arm == "base" else {"fake-adapter": arm}
        if self.kind == "no-adapter-identity":
            self.adapter_identity = None
        if self.kind == "adapter-identity":
            self.adapter_identity = {"fake-adapter": "stray"}

    def generate(self, prompts, decoding):
        with (HERE / "calls.jsonl").open("a") as log:
            log.write(json.dumps({"arm": self.arm, "n": len(prompts)}) + "\\n")
        if self.kind == "edit-split" and not (HERE / "edited").exists():
            (HERE / "edited").write_text("")
            lines = SPLIT.read_text().splitlines()
            row = json.loads(lines[0])
            row["target_text"] = json.dumps([{"name": "edited", "arguments": {}}])
            lines[0] = json.dumps(row)
            SPLIT.write_text("\\n".join(lines) + "\\n")
        if self.kind == "unprintable":
            raise Unprintable()
        answers = SCRIPT.get(self.arm, {})
        return [answers.get(PROMPTS.get(p, "?"), "I think you should check the weather.")
                for p in prompts]


@pytest.fixture(scope="session")
def sommelier_model():
    return Fake
"""

EXACT = {k: call_text(v) for k, v in GOLD.items()}
SCRIPT: dict[str, Any] = {"adapter": EXACT, "base": {}}
GATES = [{"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]


# ----------------------------------------------------------------------------- helpers


def hostile_suite(
    pytester: pytest.Pytester, hostile: dict[str, str] | None = None, **overrides: Any
) -> Path:
    """The scripted two-arm suite with ``HOSTILE_CONFTEST``; ``hostile``: arm -> misbehaviour."""
    overrides.setdefault("gates", GATES)
    script = {**SCRIPT, "__hostile__": hostile or {}}
    suite = write_scripted_suite(pytester, script, **overrides)
    (suite.parent / "conftest.py").write_text(HOSTILE_CONFTEST)
    return suite


def session(pytester: pytest.Pytester, *args: str, out: str = "out") -> tuple[Any, str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", out, *args)
    return result, result.stdout.str() + "\n" + result.stderr.str()


def metrics_of(run: Path) -> dict[str, Any]:
    """Every arm's metrics per slice, as the run's reports hold them."""
    return {
        report.parent.name: read_json(report)["slices"]
        for report in sorted(run.glob("eval/*/evaluation_report.json"))
    }


def assert_one_line(text: str, code: str, *fragments: str) -> str:
    """``code`` on one output line holding every fragment; no traceback anywhere."""
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if code in line]
    assert lines, f"{code} not in output:\n{text}"
    matching = [line for line in lines if all(f in line for f in fragments)]
    assert matching, (fragments, lines)
    return matching[0]


# ============================================================================ H01 byte copies


def test_H01_a_crlf_split_is_copied_byte_for_byte_and_rescores(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = hostile_suite(pytester)
    split = suite.parent / "data" / "test.jsonl"
    split.write_bytes(split.read_bytes().replace(b"\n", b"\r\n"))
    original = split.read_bytes()
    result, _ = session(pytester)
    assert result.ret == 0
    run = pytester.path / "out"
    copy = run / "inputs" / "test_split.jsonl"
    assert copy.read_bytes() == original, "the run's copy of the split is a byte copy"
    assert read_json(run / "suite.resolved.json")["test_split"]["sha256"] == sha256_bytes(original)
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run)]) == 0, capsys.readouterr().err
    assert metrics_of(run) == before
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "does not have the digest" not in page and "en-1" in page


def test_H01b_a_line_separator_in_a_generation_reads_back(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """U+2028 / U+0085 inside ``raw_text`` are written raw (JSON allows them unescaped): the
    reader of stored generations splits lines at ``\\n`` only, as the split loader does."""
    adapter = {**EXACT, "en-1": "\u2028" + EXACT["en-1"] + "\x85"}
    suite = hostile_suite(pytester)
    (suite.parent / "script.json").write_text(json.dumps({**SCRIPT, "adapter": adapter}))
    result, _ = session(pytester)
    assert result.ret == 0
    run = pytester.path / "out"
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run), "--out", str(pytester.path / "again")]) == 0, (
        capsys.readouterr().err
    )
    assert metrics_of(pytester.path / "again") == before


# ============================================================================ H08 split edited


def test_H08_split_edited_while_the_run_is_in_progress(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fake rewrites one gold call of the split on its first call: the run's copy, its
    resolved digest and its reports all describe the split as it was loaded."""
    suite = hostile_suite(pytester, {"base": "edit-split"})
    original = (suite.parent / "data" / "test.jsonl").read_bytes()
    result, _ = session(pytester)
    assert (suite.parent / "edited").exists()
    assert (suite.parent / "data" / "test.jsonl").read_bytes() != original
    assert result.ret == 0
    run = pytester.path / "out"
    assert (run / "inputs" / "test_split.jsonl").read_bytes() == original
    digest = sha256_bytes(original)
    assert read_json(run / "suite.resolved.json")["test_split"]["sha256"] == digest
    for report in run.glob("eval/*/evaluation_report.json"):
        assert read_json(report)["test_split_sha256"] == digest
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run)]) == 0, capsys.readouterr().err
    assert metrics_of(run) == before
    assert read_json(run / "gate_verdict.json")["verdict"] == "pass"


def test_helpers_can_fail(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        assert_one_line("Traceback\nSOM-X: a", "SOM-X")
    with pytest.raises(AssertionError):
        assert_one_line("SOM-X: a", "SOM-X", "b")
    assert read_jsonl is not None
