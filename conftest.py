"""Repo-level pytest setup: the project's own tests run real pytest sessions through pytester.

``pytest`` in this repository runs the project's tests, not the evaluation suites under
``eval_suites/`` (a real model): their items (marked ``eval``) are deselected unless the ``-m``
expression names ``eval`` (``pytest -m eval eval_suites/demo``). This is a hook rather than
``addopts = "-m 'not eval'"`` because a later ``-m`` replaces an earlier one: with that ini
line, ``pytest -m "not slow"`` (the fast tier) would run the demo.
"""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

NAMES_EVAL = re.compile(r"\beval\b")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect every ``eval`` item unless ``-m`` names ``eval`` (then ``-m`` alone decides)."""
    if NAMES_EVAL.search(config.option.markexpr or ""):
        return
    kept = [item for item in items if item.get_closest_marker("eval") is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("eval")])
        items[:] = kept
