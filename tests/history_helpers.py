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


def synthetic_run(
    number: int,
    *,
    values: dict[str, float] | None = None,
    training: dict[str, Any] | None = None,
    training_run: int | None = None,
    label: str | None = None,
    sample: dict[str, Any] | None = None,
    slices: tuple[str, ...] = ("en", "he"),
    suite: str = "factory",
) -> dict[str, Any]:
    """One run as ``data.store.history_runs.history_runs`` gives it to the views, without a
    store: arms ``base`` and ``adapter`` whose i-th metric (``METRIC_NAMES`` order) is
    ``values[arm] - 0.04 i`` (default 0.25 and 0.5; the slice ``he`` 0.1 lower; never under
    0), with an interval of +-0.05."""
    from pytest_sommelier.core.metrics import METRIC_NAMES

    values = values or {"base": 0.25, "adapter": 0.5}

    def block(value: float) -> dict[str, Any]:
        return {"value": value, "lower": max(value - 0.05, 0.0), "upper": min(value + 0.05, 1.0)}

    arms = {
        arm: {
            "model_kind": "base" if arm == "base" else "adapter",
            "values": {
                s: {
                    m: block(max(value - (0.1 if s == "he" else 0.0) - 0.04 * i, 0.0))
                    for i, m in enumerate(METRIC_NAMES)
                }
                for s in (*slices, "overall")
            },
            "mark": None,
            "adapter_changed": False,
        }
        for arm, value in values.items()
    }
    return {
        "number": number,
        "label": f"{number:04d}",
        "folder": f"{number:04d}_unversioned_20261201T101500Z",
        "path": Path(f"/nowhere/{number:04d}"),
        "suite": suite,
        "saved_at": "2026-12-01T10:15:00Z",
        "time": "2026-12-01 10:15Z",
        "commit": None,
        "branch": None,
        "dirty": False,
        "verdict": "pass",
        "comparable": True,
        "run_id": f"run-{number}",
        "run_label": label,
        "adapters": {},
        "page": None,
        "slices": [*slices, "overall"],
        "arms": arms,
        "training": training,
        "training_run": training_run,
        "sample": sample,
    }


SAMPLE = {"roots": 6, "of_roots": 20, "seed": 0}


def training_store_runs() -> list[dict[str, Any]]:
    """The issue's store as the views see it: 0001 the shipped adapter (label ``shipped``),
    then three training runs whose steps would zig-zag if joined: T1 full (steps 10, 20, 30),
    T2 a sample (10, 20, 30), T3 full again (10, 20), with losses; the selected checkpoint of
    T1 its last step (the highest full call), the label of which once was clipped."""
    runs = [synthetic_run(1, label="shipped", values={"base": 0.25, "adapter": 0.6})]
    number = 2
    plan = [
        (1, None, [(10, 0.3, 2.1), (20, 0.5, 1.6), (30, 0.7, 1.2)]),
        (2, SAMPLE, [(10, 0.2, 2.2), (20, 0.4, 1.7), (30, 0.35, 1.3)]),
        (3, None, [(10, 0.45, 1.9), (20, 0.55, 1.4)]),
    ]
    for line, sample, steps in plan:
        for step, value, loss in steps:
            training = {"step": step, "epoch": step / 10, "checkpoint": f"checkpoint-{step}",
                        "arm": "adapter", "run": f"train-{line}", "loss": loss}  # fmt: skip
            runs.append(
                synthetic_run(number, values={"base": 0.25, "adapter": value},
                              training=training, training_run=line, sample=sample)
            )
            number += 1
    return runs
