"""What a gate may take as evidence: a zero-width interval is none (the gate fails as not
evaluable), a gate with a margin reads Tango's score interval (its method recorded), and every
interval gate of the verdict, ``stored`` gates included, is one familywise family (the session
and ``sommelier rescore --suite``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from history_helpers import V1, script
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, write_scripted_suite
from property_budget import examples

from pytest_sommelier.core import proportions
from pytest_sommelier.core.gates import evaluate_gate, evaluate_gates, gate_text
from pytest_sommelier.core.intervals import entry_at
from pytest_sommelier.core.types import GateConfig, StatisticsConfig

METRIC = "full_call_exact_match"


def gate(name: str = "g", **fields: Any) -> GateConfig:
    values: dict[str, Any] = {
        "metric": METRIC, "slice": "overall", "arm": None, "candidate": "adapter",
        "reference": "base", "gap": None, "min": None, "max": None, "ci_lower_above": None,
        "ci_lower_at_least": None, "delta_at_least": None,
    }  # fmt: skip
    values.update(fields)
    return GateConfig(name=name, kind="comparison", **values)


def rate_entry(b: int, c: int, n: int, lower: float, upper: float, **extra: Any) -> dict:
    return {"estimate": (b - c) / n, "lower": lower, "upper": upper,
            "method": "bonett_price_adjusted_wald", "degenerate": False, "design_effect": 1.0,
            "p_value": 0.5, "pairs": n,
            "discordant": {"candidate_only": b, "reference_only": c}, **extra}  # fmt: skip


def reports(entry: dict, metric: str = METRIC) -> dict:
    return {"adapter-vs-base": {"deltas": {metric: entry["estimate"]},
                                "intervals": {"confidence_level": 0.95,
                                              "intervals": {metric: entry}}}}  # fmt: skip


# --- no zero-width evidence -------------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(
    st.floats(-1, 1),
    st.sampled_from(["ci_lower_above", "ci_lower_at_least", "ci_upper_below", "ci_upper_at_most"]),
    st.floats(-1, 1),
    st.booleans(),
)
def test_a_zero_width_interval_never_passes_a_gate(
    point: float, key: str, limit: float, flagged: bool
) -> None:
    entry = {"estimate": point, "lower": point, "upper": point, "method": "jackknife_t_paired",
             "degenerate": flagged, "design_effect": 1.0, "p_value": 1.0,
             "discordant": {"candidate_only": 0, "reference_only": 0}}  # fmt: skip
    result = evaluate_gate(gate(metric="argument_f1", **{key: limit}), {},
                           reports(entry, "argument_f1"))  # fmt: skip
    assert result["passed"] is False
    assert result["reason"].startswith("not evaluable: the argument_f1 interval is zero-width")
    assert "zero-width: not evaluable" in gate_text(result)


def test_a_flagged_degenerate_interval_fails_even_with_width() -> None:
    entry = {**rate_entry(3, 0, 10, 0.1, 0.5), "degenerate": True}
    result = evaluate_gate(gate(ci_lower_above=0.0), {}, reports(entry))
    assert result["passed"] is False and "not evaluable" in result["reason"]


def test_a_degenerate_argument_f1_slice_fails_in_a_session(pytester: pytest.Pytester) -> None:
    # both arms give the gold call on every Hebrew example: argument_f1 is the same whatever
    # pairs are drawn, so the percentile bootstrap's interval there is a point, no evidence
    outputs = {key: call_text(GOLD[key]) for key in GOLD}
    write_scripted_suite(pytester, {"adapter": outputs, "base": outputs}, gates=[
        {"name": "he-f1", "candidate": "adapter", "reference": "base", "metric": "argument_f1",
         "slice": "he", "ci_lower_at_least": -0.1},
    ], statistics={"cluster": "example", "interval": "bootstrap"})  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    verdict = json.loads((pytester.path / "out" / "gate_verdict.json").read_text())
    (he,) = verdict["gates"]
    assert he["interval"]["lower"] == he["interval"]["upper"]
    assert he["passed"] is False and verdict["verdict"] == "fail" and result.ret == 1
    assert he["reason"].startswith("not evaluable")


def test_auto_gives_the_same_identical_slice_a_width(pytester: pytest.Pytester) -> None:
    outputs = {key: call_text(GOLD[key]) for key in GOLD}
    write_scripted_suite(pytester, {"adapter": outputs, "base": outputs}, gates=[
        {"name": "he-f1", "candidate": "adapter", "reference": "base", "metric": "argument_f1",
         "slice": "he", "ci_lower_at_least": -0.9},
    ], statistics={"cluster": "example"})  # fmt: skip
    pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    verdict = json.loads((pytester.path / "out" / "gate_verdict.json").read_text())
    (he,) = verdict["gates"]
    assert he["interval"]["method"] == "jackknife_t_pseudo_paired"
    assert he["interval"]["lower"] < 0 < he["interval"]["upper"]


# --- margins on Tango's score interval ----------------------------------------------------------


@settings(max_examples=examples(100), deadline=None)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(0, 200),
       st.floats(0.01, 0.5))  # fmt: skip
def test_a_margin_gate_reads_tangos_interval(b: int, c: int, extra: int, margin: float) -> None:
    n = b + c + extra
    if n == 0:
        return
    entry = rate_entry(b, c, n, -0.9, 0.9)
    result = evaluate_gate(gate(ci_lower_at_least=-margin), {}, reports(entry))
    lower, upper = proportions.tango_interval(b, c, n, 0.95)
    interval = result["interval"]
    assert interval["method"] == "tango_asymptotic_score"
    assert interval["lower"] == pytest.approx(min(lower, (b - c) / n), abs=1e-12)
    assert interval["upper"] == pytest.approx(max(upper, (b - c) / n), abs=1e-12)
    assert result["passed"] is (interval["lower"] >= -margin)
    assert interval["null"] == -margin


def test_a_gate_at_zero_keeps_the_reports_interval() -> None:
    entry = rate_entry(12, 2, 50, 0.05, 0.35)
    result = evaluate_gate(gate(ci_lower_above=0.0), {}, reports(entry))
    assert result["interval"]["method"] == "bonett_price_adjusted_wald"
    assert (result["interval"]["lower"], result["interval"]["upper"]) == (0.05, 0.35)


def test_a_cluster_adjusted_margin_divides_the_counts_by_the_design_effect() -> None:
    entry = {**rate_entry(12, 2, 50, 0.0, 0.4), "design_effect": 2.0,
             "method": "bonett_price_adjusted_wald_cluster_adjusted"}  # fmt: skip
    result = evaluate_gate(gate(ci_lower_at_least=-0.05), {}, reports(entry))
    lower, _ = proportions.tango_interval(6, 1, 25, 0.95)
    assert result["interval"]["method"] == "tango_asymptotic_score_cluster_adjusted"  # 0.3's
    assert result["interval"]["lower"] == pytest.approx(lower, abs=1e-12)


def test_entry_at_recomputes_bonett_price_and_jackknife_from_what_they_record() -> None:
    entry = rate_entry(12, 2, 50, 0.0, 0.0)
    again = entry_at(entry, 0.99, 0.0)
    assert again is not None
    lower, upper = proportions.bonett_price_interval(12, 2, 50, 0.99)
    assert (again["lower"], again["upper"]) == (pytest.approx(lower), pytest.approx(upper))
    jack = {"estimate": 0.1, "lower": 0, "upper": 0, "method": "jackknife_t_paired",
            "degenerate": False, "standard_error": 0.05, "df": 29.0, "p_value": None}  # fmt: skip
    wider = entry_at(jack, 0.99, 0.0)
    assert wider is not None and wider["lower"] < 0.1 - 2.5 * 0.05 < wider["upper"]
    assert entry_at({**jack, "method": "paired_bootstrap_percentile"}, 0.99, 0.0) is None


# --- one family over every interval gate ------------------------------------------------------


def stored_gate(name: str, **fields: Any) -> GateConfig:
    return GateConfig(**{**gate(name).__dict__, "kind": "stored", "arm": "adapter",
                         "candidate": None, "reference": None, "stored": "last",
                         **fields})  # fmt: skip


def test_a_stored_gate_is_read_at_the_familywise_level_without_records() -> None:
    statistics = StatisticsConfig(seed=1, resamples=200, confidence_level=0.95,
                                  familywise="bonferroni")  # fmt: skip
    comparisons = {**reports(rate_entry(12, 2, 50, 0.05, 0.35)),
                   "adapter-vs-adapter@last": reports(rate_entry(10, 1, 50, 0.05, 0.3))[
                       "adapter-vs-base"]}  # fmt: skip
    gates = (gate("uplift", ci_lower_above=0.0), stored_gate("held", ci_lower_above=0.0))
    verdict = evaluate_gates(gates, {}, comparisons, complete=True, run_id="r",
                             statistics=statistics)  # fmt: skip
    family = verdict["familywise"]
    assert (family["method"], family["size"]) == ("bonferroni", 2)
    for result in verdict["gates"]:
        assert result["interval"]["confidence_level"] == pytest.approx(0.975)
    lower, _ = proportions.bonett_price_interval(10, 1, 50, 0.975)
    assert verdict["gates"][1]["interval"]["lower"] == pytest.approx(lower)


def test_an_entry_that_cannot_be_recomputed_fails_rather_than_drop_the_family() -> None:
    statistics = StatisticsConfig(seed=1, resamples=200, confidence_level=0.95,
                                  familywise="bonferroni")  # fmt: skip
    boot = {**rate_entry(12, 2, 50, 0.05, 0.35), "method": "paired_bootstrap_percentile"}
    del boot["pairs"]
    comparisons = {**reports(rate_entry(12, 2, 50, 0.05, 0.35)),
                   "adapter-vs-adapter@last": reports(boot)["adapter-vs-base"]}  # fmt: skip
    gates = (gate("uplift", ci_lower_above=0.0), stored_gate("held", ci_lower_above=0.0))
    verdict = evaluate_gates(gates, {}, comparisons, complete=True, run_id="r",
                             statistics=statistics)  # fmt: skip
    held = verdict["gates"][1]
    assert held["passed"] is False and "cannot be recomputed at the familywise level" in (
        held["reason"])  # fmt: skip
    assert verdict["verdict"] == "fail"


UPLIFT = {"name": "uplift", "candidate": "adapter", "reference": "base", "metric": METRIC,
          "ci_lower_above": 0.0}  # fmt: skip
HELD = {"name": "held", "arm": "adapter", "stored": "last", "metric": METRIC,
        "ci_lower_at_least": -0.5}  # fmt: skip


def session(pytester: pytest.Pytester, out: str, *args: str, **overrides: Any) -> Path:
    write_scripted_suite(pytester, script(V1), **overrides)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", out, *args)  # fmt: skip
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return pytester.path / out


def test_a_stored_gate_keeps_the_suites_familywise_method(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sommelier.cli import main

    statistics = {"familywise": "bonferroni"}  # digested: the stored run shares it
    session(pytester, "one", "--sommelier-autosave", statistics=statistics)
    two = session(pytester, "two", gates=[UPLIFT, HELD], statistics=statistics)
    verdict = json.loads((two / "gate_verdict.json").read_text())
    family = verdict["familywise"]
    assert (family["method"], family["size"], family["family"]) == (
        "bonferroni", 2, ["uplift", "held"])  # fmt: skip
    for result in verdict["gates"]:
        assert result["interval"]["confidence_level"] == pytest.approx(0.975), result
    # sommelier rescore --suite: the same family
    suite = write_scripted_suite(pytester, script(V1), gates=[UPLIFT, HELD],
                                 statistics=statistics)  # fmt: skip
    again = pytester.path / "again"
    main(["rescore", str(two), "--suite", str(suite), "--out", str(again),
          "--store", str(pytester.path / ".sommelier")])  # fmt: skip
    capsys.readouterr()
    rescored = json.loads((again / "gate_verdict.json").read_text())
    assert rescored["familywise"]["method"] == "bonferroni"
    assert rescored["familywise"]["size"] == 2
    held = next(g for g in rescored["gates"] if g["name"] == "held")
    assert held["interval"]["confidence_level"] == pytest.approx(0.975)
