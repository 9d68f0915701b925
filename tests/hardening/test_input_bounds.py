"""Depth, size and time bounds on every JSON and template input (rows R46-R51 of
docs/hardening.md), and hypothesis generating hostile importer rows, tool schemas and
templates.

Through the ``sommelier`` command as a user runs it: ``import openai-chat`` / ``xlam`` /
``hermes`` and ``format`` with a tokenizer saved to a folder (``tests/tool_templates.py``). Each
hostile input ends in one line with a ``SOM-`` code naming the file and line or row and the
field, exit 2, and the ``--out`` file that was there before is left byte for byte.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from property_budget import examples
from tool_templates import build_tokenizer, tokenizer_folder

from pytest_sommelier.cli import main
from pytest_sommelier.commands.format import format_split
from pytest_sommelier.data import json_input
from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT, JSON_DEPTH_LIMIT, strict_json
from pytest_sommelier.data.split import template_render
from pytest_sommelier.data.split.schema import arguments_error, parameters_error
from pytest_sommelier.errors import SommelierError

SENTINEL = "an earlier file: must survive a refused command\n"
PLAIN = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def nested_value(levels: int) -> Any:
    value: Any = "s"
    for _ in range(levels):
        value = {"a": value}
    return value


def tool(parameters: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def openai_row(arguments: Any, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    params = parameters or {"type": "object", "properties": {"x": {"type": "object"}}}
    return {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {"type": "function", "function": {"name": "f", "arguments": arguments}}
                ],
            },
        ],
        "tools": [tool(params)],
    }


def prepared_row(parameters: dict[str, Any], arguments: Any) -> dict[str, Any]:
    return {
        "example_id": "en-1",
        "language": "en",
        "source_example_id": None,
        "query": "hi",
        "tools": [{"name": "f", "parameters": parameters}],
        "gold_call": {"name": "f", "arguments": arguments},
    }


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def refused_in_one_line(status: int, err: str, code: str, *parts: str) -> None:
    assert status == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f": {code}: " in err, err
    for part in parts:
        assert part in err, err


@pytest.fixture(scope="module")
def plain_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tokenizer_folder(tmp_path_factory.mktemp("tok") / "plain", PLAIN)


# --------------------------------------------------------------------------- R46 deep nesting


def test_arguments_nested_500_deep_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R46: `import openai-chat` with arguments nested 500 deep was a RecursionError."""
    source = tmp_path / "chat.jsonl"
    source.write_text(json.dumps(openai_row(json.dumps({"x": nested_value(500)}))) + "\n")
    out = tmp_path / "prepared.jsonl"
    out.write_text(SENTINEL)
    status, _, err = run(["import", "openai-chat", str(source), "--out", str(out), "--strict"],
                         capsys)  # --strict: the row's own line (else a counted skip, V05)
    refused_in_one_line(
        status,
        err,
        "SOM-IMPORT-JSON",
        f"{source}:1",
        "messages[1].tool_calls[0].function.arguments",
        f"deeper than {JSON_DEPTH_LIMIT} levels",
    )
    assert out.read_text() == SENTINEL


def test_arguments_past_the_field_limit_but_inside_the_line_limit_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An object of arguments (not a JSON string) 40 deep: inside the line's 64 levels, past
    the field's 32; refused naming the field (json_value's recursion never runs)."""
    source = tmp_path / "chat.jsonl"
    source.write_text(json.dumps(openai_row({"x": nested_value(40)})) + "\n")
    out = tmp_path / "prepared.jsonl"
    status, _, err = run(["import", "openai-chat", str(source), "--out", str(out), "--strict"],
                         capsys)  # --strict: the row's own line (else a counted skip, V05)
    refused_in_one_line(
        status, err, "SOM-IMPORT-FIELD", f"{source}:1", f"deeper than {FIELD_DEPTH_LIMIT}"
    )
    assert not out.exists()


def _xlam_row(parameters: dict[str, Any]) -> dict[str, Any]:
    tools = [{"name": "f", "description": "d", "parameters": parameters}]
    answers = [{"name": "f", "arguments": {}}]
    return {"id": 1, "query": "hi", "tools": json.dumps(tools), "answers": json.dumps(answers)}


@pytest.mark.parametrize("source", ["openai-chat", "xlam", "format"])
def test_a_tool_schema_nested_150_levels_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plain_tokenizer: Path, source: str
) -> None:
    """R46: a tool schema nested 150 levels (4 KB) crashed `import openai-chat`, `import xlam`
    and `sommelier format` (RecursionError)."""
    deep = {"type": "object", "properties": {"x": nested_schema(150)}}
    given = tmp_path / "in.jsonl"
    out = tmp_path / "out.jsonl"
    out.write_text(SENTINEL)
    if source == "openai-chat":
        given.write_text(json.dumps(openai_row("{}", deep)) + "\n")
        argv = ["import", "openai-chat", str(given), "--out", str(out), "--strict"]
        code = "SOM-IMPORT-JSON"
    elif source == "xlam":
        given.write_text(json.dumps(_xlam_row({"x": {"type": "dict", "properties": deep}})) + "\n")
        argv = ["import", "xlam", str(given), "--out", str(out), "--strict"]
        code = "SOM-IMPORT-JSON"
    else:
        given.write_text(json.dumps(prepared_row(deep, {})) + "\n")
        argv = ["format", str(given), "--tokenizer", str(plain_tokenizer), "--split", "test",
                "--out", str(out)]  # fmt: skip
        code = "SOM-PREPARED-JSON"
    status, _, err = run(argv, capsys)
    refused_in_one_line(status, err, code, f"{given}:1", "nested too deeply")
    assert out.read_text() == SENTINEL


def test_a_schema_inside_the_limit_still_imports_and_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plain_tokenizer: Path
) -> None:
    """The bound refuses depth, not nesting: a 14-level schema (JSON depth 31) and arguments
    31 deep go through import and format under a deep call stack."""
    params = {"type": "object", "properties": {"x": nested_schema(14)}}
    source = tmp_path / "chat.jsonl"
    source.write_text(json.dumps(openai_row(json.dumps({"x": nested_value(14)}), params)) + "\n")
    prepared = tmp_path / "prepared.jsonl"
    assert main(["import", "openai-chat", str(source), "--out", str(prepared)]) == 0
    split = tmp_path / "split.jsonl"
    status, _, err = run(
        ["format", str(prepared), "--tokenizer", str(plain_tokenizer), "--split", "test",
         "--out", str(split)],
        capsys,
    )
    assert status == 0, err
    assert json.loads(split.read_text())["example_id"] == "openai-chat-1"


def test_strict_json_never_raises_recursion_error() -> None:
    for text in ("[" * 100_000, "{\"a\":" * 50_000, "[" * 65 + "]" * 65):
        with pytest.raises(ValueError, match="deeper than 64"):
            strict_json(text)
    assert strict_json("[" * 64 + "]" * 64) is not None
    assert json_input.depth_problem(nested_value(10_000), 5) is not None  # no recursion


# --------------------------------------------------------------------------- R47-R50 templates

LOOPS = (
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}" + PLAIN
)


@pytest.fixture
def quick_timer(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(template_render, "RENDER_SECONDS", 0.5)
    return 0.5


def _format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str, policy: str | None = None
) -> tuple[int, str, Path]:
    prepared = tmp_path / "prepared.jsonl"
    prepared.write_text(json.dumps(prepared_row({"type": "object"}, {})) + "\n")
    folder = tokenizer_folder(tmp_path / "tok", template)
    out = tmp_path / "split.jsonl"
    out.write_text(SENTINEL)
    argv = ["format", str(prepared), "--tokenizer", str(folder), "--split", "test",
            "--out", str(out)]  # fmt: skip
    status, _, err = run([*argv, *(["--policy", policy] if policy else [])], capsys)
    return status, err, out


@pytest.mark.parametrize("policy", [None, "sommelier.native-tools.v1"])
def test_a_template_that_never_ends_is_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quick_timer: float, policy: str | None
) -> None:
    """R47: two nested range(100000) loops fit the sandbox's limits and `format` hung (nothing
    after 60 s)."""
    started = time.monotonic()
    status, err, out = _format(tmp_path, capsys, LOOPS, policy)
    assert time.monotonic() - started < 30
    refused_in_one_line(
        status, err, "SOM-FORMAT-TEMPLATE-BOUND", "example 'en-1'", "ran for more than 0.5 s"
    )
    assert out.read_text() == SENTINEL


def test_the_timer_puts_back_what_was_armed_before() -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 5.0)
        text = template_render.render_chat(
            build_tokenizer(PLAIN),
            [{"role": "user", "content": "hi"}],
            add_generation_prompt=True,
            example_id="en-1",
        )
        assert text == "<user>hi\n<assistant>"
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        assert 3.0 < left <= 5.0 and not fired
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_template_writing_50_million_characters_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R48: a template rendering 50 M characters wrote a 100 MB split without a word."""
    status, err, out = _format(tmp_path, capsys, "{{ 'x' * 50000000 }}" + PLAIN)
    refused_in_one_line(status, err, "SOM-FORMAT-TEMPLATE-BOUND", "wrote 50000", "more than")
    assert out.read_text() == SENTINEL


LLAMA_DATE = (
    '{%- if not date_string is defined %}{%- if strftime_now is defined %}'
    '{%- set date_string = strftime_now("%d %b %Y") %}{%- else %}'
    '{%- set date_string = "01 Jan 1999" %}{%- endif %}{%- endif %}'
    "Today Date: {{ date_string }}\n" + PLAIN
)


def test_strftime_now_is_pinned_to_the_documented_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """R49: `strftime_now` (Llama 3.1's "Today Date") made prompts depend on the day `format`
    ran; it now gives 26 Jul 2024 whatever the clock says."""
    status, err, out = _format(tmp_path, capsys, LLAMA_DATE)
    assert status == 0, err
    row = json.loads(out.read_text())
    assert row["prompt_text"].startswith("Today Date: 26 Jul 2024\n")
    status, err, _ = _format(tmp_path, capsys, "{{ strftime_now(fmt) }}" + PLAIN)
    refused_in_one_line(status, err, "SOM-FORMAT-TEMPLATE-DATE", "not a string literal")


def test_pinned_template_rewrites_only_strftime_now() -> None:
    assert template_render.pinned_template(PLAIN) == PLAIN
    assert template_render.pinned_template("{{ strftime_now('%Y-%m-%d') }}") == '{{ "2024-07-26" }}'
    assert template_render.pinned_template("{% if strftime_now is not defined %}") == (
        "{% if false %}"
    )
    assert template_render.pinned_template("{{ strftime_now }}") is None


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ messages.__class__.__base__.__subclasses__() }}",
    "{{ raise_exception.__globals__['os'] }}",
]
NAMESPACE_DUNDER = "{% set x = namespace() %}{% set x.__dict__ = 1 %}"


@pytest.mark.parametrize("policy", [None, "sommelier.native-tools.v1"])
@pytest.mark.parametrize("escape", ESCAPES)
def test_every_sandbox_escape_is_one_security_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], escape: str, policy: str | None
) -> None:
    """R50: each escape stays blocked by the sandbox and is one SOM-FORMAT-TEMPLATE-RENDER line
    naming the SecurityError (under tools-in-system it was a traceback)."""
    status, err, out = _format(tmp_path, capsys, escape + PLAIN, policy)
    refused_in_one_line(status, err, "SOM-FORMAT-TEMPLATE-RENDER", "example 'en-1'")
    assert "SecurityError" in err or "UndefinedError" in err
    assert out.read_text() == SENTINEL


@pytest.mark.parametrize("policy", [None, "sommelier.native-tools.v1"])
def test_a_namespace_dunder_assignment_is_refused_or_reaches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str | None
) -> None:
    """``{% set x.__dict__ = 1 %}`` on a namespace: transformers 5's sandbox refuses it (one
    SOM-FORMAT-TEMPLATE-RENDER line); older releases (4.46) store a key in the namespace's own
    mapping, which reaches no object. Either way: no traceback, and a refusal is one line that
    leaves the output as it was."""
    status, err, out = _format(tmp_path, capsys, NAMESPACE_DUNDER + PLAIN, policy)
    assert "Traceback" not in err
    if status != 0:
        assert len(err.strip().splitlines()) == 1 and "SOM-FORMAT-TEMPLATE" in err, err
        assert out.read_text() == SENTINEL


# --------------------------------------------------------------------------- hypothesis

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4)
)


@st.composite
def deep_values(draw: st.DrawFn) -> Any:
    """A JSON value nested 0-600 levels (arrays and objects mixed), or a wide shallow one.

    The levels repeat a drawn pattern of up to 8 array-or-object choices and up to 4 keys (a
    draw per level, up to 1,200 of them, was most of the hostile properties' time; what they
    check is the depth and that both kinds occur at any depth)."""
    value: Any = draw(JSON_LEAVES)
    depth = draw(st.sampled_from([0, 1, 5, 31, 33, 63, 65, 200, 600]))
    if depth:
        arrays = draw(st.lists(st.booleans(), min_size=1, max_size=8))
        keys = draw(st.lists(st.text(max_size=2), min_size=1, max_size=4))
        for level in range(depth):
            array = arrays[level % len(arrays)]
            value = [value] if array else {keys[level % len(keys)]: value}
    return value


HOSTILE_VALUES = st.one_of(
    deep_values(),
    st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=3), max_leaves=6),
    st.text(max_size=20).map(json.dumps),
    deep_values().map(json.dumps),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _replaced(row: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(row))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


HERMES_ROW = {
    "id": "h",
    "conversations": [
        {"from": "system", "value": f"<tools> {json.dumps([tool({'type': 'object'})])} </tools>"},
        {"from": "human", "value": "hi"},
        {"from": "gpt", "value": '<tool_call>{"name": "f", "arguments": {}}</tool_call>'},
    ],
}
VALID_ROWS = {
    "openai-chat": openai_row('{"x": {}}'),
    "xlam": _xlam_row({"x": {"type": "dict", "description": "d"}}),
    "hermes": HERMES_ROW,
}
NESTED_FIELDS: dict[str, list[tuple[Any, ...]]] = {
    "openai-chat": [("messages", 1, "tool_calls", 0, "function", "arguments"),
                    ("tools", 0, "function", "parameters")],
    "xlam": [("tools",), ("answers",)],
    "hermes": [("conversations", 0, "value"), ("conversations", 2, "value")],
}  # fmt: skip
"""The fields later code walks recursively: drawn half the time, so deep values reach them."""
IMPORTER_EXAMPLES = 120


@settings(
    max_examples=examples(IMPORTER_EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.sampled_from(sorted(VALID_ROWS)), st.data())
def test_hostile_importer_rows_are_imported_or_one_line(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    importer: str,
    data: st.DataObject,
) -> None:
    """Any field of a valid openai-chat / xlam / hermes row replaced by a hostile value (deep
    nesting, wrong types, JSON strings of them): the import converts, skips, or refuses in one
    line; never a traceback; the earlier --out file survives a refusal."""
    row = VALID_ROWS[importer]
    path = data.draw(st.sampled_from(list(_paths(row))) | st.sampled_from(NESTED_FIELDS[importer]))
    hostile = _replaced(row, path, data.draw(HOSTILE_VALUES))
    folder = tmp_path_factory.mktemp("imp")
    source = folder / "rows.jsonl"
    source.write_text(json.dumps(hostile) + "\n")
    out = folder / "out.jsonl"
    out.write_text(SENTINEL)
    status = main(["import", importer, str(source), "--out", str(out)])
    _, err = capsys.readouterr()
    assert "Traceback" not in err
    event(f"exit {status}")
    if status == 0:  # lines end at "\n" only: a value may hold a raw U+0085 (splitlines splits)
        assert all(json.loads(line) for line in out.read_text().split("\n") if line)
    else:
        assert status == 2 and len(err.splitlines()) == 1 and ": SOM-" in err, err
        assert out.read_text() == SENTINEL


@st.composite
def hostile_schemas(draw: st.DrawFn) -> Any:
    """Tool parameter schemas nested 0-200 levels through properties/items/anyOf, with odd
    keyword values at the bottom."""
    schema: Any = draw(
        st.one_of(
            st.just({"type": "string"}),
            st.dictionaries(
                st.sampled_from(["type", "enum", "$ref", "items", "minimum", "pattern"]),
                JSON_LEAVES,
                max_size=2,
            ),
        )
    )
    depth = draw(st.sampled_from([0, 2, 15, 16, 40, 200]))
    # the wraps repeat a drawn pattern of up to 8 (as deep_values' levels do)
    wraps = draw(st.lists(st.sampled_from(["properties", "items", "anyOf"]), min_size=1,
                          max_size=8))  # fmt: skip
    for level in range(depth):
        wrap = wraps[level % len(wraps)]
        if wrap == "properties":
            schema = {"type": "object", "properties": {"a": schema}}
        elif wrap == "items":
            schema = {"type": "array", "items": schema}
        else:
            schema = {"anyOf": [schema]}
    return {"type": "object", "properties": {"x": schema}}


SCHEMA_EXAMPLES = 200


@settings(
    max_examples=examples(SCHEMA_EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(hostile_schemas(), deep_values())
def test_hostile_schemas_and_arguments_are_a_verdict_never_a_raise(
    schema: Any, arguments: Any
) -> None:
    """The one schema rule and the one arguments rule (format, every importer, import bfcl)
    return a problem or None for any depth; beyond FIELD_DEPTH_LIMIT always a problem."""
    problem = parameters_error(schema)
    if json_input.depth_problem(schema, FIELD_DEPTH_LIMIT) is not None:
        assert problem is not None and "nested too deeply" in problem
    if problem is None:
        wrong = arguments_error(schema, {"x": arguments})
        assert wrong is None or isinstance(wrong[1], str)


FRAGMENTS = [
    "{% for i in range(100000) %}",
    "{% endfor %}",
    "{{ 'x' * 3000000 }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{{ 'x' * 5000000 }}",
    "{{ 'ab' * 10 }}",
    "{{ strftime_now('%Y') }}",
    "{{ strftime_now(messages) }}",
    "{% if strftime_now is defined %}D{% endif %}",
    "{{ raise_exception('no') }}",
    "{{ ''.__class__ }}",
    "{{ messages[0]['content'] }}",
    "{{ messages | tojson }}",
    "{% if add_generation_prompt %}<a>{% endif %}",
    "{{",
    "{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}",
]
TEMPLATE_EXAMPLES = 60


@settings(
    max_examples=examples(TEMPLATE_EXAMPLES),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=5))
def test_hostile_templates_render_or_are_one_line(
    tmp_path_factory: pytest.TempPathFactory, plain_tokenizer: Path, fragments: list[str]
) -> None:
    """Templates built of loops, repetition, dates, raises, escapes, unbalanced tags and
    runaway macros: a formatted split, or one SommelierError line; never another exception,
    never longer than the bound plus a margin, the earlier --out file kept on a refusal."""
    template = "".join(fragments) + PLAIN
    folder = tmp_path_factory.mktemp("tpl")
    prepared = folder / "prepared.jsonl"
    prepared.write_text(json.dumps(prepared_row({"type": "object"}, {})) + "\n")
    out = folder / "split.jsonl"
    out.write_text(SENTINEL)
    original = template_render.RENDER_SECONDS
    template_render.RENDER_SECONDS = 0.05  # any bound stops a loop; each stop costs it once
    started = time.monotonic()
    try:
        tokenizer = build_tokenizer(template)
    except Exception:  # a template Jinja cannot even parse is refused when rendered
        tokenizer = None
    try:
        if tokenizer is not None:
            format_split(
                prepared, out, tokenizer_ref=str(plain_tokenizer), tokenizer=tokenizer, split="test"
            )
            assert json.loads(out.read_text())["example_id"] == "en-1"
            event("formatted" if tokenizer is not None else "no tokenizer")
    except SommelierError as error:
        event(error.code)
        assert len(str(error).splitlines()) == 1
        assert out.read_text() == SENTINEL
    finally:
        template_render.RENDER_SECONDS = original
    assert time.monotonic() - started < 20


def test_a_template_text_past_its_bound_is_refused_before_rendering() -> None:
    class Huge:
        chat_template = "x" * (template_render.TEMPLATE_CHARS + 1)

        def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
            raise AssertionError("rendered")

    with pytest.raises(template_render.TemplateBoundError, match="characters long, more than"):
        template_render.render_chat(Huge(), [], add_generation_prompt=True, example_id="en-1")
