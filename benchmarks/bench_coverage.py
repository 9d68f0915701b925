"""Benchmark: coverage and width of the paired interval methods, and the cost of ``auto``.

Coverage part. Every cell simulates ``--runs`` evaluations of ``n`` paired examples and counts
how often each method's nominal-95% interval contains the true adapter-minus-base difference:

- rate cells (``full_call_exact_match``): per pair, "only the base hits" with probability
  ``pb``, "only the adapter hits" with ``pa``, both hit with 0.55, neither with the rest; the
  true difference is ``pa - pb``. n = 30/100/300/1000 x (pb, pa) in (0.02, 0.02), (0, 0.04),
  (0.05, 0.10), (0, 0), (0.10, 0.20);
- clustered rate cells: 50 or 150 roots with one translation each (100 or 300 examples); the
  translation repeats its root's outcome pair with probability 0.9 or 0.5, else draws its own;
- argument_f1 cells: the same grid, with F1 components drawn per outcome (a hit scores every
  gold pair; a miss is a parse failure (30%: 0 of g) or a partial call (m of g matched, m
  uniform below g); g uniform in 1..4, the same for both arms of a pair); the true difference
  is the population micro-F1 difference (a ratio of expectations, computed exactly); and the
  clustered F1 cells as above.

Methods: the seed's percentile bootstrap over pairs (``core.stats.percentile_interval``), the
package's Tango, Bonett-Price and Newcombe intervals (``core.proportions``), their cluster-
adjusted versions (counts divided by the design effect, ``core.clusters``), the percentile
bootstrap over clusters; for argument_f1 (``core.ratio_intervals``) the percentile, BCa and
studentized bootstraps over
pairs, the jackknife-t over pairs and over clusters, BCa over clusters. Rate-cell bootstraps
draw the discordance counts multinomially (the exact distribution of a pair resample); F1 cells
resample their distinct pair types multinomially (exact too), clustered F1 cells resample rows
with the package's own draw (``core.stats.resampled_sums``).

Speed part: ``paired_intervals`` on 10,000 examples (root + one translation = 5,000 clusters)
with ``interval="auto"`` vs ``interval="bootstrap"`` without clusters, and what a report pays:
``auto`` plus the ``ci95`` bootstrap block (``include_bootstrap=True``) vs the ``ci95`` block alone.

    python benchmarks/bench_coverage.py [--runs 1000] [--resamples 1000] [--quick]
                                        [--part coverage|speed|all] [--markdown]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import itertools
import random
import time
from dataclasses import dataclass, field

import numpy as np

from pytest_sommelier.core import intervals as auto_choice
from pytest_sommelier.core import proportions, ratio_intervals
from pytest_sommelier.core.clusters import design_effect_from_moments
from pytest_sommelier.core.stats import (
    paired_bootstrap,
    paired_intervals,
    percentile_interval,
    resampled_sums,
)

LEVEL = 0.95
SIZES = (30, 100, 300, 1000)
RATES = ((0.02, 0.02), (0.0, 0.04), (0.05, 0.10), (0.0, 0.0), (0.10, 0.20))
ROOTS = (50, 150)
REPEATS = (0.9, 0.5)
BOTH = 0.55
FAIL_SHARE = 0.3
GOLD_SIZES = (1, 2, 3, 4)

RATE_COLUMNS = ("percentile", "tango", "bonett_price", "newcombe")
CLUSTER_RATE_COLUMNS = (
    "percentile", "cluster_percentile", "tango", "tango_cl", "bonett_price", "bonett_price_cl",
    "newcombe", "newcombe_cl",
)  # fmt: skip
F1_COLUMNS = ("percentile", "bca", "studentized", "jackknife_t", "jackknife_t_pseudo")
CLUSTER_F1_COLUMNS = (
    "percentile", "jackknife_t", "cluster_percentile", "bca_cluster", "jackknife_t_cluster",
    "jackknife_t_pseudo_cluster",
)  # fmt: skip


@dataclass
class Cell:
    """One simulated cell: label, coverage and mean width per method."""

    kind: str
    label: str
    n: int
    coverage: dict[str, float] = field(default_factory=dict)
    width: dict[str, float] = field(default_factory=dict)
    zero_width: dict[str, float] = field(default_factory=dict)


def record(cell: Cell, name: str, lower: np.ndarray, upper: np.ndarray, truth: float) -> None:
    """Store one method's coverage, mean width and share of zero-width intervals."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    tolerance = 1e-12
    inside = (lower <= truth + tolerance) & (truth - tolerance <= upper)
    cell.coverage[name] = float(np.mean(inside))
    cell.width[name] = float(np.mean(upper - lower))
    cell.zero_width[name] = float(np.mean(upper - lower <= tolerance))


def outcome_probabilities(pb: float, pa: float) -> np.ndarray:
    """[both, candidate (adapter) only, reference (base) only, neither]."""
    return np.array([BOTH, pa, pb, 1.0 - BOTH - pa - pb])


def percentile_from_counts(rng, n: int, b: np.ndarray, c: np.ndarray, resamples: int):
    """The seed's percentile interval of a rate difference, with the pair resample drawn as
    its discordance counts (multinomial: the exact distribution of n pairs drawn with
    replacement)."""
    p = np.stack([b, c, n - b - c], axis=1) / n
    draws = rng.multinomial(n, p, size=(resamples, p.shape[0]))
    differences = (draws[..., 0] - draws[..., 1]) / n
    return percentile_interval(differences, LEVEL)


def rate_methods(both, b, c, neither, level=LEVEL):
    """Tango, Bonett-Price and Newcombe bounds for arrays of tables."""
    n = both + b + c + neither
    return {
        "tango": proportions.tango_interval(b, c, n, level),
        "bonett_price": proportions.bonett_price_interval(b, c, n, level),
        "newcombe": proportions.newcombe_interval(both, b, c, neither, level),
    }


def rate_cell(rng, n: int, pb: float, pa: float, runs: int, resamples: int) -> Cell:
    """An unclustered full_call_exact_match cell."""
    cell = Cell("rate", f"pb={pb:.2f} pa={pa:.2f}", n)
    tables = rng.multinomial(n, outcome_probabilities(pb, pa), size=runs).astype(float)
    both, b, c, neither = tables.T
    truth = pa - pb
    record(cell, "percentile", *percentile_from_counts(rng, n, b, c, resamples), truth)
    for name, bounds in rate_methods(both, b, c, neither).items():
        record(cell, name, *bounds, truth)
    return cell


# Cluster types for rate cells: (root outcome, translation outcome), 16 of them.
_RATE_D = np.array([0.0, 1.0, -1.0, 0.0])  # adapter minus base per outcome


def clustered_rate_cell(rng, roots: int, repeat: float, pb: float, pa: float, runs: int,
                        resamples: int) -> Cell:  # fmt: skip
    """A clustered full_call_exact_match cell: roots x (root + 1 translation)."""
    n = 2 * roots
    cell = Cell("rate-clustered", f"roots={roots} repeat={repeat:.1f} pb={pb:.2f} pa={pa:.2f}", n)
    p = outcome_probabilities(pb, pa)
    types = list(itertools.product(range(4), range(4)))
    type_p = np.array([p[r] * (repeat * (r == t) + (1 - repeat) * p[t]) for r, t in types])
    counts = rng.multinomial(roots, type_p, size=runs).astype(float)  # (runs, 16)
    members = np.zeros((16, 4))
    for k, (r, t) in enumerate(types):
        members[k, r] += 1
        members[k, t] += 1
    both, b, c, neither = (counts @ members).T
    truth = pa - pb
    d_root = np.array([_RATE_D[r] for r, _ in types])
    d_trans = np.array([_RATE_D[t] for _, t in types])
    mean = (b - c) / n
    sse = (
        counts * ((d_root[None, :] - mean[:, None]) ** 2 + (d_trans[None, :] - mean[:, None]) ** 2)
    ).sum(axis=1)
    ssc = (counts * (d_root[None, :] + d_trans[None, :] - 2 * mean[:, None]) ** 2).sum(axis=1)
    deff = np.array(
        [design_effect_from_moments(e, n, k, roots) for e, k in zip(sse, ssc, strict=True)]
    )
    record(cell, "percentile", *percentile_from_counts(rng, n, b, c, resamples), truth)
    draws = rng.multinomial(roots, counts / roots, size=(resamples, runs))  # cluster resample
    d_cluster = d_root + d_trans
    cluster_diff = (draws * d_cluster).sum(axis=-1) / n
    record(cell, "cluster_percentile", *percentile_interval(cluster_diff, LEVEL), truth)
    for name, bounds in rate_methods(both, b, c, neither).items():
        record(cell, name, *bounds, truth)
    adjusted = rate_methods(both / deff, b / deff, c / deff, neither / deff)
    for name, bounds in adjusted.items():
        record(cell, f"{name}_cl", *bounds, truth)
    cell.width["deff"] = float(np.mean(deff))
    return cell


# --- argument_f1 ---------------------------------------------------------------------------


def side_states(g: int) -> list[tuple[str, float, float, float]]:
    """(kind, probability given a miss or 1 for a hit, numerator, denominator) per side state."""
    states = [("hit", 1.0, 2.0 * g, 2.0 * g), ("fail", FAIL_SHARE, 0.0, float(g))]
    states += [("partial", (1 - FAIL_SHARE) / g, 2.0 * m, 2.0 * g) for m in range(g)]
    return states


def f1_types(pb: float, pa: float) -> tuple[np.ndarray, np.ndarray]:
    """Distinct pair types: rows [ref_num, ref_den, cand_num, cand_den] and probabilities."""
    outcome = outcome_probabilities(pb, pa)
    rows, probs = [], []
    for g in GOLD_SIZES:
        states = side_states(g)
        hit = [s for s in states if s[0] == "hit"]
        miss = [s for s in states if s[0] != "hit"]
        # outcome index: 0 both hit, 1 candidate only, 2 reference only, 3 neither
        for k, (ref_states, cand_states) in enumerate(
            ((hit, hit), (miss, hit), (hit, miss), (miss, miss))
        ):
            for r, c in itertools.product(ref_states, cand_states):
                rows.append((r[2], r[3], c[2], c[3]))
                probs.append(outcome[k] / len(GOLD_SIZES) * r[1] * c[1])
    rows_a, probs_a = np.array(rows), np.array(probs)
    keep = probs_a > 0
    return rows_a[keep], probs_a[keep] / probs_a[keep].sum()


def f1_truth(rows: np.ndarray, probs: np.ndarray) -> float:
    """Population micro-F1 difference: ratio of expected sums per side."""
    expected = probs @ rows
    return float(expected[2] / expected[3] - expected[0] / expected[1])


def f1_cell(rng, n: int, pb: float, pa: float, runs: int, resamples: int) -> Cell:
    """An unclustered argument_f1 cell (pair types resampled multinomially)."""
    cell = Cell("f1", f"pb={pb:.2f} pa={pa:.2f}", n)
    rows, probs = f1_types(pb, pa)
    truth = f1_truth(rows, probs)
    extended = ratio_intervals.studentized_rows(rows)
    counts = rng.multinomial(n, probs, size=runs).astype(float)
    bounds: dict[str, list[tuple[float, float]]] = {name: [] for name in F1_COLUMNS}
    chunk = 50
    for start in range(0, runs, chunk):
        block = counts[start : start + chunk]
        draws = rng.multinomial(n, block / n, size=(resamples, block.shape[0]))
        sums = draws.astype(float) @ extended  # (R, chunk, 14)
        for j in range(block.shape[0]):
            weights = block[j]
            present = weights > 0
            unit_rows, w = rows[present], weights[present]
            estimate = float(ratio_intervals.ratio_difference(w @ unit_rows))
            replicates = ratio_intervals.ratio_difference(sums[:, j, :4])
            low, high = percentile_interval(replicates[:, None], LEVEL)
            bounds["percentile"].append((float(low[0]), float(high[0])))
            bca = ratio_intervals.bca_interval(replicates, estimate, unit_rows, LEVEL, w)
            bounds["bca"].append((bca["lower"], bca["upper"]))
            se = ratio_intervals.linearized_standard_error(unit_rows, w)
            st = ratio_intervals.studentized_interval(sums[:, j, :], estimate, se, LEVEL)
            bounds["studentized"].append((st["lower"], st["upper"]))
            jk = ratio_intervals.jackknife_t_interval(unit_rows, LEVEL, w)
            bounds["jackknife_t"].append((jk["lower"], jk["upper"]))
            jk = ratio_intervals.pseudo_jackknife_t_interval(unit_rows, LEVEL, w)
            bounds["jackknife_t_pseudo"].append((jk["lower"], jk["upper"]))
    for name, pairs in bounds.items():
        array = np.array(pairs)
        record(cell, name, array[:, 0], array[:, 1], truth)
    return cell


def clustered_f1_cell(rng, roots: int, repeat: float, pb: float, pa: float, runs: int,
                      resamples: int, seed: int) -> Cell:  # fmt: skip
    """A clustered argument_f1 cell: each translation repeats its root's pair type w.p. repeat."""
    from pytest_sommelier.core.clusters import cluster_index, design_effect

    n = 2 * roots
    cell = Cell("f1-clustered", f"roots={roots} repeat={repeat:.1f} pb={pb:.2f} pa={pa:.2f}", n)
    rows, probs = f1_types(pb, pa)
    truth = f1_truth(rows, probs)
    index = cluster_index([k for k in range(roots) for _ in range(2)], n)
    bounds: dict[str, list[tuple[float, float]]] = {name: [] for name in CLUSTER_F1_COLUMNS}
    deffs = []
    for run in range(runs):
        root = rng.choice(len(probs), size=roots, p=probs)
        own = rng.choice(len(probs), size=roots, p=probs)
        trans = np.where(rng.random(roots) < repeat, root, own)
        pair_rows = np.stack([rows[root], rows[trans]], axis=1).reshape(n, 4)
        cluster_rows = rows[root] + rows[trans]
        estimate = float(ratio_intervals.ratio_difference(pair_rows.sum(axis=0)))
        pair_rep = ratio_intervals.ratio_difference(
            resampled_sums(pair_rows, seed=seed + run, resamples=resamples))
        cluster_rep = ratio_intervals.ratio_difference(
            resampled_sums(cluster_rows, seed=seed + run, resamples=resamples))  # fmt: skip
        for name, rep in (("percentile", pair_rep), ("cluster_percentile", cluster_rep)):
            low, high = percentile_interval(rep[:, None], LEVEL)
            bounds[name].append((float(low[0]), float(high[0])))
        bca = ratio_intervals.bca_interval(cluster_rep, estimate, cluster_rows, LEVEL)
        bounds["bca_cluster"].append((bca["lower"], bca["upper"]))
        for name, units in (("jackknife_t", pair_rows), ("jackknife_t_cluster", cluster_rows)):
            jk = ratio_intervals.jackknife_t_interval(units, LEVEL)
            bounds[name].append((jk["lower"], jk["upper"]))
        jk = ratio_intervals.pseudo_jackknife_t_interval(cluster_rows, LEVEL)
        bounds["jackknife_t_pseudo_cluster"].append((jk["lower"], jk["upper"]))
        deffs.append(design_effect(ratio_intervals.linearized_residuals(pair_rows), index))
    for name, pairs in bounds.items():
        array = np.array(pairs)
        record(cell, name, array[:, 0], array[:, 1], truth)
    cell.width["deff"] = float(np.mean(deffs))
    return cell


# --- reporting -----------------------------------------------------------------------------


def table(cells: list[Cell], columns: tuple[str, ...], markdown: bool, extra: str = "") -> str:
    """Coverage / mean width per method, one row per cell."""
    head = ["n", "cell", *columns] + (["deff"] if extra else [])
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append("  ".join(f"{h:>18}" if i > 1 else f"{h:>5}" if i == 0 else f"{h:<40}"
                               for i, h in enumerate(head)))  # fmt: skip
    for cell in cells:
        values = [f"{cell.coverage[c]:.3f} / {cell.width[c]:.3f}" for c in columns]
        if extra:
            values.append(f"{cell.width['deff']:.2f}")
        if markdown:
            lines.append(f"| {cell.n} | {cell.label} | " + " | ".join(values) + " |")
        else:
            lines.append(f"{cell.n:>5}  {cell.label:<40}  " + "  ".join(f"{v:>18}" for v in values))
    return "\n".join(lines)


def summary(cells: list[Cell], method: str, reference: str, label: str) -> str:
    """Min and mean coverage of one method over cells; width ratio to ``reference`` at n>=300."""
    coverage = [c.coverage[method] for c in cells]
    ratios = [c.width[method] / c.width[reference] for c in cells
              if c.n >= 300 and c.width[reference] > 0]  # fmt: skip
    ratio = f"{max(ratios):.3f} (max), {np.mean(ratios):.3f} (mean)" if ratios else "n/a"
    return (f"{label}: {method}: min coverage {min(coverage):.3f}, mean {np.mean(coverage):.4f} "
            f"over {len(cells)} cells; width / {reference} at n >= 300: {ratio}")  # fmt: skip


def coverage_part(args: argparse.Namespace) -> None:
    """Run every cell and print the tables and the summary of each method."""
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    if args.skip_rates:
        f1_part(args, rng)
        return
    rate_cells = [rate_cell(rng, n, pb, pa, args.rate_runs, args.resamples)
                  for n in SIZES for pb, pa in RATES]  # fmt: skip
    clustered = [clustered_rate_cell(rng, k, rho, pb, pa, args.rate_runs, args.resamples)
                 for k in ROOTS for rho in REPEATS for pb, pa in RATES]  # fmt: skip
    print(f"# full_call_exact_match, {args.rate_runs} runs per cell, percentile bootstrap with "
          f"{args.resamples} resamples; each entry is coverage / mean width")  # fmt: skip
    print(table(rate_cells, RATE_COLUMNS, args.markdown))
    print()
    print("# clustered full_call_exact_match (roots x (root + 1 translation)); _cl: divided by "
          "the design effect")  # fmt: skip
    print(table(clustered, CLUSTER_RATE_COLUMNS, args.markdown, extra="deff"))
    print()
    for method in ("tango", "bonett_price", "newcombe"):
        print(summary(rate_cells, method, "percentile", "unclustered"))
        print(summary(clustered, f"{method}_cl", "cluster_percentile", "clustered  "))
    auto = auto_choice.AUTO_RATE_METHOD
    both = [c.coverage[auto] for c in rate_cells] + [c.coverage[f"{auto}_cl"] for c in clustered]
    print(f"auto (rates) = {auto} (+ design effect with clusters): min coverage {min(both):.3f}, "
          f"mean {np.mean(both):.4f} over {len(both)} cells")  # fmt: skip
    ratios = [c.width[auto] / c.width["percentile"] for c in rate_cells
              if c.n >= 300 and c.width["percentile"] > 0]  # fmt: skip
    bounds_met = min(both) >= 0.93 and np.mean(both) >= 0.945 and max(ratios) <= 1.15
    print(f"auto (rates) meets >= 0.93 per cell, >= 0.945 on average, width <= 1.15x the "
          f"percentile bootstrap at n >= 300 (unclustered): {bounds_met}")  # fmt: skip
    print(f"[rates: {time.perf_counter() - started:.0f} s]")
    print()
    if args.skip_f1:
        return
    f1_part(args, rng)


def f1_part(args: argparse.Namespace, rng: np.random.Generator) -> None:
    """The argument_f1 cells, unclustered and clustered, with the summaries."""
    started = time.perf_counter()
    f1_cells = [f1_cell(rng, n, pb, pa, args.runs, args.resamples)
                for n in SIZES for pb, pa in RATES]  # fmt: skip
    print(f"# argument_f1, {args.runs} runs per cell, {args.resamples} resamples")
    print(table(f1_cells, F1_COLUMNS, args.markdown))
    print()
    f1_clustered = [clustered_f1_cell(rng, k, rho, pb, pa, args.f1_cluster_runs,
                                      args.resamples, args.seed)
                    for k in ROOTS for rho in REPEATS for pb, pa in RATES]  # fmt: skip
    print(f"# clustered argument_f1, {args.f1_cluster_runs} runs per cell")
    print(table(f1_clustered, CLUSTER_F1_COLUMNS, args.markdown, extra="deff"))
    print()
    for method in F1_COLUMNS:
        print(summary(f1_cells, method, "percentile", "unclustered"))
    for method in CLUSTER_F1_COLUMNS:
        print(summary(f1_clustered, method, "cluster_percentile", "clustered  "))
    both = [c.coverage["jackknife_t_pseudo"] for c in f1_cells]
    both += [c.coverage["jackknife_t_pseudo_cluster"] for c in f1_clustered]
    print(f"auto (argument_f1) = jackknife-t with pseudo-units over pairs / clusters: min "
          f"coverage {min(both):.3f}, mean {np.mean(both):.4f} over {len(both)} cells")  # fmt: skip
    ratios = [c.width["jackknife_t_pseudo"] / c.width["jackknife_t"] for c in f1_cells
              if c.n >= 300 and c.width["jackknife_t"] > 0]  # fmt: skip
    print(f"jackknife_t_pseudo / jackknife_t width at n >= 300: at most {max(ratios):.3f}x")
    print(f"[argument_f1: {time.perf_counter() - started:.0f} s]")


# --- speed ---------------------------------------------------------------------------------

GOLD = {"name": "book", "arguments": {"city": "Haifa", "nights": 2, "tags": ["sea", "quiet"]}}
ARGUMENTS = (
    GOLD["arguments"], {"city": "Haifa", "nights": 3, "tags": ["sea", "quiet"]},
    {"city": "Haifa"}, {"city": "Haifa", "nights": 2, "tags": ["sea", "quiet"], "late": True},
)  # fmt: skip


def make_records(n: int, seed: int) -> tuple[list[dict], list[dict]]:
    """Reference (weaker) and candidate (stronger) scoring records for n example ids."""
    rng = random.Random(seed)

    def one(example_id: str, weights: list[int]) -> dict:
        kind = rng.choices(range(6), weights)[0]
        if kind == 5:
            return {"example_id": example_id, "parse_status": "invalid_json",
                    "parsed_call": None, "gold_call": GOLD}  # fmt: skip
        name = "cancel" if kind == 4 else "book"
        return {"example_id": example_id, "parse_status": "ok", "gold_call": GOLD,
                "parsed_call": {"name": name, "arguments": ARGUMENTS[kind % 4]}}  # fmt: skip

    ids = [f"ex-{i:05d}" for i in range(n)]
    return [one(i, [3, 2, 1, 1, 1, 3]) for i in ids], [one(i, [6, 2, 1, 1, 1, 1]) for i in ids]


def best_of_interleaved(repeats: int, functions: dict) -> dict[str, float]:
    """The fastest of ``repeats`` timed calls of each function (seconds), the functions called
    round-robin so that a busy moment on a shared machine hits all of them alike."""
    best = {name: float("inf") for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            started = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def speed_part(args: argparse.Namespace) -> None:
    """Time ``auto`` with root-like clusters against the seed's bootstrap on 10,000 examples."""
    n = args.speed_examples
    ref, cand = make_records(n, args.seed)
    roots = [i // 2 for i in range(n)]
    common = {"seed": 41, "resamples": 2000}
    paired_bootstrap(ref, cand, **common)  # warm the component memo
    timings = best_of_interleaved(args.repeats, {
        "bootstrap": lambda: paired_intervals(ref, cand, interval="bootstrap", **common),
        "auto_clusters": lambda: paired_intervals(ref, cand, clusters=roots, **common),
        "auto": lambda: paired_intervals(ref, cand, **common),
        "ci95": lambda: paired_bootstrap(ref, cand, **common),
        "auto_clusters_ci95": lambda: paired_intervals(
            ref, cand, clusters=roots, include_bootstrap=True, **common),
        "auto_ci95": lambda: paired_intervals(ref, cand, include_bootstrap=True, **common),
    })  # fmt: skip
    print(f"# speed: {n} examples ({n // 2} root clusters), 2,000 resamples, best of "
          f"{args.repeats} interleaved calls")  # fmt: skip
    for name, seconds in timings.items():
        print(f"{name:>20}: {seconds * 1000:8.1f} ms")
    print(f"ratio auto (clusters=roots) / bootstrap (no clusters): "
          f"{timings['auto_clusters'] / timings['bootstrap']:.2f}x (target <= 1.2x)")
    print(f"ratio auto (no clusters) / bootstrap (no clusters): "
          f"{timings['auto'] / timings['bootstrap']:.2f}x")
    print(f"report cost, auto (clusters=roots) + ci95 block / ci95 alone: "
          f"{timings['auto_clusters_ci95'] / timings['ci95']:.2f}x")
    print(f"report cost, auto (no clusters) + ci95 block / ci95 alone: "
          f"{timings['auto_ci95'] / timings['ci95']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs per argument_f1 cell")
    parser.add_argument("--rate-runs", type=int, default=2000, help="runs per rate cell")
    parser.add_argument("--f1-cluster-runs", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--part", choices=("coverage", "speed", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="200 runs, 400 resamples")
    parser.add_argument("--skip-f1", action="store_true")
    parser.add_argument("--skip-rates", action="store_true", help="only the argument_f1 cells")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--speed-examples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.rate_runs, args.f1_cluster_runs, args.resamples = 200, 200, 200, 400
    if args.part in ("coverage", "all"):
        coverage_part(args)
    if args.part in ("speed", "all"):
        speed_part(args)


if __name__ == "__main__":
    main()
