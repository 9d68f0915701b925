"""Benchmark: clustered margin gates and clustered rate coverage with few informative clusters
(issue 38's cells, and cells around them).

A design is ``K`` clusters of given sizes. Each pair's outcome is "concordant" (both arms
agree), "only the adapter hits" (``pa``) or "only the base hits" (``pb``); each pair *repeats*
its cluster's outcome with probability ``r`` (the repeat probability) and otherwise draws its
own, so every pair keeps its marginal probabilities and two pairs of a cluster are alike with
probability ``r^2`` beyond chance: the within-cluster correlation of the outcome is ``r^2``, not
``r`` (earlier benchmarks called ``r`` "ICC"). Every run of a cell is one row of a matrix.

Methods, both the product's clustered reading (the counts divided by the CR2 design effect,
the bound at the t quantile of the degrees of freedom, ``core.intervals.rate_interval``):

- ``0.4``: Bell & McCaffrey's (2002) degrees of freedom of the cluster sizes;
- ``inf``: the same, never more than the clusters holding a discordant pair minus one
  (the first round of issue 38; Carter, Schnepel & Steigerwald 2017; MacKinnon & Webb 2017);
- ``now``: never more than the *effective number* of those clusters minus one, Carter,
  Schnepel & Steigerwald's ``G* = (sum m^2)^2 / sum m^4`` of their sizes at a within-cluster
  correlation of 1 (``core.clusters.effective_clusters``, ``informative_df``): their count
  for equal sizes, fewer when large clusters dominate. What the product reads now;
- ``score`` (measured, not used): Tango's score interval with the variance the larger of
  Tango's and the cluster-robust variance centred at the null (Durkalski et al. 2003's
  clustered McNemar statistic at 0), at ``now``'s degrees of freedom
  (``core.proportions.cluster_score_interval``). It holds in the small designs but reaches
  0.05-0.06 with 50-100 clusters at r = 0.5.

Part ``margins``: the type I error of a margin gate at its margin (the true difference sits at
``-m``; ``pb = pa + m``), scanned over the nuisance ``pa`` (0, 0.005, 0.025, 0.05, 0.1, 0.2) and
reported as the maximum over the scan (the supremum the docs state). Non-inferiority: Tango's
score interval at 95%, ``ci_lower_at_least = -m`` (nominal one-sided 0.025; target <= 0.03);
equivalence: Tango's with the half-unit continuity correction at 90%, both bounds within
``+-m`` (nominal 0.05; target <= 0.06). Part ``coverage``: coverage of the nominal-95%
Bonett-Price interval ``auto`` reads, with the coverage of the runs where only one cluster
holds a discordant pair.

    nice python benchmarks/bench_clustered_margins.py [--runs 10000] [--part all|margins|coverage]
                                                     [--markdown]

About 17 minutes on a shared machine at 10,000 runs per cell (the output says how long each
part took). Seed 38; the cluster sizes are drawn once from seed 3801.
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

from pytest_sommelier.core import proportions
from pytest_sommelier.core.clusters import (
    bell_mccaffrey_df,
    cr2_design_effect_from_sums,
    kish_design_effect,
)
from pytest_sommelier.core.distributions import normal_cdf, t_quantile
from pytest_sommelier.core.intervals import TANGO_CONTINUITY

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_coverage_small import print_table  # the small-cell benchmark's table printer

MARGIN_KEYS = (("ni", "0.4"), ("ni", "inf"), ("ni", "now"), ("ni", "score"), ("eq", "0.4"),
               ("eq", "inf"), ("eq", "now"), ("eq", "score"))  # fmt: skip
PRODUCT_DF = ("0.4", "inf", "now")
NUISANCE = (0.0, 0.005, 0.025, 0.05, 0.1, 0.2)  # 0.005: where b is often but not always 0
REPEATS = (0.5, 0.95)
MORE_REPEATS = {"K=50 sizes 1-10": (0.3, 0.7), "K=100 sizes 1-10": (0.3, 0.7)}
"""Margin cells around the weakest ones of the first round (r = 0.5 with 50-100 clusters)."""


def designs() -> list[tuple[str, np.ndarray]]:
    """(label, cluster sizes): the issue's designs (sizes 1-10 at K = 8, 12, 30, 50; 12 skewed
    clusters; 60 clusters of two) and our own (K = 20, 75 and 100 of sizes 1-10, 40 of sizes
    1-20, 200 of sizes 1-5, one cluster of 20 among 20 single pairs; drawn in this order, so
    the earlier designs keep their sizes)."""
    rng = np.random.default_rng(3801)
    out = []
    for k in (8, 12, 20, 30, 50):
        out.append((f"K={k} sizes 1-10", rng.integers(1, 11, size=k)))
    out.append(("K=12 skewed", np.array([30, 15, 8, 5, 4, 3, 3, 2, 2, 1, 1, 1])))
    out.append(("K=60 x2", np.full(60, 2)))
    out.append(("1x20 + 20x1", np.array([20] + [1] * 20)))
    out.append(("K=100 sizes 1-10", rng.integers(1, 11, size=100)))
    out.append(("K=75 sizes 1-10", rng.integers(1, 11, size=75)))
    out.append(("K=40 sizes 1-20", rng.integers(1, 21, size=40)))
    out.append(("K=200 sizes 1-5", rng.integers(1, 6, size=200)))
    return out


def simulate(rng, sizes, r, pa, pb, runs):
    """``(runs, n)`` per-pair differences adapter minus base (-1, 0, 1)."""
    p = np.array([1.0 - pa - pb, pa, pb])
    values = np.array([0.0, 1.0, -1.0])
    index = np.repeat(np.arange(sizes.size), sizes)
    shared = rng.choice(3, p=p, size=(runs, sizes.size))[:, index]
    own = rng.choice(3, p=p, size=(runs, index.size))
    repeat = rng.random((runs, index.size)) < r
    return values[np.where(repeat, shared, own)]


def clustered_reading(d: np.ndarray, sizes: np.ndarray):
    """Per run: ``(b, c, n, CR2 deff, {method: df} for 0.4 / inf / now, informative clusters,
    moments, worst)``."""
    n = d.shape[1]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    b = (d > 0).sum(axis=1).astype(float)
    c = (d < 0).sum(axis=1).astype(float)
    residuals = d - d.mean(axis=1, keepdims=True)
    sums = np.add.reduceat(residuals, starts, axis=1)
    deff = cr2_design_effect_from_sums(sums, sizes, (residuals * residuals).sum(axis=1))
    held = np.add.reduceat(np.abs(d), starts, axis=1) > 0
    informative = held.sum(axis=1)
    bm = bell_mccaffrey_df(sizes)
    squares = np.where(held, sizes.astype(float) ** 2, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # core.clusters.effective_clusters
        effective = np.where(informative > 0, squares.sum(axis=1) ** 2
                             / (squares * squares).sum(axis=1), 0.0)  # fmt: skip
    dfs = {"0.4": np.full(b.size, bm),
           "inf": np.where(informative > 0, np.minimum(bm, informative - 1.0), bm),
           "now": np.where(informative > 0, np.minimum(bm, effective - 1.0), bm)}  # fmt: skip
    totals = np.add.reduceat(d, starts, axis=1)
    m = sizes.astype(float)
    moments = np.stack([(totals * totals).sum(axis=1), totals @ m, np.full(b.size, m @ m)], axis=1)
    worst = np.where(b + c > 0, 1.0, kish_design_effect(sizes))
    return b, c, float(n), np.asarray(deff), dfs, informative, moments, worst


def score_bounds(b, c, n, moments, worst, df, level: float, continuity: float = 0.0):
    """``core.proportions.cluster_score_interval`` at the t quantile of ``df`` ([-1, 1] at
    df <= 0), widened to hold the estimate."""
    critical = t_critical(df, level)
    finite = np.isfinite(critical)
    lower, upper = np.full(b.size, -1.0), np.full(b.size, 1.0)
    if finite.any():
        lo, hi = proportions.cluster_score_interval(
            b[finite], c[finite], n, moments[finite], critical[finite], continuity, worst[finite]
        )
        estimate = (b[finite] - c[finite]) / n
        lower[finite], upper[finite] = np.minimum(lo, estimate), np.maximum(hi, estimate)
    return lower, upper


def t_critical(df: np.ndarray, level: float) -> np.ndarray:
    """Per run: the two-sided t quantile at ``df`` where the product forms an interval, inf
    where it gives [-1, 1] (df <= 0, or ``normal_equivalent_level`` rounding to 1: a t
    quantile beyond about 7.9 normal deviates). scipy's vectorised quantile (a test
    dependency; the effective df takes a value per run), else ``t_quantile`` per value."""
    values = np.asarray(df, dtype=float)
    out = np.full(values.size, np.inf)
    rows = values > 0
    q = 1.0 - (1.0 - level) / 2.0
    try:
        from scipy.stats import t as student
    except ImportError:  # pragma: no cover - scipy is a test dependency
        for value in np.unique(values[rows]):
            out[values == value] = t_quantile(level, float(value))
    else:
        out[rows] = student.ppf(q, values[rows])
    tail = np.array([2.0 * normal_cdf(-x) if np.isfinite(x) else 0.0 for x in out])
    return np.where(tail > 1e-15, out, np.inf)


def bounds(method: str, b, c, n, deff, df, level: float):
    """The product's bounds (``intervals._rate_bounds`` on the scaled counts, widened to hold
    the estimate; [-1, 1] at df <= 0 or a level that rounds to 1), each run at its own t
    quantile in one vectorised call."""
    lower, upper = np.full(b.size, -1.0), np.full(b.size, 1.0)
    estimate = (b - c) / n
    critical = t_critical(df, level)
    rows = np.isfinite(critical)
    if not rows.any():
        return lower, upper
    bb, cc, nn, z = b[rows] / deff[rows], c[rows] / deff[rows], n / deff[rows], critical[rows]
    if method == "bonett_price":
        p12, p21 = (bb + 1.0) / (nn + 2.0), (cc + 1.0) / (nn + 2.0)  # bonett_price_interval
        centre = p12 - p21
        se = np.sqrt((p12 + p21 - centre * centre) / (nn + 2.0))
        lo, hi = np.maximum(-1.0, centre - z * se), np.minimum(1.0, centre + z * se)
    else:
        continuity = TANGO_CONTINUITY if method == "tango_cc" else 0.0
        lo, hi = proportions.tango_bounds(bb, cc, nn, z, continuity)
    lower[rows] = np.minimum(lo, estimate[rows])
    upper[rows] = np.maximum(hi, estimate[rows])
    return lower, upper


def margin_cell(rng, sizes, r, margin, pa, runs):
    d = simulate(rng, sizes, r, pa, pa + margin, runs)
    b, c, n, deff, dfs, informative, moments, worst = clustered_reading(d, sizes)
    now = dfs["now"]
    out = {}
    for name in PRODUCT_DF:
        df = dfs[name]
        lower, _ = bounds("tango", b, c, n, deff, df, 0.95)
        out[("ni", name)] = float((lower >= -margin).mean())
        lower, upper = bounds("tango_cc", b, c, n, deff, df, 0.90)
        out[("eq", name)] = float(((lower >= -margin) & (upper <= margin)).mean())
    lower, _ = score_bounds(b, c, n, moments, worst, now, 0.95)
    out[("ni", "score")] = float((lower >= -margin).mean())
    lower, upper = score_bounds(b, c, n, moments, worst, now, 0.90, TANGO_CONTINUITY)
    out[("eq", "score")] = float(((lower >= -margin) & (upper <= margin)).mean())
    out["informative"] = float(informative.mean())
    return out


def margins_part(runs: int, markdown: bool) -> list[dict]:
    started = time.perf_counter()
    rng = np.random.default_rng(38)
    rows = []
    for label, sizes in designs():
        for r in REPEATS + MORE_REPEATS.get(label, ()):
            for margin in (0.05, 0.1):
                cells = [margin_cell(rng, sizes, r, margin, pa, runs) for pa in NUISANCE]
                row = {"design": label, "n": int(sizes.sum()), "k": sizes.size, "r": r,
                       "margin": margin, "informative": np.mean([x["informative"] for x in cells])}
                for key in MARGIN_KEYS:
                    values = [x[key] for x in cells]
                    row[key] = (max(values), NUISANCE[int(np.argmax(values))])
                rows.append(row)
    elapsed = time.perf_counter() - started
    se_ni = math.sqrt(0.025 * 0.975 / runs)
    se_eq = math.sqrt(0.05 * 0.95 / runs)
    print(f"# clustered margin gates: type I error at the margin, maximum over the nuisance pa in "
          f"{NUISANCE} (pb = pa + m), {runs} runs per cell, {elapsed:.0f} s; Monte Carlo s.e. "
          f"{se_ni:.4f} at 0.025, {se_eq:.4f} at 0.05 (a maximum of {len(NUISANCE)} such "
          "estimates is biased up by about one s.e.)")  # fmt: skip
    print("# non-inferiority: Tango 95%, lower >= -m (nominal 0.025, target <= 0.03); "
          "equivalence: Tango + half-unit correction 90%, both within +-m (nominal 0.05, "
          "target <= 0.06); '(at pa)' the nuisance of the maximum")  # fmt: skip
    header = ("design", "n", "K", "repeat r", "margin", "mean informative",
              *(f"{k[0].upper()} {k[1]}" for k in MARGIN_KEYS))  # fmt: skip
    body = [(row["design"], str(row["n"]), str(row["k"]), f"{row['r']:g}", f"{row['margin']:g}",
             f"{row['informative']:.1f}",
             *(f"{row[key][0]:.4f} (at {row[key][1]:g})" for key in
               MARGIN_KEYS))
            for row in rows]  # fmt: skip
    print_table(header, body, markdown)
    for key in MARGIN_KEYS:
        target = 0.03 if key[0] == "ni" else 0.06
        worst = max(rows, key=lambda row: row[key][0])
        print(f"# {key[0]} {key[1]}: max {worst[key][0]:.4f} ({worst['design']}, r "
              f"{worst['r']:g}, margin {worst['margin']:g}, pa {worst[key][1]:g}); every cell "
              f"<= {target}: {all(row[key][0] <= target for row in rows)}")  # fmt: skip
    return rows


COVERAGE_CELLS = ((0.0, 0.05), (0.0, 0.1), (0.05, 0.15))


def coverage_part(runs: int, markdown: bool) -> None:
    started = time.perf_counter()
    rng = np.random.default_rng(3802)
    rows = []
    for label, sizes in designs():
        for r in REPEATS:
            for pb, pa in COVERAGE_CELLS:
                d = simulate(rng, sizes, r, pa, pb, runs)
                b, c, n, deff, dfs, informative, moments, worst = clustered_reading(d, sizes)
                truth = pa - pb
                row = {"design": label, "n": int(sizes.sum()), "k": sizes.size, "r": r,
                       "cell": f"{pb:g}/{pa:g}", "one": float((informative == 1).mean())}
                for name, df in (*((m, dfs[m]) for m in PRODUCT_DF), ("score", dfs["now"])):
                    if name == "score":
                        lower, upper = score_bounds(b, c, n, moments, worst, df, 0.95)
                    else:
                        lower, upper = bounds("bonett_price", b, c, n, deff, df, 0.95)
                    inside = (lower <= truth + 1e-12) & (truth - 1e-12 <= upper)
                    single = informative == 1
                    row[name] = (float(inside.mean()), float((upper - lower).mean()),
                                 float(inside[single].mean()) if single.any() else math.nan)
                rows.append(row)
    elapsed = time.perf_counter() - started
    se = math.sqrt(0.95 * 0.05 / runs)
    print(f"# clustered coverage of the nominal-95% Bonett-Price interval (auto), {runs} runs per "
          f"cell, {elapsed:.0f} s; Monte Carlo s.e. near 0.95: {se:.4f}; "
          "each entry: coverage / mean width / coverage when one cluster holds every discordant "
          "pair ('one cluster': the share of such runs)")  # fmt: skip
    methods = (*PRODUCT_DF, "score")
    header = ("design", "n", "K", "repeat r", "pb/pa", "one cluster", *methods)
    body = [(row["design"], str(row["n"]), str(row["k"]), f"{row['r']:g}", row["cell"],
             f"{row['one']:.3f}",
             *(f"{row[m][0]:.3f} / {row[m][1]:.3f} / {row[m][2]:.3f}" for m in methods))
            for row in rows]  # fmt: skip
    print_table(header, body, markdown)
    for name in methods:
        worst = min(rows, key=lambda row: row[name][0])
        print(f"# {name}: min coverage {worst[name][0]:.3f} ({worst['design']}, r {worst['r']:g}, "
              f"pb/pa {worst['cell']}), mean {np.mean([row[name][0] for row in rows]):.3f}")
    big = [row for row in rows if row["n"] >= 300]
    for name, base in (("inf", "0.4"), ("now", "0.4"), ("now", "inf"), ("score", "0.4")):
        ratios = [row[name][1] / row[base][1] for row in big]
        print(f"# width {name} / {base} in the clustered cells with n >= 300: at most "
              f"{max(ratios):.3f}x, mean {np.mean(ratios):.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--part", choices=("margins", "coverage", "all"), default="all")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.part in ("margins", "all"):
        margins_part(args.runs, args.markdown)
    if args.part in ("coverage", "all"):
        coverage_part(args.runs, args.markdown)


if __name__ == "__main__":
    main()
