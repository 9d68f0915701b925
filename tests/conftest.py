"""Fixtures shared by the project's test modules."""

from __future__ import annotations

import gc
import importlib
import os
from collections.abc import Iterator
from pathlib import Path

import property_budget
import pytest
from hypothesis import settings

# Speed is measured by benchmarks/, never asserted by tests: on a shared machine hypothesis'
# per-example deadline (200 ms) fails correct code at random, so it is off for this suite.
settings.register_profile("sommelier", deadline=None)
settings.load_profile("sommelier")

# The plugin imports its layers only when a suite is collected (it is free when idle), so the
# first in-process pytester session would import them, numpy included, and pytester drops
# every module first imported inside a session when it ends; numpy cannot be imported twice in
# one process. The test process imports them once, here, before any pytester session.
_COMMANDS = ("check", "compare", "history", "imports", "parity", "plan", "plugins", "report",
             "rescore")  # fmt: skip
for _module in (
    "numpy",
    "jinja2",
    "pytest_sommelier.plugin.collect",
    "pytest_sommelier.plugin.runner",
    "pytest_sommelier.plugin.session",
    "pytest_sommelier.plugin.baseline",
    "pytest_sommelier.plugin.history",
    "pytest_sommelier.view.html",
    "pytest_sommelier.view.ci_summary",
    # imported by every session's collection or run (the split check, the engine choice) or by
    # the CLI's commands: kept here, so that no session pays for importing them again
    "pytest_sommelier.inference.split_check",
    "pytest_sommelier.inference.select_engine",
    "pytest_sommelier.inference.gencache",
    "pytest_sommelier.data.split.sample",
    "pytest_sommelier.data.prepare.formatting",
    "pytest_sommelier.data.prepare.bfcl",
    "pytest_sommelier.data.prepare.importers.xlam",
    "pytest_sommelier.data.prepare.importers.hermes",
    "pytest_sommelier.cli",
    *(f"pytest_sommelier.commands.{name}" for name in _COMMANDS),
):
    importlib.import_module(_module)


def _fsync_skipped(fd: int) -> None:
    """``os.fsync`` in the test process: the file descriptor is checked, nothing is flushed."""
    os.fstat(fd)


@pytest.fixture(autouse=True, scope="session")
def _no_fsync() -> Iterator[None]:
    """The atomic writer's ``os.fsync`` (a disk flush, ~0.5-3 ms each, thousands per tier) is a
    check of the descriptor in this process and its in-process sessions: what a test can see
    (whole files, the rename, the mode) is unchanged. Subprocess sessions flush as the product
    does; tests of the flush itself patch ``os.fsync`` over this (tests/data/test_atomic.py,
    tests/hardening/test_faults.py)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", _fsync_skipped)
        yield


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions under test never append to a CI job's summary (GITHUB_STEP_SUMMARY); tests
    of that file set the variable themselves."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny random Llama (safetensors) and a LoRA adapter for it (built once)."""
    torch = pytest.importorskip("torch")
    from tiny import make_tiny_adapter_dir, make_tiny_model_dir

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("tiny")
    model = make_tiny_model_dir(root / "model")
    return model, make_tiny_adapter_dir(model, root / "adapter")


def marks_whole_module_slow(path: Path) -> bool:
    """True when the test module's top level says ``pytestmark = pytest.mark.slow`` (alone or
    in a list): read with ``ast``, so the module is not imported to find out."""
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return False  # let pytest collect it and report the problem itself
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            values = node.value.elts if isinstance(node.value, ast.List) else [node.value]
            return any(ast.unparse(v) == "pytest.mark.slow" for v in values)
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under the fast tier (``-m "not slow"``), a module whose every test is slow is not even
    imported (its real models, browsers and subprocess helpers cost seconds per worker)."""
    if (config.option.markexpr or "").split() != ["not", "slow"]:
        return None
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        return True if marks_whole_module_slow(collection_path) else None
    return None


GC_THRESHOLDS = (10_000, 10, 10)
"""The cyclic collector's thresholds in the test process (CPython's default is 700, 10, 10)."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """The test process's cyclic garbage collector, set for a long session of short-lived
    objects (the in-process pytester sessions, hypothesis' draws): once collection has imported
    every test module, torch, transformers and the plugin (about half a million objects that
    live until the process ends), they are frozen out of the collector's sight (``gc.freeze``),
    and the young generations are collected less often (``GC_THRESHOLDS``). Measured on the
    fast tier (2 cores): each worker spent ~9 s of CPU in ~30 full collections walking those
    objects; now 1-2.5 s. What is collected is the same: nothing the tests create is frozen,
    and ``gc.collect()`` (pytest's own, the tests') still finds every cycle they leave. Sessions
    the tests start in subprocesses keep CPython's defaults."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def pytest_report_header(config: pytest.Config) -> str:
    """The property tests' budget, on the header, so a run says which counts it drew."""
    if property_budget.fast_tier(config.option.markexpr, os.environ):
        return (f"property examples: the fast tier's share, {property_budget.FAST_SHARE:.2f} of "
                f"each count and at least min(count, {property_budget.FLOOR}) "
                f"({property_budget.ENV}=full: the full counts)")  # fmt: skip
    return "property examples: the full counts"


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """No log capture for this suite's own tests (no test reads ``caplog``): pytest's logging
    plugin attaches its handlers to every non-propagating logger at every test phase, and with
    torch imported (the fast tier's real tokenizers import it) that is ~45 loggers, 6 times a
    test, ~5% of the fast tier's CPU time. A library's warning still reaches stderr (logging's
    last-resort handler), which pytest captures and shows for a failing test. Sessions the
    tests start (pytester, subprocesses) keep their own logging plugin.

    The tier's property budget (tests/property_budget.py) is chosen here too: before any test
    module, and so any count, is read."""
    property_budget.choose(property_budget.fast_tier(config.option.markexpr, os.environ))
    if config.pluginmanager.has_plugin("logging-plugin"):
        config.pluginmanager.unregister(name="logging-plugin")
