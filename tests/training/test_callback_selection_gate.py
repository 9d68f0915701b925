"""The training callback's reading of a suite shared with the later checkpoint sweep
(``load_suite(live=True)``): the glob arm is the one arm the model being trained stands for
(its checkpoints need not exist yet), its gates are kept as written (not repeated per step), and
the ``[selection]`` and its gates (both forms) are left out of each checkpoint's verdict: they
choose among the sweep's checkpoints, which the sweep's own pytest run judges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from suite_factory import make_row, write_suite

from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, order_records
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import InputError
from pytest_sommelier.training.callback import evaluation_suite

GATES = [{"name": "best", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0},
         {"name": "best-vs-shipped", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0, "stored": "last"},
         {"name": "parses", "arm": "adapter", "metric": "valid_json_rate", "min": 0.5}]  # fmt: skip


def _suite(folder: Path, steps: tuple[int, ...]) -> Path:
    for step in steps:
        (folder / "out" / f"checkpoint-{step}").mkdir(parents=True)
        (folder / "out" / f"checkpoint-{step}" / "adapter_config.json").write_text("{}")
    rows = [make_row(f"en-{i}", "en", None, {"name": f"t{i}", "arguments": {}}) for i in range(4)]
    return write_suite(
        folder, rows=rows, suite={"slices": ["en"]}, comparisons=None, gates=GATES,
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
        selection={"metric": "full_call_exact_match", "among": "adapter@*"},
    )  # fmt: skip


def test_before_the_first_checkpoint_the_sweep_suite_loads_for_the_callback(
    tmp_path: Path,
) -> None:
    path = _suite(tmp_path / "suite", ())
    with pytest.raises(InputError, match="SOM-SUITE-GLOB-EMPTY"):
        load_suite(path)  # the sweep itself needs checkpoints
    live = load_suite(path, live=True)
    assert list(live.arms) == ["base", "adapter"] and live.selection is None
    assert [gate.name for gate in live.gates] == ["parses"]


def test_the_callback_leaves_the_selection_and_its_gates_to_the_sweep(tmp_path: Path) -> None:
    path = _suite(tmp_path / "suite", (100, 200))
    swept = load_suite(path)
    assert swept.selection is not None and "adapter@100" in swept.arms
    assert sorted(gate.name for gate in swept.gates) == [
        "best", "best-vs-shipped", "parses@100", "parses@200"]  # fmt: skip
    live = evaluation_suite(load_suite(path, live=True), "adapter", None)
    assert [gate.name for gate in live.gates] == ["parses"] and live.selection is None
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
    assert gate["name"] == "parses" and gate["passed"] is True
    assert outcome.verdict["verdict"] == "pass"


def test_a_glob_arm_with_a_revision_is_refused_in_the_live_reading_too(tmp_path: Path) -> None:
    rows = [make_row("en-0", "en", None, {"name": "t", "arguments": {}})]
    path = write_suite(tmp_path / "suite", rows=rows, suite={"slices": ["en"]},
                       arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*",
                                                     "adapter_revision": "main"}})  # fmt: skip
    with pytest.raises(InputError, match="SOM-SUITE-GLOB-STEP") as error:
        load_suite(path, live=True)
    assert "\n" not in str(error.value) and "arms.adapter" in str(error.value)
