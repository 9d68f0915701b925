"""Benchmark: collecting a 10,000-example suite (two arms, 20,000 items) vs 20,000 plain tests.

In one run, in a temporary folder:

1. writes a suite whose split holds ``--examples`` formatted examples (half ``en`` roots, half
   ``he`` translations paired with them) and two arms (``base`` and ``adapter``);
2. writes a test module with ``2 * --examples`` trivially parametrized Python tests;
3. times ``pytest --collect-only -q -m eval`` on the suite and ``pytest --collect-only -q`` on the
   module, each in a fresh subprocess, plus an empty session's startup: one untimed warm-up
   run of each (bytecode caches, the file-system cache; ``PYTHONDONTWRITEBYTECODE`` is unset
   for the subprocesses, or every run would compile and assertion-rewrite every module of the
   plugin again, which the suite's side pays and the plain side does not), then ``--repeat``
   rounds, the three interleaved in each round (a machine whose load drifts drifts for all);
4. prints each side's best and median wall time, the ratio suite / plain of the best times
   and of each round's pair (median), the same for the CPU time of each subprocess (user +
   sys), and whether the goals are met: the suite collects in at most 1.5x the plain tests'
   time (issue 40), judged on CPU time, the figure a loaded machine disturbs least (another
   process's load stretches the wall time of whichever side it lands on; it barely changes the
   CPU time either side spends), with the larger of its best and paired ratios; and in at most
   10 s of wall time.

``--profile`` also runs the suite's collection in-process under cProfile and prints the
functions with the largest cumulative and own time (where the collection time goes), and the
modules the suite's collection imports that an empty session does not (``python -X
importtime``, by cumulative time: what collecting a suite costs in imports).

    python benchmarks/bench_collection.py [--examples 10000] [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from suite_factory import make_row, write_suite  # noqa: E402

GOAL_SECONDS = 10.0
GOAL_RATIO = 1.5
PYTEST_FLAGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "--collect-only", "-q")

PLAIN_MODULE = """
import pytest


@pytest.mark.parametrize("index", range({count}))
def test_plain(index):
    assert index >= 0
"""


def suite_rows(examples: int) -> list[dict]:
    """``examples`` rows: en-i roots and he-i translations of them (realistic prompt sizes)."""
    half = examples // 2
    calls = [
        {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
        {"name": "search", "arguments": {"q": "tea", "filters": {"max": 3, "tags": ["a"]}}},
        {"name": "book", "arguments": {"room": 4, "late": True}},
    ]
    system = "<|im_start|>system\nYou can call these tools: " + "x" * 600 + "<|im_end|>\n"
    rows = []
    for index in range(half):
        call = calls[index % len(calls)]
        rows.append(
            make_row(
                f"en-{index:05d}",
                "en",
                gold_call=call,
                prompt_text=f"{system}<|im_start|>user\nquery {index}<|im_end|>\n",
            )
        )
    for index in range(examples - half):
        call = calls[index % len(calls)]
        rows.append(
            make_row(
                f"he-{index:05d}",
                "he",
                f"en-{index:05d}",
                gold_call=call,
                prompt_text=f"{system}<|im_start|>user\nשאלה {index}<|im_end|>\n",
            )
        )
    return rows


def write_inputs(folder: Path, examples: int) -> tuple[Path, Path]:
    """The suite folder and the plain test module, side by side under ``folder``."""
    suite = write_suite(folder / "suite", rows=suite_rows(examples))
    plain = folder / "plain" / "test_plain.py"
    plain.parent.mkdir()
    plain.write_text(PLAIN_MODULE.format(count=2 * examples), encoding="utf-8")
    return suite.parent, plain.parent


def collect_once(cwd: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU time (user + sys) of ``pytest <args>`` in a fresh subprocess, and its last
    summary line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_FLAGS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 5):
        raise SystemExit(f"pytest {args} failed ({done.returncode}):\n{done.stdout[-3000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return seconds, cpu, lines[-1] if lines else done.stderr.strip()[-300:]


def collect_rounds(
    sides: dict[str, tuple[Path, list[str]]], repeat: int
) -> tuple[dict[str, tuple[list[float], str]], dict[str, list[float]]]:
    """Each side's wall times over ``repeat`` interleaved rounds (after one untimed warm-up
    run of each) with its last summary line, and each side's CPU times."""
    env = {**os.environ}
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print("PYTHONDONTWRITEBYTECODE is set here; unset for the timed runs (bytecode caches)")
    for cwd, args in sides.values():
        collect_once(cwd, args, env)
    results: dict[str, tuple[list[float], str]] = {name: ([], "") for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(repeat):
        for name, (cwd, args) in sides.items():
            seconds, used, line = collect_once(cwd, args, env)
            results[name] = ([*results[name][0], seconds], line)
            cpu[name].append(used)
    return results, cpu


def profile_collection(suite_dir: Path, top: int) -> None:
    """Collect the suite in-process under cProfile and print where the time goes."""
    import pytest

    profiler = cProfile.Profile()
    old = Path.cwd()
    os.chdir(suite_dir)
    try:
        sink = io.StringIO()
        stdout, sys.stdout = sys.stdout, sink
        try:
            profiler.enable()
            pytest.main([*PYTEST_FLAGS, "-m", "eval"])
            profiler.disable()
        finally:
            sys.stdout = stdout
    finally:
        os.chdir(old)
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).strip_dirs().sort_stats(order)
        stats.print_stats(top)
        print(f"\n--- cProfile of the suite collection, by {order} (top {top}) ---")
        print("\n".join(text.getvalue().splitlines()[4:]))


def imported(cwd: Path, args: list[str], env: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Module -> (self, cumulative) import time in microseconds of ``pytest <args>`` run under
    ``python -X importtime`` (``-s``: pytest's capture would swallow the interpreter's report)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pytest", "-s", *PYTEST_FLAGS, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found: dict[str, tuple[int, int]] = {}
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            found[parts[2].strip()] = (int(parts[0]), int(parts[1]))
    return found


def profile_imports(suite_dir: Path, empty_dir: Path, top: int) -> None:
    """The modules collecting the suite imports beyond an empty session, largest first."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    empty = imported(empty_dir, [], env)
    suite = imported(suite_dir, ["-m", "eval"], env)
    extra = {name: times for name, times in suite.items() if name not in empty}
    total = sum(own for own, _ in extra.values())
    print(
        f"\n--- imports of the suite collection beyond an empty session: {len(extra)} modules, "
        f"{total / 1000:.0f} ms (own times; top {top} by cumulative time) ---"
    )
    ranked = sorted(extra.items(), key=lambda item: -item[1][1])
    for name, (own, cumulative) in ranked[:top]:
        print(f"{cumulative / 1000:8.1f} ms cumulative {own / 1000:7.1f} ms own  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-collection-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        suite_dir, plain_dir = write_inputs(folder, args.examples)
        print(f"wrote {args.examples} examples in {time.perf_counter() - started:.1f} s")
        empty_dir = folder / "empty"
        empty_dir.mkdir()
        runs, cpu = collect_rounds(
            {
                "empty": (empty_dir, []),
                "suite": (suite_dir, ["-m", "eval"]),
                "plain": (plain_dir, []),
            },
            args.repeat,
        )
        best = {name: min(times) for name, (times, _) in runs.items()}
        median = {name: statistics.median(times) for name, (times, _) in runs.items()}
        paired = statistics.median(
            s / p for s, p in zip(runs["suite"][0], runs["plain"][0], strict=True)
        )
        print(f"{args.repeat} interleaved rounds after a warm-up; best / median wall time")
        print(f"empty session (startup)       : {best['empty']:7.2f} s / {median['empty']:6.2f} s")
        print(
            f"suite  --collect-only -m eval : {best['suite']:7.2f} s / {median['suite']:6.2f} s"
            f"   [{runs['suite'][1]}]"
        )
        print(
            f"plain  --collect-only         : {best['plain']:7.2f} s / {median['plain']:6.2f} s"
            f"   [{runs['plain'][1]}]"
        )
        ratio = best["suite"] / best["plain"]
        print(
            f"ratio suite / plain, wall     : {ratio:7.2f}x best, {paired:.2f}x paired"
            " (median of each round's ratio)"
        )
        cpu_best = {name: min(times) for name, times in cpu.items()}
        cpu_paired = statistics.median(
            s / p for s, p in zip(cpu["suite"], cpu["plain"], strict=True)
        )
        print(
            f"CPU time, user+sys (best)     : suite {cpu_best['suite']:.2f} s, plain "
            f"{cpu_best['plain']:.2f} s, empty {cpu_best['empty']:.2f} s"
        )
        print(
            f"ratio suite / plain, CPU      : {cpu_best['suite'] / cpu_best['plain']:7.2f}x best,"
            f" {cpu_paired:.2f}x paired"
        )
        net = (best["suite"] - best["empty"]) / max(best["plain"] - best["empty"], 1e-9)
        print(f"ratio net of startup (wall)   : {net:7.2f}x")
        judged = max(cpu_best["suite"] / cpu_best["plain"], cpu_paired)
        verdict = "met" if judged <= GOAL_RATIO else "NOT met"
        print(
            f"goal suite / plain <= {GOAL_RATIO}x     : {verdict} (CPU time: {judged:.2f}x, the "
            f"larger of best and paired; wall {ratio:.2f}x best, {paired:.2f}x paired)"
        )
        verdict = "met" if best["suite"] <= GOAL_SECONDS else "NOT met"
        print(f"goal suite collection <= {GOAL_SECONDS:.0f} s : {verdict}")
        if args.profile:
            profile_collection(suite_dir, args.top)
            profile_imports(suite_dir, empty_dir, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
