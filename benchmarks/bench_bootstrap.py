"""Benchmark: the project's vectorized paired bootstrap vs a plain-Python loop of the same method.

Both run in this one process on the same 1,000 synthetic pairs and 2,000 resamples, end to end
from scoring records. The package computes each record's components once per process
(``metrics.example_components`` is memoised: a run scores every record many times) and
resamples them vectorized; the plain loop computes them per record without the memo. The end
to end figure is printed warm (components already computed once, as for every comparison after
the first in a run) and cold (memo cleared first). Prints both times, the
speed-up ratio (goal >= 50x) and, per metric, both intervals with their difference in units
of the Monte Carlo standard error of a bootstrap percentile (the two use different random
streams, so they agree only up to that error).

    python benchmarks/bench_bootstrap.py [--pairs 1000] [--resamples 2000] [--seed 41]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # a fair, single-core comparison
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import random
import statistics
import time

from pytest_sommelier.core import metrics
from pytest_sommelier.core.metrics import METRIC_NAMES, component_arrays
from pytest_sommelier.core.stats import paired_bootstrap, paired_bootstrap_arrays

GOLD = {"name": "book", "arguments": {"city": "Haifa", "nights": 2, "tags": ["sea", "quiet"]}}
OUTCOMES = {
    "exact": GOLD["arguments"],
    "one_wrong": {"city": "Haifa", "nights": 3, "tags": ["sea", "quiet"]},
    "extra": {"city": "Haifa", "nights": 2, "tags": ["sea", "quiet"], "late": True},
    "few": {"city": "Haifa"},
}


def make_record(example_id: str, outcome: str) -> dict:
    """A scoring record: a parse failure, or a call with one of the OUTCOMES' arguments."""
    if outcome == "fail":
        return {"example_id": example_id, "parse_status": "invalid_json", "parsed_call": None,
                "gold_call": GOLD}  # fmt: skip
    name = "book" if outcome != "wrong_name" else "cancel"
    arguments = OUTCOMES.get(outcome, GOLD["arguments"])
    return {"example_id": example_id, "parse_status": "ok",
            "parsed_call": {"name": name, "arguments": arguments}, "gold_call": GOLD}  # fmt: skip


def make_pairs(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Reference (weaker) and candidate (stronger) records for the same n example ids."""
    rng = random.Random(seed)
    kinds = ["exact", "one_wrong", "extra", "few", "fail", "wrong_name"]
    ref_weights, cand_weights = [3, 2, 1, 1, 3, 1], [6, 2, 1, 1, 1, 1]
    ref = [make_record(f"ex-{i:05d}", rng.choices(kinds, ref_weights)[0]) for i in range(n)]
    cand = [make_record(f"ex-{i:05d}", rng.choices(kinds, cand_weights)[0]) for i in range(n)]
    return ref, cand


def quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default method), in plain Python."""
    h = (len(sorted_values) - 1) * q
    low = math.floor(h)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (h - low) * (sorted_values[high] - sorted_values[low])


def python_components(ref: list[dict], cand: list[dict]) -> list[list[int]]:
    """Per pair, the 20 component integers: ref num, ref den, cand num, cand den (5 each)."""
    rows = []
    for r, c in zip(ref, cand, strict=True):
        rc, cc = metrics._example_components(r), metrics._example_components(c)
        rows.append([x[0] for x in rc] + [x[1] for x in rc] + [x[0] for x in cc]
                    + [x[1] for x in cc])  # fmt: skip
    return rows


def python_bootstrap(rows: list[list[int]], seed: int, resamples: int, cl: float):
    """The same method as a plain loop: random.Random indices, per-resample sums in Python.

    Returns ({metric: (lower, upper)}, {metric: standard deviation of the differences}).
    """
    metrics = len(METRIC_NAMES)
    n = len(rows)
    rng = random.Random(seed)
    diffs: list[list[float]] = [[] for _ in range(metrics)]
    for _ in range(resamples):
        sums = [0] * (4 * metrics)
        for _ in range(n):
            row = rows[rng.randrange(n)]
            for j in range(4 * metrics):
                sums[j] += row[j]
        for j in range(metrics):
            ref_den, cand_den = sums[metrics + j], sums[3 * metrics + j]
            ref_value = sums[j] / ref_den if ref_den else 0.0
            cand_value = sums[2 * metrics + j] / cand_den if cand_den else 0.0
            diffs[j].append(cand_value - ref_value)
    tail = (1 - cl) / 2
    intervals, spreads = {}, {}
    for j, name in enumerate(METRIC_NAMES):
        values = sorted(diffs[j])
        intervals[name] = (quantile(values, tail), quantile(values, 1 - tail))
        spreads[name] = statistics.pstdev(values)
    return intervals, spreads


def best_time(function, repeats: int) -> tuple[float, object]:
    """Smallest wall time of ``repeats`` calls (the CPU is shared) and the last result."""
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def percentile_mc_se(spread: float, resamples: int, q: float) -> float:
    """Monte Carlo standard error of the q-quantile of R draws (normal approximation)."""
    z = statistics.NormalDist().inv_cdf(q)
    density = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    return spread * math.sqrt(q * (1 - q) / resamples) / density


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args()
    ref, cand = make_pairs(args.pairs, args.seed)
    arrays = (*component_arrays(ref), *component_arrays(cand))
    common = {"seed": args.seed, "resamples": args.resamples}

    core_fast, fast = best_time(lambda: paired_bootstrap_arrays(*arrays, **common), 5)
    e2e_fast, _ = best_time(lambda: paired_bootstrap(ref, cand, **common), 3)

    def cold() -> object:
        metrics._COMPONENTS.clear()
        return paired_bootstrap(ref, cand, **common)

    e2e_cold, _ = best_time(cold, 3)
    components_python, rows = best_time(lambda: python_components(ref, cand), 3)
    core_slow, (slow, spreads) = best_time(
        lambda: python_bootstrap(rows, args.seed, args.resamples, 0.95), 1
    )
    e2e_slow = components_python + core_slow

    print(f"pairs={args.pairs} resamples={args.resamples} seed={args.seed} (best-of-N wall times)")
    print("resampling core (components extracted once, same for both):")
    print(f"  numpy paired_bootstrap_arrays : {core_fast * 1000:9.1f} ms")
    print(f"  plain-Python loop             : {core_slow * 1000:9.1f} ms")
    print(f"  speed-up ratio                : {core_slow / core_fast:9.1f}x  (goal >= 50x)")
    print("end to end from scoring records (includes the per-record components):")
    print(f"  numpy paired_bootstrap (warm) : {e2e_fast * 1000:9.1f} ms")
    print(f"  numpy paired_bootstrap (cold) : {e2e_cold * 1000:9.1f} ms")
    print(f"  plain-Python loop             : {e2e_slow * 1000:9.1f} ms")
    print(f"  speed-up ratio (warm)         : {e2e_slow / e2e_fast:9.1f}x  (goal >= 60x)")
    print(f"  speed-up ratio (cold)         : {e2e_slow / e2e_cold:9.1f}x")
    print()
    print(f"{'metric':24} {'numpy [lower, upper]':>22} {'python [lower, upper]':>22}  max|d|/MC-SE")
    worst = 0.0
    for name in METRIC_NAMES:
        lo, hi = fast["intervals"][name]["lower"], fast["intervals"][name]["upper"]
        plo, phi = slow[name]
        se = percentile_mc_se(spreads[name], args.resamples, 0.025)
        ratio = max(abs(lo - plo), abs(hi - phi)) / se if se else 0.0
        worst = max(worst, ratio)
        print(f"{name:24} [{lo:+.4f}, {hi:+.4f}]     [{plo:+.4f}, {phi:+.4f}]     {ratio:5.2f}")
    verdict = "agree" if worst <= 3.0 else "DISAGREE"
    print(f"\nintervals {verdict} within Monte Carlo error (worst {worst:.2f} SE, bound 3 SE)")


if __name__ == "__main__":
    main()
