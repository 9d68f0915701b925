"""``data.store.history_runs``: which stored runs are one training run (one line of the
checkpoints chart), read from a real store; "adapter changed" by content only.

Issue 41: the checkpoints chart joined several training runs into one zig-zag line and mixed
a sampled evaluation with full ones. A training run is what the callback records as
``training.run`` (one id per ``Trainer.train()``, kept on resume); a store written before
that id was recorded is split where the step does not rise; a sample and a full evaluation
are never one training run.
"""

from __future__ import annotations

from typing import Any

import pytest
from history_helpers import V1, save_run, session, with_run_id

from pytest_sommelier.cli import main
from pytest_sommelier.data.store.history_record import describe_run
from pytest_sommelier.data.store.history_runs import history_runs, training_lines

SAMPLE = {"roots": 2, "of_roots": 4, "seed": 1}


def entry(step: int, run: str | None = None, sample: Any = None, **more: Any) -> dict:
    training = {"step": step, "checkpoint": f"checkpoint-{step}", "arm": "adapter"}
    if run is not None:
        training["run"] = run
    return {"suite": more.pop("suite", "s"), "training": {**training, **more}, "sample": sample}


def test_recorded_ids_make_the_training_runs_whatever_the_steps() -> None:
    runs = [entry(10, "a"), entry(20, "a"), entry(10, "b"), entry(30, "a"), entry(20, "b")]
    assert training_lines(runs) == [1, 1, 2, 1, 2]


def test_without_ids_a_step_that_does_not_rise_starts_another_training_run() -> None:
    runs = [entry(10), entry(20), entry(30), entry(10), entry(20), entry(20), entry(5)]
    assert training_lines(runs) == [1, 1, 1, 2, 2, 3, 4]


def test_a_sample_and_a_full_evaluation_are_never_one_training_run() -> None:
    runs = [entry(10, "a"), entry(20, "a", SAMPLE), entry(30, "a"), entry(40, "a", SAMPLE)]
    assert training_lines(runs) == [1, 2, 1, 2]
    unnamed = [entry(10), entry(20, sample=SAMPLE), entry(30), entry(40, sample=SAMPLE)]
    assert training_lines(unnamed) == [1, 2, 1, 2]


def test_other_arms_suites_and_plain_runs() -> None:
    plain = {"suite": "s", "training": None, "sample": None}
    runs = [entry(10, "a"), plain, entry(10, "a", arm="v2"), entry(10, "a", suite="t"),
            {"suite": "s", "training": {"step": "x"}, "sample": None}]  # fmt: skip
    assert training_lines(runs) == [1, None, 2, 1, None]  # numbered per suite


def test_a_store_of_training_runs_is_read_as_its_training_runs(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real store: 0001 the shipped adapter (label ``shipped``), then checkpoints of two
    training runs with ids (the second a sample), then two of an older callback (no id):
    the history reads five lines' worth of runs as three training runs plus one."""
    full = session(pytester, "full", V1)
    part = session(pytester, "part", V1, "--sommelier-sample", "2:1")
    store = pytester.path / ".sommelier"
    save_run(full, store, label="shipped")
    plan = [(full, 10, "tr-a"), (full, 20, "tr-a"), (part, 10, "tr-b"), (full, 30, "tr-a"),
            (part, 20, "tr-b"), (full, 10, None), (full, 20, None)]  # fmt: skip
    for number, (run_dir, step, run) in enumerate(plan):
        copy = with_run_id(run_dir, pytester.path / f"copy-{number}", f"copy-{number}")
        training = {"step": step, "epoch": 1.0, "checkpoint": f"checkpoint-{step}",
                    "arm": "adapter", "loss": 2.0 - step / 20}  # fmt: skip
        if run is not None:
            training["run"] = run
        save_run(copy, store, record={**describe_run(copy), "training": training})
    runs = history_runs(store)
    assert [r["training_run"] for r in runs] == [None, 1, 1, 2, 1, 2, 3, 3]
    assert all(not r["arms"]["adapter"]["adapter_changed"] for r in runs)  # the same adapter
    capsys.readouterr()
    assert main(["history", str(store), "--out", str(pytester.path / "h.html")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[5:8] == ["label", "step", "checkpoint"]
    rows: dict[str, list[str]] = {}  # the table row: the first line of the run (time: 2 words)
    for line in out:
        rows.setdefault(line[:4], line.split())
    assert rows["0001"][5:9] == ["pass", "shipped", "-", "-"]
    assert rows["0005"][5:10] == ["pass", "-", "30", "(T1)", "checkpoint-30"]
    assert rows["0006"][5:11] == ["pass", "(sample)", "-", "20", "(T2)", "checkpoint-20"]
    assert not any("adapter changed" in line for line in out)
    page = (pytester.path / "h.html").read_text(encoding="utf-8")
    assert page.count('data-curve="checkpoints"') == 3  # overall, en, he
    assert page.count('data-curve="loss"') == 1


def test_adapter_changed_is_said_only_for_another_digest(pytester: pytest.Pytester) -> None:
    """Two stored runs of one adapter whose recorded identities differ in the arm's name and
    preflight record only: no "adapter changed"; a third whose digest differs: said."""
    import json

    first = session(pytester, "one", V1)
    store = pytester.path / ".sommelier"
    save_run(first, store)
    for number, change in enumerate(
        [{"name": "renamed", "preflight": {"warnings": ["x"]}}, {"sha256": "f" * 64}]
    ):
        copy = with_run_id(first, pytester.path / f"c{number}", f"c{number}")
        path = copy / "eval" / "adapter" / "evaluation_report.json"
        report = json.loads(path.read_text(encoding="utf-8"))
        report["adapter_identity"] = {**(report.get("adapter_identity") or {}), **change}
        path.write_text(json.dumps(report), encoding="utf-8")
        save_run(copy, store)
    runs = history_runs(store)
    assert [r["arms"]["adapter"]["adapter_changed"] for r in runs] == [False, False, True]
    assert [r["arms"]["adapter"]["mark"] for r in runs] == [None, None, None]
