"""``data.store.runread``: the page's and the summary's records built from memory
(``run_files_of``, ``summary_inputs_of``) equal the records read back from the files written
from the same values (``read_run``, ``summary_inputs``), and render the same bytes, whatever an
arm's model identity holds (tuples, numpy scalars, ``-0.0``, large integers, keys out of
order): both are built by one builder from the values in their stored form."""

from __future__ import annotations

import copy
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from synthetic_run import synthetic_inputs

from pytest_sommelier.core.pipeline import RunOutcome, evaluate_run
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.runread import (
    read_run,
    run_files_of,
    summary_inputs,
    summary_inputs_of,
)
from pytest_sommelier.view.ci_summary import summary_text
from pytest_sommelier.view.html import render_page
from pytest_sommelier.view.run_views import RUN_VIEWS

RUN_ID = "20260101T000000Z-abcdef"
FINITE = st.floats(allow_nan=False, allow_infinity=False)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    FINITE,
    st.sampled_from([-0.0, 0.1 + 0.2, 1 / 3]),
    st.text(max_size=5),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(np.int64),
    FINITE.map(np.float64),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(np.float32),
    st.booleans().map(np.bool_),
)
HOSTILE = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(tuple),
        st.lists(inner, max_size=3),
        st.dictionaries(st.text("zyxba", min_size=1, max_size=3), inner, max_size=3),
    ),
    max_leaves=10,
)


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, RunOutcome, dict]:
    """A small synthetic run evaluated in memory (arms base, v1; English and Hebrew)."""
    folder = tmp_path_factory.mktemp("synthetic")
    suite, split, arms, identity = synthetic_inputs(
        folder, roots=6, translated=3, arms=("base", "v1"), resamples=200
    )
    outcome = evaluate_run(suite, split, arms, run_id=RUN_ID, model=identity["model"])
    return suite, split, outcome, {**identity, "run_id": RUN_ID}


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(extra=st.dictionaries(st.text("zyxba", min_size=1, max_size=3), HOSTILE, max_size=4))
def test_the_records_from_memory_equal_the_records_read_back_and_render_the_same(
    evaluated: tuple[Any, Any, RunOutcome, dict], extra: dict[str, Any]
) -> None:
    _, split, outcome, resolved = evaluated
    reports = copy.deepcopy(outcome.arm_reports)
    for report in reports.values():
        report["model_identity"] = {**(report["model_identity"] or {}), "hostile": extra}
    outcome = replace(outcome, arm_reports=reports)
    with tempfile.TemporaryDirectory() as folder:
        run_dir = Path(folder) / "run"
        artifacts.write_outcome(
            run_dir, outcome, resolved=resolved, split=split,
            comparison_markdown=RUN_VIEWS.outcome_markdown(outcome),
        )  # fmt: skip
        if outcome.verdict is not None:
            artifacts.write_verdict(run_dir, outcome.verdict)
        memory = run_files_of(run_dir, resolved, outcome, split, outcome.verdict)
        disk = read_run(run_dir)
        assert memory == disk
        assert render_page(memory, "run") == render_page(disk, "run")
        inputs = summary_inputs_of(run_dir, resolved, outcome, split, outcome.verdict)
        assert inputs == summary_inputs(run_dir)
        assert summary_text(inputs) == summary_text(summary_inputs(run_dir))
        for name in outcome.comparison_reports:
            markdown = (run_dir / "report" / f"{name}.md").read_text(encoding="utf-8")
            stored = artifacts.read_json(run_dir / "report" / f"{name}.json")
            assert RUN_VIEWS.outcome_markdown(replace(outcome, comparison_reports={
                name: stored}))[name] == markdown  # fmt: skip


def test_a_note_for_each_part_missing_from_memory_as_from_the_files(
    evaluated: tuple[Any, Any, RunOutcome, dict], tmp_path: Path
) -> None:
    """An arm without a report and a configured comparison without one: the same notes, in
    the same order, from memory and from the files."""
    _, split, outcome, resolved = evaluated
    reports = {name: report for name, report in outcome.arm_reports.items() if name != "v1"}
    outcome = replace(outcome, arm_reports=reports, comparison_reports={}, verdict=None)
    artifacts.write_outcome(
        tmp_path, outcome, resolved=resolved, split=split, comparison_markdown={}
    )
    memory = run_files_of(tmp_path, resolved, outcome, split, None)
    disk = read_run(tmp_path)
    assert memory == disk
    assert [note.split(" ")[1] for note in memory.notes] == ["'v1'", "'v1-vs-base'"], memory.notes
