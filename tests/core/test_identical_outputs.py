"""Proof the adapter was applied: ``identical_outputs`` in comparison reports, the terminal line
when an adapter's outputs equal the base's, and the gate that can require fewer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite

from pytest_sommelier.core import gates, reports

pytest_plugins = ["pytester"]
LINE = "adapter had no effect on 7 of 7 outputs: was it loaded?"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def test_an_adapter_identical_to_the_base_is_called_out(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, {})  # both arms answer the same prose everywhere
    result = run(pytester)
    comparison = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")
    assert comparison["identical_outputs"] == 7 and comparison["compared_examples"] == 7
    assert comparison["slices"]["en"]["identical_outputs"] == 4
    assert comparison["slices"]["he"]["compared_examples"] == 3
    assert sum(LINE in line for line in result.outlines) == 1
    result.stdout.fnmatch_lines(["*identical outputs (byte for byte): 7 of 7*"])


def test_an_adapter_that_changes_outputs_is_not_called_out(pytester: pytest.Pytester) -> None:
    adapter = {eid: call_text(call) for eid, call in GOLD.items()}
    write_scripted_suite(pytester, {"adapter": adapter})
    result = run(pytester)
    comparison = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")
    assert comparison["identical_outputs"] == 0 and comparison["compared_examples"] == 7
    assert "had no effect" not in result.stdout.str()


@pytest.mark.parametrize(
    ("same", "n", "kinds", "flagged"),
    [
        (7, 7, ("adapter", "base"), True),
        (64, 70, ("adapter", "base"), True),  # 0.914 > 0.9
        (63, 70, ("adapter", "base"), False),  # exactly 0.9 is not more than 0.9
        (0, 7, ("adapter", "base"), False),
        (7, 7, ("adapter", "adapter"), False),  # two adapters may well agree
        (7, 7, ("base", "base"), False),
        (0, 0, ("adapter", "base"), False),
    ],
)
def test_no_effect_threshold(same: int, n: int, kinds: tuple[str, str], flagged: bool) -> None:
    report = {"identical_outputs": same, "compared_examples": n}
    assert reports.adapter_had_no_effect(report, *kinds) is flagged


def identical_gate(limit: float, slice_: str = "overall") -> SimpleNamespace:
    return SimpleNamespace(
        name="adapter-applied", kind="comparison", metric="identical_outputs", slice=slice_,
        arm=None, candidate="adapter", reference="base", gap=None, min=None, max=limit,
        ci_lower_above=None, ci_lower_at_least=None, delta_at_least=None,
    )  # fmt: skip


@pytest.mark.parametrize(("same", "passed"), [(3, True), (4, False), (7, False), (0, True)])
def test_identical_gate_requires_fewer(same: int, passed: bool) -> None:
    report = {
        "identical_outputs": same,
        "compared_examples": 7,
        "slices": {"en": {"identical_outputs": 0, "compared_examples": 4}},
    }
    entry = gates.evaluate_gate(identical_gate(0.5), {}, {"adapter-vs-base": report})
    assert entry["passed"] is passed
    assert entry["observed"] == pytest.approx(same / 7)
    by_slice = gates.evaluate_gate(identical_gate(0.5, "en"), {}, {"adapter-vs-base": report})
    assert by_slice["passed"] is True and by_slice["observed"] == 0.0


def test_identical_gate_without_the_count_fails_with_a_reason() -> None:
    entry = gates.evaluate_gate(identical_gate(0.5), {}, {"adapter-vs-base": {}})
    assert entry["passed"] is False and "identical_outputs" in entry["reason"]


APPLIED = {
    "name": "adapter-applied",
    "candidate": "adapter",
    "reference": "base",
    "metric": "identical_outputs",
    "max": 0.5,
}


def test_the_gate_fails_a_run_whose_adapter_changed_nothing(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, {}, gates=[APPLIED])
    result = run(pytester)
    assert result.ret == 1
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "fail"
    assert verdict["gates"][0]["observed"] == 1.0
    result.stdout.fnmatch_lines(["FAIL adapter-applied*"])


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({**APPLIED, "max": 1.5}, "outside [0, 1]"),
        ({**APPLIED, "delta_at_least": 0.1}, "takes max"),
        ({"name": "g", "arm": "adapter", "metric": "identical_outputs", "max": 0.5}, "comparison"),
    ],
)
def test_bad_identical_gates_are_one_line(
    pytester: pytest.Pytester, gate: dict, message: str
) -> None:
    write_scripted_suite(pytester, {}, gates=[gate])
    result = run(pytester)
    assert result.ret != 0 and message in result.stdout.str()
    assert "Traceback" not in result.stdout.str()
