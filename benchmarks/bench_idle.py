"""Benchmark: what the installed plugin costs a pytest run that collects no suite.

In one run, in a temporary folder holding one trivial test module (``test_a.py``, one test, no
``sommelier.toml``, an empty ``pytest.ini`` so this repository's configuration is not read):

(A) ``python -m pytest -q -p no:cacheprovider test_a.py``: the plugin loads through its
    ``pytest11`` entry point (or, when the package is not installed, through
    ``-p pytest_sommelier.plugin.hooks``, the same module the entry point names);
(B) the same command with ``-p no:sommelier`` (and without the ``-p`` above): pytest without the
    plugin.

Each side runs ``--runs`` times in a fresh subprocess, alternating which goes first, after one
untimed warm-up run of each (bytecode caches, the file-system cache;
``PYTHONDONTWRITEBYTECODE`` is unset for the subprocesses, or each run would compile every
module again). It prints the median wall time of each side, the difference of the medians
(A - B) in milliseconds, the ratio A / B, the median of the run-by-run differences (less
sensitive to a machine whose load drifts), and whether the goal (the plugin adds at most
30 ms) is met. Other installed plugins load on both sides alike.

    python benchmarks/bench_idle.py [--runs 15]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 30.0
ENTRY_POINT = "pytest_sommelier.plugin.hooks"
TEST_MODULE = "def test_a():\n    assert 1 + 1 == 2\n"


def plugin_is_installed() -> bool:
    """True when the ``pytest11`` entry point ``sommelier`` is registered in this environment."""
    return any(
        ep.name == "sommelier" and ep.value == ENTRY_POINT
        for ep in importlib.metadata.entry_points(group="pytest11")
    )


def commands(installed: bool) -> dict[str, list[str]]:
    """The two command lines: with the plugin (A) and without it (B)."""
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_a.py"]
    with_plugin = base if installed else [*base, "-p", ENTRY_POINT]
    return {"with plugin": with_plugin, "without (-p no:sommelier)": [*base, "-p", "no:sommelier"]}


def run_once(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall time of one pytest subprocess (it must pass its one test)."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "1 passed" not in done.stdout:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-2000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per side (default 15)")
    args = parser.parse_args(argv)
    installed = plugin_is_installed()
    sides = commands(installed)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )}
    # the warm-up writes the bytecode caches both sides then read: with PYTHONDONTWRITEBYTECODE
    # every run would compile every module again, and the plugin's side would measure compiling
    if env.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print("PYTHONDONTWRITEBYTECODE is set here; unset for the timed runs (bytecode caches)")
    times: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="sommelier-idle-") as folder:
        cwd = Path(folder)
        (cwd / "test_a.py").write_text(TEST_MODULE, encoding="utf-8")
        (cwd / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        for command in sides.values():  # warm-up, untimed
            run_once(command, cwd, env)
        names = list(sides)
        for index in range(args.runs):
            order = names if index % 2 == 0 else names[::-1]
            for name in order:
                times[name].append(run_once(sides[name], cwd, env))
    medians = {name: statistics.median(values) for name, values in times.items()}
    loaded = "entry point" if installed else f"-p {ENTRY_POINT} (package not installed)"
    print(f"pytest on one trivial test, {args.runs} alternating runs per side; plugin via {loaded}")
    for name, values in times.items():
        spread = f"min {min(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"
        print(f"  {name:28s} median {medians[name] * 1000:7.1f} ms  ({spread})")
    with_plugin, without = medians[names[0]], medians[names[1]]
    added_ms = (with_plugin - without) * 1000
    paired_ms = statistics.median(a - b for a, b in zip(*times.values(), strict=True)) * 1000
    print(f"  added by the plugin: {added_ms:+.1f} ms, ratio {with_plugin / without:.3f}")
    print(f"  median of the {args.runs} paired differences: {paired_ms:+.1f} ms")
    verdict = "met" if added_ms <= GOAL_MS else "NOT met"
    print(f"  goal (at most {GOAL_MS:.0f} ms added): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
