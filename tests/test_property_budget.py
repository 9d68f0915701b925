"""The property tests' budget (tests/property_budget.py): the full counts outside the fast tier,
a share of each in it, and every property's count through the budget."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

import property_budget
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from source_trees import parsed

TESTS = Path(__file__).resolve().parent


@contextlib.contextmanager
def restored() -> Iterator[None]:
    """The tier this run chose, put back after a test or a property's example sets another
    (hypothesis runs a property's body many times inside one test)."""
    before = property_budget.examples(300) < 300
    try:
        yield
    finally:
        property_budget.choose(before)


@pytest.fixture
def tier() -> Iterator[None]:
    """A test that sets the tier puts back the one this run chose."""
    with restored():
        yield


@settings(max_examples=examples(100))
@given(st.integers(1, 10**6))
def test_outside_the_fast_tier_every_count_is_drawn_whole(count: int) -> None:
    with restored():
        property_budget.choose(False)
        assert property_budget.examples(count) == count


def test_the_fast_tier_draws_a_third_and_never_fewer_than_the_floor(tier: None) -> None:
    property_budget.choose(True)
    assert [property_budget.examples(n) for n in (1, 15, 20, 40, 60, 100, 150, 300, 500)] == [
        1, 15, 20, 20, 20, 34, 50, 100, 167
    ]  # fmt: skip


@settings(max_examples=examples(100))
@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_a_fast_count_is_at_most_the_full_one_and_keeps_their_order(a: int, b: int) -> None:
    with restored():
        property_budget.choose(True)
        fa, fb = property_budget.examples(a), property_budget.examples(b)
        assert min(a, property_budget.FLOOR) <= fa <= a
        assert (fa <= fb) if a <= b else (fa >= fb)


@pytest.mark.parametrize("count", [0, -3])
def test_a_count_below_one_is_refused(count: int) -> None:
    with pytest.raises(ValueError, match="at least one example"):
        property_budget.examples(count)


@pytest.mark.parametrize(
    ("markexpr", "environ", "fast"),
    [
        ("not slow", {}, True),
        ("not   slow", {}, True),
        ("slow", {}, False),
        ("not slow and not eval", {}, False),
        (None, {}, False),
        ("", {}, False),
        ("not slow", {"SOMMELIER_TEST_EXAMPLES": "full"}, False),
        (None, {"SOMMELIER_TEST_EXAMPLES": "fast"}, True),
        ("not slow", {"SOMMELIER_TEST_EXAMPLES": ""}, True),
    ],
)
def test_the_tier_is_the_fast_tiers_marker_unless_the_variable_says(
    markexpr: str | None, environ: dict[str, str], fast: bool
) -> None:
    assert property_budget.fast_tier(markexpr, environ) is fast


@pytest.mark.parametrize("value", ["FULL", "1", "half", " full"])
def test_a_bad_value_of_the_variable_is_refused_not_guessed(value: str) -> None:
    with pytest.raises(ValueError, match="SOMMELIER_TEST_EXAMPLES"):
        property_budget.fast_tier("not slow", {"SOMMELIER_TEST_EXAMPLES": value})


def _settings_names(tree: ast.Module) -> set[str]:
    """How a module spells hypothesis' ``settings``: ``hypothesis.settings``, and the name it
    imports it under (``settings``, or an alias beside a helper called ``settings``)."""
    return {"hypothesis.settings"} | {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == "hypothesis"
        for alias in node.names
        if alias.name == "settings"
    }


def _is_settings(node: ast.expr, names: set[str]) -> TypeGuard[ast.Call]:
    """``node`` is a call of hypothesis' ``settings`` under one of the module's ``names``."""
    return isinstance(node, ast.Call) and ast.unparse(node.func) in names


def _settings_objects(tree: ast.Module, names: set[str]) -> dict[str, ast.Call]:
    """A module's top-level ``NAME = settings(...)`` objects, which a property may be
    decorated with (``@FUZZ``)."""
    return {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and _is_settings(node.value, names)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def _properties() -> Iterator[tuple[Path, ast.FunctionDef, ast.expr | None]]:
    """Every hypothesis property of the suite, with its ``max_examples`` (None: not given),
    whether its ``@settings(...)`` says it or a module-level settings object it is decorated
    with does."""
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = parsed(path)
        names = _settings_names(tree)
        objects = _settings_objects(tree, names)
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            calls = [d for d in node.decorator_list if isinstance(d, ast.Call)]
            if "given" not in [getattr(d.func, "id", getattr(d.func, "attr", "")) for d in calls]:
                continue
            settings_calls = [d for d in calls if _is_settings(d, names)]
            settings_calls += [
                objects[d.id]
                for d in node.decorator_list
                if isinstance(d, ast.Name) and d.id in objects
            ]
            counts = [
                k.value for d in settings_calls for k in d.keywords if k.arg == "max_examples"
            ]
            yield path, node, counts[0] if counts else None


def _budgeted(count: ast.expr | None) -> bool:
    return (
        isinstance(count, ast.Call)
        and isinstance(count.func, ast.Name)
        and count.func.id == "examples"
    )


def test_every_count_goes_through_the_budget() -> None:
    """Each property names its full count as ``max_examples=examples(N)``, so the fast tier
    draws its share and every full run draws N (docs/hardening.md states N for the hostile
    and fuzzing ones); a count left out would be hypothesis' 100 in every tier."""
    fixed = []
    seen = 0
    for path, node, count in _properties():
        seen += 1
        if not _budgeted(count):
            fixed.append(f"{path.relative_to(TESTS).as_posix()}::{node.name}")
    assert seen > 150  # the walk found the suite's properties
    assert fixed == [], "max_examples=examples(N): the fast tier draws a share"


def test_the_rule_sees_a_fixed_count_a_missing_one_and_a_settings_object() -> None:
    """The check above can fail: a plain number and a missing count are told apart from a
    budgeted one, and a module-level settings object is read for its count."""
    fixed = ast.parse("f(max_examples=300)").body[0].value.keywords[0].value  # type: ignore[attr-defined]
    budgeted = ast.parse("f(max_examples=examples(300))").body[0].value.keywords[0].value  # type: ignore[attr-defined]
    assert _budgeted(budgeted) and not _budgeted(fixed) and not _budgeted(None)
    tree = ast.parse("FUZZ = settings(max_examples=examples(150))\nOTHER = 3\n"
                     "from hypothesis import settings")  # fmt: skip
    assert list(_settings_objects(tree, _settings_names(tree))) == ["FUZZ"]
    helper = ast.parse("from hypothesis import settings as hs\nfrom helpers import settings")
    # the helper called settings is not hypothesis'
    assert _settings_names(helper) == {"hs", "hypothesis.settings"}
    found = list(_properties())
    aliased = [(n.name, c) for p, n, c in found if p.name == "test_settings.py"]
    assert aliased and all(_budgeted(c) for _, c in aliased)
    fuzz = [(p, n.name, c) for p, n, c in found if p.name == "test_fuzz.py"]
    assert fuzz and all(_budgeted(c) for _, _, c in fuzz)
