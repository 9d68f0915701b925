"""Which arm of a stored run a stored selection gate compares the selected candidate with
(``core.verdict.stored_selection_arm``, over what the store read:
``history_verdict.recorded_selection``): the stored run's own selected candidate (its
``report/selection.json``, read through the one validating reader), else its arm of the
candidate's family, else none with the reason; an edited ``selection.json`` is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.verdict import stored_selection_arm as choose
from pytest_sommelier.data.store.history import StoredRun
from pytest_sommelier.data.store.history_verdict import recorded_selection
from pytest_sommelier.errors import InputError

SELECTION = {
    "schema_version": "sommelier.selection.v1", "metric": "full_call_exact_match",
    "among": "adapter@*", "reference": "base", "reference_value": 0.0,
    "selected": "adapter@300", "selected_value": 0.5,
    "familywise": {"method": "bonferroni", "candidates": 3, "confidence_level": 0.99},
    "candidates": [{"arm": "adapter@300", "value": 0.5, "lower": 0.1, "upper": 0.7}],
}  # fmt: skip


def stored(folder: Path, arms: tuple[str, ...], selection: object | None) -> StoredRun:
    for arm in arms:
        report = runlayout.arm_report(runlayout.arm_dir(folder, arm))
        report.parent.mkdir(parents=True)
        report.write_text("{}", encoding="utf-8")
    if selection is not None:
        path = runlayout.selection(folder)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(selection), encoding="utf-8")
    return StoredRun(number=4, path=folder, entry={"suite": "s", "comparable": True})


def test_the_stored_runs_own_selection_comes_first(tmp_path: Path) -> None:
    run = stored(tmp_path, ("base", "adapter", "adapter@300"), SELECTION)
    assert stored_selection_arm(run, "adapter@200") == (
        "adapter@300", "stored run 0004 (no commit recorded)'s selected candidate"
    )


def test_without_a_selection_the_arm_of_the_candidates_family(tmp_path: Path) -> None:
    run = stored(tmp_path, ("base", "adapter"), None)
    arm, how = stored_selection_arm(run, "adapter@200")
    assert arm == "adapter" and "arm 'adapter'" in how
    plain = stored(tmp_path / "plain", ("base", "v5"), None)
    assert stored_selection_arm(plain, "v5")[0] == "v5"  # a candidate without '@' is its family


def test_without_either_there_is_no_arm_and_the_reason_says_why(tmp_path: Path) -> None:
    run = stored(tmp_path, ("base", "adapter@100"), None)
    arm, why = stored_selection_arm(run, "adapter@200")
    assert arm is None
    assert "recorded no [selection] and has no arm 'adapter'" in why and "\n" not in why


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from(["schema_version", "selected", "familywise", "candidates", "metric"]),
    value=st.one_of(st.none(), st.integers(), st.text(max_size=4), st.lists(st.integers(),
                    max_size=2), st.just({})),
)
def test_an_edited_selection_is_one_line_or_still_a_selection(
    tmp_path_factory: pytest.TempPathFactory, key: str, value: object
) -> None:
    folder = tmp_path_factory.mktemp("run")
    run = stored(folder, ("base", "adapter@300"), {**SELECTION, key: value})
    try:
        arm, _ = stored_selection_arm(run, "adapter@200")
    except InputError as error:
        assert error.code == "SOM-STORED-FIELD" and "selection.json" in str(error)
        assert "\n" not in str(error)
    else:  # accepted only as a selection that names a selected arm
        assert isinstance(arm, str) and arm


def test_a_first_run_failing_only_a_stored_selection_gate_may_be_the_baseline() -> None:
    from pytest_sommelier.data.store.history_record import NO_BASELINE, baseline_worthy

    waiting = {"kind": "selection", "passed": False, "reason": f"{NO_BASELINE} of suite 's'"}
    assert baseline_worthy({"verdict": "fail", "gates": [waiting]})
    lost = {"kind": "selection", "passed": False, "reason": "failed: -0.1 <= 0 (ci_lower_above)"}
    assert not baseline_worthy({"verdict": "fail", "gates": [waiting, lost]})


def stored_selection_arm(run: StoredRun, selected: str) -> tuple[str | None, str]:
    """What the store reads of ``run`` (``recorded_selection``), then the core's choice."""
    return choose(run, recorded_selection(run), selected)


def test_a_stored_selection_naming_its_reference_names_the_file_field_and_arm(
    tmp_path: Path,
) -> None:
    """V26: a ``selection.json`` whose ``selected`` is ``base`` (the selection's reference) was
    read as the selected candidate, and the gate compared with ``base`` under the subject
    ``...-vs-adapter@N``; now one line naming the file, the field and the arm."""
    run = stored(tmp_path, ("base", "adapter@300"), {**SELECTION, "selected": "base"})
    with pytest.raises(InputError) as caught:
        stored_selection_arm(run, "adapter@200")
    line = str(caught.value)
    assert caught.value.code == "SOM-STORED-FIELD" and "\n" not in line
    assert "selection.json: field 'selected' names 'base', the selection's reference" in line
    assert "'adapter@300'" in line  # the candidates it could have named


@settings(max_examples=examples(80), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(selected=st.one_of(st.sampled_from(["base", "adapter@300", "adapter@1", "adapter"]),
                          st.text(min_size=1, max_size=200)))
@example(selected="  ")  # whitespace runs are collapsed in the line
def test_any_stored_selected_arm_is_a_candidate_or_one_line_naming_it(
    tmp_path_factory: pytest.TempPathFactory, selected: str
) -> None:
    folder = tmp_path_factory.mktemp("run")
    run = stored(folder, ("base", "adapter@300"), {**SELECTION, "selected": selected})
    try:
        arm, how = stored_selection_arm(run, "adapter@200")
    except InputError as error:
        line = str(error)
        assert error.code == "SOM-STORED-FIELD" and "\n" not in line
        assert "selection.json: field 'selected' names " in line
        # an error's text is one line with its whitespace runs collapsed (errors.SommelierError)
        assert " ".join(repr(selected)[:57].split()) in line and len(line) < 400
        assert selected != "adapter@300"
    else:  # accepted only as one of the selection's own candidates
        assert arm == selected == "adapter@300" and "selected candidate" in how
