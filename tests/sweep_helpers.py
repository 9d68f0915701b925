"""A checkpoint sweep for selection-gate tests: three fake checkpoint folders behind an adapter
glob, the one fake model (``fakes.FAKE_CONFTEST``) scripted per checkpoint, and the gates the
session, rescore and core tests share."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from suite_factory import make_row, write_suite

N = 24
IDS = tuple(f"en-{i}" for i in range(N))
GOLD = {i: {"name": f"tool_{n}", "arguments": {"n": n}} for n, i in enumerate(IDS)}
SELECTION = {"metric": "full_call_exact_match", "among": "adapter@*"}
STEPS = ("checkpoint-100", "checkpoint-200", "checkpoint-300")


def hits(count: int) -> dict[str, str]:
    """The fake's answers for an arm that gets the first ``count`` examples right."""
    return {i: json.dumps(GOLD[i]) for i in IDS[:count]}


def sweep(
    pytester: pytest.Pytester, counts: tuple[int, int, int], gates: list[dict[str, Any]],
    *, base: int = 0, **overrides: Any,
) -> Path:
    """A suite with arms ``base`` and ``adapter = "out/checkpoint-*"`` over three checkpoint
    folders; checkpoint k hits the first ``counts[k]`` examples, the base the first ``base``."""
    folder = pytester.path / "suite"
    for name in STEPS:
        (folder / "out" / name).mkdir(parents=True, exist_ok=True)
        (folder / "out" / name / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
    arms = {f"adapter@{step.removeprefix('checkpoint-')}": hits(c)
            for step, c in zip(STEPS, counts, strict=True)}  # fmt: skip
    script = {"base": hits(base), **arms}
    rows = [make_row(i, "en", None, GOLD[i]) for i in IDS]
    suite = write_suite(
        folder, rows=rows, model={"base": "fake-org/fake-model"}, suite={"slices": ["en"]},
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}}, comparisons=None,
        selection=SELECTION, gates=gates, **overrides,
    )  # fmt: skip
    (folder / "conftest.py").write_text(FAKE_CONFTEST)
    (folder / "script.json").write_text(json.dumps(script))
    return suite


def gate_of(run_dir: Path, name: str) -> dict[str, Any]:
    verdict = json.loads((run_dir / "gate_verdict.json").read_text(encoding="utf-8"))
    return next(g for g in verdict["gates"] if g["name"] == name)


BEATS_BASE = {"name": "best-beats-base", "selected": True, "metric": "full_call_exact_match",
              "ci_lower_above": 0.0}  # fmt: skip


LEVEL = 1 - 0.05 / 3  # Bonferroni over the three candidates
STORED = {"name": "beats-shipped", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0, "stored": "label:shipped"}  # fmt: skip


def junit_gates(pytester: pytest.Pytester) -> dict[str, ET.Element]:
    """The JUnit gate cases (``<suite>::gates::<name>``) by gate name."""
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    return {str(c.get("name")): c for c in cases if str(c.get("classname")).endswith("gates")}


def session(pytester: pytest.Pytester, out: str, *args: str) -> tuple[pytest.RunResult, Path]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", out, *args)  # fmt: skip
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (pytester.path / out / "gate_verdict.json").is_file(), result.stdout.str()
    return result, pytester.path / out
