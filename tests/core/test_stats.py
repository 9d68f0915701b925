"""Tests for pytest_sommelier.core.stats: seeds, the paired bootstrap and McNemar's exact test."""

from __future__ import annotations

import hashlib
import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.metrics import METRIC_NAMES, component_arrays
from pytest_sommelier.core.stats import (
    BOOTSTRAP_METHOD,
    _differences_from_sums,
    _index_chunks,
    derive_seed,
    mcnemar_exact,
    mcnemar_p_value,
    paired_bootstrap,
    paired_bootstrap_arrays,
    resample_counts,
)
from pytest_sommelier.errors import InputError, InvariantError


def resample_indices(pairs: int, resamples: int, seed: int) -> np.ndarray:
    """The whole (resamples, pairs) index matrix the bootstrap draws block by block."""
    rng = np.random.default_rng(seed)
    return np.concatenate(list(_index_chunks(rng, pairs, resamples)), axis=0)


def resample_differences(counts, ref_num, ref_den, cand_num, cand_den) -> np.ndarray:
    """Candidate-minus-reference values per resample, from a count matrix (one big product)."""
    stacked = np.concatenate([ref_num, ref_den, cand_num, cand_den], axis=1).astype(np.float64)
    return _differences_from_sums(counts.astype(np.float64) @ stacked, ref_num.shape[1])

EXACT = METRIC_NAMES.index("full_call_exact_match")
F1 = METRIC_NAMES.index("argument_f1")
GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}


def record(example_id: str, outcome: str) -> dict:
    """A scoring record: outcome 'exact' (right call), 'half' (one argument wrong), 'fail'."""
    if outcome == "fail":
        return {"example_id": example_id, "parse_status": "no_json", "parsed_call": None,
                "gold_call": GOLD}
    arguments = dict(GOLD["arguments"])
    if outcome == "half":
        arguments["unit"] = "f"
    return {"example_id": example_id, "parse_status": "ok",
            "parsed_call": {"name": GOLD["name"], "arguments": arguments}, "gold_call": GOLD}


def records(outcomes: list[str], prefix: str = "ex") -> list[dict]:
    """Records with ids prefix-0000, prefix-0001, ... for the given outcomes."""
    return [record(f"{prefix}-{i:04d}", outcome) for i, outcome in enumerate(outcomes)]


# --- derive_seed ---------------------------------------------------------------------------


def test_derive_seed_is_pinned_and_in_range() -> None:
    assert derive_seed(41, "adapter-vs-base") == 5477127601642540561
    assert derive_seed(41, "gap:adapter:he") == 1181328021498080026
    digest = hashlib.sha256(b"41:adapter-vs-base").digest()
    assert derive_seed(41, "adapter-vs-base") == int.from_bytes(digest[:8], "big") >> 1


@settings(max_examples=examples(100))
@given(st.integers(min_value=0, max_value=2**64), st.text(max_size=30))
def test_derive_seed_range_and_name_sensitivity(seed: int, name: str) -> None:
    value = derive_seed(seed, name)
    assert 0 <= value < 2**63
    assert value == derive_seed(seed, name)
    assert value != derive_seed(seed, name + ":x")


# --- paired bootstrap ----------------------------------------------------------------------


def test_bootstrap_is_deterministic_for_a_seed_and_varies_with_it() -> None:
    ref = records(["exact", "fail", "half", "exact", "fail"] * 8)
    cand = records(["exact", "exact", "exact", "half", "fail"] * 8)
    first = paired_bootstrap(ref, cand, seed=7, resamples=500)
    assert first == paired_bootstrap(ref, cand, seed=7, resamples=500)
    other = paired_bootstrap(ref, cand, seed=8, resamples=500)
    assert other["intervals"] != first["intervals"]
    assert first["method"] == BOOTSTRAP_METHOD
    assert (first["seed"], first["resamples"], first["pairs"]) == (7, 500, 40)
    assert first["confidence_level"] == 0.95
    assert list(first["intervals"]) == list(METRIC_NAMES)


def test_identical_arms_give_zero_width_interval_at_zero() -> None:
    recs = records(["exact", "fail", "half", "exact", "half", "fail", "exact"] * 5)
    block = paired_bootstrap(recs, [dict(r) for r in recs], seed=3, resamples=300)
    for name in METRIC_NAMES:
        assert block["intervals"][name] == {"lower": 0.0, "upper": 0.0}


@pytest.mark.parametrize(("k", "large"), [(1, False), (30, True)])
def test_known_shift_is_covered(k: int, large: bool) -> None:
    n = 100
    ref = records(["exact"] * 50 + ["fail"] * 50)
    cand = records(["exact"] * (50 + k) + ["fail"] * (50 - k))
    block = paired_bootstrap(ref, cand, seed=11, resamples=2000)
    interval = block["intervals"]["full_call_exact_match"]
    assert interval["lower"] <= k / n <= interval["upper"]
    if large:
        assert interval["lower"] > 0.0
    else:
        assert interval["lower"] <= 0.0 < interval["upper"]


def test_f1_is_micro_within_each_resample() -> None:
    # ref F1 components per example: (2, 4), (0, 2), (6, 6); candidate all (0, 2).
    ref_num = np.zeros((3, 5), dtype=np.int64)
    ref_den = np.ones((3, 5), dtype=np.int64)
    ref_num[:, F1], ref_den[:, F1] = [2, 0, 6], [4, 2, 6]
    cand_num = np.zeros((3, 5), dtype=np.int64)
    cand_den = np.ones((3, 5), dtype=np.int64)
    cand_den[:, F1] = 2
    indices = np.array([[0, 0, 1], [2, 2, 2], [1, 1, 0]])
    diffs = resample_differences(resample_counts(indices, 3), ref_num, ref_den, cand_num, cand_den)
    # micro: (2+2+0)/(4+4+2) = 0.4 (macro would be 1/3); 18/18 = 1; (0+0+2)/(2+2+4) = 0.25
    assert diffs[:, F1].tolist() == pytest.approx([-0.4, -1.0, -0.25])


def slow_bootstrap(ref: list[dict], cand: list[dict], indices: np.ndarray, cl: float) -> dict:
    """Reference implementation: per-resample Python sums over the given index rows."""
    rn, rd = component_arrays(ref)
    cn, cd = component_arrays(cand)
    diffs = []
    for row in indices.tolist():
        values = []
        for j in range(len(METRIC_NAMES)):
            sums = [sum(int(a[i, j]) for i in row) for a in (rn, rd, cn, cd)]
            ref_v = sums[0] / sums[1] if sums[1] else 0.0
            cand_v = sums[2] / sums[3] if sums[3] else 0.0
            values.append(cand_v - ref_v)
        diffs.append(values)
    tail = (1 - cl) / 2
    lower, upper = np.quantile(np.array(diffs), [tail, 1 - tail], axis=0)
    return {name: {"lower": float(lower[j]), "upper": float(upper[j])}
            for j, name in enumerate(METRIC_NAMES)}


def test_bootstrap_matches_slow_reference_on_the_same_indices() -> None:
    rng = random.Random(5)
    outcomes = ["exact", "half", "fail"]
    ref = records([rng.choice(outcomes) for _ in range(23)])
    cand = records([rng.choice(outcomes) for _ in range(23)])
    block = paired_bootstrap(ref, cand, seed=99, resamples=200, confidence_level=0.9)
    expected = slow_bootstrap(ref, cand, resample_indices(23, 200, 99), 0.9)
    for name in METRIC_NAMES:
        assert block["intervals"][name]["lower"] == pytest.approx(expected[name]["lower"])
        assert block["intervals"][name]["upper"] == pytest.approx(expected[name]["upper"])


def test_chunked_draw_equals_one_index_matrix() -> None:
    # 5000 pairs x 1000 resamples is drawn in several chunks; the result must not depend on it.
    rng = np.random.default_rng(0)
    n = 5000
    ref_num = rng.integers(0, 2, size=(n, 5))
    cand_num = rng.integers(0, 2, size=(n, 5))
    den = np.ones((n, 5), dtype=np.int64)
    block = paired_bootstrap_arrays(ref_num, den, cand_num, den, seed=4, resamples=1000)
    indices = resample_indices(n, 1000, 4)
    assert indices.shape == (1000, n)
    diffs = (cand_num[indices].sum(axis=1) - ref_num[indices].sum(axis=1)) / n
    lower, upper = np.quantile(diffs, [0.025, 0.975], axis=0)
    for j, name in enumerate(METRIC_NAMES):
        assert block["intervals"][name]["lower"] == pytest.approx(lower[j])
        assert block["intervals"][name]["upper"] == pytest.approx(upper[j])


def test_zero_denominator_resample_counts_as_zero() -> None:
    zeros = np.zeros((4, 5), dtype=np.int64)
    cand_num = np.ones((4, 5), dtype=np.int64)
    block = paired_bootstrap_arrays(zeros, zeros, cand_num, cand_num, seed=1, resamples=50)
    assert block["intervals"]["argument_f1"] == {"lower": 1.0, "upper": 1.0}


def test_zero_pairs_give_null_bounds() -> None:
    block = paired_bootstrap([], [], seed=1, resamples=10)
    assert block["pairs"] == 0
    assert all(v == {"lower": None, "upper": None} for v in block["intervals"].values())


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["exact", "half", "fail"]),
                          st.sampled_from(["exact", "half", "fail"])), min_size=1, max_size=25),
       st.integers(min_value=0, max_value=2**32))
def test_interval_properties(pairs: list[tuple[str, str]], seed: int) -> None:
    ref = records([a for a, _ in pairs])
    cand = records([b for _, b in pairs])
    forward = paired_bootstrap(ref, cand, seed=seed, resamples=60)
    backward = paired_bootstrap(cand, ref, seed=seed, resamples=60)
    for name in METRIC_NAMES:
        low, high = forward["intervals"][name]["lower"], forward["intervals"][name]["upper"]
        assert -1.0 <= low <= high <= 1.0
        assert backward["intervals"][name]["lower"] == pytest.approx(-high, abs=1e-12)
        assert backward["intervals"][name]["upper"] == pytest.approx(-low, abs=1e-12)


@pytest.mark.parametrize(
    ("ref_ids", "cand_ids", "code", "named"),
    [
        (["a", "b", "c"], ["a", "c", "b"], "SOM-STATS-PAIRING", "'c'"),
        (["a", "b"], ["a", "b", "c"], "SOM-STATS-PAIRING", "3"),
        (["a", "b", "a"], ["a", "b", "a"], "SOM-STATS-DUPLICATE-ID", "'a'"),
    ],
)
def test_mismatched_or_duplicate_ids_raise(ref_ids, cand_ids, code, named) -> None:
    ref = [dict(record("x", "exact"), example_id=i) for i in ref_ids]
    cand = [dict(record("x", "exact"), example_id=i) for i in cand_ids]
    for function in (paired_bootstrap, mcnemar_exact):
        kwargs = {"seed": 1} if function is paired_bootstrap else {}
        with pytest.raises(InvariantError) as info:
            function(ref, cand, **kwargs)
        assert info.value.code == code
        assert named in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"seed": -1}, "statistics.seed"), ({"seed": 1, "resamples": 0}, "statistics.resamples"),
     ({"seed": 1, "confidence_level": 1.0}, "statistics.confidence_level")],
)
def test_bad_parameters_name_the_setting(kwargs: dict, field: str) -> None:
    one = np.ones((2, 5), dtype=np.int64)
    with pytest.raises(InputError) as info:
        paired_bootstrap_arrays(one, one, one, one, **kwargs)
    assert info.value.where == field


def test_shape_mismatch_raises() -> None:
    with pytest.raises(InvariantError):
        paired_bootstrap_arrays(np.ones((3, 5)), np.ones((3, 5)), np.ones((2, 5)),
                                np.ones((2, 5)), seed=1)


# --- McNemar -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "p"),
    [(5, 0, 0.0625), (0, 5, 0.0625), (3, 1, 0.625), (2, 2, 1.0), (0, 0, 1.0),
     (10, 0, 2 / 1024), (9, 1, 2 * 11 / 1024)],
)
def test_mcnemar_p_value_hand_checked(b: int, c: int, p: float) -> None:
    assert mcnemar_p_value(b, c) == pytest.approx(p, rel=1e-12)


def test_mcnemar_large_counts_stay_finite() -> None:
    p = mcnemar_p_value(700, 400)
    assert 0.0 < p < 1e-15
    assert math.isfinite(p)


def test_mcnemar_on_records() -> None:
    ref = records(["exact", "fail", "half", "fail", "exact", "exact"])
    cand = records(["exact", "exact", "exact", "exact", "fail", "half"])
    # candidate_only: ex-1, ex-2, ex-3 (3); reference_only: ex-4, ex-5 (2); concordant: ex-0
    result = mcnemar_exact(ref, cand)
    assert result == {
        "metric": "full_call_exact_match", "candidate_only": 3, "reference_only": 2,
        "p_value": 1.0, "method": "exact_binomial_two_sided",
    }
    ref = records(["fail"] * 6)
    assert mcnemar_exact(ref, cand)["p_value"] == pytest.approx(2 / 2**4)
