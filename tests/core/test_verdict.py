"""``core.verdict.stored_gate_arm``: which arm of a stored run a ``stored`` gate reads, for a
plain arm, a sweep's checkpoint (``adapter@30``) and the training callback's glob arm
(``adapter``), against a baseline run, a stored sweep with and without a recorded selection."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.verdict import Recorded, stored_gate_arm


@dataclass(frozen=True)
class Run:
    def describe(self) -> str:
        return "stored run 0001 (no commit recorded)"


BASELINE = frozenset({"base", "adapter"})
SWEEP = frozenset({"base", "adapter@10", "adapter@20"})


@pytest.mark.parametrize(
    ("arm", "stored", "selected", "expected"),
    [
        ("adapter", BASELINE, None, "adapter"),  # the shipped baseline
        ("base", BASELINE, None, "base"),
        ("adapter@30", BASELINE, None, "adapter"),  # a checkpoint against the shipped adapter
        ("adapter@20", SWEEP, "adapter@10", "adapter@10"),  # a stored sweep's choice
        ("adapter", SWEEP, "adapter@10", "adapter@10"),  # the callback against it
        ("adapter@20", SWEEP, None, "adapter@20"),  # a stored sweep without [selection]
        ("base", SWEEP, "adapter@10", "base"),  # another family: its own arm
        ("adapter@30", SWEEP, None, None),
        ("adapter", SWEEP, None, None),
        ("lora@10", SWEEP, "adapter@10", None),
    ],
)  # fmt: skip
def test_the_stored_arm_of_a_stored_gate(
    arm: str, stored: frozenset[str], selected: str | None, expected: str | None
) -> None:
    found, how = stored_gate_arm(Run(), Recorded(selected, None, stored), stored, arm)  # type: ignore[arg-type]
    assert found == expected, how
    if expected is None:
        assert f"has no arm {arm!r}" in how and "\n" not in how


def test_an_unreadable_selection_fails_only_where_it_could_decide() -> None:
    broken = Recorded(None, "SOM-STORED-FIELD: selection.json: edited", frozenset())
    assert stored_gate_arm(Run(), broken, BASELINE, "base")[0] == "base"  # type: ignore[arg-type]
    assert stored_gate_arm(Run(), broken, SWEEP, "adapter@20") == (  # type: ignore[arg-type]
        None, "SOM-STORED-FIELD: selection.json: edited")  # fmt: skip


@settings(max_examples=examples(100))
@given(arm=st.from_regex(r"[a-z]{1,3}(@[0-9]{1,3})?", fullmatch=True),
       stored=st.frozensets(st.from_regex(r"[a-z]{1,3}(@[0-9]{1,3})?", fullmatch=True),
                            max_size=5),
       selected=st.none() | st.from_regex(r"[a-z]{1,3}@[0-9]{1,3}", fullmatch=True))  # fmt: skip
def test_the_stored_arm_is_held_by_the_stored_run_and_of_the_arms_family(
    arm: str, stored: frozenset[str], selected: str | None
) -> None:
    held = stored | ({selected} if selected else set())
    found, how = stored_gate_arm(Run(), Recorded(selected, None, held), held, arm)  # type: ignore[arg-type]
    if found is None:
        assert how and "\n" not in how
        return
    assert found in held and found.split("@")[0] == arm.split("@")[0]
