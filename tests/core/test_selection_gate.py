"""A gate on the ``[selection]``'s selected candidate, evaluated through the pipeline: resolved
once into the comparison it reads, its interval read at the Bonferroni level over the K
candidates composed with the suite's family (none, bonferroni, holm), Tango for a margin, and
by simulation a false pass rate at or under ``1 - cl`` when no candidate has a true effect."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from suite_factory import make_row, write_suite

from pytest_sommelier.core import multiplicity
from pytest_sommelier.core.gates import (
    family_of,
    gate_text,
    resolve_selection_gates,
    selection_level,
    selection_subject,
)
from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, order_records
from pytest_sommelier.core.types import GateConfig
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite, suite_identity

METRIC = "full_call_exact_match"
BEST = {"name": "best", "selected": True, "metric": METRIC, "ci_lower_above": 0.0}
OTHER = {"name": "c1-up", "candidate": "c1", "reference": "base", "metric": METRIC,
         "ci_lower_above": 0.0}  # fmt: skip


def build(tmp: Path, n: int, k: int, gates: list[dict[str, Any]], **statistics: Any) -> Any:
    """A suite with arms ``base`` and ``c1``..``cK`` over ``n`` English examples and
    ``[selection] among = "c*"``; returns the suite, its split and its identity."""
    golds = {f"en-{i}": {"name": f"t{i}", "arguments": {"i": i}} for i in range(n)}
    rows = [make_row(i, "en", None, gold) for i, gold in golds.items()]
    arms = {"base": {}, **{f"c{j}": {"adapter": "adapter"} for j in range(1, k + 1)}}
    suite_file = write_suite(
        tmp / "suite", rows=rows, suite={"slices": ["en"]}, arms=arms,
        comparisons=[{"candidate": "c1", "reference": "base"}],
        selection={"metric": METRIC, "among": "c*"}, gates=gates,
        statistics={"resamples": 200, **statistics},
    )  # fmt: skip
    suite = load_suite(suite_file)
    return suite, load_split(suite.test_split, suite.slices), suite_identity(suite)


def arm_runs(suite: Any, split: Any, hits: dict[str, list[bool]]) -> dict[str, ArmRun]:
    """Every arm's records: a hit answers the gold call, a miss answers prose."""
    runs = {}
    for arm, row in hits.items():
        kind = "base" if arm == "base" else "adapter"
        records = [
            {"example_id": e.example_id, "arm": arm, "model_kind": kind, "language": e.language,
             "prompt_sha256": e.prompt_sha256, "raw_text": json.dumps(e.gold_call) if hit else
             "no call", "parsed_call": None, "parse_status": "no_json",
             "decoding": dict(suite.decoding), "cached": False}
            for e, hit in zip(split.examples, row, strict=True)
        ]  # fmt: skip
        runs[arm] = ArmRun(name=arm, model_kind=kind, model_identity={"fake": "m"},
                           adapter_identity=None if kind == "base" else {"fake": arm},
                           records=order_records(suite, split, arm, records))  # fmt: skip
    return runs


def verdict(suite: Any, split: Any, identity: Any, hits: dict[str, list[bool]]) -> Any:
    outcome = evaluate_run(suite, split, arm_runs(suite, split, hits), run_id="r",
                           model=identity["model"])  # fmt: skip
    return outcome, {gate["name"]: gate for gate in outcome.verdict["gates"]}


def first(count: int, n: int) -> list[bool]:
    return [i < count for i in range(n)]


def test_resolution_names_the_selected_candidate_and_its_family() -> None:
    gate = GateConfig(name="g", kind="selection", metric=METRIC, slice="overall", arm=None,
                      candidate=None, reference=None, gap=None, min=None, max=None,
                      ci_lower_above=0.0, ci_lower_at_least=None, delta_at_least=None,
                      selected=True)  # fmt: skip
    block = {"selected": "adapter@200", "reference": "base", "familywise": {"candidates": 3}}
    (resolved,) = resolve_selection_gates((gate,), block)
    assert (resolved.candidate, resolved.reference, resolved.candidates) == (
        "adapter@200", "base", 3
    )
    assert selection_subject(resolved) == "selected(adapter@200)-vs-base"
    assert resolve_selection_gates((resolved,), {**block, "selected": "x"}) == (resolved,)
    stored = GateConfig(**{**gate.__dict__, "stored": "last"})
    (against,) = resolve_selection_gates((stored,), block, {"g": "adapter@100"})
    assert against.reference == "adapter@100"
    assert selection_subject(against) == "selected(adapter@200)-vs-adapter@last"
    assert resolve_selection_gates((gate,), None) == (gate,)  # nothing selected
    assert selection_subject(gate) == "selected(none)-vs-reference"
    assert family_of("adapter@200") == "adapter" and family_of("v5") == "v5"


@pytest.mark.parametrize(
    ("familywise", "members"), [("none", 1), ("bonferroni", 2)], ids=["alone", "bonferroni"]
)
def test_the_level_is_bonferroni_over_k_composed_with_the_family(
    tmp_path: Path, familywise: str, members: int
) -> None:
    n, k = 30, 4
    suite, split, identity = build(tmp_path, n, k, [BEST, OTHER], familywise=familywise)
    hits = {"base": first(0, n), "c1": first(6, n), "c2": first(14, n), "c3": first(9, n),
            "c4": first(3, n)}  # fmt: skip
    outcome, gates = verdict(suite, split, identity, hits)
    level = 1 - 0.05 / (members * k)
    assert selection_level(0.95, members, k) == pytest.approx(level)
    best = gates["best"]
    assert best["selection"]["selected"] == "c2" and best["selection"]["candidates"] == k
    assert best["interval"]["confidence_level"] == pytest.approx(level)
    assert best["selection"]["confidence_level"] == pytest.approx(level)
    assert best["interval"]["discordant"] == {"candidate_only": 14, "reference_only": 0}
    # the other member keeps the family's level alone
    other_level = 0.95 if familywise == "none" else 1 - 0.05 / members
    assert gates["c1-up"]["interval"]["confidence_level"] == pytest.approx(other_level)
    assert outcome.selection["familywise"]["confidence_level"] == pytest.approx(1 - 0.05 / k)
    if familywise == "bonferroni":
        assert outcome.verdict["familywise"]["adjusted_confidence_level"]["best"] == (
            pytest.approx(level)
        )
    assert f"level adjusted to {level * 100:.3g}% (bonferroni over {k})" in gate_text(best)


def test_under_holm_the_selected_p_value_enters_the_step_down_times_k(tmp_path: Path) -> None:
    n, k = 30, 3
    suite, split, identity = build(tmp_path, n, k, [BEST, OTHER], familywise="holm")
    hits = {"base": first(0, n), "c1": first(5, n), "c2": first(9, n), "c3": first(4, n)}
    _, gates = verdict(suite, split, identity, hits)
    best, other = gates["best"], gates["c1-up"]
    raw_best, raw_other = best["interval"]["p_value"], other["interval"]["p_value"]
    expected = multiplicity.holm_adjusted([min(1.0, k * raw_best), raw_other])
    assert best["adjusted_p_value"] == pytest.approx(expected[0])
    assert other["adjusted_p_value"] == pytest.approx(expected[1])
    assert best["interval"]["confidence_level"] == pytest.approx(1 - 0.05 / k)
    assert other["interval"]["confidence_level"] == pytest.approx(0.95)
    # the phrase names the family's alpha, not the K-adjusted tail the interval was read at
    assert "Holm-adjusted p" in gate_text(best) and gate_text(best).endswith("< 0.05")


def test_a_margin_selection_gate_reads_tango_at_the_adjusted_level(tmp_path: Path) -> None:
    n, k = 30, 3
    margin = {**BEST, "ci_lower_above": None, "ci_lower_at_least": -0.1}
    margin = {key: value for key, value in margin.items() if value is not None}
    suite, split, identity = build(tmp_path, n, k, [margin])
    hits = {"base": first(10, n), "c1": first(12, n), "c2": first(10, n), "c3": first(8, n)}
    _, gates = verdict(suite, split, identity, hits)
    best = gates["best"]
    assert best["interval"]["method"].startswith("tango_asymptotic_score")
    assert best["interval"]["confidence_level"] == pytest.approx(1 - 0.05 / k)
    assert best["interval"]["null"] == pytest.approx(-0.1)


def test_nothing_selected_fails_the_gate_with_the_reason(tmp_path: Path) -> None:
    n, k = 10, 2
    suite, split, identity = build(tmp_path, n, k, [BEST])
    hits = {"base": first(0, n), "c1": first(5, n), "c2": first(5, n)}
    runs = arm_runs(suite, split, hits)
    outcome = evaluate_run(suite, split, {"c1": runs["c1"], "c2": runs["c2"]}, run_id="r",
                           model=identity["model"])  # fmt: skip
    (gate,) = outcome.verdict["gates"]
    assert gate["passed"] is False and gate["observed"] is None
    assert gate["reason"].startswith("nothing was selected")
    assert gate["selection"]["selected"] is None
    assert gate["subject"] == "selected(none)-vs-reference"


def test_with_no_true_effect_the_selected_gate_falsely_passes_at_most_alpha(
    tmp_path: Path,
) -> None:
    """K = 4 candidates and the base, every arm hitting each of 40 examples with probability
    0.5 independently (no candidate has a true effect); over 150 seeded replications the
    selection gate (lower bound > 0 at 1 - 0.05/4) passes at most 5% of the time, while the
    same claim read at the unadjusted 95% of the selected candidate's own comparison passes
    more often than that: the adjustment is what holds the rate."""
    n, k, replications = 40, 4, 150
    suite, split, identity = build(tmp_path, n, k, [BEST])
    rng = random.Random(20261202)
    adjusted = unadjusted = 0
    for _ in range(replications):
        hits = {arm: [rng.random() < 0.5 for _ in range(n)] for arm in suite.arms}
        outcome, gates = verdict(suite, split, identity, hits)
        adjusted += gates["best"]["passed"]
        chosen = outcome.selection["selected"]
        plain = outcome.comparison_reports[f"{chosen}-vs-base"]["intervals"]["intervals"]
        unadjusted += plain[METRIC]["lower"] > 0.0
    assert adjusted / replications <= 0.05
    assert unadjusted > adjusted and unadjusted / replications > 0.05
