"""A gate on the ``[selection]``'s selected candidate, evaluated through the pipeline: resolved
once into the comparison it reads, its interval read at the Bonferroni level over the K
candidates composed with the suite's family (none, bonferroni, holm), Tango for a margin, and
by simulation a false pass rate at or under ``1 - cl`` when no candidate has a true effect."""

from __future__ import annotations

from pathlib import Path

import pytest
from sweep_helpers import BEST, METRIC, build, false_pass_rates, verdict

from pytest_sommelier.core import multiplicity
from pytest_sommelier.core.gates import (
    family_of,
    gate_text,
    resolve_selection_gates,
    selection_level,
    selection_subject,
)
from pytest_sommelier.core.pipeline import evaluate_run
from pytest_sommelier.core.types import GateConfig

OTHER = {"name": "c1-up", "candidate": "c1", "reference": "base", "metric": METRIC,
         "ci_lower_above": 0.0}  # fmt: skip


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
    assert selection_subject(stored) == "selected(none)-vs-stored@last"
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
    from sweep_helpers import arm_runs

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
    adjusted, unadjusted = false_pass_rates(tmp_path, n=40, k=4, replications=150, seed=20261202)
    assert adjusted <= 0.05
    assert unadjusted > adjusted and unadjusted > 0.05


def test_a_delta_selection_gate_says_its_point_difference_has_no_level(tmp_path: Path) -> None:
    n, k = 20, 2
    delta = {"name": "best", "selected": True, "metric": METRIC, "delta_at_least": 0.1}
    suite, split, identity = build(tmp_path, n, k, [delta])
    _, gates = verdict(suite, split, identity, {"base": first(2, n), "c1": first(8, n),
                                                "c2": first(5, n)})  # fmt: skip
    best = gates["best"]
    assert best["passed"] is True and best["observed"] == pytest.approx(0.3)
    assert best["selection"]["selected"] == "c1" and best["selection"]["confidence_level"] is None
    assert "a point difference, no level to adjust" in gate_text(best)
