"""Hostile inputs on 0.5's surfaces (rows V30- of docs/hardening.md): gold call sets under
parser v1 and v2, template options (``[format] template_kwargs``, ``--template-kwarg``, a
split's recorded options). Each test fails on the code before its fix; hypothesis draws the
hostile values in the fast tier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, write_scripted_suite
from property_budget import examples
from suite_factory import make_row, write_split

from pytest_sommelier.core.parse import MAX_INT_DIGITS, parse_tool_call
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.errors import InputError

# -- V30: numbers a gold call holds that the parser could never read back ---------------------

HUGE = ["1e400", "-1e400", "1E999", "1" + "0" * 400 + ".0", "9" * (MAX_INT_DIGITS + 1)]


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("number", HUGE, ids=["1e400", "-1e400", "1E999", "long-float", "long-int"])
def test_a_gold_number_beyond_a_float_or_the_digit_limit_is_one_line(
    tmp_path: Path, number: str, version: str
) -> None:
    """V30: ``1e400`` in a gold call was read as ``inf``: every item of the run then failed
    with ``ValueError: Out of range float values are not JSON compliant`` and the session
    finish with it (no verdict); an integer of 5,000 digits was refused with Python's hint
    ``use sys.set_int_max_str_digits()``. Now one ``SOM-SPLIT-GOLD-CALL`` line naming the
    file, line and field, the reason in the parser's words (which reads the same text in an
    output as ``invalid_json``)."""
    target = '[{"name": "f", "arguments": {"a": ' + number + "}}]"
    path = write_split(tmp_path / "s.jsonl", [make_row("en-0", "en", target_text=target)])
    with pytest.raises(InputError) as caught:
        load_split(path, ["en"], parser_version=version)
    text = str(caught.value)
    assert caught.value.code == "SOM-SPLIT-GOLD-CALL" and "\n" not in text, text
    assert "s.jsonl:1" in text and "'target_text'" in text, text
    assert "not a finite number" in text or f"longer than {MAX_INT_DIGITS} digits" in text
    assert "set_int_max_str_digits" not in text and len(text) < 400, text
    assert parse_tool_call(target)[1] == "invalid_json"  # the parser's reading of the same


# An integer literal of 4,291 to 4,311 digits (around the digit limit, MAX_INT_DIGITS): a sign, a
# first digit and a drawn run of up to 12 digits repeated to the drawn length. The lengths and
# signs of ``st.from_regex(r"-?[1-9][0-9]{4290,4310}")``, which drew each of the ~4,300 digits
# one by one (most of this test's time; what the property reads is the length).
LONG_INTEGERS = st.builds(
    lambda sign, first, run, length: sign + first + (run * (length // len(run) + 1))[:length],
    st.sampled_from(["", "-"]),
    st.sampled_from("123456789"),
    st.text("0123456789", min_size=1, max_size=12),
    st.integers(4290, 4310),
)


@settings(max_examples=examples(200), deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(10**30), 10**30),
        st.from_regex(r"-?[1-9][0-9]{0,3}(\.[0-9]{1,5})?[eE][+-]?[0-9]{1,4}", fullmatch=True),
        LONG_INTEGERS,
    )
)
def test_strict_json_reads_a_number_exactly_when_the_parser_does(value: Any) -> None:
    """V30 (hypothesis): any number literal is read by the strict decoder of every input
    exactly when parser v1 reads it in an output, and then to the same value."""
    literal = value if isinstance(value, str) else json.dumps(value)
    text = '{"name": "f", "arguments": {"a": ' + literal + "}}"
    parsed, status = parse_tool_call(text)
    try:
        read = strict_json(text)
    except ValueError as exc:
        assert status == "invalid_json", (literal[:40], str(exc))
        assert "\n" not in str(exc) and len(str(exc)) < 120
        return
    assert status == "ok" and parsed is not None
    assert parsed["arguments"] == read["arguments"]


def test_a_session_over_a_gold_of_1e400_stops_at_collection_with_one_line(
    pytester: pytest.Pytester,
) -> None:
    """V30 through a session: the split is refused at collection (exit 2, no model call);
    before, both arms' items failed with a traceback and no verdict was written."""
    ids = ("en-0", "en-1")
    script = {"base": {i: call_text(GOLD[i]) for i in ids}, "adapter": {}}
    suite = write_scripted_suite(pytester, script, ids=ids, suite={"slices": ["en"]})
    split = suite.parent / "data" / "test.jsonl"
    lines = split.read_text().splitlines()
    row = json.loads(lines[0])
    row["target_text"] = row["target_text"].replace('"days":2', '"days":1e400')
    row["full_text"] = row["prompt_text"] + row["target_text"]
    split.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    out = result.stdout.str()
    assert result.ret == 2, out
    assert "SOM-SPLIT-GOLD-CALL" in out and "1e400 is not a finite number" in out
    assert "Out of range float" not in out and "Traceback" not in out


# -- V31: a split's recorded template options against the suite's -------------------------

V3 = "sommelier.formatted_example.v3"
JSON_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, -0.0, 0.5]),
    st.sampled_from(["", "0", "false", "x"]),
)


def _options_split(tmp_path: Path, declared: dict[str, Any], recorded: dict[str, Any]) -> Any:
    """A suite declaring ``declared`` over a split whose rows record ``recorded``."""
    from suite_factory import write_suite

    from pytest_sommelier.core.canonical import prompt_digest
    from pytest_sommelier.data.split.load import load_suite_split
    from pytest_sommelier.data.suite.load import load_suite

    rows = []
    for example_id in ("en-0", "en-1"):
        row = make_row(example_id, "en", schema_version=V3, template_kwargs=recorded)
        row["prompt_sha256"] = prompt_digest(row["prompt_text"], recorded)
        rows.append(row)
    folder = tmp_path / f"s{len(list(tmp_path.iterdir()))}"
    suite = load_suite(write_suite(folder, rows=rows, suite={"slices": ["en"]},
                                   format={"template_kwargs": declared}))  # fmt: skip
    return suite, load_suite_split(suite)


def test_a_split_formatted_with_0_is_not_one_formatted_with_false(tmp_path: Path) -> None:
    """V31: the suite declares ``enable_thinking = false``; a split formatted with
    ``--template-kwarg enable_thinking=0`` was accepted (Python's ``0 == False``), though a
    template's ``enable_thinking is false`` (Qwen3's) is false for 0: its prompts think."""
    import jinja2

    from pytest_sommelier.inference.split_check import check_split_template_kwargs

    test = jinja2.Template("{% if enable_thinking is false %}off{% else %}on{% endif %}")
    assert test.render(enable_thinking=0) == "on" and test.render(enable_thinking=False) == "off"
    suite, split = _options_split(tmp_path, {"enable_thinking": False}, {"enable_thinking": 0})
    with pytest.raises(InputError) as caught:
        check_split_template_kwargs(suite, split)
    text = str(caught.value)
    assert caught.value.code == "SOM-SPLIT-TEMPLATE-KWARGS" and "\n" not in text
    assert '{"enable_thinking": 0}' in text and '{"enable_thinking": false}' in text, text
    suite, split = _options_split(tmp_path, {"enable_thinking": False}, {"enable_thinking": False})
    check_split_template_kwargs(suite, split)


@settings(max_examples=examples(60), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(declared=JSON_SCALARS, recorded=st.one_of(st.none(), JSON_SCALARS))
def test_recorded_options_pass_exactly_when_they_are_the_same_json(
    tmp_path: Path, declared: Any, recorded: Any
) -> None:
    """V31 (hypothesis): a split passes the suite's check exactly when each row records the
    declared options as the same JSON text (canonical: sorted keys; ``1`` is not ``1.0``,
    ``0`` not ``false``; TOML has no null, so only a row records one)."""
    from pytest_sommelier.core.canonical import canonical_json_text
    from pytest_sommelier.inference.split_check import check_split_template_kwargs

    suite, split = _options_split(tmp_path, {"x": declared}, {"x": recorded})
    same = canonical_json_text(declared) == canonical_json_text(recorded)
    if same:
        check_split_template_kwargs(suite, split)
    else:
        with pytest.raises(InputError, match="SOM-SPLIT-TEMPLATE-KWARGS"):
            check_split_template_kwargs(suite, split)


# -- V32: template options: strict JSON values, the template's own names, depth -------------


def test_a_template_kwarg_value_with_a_repeated_key_is_refused() -> None:
    """V32: ``--template-kwarg x={"a":1,"a":2}`` was taken as ``{"a": 2}`` (``json.loads``),
    where every other JSON input refuses a repeated key."""
    from pytest_sommelier.commands.format import template_kwargs_of

    with pytest.raises(InputError) as caught:
        template_kwargs_of(['x={"a":1,"a":2}'])
    assert caught.value.code == "SOM-FORMAT-TEMPLATE-KWARG"
    assert "repeated key 'a'" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(InputError, match="longer than 4300 digits"):
        template_kwargs_of(["x=" + "1" * 5000])
    assert template_kwargs_of(['x={"a":1,"b":2}']) == {"x": {"a": 1, "b": 2}}


def test_the_templates_own_names_are_no_template_options() -> None:
    """V32: ``raise_exception``, ``strftime_now`` (transformers' template globals), jinja's
    own ``namespace``/``range``/... and the tokenizer's special tokens were taken as options,
    replacing the function or token a template uses (Qwen's template calls ``namespace``)."""
    import jinja2.defaults

    from pytest_sommelier.commands.format import template_kwargs_of
    from pytest_sommelier.data.split.template_render import RESERVED_KWARGS

    assert set(jinja2.defaults.DEFAULT_NAMESPACE) <= RESERVED_KWARGS
    names = {"raise_exception", "strftime_now", "pad_token", "unk_token", "namespace"}
    for name in sorted(names | set(jinja2.defaults.DEFAULT_NAMESPACE)):
        with pytest.raises(InputError) as caught:
            template_kwargs_of([f"{name}=1"])
        assert f"option name {name!r} is one sommelier or transformers passes itself" in str(
            caught.value
        )


@settings(max_examples=examples(60), deadline=None)
@given(depth=st.integers(0, 80), where=st.sampled_from(["cli", "suite"]))
def test_a_template_option_nests_at_most_as_deep_as_call_arguments(depth: int, where: str) -> None:
    """V32 (hypothesis): a value nested 400 levels in ``[format] template_kwargs`` (or 900
    through ``--template-kwarg``) was taken, though a template walks it recursively and no
    split row could record it; now the call arguments' bound (``FIELD_DEPTH_LIMIT``) holds
    in the suite, the flag and a row alike (one rule, ``template_kwargs_problem``)."""
    from pytest_sommelier.commands.format import template_kwargs_of
    from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT
    from pytest_sommelier.data.split.template_render import template_kwargs_problem

    value: Any = 1
    for _ in range(depth):
        value = [value]
    fits = depth + 1 <= FIELD_DEPTH_LIMIT  # the options table is the first level
    if where == "cli":
        try:
            template_kwargs_of([f"x={json.dumps(value)}"])
        except InputError as exc:
            assert not fits and "nested too deeply" in str(exc) and "\n" not in str(exc)
        else:
            assert fits
    else:
        problem = template_kwargs_problem({"x": value})
        assert (problem is None) == fits, problem


# -- V33: a native-policy target holding several calls under parser v1 -----------------------

NATIVE = "sommelier.native-tools.v1"


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    calls=st.lists(
        st.fixed_dictionaries({"name": st.sampled_from(["f", "g", "get_weather"]),
                               "arguments": st.dictionaries(st.sampled_from("abc"),
                                                            st.integers(0, 3), max_size=2)}),
        min_size=1, max_size=4,
    ),
    prose=st.sampled_from(["", "\n", " then ", "\nAlso:\n"]),
)  # fmt: skip
def test_a_native_target_of_several_calls_is_refused_under_v1_and_read_whole_under_v2(
    tmp_path: Path, calls: list[dict[str, Any]], prose: str
) -> None:
    """V33: a native-policy row whose target holds two ``<tool_call>`` blocks was read under
    parser v1 as its first call, the second silently dropped (a model writing only the first
    scored a full match), though a v1 suite refuses a JSON array of several gold calls. Now
    under v1 one ``SOM-SPLIT-GOLD-CALL`` line; under v2 every call, in order."""
    blocks = [f"<tool_call>\n{json.dumps(call)}\n</tool_call>" for call in calls]
    target = prose.join(blocks) + "<|im_end|>"
    row = make_row("en-0", "en", template_policy=NATIVE, target_text=target)
    path = write_split(tmp_path / "native.jsonl", [row])
    (example,) = load_split(path, ["en"], parser_version="v2").examples
    assert list(example.gold_calls or ()) == calls
    if len(calls) == 1:
        (example,) = load_split(path, ["en"]).examples
        assert example.gold_call == calls[0]
        return
    with pytest.raises(InputError) as caught:
        load_split(path, ["en"])
    text = str(caught.value)
    assert caught.value.code == "SOM-SPLIT-GOLD-CALL" and "\n" not in text
    assert f"holds {len(calls)} calls, not exactly one" in text and "native.jsonl:1" in text
    assert '[parser] version = "v2"' in text


# -- V34: a translation that expects something else than its root ---------------------------

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
]


def _expecting(example_id: str, language: str, expect: str, source: str | None = None) -> Any:
    """A v3 row expecting ``expect`` (``call``: the default gold call)."""
    if expect == "call":
        return make_row(example_id, language, source, schema_version=V3, expect="call")
    return make_row(example_id, language, source, schema_version=V3, expect=expect,
                    target_text="Sorry.", tools=TOOLS, call_markers=["<tool_call>"])  # fmt: skip


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    root=st.sampled_from(["call", "no_call", "any_call"]),
    translation=st.sampled_from(["call", "no_call", "any_call"]),
)
def test_a_translation_expects_what_its_root_expects_or_one_line(
    tmp_path: Path, root: str, translation: str
) -> None:
    """V34: a split whose translation ``he-0`` expects ``no_call`` while its root ``en-0``
    expects a call loaded, and the session finish then failed with ``SOM-STATS-SHAPE: metric
    valid_json_rate is a rate but its components are not 0/1`` (no verdict, no row named);
    ``sommelier format`` refuses such a pair. Now one ``SOM-SPLIT-FIELD`` line naming the file,
    line, row and field."""
    rows = [_expecting("en-0", "en", root), _expecting("he-0", "he", translation, "en-0")]
    path = write_split(tmp_path / "pairs.jsonl", rows)
    if root == translation:
        assert len(load_split(path, ["en", "he"]).examples) == 2
        return
    with pytest.raises(InputError) as caught:
        load_split(path, ["en", "he"])
    text = str(caught.value)
    assert caught.value.code == "SOM-SPLIT-FIELD" and "\n" not in text
    assert "pairs.jsonl:2" in text and "'he-0'" in text and "field 'expect'" in text, text
    assert f"is {translation!r}, but its root 'en-0' expects {root!r}" in text, text


def test_a_session_over_a_mismatched_pair_stops_at_collection(pytester: pytest.Pytester) -> None:
    """V34 through a session: refused at collection (exit 2) with the row's line."""
    ids = ("en-0", "en-1", "he-0", "he-1")
    script = {arm: {i: call_text(GOLD[i]) for i in ids} for arm in ("base", "adapter")}
    suite = write_scripted_suite(pytester, script, ids=ids, suite={"slices": ["en", "he"]})
    split = suite.parent / "data" / "test.jsonl"
    lines = split.read_text().splitlines()
    row = json.loads(lines[2])
    assert row["example_id"] == "he-0"
    row.update(schema_version=V3, expect="no_call", target_text="Sorry.", call_markers=[])
    row["full_text"] = row["prompt_text"] + row["target_text"]
    lines[2] = json.dumps(row)
    split.write_text("\n".join(lines) + "\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    out = result.stdout.str()
    assert result.ret == 2, out
    assert "SOM-SPLIT-FIELD" in out and "test.jsonl:3: example 'he-0': field 'expect'" in out
    assert "SOM-STATS-SHAPE" not in out


# -- V35: stop_when="gate_fail:NAME" with a name of 10,000 characters ------------------------


@pytest.mark.slow
def test_a_gate_fail_name_the_suite_lacks_is_quoted_bounded(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    """V35: ``stop_when="gate_fail:" + "x" * 10_000`` (a name the suite lacks) was refused at
    ``on_train_begin`` with the name echoed whole (a line of 10,000 characters), and every
    gate of the suite listed; now both quoted to 60 characters, the list to five gates."""
    import shutil

    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model
    from plugin_helpers import rows
    from suite_factory import match_base_tokenizer, write_suite
    from transformers import AutoModelForCausalLM, TrainingArguments

    from pytest_sommelier.training import SommelierCallback

    model_dir, _ = tiny
    gates = [
        {"name": f"g{i}-" + "y" * 200, "arm": "base", "metric": "valid_json_rate", "min": 0.0}
        for i in range(8)
    ]
    suite = write_suite(tmp_path / "suite", rows=rows(("en-0", "en-1")), gates=gates,
                        suite={"slices": ["en"]}, model={"base": "model", "revision": None},
                        arms={"base": {}}, comparisons=None)  # fmt: skip
    shutil.rmtree(suite.parent / "adapter")
    shutil.copytree(model_dir, suite.parent / "model")
    match_base_tokenizer(suite)
    base = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to="none", use_cpu=True)
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 stop_when="gate_fail:" + "x" * 10_000, quiet=True)  # fmt: skip
    with pytest.raises(InputError) as caught:
        callback.on_train_begin(args, None, None, model=model)
    text = str(caught.value)
    assert caught.value.code == "SOM-TRAIN-OPTION" and "\n" not in text
    assert "which the evaluated suite does not hold" in text and ", ..." in text
    assert len(text) < 1000, len(text)


# -- V36: a gold call set larger than any answer is paired with in bounded time -------------


@settings(max_examples=examples(15), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(extra=st.integers(1, 3000))
def test_a_gold_set_over_the_limit_is_one_line_and_the_limit_loads(
    tmp_path: Path, extra: int
) -> None:
    """V36: a v2 row of 10,000 gold calls loaded, then pairing an answer's calls with it cost
    seconds per example (n^2 m). A row over ``GOLD_CALLS_LIMIT`` is one
    ``SOM-SPLIT-GOLD-CALL`` line naming the file, line and field; a row at the limit loads."""
    from pytest_sommelier.core.call_sets import GOLD_CALLS_LIMIT

    def gold(count: int) -> str:
        return json.dumps([{"name": "f", "arguments": {"i": i}} for i in range(count)])

    at_limit = write_split(tmp_path / "ok.jsonl", [make_row("en-0", "en", target_text=gold(
        GOLD_CALLS_LIMIT))])  # fmt: skip
    (example,) = load_split(at_limit, ["en"], parser_version="v2").examples
    assert len(example.gold_calls or ()) == GOLD_CALLS_LIMIT
    over = write_split(tmp_path / "over.jsonl", [
        make_row("en-0", "en", target_text=gold(GOLD_CALLS_LIMIT + extra))])  # fmt: skip
    with pytest.raises(InputError) as caught:
        load_split(over, ["en"], parser_version="v2")
    text = str(caught.value)
    assert caught.value.code == "SOM-SPLIT-GOLD-CALL" and "\n" not in text
    assert "over.jsonl:1" in text and "'target_text'" in text
    assert f"holds {GOLD_CALLS_LIMIT + extra} calls, more than the {GOLD_CALLS_LIMIT}" in text


def test_pairing_the_largest_gold_set_with_a_long_answer_reads_each_call_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """V36: the pairing builds each call's argument pairs once (``_pair_set`` per call, not per
    cell of the matrix): counted here for a gold set at the limit and 64 answered calls, all
    different from the gold so every one goes through the assignment."""
    from pytest_sommelier.core import call_sets

    gold = [{"name": "f", "arguments": {"i": i, "k": 0}} for i in range(call_sets.GOLD_CALLS_LIMIT)]
    answer = [{"name": "f", "arguments": {"i": i, "k": 1}} for i in range(64)]
    seen: list[Any] = []
    original = call_sets._pair_set
    monkeypatch.setattr(call_sets, "_pair_set", lambda call: seen.append(call) or original(call))
    matching = call_sets.match_calls(answer, gold, "any")
    assert len(seen) == len(gold) + len(answer)
    assert matching.exact == 0 and matching.matched_pairs == 64 and len(matching.pairs) == 64
