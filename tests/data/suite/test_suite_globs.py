"""Checkpoint sweeps: ``adapter = "out/checkpoint-*"`` expands at load into arms
``<arm>@<step>`` ordered by step, each compared with the base (``data.suite.globs``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError


def checkpoints(folder: Path, names: list[str]) -> None:
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
        (folder / name / "adapter_model.safetensors").write_bytes(b"")


def sweep_suite(tmp_path: Path, names: list[str], **overrides: object) -> Path:
    checkpoints(tmp_path / "suite" / "out", names)
    overrides.setdefault("arms", {"base": {}, "adapter": {"adapter": "out/checkpoint-*"}})
    return write_suite(tmp_path / "suite", **overrides)  # type: ignore[arg-type]


def test_a_glob_arm_becomes_one_arm_per_checkpoint_ordered_by_step(tmp_path: Path) -> None:
    gates = [{"name": "up", "candidate": "adapter", "reference": "base",
              "metric": "full_call_exact_match", "ci_lower_at_least": -1.0}]
    suite = load_suite(sweep_suite(tmp_path, ["checkpoint-10", "checkpoint-2", "checkpoint-4"],
                                   gates=gates))
    assert list(suite.arms) == ["base", "adapter@2", "adapter@4", "adapter@10"]
    assert [Path(str(suite.arms[f"adapter@{s}"].adapter)).name for s in (2, 4, 10)] == [
        "checkpoint-2", "checkpoint-4", "checkpoint-10"
    ]
    assert [c.name for c in suite.comparisons] == [
        "adapter@2-vs-base", "adapter@4-vs-base", "adapter@10-vs-base"
    ]
    assert [g.name for g in suite.gates] == ["up@2", "up@4", "up@10"]
    assert [g.candidate for g in suite.gates] == ["adapter@2", "adapter@4", "adapter@10"]


def test_without_a_comparison_each_checkpoint_is_compared_with_the_base(tmp_path: Path) -> None:
    suite = load_suite(sweep_suite(tmp_path, ["checkpoint-1", "checkpoint-3"], comparisons=None))
    assert [c.name for c in suite.comparisons] == ["adapter@1-vs-base", "adapter@3-vs-base"]


def test_a_glob_matching_nothing_is_an_error_naming_the_glob(tmp_path: Path) -> None:
    path = write_suite(tmp_path / "suite",
                       arms={"base": {}, "adapter": {"adapter": "nowhere/checkpoint-*"}})
    with pytest.raises(InputError) as caught:
        load_suite(path)
    assert caught.value.code == "SOM-SUITE-GLOB-EMPTY"
    assert "'nowhere/checkpoint-*'" in str(caught.value) and "\n" not in str(caught.value)


def test_a_sweep_as_a_reference_is_refused(tmp_path: Path) -> None:
    path = sweep_suite(tmp_path, ["checkpoint-1"],
                       comparisons=[{"candidate": "base", "reference": "adapter"}])
    with pytest.raises(InputError, match="as its reference"):
        load_suite(path)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.from_regex(r"checkpoint-[0-9a-z]{0,3}", fullmatch=True), min_size=1,
                      max_size=5, unique=True))
def test_any_folder_names_expand_in_step_order_or_fail_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    root = tmp_path_factory.mktemp("g")
    try:
        suite = load_suite(sweep_suite(root, names))
    except InputError as error:
        assert "\n" not in str(error) and error.code in ("SOM-SUITE-GLOB-STEP",)
        return
    steps = [int(name.rpartition("@")[2]) for name in suite.arms if "@" in name]
    assert steps == sorted(steps) and len(steps) == len(names)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    names=st.lists(st.from_regex(r"checkpoint-[0-9a-z]{0,3}", fullmatch=True), max_size=4,
                   unique=True),
    pattern=st.sampled_from(["out/checkpoint-*", "out/ckpt-[0-9]*", "../x/*", "out/?"]),
    revision=st.sampled_from([None, "main", ""]),
    gate_arm=st.sampled_from(["adapter", "base"]),
)
def test_the_live_reading_keeps_a_glob_arm_whole_whatever_the_folders(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], pattern: str,
    revision: str | None, gate_arm: str,
) -> None:
    """``load_suite(live=True)`` (the training callback's reading) never expands a glob: one
    arm holding the pattern as written, its gates as written, no ``[selection]``, whatever
    folders exist (none included); a revision beside the glob is one line."""
    root = tmp_path_factory.mktemp("live")
    for name in names:
        (root / "suite" / "out" / name).mkdir(parents=True)
    arm: dict[str, object] = {"adapter": pattern}
    if revision is not None:
        arm["adapter_revision"] = revision
    gates = [{"name": "parses", "arm": gate_arm, "metric": "valid_json_rate", "min": 0.1},
             {"name": "best", "selected": True, "metric": "full_call_exact_match",
              "ci_lower_above": 0.0}]  # fmt: skip
    path = write_suite(root / "suite", arms={"base": {}, "adapter": arm}, gates=gates,
                       selection={"metric": "full_call_exact_match", "among": "adapter@*"})
    try:
        suite = load_suite(path, live=True)
    except InputError as error:
        assert "\n" not in str(error) and "adapter_revision" in str(error), error
        expected = "SOM-SUITE-INVALID-VALUE" if revision == "" else "SOM-SUITE-GLOB-STEP"
        assert revision is not None and error.code == expected
        return
    assert revision is None
    assert list(suite.arms) == ["base", "adapter"] and suite.arms["adapter"].adapter == pattern
    assert [(g.name, g.arm) for g in suite.gates] == [("parses", gate_arm)]
    assert suite.selection is None


# --- the glob suite with its arm given a folder (--sommelier-arms ARM=DIR) --------------------

SELECTED = {"name": "best", "selected": True, "metric": "full_call_exact_match",
            "ci_lower_above": 0.0}  # fmt: skip
UP = {"name": "up", "candidate": "adapter", "reference": "base",
      "metric": "full_call_exact_match", "ci_lower_at_least": -1.0}  # fmt: skip


def test_a_glob_arm_given_a_folder_is_one_arm_and_the_selection_is_left_out(
    tmp_path: Path,
) -> None:
    path = sweep_suite(tmp_path, ["checkpoint-1", "checkpoint-2"], gates=[UP, SELECTED],
                       comparisons=[{"candidate": "adapter", "reference": "base"}],
                       selection={"metric": "full_call_exact_match", "among": "adapter@*"},
                       arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}})  # fmt: skip
    shipped = tmp_path / "shipped[1]"  # a folder whose name reads as a glob is taken as written
    checkpoints(tmp_path, [shipped.name])
    suite = load_suite(path, given={"adapter": str(shipped)})
    assert list(suite.arms) == ["base", "adapter"] and suite.selection is None
    assert suite.arms["adapter"].adapter == str(shipped)
    assert [g.name for g in suite.gates] == ["up"] and suite.gates[0].candidate == "adapter"
    assert [c.name for c in suite.comparisons] == ["adapter-vs-base"]
    swept = load_suite(path)  # the same file, swept
    assert swept.selection is not None and [g.name for g in swept.gates] == ["up@1", "up@2",
                                                                             "best"]  # fmt: skip


def test_a_selection_among_other_arms_is_kept(tmp_path: Path) -> None:
    path = sweep_suite(tmp_path, ["checkpoint-1"], gates=[SELECTED],
                       arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"},
                             "v2": {"adapter": "adapter"}},
                       selection={"metric": "full_call_exact_match", "among": "v*"})  # fmt: skip
    suite = load_suite(path, given={"adapter": str(tmp_path / "suite" / "out" / "checkpoint-1")})
    assert suite.selection is not None and suite.selection.candidates == ("v2",)


@settings(max_examples=examples(40), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(min_size=1, max_size=20))
def test_an_arm_the_suite_lacks_or_its_base_is_one_line_naming_the_option(
    tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    root = tmp_path_factory.mktemp("a")
    path = sweep_suite(root, ["checkpoint-1"])
    folder = str(root / "suite" / "out" / "checkpoint-1")
    if name == "adapter":
        assert "adapter" in load_suite(path, given={name: folder}).arms
        return
    with pytest.raises(InputError) as caught:
        load_suite(path, given={name: folder})
    text = str(caught.value)
    assert caught.value.code == "SOM-OPTION-VALUE" and "\n" not in text.replace(repr(name), "")
    assert "--sommelier-arms / ini sommelier_arms" in text and "adapter" in caught.value.hint
