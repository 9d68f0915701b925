"""The winner's-curse bias the selection block states beside the selected delta (issue 38):
``core.selection.winners_curse`` against a direct simulation of the selection under no true
difference, and its limits (one candidate, identical candidates)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pytest_sommelier.core.selection import winners_curse

GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}


def record(example_id: str, hit: bool) -> dict:
    if not hit:
        return {"example_id": example_id, "parse_status": "no_json", "parsed_call": None,
                "gold_call": GOLD}  # fmt: skip
    return {"example_id": example_id, "parse_status": "ok", "parsed_call": GOLD,
            "gold_call": GOLD}  # fmt: skip


def arm(hits: list[bool]) -> list[dict]:
    return [record(f"ex-{i:03d}", hit) for i, hit in enumerate(hits)]


def test_the_bias_matches_the_selection_under_no_true_difference() -> None:
    # K = 5 candidates and the reference each hit 60 examples with probability 0.5 (no true
    # difference): the observed best delta averages E[max] over repeated runs; the bias the
    # block states for one run estimates that figure from the run's own covariance
    rng = np.random.default_rng(5)
    n, k = 60, 5
    ref = rng.random((4000, n)) < 0.5
    cand = rng.random((4000, k, n)) < 0.5
    simulated = float((cand.mean(axis=2) - ref.mean(axis=1)[:, None]).max(axis=1).mean())
    stated = []
    for run in range(40):
        reference = arm(list(ref[run]))
        candidates = [arm(list(cand[run, j])) for j in range(k)]
        curse = winners_curse(reference, candidates, "full_call_exact_match")
        assert curse is not None and curse["candidates"] == k
        stated.append(curse["bias"])
    # sd of a delta sqrt(0.5 / 60) = 0.091, correlation 0.5 through the shared reference:
    # E[max] = sqrt(1 - 0.5) * 1.163 (the mean of the largest of 5 normals) * 0.091 = 0.075
    assert simulated == pytest.approx(0.075, abs=0.005)
    assert float(np.mean(stated)) == pytest.approx(simulated, rel=0.12)


def test_one_candidate_or_identical_candidates_carry_no_selection_bias() -> None:
    rng = random.Random(3)
    reference = arm([rng.random() < 0.5 for _ in range(50)])
    candidate = arm([rng.random() < 0.5 for _ in range(50)])
    single = winners_curse(reference, [candidate], "full_call_exact_match")
    twins = winners_curse(reference, [candidate, candidate], "full_call_exact_match")
    assert single is not None and twins is not None
    assert abs(single["bias"]) < 0.003 and abs(twins["bias"]) < 0.003
    assert "quote the interval" in single["quote"]
    assert winners_curse(reference, [candidate], "not_a_metric") is None
    assert winners_curse(reference, [candidate[:10]], "full_call_exact_match") is None
