"""How far the session finish travels: the modules ``plugin/session.py:_evaluate_and_write``
passes through while it evaluates and writes one run, and how often it comes back to a module
it had left.

    python tools/trace_finish.py [--tree PATH] [--rev REV] [--json]

``--tree`` is a source tree (default: this one); ``--rev`` a git revision of this repository
instead (unpacked with ``git archive`` into a scratch folder). In a scratch project (the
``history`` project of ``tools/equivalence.py``: two arms, English and Hebrew, an arm gate and
a ``stored = "last"`` gate) a first session stores its run; a second, regressed session,
compared with it (``--sommelier-compare last`` and a compare-fail gate), runs its finish under
``sys.setprofile``. Every Python call and return is reduced to the package module executing
after it (frames outside the package are skipped), consecutive repeats collapsed; from that
walk it prints:

- ``modules``: the distinct package modules the finish passes through;
- ``returns``: how many times the walk enters a module it had already been in and left
  (every re-entry counts, loops included), and ``return edges``: the distinct
  ``left -> re-entered`` pairs among them;
- at folder scale (``core``, ``data``, ``view``, ``plugin``, ``inference``, ``training``, the
  top), the same walk's moves between folders: ``data -> core`` and ``core -> data`` (every move
  and the distinct call sites' modules behind them are both given).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests"))

from equivalence import project, unpack  # noqa: E402
from history_helpers import REGRESSED, script  # noqa: E402

PLUGIN = '''
import json
import sys
from pathlib import Path

OUT = Path(__file__).parent / "trace.json"
PACKAGE = "pytest_sommelier"


def pytest_configure(config):
    from pytest_sommelier.plugin import session as module

    original = module.SommelierSession._evaluate_and_write
    walk = []

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_globals.get("__name__", "")
        elif event == "return":
            caller = frame.f_back
            name = caller.f_globals.get("__name__", "") if caller is not None else ""
        else:
            return
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            if not walk or walk[-1] != name:
                walk.append(name)

    def traced(self, *args, **kwargs):
        walk.append(module.__name__)
        sys.setprofile(profile)
        try:
            return original(self, *args, **kwargs)
        finally:
            sys.setprofile(None)
            OUT.write_text(json.dumps(walk))

    module.SommelierSession._evaluate_and_write = traced
'''


def folder_of(module: str) -> str:
    """``core``, ``data``, ``view``, ... or ``top`` (the package's own modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else "top"


def measure(walk: list[str]) -> dict[str, object]:
    """The counts the module docstring names, from one collapsed walk."""
    seen: set[str] = set()
    returns = 0
    edges: set[tuple[str, str]] = set()
    for index, module in enumerate(walk):
        if module in seen:
            returns += 1
            edges.add((walk[index - 1], module))
        seen.add(module)
    folders = [folder_of(m) for m in walk]
    moves: dict[str, int] = {}
    move_edges: dict[str, set[tuple[str, str]]] = {}
    for index in range(1, len(walk)):
        left, right = folders[index - 1], folders[index]
        if left != right:
            key = f"{left}->{right}"
            moves[key] = moves.get(key, 0) + 1
            move_edges.setdefault(key, set()).add((walk[index - 1], walk[index]))
    return {
        "modules": len(seen),
        "module_list": sorted(seen),
        "returns": returns,
        "return_edges": len(edges),
        "folder_moves": dict(sorted(moves.items())),
        "folder_move_edges": {key: len(value) for key, value in sorted(move_edges.items())},
    }


def trace(tree: Path, folder: Path) -> list[str]:
    """Run the two sessions on ``tree`` in ``folder``; the second finish's walk."""
    project(folder)
    (folder / "trace_plugin.py").write_text(PLUGIN, encoding="utf-8")
    tree = Path(tree).resolve()
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{folder}", "PYTHONHASHSEED": "0"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    where = subprocess.run(
        [sys.executable, "-c", "import pytest_sommelier; print(pytest_sommelier.__file__)"],
        cwd=folder, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(tree):
        raise SystemExit(f"PYTHONPATH={tree} imports pytest_sommelier from {where}")
    pytest = [sys.executable, "-m", "pytest", "suite", "-q", "-p", "no:cacheprovider",
              "--sommelier-no-cache"]  # fmt: skip
    subprocess.run([*pytest, "--sommelier-out", "one", "--sommelier-autosave"], cwd=folder,
                   env=env, capture_output=True, check=False)  # fmt: skip
    (folder / "suite" / "script.json").write_text(json.dumps(script(REGRESSED)), "utf-8")
    done = subprocess.run(
        [*pytest, "-p", "trace_plugin", "--sommelier-out", "two", "--sommelier-compare", "last",
         "--sommelier-compare-fail=full_call_exact_match:0.02"],
        cwd=folder, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    path = folder / "trace.json"
    if not path.is_file():
        raise SystemExit(f"no trace written:\n{done.stdout}{done.stderr}")
    return list(json.loads(path.read_text(encoding="utf-8")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=str(REPO), help="source tree (default this one)")
    parser.add_argument("--rev", default=None, help="a git revision instead of --tree")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sommelier-trace-") as scratch:
        tree = unpack(args.rev, Path(scratch) / "tree") if args.rev else Path(args.tree)
        (Path(scratch) / "project").mkdir()
        counts = measure(trace(tree, Path(scratch) / "project"))
    if args.json:
        print(json.dumps(counts, indent=1))
        return 0
    print(f"modules: {counts['modules']}")
    print(f"returns to a module it had left: {counts['returns']} "
          f"({counts['return_edges']} distinct return edges)")  # fmt: skip
    moves, edges = counts["folder_moves"], counts["folder_move_edges"]
    assert isinstance(moves, dict) and isinstance(edges, dict)
    for key in ("data->core", "core->data"):
        print(f"{key}: {moves.get(key, 0)} moves ({edges.get(key, 0)} distinct module pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
