"""Benchmark: the designs where the 0.3 intervals failed (issue 26), each method beside the one
it replaced.

Margins part (exact, no simulation). A gate with a margin passes when its bound clears the
margin; its type I error is the probability that it passes when the true difference sits *at*
the margin. For a rate metric the discordance table is multinomial, so the error is a finite
sum over every ``(b, c)``, computed exactly here for n = 20-300. Cells: non-inferiority at 95%
(``ci_lower_at_least = -m``: one-sided nominal 0.025) and equivalence at 90% (``+-m``: nominal
0.05), with the discordance at the margin one-sided (only the base hits: ``pb = m``, ``pa = 0``)
or two-sided (``pb = m + 0.05``, ``pa = 0.05``); Bonett-Price (the 0.3 reading) against Tango's
score interval (what a non-inferiority gate reads now) and Tango's with a continuity correction
of half a unit (``tango_cc``: what an equivalence gate reads now).

Clusters part (simulated, vectorised: every run of a cell is one row of a matrix). Cluster
designs: K = 10, 20 or 30 clusters of 1-4 pairs, one dominant cluster (20 pairs among 20 or 40
single pairs), "ICC" 0.3, 0.6 or 0.9, which is the *repeat probability* ``r`` (each pair
repeats its cluster's outcome with that probability, else draws its own, so every pair keeps
the marginal probabilities; the within-cluster correlation of the outcome is ``r^2``);
discordance one-sided (``pb = 0``, ``pa = 0.1``) or two-sided (``pb = 0.05``, ``pa = 0.15``);
unclustered control cells at n = 20-1000. Methods: ``bp_deff_z`` (0.3's ``auto``:
Bonett-Price on the counts divided by the sandwich design effect, worst case n/K),
``bp_deff_t`` (the same with t(K-1)), ``bp_cr2_bm`` (Bonett-Price with the CR2 design effect of
Bell & McCaffrey 2002 and their Satterthwaite degrees of freedom, worst case Kish's
sum(m^2)/n: ``core.clusters.cr2_design_effect``, ``bell_mccaffrey_df``).

    python benchmarks/bench_coverage_small.py [--runs 4000]
                                              [--part margins|clusters|scan|all] [--markdown]

``--part scan`` (issue 38) reports the supremum of the exact type I error over the nuisance
discordance for n = 10-2000 and margins 0.01-0.2: the bound the docs state.

Sized for one core: the margins part takes a few seconds, the clusters part about a minute at
4,000 runs per cell (the output says how long each part took).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import time

import numpy as np

from pytest_sommelier.core import proportions
from pytest_sommelier.core.clusters import (
    bell_mccaffrey_df,
    cr2_design_effect_from_sums,
    kish_design_effect,
)
from pytest_sommelier.core.distributions import t_quantile

BOTH = 0.55
MARGINS = (0.02, 0.05, 0.1, 0.2)
MARGIN_SIZES = (20, 50, 100, 300)


# --- margins: exact type I error at the margin ---------------------------------------------


def _lgamma(x: np.ndarray) -> np.ndarray:
    """``log Gamma`` elementwise (scipy's when installed: the n = 2000 scan has 2 million
    tables; else the standard library's, one by one)."""
    try:
        from scipy.special import gammaln
    except ImportError:  # pragma: no cover - scipy is a test dependency
        return np.vectorize(math.lgamma)(x)
    return np.asarray(gammaln(x))


def table_probabilities(n: int, pa: float, pb: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ``(b, c)`` with ``b + c <= n`` and its multinomial probability (b: only the
    adapter hits, with ``pa``; c: only the base hits, with ``pb``)."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    b, c = b[keep].astype(float), c[keep].astype(float)
    rest = 1.0 - pa - pb
    log_p = (
        math.lgamma(n + 1) - _lgamma(b + 1) - _lgamma(c + 1) - _lgamma(n - b - c + 1)
        + np.where(b > 0, b * math.log(pa) if pa > 0 else -np.inf, 0.0)
        + np.where(c > 0, c * math.log(pb) if pb > 0 else -np.inf, 0.0)
        + (n - b - c) * math.log(rest)
    )  # fmt: skip
    p = np.exp(log_p)
    mass = p > 1e-16
    return b[mass], c[mass], p[mass]


def type_one_error(n: int, margin: float, two_sided: bool, method: str, design: str) -> float:
    """P(the gate passes | true difference -margin), exactly: the nuisance discordance ``pa`` is
    0.05 two-sided, 0 one-sided (:func:`_type_one`)."""
    return _type_one(n, margin, 0.05 if two_sided else 0.0, method, design)


def margins_part(markdown: bool) -> None:
    started = time.perf_counter()
    rows = []
    for design in ("non-inferiority", "equivalence"):
        for two_sided in (False, True):
            for margin in MARGINS:
                for n in MARGIN_SIZES:
                    bp = type_one_error(n, margin, two_sided, "bonett_price", design)
                    tango = type_one_error(n, margin, two_sided, "tango", design)
                    tango_cc = type_one_error(n, margin, two_sided, "tango_cc", design)
                    rows.append((design, "two-sided" if two_sided else "one-sided", margin, n,
                                 bp, tango, tango_cc))  # fmt: skip
    elapsed = time.perf_counter() - started
    print("# type I error at the margin, exact (every discordance table of n pairs); "
          f"{elapsed:.1f} s on one core")  # fmt: skip
    print("# non-inferiority: 95% two-sided interval, lower bound >= -m (nominal 0.025); "
          "equivalence: 90%, both bounds within +-m (nominal 0.05)")  # fmt: skip
    header = ("design", "discordance", "margin", "n", "bonett_price (0.3)", "tango",
              "tango_cc")  # fmt: skip
    now = {"non-inferiority": 5, "equivalence": 6}  # the column each design reads now
    print_table(header, [(d, s, f"{m:g}", str(n), f"{bp:.4f}",
                          f"{t:.4f}" + (" (now)" if now[d] == 5 else ""),
                          f"{cc:.4f}" + (" (now)" if now[d] == 6 else ""))
                         for d, s, m, n, bp, t, cc in rows], markdown)  # fmt: skip
    for design, nominal in (("non-inferiority", 0.025), ("equivalence", 0.05)):
        chosen = [r for r in rows if r[0] == design]
        print(f"# {design}: max bonett_price {max(r[4] for r in chosen):.4f}, max tango "
              f"{max(r[5] for r in chosen):.4f}, max tango_cc {max(r[6] for r in chosen):.4f} "
              f"(nominal {nominal})")  # fmt: skip


def margin_widths(markdown: bool, runs: int = 2000) -> None:
    """Mean width of the 90% intervals an equivalence gate could read, unclustered, at n = 300
    and 1000 on the regular grid of bench_coverage.py (both hit 0.55): Bonett-Price (0.3),
    Tango, Tango with the half-unit continuity correction (now), seed 26."""
    rng = np.random.default_rng(26)
    rows = []
    for n in (300, 1000):
        for pb, pa in ((0.02, 0.02), (0.0, 0.04), (0.05, 0.10), (0.0, 0.0), (0.10, 0.20)):
            draws = rng.multinomial(n, [BOTH, pa, pb, 1 - BOTH - pa - pb], size=runs)
            b, c = draws[:, 1].astype(float), draws[:, 2].astype(float)
            size = np.full_like(b, float(n))
            widths = []
            for lower, upper in (proportions.bonett_price_interval(b, c, size, 0.9),
                                 proportions.tango_interval(b, c, size, 0.9),
                                 proportions.tango_interval(b, c, size, 0.9, 0.5)):  # fmt: skip
                widths.append(float(np.mean(np.asarray(upper) - np.asarray(lower))))
            rows.append((str(n), f"pb={pb:g} pa={pa:g}", *(f"{w:.4f}" for w in widths),
                         f"{widths[2] / widths[0]:.3f}x"))  # fmt: skip
    print(f"# equivalence reading: mean width of 90% intervals, unclustered, {runs} runs per cell")
    header = ("n", "cell", "bonett_price (0.3)", "tango", "tango_cc (now)", "tango_cc / 0.3")
    print_table(header, rows, markdown)


SCAN_SIZES = (10, 15, 20, 30, 50, 100, 300, 1000, 2000)
SCAN_MARGINS = (0.01, 0.02, 0.05, 0.1, 0.2)
SCAN_NUISANCE = (0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3)
LARGE = 1000
"""From this many pairs the scan keeps margins 0.01-0.05 and the nuisance up to 0.1 (the
tables grow as n^2; the issue's cell is n = 2000 at a margin of 0.05)."""


def scan_part(markdown: bool) -> None:
    """The supremum over the nuisance (issue 38): for every n and margin, the largest exact
    type I error over the discordance ``pa`` (``pb = pa + m``) in :data:`SCAN_NUISANCE`, of the
    reading each design uses now (non-inferiority: Tango at 95%; equivalence: Tango with the
    half-unit correction at 90%)."""
    started = time.perf_counter()
    rows = []
    for n in SCAN_SIZES:
        margins = SCAN_MARGINS if n < LARGE else tuple(m for m in SCAN_MARGINS if m <= 0.05)
        nuisance = SCAN_NUISANCE if n < LARGE else tuple(p for p in SCAN_NUISANCE if p <= 0.1)
        for margin in margins:
            found = {}
            for design, method in (("non-inferiority", "tango"), ("equivalence", "tango_cc")):
                values = [(_type_one(n, margin, pa, method, design), pa) for pa in nuisance]
                found[design] = max(values)
            rows.append((str(n), f"{margin:g}",
                         *(f"{found[d][0]:.4f} (pa {found[d][1]:g})"
                           for d in ("non-inferiority", "equivalence"))))  # fmt: skip
    elapsed = time.perf_counter() - started
    print(f"# supremum of the exact type I error over the nuisance pa in {SCAN_NUISANCE} "
          f"(pb = pa + m), {elapsed:.0f} s; non-inferiority: Tango 95% (nominal 0.025); "
          "equivalence: Tango + half-unit correction 90% (nominal 0.05)")  # fmt: skip
    print_table(("n", "margin", "non-inferiority", "equivalence"), rows, markdown)
    for column, name in ((2, "non-inferiority"), (3, "equivalence")):
        worst = max(rows, key=lambda row: float(row[column].split()[0]))
        print(f"# {name}: max {worst[column]} at n = {worst[0]}, margin {worst[1]}")


def _type_one(n: int, margin: float, pa: float, method: str, design: str) -> float:
    """P(the gate passes | true difference -margin) with ``pb = pa + margin``, exactly."""
    if pa + pa + margin > 1.0:
        return 0.0
    b, c, p = table_probabilities(n, pa, pa + margin)
    level = 0.95 if design == "non-inferiority" else 0.90
    if method == "bonett_price":
        lower, upper = proportions.bonett_price_interval(b, c, float(n), level)
    else:
        continuity = 0.5 if method == "tango_cc" else 0.0
        lower, upper = proportions.tango_interval(b, c, float(n), level, continuity)
    estimate = (b - c) / n
    lower, upper = np.minimum(lower, estimate), np.maximum(upper, estimate)
    passes = lower >= -margin
    if design == "equivalence":
        passes &= upper <= margin
    return float(p[passes].sum())


# --- clusters: coverage with few or unequal clusters ---------------------------------------


def designs(rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """(label, cluster sizes) of every clustered design, and the unclustered controls."""
    out = []
    for k in (10, 20, 30):
        out.append((f"K={k} sizes 1-4", rng.integers(1, 5, size=k)))
    out.append(("1x20 + 20x1", np.array([20] + [1] * 20)))
    out.append(("1x20 + 40x1", np.array([20] + [1] * 40)))
    return out


_D = np.array([0.0, 1.0, -1.0, 0.0])  # adapter minus base per outcome: both, a, b, neither


def simulate(rng, sizes: np.ndarray, icc: float, pb: float, pa: float, runs: int):
    """``(runs, n)`` outcome codes: each pair repeats its cluster's outcome with probability
    ``icc``, else draws its own (so every pair's marginal is ``[BOTH, pa, pb, rest]``)."""
    p = np.array([BOTH, pa, pb, 1.0 - BOTH - pa - pb])
    index = np.repeat(np.arange(sizes.size), sizes)
    shared = rng.choice(4, p=p, size=(runs, sizes.size))[:, index]
    own = rng.choice(4, p=p, size=(runs, index.size))
    repeat = rng.random((runs, index.size)) < icc
    return np.where(repeat, shared, own), index


def sandwich_deff(residuals: np.ndarray, index: np.ndarray, k: int) -> np.ndarray:
    """0.3's design effect per run: [K/(K-1) sum R_k^2] / [n/(n-1) sum r^2], worst case n/K
    where no pair varies, never below 1."""
    n = residuals.shape[1]
    sums = np.stack([residuals[:, index == g].sum(axis=1) for g in range(k)], axis=1)
    top = k / (k - 1.0) * (sums * sums).sum(axis=1)
    bottom = n / (n - 1.0) * (residuals * residuals).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(bottom > 1e-12, top / bottom, n / k)
    return np.maximum(1.0, deff)


def bp_scaled(b, c, n, deff, critical):
    """Bonett-Price's centre and standard error, the variance times ``deff``, bounds at
    ``centre +- critical * se``, truncated to [-1, 1] and widened to hold the estimate."""
    p12, p21 = (b + 1.0) / (n + 2.0), (c + 1.0) / (n + 2.0)
    centre = p12 - p21
    se = np.sqrt((p12 + p21 - centre * centre) / (n + 2.0) * deff)
    estimate = (b - c) / n
    lower = np.minimum(np.maximum(-1.0, centre - critical * se), estimate)
    upper = np.maximum(np.minimum(1.0, centre + critical * se), estimate)
    return lower, upper


def cluster_cell(rng, label, sizes, icc, pb, pa, runs):
    codes, index = simulate(rng, sizes, icc, pb, pa, runs)
    d = _D[codes]
    n, k = d.shape[1], sizes.size
    b = (d > 0).sum(axis=1).astype(float)
    c = (d < 0).sum(axis=1).astype(float)
    residuals = d - d.mean(axis=1, keepdims=True)
    truth = pa - pb
    z = 1.959963984540054
    results = {}
    deff = sandwich_deff(residuals, index, k)
    results["bp_deff_z"] = bp_scaled(b / deff, c / deff, n / deff, 1.0, z)
    t_k = t_quantile(0.95, k - 1.0)
    results["bp_deff_t"] = bp_scaled(b / deff, c / deff, n / deff, 1.0, t_k)
    sums = np.stack([residuals[:, index == g].sum(axis=1) for g in range(k)], axis=1)
    cr2 = cr2_design_effect_from_sums(sums, sizes, (residuals * residuals).sum(axis=1))
    df = bell_mccaffrey_df(sizes)
    results["bp_cr2_bm"] = bp_scaled(b / cr2, c / cr2, n / cr2, 1.0, t_quantile(0.95, df))
    row = {"label": label, "icc": icc, "pb": pb, "pa": pa, "n": n, "k": k, "df": df,
           "kish": kish_design_effect(sizes)}  # fmt: skip
    for name, (lower, upper) in results.items():
        inside = (lower <= truth + 1e-12) & (truth - 1e-12 <= upper)
        row[name] = (float(inside.mean()), float((upper - lower).mean()),
                     float((truth > upper + 1e-12).mean()), float((upper - lower <= 1e-12).mean()))
    return row


def clusters_part(runs: int, markdown: bool) -> None:
    started = time.perf_counter()
    rng = np.random.default_rng(20261201)
    rows = []
    cells = [(label, sizes, icc) for label, sizes in designs(rng) for icc in (0.3, 0.6, 0.9)]
    cells += [(f"n={n} unclustered", np.ones(n, dtype=int), 0.0) for n in (20, 50, 100, 300, 1000)]
    for label, sizes, icc in cells:
        for pb, pa in ((0.0, 0.05), (0.0, 0.1), (0.05, 0.15)):
            rows.append(cluster_cell(rng, label, sizes, icc, pb, pa, runs))
    elapsed = time.perf_counter() - started
    methods = ("bp_deff_z", "bp_deff_t", "bp_cr2_bm")
    print(f"# coverage of nominal-95% rate intervals, {runs} runs per cell, {elapsed:.0f} s on "
          "one core; cov (upper miss) width; Monte Carlo s.e. of a coverage near 0.95: "
          f"{math.sqrt(0.95 * 0.05 / runs):.4f}")  # fmt: skip
    header = ("design", "icc", "pb/pa", "n", "K", "BM df", "Kish deff",
              *(f"{m}" for m in methods))  # fmt: skip
    body = []
    for row in rows:
        cells_text = [f"{row[m][0]:.3f} ({row[m][2]:.3f}) {row[m][1]:.3f}" for m in methods]
        body.append((row["label"], f"{row['icc']:g}", f"{row['pb']:g}/{row['pa']:g}",
                     str(row["n"]), str(row["k"]), f"{row['df']:.1f}", f"{row['kish']:.2f}",
                     *cells_text))  # fmt: skip
    print_table(header, body, markdown)
    for m in methods:
        cover = [row[m][0] for row in rows]
        zero = max(row[m][3] for row in rows)
        print(f"# {m}: min coverage {min(cover):.3f}, mean {np.mean(cover):.3f}, "
              f"max zero-width share {zero:.3f}")  # fmt: skip
    big = [row for row in rows if row["n"] >= 300 and row["k"] == row["n"]]
    ratio = max(row["bp_cr2_bm"][1] / row["bp_deff_z"][1] for row in big)
    print(f"# width of bp_cr2_bm / bp_deff_z in unclustered cells at n >= 300: at most "
          f"{ratio:.4f}x")  # fmt: skip


def print_table(header, rows, markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    parser.add_argument("--part", choices=("margins", "clusters", "scan", "all"), default="all")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.part in ("margins", "all"):
        margins_part(args.markdown)
        margin_widths(args.markdown)
    if args.part in ("clusters", "all"):
        clusters_part(args.runs, args.markdown)
    if args.part in ("scan", "all"):
        scan_part(args.markdown)


if __name__ == "__main__":
    main()
