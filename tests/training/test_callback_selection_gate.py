"""The training callback's suite with a selection gate over the trained arm's checkpoints: the
callback evaluates the base and the trained arm only, so nothing of the ``[selection]`` is run;
its verdict fails the gate with the reason and never crashes (the stored form is left to the
pytest session and rescore, as every stored gate is)."""

from __future__ import annotations

import json
from pathlib import Path

from suite_factory import make_row, write_suite

from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, order_records
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.training.callback import evaluation_suite

GATES = [{"name": "best", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0},
         {"name": "best-vs-shipped", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0, "stored": "last"}]  # fmt: skip


def test_a_selection_gate_the_callbacks_arms_cannot_judge_fails_with_its_reason(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "suite"
    for step in (100, 200):
        (folder / "out" / f"checkpoint-{step}").mkdir(parents=True)
        (folder / "out" / f"checkpoint-{step}" / "adapter_config.json").write_text("{}")
    rows = [make_row(f"en-{i}", "en", None, {"name": f"t{i}", "arguments": {}}) for i in range(4)]
    suite = load_suite(write_suite(
        folder, rows=rows, suite={"slices": ["en"]}, comparisons=None, gates=GATES,
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
        selection={"metric": "full_call_exact_match", "among": "adapter@*"},
    ))  # fmt: skip
    live = evaluation_suite(suite, "adapter", ["base"])
    assert [gate.name for gate in live.gates] == ["best"]  # the stored one is the session's
    split = load_split(live.test_split, live.slices)
    arms = {}
    for arm, kind in (("base", "base"), ("adapter", "adapter")):
        records = [{"example_id": e.example_id, "arm": arm, "model_kind": kind,
                    "language": e.language, "prompt_sha256": e.prompt_sha256,
                    "raw_text": json.dumps(e.gold_call), "parsed_call": None,
                    "parse_status": "no_json", "decoding": dict(live.decoding), "cached": False}
                   for e in split.examples]  # fmt: skip
        arms[arm] = ArmRun(name=arm, model_kind=kind, model_identity={"fake": "m"},
                           adapter_identity=None, records=order_records(live, split, arm, records))
    outcome = evaluate_run(live, split, arms, run_id="r", model=suite_identity(live)["model"])
    assert outcome.selection is None and outcome.verdict is not None
    (gate,) = outcome.verdict["gates"]
    assert gate["passed"] is False and gate["reason"].startswith("nothing was selected")
    assert outcome.verdict["verdict"] == "fail"
