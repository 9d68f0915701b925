"""Runs over time for the run store's tests: real pytest sessions over the scripted suite of
``plugin_helpers``, with the adapter's outputs changed between runs.

Hand-derived hits (7 examples: en-0 en-1 en-2 en-3 he-0 he-1 he-3; base = reference):

    base       en-0 en-2                          2 of 7 in every run
    V1         en-0 en-1 en-3 he-0                4 of 7
    REGRESSED  en-0 he-0                          2 of 7: broken en-1, en-3 (he unchanged)
    HE_DROP    en-0 en-1 en-3                     3 of 7: broken he-0 (he -1/3)
    IMPROVED   en-0 en-1 en-3 he-0 he-1           5 of 7: fixed he-1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import GOLD, call_text, write_scripted_suite

BASE = {k: call_text(GOLD[k]) for k in ("en-0", "en-2")} | {"en-1": "no idea"}


def adapter(hits: tuple[str, ...]) -> dict[str, str]:
    """Adapter outputs hitting exactly ``hits`` (every other example answers a wrong name)."""
    return {
        k: call_text(GOLD[k]) if k in hits else call_text({"name": "nope", "arguments": {}})
        for k in GOLD
    }


V1 = adapter(("en-0", "en-1", "en-3", "he-0"))
REGRESSED = adapter(("en-0", "he-0"))
HE_DROP = adapter(("en-0", "en-1", "en-3"))
IMPROVED = adapter(("en-0", "en-1", "en-3", "he-0", "he-1"))


def script(adapter_outputs: dict[str, str]) -> dict[str, Any]:
    return {"base": BASE, "adapter": adapter_outputs}


def session(
    pytester: pytest.Pytester,
    out: str,
    adapter_outputs: dict[str, str] = V1,
    *args: str,
    **suite_overrides: Any,
) -> Path:
    """Write the suite with ``adapter_outputs`` and run one real session into ``out``
    (generation cache off, so a changed script always changes the outputs)."""
    write_scripted_suite(pytester, script(adapter_outputs), **suite_overrides)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-no-cache", "--sommelier-out", out, *args
    )
    run_dir = pytester.path / out
    assert (run_dir / "suite.resolved.json").is_file(), str(result.stdout)
    return run_dir


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def with_run_id(run_dir: Path, target: Path, run_id: str) -> Path:
    """A copy of a run folder under another run id (``suite.resolved.json`` only), for tests
    that need many distinct runs quickly."""
    import shutil

    shutil.copytree(run_dir, target)
    path = target / "suite.resolved.json"
    resolved = json.loads(path.read_text(encoding="utf-8"))
    resolved["run_id"] = run_id
    path.write_text(json.dumps(resolved), encoding="utf-8")
    return target


def subprocess_session(
    folder: Path,
    out: str,
    adapter_outputs: dict[str, str] = V1,
    *args: str,
    **suite_overrides: Any,
) -> Path:
    """:func:`session` in a subprocess (for module-scoped fixtures): the suite in
    ``folder/suite``, the run in ``folder/out``."""
    import subprocess
    import sys
    from types import SimpleNamespace

    write_scripted_suite(
        SimpleNamespace(path=folder),  # type: ignore[arg-type]  # only .path is used
        script(adapter_outputs),
        **suite_overrides,
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    command += ["--sommelier-no-cache", str(folder / "suite"), "--sommelier-out", out, *args]
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    run_dir = folder / out
    assert (run_dir / "suite.resolved.json").is_file(), result.stdout + result.stderr
    return run_dir


def value_intervals(run_dir: Path) -> dict[str, Any]:
    """The value intervals of a run folder's own records, as a session computes them for the
    store's record (``core.stored_comparison.value_intervals_of``), read back through the
    store's readers."""
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.core.pipeline import rescored
    from pytest_sommelier.core.stored_comparison import value_intervals_of
    from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm

    _, suite, split = load_run_inputs(run_dir)
    scoring = {}
    for name in suite.arms:
        arm_dir = runlayout.arm_dir(run_dir, name)
        if runlayout.arm_report(arm_dir).is_file():
            arm = stored_arm(suite, split, arm_dir)
            scoring[name] = {
                lang: rescored(rows, split, suite.arguments_key)[1]
                for lang, rows in arm.records.items()
            }
    return value_intervals_of(scoring, suite.statistics)


def save_run(run_dir: Path, store: Path, **kwargs: Any) -> Any:
    """``data.store.history.save_run`` of a run folder with its value intervals (what the
    session's finish hands the store; the store computes none)."""
    from pytest_sommelier.data.store import history
    from pytest_sommelier.errors import SommelierError

    if "intervals" not in kwargs:
        try:
            kwargs["intervals"] = value_intervals(Path(run_dir))
        except SommelierError:  # not a run: the store's own refusal is what the test meets
            pass
    return history.save_run(run_dir, store, **kwargs)


def compare_stored(candidate: Any, reference: Any, **kwargs: Any) -> dict[str, Any]:
    """``core.stored_comparison.compare_runs`` of two runs as ``sommelier compare`` makes it:
    the run checks first, then each side read by the store and re-derived by the pipeline."""
    from pytest_sommelier.core.pipeline import derive_side
    from pytest_sommelier.core.stored_comparison import compare_runs, refuse_runs
    from pytest_sommelier.data.store.history_verdict import read_inputs

    refuse_runs(candidate, reference)
    return compare_runs(
        candidate, reference, scored=derive_side(candidate, read_inputs(candidate)),
        reference_scored=derive_side(reference, read_inputs(reference)), **kwargs,
    )  # fmt: skip
