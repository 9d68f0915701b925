"""Benchmark: ``argument_f1`` intervals near the metric's ceiling (most calls perfect on both
arms), where the jackknife-t under-covers and can be zero-width.

A pair has ``g`` gold argument pairs (uniform 1-4). Each arm's call is perfect with
probability ``p`` (``2g / 2g``), else a parse failure (30%: ``0 / g``) or a partial call (``2m /
2g``, ``m`` uniform below ``g``). The candidate repeats the reference's outcome with
probability ``rho`` and otherwise draws its own from its own ``p`` (so the arms are correlated
as a fine-tune and its base are). Clustered cells: ``K`` clusters of 2-4 pairs; each pair
repeats its cluster's outcome pair with probability "ICC" 0.9: that number is the repeat
probability ``r``, not an intraclass correlation (the outcome's within-cluster correlation is
``r^2``; issue 38). The truth is the micro-F1
difference of a 2,000,000-pair draw. Every run of a cell is one row of an array (the
jackknife is O(n) per run, vectorised).

Methods: ``jackknife_t`` (0.3's ``auto``: over pairs, or over clusters with K - 1 degrees of
freedom), ``pseudo_w0.5`` and ``pseudo_w1`` (the same with two pseudo-units added: one where
only the candidate scores, one where only the reference does, each of the mean denominator,
weight 0.5 or 1: a continuity correction in the manner of Bonett-Price's pseudo-pairs);
``pseudo_w0.5`` is ``core.ratio_intervals.pseudo_jackknife_t_interval``, what ``auto`` uses now
(checked run by run against the vectorised form here).

    python benchmarks/bench_f1_ceiling.py [--runs 4000] [--markdown] [--part grid|extra]

``--part extra`` runs the cells added later (its own seed, so the grid's numbers stay as
published): clustered cells at ICC 0.3, and one dominant cluster of 20 pairs among 20 single
pairs at ICC 0.3 and 0.9.

Sized for one core: well under a minute at 4,000 runs per cell (the output says how long).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import time

import numpy as np

from pytest_sommelier.core.distributions import t_quantile
from pytest_sommelier.core.ratio_intervals import pseudo_jackknife_t_interval

FAIL_SHARE = 0.3


def side(rng, p: float, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One arm's (numerator, denominator) for gold sizes ``g``."""
    u = rng.random(g.shape)
    perfect = u < p
    fail = (~perfect) & (rng.random(g.shape) < FAIL_SHARE)
    m = np.floor(rng.random(g.shape) * g)
    num = np.where(perfect, 2 * g, np.where(fail, 0, 2 * m))
    den = np.where(fail, g, 2 * g)
    return num.astype(float), den.astype(float)


def pairs(rng, shape, p_ref, p_cand, rho):
    """``(..., 4)`` unit rows [ref_num, ref_den, cand_num, cand_den]."""
    g = rng.integers(1, 5, size=shape).astype(float)
    rn, rd = side(rng, p_ref, g)
    cn, cd = side(rng, p_cand, g)
    copy = rng.random(shape) < rho
    cn, cd = np.where(copy, rn, cn), np.where(copy, rd, cd)
    return np.stack([rn, rd, cn, cd], axis=-1)


def ratio(t: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        cand = np.where(t[..., 3] > 0, t[..., 2] / t[..., 3], 0.0)
        ref = np.where(t[..., 1] > 0, t[..., 0] / t[..., 1], 0.0)
    return cand - ref


def jackknife(units: np.ndarray, weights: np.ndarray, level: float = 0.95):
    """Jackknife-t bounds per run over weighted units ``(runs, K, 4)``: leave one unit out."""
    total = (units * weights[..., None]).sum(axis=1)
    estimate = ratio(total)
    loo = ratio(total[:, None, :] - units * np.minimum(weights, 1.0)[..., None])
    k = weights.sum(axis=1)
    mean = (loo * weights).sum(axis=1) / k
    se = np.sqrt((k - 1) / k * ((loo - mean[:, None]) ** 2 * weights).sum(axis=1))
    t = np.array([t_quantile(level, float(df)) for df in np.maximum(k - 1, 1)])
    return estimate, np.maximum(-1, estimate - t * se), np.minimum(1, estimate + t * se)


def with_pseudo(units: np.ndarray, weight: float) -> tuple[np.ndarray, np.ndarray]:
    """The units with the two pseudo-units of the mean denominator appended."""
    runs, k, _ = units.shape
    d = units[..., [1, 3]].mean(axis=(1, 2))
    zero = np.zeros(runs)
    only_cand = np.stack([zero, d, d, d], axis=1)[:, None, :]
    only_ref = np.stack([d, d, zero, d], axis=1)[:, None, :]
    out = np.concatenate([units, only_cand, only_ref], axis=1)
    weights = np.concatenate([np.ones((runs, k)), np.full((runs, 2), weight)], axis=1)
    return out, weights


def cell(rng, n, p_ref, p_cand, rho, runs, clusters=None, icc=0.9, sizes=None):
    big = pairs(rng, (2_000_000,), p_ref, p_cand, rho)
    truth = float(ratio(big.sum(axis=0)))
    if clusters is None:
        units = pairs(rng, (runs, n), p_ref, p_cand, rho)
    else:
        if sizes is None:
            sizes = rng.integers(2, 5, size=clusters)
        shared = pairs(rng, (runs, clusters), p_ref, p_cand, rho)
        own = pairs(rng, (runs, int(sizes.sum())), p_ref, p_cand, rho)
        index = np.repeat(np.arange(clusters), sizes)
        repeat = rng.random((runs, index.size)) < icc
        rows = np.where(repeat[..., None], shared[:, index, :], own)
        units = np.stack([rows[:, index == c, :].sum(axis=1) for c in range(clusters)], axis=1)
        n = int(sizes.sum())
    out = {"n": n, "truth": truth}
    ones = np.ones(units.shape[:2])
    variants = {"jackknife_t": (units, ones)}
    for w in (0.5, 1.0):
        variants[f"pseudo_w{w:g}"] = with_pseudo(units, w)
    for name, (u, w) in variants.items():
        _, lower, upper = jackknife(u, w)
        if name != "jackknife_t":  # the raw estimate is reported: the interval must hold it
            raw = ratio(units.sum(axis=1))
            lower, upper = np.minimum(lower, raw), np.maximum(upper, raw)
        if name == "pseudo_w0.5":  # the vectorised form is the package's method, run by run
            for run in range(3):
                core = pseudo_jackknife_t_interval(units[run], 0.95)
                assert abs(core["lower"] - lower[run]) < 1e-9, (core, lower[run])
                assert abs(core["upper"] - upper[run]) < 1e-9, (core, upper[run])
        inside = (lower <= truth + 1e-12) & (truth - 1e-12 <= upper)
        out[name] = (float(inside.mean()), float((upper - lower).mean()),
                     float((upper - lower <= 1e-12).mean()))  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--part", choices=("grid", "extra"), default="grid",
        help="grid: the cells above; extra: clustered cells at ICC 0.3 and one dominant "
        "cluster (20 pairs among 20 single ones) at ICC 0.3 and 0.9",
    )  # fmt: skip
    args = parser.parse_args()
    rng = np.random.default_rng(2026 if args.part == "grid" else 20262)
    started = time.perf_counter()
    specs = []
    if args.part == "grid":
        for n in (20, 25, 40, 100, 300):
            for p_ref, p_cand in ((0.9, 0.95), (0.95, 0.95), (0.6, 0.7)):
                specs.append((f"n={n}", n, p_ref, p_cand, None, 0.9, None))
        for k in (10, 20, 30):
            for p_ref, p_cand in ((0.9, 0.95), (0.95, 0.95)):
                specs.append((f"K={k} ICC 0.9", 0, p_ref, p_cand, k, 0.9, None))
    else:
        for k in (10, 20, 30):
            for p_ref, p_cand in ((0.9, 0.95), (0.95, 0.95)):
                specs.append((f"K={k} ICC 0.3", 0, p_ref, p_cand, k, 0.3, None))
        dominant = np.array([20] + [1] * 20)
        for icc in (0.3, 0.9):
            for p_ref, p_cand in ((0.9, 0.95), (0.95, 0.95)):
                specs.append((f"1x20 + 20x1 ICC {icc:g}", 0, p_ref, p_cand, dominant.size, icc,
                              dominant))  # fmt: skip
    rows = []
    for label, n, p_ref, p_cand, k, icc, sizes in specs:
        result = cell(rng, n, p_ref, p_cand, 0.5, args.runs, k, icc, sizes)
        rows.append((label, p_ref, p_cand, result))
    elapsed = time.perf_counter() - started
    methods = ("jackknife_t", "pseudo_w0.5", "pseudo_w1")  # pseudo_w0.5: what auto uses now
    print(f"# argument_f1 near the ceiling: coverage / mean width / zero-width share of "
          f"nominal-95% intervals, {args.runs} runs per cell, {elapsed:.0f} s on one core; Monte "
          f"Carlo s.e. {math.sqrt(0.95 * 0.05 / args.runs):.4f}")  # fmt: skip
    header = ("design", "p base", "p adapter", "pairs", *methods)
    body = [(label, f"{a:g}", f"{b:g}", str(r["n"]),
             *(f"{r[m][0]:.3f} / {r[m][1]:.3f} / {r[m][2]:.3f}" for m in methods))
            for label, a, b, r in rows]  # fmt: skip
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in body:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]
        for row in (header, *body):
            print("  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    for m in methods:
        cover = [r[m][0] for _, _, _, r in rows]
        print(f"# {m}: min coverage {min(cover):.3f}, mean {np.mean(cover):.3f}, max zero-width "
              f"{max(r[m][2] for _, _, _, r in rows):.3f}")  # fmt: skip
    big = [r for label, _, _, r in rows if label == "n=300"]
    for m in methods[1:] if big else ():
        ratio_w = max(r[m][1] / r["jackknife_t"][1] for r in big)
        print(f"# width of {m} / jackknife_t at n = 300: at most {ratio_w:.3f}x")


if __name__ == "__main__":
    main()
