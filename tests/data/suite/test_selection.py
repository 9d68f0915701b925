"""``[selection]``: the best candidate of a checkpoint sweep, its comparison with the reference
at the Bonferroni level over all candidates, and the winner's curse stated."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite
from property_budget import examples
from suite_factory import write_suite
from test_suite_globs import checkpoints

from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError

pytest_plugins = ["pytester"]
IDS = ("en-0", "en-1", "en-2", "en-3")


def sweep(pytester: pytest.Pytester, selection: dict | None, **overrides: object) -> None:
    script = {
        "base": {},
        "adapter@1": {i: call_text(GOLD[i]) for i in IDS[:2]},
        "adapter@2": {i: call_text(GOLD[i]) for i in IDS},
        "adapter@3": {i: call_text(GOLD[i]) for i in IDS[:3]},
    }
    checkpoints(pytester.path / "suite" / "out", ["checkpoint-1", "checkpoint-2", "checkpoint-3"])
    extra = {} if selection is None else {"selection": selection}
    overrides.setdefault("suite", {"slices": ["en"]})
    write_scripted_suite(
        pytester, script, ids=IDS, arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
        comparisons=None, **extra, **overrides,
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



@settings(max_examples=examples(40), deadline=None)
@given(metric=st.one_of(st.sampled_from([*METRIC_NAMES, "lenient_call", "semantic_args"]),
                        st.text(min_size=1, max_size=20)),
       scorers=st.lists(st.sampled_from(["lenient_call", "semantic_args", "x_y"]), unique=True,
                        max_size=3),
       part=st.one_of(st.none(), st.sampled_from(["overall", "en", "he", "Overall"]),
                      st.text(max_size=8)))  # fmt: skip
def test_a_selection_metric_is_one_of_the_five_or_an_enabled_scorer(
    metric: str, scorers: list[str], part: str | None
) -> None:
    """Any metric, scorer list and slice: the selection loads exactly when the metric is one of
    the five or enabled and the slice is ``overall`` or configured, else one line."""
    table = {"metric": metric, "among": "adapter@*"}
    if part is not None:
        table["slice"] = part
    good = metric in (*METRIC_NAMES, *scorers) and part in (None, "overall", "en")
    with tempfile.TemporaryDirectory() as folder:
        checkpoints(Path(folder) / "suite" / "out", ["checkpoint-1", "checkpoint-2"])
        path = write_suite(
            Path(folder) / "suite", suite={"slices": ["en"], "scorers": scorers or None},
            arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}}, comparisons=None,
            selection=table,
        )  # fmt: skip
        try:
            suite = load_suite(path)
        except InputError as error:
            text = str(error)
            assert not good, text
            assert "\n" not in text
            assert error.code in ("SOM-SUITE-SELECTION", "SOM-SUITE-INVALID-VALUE"), text
            if error.code == "SOM-SUITE-SELECTION" and "selection.metric" in text:
                assert all(name in text for name in scorers)
            return
    assert good
    assert suite.selection is not None and suite.selection.metric == metric
    assert suite.selection.slice == (part or "overall")


def test_a_selection_slice_chooses_by_that_slice_and_pairs_its_examples(
    pytester: pytest.Pytester,
) -> None:
    """``[selection] slice = "he"``: checkpoint 1 is best overall (all four English examples,
    no Hebrew one), checkpoint 2 best in Hebrew (all three, one English); the selection reads
    the Hebrew values and its interval pairs the three Hebrew examples only."""
    english, hebrew = [i for i in GOLD if i.startswith("en")], [i for i in GOLD if i[:2] == "he"]
    script = {
        "base": {},
        "adapter@1": {i: call_text(GOLD[i]) for i in english},
        "adapter@2": {i: call_text(GOLD[i]) for i in [*hebrew, "en-0"]},
    }
    checkpoints(pytester.path / "suite" / "out", ["checkpoint-1", "checkpoint-2"])
    write_scripted_suite(
        pytester, script, arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
        comparisons=None, selection={"metric": "full_call_exact_match", "among": "adapter@*",
                                     "slice": "he"},
    )  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    block = read_json(pytester.path / "out" / "report" / "selection.json")
    assert block["slice"] == "he" and block["selected"] == "adapter@2", block
    assert block["selected_value"] == 1.0 and block["reference_value"] == 0.0
    values = {c["arm"]: c["value"] for c in block["candidates"]}
    assert values == {"adapter@1": 0.0, "adapter@2": 1.0}
    chosen = block["candidates"][1]
    assert chosen["discordant"] == {"candidate_only": 3, "reference_only": 0}  # 3 Hebrew pairs
    result.stdout.fnmatch_lines(["*selection by full_call_exact_match ?he? among adapter@* *"])
    resolved = read_json(pytester.path / "out" / "suite.resolved.json")
    assert resolved["selection"]["slice"] == "he"


def test_a_selection_slice_that_is_not_configured_is_one_line(pytester: pytest.Pytester) -> None:
    sweep(pytester, {"metric": "full_call_exact_match", "among": "adapter@*", "slice": "fr"})
    with pytest.raises(InputError) as caught:
        load_suite(pytester.path / "suite" / "sommelier.toml")
    assert caught.value.code == "SOM-SUITE-SELECTION" and "selection.slice" in str(caught.value)
    assert "overall or one of: en" in str(caught.value) and "\n" not in str(caught.value)
