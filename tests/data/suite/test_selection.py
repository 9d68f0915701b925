"""``[selection]``: the best candidate of a checkpoint sweep, its comparison with the reference
at the Bonferroni level over all candidates, and the winner's curse stated."""

from __future__ import annotations

import pytest
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite
from test_suite_globs import checkpoints

from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError

pytest_plugins = ["pytester"]
IDS = ("en-0", "en-1", "en-2", "en-3")


def sweep(pytester: pytest.Pytester, selection: dict | None) -> None:
    script = {
        "base": {},
        "adapter@1": {i: call_text(GOLD[i]) for i in IDS[:2]},
        "adapter@2": {i: call_text(GOLD[i]) for i in IDS},
        "adapter@3": {i: call_text(GOLD[i]) for i in IDS[:3]},
    }
    checkpoints(pytester.path / "suite" / "out", ["checkpoint-1", "checkpoint-2", "checkpoint-3"])
    extra = {} if selection is None else {"selection": selection}
    write_scripted_suite(
        pytester, script, ids=IDS, suite={"slices": ["en"]},
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}}, comparisons=None, **extra,
    )


def test_the_best_checkpoint_is_selected_with_a_familywise_interval(
    pytester: pytest.Pytester,
) -> None:
    sweep(pytester, {"metric": "full_call_exact_match", "among": "adapter@*"})
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    block = read_json(pytester.path / "out" / "report" / "selection.json")
    assert block["selected"] == "adapter@2" and block["selected_value"] == 1.0
    assert block["reference"] == "base" and block["reference_value"] == 0.0
    assert block["familywise"] == {"method": "bonferroni", "candidates": 3,
                                   "confidence_level": pytest.approx(1 - 0.05 / 3)}
    assert [c["arm"] for c in block["candidates"]] == ["adapter@1", "adapter@2", "adapter@3"]
    chosen = block["candidates"][1]
    plain = read_json(pytester.path / "out" / "report" / "adapter@2-vs-base.json")
    wider = plain["intervals"]["intervals"]["full_call_exact_match"]
    assert chosen["lower"] <= wider["lower"] and chosen["upper"] >= wider["upper"]
    assert "winner's curse" in block["winners_curse"]
    result.stdout.fnmatch_lines(["*selection by full_call_exact_match among adapter@* "
                                 "(3 candidates): adapter@2*", "*winner's curse*"])


@pytest.mark.parametrize(
    ("table", "key"),
    [({"metric": "full_call_exact_match", "among": "nothing*"}, "selection.among"),
     ({"metric": "accuracy", "among": "adapter@*"}, "selection.metric"),
     ({"metric": "full_call_exact_match", "among": "*"}, "selection.reference")],
)
def test_a_bad_selection_is_one_line_naming_the_key(
    pytester: pytest.Pytester, table: dict, key: str
) -> None:
    sweep(pytester, table)
    with pytest.raises(InputError) as caught:
        load_suite(pytester.path / "suite" / "sommelier.toml")
    assert caught.value.code == "SOM-SUITE-SELECTION"
    assert key in str(caught.value) and "\n" not in str(caught.value)
