"""Behaviour before and after a refactoring: the same sessions and commands run on two source
trees, their terminal output and every file they write compared byte for byte, apart from run
ids, dates, timings and the scratch folder's path.

    python tools/equivalence.py [--before REV] [--after PATH] [--keep DIR]

``--before`` is a git revision of this repository (default ``main``), unpacked with
``git archive`` into a scratch folder (nothing in the repository changes); ``--after`` is a
source tree (default: this one). Each tree runs, with ``PYTHONPATH`` pointing at it, in fresh
scratch projects of scripted-fake suites (the tests' ``suite_factory``, ``plugin_helpers``,
``sweep_helpers`` and the one fake, ``fakes``). ``history`` (two arms, English and Hebrew, an
arm gate and a stored gate):

1. a session autosaving the run into the store (``one``), with ``--junitxml``;
2. a regressed session compared with the stored run (``--sommelier-compare last`` and a
   compare-fail gate: ``two``), with ``--junitxml``;
3. ``sommelier rescore two --out three``, ``sommelier report two --out page.html``,
   ``sommelier history``, ``sommelier compare 1 two``.

``family`` (the same suite under ``familywise = "holm"`` with a comparison gate): a stored run,
then a session whose two compare-fail gates join the family, then ``sommelier rescore --suite
--compare --compare-fail``. ``sweep`` (three checkpoints behind an adapter glob, a
``[selection]``, selection gates against the reference and against stored runs, by label and
by ``last-any``): a run stored as ``shipped``, a second session judged against it, its rescore
and its page. Every step runs with ``GITHUB_STEP_SUMMARY`` naming a file of the project, so
the CI summary is compared too (``ci-summary/<step>.md``).

It prints one line per file (``same``, ``differs``, ``only before``, ``only after``) and a
unified diff of each difference; the exit status is 0 when everything is the same, 1 otherwise.
A difference is not necessarily a regression: a refactoring that fixes a bug changes the files
the fix is about, and the diff shows exactly which lines. Between 0.3 (``5c34d32``) and issue
25's layout the only differences are its fixes: the gate rows of ``report/summary.md`` and of
the page (the gates as the terminal says them, no raw floats) and the JUnit files (each
example's ``sommelier_outcome`` property); every other artifact and all terminal output match.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakes import FAKE_CONFTEST  # noqa: E402
from history_helpers import REGRESSED, V1, script  # noqa: E402
from plugin_helpers import rows  # noqa: E402
from suite_factory import write_suite  # noqa: E402
from sweep_helpers import BEATS_BASE, STORED, sweep  # noqa: E402

GATES = [
    {"name": "adapter-solid", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5},
    {"name": "not-worse-than-shipped", "arm": "adapter", "stored": "last",
     "metric": "full_call_exact_match", "ci_lower_at_least": -0.5},
]  # fmt: skip
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
COMPACT = re.compile(r"\d{8}T\d{6}Z")
SUMMARY_LINE = re.compile(r"=+ (.*) in \d+\.\d+s(?: \([0-9:]+\))? =+")
DURATION = re.compile(r'\b(time=")\d+\.\d+(")')
PAGE_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2} UTC|Z)")
STAGING = re.compile(r"/tmp/sommelier-rescore-[\w-]+")
# timings as the views write them: the page's telemetry cells (more than three decimals or an
# exponent) and the Markdown efficiency rows (| arm | seconds/example | device-seconds/success |)
PAGE_TIMING = re.compile(r'(<td class="num">)\d+\.\d{4,}(?:e-?\d+)?(</td>)|'
                         r'(<td class="num">)\d+(?:\.\d+)?e-?\d+(</td>)')
# the page's telemetry rows: an arm, its device, six counts, then its timings (seconds, seconds
# per example, device-seconds per success), whatever their precision
TELEMETRY_ROW = re.compile(r'(<tr data-arm="[^"]+"><td><bdi>[^<]+</bdi></td><td>[^<]*</td>'
                           r'(?:<td class="num">\d+</td>){6})(.*?)(</tr>)')
MD_EFFICIENCY = re.compile(r"^(\| [\w@-]+ \| )\d+\.\d{3} \| (?:\d+\.\d{3}|n/a) \|$", re.M)
TIMED_KEYS = re.compile(r"seconds|_s$|^time$|duration|saved_at|rescored_at|timestamp")


def unpack(rev: str, into: Path) -> Path:
    """``git archive REV`` of this repository, unpacked into ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


FAMILY_GATES = [
    {"name": "uplift", "candidate": "adapter", "reference": "base",
     "metric": "full_call_exact_match", "ci_lower_above": 0.0},
    {"name": "adapter-solid", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.2},
]  # fmt: skip
FAMILY_STATISTICS = {"familywise": "holm", "cluster": "example"}


def project(folder: Path, **overrides: Any) -> Path:
    """A scratch project: the scripted suite, its fake model and script."""
    suite = write_suite(
        folder / "suite", rows=rows(), model={"base": "fake-org/fake-model"},
        **{"gates": GATES, **overrides},
    )  # fmt: skip
    (suite.parent / "conftest.py").write_text(FAKE_CONFTEST, encoding="utf-8")
    (suite.parent / "script.json").write_text(json.dumps(script(V1)), encoding="utf-8")
    return suite


class _Folder:
    """What ``sweep_helpers.sweep`` reads of a pytester: its ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path


def run_tree(tree: Path, folder: Path) -> dict[str, str]:
    """Run the sessions and commands on ``tree`` in ``folder``; the terminal output of each."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    python = [sys.executable]
    pytest = [*python, "-m", "pytest", "suite", "-p", "no:cacheprovider", "--sommelier-no-cache"]
    cli = [*python, "-c", "import sys; from pytest_sommelier.cli import main; sys.exit(main())"]
    outputs: dict[str, str] = {}

    def step(where: Path, name: str, argv: list[str]) -> None:
        summary = where / "ci-summary" / f"{name}.md"
        summary.parent.mkdir(parents=True, exist_ok=True)
        summary.write_text("", encoding="utf-8")
        done = subprocess.run(argv, cwd=where, env={**env, "GITHUB_STEP_SUMMARY": str(summary)},
                              capture_output=True, text=True)  # fmt: skip
        outputs[f"{where.name}/{name}"] = f"exit {done.returncode}\n{done.stdout}{done.stderr}"

    where = subprocess.run(
        [*python, "-c", "import pytest_sommelier; print(pytest_sommelier.__file__)"],
        cwd=folder, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"PYTHONPATH={tree} imports pytest_sommelier from {where}")

    history = folder / "history"
    project(history)
    step(history, "1-session-one", [*pytest, "--sommelier-out", "one", "--sommelier-autosave",
                                    "--junitxml", "one.xml"])  # fmt: skip
    (history / "suite" / "script.json").write_text(json.dumps(script(REGRESSED)), "utf-8")
    step(history, "2-session-two", [*pytest, "--sommelier-out", "two", "--sommelier-compare",
                                    "last", "--sommelier-compare-fail=full_call_exact_match:0.02",
                                    "--junitxml", "two.xml"])  # fmt: skip
    step(history, "3-rescore", [*cli, "rescore", "two", "--out", "three"])
    step(history, "4-report", [*cli, "report", "two", "--out", "page.html"])
    step(history, "5-history", [*cli, "history", ".sommelier", "--out", "history.html"])
    step(history, "6-compare", [*cli, "compare", "1", "two"])

    family = folder / "family"
    suite = project(family, gates=FAMILY_GATES, statistics=FAMILY_STATISTICS)
    fails = ["--sommelier-compare-fail=full_call_exact_match:0.02",
             "--sommelier-compare-fail=full_call_exact_match:0.9"]  # fmt: skip
    step(family, "1-session-one", [*pytest, "--sommelier-out", "one", "--sommelier-autosave"])
    step(family, "2-session-two", [*pytest, "--sommelier-out", "two",
                                   "--sommelier-compare=last-any", *fails,
                                   "--junitxml", "two.xml"])  # fmt: skip
    step(family, "3-rescore", [*cli, "rescore", "two", "--out", "three", "--suite",
                               str(suite.relative_to(family)), "--compare", "last-any",
                               "--compare-fail", "full_call_exact_match:0.02",
                               "--compare-fail", "full_call_exact_match:0.9"])  # fmt: skip

    checkpoints = folder / "sweep"
    last = {**STORED, "name": "beats-last", "stored": "last-any"}
    sweep(_Folder(checkpoints), (3, 6, 4), [BEATS_BASE, last])  # type: ignore[arg-type]
    step(checkpoints, "1-session-one", [*pytest, "--sommelier-out", "one",
                                        "--sommelier-autosave", "--sommelier-label",
                                        "shipped"])  # fmt: skip
    sweep(_Folder(checkpoints), (10, 12, 24), [BEATS_BASE, STORED, last])  # type: ignore[arg-type]
    step(checkpoints, "2-session-two", [*pytest, "--sommelier-out", "two",
                                        "--junitxml", "two.xml"])  # fmt: skip
    step(checkpoints, "3-rescore", [*cli, "rescore", "two", "--out", "three"])
    step(checkpoints, "4-report", [*cli, "report", "two", "--out", "page.html"])
    return outputs


def normalise_json(value: Any) -> Any:
    """Timing and date fields of a JSON artifact as placeholders."""
    if isinstance(value, dict):
        return {
            key: "<timed>" if TIMED_KEYS.search(key) and not isinstance(item, dict | list)
            else normalise_json(item)
            for key, item in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [normalise_json(item) for item in value]
    return value


def normalise(text: str, folder: Path) -> str:
    """Run ids, dates, durations and the scratch folder as placeholders."""
    text = text.replace(str(folder.resolve()), "<DIR>").replace(str(folder), "<DIR>")
    text = RUN_ID.sub("<RUN_ID>", text)
    text = STAMP.sub("<TIME>", text)
    text = COMPACT.sub("<STAMP>", text)
    text = SUMMARY_LINE.sub(r"== \1 in <T>s ==", text)
    text = DURATION.sub(r"\1<T>\2", text)
    text = PAGE_DATE.sub("<DATE>", text)
    text = STAGING.sub("<STAGING>", text)
    text = PAGE_TIMING.sub(r'<td class="num"><timing></td>', text)
    text = TELEMETRY_ROW.sub(
        lambda m: m[1] + re.sub(r"\d+\.\d+(?:e-?\d+)?", "<timing>", m[2]) + m[3], text
    )
    text = MD_EFFICIENCY.sub(r"\1<timing> | <timing> |", text)
    return re.sub(r'hostname="[^"]*"', 'hostname="<HOST>"', text)


def snapshot(folder: Path, outputs: dict[str, str]) -> dict[str, str]:
    """Every file the tree wrote (and each step's terminal output), normalised, by path."""
    files: dict[str, str] = {f"terminal/{name}": normalise(text, folder)
                             for name, text in outputs.items()}  # fmt: skip
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name in {"calls.jsonl"} or "__pycache__" in path.parts:
            continue
        rel = normalise(path.relative_to(folder).as_posix(), folder)
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            files[rel] = f"<binary {len(data)} bytes>"
            continue
        if path.suffix == ".json":
            text = json.dumps(normalise_json(json.loads(text)), indent=1, sort_keys=False)
        elif path.suffix == ".jsonl":
            text = "\n".join(json.dumps(normalise_json(json.loads(line)))
                             for line in text.splitlines() if line.strip())  # fmt: skip
        files[rel] = normalise(text, folder)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--before", default="main", help="git revision (default main; a branch's base: "
        "`git merge-base main HEAD`)"
    )
    parser.add_argument("--after", default=str(REPO), help="source tree (default this one)")
    parser.add_argument("--keep", default=None, help="keep the scratch folders here")
    args = parser.parse_args(argv)
    scratch = Path(args.keep or tempfile.mkdtemp(prefix="sommelier-equivalence-"))
    try:
        before_tree = unpack(args.before, scratch / "tree-before")
        snaps = {}
        for side, tree in (("before", before_tree), ("after", Path(args.after))):
            folder = scratch / "project"  # the same path on both sides
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir()
            snaps[side] = snapshot(folder, run_tree(tree, folder))
        differing = 0
        for rel in sorted(set(snaps["before"]) | set(snaps["after"])):
            old, new = snaps["before"].get(rel), snaps["after"].get(rel)
            if old == new:
                print(f"same         {rel}")
                continue
            differing += 1
            if old is None or new is None:
                print(f"only {'after ' if old is None else 'before'}  {rel}")
                continue
            print(f"differs      {rel}")
            for line in difflib.unified_diff(
                old.splitlines(), new.splitlines(), "before", "after", lineterm="", n=1
            ):
                print(f"    {line[:300]}")
        print(f"{differing} of {len(set(snaps['before']) | set(snaps['after']))} differ")
        return 1 if differing else 0
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
