"""Benchmark: ``argument_f1`` intervals near the metric's floor and when F1 is bimodal (issue
38's cells), with the ceiling and moderate cells of bench_f1_ceiling.py as controls.

Floor cells (the issue's): a pair has ``g`` gold argument pairs (uniform 1-4); the reference's
call is perfect (``2g / 2g``) with probability 0.3, else a parse failure (``0 / g``); the
adapter repeats the reference's outcome with probability 0.5, else is perfect with probability
0.05, else a parse failure. Bimodal cells: the same with 0.5 for the reference and 0.8 for the
adapter. Clustered cells: 8 skewed clusters (12, 6, 4, 3, 2, 1, 1, 1 pairs), each pair
repeating its cluster's outcome pair with probability ``r`` (0.5 or 0.9). Control cells: the
ceiling model of bench_f1_ceiling.py (perfect with ``p``, else a parse failure 30% or a partial
call) at its grid's probabilities. The truth is the micro-F1 difference of a 2,000,000-pair
draw.

Each entry: coverage / mean width / the share of runs whose lower bound lies at or above the
truth. That share is the false pass rate of a non-inferiority gate ``ci_lower_at_least = -m``
whose margin sits at the true difference (``m = -truth``; nominal one-sided 0.025), which is
how the issue measured 0.209 at n = 10.

Methods: ``pseudo_jackknife`` (0.4's ``auto``: the jackknife-t with two half-weight
pseudo-units) and ``mover`` (``core.ratio_intervals.mover_interval``: Zou & Donner's 2008
MOVER from Wilson limits of each arm's pooled ratio on its effective sample size, at the t
quantile of the units less one, and the arms' correlation), checked run by run against the
package's function.

    nice python benchmarks/bench_f1_floor.py [--runs 10000] [--markdown]

Sized for a shared machine: about two minutes of one core at 10,000 runs per cell. Seed 3803.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coverage_small import print_table
from bench_f1_ceiling import jackknife, pairs, ratio, with_pseudo

from pytest_sommelier.core.ratio_intervals import mover_bounds, mover_interval

SKEWED = np.array([12, 6, 4, 3, 2, 1, 1, 1])


def bimodal_pairs(rng, shape, p_ref: float, p_cand: float, copy: float = 0.5) -> np.ndarray:
    """``(..., 4)`` unit rows: every call perfect or a parse failure (F1 1 or 0 per pair)."""
    g = rng.integers(1, 5, size=shape).astype(float)
    ref_perfect = rng.random(shape) < p_ref
    cand_perfect = np.where(rng.random(shape) < copy, ref_perfect, rng.random(shape) < p_cand)
    rn, rd = np.where(ref_perfect, 2 * g, 0.0), np.where(ref_perfect, 2 * g, g)
    cn, cd = np.where(cand_perfect, 2 * g, 0.0), np.where(cand_perfect, 2 * g, g)
    return np.stack([rn, rd, cn, cd], axis=-1)


def draw(rng, model: str, shape, a: float, b: float) -> np.ndarray:
    if model == "ceiling":
        return pairs(rng, shape, a, b, 0.5)
    return bimodal_pairs(rng, shape, a, b)


def cell(rng, model, a, b, runs, n=None, sizes=None, r=0.0):
    truth = float(ratio(draw(rng, model, (2_000_000,), a, b).sum(axis=0)))
    if sizes is None:
        units = draw(rng, model, (runs, n), a, b)
    else:
        index = np.repeat(np.arange(sizes.size), sizes)
        shared = draw(rng, model, (runs, sizes.size), a, b)[:, index, :]
        own = draw(rng, model, (runs, index.size), a, b)
        rows = np.where((rng.random((runs, index.size)) < r)[..., None], shared, own)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        units = np.add.reduceat(rows, starts, axis=1)
        n = int(sizes.sum())
    raw = ratio(units.sum(axis=1))
    out = {"n": n, "truth": truth}
    u, w = with_pseudo(units, 0.5)
    _, lower, upper = jackknife(u, w)
    results = {"pseudo_jackknife": (np.minimum(lower, raw), np.maximum(upper, raw))}
    lower, upper = mover_bounds(units, 0.95)
    for run in range(3):  # the vectorised form is the package's function
        core = mover_interval(units[run], 0.95)
        assert abs(core["lower"] - lower[run]) < 1e-9 and abs(core["upper"] - upper[run]) < 1e-9
    results["mover"] = (lower, upper)
    informative = informative_units(units)
    for name, (lower, upper) in results.items():
        inside = (lower <= truth + 1e-12) & (truth - 1e-12 <= upper)
        passes = lower >= truth - 1e-12
        out[name] = (float(inside.mean()), float((upper - lower).mean()), float(passes.mean()))
        out[name, "rule"] = {t: float((passes & (informative >= t)).mean()) for t in THRESHOLDS}
    out["informative"] = float(informative.mean())
    return out


THRESHOLDS = (10, 20, 30, 40, 50)


def informative_units(units: np.ndarray) -> np.ndarray:
    """Per run, the units whose two arms' per-unit F1 differ (a pair's, or a cluster's pooled):
    what ``core.intervals`` counts for an ``argument_f1`` margin gate."""
    u, v, x, y = (units[..., j] for j in range(4))
    return (u * np.where(y > 0, y, 1) != x * np.where(v > 0, v, 1)).sum(axis=1)


def specs():
    out = []
    for n in (10, 15, 30, 60, 300):
        out.append(("floor", f"floor n={n}", 0.3, 0.05, n, None, 0.0))
    for r in (0.5, 0.9):
        out.append(("floor", f"floor 8 skewed clusters r={r:g}", 0.3, 0.05, None, SKEWED, r))
    for n in (10, 15, 30, 300):
        out.append(("bimodal", f"bimodal 0.5/0.8 n={n}", 0.5, 0.8, n, None, 0.0))
    out.append(("bimodal", "bimodal 8 skewed clusters r=0.9", 0.5, 0.8, None, SKEWED, 0.9))
    for n in (20, 40, 300):
        for a, b in ((0.9, 0.95), (0.95, 0.95), (0.6, 0.7)):
            out.append(("ceiling", f"ceiling n={n} p={a:g}/{b:g}", a, b, n, None, 0.0))
    for k in (10, 30):
        sizes = np.random.default_rng(k).integers(2, 5, size=k)
        out.append(("ceiling", f"ceiling K={k} r=0.9 p=0.9/0.95", 0.9, 0.95, None, sizes, 0.9))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(3803)
    started = time.perf_counter()
    rows = []
    for model, label, a, b, n, sizes, r in specs():
        rows.append((label, cell(rng, model, a, b, args.runs, n, sizes, r)))
    elapsed = time.perf_counter() - started
    methods = ("pseudo_jackknife", "mover")
    print(f"# argument_f1 near the floor and bimodal: coverage / mean width / NI false pass at the "
          f"margin (lower bound >= truth), nominal-95% intervals, {args.runs} runs per cell, "
          f"{elapsed:.0f} s; Monte Carlo s.e. {math.sqrt(0.95 * 0.05 / args.runs):.4f} (coverage), "
          f"{math.sqrt(0.025 * 0.975 / args.runs):.4f} (false pass)")  # fmt: skip
    header = ("cell", "pairs", "truth", "informative", *methods)
    body = [(label, str(res["n"]), f"{res['truth']:+.3f}", f"{res['informative']:.1f}",
             *(f"{res[m][0]:.3f} / {res[m][1]:.3f} / {res[m][2]:.3f}" for m in methods))
            for label, res in rows]  # fmt: skip
    print_table(header, body, args.markdown)
    for m in methods:
        worst = min(rows, key=lambda row: row[1][m][0])
        worst_pass = max(rows, key=lambda row: row[1][m][2])
        print(f"# {m}: min coverage {worst[1][m][0]:.3f} ({worst[0]}), mean "
              f"{np.mean([res[m][0] for _, res in rows]):.3f}; max NI false pass "
              f"{worst_pass[1][m][2]:.3f} ({worst_pass[0]})")  # fmt: skip
    floor = [(label, res) for label, res in rows if not label.startswith("ceiling")]
    for t in THRESHOLDS:
        worst = max(floor, key=lambda row: row[1]["pseudo_jackknife", "rule"][t])
        print(f"# pseudo_jackknife, a margin gate not evaluable below {t} informative units: max "
              f"NI false pass over the floor and bimodal cells "
              f"{worst[1]['pseudo_jackknife', 'rule'][t]:.3f} ({worst[0]})")  # fmt: skip
    big = [res for label, res in rows if "n=300" in label]
    ratios = [res["mover"][1] / res["pseudo_jackknife"][1] for res in big]
    print(f"# width mover / pseudo_jackknife at n = 300: {min(ratios):.3f}x-{max(ratios):.3f}x")


if __name__ == "__main__":
    main()
