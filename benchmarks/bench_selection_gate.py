"""Benchmark (a simulation): the false pass rate of a selection gate with no true effect.

K candidates and the base each hit each of N examples with probability 0.5 independently, so
no candidate has a true effect; every replication runs the whole pipeline (``evaluate_run``:
the selection, the comparisons, the gate resolved and read at the Bonferroni level over K).
For each K it prints the selection gate's false pass rate (``ci_lower_above = 0`` on the
selected candidate, read at ``1 - (1 - cl) / K``), the same claim read at the unadjusted level
of the selected candidate's own comparison, and their ratio. The one-sided nominal level of a
lower bound at 95% is 2.5%; the gate must stay at or under ``1 - cl`` = 5%.

    python benchmarks/bench_selection_gate.py [--examples 40] [--replications 400]
                                              [--candidates 2 4 8] [--familywise none]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from sweep_helpers import false_pass_rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--replications", type=int, default=400)
    parser.add_argument("--candidates", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--familywise", default="none", choices=["none", "bonferroni", "holm"])
    parser.add_argument("--seed", type=int, default=20261202)
    args = parser.parse_args()
    print(f"{args.examples} examples, {args.replications} replications, no true effect, "
          f"familywise {args.familywise}; nominal one-sided 2.5%, bound 5%")  # fmt: skip
    print(f"{'K':>3} {'selection gate':>15} {'unadjusted':>11} {'ratio':>6} {'seconds':>8}")
    for k in args.candidates:
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            adjusted, unadjusted = false_pass_rates(
                Path(folder), n=args.examples, k=k, replications=args.replications,
                seed=args.seed + k, familywise=args.familywise,
            )  # fmt: skip
            seconds = time.perf_counter() - started
        ratio = f"{unadjusted / adjusted:.1f}" if adjusted else "inf"
        print(f"{k:>3} {adjusted:>15.3f} {unadjusted:>11.3f} {ratio:>6} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
