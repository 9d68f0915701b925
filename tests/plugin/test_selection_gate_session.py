"""A gate on the ``[selection]``'s selected checkpoint in a pytest session: a sweep of three
fake checkpoints (an adapter glob), the one fake model scripted so one checkpoint is clearly
best; the gate read at the Bonferroni level over the three candidates, against the reference
and against a stored run; serial and ``-n 2``; ``sommelier rescore`` gives the same verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from suite_factory import make_row, write_suite

pytest_plugins = ["pytester"]

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
    script = {"base": hits(base), **{f"adapter@{s[11:]}": hits(c) for s, c in zip(STEPS, counts)}}
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


def test_smoke(pytester: pytest.Pytester) -> None:
    sweep(pytester, (8, 20, 12), [BEATS_BASE])
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    print(result.stdout.str())
    print(json.dumps(gate_of(pytester.path / "out", "best-beats-base"), indent=1))
    assert 0
