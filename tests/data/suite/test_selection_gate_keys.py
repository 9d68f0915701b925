"""The suite keys of a selection gate (``selected = true``): its kind derived from its keys, a
``[selection]`` table required, a comparison gate's thresholds, ``stored`` parsed by the one
rule of stored gates; every refusal one line naming the gate (hypothesis over hostile key
combinations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.core.types import ArmConfig, ComparisonConfig
from pytest_sommelier.data.suite.gates import gate_configs
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError

ARMS = {
    "base": ArmConfig(name="base", adapter=None, adapter_revision=None),
    "adapter@1": ArmConfig(name="adapter@1", adapter="a1", adapter_revision=None),
    "adapter@2": ArmConfig(name="adapter@2", adapter="a2", adapter_revision=None),
}
COMPARISONS = (ComparisonConfig(candidate="adapter@1", reference="base"),)
SLICES = ("en", "he")
GOOD = {"name": "best", "selected": True, "metric": "full_call_exact_match",
        "ci_lower_above": 0.0}  # fmt: skip
FAMILY = {"SOM-SUITE-GATE-KIND", "SOM-SUITE-GATE-THRESHOLD", "SOM-SUITE-GATE-STORED",
          "SOM-SUITE-UNKNOWN-METRIC", "SOM-SUITE-UNKNOWN-SLICE", "SOM-SUITE-SELECTION",
          "SOM-SUITE-INVALID-VALUE", "SOM-SUITE-UNKNOWN-ARM",
          "SOM-SUITE-GATE-COMPARISON"}  # fmt: skip


def configs(entry: dict[str, Any], *, has_selection: bool = True) -> Any:
    return gate_configs([entry], ARMS, COMPARISONS, SLICES, "s.toml", has_selection=has_selection)


def test_a_selection_gate_is_its_own_kind_with_a_comparison_gates_thresholds() -> None:
    (gate,) = configs({**GOOD, "slice": "he", "stored": "label:shipped", "effect": 0.1})
    assert (gate.kind, gate.selected, gate.stored, gate.slice) == (
        "selection", True, "label:shipped", "he"
    )
    assert gate.candidate is None and gate.reference is None and gate.candidates == 0
    assert gate.ci_lower_above == 0.0 and gate.effect == 0.1
    (number,) = configs({**GOOD, "stored": 3})
    assert number.stored == "3"


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        ({"selected": False}, "SOM-SUITE-GATE-KIND", "gates.selected = False"),
        ({"selected": "true"}, "SOM-SUITE-GATE-KIND", "a TOML boolean"),
        ({"selected": 1}, "SOM-SUITE-GATE-KIND", "gates.selected = 1"),
        ({"arm": "adapter@1"}, "SOM-SUITE-GATE-KIND", "does not name 'arm'"),
        ({"candidate": "adapter@1", "reference": "base"}, "SOM-SUITE-GATE-KIND", "'candidate'"),
        ({"gap": "he"}, "SOM-SUITE-GATE-KIND", "does not name 'gap'"),
        ({"stored": "newest"}, "SOM-SUITE-GATE-STORED", "gates.stored = 'newest'"),
        ({"min": 0.5}, "SOM-SUITE-GATE-THRESHOLD", "key 'min' does not apply to a selection"),
        ({"ci_lower_above": None}, "SOM-SUITE-GATE-THRESHOLD", "a selection gate needs"),
        ({"delta_at_least": 0.1}, "SOM-SUITE-GATE-THRESHOLD", "a selection gate needs"),
        ({"ci_lower_above": 2.0}, "SOM-SUITE-GATE-THRESHOLD", "outside [-1, 1]"),
        ({"metric": "identical_outputs"}, "SOM-SUITE-UNKNOWN-METRIC", "a comparison gate's"),
        ({"metric": "noise_flips"}, "SOM-SUITE-UNKNOWN-METRIC", "a comparison gate's"),
        ({"metric": "accuracy"}, "SOM-SUITE-UNKNOWN-METRIC", "unknown metric 'accuracy'"),
        ({"slice": "fr"}, "SOM-SUITE-UNKNOWN-SLICE", "unknown slice 'fr'"),
        ({"metric": "argument_f1", "effect": 0.1}, "SOM-SUITE-INVALID-VALUE", "gates.effect"),
    ],
)
def test_a_bad_selection_gate_is_one_line_naming_the_gate(
    change: dict[str, Any], code: str, words: str
) -> None:
    entry = {key: value for key, value in {**GOOD, **change}.items() if value is not None}
    with pytest.raises(InputError) as caught:
        configs(entry)
    text = str(caught.value)
    assert caught.value.code == code and words in text, text
    assert "[[gates]] #1 ('best')" in text and "\n" not in text


def test_a_selection_gate_needs_a_selection_table(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite", gates=[GOOD])
    with pytest.raises(InputError) as caught:
        load_suite(suite)
    assert caught.value.code == "SOM-SUITE-SELECTION"
    assert "needs a [selection] table" in str(caught.value) and "\n" not in str(caught.value)
    assert "('best')" in str(caught.value)


def test_a_string_selected_in_a_suite_file_is_the_gate_kind_line(tmp_path: Path) -> None:
    text = write_suite(tmp_path / "suite", gates=[GOOD]).read_text(encoding="utf-8")
    suite = tmp_path / "suite" / "sommelier.toml"
    suite.write_text(text.replace("selected = true", 'selected = "yes"'), encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_suite(suite)
    assert caught.value.code == "SOM-SUITE-GATE-KIND" and "'yes'" in str(caught.value)


HOSTILE_VALUES = st.one_of(
    st.booleans(), st.integers(-3, 3), st.text(max_size=6), st.none(),
    st.floats(allow_nan=False), st.lists(st.integers(), max_size=2),
)  # fmt: skip
KEYS = st.fixed_dictionaries(
    {},
    optional={
        "selected": HOSTILE_VALUES,
        "arm": st.sampled_from(["adapter@1", "base", "nope"]),
        "candidate": st.sampled_from(["adapter@1", "base"]),
        "reference": st.sampled_from(["base", "adapter@2"]),
        "gap": st.sampled_from(["he", "en"]),
        "stored": st.one_of(st.sampled_from(["last", "last-any", "label:v1", "label:", "0003",
                                             "x"]), st.integers(-1, 5)),
        "slice": st.sampled_from(["overall", "en", "he", "fr"]),
        "metric": st.sampled_from(["full_call_exact_match", "argument_f1", "identical_outputs",
                                   "noise_flips", "acceptable_call_match", "nope"]),
        "min": st.floats(-2, 2), "max": st.floats(-2, 2),
        "ci_lower_above": st.floats(-2, 2), "ci_lower_at_least": st.floats(-2, 2),
        "ci_upper_below": st.floats(-2, 2), "ci_upper_at_most": st.floats(-2, 2),
        "delta_at_least": st.floats(-2, 2), "effect": st.floats(-2, 2),
    },
)


@settings(max_examples=examples(300), deadline=None)
@given(keys=KEYS, has_selection=st.booleans())
def test_hostile_key_combinations_give_a_selection_gate_or_one_line(
    keys: dict[str, Any], has_selection: bool
) -> None:
    entry = {"name": "g", "metric": "full_call_exact_match", **keys}
    try:
        gates = configs(entry, has_selection=has_selection)
    except InputError as error:
        assert error.code in FAMILY, str(error)
        assert "\n" not in str(error) and "('g')" in str(error)
        return
    (gate,) = gates
    if "selected" in entry:  # accepted with selected: exactly a TOML true, a selection table
        assert entry["selected"] is True and gate.kind == "selection" and gate.selected
        assert has_selection
        assert not {"arm", "candidate", "reference", "gap"} & set(entry)
        assert gate.metric not in ("identical_outputs", "noise_flips")
    else:
        assert gate.kind != "selection" and not gate.selected
