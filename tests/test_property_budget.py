"""The property tests' budget (tests/property_budget.py): the full counts outside the fast tier,
a share of each in it, and the documented counts the same in every tier."""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import property_budget
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from source_trees import parsed

TESTS = Path(__file__).resolve().parent
HARDENING = (TESTS.parent / "docs" / "hardening.md").read_text(encoding="utf-8")


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


def _properties() -> Iterator[tuple[Path, ast.FunctionDef, ast.expr | None]]:
    """Every hypothesis property of the suite, with its ``max_examples`` (None: not given)."""
    for path in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.FunctionDef):
                continue
            calls = [d for d in node.decorator_list if isinstance(d, ast.Call)]
            names = [getattr(d.func, "id", getattr(d.func, "attr", "")) for d in calls]
            if "given" not in names:
                continue
            counts = [
                k.value
                for d, name in zip(calls, names, strict=True)
                if name == "settings"
                for k in d.keywords
                if k.arg == "max_examples"
            ]
            yield path, node, counts[0] if counts else None


def documented(path: Path, name: str) -> bool:
    """docs/hardening.md names the property or its file (by path or by name): its count is
    stated there."""
    return path.name in HARDENING or re.search(rf"\b{re.escape(name)}\b", HARDENING) is not None


def _budgeted(count: ast.expr | None) -> bool:
    return (
        isinstance(count, ast.Call)
        and isinstance(count.func, ast.Name)
        and count.func.id == "examples"
    )


def test_documented_counts_are_the_same_in_every_tier_the_others_go_through_the_budget() -> None:
    documented_budgeted = []
    undocumented_fixed = []
    seen = 0
    for path, node, count in _properties():
        seen += 1
        where = f"{path.relative_to(TESTS).as_posix()}::{node.name}"
        if documented(path, node.name):
            if _budgeted(count):
                documented_budgeted.append(where)
        elif not _budgeted(count):
            undocumented_fixed.append(where)
    assert seen > 150  # the walk found the suite's properties
    assert documented_budgeted == [], "docs/hardening.md states these counts: a plain number"
    assert undocumented_fixed == [], "max_examples=examples(N): the fast tier draws a share"


def test_the_rule_sees_a_budgeted_documented_count_and_a_fixed_undocumented_one() -> None:
    """The check above can fail: both kinds of breach are told apart from the good cases."""
    fixed = ast.parse("f(max_examples=300)").body[0].value.keywords[0].value  # type: ignore[attr-defined]
    budgeted = ast.parse("f(max_examples=examples(300))").body[0].value.keywords[0].value  # type: ignore[attr-defined]
    assert _budgeted(budgeted) and not _budgeted(fixed) and not _budgeted(None)
    assert documented(TESTS / "hardening" / "test_fuzz.py", "test_anything")
    misses = TESTS / "core" / "test_misses.py"
    assert documented(misses, "test_a_whole_number_is_ascii_digits_and_nothing_else")
    assert not documented(misses, "test_counts_sum_to_the_misses_exactly")
