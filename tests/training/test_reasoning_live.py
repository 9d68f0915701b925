"""The training callback's pipeline (``training.live_run.generate_payloads``, the same
``Runner.payload`` the pytest session and a checkpoint sweep call) reads the suite's
``[parser] reasoning`` rule: a generator whose outputs reason before they call is split the
same way there as in a session (tests/plugin/test_reasoning_session.py), with the reasoning
counted by the generator's tokenizer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugin_helpers import GOLD, rows
from suite_factory import write_suite

from pytest_sommelier.core.pipeline import evaluate_run
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.plugin.runner import Runner, arm_runs
from pytest_sommelier.training.live_run import generate_payloads

IDS = ("en-0", "en-1")


class Reasoner:
    """Reasons about a bracket, then calls the gold call of its example (by prompt)."""

    def __init__(self) -> None:
        self.model_identity: dict[str, Any] = {"fake": "reasoner"}
        self.adapter_identity: dict[str, Any] | None = None

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        return [
            "<think>[maybe, " + p + "]</think>" + json.dumps(GOLD[p.split()[1][:4]])
            for p in prompts
        ]

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_the_live_pipeline_splits_by_the_suites_rule(tmp_path: Path) -> None:
    for reasoning, hits in (("think", 2), (None, 0)):
        parser = {} if reasoning is None else {"parser": {"reasoning": reasoning}}
        suite = load_suite(write_suite(tmp_path / str(reasoning), rows=rows(IDS),
                                       suite={"slices": ["en"]}, arms={"base": {}},
                                       comparisons=None, **parser))
        split = load_split(suite.test_split, suite.slices)
        errors: list[str] = []
        payloads, errored = generate_payloads(
            suite, split, {"base": Reasoner()}, Runner(), batch_scope={}, errors=errors
        )
        assert errors == [] and errored == []
        records = [p["record"] for p in payloads]
        if reasoning is not None:
            assert all(r["reasoning_text"].startswith("[maybe, ") for r in records)
            assert all(r["reasoning_tokens"] == 4 for r in records)
        else:
            assert all(r["reasoning_text"] is None for r in records)
        outcome = evaluate_run(suite, split, arm_runs(suite, split, payloads), run_id="r",
                               model={"m": 1}, gates=False)
        report = outcome.arm_reports["base"]
        assert report["metrics"]["full_call_exact_match"]["numerator"] == hits
        if reasoning is not None:
            assert report["reasoning"]["median_tokens"] == 4.0
