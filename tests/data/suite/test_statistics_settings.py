"""``[statistics] power`` and ``effect`` (and ``sommelier plan --effect/--power``) are checked at
load: a finite number in range, or one line naming the key, before anything is generated."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, write_scripted_suite
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier import cli
from pytest_sommelier.core.power import minimum_detectable_effect, power_at, required_pairs
from pytest_sommelier.data.suite import load_suite
from pytest_sommelier.data.suite.statistics_bounds import (
    MAX_EFFECT,
    MAX_POWER,
    MIN_EFFECT,
    MIN_POWER,
    effect_problem,
    power_problem,
    statistics_problem,
)
from pytest_sommelier.errors import InputError

HOSTILE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.text(max_size=5),
    st.none(),
)


@settings(max_examples=examples(300), deadline=None)
@given(HOSTILE)
def test_power_is_a_finite_number_in_its_range_or_refused(value: object) -> None:
    ok = (
        isinstance(value, int | float) and not isinstance(value, bool)
        and math.isfinite(value) and MIN_POWER <= value <= MAX_POWER
    )  # fmt: skip
    assert (power_problem(value) is None) is ok
    found = statistics_problem({"power": value})
    if value is None:
        return  # an absent key is not checked (the default is used)
    assert (found is None) is ok
    if not ok:
        assert found is not None and found[0] == "power" and "\n" not in found[1]


@settings(max_examples=examples(300), deadline=None)
@given(HOSTILE)
def test_effect_is_a_finite_difference_in_its_range_or_refused(value: object) -> None:
    ok = (
        isinstance(value, int | float) and not isinstance(value, bool)
        and math.isfinite(value) and MIN_EFFECT <= abs(value) <= MAX_EFFECT
    )  # fmt: skip
    assert (effect_problem(value) is None) is ok
    found = statistics_problem({"effect": value})
    if value is None:
        assert found is None  # null: no effect declared (what a resolved suite records)
        return
    assert (found is None) is ok
    if not ok:
        assert found is not None and found[0] == "effect" and "\n" not in found[1]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.floats(MIN_EFFECT, MAX_EFFECT), st.floats(MIN_POWER, MAX_POWER), st.floats(1e-4, 1.0),
)
def test_every_accepted_setting_gives_numbers_not_a_traceback(
    effect: float, power: float, psi: float
) -> None:
    needed = required_pairs(effect, psi, power=power)
    assert needed is None or needed >= 1
    mde = minimum_detectable_effect(1000, psi, power=power)
    assert mde is None or mde > 0
    at = power_at(effect, 1000, psi)
    assert at is None or 0.0 <= at <= 1.0


@settings(max_examples=examples(60), deadline=None)
@given(st.floats(MIN_POWER, MAX_POWER - 0.01), st.floats(0.001, 0.01))
def test_pairs_needed_grow_with_the_power_asked_for(power: float, step: float) -> None:
    lower = required_pairs(0.05, 0.3, power=power)
    higher = required_pairs(0.05, 0.3, power=min(MAX_POWER, power + step))
    assert lower is not None and higher is not None and lower <= higher


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("power", math.nan, "key 'power' = nan is not a finite number"),
        ("power", 0.001, "key 'power' = 0.001 is outside [0.5, 0.999]"),
        ("power", 0.9999, "key 'power' = 0.9999 is outside [0.5, 0.999]"),
        ("power", math.inf, "key 'power' = inf is not a finite number"),
        ("effect", 0.0, "key 'effect' = 0.0 is outside [0.0001, 1]"),
        ("effect", 1e-300, "key 'effect' = 1e-300 is outside [0.0001, 1]"),
        ("effect", 1.5, "key 'effect' = 1.5 is outside [0.0001, 1]"),
        ("effect", math.nan, "key 'effect' = nan is not a finite number"),
        ("effect", "big", "key 'effect' must be a number"),
    ],
)
def test_a_bad_power_or_effect_is_one_line_naming_the_key(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        load_suite(write_suite(tmp_path, statistics={key: value}))
    text = str(caught.value)
    assert "[statistics]" in text and message in text and "\n" not in text


def test_an_effect_is_loaded_as_a_size(tmp_path: Path) -> None:
    assert load_suite(write_suite(tmp_path / "a")).statistics.effect is None
    chosen = load_suite(write_suite(tmp_path / "b", statistics={"effect": -0.03})).statistics
    assert chosen.effect == 0.03


SCRIPT = {"adapter": {key: call_text(GOLD[key]) for key in GOLD}, "base": {}}


@pytest.mark.parametrize("value", [math.nan, 0.001])
def test_a_session_with_a_bad_power_stops_before_generating(
    pytester: pytest.Pytester, value: float
) -> None:
    write_scripted_suite(pytester, SCRIPT, statistics={"power": value})
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*key 'power' = {value!r} is *"])
    assert not (pytester.path / "out" / "eval").exists()  # nothing was generated


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--effect", "1e-300", "effect = 1e-300 is outside [0.0001, 1]"),
        ("--effect", "nan", "effect = nan is not a finite number"),
        ("--effect", "0", "effect = 0.0 is outside"),
        ("--power", "0.02", "power = 0.02 is outside [0.5, 0.999]"),
        ("--power", "nan", "power = nan is not a finite number"),
        ("--power", "x", "'x' is not a number"),
    ],
)
def test_plan_refuses_a_bad_effect_or_power_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, value: str, message: str
) -> None:
    assert cli.main(["plan", str(tmp_path), option, value]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
