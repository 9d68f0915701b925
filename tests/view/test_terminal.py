"""``view.terminal``'s bounded console text: a refused stored gate's reason in the training
callback's line per checkpoint is cut, the file holding the whole reason named (issue 41: a
refused stored gate put several hundred characters into each checkpoint's line)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.view.terminal import REASON_LIMIT, bounded_reason

WHERE = "runs/20261201T101500Z-0a1b2c/gate_verdict.json"
LONG = (
    "SOM-COMPARE-IDENTITY: adapter@30 and adapter@0001 differ in config_sha256 "
    "(test_split.sample: null -> {\"of_roots\": 20, \"roots\": 6, \"seed\": 0}); "
    + "the identity gate names every field that differs " * 8
)


def test_a_short_reason_is_kept_whole() -> None:
    assert bounded_reason("stored run 0001 has no arm 'x'", WHERE) == (
        "stored run 0001 has no arm 'x'"
    )


def test_a_long_reason_is_cut_and_names_the_file_with_the_whole_reason() -> None:
    text = bounded_reason(LONG, WHERE)
    assert text.startswith("SOM-COMPARE-IDENTITY: adapter@30")
    assert text.endswith(f"... (whole reason: {WHERE})")
    assert len(text) <= REASON_LIMIT + len(f" (whole reason: {WHERE})")


@settings(max_examples=examples(100))
@given(st.text(max_size=600), st.integers(10, 300))
def test_any_reason_is_one_bounded_line(reason: str, limit: int) -> None:
    text = bounded_reason(reason, WHERE, limit)
    assert "\n" not in text and "\r" not in text
    assert len(text) <= limit + len(f" (whole reason: {WHERE})")
    folded = " ".join(reason.split())
    assert text == folded if len(folded) <= limit else text.startswith(folded[: limit // 2])
