"""Benchmark: the HTML report's file size and the time to write it, against the goals
(demo page < 1 MB; a 10,000-example, 3-arm page < 15 MB, written in < 2 s).

For each run it prints the size of the run's own artifacts and of the page (and their ratio),
the time to read the artifacts alone (the floor any renderer pays) and to render and write the
page (median of --repeat), and the ratio of the two. The 10k run is synthetic: written by the
real pipeline from scripted outputs (tests/synthetic_run.py), 6,000 English roots and 4,000
Hebrew translations, arms base, v1 and v3.

    python benchmarks/bench_html.py [--demo runs/demo] [--roots 6000] [--translated 4000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from synthetic_run import write_synthetic_run

from pytest_sommelier.core import runlayout
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.view.html import REPORT_FILE, write_report

MB = 1_000_000


def artifact_bytes(run_dir: Path) -> int:
    return sum(
        p.stat().st_size for p in run_dir.rglob("*") if p.is_file() and p.name != REPORT_FILE
    )


def read_only(run_dir: Path) -> None:
    """Read every artifact the page is built from (JSON decoded), and nothing else."""
    artifacts.read_json(runlayout.resolved(run_dir))
    for arm_dir in sorted((run_dir / "eval").iterdir()):
        artifacts.read_arm(arm_dir)
    for path in sorted((run_dir / "report").glob("*.json")):
        artifacts.read_json(path)
    runlayout.split_copy(run_dir).read_text(encoding="utf-8").splitlines()


def timed(function, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeat`` calls (CPU time shows the cost on a shared,
    loaded machine, where wall time also counts other processes' turns)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def measure(label: str, run_dir: Path, repeat: int, size_goal: float, time_goal: float) -> None:
    read_s, read_cpu = timed(lambda: read_only(run_dir), repeat)
    write_s, write_cpu = timed(lambda: write_report(run_dir), repeat)
    page = (run_dir / REPORT_FILE).stat().st_size
    data = artifact_bytes(run_dir)
    size_ok = "ok" if page < size_goal * MB else "OVER GOAL"
    time_ok = "ok" if write_s < time_goal else "OVER GOAL"
    print(f"{label}:")
    print(
        f"  artifacts {data / MB:.2f} MB, page {page / MB:.2f} MB (page/artifacts "
        f"{page / data:.2f}x); goal < {size_goal:g} MB: {size_ok}"
    )
    print(
        f"  read artifacts {read_s:.3f} s wall ({read_cpu:.3f} s CPU), render+write "
        f"{write_s:.3f} s wall ({write_cpu:.3f} s CPU), ratio {write_s / read_s:.2f}x; "
        f"goal < {time_goal:g} s: {time_ok}"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"  (load average {load:.1f} on {os.cpu_count()} CPUs while measuring)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", default="runs/demo", help="a demo run folder (skipped if absent)")
    parser.add_argument("--roots", type=int, default=6000)
    parser.add_argument("--translated", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    demo = Path(args.demo)
    if runlayout.resolved(demo).exists():
        measure(f"demo run ({demo})", demo, args.repeat, size_goal=1, time_goal=2)
    else:
        print(f"demo run: skipped, no run at {demo} (run scripts/demo.sh first)")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        run_dir = write_synthetic_run(
            Path(folder), roots=args.roots, translated=args.translated, resamples=200
        )
        built = time.perf_counter() - start
        n = args.roots + args.translated
        measure(
            f"synthetic run, {n} examples x 3 arms (built in {built:.1f} s)",
            run_dir,
            args.repeat,
            size_goal=15,
            time_goal=2,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
