"""Benchmark: does ``sommelier plan`` deliver the power it promises, end to end?

Each simulated study: a pilot of ``n0`` pairs (or ``n0 / 2`` roots with one translation each)
is drawn; the plan sizes the main run from the pilot's discordance (``core.power.plan``: the
observed discordance as if known, 0.3's rule, or an upper confidence limit of it, the rule
now); the main run of that many pairs is drawn and its gate ``ci_lower_above = 0`` is judged on
the interval ``auto`` reads (Bonett-Price; over clusters with the CR2 design effect at Bell &
McCaffrey's degrees of freedom). The achieved power is the share of studies whose gate passes,
at the planner's target of 0.80 for a true difference ``delta`` with discordance ``psi`` (a pair
is "only the adapter hits" with ``(psi + delta) / 2``, "only the base" with ``(psi - delta) /
2``). Vectorised: every study of a cell is one row.

The margin part does the same for a non-inferiority gate ``ci_lower_at_least = -m`` and an
equivalence gate (``-m`` and ``+m``) at a true difference of 0 (what the plan assumes): the plan
is Nam's (1997) score-test size (``core.power.plan(..., limits=...)``), and the main run's gate
is judged as the product judges it, on Tango's score interval (its lower bound >= -m exactly
when the score test at -m rejects; an equivalence gate's with the continuity correction of half
a unit; over clusters on the counts divided by the CR2 design effect at the t quantile of Bell &
McCaffrey's degrees of freedom).

    python benchmarks/bench_plan_power.py [--studies 2000] [--markdown]
                                          [--part all|superiority|margin]

Sized for one core: about two minutes at 2,000 studies per cell (the output says how long).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import itertools
import math
import time

import numpy as np

from pytest_sommelier.core import power as power_module
from pytest_sommelier.core import proportions
from pytest_sommelier.core.distributions import t_quantile
from pytest_sommelier.core.intervals import TANGO_CONTINUITY

TARGET = 0.8
LEVEL = 0.95
BOTH = 0.4
CELLS = (  # (pilot pairs, psi, delta)
    (40, 0.3, 0.1), (40, 0.5, 0.15), (100, 0.2, 0.05), (100, 0.4, 0.1), (300, 0.3, 0.05),
    (300, 0.1, 0.03),
    (20, 0.5, 0.5), (12, 0.3, 0.1), (12, 0.5, 0.15), (60, 0.3, 0.1), (60, 0.5, 0.15),
)  # fmt: skip
"""The last five are issue 38's: a pilot of 20 pairs at discordance 0.5 and effect 0.5 (0.4
delivered 0.742, and said "not detectable" in 20-24% of plans), clustered pilots of 6 and 30
roots (12 and 60 pairs; 0.4 delivered 0.643-0.785 over clusters)."""
REPEAT = 0.7  # a translation repeats its root's outcome with this probability


def probabilities(psi: float, delta: float) -> np.ndarray:
    """[both, adapter only, base only, neither]."""
    pa, pb = (psi + delta) / 2, (psi - delta) / 2
    return np.array([BOTH, pa, pb, 1.0 - BOTH - pa - pb])


def bp_lower(b, c, n, deff, critical):
    """Bonett-Price's lower bound on the counts divided by ``deff`` at a critical value (z, or
    the t quantile at the interval's degrees of freedom)."""
    bb, cc, nn = b / deff, c / deff, n / deff
    p12, p21 = (bb + 1) / (nn + 2), (cc + 1) / (nn + 2)
    centre = p12 - p21
    return centre - critical * np.sqrt((p12 + p21 - centre**2) / (nn + 2))


Z = 1.959963984540054


def plan_pairs(b, c, n, deff, delta, rule: str, df=None, clusters=None) -> np.ndarray:
    """The planner's pairs for every pilot (``rule``: "observed" or "upper"); over clusters the
    pilot's degrees of freedom and clusters (what ``sommelier plan`` reads from its entry)."""
    out = np.empty(b.size)
    for i in range(b.size):
        extra = {} if df is None else {"df": float(df[i]), "clusters": int(clusters)}
        row = power_module.plan(delta, int(b[i]), int(c[i]), int(n), design_effect=float(deff[i]),
                                discordance=rule, **extra)  # fmt: skip
        out[i] = row["pairs_needed"] if row["pairs_needed"] is not None else np.nan
    return out


def unclustered(rng, n0, psi, delta, studies, rule):
    p = probabilities(psi, delta)
    pilot = rng.multinomial(n0, p, size=studies)
    pairs = plan_pairs(pilot[:, 1], pilot[:, 2], n0, np.ones(studies), delta, rule)
    ok = ~np.isnan(pairs)
    sizes = np.where(ok, pairs, 1).astype(np.int64)
    main = rng.multinomial(sizes, p)
    lower = bp_lower(main[:, 1].astype(float), main[:, 2].astype(float), sizes.astype(float),
                     1.0, Z)  # fmt: skip
    passed = (lower > 0) & ok
    return float(passed.mean()), float(np.nanmedian(pairs))


_D = np.array([0.0, 1.0, -1.0, 0.0])
_TYPES = list(itertools.product(range(4), range(4)))


def cluster_draw(rng, roots: np.ndarray, p: np.ndarray):
    """Per study, ``roots`` roots with one translation: (b, c, n, CR2 deff, df)."""
    type_p = np.array([p[r] * (REPEAT * (r == t) + (1 - REPEAT) * p[t]) for r, t in _TYPES])
    counts = rng.multinomial(roots, type_p).astype(float)
    d_root = np.array([_D[r] for r, _ in _TYPES])
    d_trans = np.array([_D[t] for _, t in _TYPES])
    n = 2.0 * roots
    b = counts @ ((d_root > 0).astype(float) + (d_trans > 0))
    c = counts @ ((d_root < 0).astype(float) + (d_trans < 0))
    mean = (b - c) / n
    sse = (counts * ((d_root - mean[:, None]) ** 2 + (d_trans - mean[:, None]) ** 2)).sum(axis=1)
    sums = (counts * (d_root + d_trans - 2 * mean[:, None]) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        deff = np.where(sse > 0, (n - 1) / n * sums / (1 - 2 / n) / sse, 2.0)
    # the product's df: Bell & McCaffrey's K - 1 (equal sizes), never more than the roots
    # holding a discordant pair minus one (core.clusters.informative_df)
    informative = counts @ ((d_root != 0) | (d_trans != 0)).astype(float)
    df = np.where(informative > 0, np.minimum(roots - 1.0, informative - 1.0), roots - 1.0)
    return b, c, n, np.maximum(1.0, deff), df


def clustered(rng, n0, psi, delta, studies, rule):
    p = probabilities(psi, delta)
    b, c, n, deff, pilot_df = cluster_draw(rng, np.full(studies, n0 // 2), p)
    pairs = plan_pairs(b, c, n0, deff, delta, rule, pilot_df, n0 // 2)
    ok = ~np.isnan(pairs)
    roots = np.where(ok, np.ceil(pairs / 2), 2).astype(np.int64)
    b, c, n, deff, df = cluster_draw(rng, roots, p)
    critical = np.array([t_quantile(LEVEL, float(d)) if d > 0 else np.inf for d in df])
    lower = bp_lower(b, c, n, deff, critical)
    passed = (lower > 0) & ok
    return float(passed.mean()), float(np.nanmedian(pairs))


MARGIN_CELLS = (  # (design, pilot pairs, psi, margin); the true difference is 0
    ("non-inferiority", 40, 0.3, 0.1), ("non-inferiority", 100, 0.2, 0.05),
    ("non-inferiority", 100, 0.4, 0.1), ("non-inferiority", 300, 0.1, 0.03),
    ("non-inferiority", 300, 0.3, 0.05), ("equivalence", 100, 0.2, 0.1),
    ("equivalence", 300, 0.3, 0.08),
)  # fmt: skip


def limits_of(design: str, margin: float) -> tuple[tuple[str, float], ...]:
    if design == "equivalence":
        return (("lower", -margin), ("upper", margin))
    return (("lower", -margin),)


def margin_plan(b, c, n, deff, limits, rule: str, df=None, clusters=None) -> np.ndarray:
    out = np.empty(b.size)
    for i in range(b.size):
        extra = {} if df is None else {"df": float(df[i]), "clusters": int(clusters)}
        row = power_module.plan(0.03, int(b[i]), int(c[i]), int(n), design_effect=float(deff[i]),
                                discordance=rule, limits=limits, **extra)  # fmt: skip
        out[i] = row["pairs_needed"] if row["pairs_needed"] is not None else np.nan
    return out


def score_passes(b, c, n, deff, critical, limits) -> np.ndarray:
    """Whether Tango's interval on the counts divided by ``deff`` clears every limit: the
    score test rejects at each (``T(-m) >= crit`` for a lower limit, ``T(m) <= -crit`` for an
    upper one); ``critical`` is z, or the t quantile over clusters."""
    bb, cc, nn = b / deff, c / deff, n / deff
    continuity = TANGO_CONTINUITY if len(limits) > 1 else 0.0  # an equivalence gate's reading
    passed = np.ones(b.size, dtype=bool)
    for side, limit in limits:
        numerator, sd = proportions._tango_parts(np.full(b.size, limit), bb, cc, nn)
        toward = -continuity if side == "lower" else continuity
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.nan_to_num((numerator + toward) / sd, nan=0.0)
        passed &= (t >= critical) if side == "lower" else (t <= -critical)
    return passed


def margin_unclustered(rng, n0, psi, limits, studies, rule):
    p = probabilities(psi, 0.0)
    pilot = rng.multinomial(n0, p, size=studies)
    pairs = margin_plan(pilot[:, 1], pilot[:, 2], n0, np.ones(studies), limits, rule)
    ok = ~np.isnan(pairs)
    sizes = np.where(ok, pairs, 1).astype(np.int64)
    main = rng.multinomial(sizes, p)
    passed = score_passes(main[:, 1].astype(float), main[:, 2].astype(float),
                          sizes.astype(float), 1.0, Z, limits) & ok  # fmt: skip
    return float(passed.mean()), float(np.nanmedian(pairs))


def margin_clustered(rng, n0, psi, limits, studies, rule):
    p = probabilities(psi, 0.0)
    b, c, n, deff, pilot_df = cluster_draw(rng, np.full(studies, n0 // 2), p)
    pairs = margin_plan(b, c, n0, deff, limits, rule, pilot_df, n0 // 2)
    ok = ~np.isnan(pairs)
    roots = np.where(ok, np.ceil(pairs / 2), 2).astype(np.int64)
    b, c, n, deff, df = cluster_draw(rng, roots, p)
    critical = np.array([t_quantile(LEVEL, float(d)) if d > 0 else np.inf for d in df])
    passed = score_passes(b, c, n, deff, critical, limits) & ok
    return float(passed.mean()), float(np.nanmedian(pairs))


def margin_part(rng, studies: int, markdown: bool) -> None:
    started = time.perf_counter()
    rows = []
    for name, simulate in (("unclustered", margin_unclustered), ("clustered", margin_clustered)):
        for design, n0, psi, margin in MARGIN_CELLS:
            limits = limits_of(design, margin)
            row = [name, design, str(n0), f"{psi:g}", f"{margin:g}"]
            for rule in ("observed", "upper"):
                achieved, median = simulate(rng, n0, psi, limits, studies, rule)
                row += [f"{achieved:.3f}", f"{median:.0f}"]
            rows.append(row)
    elapsed = time.perf_counter() - started
    print(f"# margin gates: end-to-end power of pilot -> plan (Nam 1997) -> main run judged on "
          f"Tango's interval, true difference 0, target {TARGET:.2f}, {studies} studies per "
          f"cell, {elapsed:.0f} s on one core; Monte Carlo s.e. "
          f"{math.sqrt(TARGET * (1 - TARGET) / studies):.4f}")  # fmt: skip
    header = ["design", "gate", "pilot pairs", "psi", "margin", "observed: power",
              "median pairs", "upper limit (now): power", "median pairs"]  # fmt: skip
    show(header, rows, markdown)


def show(header, rows, markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(x) for x in column) for column in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        print("  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--part", choices=("all", "superiority", "margin"), default="all")
    parser.add_argument("--issue-cells", action="store_true",
                        help="only issue 38's pilots (the last five superiority cells)")
    args = parser.parse_args()
    if args.issue_cells:
        global CELLS
        CELLS = CELLS[-5:]
    rng = np.random.default_rng(26)
    if args.part in ("all", "superiority"):
        superiority_part(rng, args.studies, args.markdown)
    if args.part in ("all", "margin"):
        margin_part(np.random.default_rng(1997), args.studies, args.markdown)


def superiority_part(rng, studies: int, markdown: bool) -> None:
    started = time.perf_counter()
    rows = []
    for design, simulate in (("unclustered", unclustered), ("clustered", clustered)):
        for n0, psi, delta in CELLS:
            row = [design, str(n0), f"{psi:g}", f"{delta:g}"]
            for rule in ("observed", "upper"):
                achieved, median = simulate(rng, n0, psi, delta, studies, rule)
                row += [f"{achieved:.3f}", f"{median:.0f}"]
            rows.append(row)
    elapsed = time.perf_counter() - started
    print(f"# end-to-end power of pilot -> plan -> main run at a target of {TARGET:.2f}, "
          f"{studies} studies per cell, {elapsed:.0f} s on one core; Monte Carlo s.e. "
          f"{math.sqrt(TARGET * (1 - TARGET) / studies):.4f}")  # fmt: skip
    header = ["design", "pilot pairs", "psi", "delta", "observed (0.3): power",
              "median pairs", "upper limit (now): power", "median pairs"]  # fmt: skip
    show(header, rows, markdown)


if __name__ == "__main__":
    main()
