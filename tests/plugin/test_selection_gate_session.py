"""A gate on the ``[selection]``'s selected checkpoint in a pytest session: a sweep of three
fake checkpoints (an adapter glob), the one fake model scripted so one checkpoint is clearly
best; the gate read at the Bonferroni level over the three candidates, against the reference
and against a stored run; serial and ``-n 2``."""

from __future__ import annotations

import json

import pytest
from sweep_helpers import BEATS_BASE, LEVEL, STORED, gate_of, junit_gates, session, sweep

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(  # -n 2 starts two worker processes per session: slow tier
    "workers", [(), pytest.param(("-n", "2"), marks=pytest.mark.slow)], ids=["serial", "xdist"]
)
def test_the_selected_checkpoint_beats_the_base_at_the_adjusted_level(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    sweep(pytester, (8, 20, 12), [BEATS_BASE])
    result, run_dir = session(pytester, "out", "--junitxml=junit.xml", *workers)
    assert result.ret == 0, result.stdout.str()
    entry = gate_of(run_dir, "best-beats-base")
    assert entry["kind"] == "selection" and entry["passed"] is True
    assert entry["subject"] == "selected(adapter@200)-vs-base"
    assert entry["selection"] == {"selected": "adapter@200", "reference": "base", "stored": None,
                                  "candidates": 3, "confidence_level": pytest.approx(LEVEL),
                                  "method": "bonferroni"}  # fmt: skip
    assert entry["interval"]["confidence_level"] == pytest.approx(LEVEL)
    assert entry["interval"]["discordant"] == {"candidate_only": 20, "reference_only": 0}
    # the interval the gate read is the selection's own (the same level, the same records)
    selection = json.loads((run_dir / "report" / "selection.json").read_text(encoding="utf-8"))
    chosen = next(c for c in selection["candidates"] if c["arm"] == "adapter@200")
    assert entry["interval"]["lower"] == pytest.approx(chosen["lower"])
    # every view names the subject and says the level is adjusted over the candidates
    phrase = "selected among 3 candidates: level adjusted to 98.3% (bonferroni over 3)"
    result.stdout.fnmatch_lines([f"PASS best-beats-base: selected(adapter@200)-vs-base *{phrase}*"])
    summary = (run_dir / "report" / "summary.md").read_text(encoding="utf-8")
    assert "selected(adapter@200)-vs-base" in summary and phrase in summary
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "selected(adapter@200)-vs-base" in page and phrase in page
    assert junit_gates(pytester)["best-beats-base"].find("failure") is None


def test_the_gate_fails_when_only_the_unadjusted_interval_clears(
    pytester: pytest.Pytester,
) -> None:
    """Six of 24 fixed, none broken: the plain 95% interval of the comparison clears zero, the
    interval at 98.3% (the best of three) does not, and the gate reads the latter."""
    sweep(pytester, (3, 6, 4), [BEATS_BASE])
    result, run_dir = session(pytester, "out", "--junitxml=junit.xml")
    assert result.ret == 1
    failure = junit_gates(pytester)["best-beats-base"].find("failure")
    assert failure is not None
    assert "selected(adapter@200)-vs-base" in str(failure.get("message"))
    assert "level adjusted to 98.3% (bonferroni over 3)" in str(failure.get("message"))
    entry = gate_of(run_dir, "best-beats-base")
    assert entry["passed"] is False and entry["selection"]["selected"] == "adapter@200"
    assert entry["interval"]["lower"] <= 0.0 < entry["interval"]["upper"]
    plain = json.loads((run_dir / "report" / "adapter@200-vs-base.json").read_text("utf-8"))
    unadjusted = plain["intervals"]["intervals"]["full_call_exact_match"]
    assert plain["intervals"]["confidence_level"] == pytest.approx(0.95)
    assert unadjusted["lower"] > 0.0  # a plain comparison gate would have passed
    result.stdout.fnmatch_lines(["FAIL best-beats-base: selected(adapter@200)-vs-base*98.3%*"])


def test_the_selected_checkpoint_against_a_labelled_stored_run(pytester: pytest.Pytester) -> None:
    """Run one is stored as ``shipped`` (its selection: adapter@200, 6 of 24); run two's best
    (adapter@300, every example) is compared with run one's selected candidate, not with its
    own family's arm; nothing stored yet fails the gate with the line as its reason."""
    last = {**STORED, "name": "beats-last", "stored": "last-any"}
    sweep(pytester, (3, 6, 4), [last])
    result, one = session(pytester, "one", "--sommelier-autosave", "--sommelier-label", "shipped")
    first = gate_of(one, "beats-last")
    assert result.ret == 1 and first["passed"] is False  # a claim without evidence never passes
    assert first["reason"].startswith("no comparable stored run of suite 'factory'")
    assert first["subject"] == "selected(adapter@200)-vs-adapter@last-any"
    sweep(pytester, (10, 12, 24), [STORED, last])
    result, two = session(pytester, "two")
    assert gate_of(two, "beats-last")["selection"]["reference"] == "adapter@200"
    entry = gate_of(two, "beats-shipped")
    assert result.ret == 0, result.stdout.str()
    assert entry["passed"] is True and entry["subject"] == (
        "selected(adapter@300)-vs-adapter@label:shipped"
    )
    assert entry["selection"]["reference"] == "adapter@200"  # the stored run's selected one
    assert entry["selection"]["stored"] == "label:shipped"
    assert entry["interval"]["discordant"] == {"candidate_only": 18, "reference_only": 0}
    assert entry["interval"]["confidence_level"] == pytest.approx(LEVEL)
    result.stdout.fnmatch_lines(["PASS beats-shipped: selected(adapter@300)-vs-adapter@label:*"])


def test_an_incomplete_run_says_which_arm_of_the_selected_comparison_was_cut(
    pytester: pytest.Pytester,
) -> None:
    sweep(pytester, (8, 20, 12), [BEATS_BASE])
    result, run_dir = session(pytester, "out", "-k", "not en-3")
    assert result.ret != 0
    verdict = json.loads((run_dir / "gate_verdict.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] == "incomplete"
    result.stdout.fnmatch_lines(["*best-beats-base*arm 'adapter@200' was not fully run*"])


def test_a_stored_run_without_a_selection_is_read_through_the_candidates_family(
    pytester: pytest.Pytester,
) -> None:
    """A stored run that recorded no ``[selection]``: the selected ``adapter@300`` is compared
    with its arm ``adapter`` (the family); a stored run without that arm fails the gate with
    the reason (a claim without evidence never passes)."""
    plain = {"base": {}, "adapter": {"adapter": "out/checkpoint-200"}}
    sweep(pytester, (0, 0, 0), [], arms=plain, selection=None)
    session(pytester, "v4", "--sommelier-autosave", "--sommelier-label", "v4")
    other = {"base": {}, "other": {"adapter": "out/checkpoint-200"}}
    sweep(pytester, (0, 0, 0), [], arms=other, selection=None)
    session(pytester, "v3", "--sommelier-autosave", "--sommelier-label", "v3")
    family = {**STORED, "name": "beats-v4", "stored": "label:v4"}
    missing = {**STORED, "name": "beats-v3", "stored": "label:v3"}
    sweep(pytester, (10, 12, 24), [family, missing])
    result, run_dir = session(pytester, "now")
    assert result.ret == 1
    held = gate_of(run_dir, "beats-v4")
    assert held["passed"] is True and held["selection"]["reference"] == "adapter"
    assert held["subject"] == "selected(adapter@300)-vs-adapter@label:v4"
    assert held["interval"]["discordant"] == {"candidate_only": 24, "reference_only": 0}
    lost = gate_of(run_dir, "beats-v3")
    assert lost["passed"] is False and lost["observed"] is None
    assert "recorded no [selection] and has no arm 'adapter'" in lost["reason"]
    assert lost["selection"]["reference"] is None


def test_an_enabled_scorer_chooses_the_checkpoint_and_gates_it(pytester: pytest.Pytester) -> None:
    """``[selection] metric`` may name a scorer the suite enables: it chooses as a built-in
    metric does, and a selection gate on it reads its adjusted interval. Checkpoint 100 is
    best by the strict full call (10 exact), checkpoint 200 by ``lenient_call`` (6 exact and
    14 more with numbers written as strings: 20)."""
    from plugin_helpers import SCORER_HOOK
    from sweep_helpers import GOLD, IDS

    gate = {"name": "best-lenient", "selected": True, "metric": "lenient_call",
            "ci_lower_above": 0.0}  # fmt: skip
    suite = sweep(pytester, (10, 6, 8), [gate], suite={"slices": ["en"],
                  "scorers": ["lenient_call"]},
                  selection={"metric": "lenient_call", "among": "adapter@*"})  # fmt: skip
    with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(SCORER_HOOK)
    script = json.loads((suite.parent / "script.json").read_text(encoding="utf-8"))
    for i in IDS[6:20]:  # the same call with its number as a string: lenient, not exact
        gold = GOLD[i]
        script["adapter@200"][i] = json.dumps(
            {"name": gold["name"], "arguments": {"n": str(gold["arguments"]["n"])}})
    (suite.parent / "script.json").write_text(json.dumps(script), encoding="utf-8")
    result, run_dir = session(pytester, "out")
    assert result.ret == 0, result.stdout.str()
    selection = json.loads((run_dir / "report" / "selection.json").read_text(encoding="utf-8"))
    assert selection["metric"] == "lenient_call" and selection["selected"] == "adapter@200"
    values = {c["arm"]: c["value"] for c in selection["candidates"]}
    assert values == {"adapter@100": pytest.approx(10 / 24), "adapter@200": pytest.approx(20 / 24),
                      "adapter@300": pytest.approx(8 / 24)}  # fmt: skip
    entry = gate_of(run_dir, "best-lenient")
    assert entry["passed"] is True and entry["subject"] == "selected(adapter@200)-vs-base"
    assert entry["interval"]["confidence_level"] == pytest.approx(LEVEL)
    assert entry["interval"]["discordant"] == {"candidate_only": 20, "reference_only": 0}


def test_a_selection_metric_nobody_enables_lists_the_enabled_scorers(
    pytester: pytest.Pytester,
) -> None:
    from plugin_helpers import SCORER_HOOK

    suite = sweep(pytester, (10, 6, 8), [], suite={"slices": ["en"], "scorers": ["lenient_call"]},
                  selection={"metric": "semantic_args", "among": "adapter@*"})  # fmt: skip
    with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(SCORER_HOOK)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret == 2, result.stdout.str()
    line = next(x for x in result.stdout.lines if "SOM-SUITE-SELECTION" in x)
    assert "'semantic_args' is not a metric" in line and "lenient_call" in line


def test_a_stored_selection_naming_the_base_fails_the_gate_naming_the_file(
    pytester: pytest.Pytester,
) -> None:
    """V26 in a session: the stored run's ``report/selection.json`` edited to select ``base``
    (its reference) was compared with ``base`` under the subject ``...-vs-adapter@label:...``;
    now the gate fails with the one line naming the file, the field and the arm."""
    sweep(pytester, (3, 6, 4), [])
    session(pytester, "one", "--sommelier-autosave", "--sommelier-label", "shipped")
    (path,) = [p for p in pytester.path.rglob("selection.json")
               if (pytester.path / "one") not in p.parents]  # fmt: skip
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, "selected": "base"}), encoding="utf-8")
    sweep(pytester, (10, 12, 24), [STORED])
    result, run_dir = session(pytester, "two")
    entry = gate_of(run_dir, "beats-shipped")
    assert result.ret == 1 and entry["passed"] is False
    assert "SOM-STORED-FIELD" in entry["reason"] and "\n" not in entry["reason"]
    assert "selection.json: field 'selected' names 'base', the selection's reference" in (
        entry["reason"]
    )
