"""Compare-fail gates (``--sommelier-compare-fail``) under a familywise method: members of the
suite's one family, each judged as the non-inferiority claim ``lower bound >= -MARGIN`` of this
run minus the stored run at the member's adjusted level, in the session (with and without
``-n 2``) and in ``sommelier rescore --suite --compare --compare-fail``; under ``none`` they
keep the point rule (identical outputs always pass)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, script
from plugin_helpers import write_scripted_suite

from pytest_sommelier.core import proportions

METRIC = "full_call_exact_match"
UPLIFT = {"name": "uplift", "candidate": "adapter", "reference": "base", "metric": METRIC,
          "ci_lower_above": 0.0}  # fmt: skip
WIDE = f"--sommelier-compare-fail={METRIC}:0.9"
NARROW = f"--sommelier-compare-fail={METRIC}:0.02"


def session(pytester: pytest.Pytester, out: str, outputs: dict[str, str], *args: str,
            **overrides: Any) -> tuple[pytest.RunResult, dict[str, Any]]:  # fmt: skip
    write_scripted_suite(pytester, script(outputs), **overrides)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", out, *args)  # fmt: skip
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    verdict_path = pytester.path / out / "gate_verdict.json"
    assert verdict_path.is_file(), result.stdout.str()
    return result, json.loads(verdict_path.read_text(encoding="utf-8"))


def by_name(verdict: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {gate["name"]: gate for gate in verdict["gates"]}


@pytest.mark.parametrize(  # -n 2 starts two worker processes per session: slow tier
    "workers", [(), pytest.param(("-n", "2"), marks=pytest.mark.slow)], ids=["serial", "xdist"]
)
def test_compare_fail_gates_are_members_of_the_family(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    statistics = {"familywise": "bonferroni"}
    session(pytester, "one", V1, "--sommelier-autosave", gates=[UPLIFT], statistics=statistics)
    result, verdict = session(pytester, "two", V1, "--sommelier-compare=last-any", WIDE, *workers,
                              gates=[UPLIFT], statistics=statistics)  # fmt: skip
    family = verdict["familywise"]
    members = [f"compare-fail:{arm}:{METRIC}:0.9" for arm in ("base", "adapter")]
    assert family["method"] == "bonferroni"
    assert family["size"] == 3
    assert family["family"][0] == "uplift" and sorted(family["family"][1:]) == sorted(members)
    gates = by_name(verdict)
    for name in ["uplift", *members]:
        assert gates[name]["interval"]["confidence_level"] == pytest.approx(1 - 0.05 / 3)
        assert family["adjusted_confidence_level"][name] == pytest.approx(1 - 0.05 / 3)
    for name in members:
        member = gates[name]
        # the non-inferiority claim on Tango's interval (a margin), the flips kept beside it
        assert member["threshold"] == {"ci_lower_at_least": -0.9}
        assert member["interval"]["method"].startswith("tango_asymptotic_score")
        assert member["interval"]["discordant"] == {"candidate_only": 0, "reference_only": 0}
        assert member["passed"] is True, member["reason"]
        assert member["observed"] >= -0.9
        assert member["stored"] == "0001"
        assert "this run minus stored run 0001" in member["reason"]
    result.stdout.fnmatch_lines([f"PASS compare-fail:adapter:{METRIC}:0.9:*98.3%*"])


def test_under_a_family_a_point_difference_is_no_claim(pytester: pytest.Pytester) -> None:
    """Identical outputs pass the point rule, but at a margin of 0.02 the paired interval over
    7 pairs cannot show that nothing was lost: as a family member the gate fails; the same run
    under ``none`` passes it (the point rule, no claim at a level)."""
    statistics = {"familywise": "holm", "cluster": "example"}
    session(pytester, "one", V1, "--sommelier-autosave", statistics=statistics)
    _, held = session(pytester, "two", V1, "--sommelier-compare=last-any", NARROW,
                      statistics=statistics)  # fmt: skip
    member = by_name(held)[f"compare-fail:adapter:{METRIC}:0.02"]
    assert member["passed"] is False
    assert member["threshold"] == {"ci_lower_at_least": -0.02}
    assert "Holm-adjusted p" in member["reason"]
    assert held["familywise"]["size"] == 2 and held["verdict"] == "fail"
    lower = member["interval"]["lower"]
    # Tango's lower bound for 0 discordant pairs of 7, at the family's 95% (Holm)
    expected, _ = proportions.tango_interval(0, 0, 7, confidence_level=0.95)
    assert lower == pytest.approx(expected, abs=1e-9)


def test_under_none_the_point_rule_stays(pytester: pytest.Pytester) -> None:
    session(pytester, "one", V1, "--sommelier-autosave")
    _, verdict = session(pytester, "two", V1, "--sommelier-compare=last-any", NARROW)
    member = by_name(verdict)[f"compare-fail:adapter:{METRIC}:0.02"]
    assert member["passed"] is True and member["threshold"] == {"delta_at_least": -0.02}
    assert verdict["familywise"]["size"] == 0


def test_a_refused_comparison_is_a_failing_member(pytester: pytest.Pytester) -> None:
    """A stored run that cannot be compared: the member fails with the refusal (the session
    then writes no verdict, as for any failed comparison)."""
    statistics = {"familywise": "bonferroni"}
    session(pytester, "one", V1, "--sommelier-autosave", statistics=statistics)
    write_scripted_suite(pytester, script(V1), gates=[UPLIFT], statistics=statistics)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", "two", "--sommelier-compare=7",
                                WIDE)  # fmt: skip
    result.stdout.fnmatch_lines([f"FAIL compare-fail:{METRIC}:0.9: *unavailable: "
                                 "SOM-HISTORY-UNKNOWN: *no stored run 0007*"])  # fmt: skip
    assert result.ret != 0
    assert not (pytester.path / "two" / "gate_verdict.json").exists()


def test_rescore_evaluates_the_same_family(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sommelier.cli import main

    statistics = {"familywise": "bonferroni"}
    session(pytester, "one", V1, "--sommelier-autosave", statistics=statistics)
    _, live = session(pytester, "two", REGRESSED, "--sommelier-compare=last-any", WIDE,
                      gates=[UPLIFT], statistics=statistics)  # fmt: skip
    suite = write_scripted_suite(pytester, script(REGRESSED), gates=[UPLIFT],
                                 statistics=statistics)  # fmt: skip
    again = pytester.path / "again"
    code = main(["rescore", str(pytester.path / "two"), "--suite", str(suite), "--out",
                 str(again), "--store", str(pytester.path / ".sommelier"), "--compare", "last-any",
                 "--compare-fail", f"{METRIC}:0.9"])  # fmt: skip
    capsys.readouterr()
    rescored = json.loads((again / "gate_verdict.json").read_text(encoding="utf-8"))
    assert rescored["familywise"] == live["familywise"]
    for name, gate in by_name(live).items():
        assert by_name(rescored)[name]["passed"] == gate["passed"]
        assert by_name(rescored)[name]["interval"] == gate["interval"]
    assert code == (0 if live["verdict"] == "pass" else 1)


def test_rescore_refuses_compare_fail_without_compare(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sommelier.cli import main

    session(pytester, "one", V1)
    code = main(["rescore", str(pytester.path / "one"), "--out", str(pytester.path / "x"),
                 "--compare-fail", f"{METRIC}:0.9"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--compare-fail needs --compare" in err
    assert len(err.strip().splitlines()) == 1
    assert not Path(pytester.path / "x").exists()
