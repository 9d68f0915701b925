"""The weak rows of the fourth hostile round (docs/hardening.md, rows V10-): extension numbers,
hook shapes and bounded names, checkpoint globs that read as other numbers, labels, sample
notes. Each row: what happened -> one line, or a note, now. Hypothesis in the fast tier where
the input varies."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_helpers import settings as session_settings
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier import Scorer
from pytest_sommelier.core.scorers import COMPONENT_LIMIT, check_scorer, output_problem
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError
from pytest_sommelier.plugin.extensions import hook_sources
from pytest_sommelier.registry import merge


def _score(*args: Any) -> tuple[int, int]:
    return (1, 1)


# -- extension numbers -----------------------------------------------------------------------


def test_numpy_integers_from_a_scorer_are_integers() -> None:
    """V10: ``numpy.int64`` from a scorer was "must be integers"; numpy integers are accepted
    (numpy booleans and floats are not, and the line names their type)."""
    assert output_problem("ratio", (np.int64(2), np.int32(3))) is None
    code, problem = output_problem("ratio", (np.float64(1.0), 2)) or ("", "")
    assert code == "SOM-SCORER-TYPE" and "float64" in problem
    assert output_problem("rate", (np.bool_(True), 1)) is not None


def test_a_ratio_beyond_64_bits_is_one_bound_line() -> None:
    """V11: a ratio scorer returning numbers beyond 2^63 was an ``OverflowError`` in the
    finish; now one ``SOM-SCORER-RANGE`` line naming the bound."""
    code, problem = output_problem("ratio", (2**64, 2**64)) or ("", "")
    assert code == "SOM-SCORER-RANGE" and "2**32" in problem
    assert output_problem("ratio", (COMPONENT_LIMIT, COMPONENT_LIMIT)) is None


@settings(max_examples=examples(300), deadline=None)
@given(
    output=st.tuples(
        st.one_of(st.integers(-(2**70), 2**70), st.booleans(), st.floats(), st.none(),
                  st.integers(0, 2**62).map(np.int64), st.text(max_size=3)),
        st.one_of(st.integers(-(2**70), 2**70), st.integers(0, 2**62).map(np.int64),
                  st.booleans(), st.floats()),
    ),
    kind=st.sampled_from(["rate", "ratio"]),
)  # fmt: skip
def test_any_scorer_output_is_a_valid_component_or_one_problem(output: Any, kind: str) -> None:
    problem = output_problem(kind, output)
    numerator, denominator = output
    ints = all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in output)
    valid = (
        ints and 0 <= int(numerator) <= int(denominator) <= COMPONENT_LIMIT
        and (kind == "ratio" or int(denominator) == 1)
    )  # fmt: skip
    assert (problem is None) == valid, (output, problem)
    if problem is not None:
        assert problem[0].startswith("SOM-SCORER-") and "\n" not in problem[1]


def _relay(*values: Any) -> Any:
    impls = [SimpleNamespace(plugin_name=f"plugin{i}", function=lambda config, v=v: v)
             for i, v in enumerate(values)]  # fmt: skip
    hook = SimpleNamespace(get_hookimpls=lambda: impls)
    return SimpleNamespace(pytest_sommelier_add_scorers=hook)


@pytest.mark.parametrize("value", [[{"name": "x"}], [None], [Scorer("ok", "1", "rate", _score), 3]])
def test_a_scorer_hook_returning_something_else_in_its_list_names_the_hook(value: Any) -> None:
    """V12: a hook returning ``[{'name': ...}]`` or ``[None]`` was accepted here and failed
    later without naming the hook; now ``SOM-SCORER-CONTRACT`` naming it."""
    with pytest.raises(InputError) as caught:
        hook_sources(None, "scorers", _relay(value))  # type: ignore[arg-type]
    assert caught.value.code == "SOM-SCORER-CONTRACT" and "plugin0" in str(caught.value)
    assert "\n" not in str(caught.value)


@settings(max_examples=examples(200), deadline=None)
@given(name=st.text(max_size=6000), version=st.text(max_size=300))
def test_scorer_names_and_versions_are_bounded(name: str, version: str) -> None:
    """V13: versions with control characters and names of 5,000 characters were accepted;
    now a name is snake case of at most 64 characters, a version 1 to 64 printable ASCII
    characters, and the line never echoes a long value whole."""
    try:
        scorer = check_scorer(Scorer(name, version, "rate", _score), "a test")
    except InputError as error:
        assert error.code == "SOM-SCORER-CONTRACT" and len(str(error)) < 400
        return
    assert len(scorer.name) <= 64 and 1 <= len(scorer.version) <= 64
    assert all(" " <= c <= "~" for c in scorer.version) and scorer.version == scorer.version.strip()


def test_registry_names_are_bounded() -> None:
    with pytest.raises(InputError) as caught:
        merge("engines", [("a test", {"x" * 5000: "m:a"})])
    assert caught.value.code == "SOM-PLUGIN-NAME" and len(str(caught.value)) < 400
    with pytest.raises(InputError, match="SOM-PLUGIN-NAME"):
        merge("engines", [("a test", {"a\x07b": "m:a"})])


# -- checkpoint globs -----------------------------------------------------------------------


def _sweep(tmp_path: Path, names: list[str], pattern: str = "out/*/checkpoint-*") -> Path:
    for name in names:
        folder = tmp_path / "suite" / name
        folder.mkdir(parents=True)
        (folder / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
        (folder / "adapter_model.safetensors").write_bytes(b"")
    return write_suite(tmp_path / "suite", arms={"base": {}, "adapter": {"adapter": pattern}})


@pytest.mark.parametrize("name", ["checkpoint-1e3", "checkpoint--3", "checkpoint-1.5", "ckpt-+3"])
def test_a_checkpoint_name_that_reads_as_another_number_is_refused(
    tmp_path: Path, name: str
) -> None:
    """V14: ``checkpoint-1e3`` and ``checkpoint--3`` were both silently ``adapter@3``."""
    suite = _sweep(tmp_path, [f"out/{name}", "out/checkpoint-2"], "out/*")
    with pytest.raises(InputError) as caught:
        load_suite(suite)
    assert caught.value.code == "SOM-SUITE-GLOB-STEP" and repr(name) in str(caught.value)
    assert "not a plain step number" in str(caught.value)


def test_two_folders_of_one_step_are_named_by_their_paths(tmp_path: Path) -> None:
    """V15: ``a/checkpoint-4`` and ``b/checkpoint-4`` were reported as ``'checkpoint-4' and
    'checkpoint-4'``."""
    suite = _sweep(tmp_path, ["out/a/checkpoint-4", "out/b/checkpoint-4"])
    with pytest.raises(InputError) as caught:
        load_suite(suite)
    text = str(caught.value)
    assert "'out/a/checkpoint-4' and 'out/b/checkpoint-4'" in text, text


# -- labels and samples ---------------------------------------------------------------------


def test_an_empty_label_is_refused_and_a_long_one_is_not_echoed_whole(
    pytester: pytest.Pytester,
) -> None:
    """V16: ``--sommelier-label=`` was stored silently (no label); a 10,000-character label
    was echoed whole in the refusal."""
    with pytest.raises(pytest.UsageError, match=r"SOM-OPTION-VALUE.*a label is 1 to 64"):
        session_settings(pytester, "--sommelier-label=")
    with pytest.raises(pytest.UsageError) as caught:
        session_settings(pytester, "--sommelier-label=" + "x" * 10_000)
    assert len(str(caught.value)) < 300
    assert session_settings(pytester, "--sommelier-label=v5").label == "v5"


def test_a_sample_of_all_the_roots_says_it_is_the_whole_split(tmp_path: Path) -> None:
    """V17: ``N`` at or above the roots ran the full split with no note; the digit limits of N
    and SEED were unstated."""
    from plugin_helpers import rows

    from pytest_sommelier.data.split.load import load_split
    from pytest_sommelier.data.split.sample import parse_sample, sample_split, whole_split_note

    suite = load_suite(write_suite(tmp_path / "s", rows=rows()))
    split = load_split(suite.test_split, suite.slices)
    assert sample_split(split, 4, 0) is split
    note = whole_split_note(split, 4, "--sommelier-sample") or ""
    assert "4 is at least the split's 4 roots" in note and "whole split" in note
    assert whole_split_note(split, 3, "--sommelier-sample") is None
    with pytest.raises(InputError) as caught:
        parse_sample("1" * 10, "--sommelier-sample")
    assert "1 to 9 ASCII digits" in str(caught.value) and "1 to 18" in str(caught.value)


# -- selection ------------------------------------------------------------------------------


def test_a_selection_among_one_candidate_states_no_winners_curse(
    pytester: pytest.Pytester,
) -> None:
    """V18: one candidate printed the winner's-curse text (the best of 1 is no choice)."""
    import json

    from plugin_helpers import GOLD, call_text, write_scripted_suite

    ids = ("en-0", "en-1")
    folder = pytester.path / "suite" / "out" / "checkpoint-1"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
    (folder / "adapter_model.safetensors").write_bytes(b"")
    write_scripted_suite(
        pytester, {"base": {}, "adapter@1": {i: call_text(GOLD[i]) for i in ids}}, ids=ids,
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}}, comparisons=None,
        suite={"slices": ["en"]},
        selection={"metric": "full_call_exact_match", "among": "adapter@*"},
    )  # fmt: skip
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    block = json.loads((pytester.path / "out" / "report" / "selection.json").read_text())
    assert block["familywise"]["candidates"] == 1
    curse = block["winners_curse"]
    assert "the only one" in curse and "biased upward" not in curse
    assert "biased upward" not in result.stdout.str()


def test_a_stored_document_that_is_no_object_says_so(tmp_path: Path) -> None:
    """V19: a stored ``selection.json`` holding ``[1]`` was "schema_version is 'list'"."""
    from pytest_sommelier.data.store.validate import check_stored

    for value, word in (([1], "an array"), ("x", "a string"), (3, "a number"), (None, "null")):
        with pytest.raises(InputError) as caught:
            check_stored(tmp_path / "selection.json", value, expect="sommelier.selection.v1")
        assert f"is {word}, not a JSON object" in str(caught.value), str(caught.value)


def test_sommelier_plugins_marks_a_scorer_a_suite_could_not_use(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """V20: ``sommelier plugins`` listed a scorer whose object's name differs from its entry
    point as usable (a suite naming it is refused); now ``NOT USABLE`` with that line, exit 3."""
    from pytest_sommelier import registry
    from pytest_sommelier.cli import main

    misnamed = Scorer("other_name", "1", "rate", _score)
    monkeypatch.setattr(
        registry, "entry_point_sources",
        lambda kind: [("entry point sommelier.scorers:lenient of a-package 1.0",
                       {"lenient": misnamed})] if kind == "scorers" else [],
    )  # fmt: skip
    assert main(["plugins"]) == 3
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  lenient"))
    assert "NOT USABLE: SOM-SCORER-CONTRACT" in line and "'other_name'" in line


def test_rescore_says_when_a_scorers_version_changed(tmp_path: Path) -> None:
    """V21: ``rescore`` silently re-scored a run under a newer scorer version; now a note per
    scorer (printed as ``note: ...``), none when the versions agree."""
    import json

    from pytest_sommelier.commands.rescore import scorer_version_notes
    from pytest_sommelier.core import runlayout

    report = runlayout.arm_report(runlayout.arm_dir(tmp_path, "adapter"))
    report.parent.mkdir(parents=True)
    report.write_text(json.dumps({"scorers": [{"name": "lenient", "version": "1",
                                               "kind": "rate"}]}))  # fmt: skip
    newer = (Scorer("lenient", "2", "rate", _score),)
    (note,) = scorer_version_notes(newer, tmp_path, ["adapter"])
    assert "recorded version 1, rescored with version 2" in note and "lenient" in note
    assert scorer_version_notes((Scorer("lenient", "1", "rate", _score),), tmp_path,
                                ["adapter"]) == []  # fmt: skip


@settings(max_examples=examples(50), deadline=None)
@given(suffix=st.text(alphabet="0123456789eE.+-_x", min_size=1, max_size=6))
def test_any_checkpoint_suffix_is_its_plain_step_or_one_line(suffix: str) -> None:
    """V14, generated: a folder ``checkpoint-<suffix>`` is the arm ``adapter@N`` only when
    the name ends in digits with no exponent, decimal point or sign before them; anything else
    is one ``SOM-SUITE-GLOB-STEP`` line."""
    import re
    import tempfile

    name = f"checkpoint-{suffix}"
    with tempfile.TemporaryDirectory() as folder:
        suite = _sweep(Path(folder), [f"out/{name}"], "out/*")
        try:
            loaded = load_suite(suite)
        except InputError as error:
            assert error.code == "SOM-SUITE-GLOB-STEP" and "\n" not in str(error)
            return
    (arm,) = [a for a in loaded.arms if a.startswith("adapter@")]
    digits = re.search(r"[0-9]+\Z", name)
    assert digits is not None and arm == f"adapter@{int(digits.group())}"
    before = name[: digits.start()]
    assert not re.search(r"(?:[0-9][eE][+-]?|[0-9]\.|--|-\+|\+)\Z", before), name


def test_a_selected_gate_on_identical_outputs_gets_a_hint_that_fits() -> None:
    """V24: a ``selected = true`` gate on ``identical_outputs`` hinted "name candidate and
    reference (and max) instead of arm" (it names no arm)."""
    from pytest_sommelier.core.types import ArmConfig
    from pytest_sommelier.data.suite.gates import gate_configs

    arms = {"base": ArmConfig(name="base", adapter=None, adapter_revision=None),
            "adapter@1": ArmConfig(name="adapter@1", adapter="a", adapter_revision=None)}
    entry = {"name": "same", "selected": True, "metric": "identical_outputs", "max": 0.5}
    with pytest.raises(InputError) as caught:
        gate_configs([entry], arms, (), ("en",), "s.toml", has_selection=True)
    text = str(caught.value)
    assert "selected = true gate" in text and "instead of arm" not in text and "\n" not in text


def test_a_compare_fail_spec_may_name_a_scorer_of_the_suite(pytester: pytest.Pytester) -> None:
    """V25: ``--sommelier-compare-fail=NAME:MARGIN`` refused a scorer's name, though scorers
    behave as built-ins; now a scorer the suite enables is a compare-fail metric (the gate
    judged like a built-in's), and a name the suite enables no scorer for is one line at
    collection."""
    from plugin_helpers import GOLD, SCORER_HOOK, call_text, write_scripted_suite

    def run_with(adapter: dict[str, str], *args: str) -> pytest.RunResult:
        suite = write_scripted_suite(
            pytester, {"adapter": adapter, "base": {}}, suite={"scorers": ["lenient_call"]},
            gates=[{"name": "valid", "arm": "adapter", "metric": "valid_json_rate", "min": 0.0}],
        )  # fmt: skip
        with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
            conftest.write(SCORER_HOOK)
        return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache", *args)

    good = {i: call_text(GOLD[i]) for i in GOLD}
    first = run_with(good, "--sommelier-out", "one", "--sommelier-autosave")
    assert first.ret == 0, first.stdout.str()[-2000:]
    worse = {**good, "en-0": "prose", "en-1": "prose"}
    spec = "--sommelier-compare-fail=lenient_call:0.05"
    second = run_with(worse, "--sommelier-out", "two", "--sommelier-compare=last", spec)
    text = second.stdout.str()
    assert second.ret == 1 and "compare-fail:adapter:lenient_call:0.05" in text, text[-3000:]
    gate = [line for line in second.stdout.lines if "compare-fail:adapter:lenient_call" in line]
    assert gate and any(line.lstrip().startswith("FAIL") for line in gate), gate
    unknown = run_with(good, "--sommelier-out", "three", "--sommelier-compare=last",
                       "--sommelier-compare-fail=semantic_args:0.05")  # fmt: skip
    assert unknown.ret != 0
    unknown.stdout.fnmatch_lines(["*SOM-HISTORY-FAIL-SPEC*'semantic_args' is neither a metric "
                                  "nor a scorer of suite*"])  # fmt: skip


# -- hypothesis for rows whose tests above take a few values ---------------------------------

JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                        st.text(max_size=20))  # fmt: skip


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(value=st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3), max_leaves=6))
def test_any_stored_document_that_is_no_object_says_what_it_is(
    tmp_path: Path, value: Any
) -> None:
    """V19 (hypothesis): any JSON value other than an object, read as a stored document, is
    one ``SOM-STORED-FIELD`` line saying what it is (never "schema_version is 'list'")."""
    from pytest_sommelier.data.store.validate import check_stored

    with pytest.raises(InputError) as caught:
        check_stored(tmp_path / "selection.json", value, expect="sommelier.selection.v1")
    text = str(caught.value)
    assert caught.value.code == "SOM-STORED-FIELD" and "\n" not in text
    assert "not a JSON object" in text and "schema_version is" not in text, text


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    tag=st.one_of(
        st.text(max_size=30),
        st.from_regex(r"[a-z]{2,3}(-[A-Za-z0-9]{1,8}){0,2}", fullmatch=True),
        st.sampled_from(["ES", "en_US", "", " en", "e\nn", "x" * 200, "\udcff"]),
    )
)
def test_any_bfcl_language_tag_tags_every_row_or_is_one_line(tmp_path: Path, tag: str) -> None:
    """V22 (hypothesis): ``sommelier import bfcl --language TAG`` either tags every imported
    row with TAG (a tag the prepared rows take, ``formatting.LANGUAGE_PATTERN``) or is one
    ``SOM-BFCL-LANGUAGE`` line quoting at most 40 characters, nothing written."""
    import json
    import uuid

    from pytest_sommelier.data.prepare.bfcl import import_bfcl
    from pytest_sommelier.data.prepare.formatting import LANGUAGE_PATTERN

    folder = tmp_path / uuid.uuid4().hex
    data = folder / "data"
    (data / "possible_answer").mkdir(parents=True)
    function = {"name": "area", "description": "Area.", "parameters": {
        "type": "dict", "properties": {"base": {"type": "integer"}}, "required": ["base"]}}
    question = {"id": "live_simple_0", "function": [function],
                "question": [[{"role": "user", "content": "Área de base 10?"}]]}
    answer = {"id": "live_simple_0", "ground_truth": [{"area": {"base": [10]}}]}
    (data / "BFCL_v4_live_simple.json").write_text(json.dumps(question) + "\n")
    (data / "possible_answer" / "BFCL_v4_live_simple.json").write_text(json.dumps(answer) + "\n")
    out = folder / "out.jsonl"
    if LANGUAGE_PATTERN.fullmatch(tag):
        import_bfcl(["live_simple"], data, out, language=tag)
        assert [json.loads(line)["language"] for line in out.read_text().splitlines()] == [tag]
        return
    with pytest.raises(InputError) as caught:
        import_bfcl(["live_simple"], data, out, language=tag)
    text = str(caught.value)
    assert caught.value.code == "SOM-BFCL-LANGUAGE" and "\n" not in text
    assert len(text) < 260 and not out.exists(), text
