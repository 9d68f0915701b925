"""Which stored run a new run is judged against: ``last`` is the newest complete run that may be
a baseline (its verdict passed, or it failed only for want of a stored run), ``last-any`` the
newest complete run, ``label:NAME`` the newest run stored with ``--sommelier-label NAME``;
``--sommelier-autosave=pass`` stores passing runs only; a renamed suite does not drop its
compare-fail gates. Real pytester sessions over the scripted suite (``history_helpers``).
Hardening rows R11, R13 (docs/hardening.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, script
from plugin_helpers import write_scripted_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.store.history import resolve_stored, stored_runs
from pytest_sommelier.errors import InputError

SOLID = [{"name": "solid", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]
"""V1's adapter hits 4 of 7 (passes), REGRESSED's 2 of 7 (fails)."""


def run(pytester: pytest.Pytester, out: str, outputs: dict[str, str], *args: str,
        **overrides: Any) -> Any:  # fmt: skip
    overrides.setdefault("gates", SOLID)
    write_scripted_suite(pytester, script(outputs), **overrides)
    return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                              "--sommelier-out", out, *args)  # fmt: skip


def store(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".sommelier"


def against(result: Any) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("against stored run")]


def test_a_failing_run_never_becomes_the_baseline(pytester: pytest.Pytester, capsys) -> None:
    """R11: after a damaged adapter's run was stored, the next run was compared with it."""
    assert run(pytester, "one", V1, "--sommelier-autosave").ret == 0
    assert run(pytester, "two", REGRESSED, "--sommelier-autosave").ret == 1
    runs = stored_runs(store(pytester))
    assert [(r.number, r.entry["verdict"], r.entry["baseline"]) for r in runs] == [
        (1, "pass", True), (2, "fail", False)]  # fmt: skip
    assert resolve_stored(store(pytester), "last").number == 1
    assert resolve_stored(store(pytester), "last-any").number == 2
    result = run(pytester, "three", V1, "--sommelier-compare=last",
                 "--sommelier-compare-fail=full_call_exact_match:0.02")  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    assert against(result) and against(result)[0].startswith("against stored run 0001"), against(
        result
    )
    result = run(pytester, "four", V1, "--sommelier-compare=last-any")
    assert against(result)[0].startswith("against stored run 0002")
    capsys.readouterr()
    assert main(["compare", "2", "last", "--store", str(store(pytester))]) in (0, 4)
    assert "against stored run 0001" in capsys.readouterr().out


def test_a_suite_whose_runs_all_failed_has_no_last(pytester: pytest.Pytester) -> None:
    assert run(pytester, "one", REGRESSED, "--sommelier-autosave").ret == 1
    with pytest.raises(InputError, match="whose verdict was pass"):
        resolve_stored(store(pytester), "last")
    assert resolve_stored(store(pytester), "last-any").number == 1
    result = run(pytester, "two", V1, "--sommelier-compare=last")
    assert result.ret == 0
    assert "no stored run of suite 'factory' to compare with" in result.stdout.str()


def test_autosave_pass_stores_only_passing_runs(pytester: pytest.Pytester) -> None:
    result = run(pytester, "one", REGRESSED, "--sommelier-autosave=pass")
    assert result.ret == 1
    assert "not stored: its verdict is not pass (--sommelier-autosave=pass)" in result.stdout.str()
    assert stored_runs(store(pytester)) == []
    assert run(pytester, "two", V1, "--sommelier-autosave=pass").ret == 0
    assert [r.number for r in stored_runs(store(pytester))] == [1]


def test_a_labelled_run_is_compared_by_its_label(pytester: pytest.Pytester, capsys) -> None:
    assert run(pytester, "one", V1, "--sommelier-autosave", "--sommelier-label=v5").ret == 0
    assert run(pytester, "two", V1, "--sommelier-autosave").ret == 0
    runs = stored_runs(store(pytester))
    assert [r.entry.get("label") for r in runs] == ["v5", None]
    assert resolve_stored(store(pytester), "label:v5").number == 1
    result = run(pytester, "three", V1, "--sommelier-compare=label:v5")
    assert against(result)[0].startswith("against stored run 0001")
    capsys.readouterr()
    assert main(["compare", "2", "label:v5", "--store", str(store(pytester))]) in (0, 4)
    assert "against stored run 0001" in capsys.readouterr().out
    with pytest.raises(InputError, match="labelled 'v6'"):
        resolve_stored(store(pytester), "label:v6")
    for bad in ("--sommelier-label=12", "--sommelier-label=last", "--sommelier-label=a b"):
        result = run(pytester, "x", V1, bad)
        assert result.ret != 0 and "SOM-OPTION-VALUE: --sommelier-label" in result.stderr.str()


def test_a_first_run_with_stored_gates_can_still_be_the_baseline(pytester) -> None:
    """A stored gate fails the suite's first run (nothing to compare with); that run may still
    be ``last``, or no run of a suite with stored gates could ever be a baseline."""
    gates = [{"name": "kept", "arm": "adapter", "metric": "full_call_exact_match",
              "stored": "last", "delta_at_least": -0.9}]  # fmt: skip
    assert run(pytester, "one", V1, "--sommelier-autosave", gates=gates).ret == 1
    assert stored_runs(store(pytester))[0].entry["baseline"] is True
    assert run(pytester, "two", V1, gates=gates).ret == 0


def test_renaming_the_suite_does_not_drop_its_compare_fail_gates(pytester) -> None:
    """R13: a renamed suite with ``--sommelier-compare=last`` dropped every compare-fail gate
    with a note and passed."""
    assert run(pytester, "one", V1, "--sommelier-autosave").ret == 0
    args = ("--sommelier-compare=last", "--sommelier-compare-fail=full_call_exact_match:0.02")
    result = run(pytester, "two", REGRESSED, *args, suite={"name": "renamed"})
    assert result.ret == 1
    out = result.stdout.str()
    assert "SOM-HISTORY-RENAMED" in out and "run 0001 of suite 'factory'" in out, out
    verdict = pytester.path / "two" / "gate_verdict.json"  # an error line: no verdict at all
    assert not verdict.exists() or json.loads(verdict.read_text())["verdict"] != "pass"
    # without compare-fail gates a new suite name is a note, as for any first run
    result = run(pytester, "three", V1, "--sommelier-compare=last", suite={"name": "renamed"})
    assert result.ret == 0 and "SOM-HISTORY-RENAMED" not in result.stdout.str()


def test_history_and_the_summary_name_the_adapter_and_same_names_another_run(
    pytester: pytest.Pytester, capsys
) -> None:
    """R22: history and the summary never showed which adapter a run used. R21: the
    SOM-HISTORY-SAME hint suggested the command that had just failed."""
    assert run(pytester, "one", V1, "--sommelier-autosave", "--sommelier-label=v5").ret == 0
    assert run(pytester, "two", V1, "--sommelier-autosave").ret == 0
    capsys.readouterr()
    assert main(["history", str(store(pytester))]) == 0
    out = capsys.readouterr().out
    assert "adapters of 0001 (label v5): adapter local sha256:" in out, out
    assert "adapters of 0002: adapter local sha256:" in out, out
    summary = (pytester.path / "two" / "report" / "summary.md").read_text(encoding="utf-8")
    assert "Adapters: adapter `local sha256:" in summary, summary
    assert main(["compare", "2", "2", "--store", str(store(pytester))]) == 2
    err = capsys.readouterr().err
    assert "SOM-HISTORY-SAME" in err and "sommelier compare 0002 0001" in err, err
    assert "compare last 0003" not in err


def test_a_suite_without_gates_never_ends_in_a_bare_pass(pytester: pytest.Pytester) -> None:
    """R23: a suite with no gates ended ``verdict: PASS`` with nothing judged."""
    import xml.etree.ElementTree as ET

    result = run(pytester, "one", V1, "--junitxml", "results.xml", gates=[])
    from pytest_sommelier.view.terminal import verdict_text

    assert verdict_text({"verdict": "pass", "gates": []}) != "verdict: PASS"  # type: ignore[typeddict-item]
    assert result.ret == 0
    lines = [line for line in result.stdout.lines if line.startswith("verdict:")]
    assert lines == ["verdict: NO GATES (nothing was gated: the suite has no [[gates]])"], lines
    cases = list(ET.parse(pytester.path / "results.xml").getroot().iter("testcase"))
    verdicts = [c for c in cases if c.get("name") == "verdict"]
    assert len(verdicts) == 1, [c.attrib for c in cases][-3:]
    assert verdicts[0].find("failure") is None  # exit 0 and a passing case, as before
    summary = (pytester.path / "one" / "report" / "summary.md").read_text(encoding="utf-8")
    assert "NO GATES" in summary.splitlines()[0]


def test_plan_effect_is_a_size_and_a_bad_one_names_the_value(capsys) -> None:
    """R19: ``plan --effect -0.1`` was read as 0.1; ``--effect abc`` printed an internal
    function name."""
    assert main(["plan", "run", "--effect", "-0.1"]) == 2
    assert "negative: give the size of the difference" in capsys.readouterr().err
    assert main(["plan", "run", "--effect", "abc"]) == 2
    err = capsys.readouterr().err
    assert "'abc' is not a number" in err and "_effect" not in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [("full_call_exact_match:fr:0.02", "slice 'fr' is not a slice of suite 'factory'"),
     ("acceptable_call_match:0.02", "acceptable_call_match needs examples with acceptable")],
    ids=["unknown-slice", "acceptable-without-values"],
)  # fmt: skip
def test_a_compare_fail_spec_the_suite_cannot_meet_is_refused_before_any_model_call(
    pytester: pytest.Pytester, spec: str, message: str
) -> None:
    """R12: an unknown compare-fail slice, or acceptable_call_match on a split without
    acceptable values, was caught only after the whole run."""
    result = run(pytester, "one", V1, "--sommelier-compare=last",
                 f"--sommelier-compare-fail={spec}")  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    assert "SOM-HISTORY-FAIL-SPEC" in out and message in out, out
    assert not (pytester.path / "one" / "eval").exists(), "refused before any model call"


@pytest.mark.parametrize("key,value", [("ci_upper_below", -1.0), ("ci_lower_above", 1.0)])
def test_a_threshold_no_interval_can_pass_is_refused_at_load(tmp_path: Path, key: str,
                                                           value: float) -> None:  # fmt: skip
    """R20: ``ci_upper_below = -1.0`` was accepted, a gate that can never pass."""
    from plugin_helpers import rows
    from suite_factory import write_suite

    from pytest_sommelier.data.suite.load import load_suite

    gate = {"name": "g", "candidate": "adapter", "reference": "base",
            "metric": "full_call_exact_match", key: value}  # fmt: skip
    suite = write_suite(tmp_path / "suite", rows=rows(("en-0", "he-0")), gates=[gate])
    with pytest.raises(InputError, match=f"SOM-SUITE-GATE-THRESHOLD.*{key} = .*can never pass"):
        load_suite(suite)
