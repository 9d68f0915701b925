"""The one "write a scored run" sequence (``data.store.scored_run``) that the session finish and
the training callback both call: its order, its failure handling, stored gates through it, and
``pinned_specs`` (the callback's ``last``, fixed once) under hostile specs.

Runs are the synthetic pipeline's (``synthetic_run``): real suites, splits, reports and the
real views, no model and no pytest session.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from synthetic_run import synthetic_inputs

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.pipeline import evaluate_run
from pytest_sommelier.core.stored_comparison import value_intervals_of
from pytest_sommelier.core.types import GateConfig
from pytest_sommelier.core.verdict import stored_specs
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import read_index
from pytest_sommelier.data.store.history_verdict import look_up_stored
from pytest_sommelier.data.store.scored_run import (
    ScoredRun,
    StoreOptions,
    pinned_specs,
    write_scored_run,
)
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.view.run_views import RUN_VIEWS, RunText


def stored_gate(spec: str, name: str = "vs-stored", arm: str = "v1") -> GateConfig:
    return GateConfig(
        name=name, kind="stored", metric="full_call_exact_match", slice="overall", arm=arm,
        candidate=None, reference=None, gap=None, min=None, max=None, ci_lower_above=None,
        ci_lower_at_least=-1.0, delta_at_least=None, stored=spec,
    )  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, Any, Any]:
    folder = tmp_path_factory.mktemp("scored")
    suite, split, arms, identity = synthetic_inputs(
        folder, roots=12, translated=6, arms=("base", "v1"), resamples=200
    )
    return replace(suite, gates=()), split, arms, identity


def write(
    root: Path,
    inputs: tuple[Any, Any, Any, Any],
    run_id: str,
    *,
    gates: tuple[GateConfig, ...] = (),
    views: Any = RUN_VIEWS,
    events: list[str] | None = None,
    **options: Any,
) -> tuple[ScoredRun, Path]:
    suite, split, arms, identity = inputs
    suite = replace(suite, gates=gates)
    run_dir = root / run_id
    store_options = StoreOptions(store=root / "store", environ={}, **options)
    resolved = {**identity, "run_id": run_id}
    # what the gates need of the store, looked up first, as the session and the callback do
    evidence = look_up_stored(
        run_dir, store_options.store, stored_specs(suite, store_options.compare),
        suite=suite.name, resolved=artifacts.stored_resolved(resolved, split),
        flips=store_options.flips, pinned=store_options.pinned,
    )  # fmt: skip
    outcome = evaluate_run(
        suite, split, arms, run_id=run_id, model=identity["model"], stored=evidence
    )
    log = events if events is not None else []

    def written(folder: Path) -> None:
        log.append(f"written verdict={runlayout.verdict(folder).is_file()}")

    def verdict(value: Any, folder: Path) -> None:
        log.append(f"verdict {value['verdict']} file={runlayout.verdict(folder).is_file()}")

    with artifacts.claim_run(run_dir):
        done = write_scored_run(
            run_dir, suite, split, outcome, resolved=resolved, options=store_options,
            views=views, on_written=written, on_verdict=verdict,
            intervals=value_intervals_of(outcome.records, suite.statistics),
        )  # fmt: skip
    return done, run_dir


RUN_A, RUN_B, RUN_C = (f"20260101T00000{i}Z-abcdef" for i in (1, 2, 3))


def test_the_verdict_is_written_last_after_the_store_and_the_events(
    tmp_path: Path, inputs: Any
) -> None:
    events: list[str] = []
    done, run_dir = write(tmp_path, inputs, RUN_A, autosave=True, label="shipped", events=events)
    assert done.no_verdict is None and done.page_written and not done.over.errors
    # the run-written event sees no verdict yet; the verdict event sees it written
    assert events == ["written verdict=False", "verdict pass file=True"]
    for path in ("report.html", "report/summary.md", "gate_verdict.json",
                 "report/v1-vs-base.json", "report/v1-vs-base.md"):  # fmt: skip
        assert (run_dir / path).is_file(), path
    (entry,) = read_index(tmp_path / "store")
    assert entry["label"] == "shipped" and entry["run_id"] == RUN_A
    assert done.over.stored_run is not None and done.over.stored_run.number == 1
    assert done.over.stored is not None and done.over.stored.startswith("stored as run 0001")


class BrokenPage(RunText):
    def page(self, files: Any, title: str) -> str:
        raise InputError("SOM-TEST-PAGE", "the page could not be rendered")


def test_a_failed_step_writes_no_verdict_stores_nothing_and_calls_no_event(
    tmp_path: Path, inputs: Any
) -> None:
    events: list[str] = []
    done, run_dir = write(
        tmp_path, inputs, RUN_A, autosave=True, views=BrokenPage(), events=events
    )
    assert done.no_verdict is not None and "SOM-TEST-PAGE" in done.no_verdict
    assert "\n" not in done.no_verdict
    assert not (run_dir / "gate_verdict.json").exists() and events == []
    assert not (tmp_path / "store" / "index.json").exists()
    assert (run_dir / "report" / "summary.md").is_file()  # the steps before and after it ran


def test_a_summary_that_cannot_be_appended_is_one_line_and_no_verdict(
    tmp_path: Path, inputs: Any
) -> None:
    suite, split, arms, identity = inputs
    outcome = evaluate_run(suite, split, arms, run_id=RUN_A, model=identity["model"])
    run_dir = tmp_path / RUN_A
    with artifacts.claim_run(run_dir):
        done = write_scored_run(
            run_dir, suite, split, outcome, resolved={**identity, "run_id": RUN_A},
            options=StoreOptions(store=tmp_path / "store", autosave=True,
                                 environ={"GITHUB_STEP_SUMMARY": str(tmp_path)}),
            views=RUN_VIEWS,
        )  # fmt: skip
    assert done.no_verdict is not None and "SOM-OUTPUT-PATH" in done.no_verdict
    assert done.over.errors == [done.no_verdict]
    assert not (run_dir / "gate_verdict.json").exists()
    assert not (tmp_path / "store" / "index.json").exists()


def test_a_stored_gate_is_judged_against_the_run_its_label_names(
    tmp_path: Path, inputs: Any
) -> None:
    write(tmp_path, inputs, RUN_A, autosave=True, label="shipped")
    done, run_dir = write(tmp_path, inputs, RUN_B, gates=(stored_gate("label:shipped"),))
    (gate,) = done.outcome.verdict["gates"]  # type: ignore[index]
    assert gate["subject"] == "v1-vs-v1@label:shipped" and gate["passed"] is True
    report = done.over.by_spec["label:shipped"]
    assert report["reference"]["number"] == 1
    block = report["arms"]["v1"]
    # the same outputs: every example identical, every delta zero
    assert block["identical_outputs"] == block["compared_examples"] > 0
    assert set(block["deltas"].values()) <= {0.0, None}
    assert (run_dir / "report" / "compare-0001.json").is_file()
    verdict = json.loads((run_dir / "gate_verdict.json").read_text())
    assert verdict["gates"][0]["subject"] == "v1-vs-v1@label:shipped"


def test_a_pinned_last_keeps_naming_the_run_it_named_when_pinned(
    tmp_path: Path, inputs: Any
) -> None:
    write(tmp_path, inputs, RUN_A, autosave=True)
    suite = replace(inputs[0], gates=(stored_gate("last"),))
    pinned = pinned_specs(tmp_path / "store", suite, where="test")
    assert pinned == {"last": "1"}
    gates = (stored_gate("last"),)
    write(tmp_path, inputs, RUN_B, gates=gates, autosave=True, pinned=pinned)
    assert [e["number"] for e in read_index(tmp_path / "store")] == [1, 2]
    done, _ = write(tmp_path, inputs, RUN_C, gates=gates, pinned=pinned)
    assert done.over.by_spec["last"]["reference"]["number"] == 1  # not run 2, stored after
    unpinned, _ = write(tmp_path / "x", inputs, RUN_C, gates=gates)  # an empty store: missing
    (gate,) = unpinned.outcome.verdict["gates"]  # type: ignore[index]
    assert gate["passed"] is False


def test_pinned_specs_refuses_a_spec_naming_no_usable_run(tmp_path: Path, inputs: Any) -> None:
    for spec in ("last", "label:shipped", "7"):
        suite = replace(inputs[0], gates=(stored_gate(spec),))
        with pytest.raises(InputError) as caught:
            pinned_specs(tmp_path / "store", suite, where="SommelierCallback(store=...)")
        assert caught.value.code == "SOM-TRAIN-STORED" and "\n" not in str(caught.value)
        assert repr(spec) in str(caught.value) and "'vs-stored'" in str(caught.value)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    spec=st.one_of(
        st.text(max_size=40),
        st.sampled_from(["last", "last-any", "label:", "label:shipped", "0001", "1", "٣", "../x"]),
        # "label:" and 0-12 of any character, surrogates included: what from_regex drew from
        # [\x00-\U0010ffff]{0,12}, without its building a set of every code point first (most
        # of this test's time)
        st.text(st.characters(exclude_categories=()), max_size=12).map("label:".__add__),
    ),
    damaged=st.booleans(),
)
def test_pinned_specs_under_hostile_specs_and_stores_is_a_pin_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, inputs: Any, spec: str, damaged: bool
) -> None:
    store = tmp_path_factory.mktemp("hostile") / "store"
    store.mkdir()
    if damaged:
        (store / "index.json").write_text('{"schema_version": 1, "runs": [{"number": "x"}]}')
    suite = replace(inputs[0], gates=(stored_gate(spec),))
    try:
        pinned = pinned_specs(store, suite, where="SommelierCallback")
    except SommelierError as error:
        assert error.code == "SOM-TRAIN-STORED"
        text = str(error)
        assert "\n" not in text and "\r" not in text
    else:  # only a path naming a stored run folder could resolve in an empty store
        assert pinned == {}
