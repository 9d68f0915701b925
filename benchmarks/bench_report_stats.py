"""Benchmark: session-finish report building with the new statistics defaults against the seed's.

Times ``core.pipeline.evaluate_run`` (arm reports with their language gaps, every comparison,
the gates and the verdict: what the session does at finish) over the same scripted records of a
synthetic run, 10,000 examples (6,000 English roots, 4,000 Hebrew translations) x 3 arms (base,
v1, v3: two comparisons) x 2 slices, 2,000 resamples, under

- ``new``:  ``interval = "auto"``, ``cluster = "root"`` (the defaults): per-metric intervals
  (Bonett-Price, jackknife-t) beside the ``ci95`` bootstrap, from the same draw, clustered by root;
- ``seed``: ``interval = "bootstrap"``, ``cluster = "example"``: the seed's percentile bootstrap.

Calls alternate (new, seed, then seed, new, ...) so machine load hits both alike; the best of
--repeat per mode is compared (CPU time too, which a shared machine disturbs less), and the
ratio printed.
Target: new / seed <= 1.2.

    python benchmarks/bench_report_stats.py [--roots 6000] [--translated 4000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from synthetic_run import synthetic_inputs

from pytest_sommelier.core.pipeline import evaluate_run

MODES = {
    "new": {"interval": "auto", "cluster": "root"},
    "seed": {"interval": "bootstrap", "cluster": "example"},
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", type=int, default=6000)
    parser.add_argument("--translated", type=int, default=4000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {
            mode: synthetic_inputs(
                Path(tmp) / mode, roots=args.roots, translated=args.translated,
                resamples=args.resamples, statistics=statistics,
            )
            for mode, statistics in MODES.items()
        }  # fmt: skip
        examples = len(inputs["new"][1].examples)
        print(
            f"# session-finish report building: {examples} examples x 3 arms x 2 slices, "
            f"{args.resamples} resamples, best of {args.repeat} interleaved calls"
        )
        walls: dict[str, list[float]] = {mode: [] for mode in MODES}
        cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
        for round_ in range(args.repeat):
            order = list(inputs) if round_ % 2 == 0 else list(reversed(inputs))
            for mode in order:
                suite, split, arms, identity = inputs[mode]
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                outcome = evaluate_run(suite, split, arms, run_id="bench", model=identity["model"])
                walls[mode].append(time.perf_counter() - wall)
                cpus[mode].append(time.process_time() - cpu)
                assert outcome.verdict is not None
        for mode, statistics in MODES.items():
            label = ", ".join(f"{k}={v}" for k, v in statistics.items())
            best_wall, best_cpu = min(walls[mode]), min(cpus[mode])
            print(f"{mode:>5} ({label}): {best_wall:.3f} s wall, {best_cpu:.3f} s CPU")
        wall_ratio = min(walls["new"]) / min(walls["seed"])
        cpu_ratio = min(cpus["new"]) / min(cpus["seed"])
        print(f"ratio new / seed: {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU (target <= 1.2x)")


if __name__ == "__main__":
    main()
