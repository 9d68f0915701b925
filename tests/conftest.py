"""Fixtures shared by the project's test modules."""

from __future__ import annotations

import importlib
from pathlib import Path

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
):
    importlib.import_module(_module)


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
