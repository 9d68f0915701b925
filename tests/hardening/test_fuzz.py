"""Fuzzing with hypothesis (issue 7, item 3).

- The parser never raises, its statuses follow their definitions (checked against an
  independent reading of each definition, not against the parser's own helpers), prose around
  a span does not change the result, and its work is linear in the length of the output: work
  is counted (Python lines executed inside ``parse.py``, a deterministic count), never timed.
- From raw text to metrics: components sum to the totals, every numerator is at most its
  denominator, the order of the examples does not matter, an exact call scores full marks.
- The suite loader and the split loader: random mutations of a valid ``sommelier.toml`` and of
  valid split lines never crash them: the result is a valid ``Suite`` / ``FormattedSplit`` or a
  ``SommelierError``; any other exception is a bug (several were found and fixed this way, see
  docs/hardening.md).

Example counts are modest so the whole file runs in well under a minute on two cores.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import default_rows, make_row, write_suite

from pytest_sommelier.core import parse
from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.metrics import METRIC_NAMES, compute_metrics, example_components
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.data.split.load import FormattedSplit, load_split
from pytest_sommelier.data.suite.load import Suite, load_suite
from pytest_sommelier.errors import SommelierError

FUZZ = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# ============================================================================ the parser

JSONISH = st.text(
    alphabet=st.sampled_from(list('{}[]":,\\ \n') + list("aN01-.eE") + ["é", "\u2028", "\x00"]),
    max_size=80,
)
TEXTS = st.one_of(JSONISH, st.text(max_size=60))
PROSE = st.text(alphabet=st.characters(blacklist_characters="{["), max_size=20)


def first_opener(text: str) -> int:
    """Index of the first '{' or '[' (a plain scan, independent of the parser's)."""
    for index, char in enumerate(text):
        if char in "{[":
            return index
    return -1


def is_call(value: Any) -> bool:
    """The accepted shape, read straight from the definition."""
    if isinstance(value, list):
        if len(value) != 1:
            return False
        value = value[0]
    return (
        isinstance(value, dict)
        and sorted(value) == ["arguments", "name"]
        and isinstance(value["name"], str)
        and value["name"] != ""
        and isinstance(value["arguments"], dict)
    )


@FUZZ
@given(TEXTS)
def test_parser_statuses_follow_their_definitions(text: str) -> None:
    call, status = parse_tool_call(text)
    assert status in parse.STATUSES
    assert (call is not None) == (status == "ok")
    start = first_opener(text)
    assert (status == "no_json") == (start < 0)
    if status in ("ok", "invalid_shape"):
        # the first span is JSON (a laxer decoder than the parser's strict one reads it too)
        repeated = []

        def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
            repeated.append(len({k for k, _ in items}) != len(items))
            return dict(items)

        value, _ = json.JSONDecoder(object_pairs_hook=pairs).raw_decode(text, start)
        if status == "ok":
            assert is_call(value) and not any(repeated)
        else:
            assert not is_call(value) or any(repeated)
    if status == "ok":
        assert is_call(call) and not isinstance(call, list)
        assert set(call) == {"name", "arguments"}


@FUZZ
@given(PROSE, TEXTS, PROSE)
def test_prose_before_the_first_bracket_changes_nothing(before: str, text: str, after: str) -> None:
    assert parse_tool_call(before + text) == parse_tool_call(text)
    if first_opener(text) < 0:
        assert parse_tool_call(before + text + after) == (None, "no_json")


# built once (were built again inside every draw of calls(): the same strategies, cheaper)
CALL_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5), st.just(0.5)
)
CALL_VALUES = st.recursive(
    CALL_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
CALL_NAMES = st.text(min_size=1, max_size=8)
CALL_ARGUMENTS = st.dictionaries(st.text(max_size=4), CALL_VALUES, max_size=4)


@st.composite
def calls(draw: st.DrawFn) -> dict[str, Any]:
    return {"name": draw(CALL_NAMES), "arguments": draw(CALL_ARGUMENTS)}


@FUZZ
@given(calls(), PROSE, st.text(max_size=30), st.booleans())
def test_a_call_in_prose_is_found_whatever_follows(
    call: dict[str, Any], before: str, after: str, wrap: bool
) -> None:
    text = before + json.dumps([call] if wrap else call, ensure_ascii=bool(len(before) % 2)) + after
    assert parse_tool_call(text) == (call, "ok")


# -- linear work ---------------------------------------------------------------------------------

PARSE_FILE = parse.__file__


def parser_work(text: str) -> int:
    """Python lines executed inside parse.py while parsing ``text`` (deterministic).

    The C parts (``str.find``, ``str.count``, the JSON scanner) are linear by construction;
    what this counts is every Python-level step the parser takes: hooks per decoded value,
    the depth walk, the shape check.
    """
    count = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        return local if frame.f_code.co_filename == PARSE_FILE else None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        parse_tool_call(text)
    finally:
        sys.settrace(previous)
    return count


LINES_PER_CHAR = 8
FIXED_LINES = 120

UNITS = st.text(alphabet=st.sampled_from(list('{}[]":,\\ 1a-')), min_size=1, max_size=6)
FRAMES = st.sampled_from(
    [
        ("", ""),
        ("[", "]"),
        ("{", "}"),
        ('{"name": "f", "arguments": {"a": [', "]}}"),
        ('[{"name": "f", "arguments": {', "}}]"),
        ('prose "quoted [', "] more prose"),
    ]
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(UNITS, FRAMES, st.integers(min_value=50, max_value=300))
def test_parser_work_is_linear_in_the_output_length(
    unit: str, frame: tuple[str, str], repeats: int
) -> None:
    """For an output built from a repeated unit, at two sizes (n and 4n repeats), the counted
    work stays under ``LINES_PER_CHAR * len + FIXED_LINES``: a parser that rescans (quadratic)
    would exceed it by orders of magnitude at these lengths."""
    for n in (repeats, 4 * repeats):
        text = frame[0] + unit * n + frame[1]
        assert parser_work(text) <= LINES_PER_CHAR * len(text) + FIXED_LINES, (unit, frame, n)


ADVERSARIAL = {
    "deep-lists": lambda n: "[" * n + "]" * n,
    "deep-objects": lambda n: '{"a":' * n + "1" + "}" * n,
    "wide-list": lambda n: "[" + ",".join(["[]"] * n) + "]",
    "many-keys": lambda n: (
        '{"name":"f","arguments":{' + ",".join(f'"k{i}":{i}' for i in range(n)) + "}}"
    ),
    "unclosed": lambda n: "{" + '"a":[' * n,
    "escapes": lambda n: '{"name":"' + '\\\\\\"' * n + '"',
    "repeated-key": lambda n: "{" + ",".join(['"a":1'] * n) + "}",
    "many-ints": lambda n: "[" + ",".join("1" * 30 for _ in range(n)) + "]",
}


@pytest.mark.parametrize("family", sorted(ADVERSARIAL))
def test_adversarial_families_are_linear(family: str) -> None:
    """Work per character does not grow from n = 500 to n = 8000 (a factor 16 in length)."""
    make = ADVERSARIAL[family]
    small, large = make(500), make(8000)
    per_char_small = parser_work(small) / len(small)
    per_char_large = parser_work(large) / len(large)
    assert parser_work(large) <= LINES_PER_CHAR * len(large) + FIXED_LINES
    assert per_char_large <= 1.5 * per_char_small + FIXED_LINES / len(small)


def test_the_work_counter_sees_quadratic_work() -> None:
    """The counter is a real measure: a deliberately quadratic scan blows through the bound."""

    def quadratic(text: str) -> int:
        count = 0

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            nonlocal count
            count += event == "line"
            return local

        def scan(t: str) -> int:
            hits = 0
            for i in range(len(t)):
                for j in range(i, len(t)):
                    hits += t[j] == "["
            return hits

        previous = sys.gettrace()
        sys.settrace(lambda f, e, a: local if f.f_code is scan.__code__ else None)
        try:
            scan(text)
        finally:
            sys.settrace(previous)
        return count

    text = "[" * 400
    assert quadratic(text) > LINES_PER_CHAR * len(text) + FIXED_LINES
    assert parser_work(text) <= LINES_PER_CHAR * len(text) + FIXED_LINES


# ============================================================================ raw text -> metrics


@st.composite
def scored(draw: st.DrawFn) -> dict[str, Any]:
    """A scoring record made the way the pipeline makes it: raw text through the parser."""
    gold = draw(calls())
    kind = draw(st.sampled_from(["exact", "prose", "renamed", "args", "text", "array"]))
    if kind == "exact":
        raw = json.dumps(gold)
    elif kind == "prose":
        raw = draw(PROSE) + json.dumps(gold) + draw(st.text(max_size=10))
    elif kind == "renamed":
        raw = json.dumps({**gold, "name": gold["name"] + "x"})
    elif kind == "args":
        raw = json.dumps({"name": gold["name"], "arguments": draw(calls())["arguments"]})
    elif kind == "array":
        raw = json.dumps([gold, gold])
    else:
        raw = draw(TEXTS)
    parsed, status = parse_tool_call(raw)
    return {
        "example_id": f"ex-{draw(st.integers(0, 10**9))}",
        "raw_text": raw,
        "parse_status": status,
        "parsed_call": parsed,
        "gold_call": gold,
        "kind": kind,
    }


@FUZZ
# up to 6 records (was 12): each property is per record or holds for any list; the draw of
# nested calls was the time of this, the fast tier's slowest test
@given(st.lists(scored(), max_size=6), st.randoms(use_true_random=False))
def test_metrics_from_raw_text(records: list[dict[str, Any]], rng: random.Random) -> None:
    totals = compute_metrics(records)
    components = [example_components(r) for r in records]
    for index, name in enumerate(METRIC_NAMES):
        numerator = sum(c[index][0] for c in components)
        denominator = sum(c[index][1] for c in components)
        assert (totals[name]["numerator"], totals[name]["denominator"]) == (numerator, denominator)
        assert 0 <= numerator <= denominator
        if index != METRIC_NAMES.index("argument_f1"):
            assert denominator == len(records), "every example counts, failures included"
    for record, parts in zip(records, components, strict=True):
        f1_num, f1_den = parts[METRIC_NAMES.index("argument_f1")]
        assert f1_num % 2 == 0 and f1_den > 0
        if record["kind"] in ("exact", "prose"):
            assert all(num == den for num, den in parts), record
        if record["parse_status"] != "ok":
            assert all(num == 0 for num, _ in parts)
    shuffled = list(records)
    rng.shuffle(shuffled)
    assert compute_metrics(shuffled) == totals


# ============================================================================ the suite loader


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid suite (with split and adapter folder) whose TOML the fuzzers overwrite."""
    folder = tmp_path_factory.mktemp("fuzz-suite")
    write_suite(
        folder,
        gates=[
            {"name": "g1", "arm": "adapter", "metric": "argument_f1", "min": 0.1},
            {
                "name": "g2",
                "candidate": "adapter",
                "reference": "base",
                "metric": "full_call_exact_match",
                "ci_lower_above": 0.0,
            },
            {"name": "g3", "arm": "base", "gap": "he", "metric": "valid_json_rate",
             "ci_lower_at_least": -0.5},
        ],
    )  # fmt: skip
    return folder


TOML_PIECES = st.sampled_from(
    [
        "=", "[", "]", "[[", "]]", '"', "'", ",", ".", "\n", "#", " ", "{", "}", "\\", "0",
        "-1", "1e999", "nan", "inf", "true", "x", "..", "/", "~", "\\u0000", "1979-05-27",
        "9" * 40, '"""', "pkg:", "overall", "temperature", "adapter", "base", "he",
    ]
)  # fmt: skip


@st.composite
def toml_mutations(draw: st.DrawFn, text: str) -> str:
    """Up to four edits: delete a range, insert pieces, duplicate / drop / swap lines."""
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["delete", "insert", "dup", "drop", "swap", "replace"]))
        lines = text.splitlines(keepends=True)
        if kind == "delete" and text:
            start = draw(st.integers(0, len(text) - 1))
            text = text[:start] + text[start + draw(st.integers(1, 8)) :]
        elif kind == "insert":
            at = draw(st.integers(0, len(text)))
            text = (
                text[:at] + "".join(draw(st.lists(TOML_PIECES, min_size=1, max_size=3))) + text[at:]
            )
        elif kind in ("dup", "drop", "swap") and lines:
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if kind == "dup":
                lines.insert(j, lines[i])
            elif kind == "drop":
                del lines[i]
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
        elif kind == "replace" and "=" in text:
            keyed = [k for k, line in enumerate(lines) if " = " in line]
            k = draw(st.sampled_from(keyed))
            key = lines[k].split(" = ", 1)[0]
            lines[k] = f"{key} = {draw(TOML_VALUES)}\n"
            text = "".join(lines)
    return text


TOML_VALUES = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["nan", "-inf", "0.0", "1.0", "true", "false", "[]", "{}", "1979-05-27",
                     "07:32:00", "[[1], [2]]", '{a = 1}', "9" * 5000, "0x1F", "1_000",
                     "[" * 3000 + "]" * 3000, "{a = " * 3000 + "1" + "}" * 3000,
                     json.dumps("p" * 5000), json.dumps("a/../../b"), json.dumps("../x"),
                     json.dumps("pkg:pytest_sommelier/" + "q" * 5000), '"\\u0000"',
                     json.dumps("/" + "r" * 5000), json.dumps("~" + "s" * 5000)]),
    st.text(max_size=12).map(lambda s: json.dumps(s)),
    st.lists(st.sampled_from(['"en"', '"he"', '"overall"', "1", '"x y"']), max_size=4).map(
        lambda xs: "[" + ", ".join(xs) + "]"
    ),
)  # fmt: skip


def check_suite(suite: Suite) -> None:
    """What a returned Suite promises: names cross-referenced, decoding greedy, files there."""
    assert suite.slices and suite.arms and suite.test_split.is_file()
    assert suite.decoding["temperature"] == 0.0 and suite.decoding["do_sample"] is False
    assert suite.decoding["max_new_tokens"] > 0 and suite.decoding["batch_size"] >= 1
    for comparison in suite.comparisons:
        assert {comparison.candidate, comparison.reference} <= set(suite.arms)
    for gate in suite.gates:
        assert gate.metric in METRIC_NAMES
        assert gate.slice == "overall" or gate.slice in suite.slices


def load_or_error(path: Path, loader: Callable[[], Any], check: Callable[[Any], None]) -> str:
    """``loader()`` returns a valid result or raises a SommelierError; anything else fails."""
    try:
        result = loader()
    except SommelierError as error:
        text = str(error)
        assert "\n" not in text and text.startswith(error.code)
        return error.code
    check(result)
    return "ok"


@FUZZ
@given(st.data())
def test_mutated_suite_files_load_or_fail_cleanly(suite_dir: Path, data: st.DataObject) -> None:
    original = suite_dir / "sommelier.toml.orig"
    if not original.exists():
        original.write_text((suite_dir / "sommelier.toml").read_text(encoding="utf-8"))
    text = data.draw(toml_mutations(original.read_text(encoding="utf-8")))
    path = suite_dir / "sommelier.toml"
    path.write_text(text, encoding="utf-8")
    load_or_error(path, lambda: load_suite(path), check_suite)


PATH_VALUES = st.sampled_from(
    [
        "p" * 5000, "a/../../b", "../x", "./adapter", "adapter/", "/", "~", "~" + "s" * 300,
        "pkg:pytest_sommelier/" + "q" * 5000, "pkg:pytest_sommelier/../x", "pkg:", "a\x00b",
        "/" + "r" * 5000, "org/name", "org/" + "n" * 5000, "data", "data/test.jsonl/x",
    ]
).map(json.dumps)  # fmt: skip


@FUZZ
@given(st.data())
def test_suite_values_replaced_load_or_fail_cleanly(suite_dir: Path, data: st.DataObject) -> None:
    """One key's value replaced by another TOML value (paths weighted: they reach the file
    system)."""
    original = suite_dir / "sommelier.toml.orig"
    if not original.exists():
        original.write_text((suite_dir / "sommelier.toml").read_text(encoding="utf-8"))
    lines = original.read_text(encoding="utf-8").splitlines(keepends=True)
    keyed = [k for k, line in enumerate(lines) if " = " in line]
    paths = [k for k in keyed if lines[k].split(" = ", 1)[0] in ("base", "adapter", "test_split")]
    if data.draw(st.booleans()):
        k, value = data.draw(st.sampled_from(paths)), data.draw(PATH_VALUES)
    else:
        k, value = data.draw(st.sampled_from(keyed)), data.draw(TOML_VALUES)
    lines[k] = f"{lines[k].split(' = ', 1)[0]} = {value}\n"
    path = suite_dir / "sommelier.toml"
    path.write_text("".join(lines), encoding="utf-8")
    load_or_error(path, lambda: load_suite(path), check_suite)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=40), st.integers(min_value=0))
def test_suite_files_with_random_bytes_spliced_in(suite_dir: Path, junk: bytes, at: int) -> None:
    original = suite_dir / "sommelier.toml.orig"
    if not original.exists():
        original.write_text((suite_dir / "sommelier.toml").read_text(encoding="utf-8"))
    raw = original.read_bytes()
    at %= len(raw) + 1
    path = suite_dir / "sommelier.toml"
    path.write_bytes(raw[:at] + junk + raw[at:])
    load_or_error(path, lambda: load_suite(path), check_suite)


# ============================================================================ the split loader


def check_split(split: FormattedSplit) -> None:
    """What a returned FormattedSplit promises."""
    ids = [e.example_id for e in split.examples]
    assert len(ids) == len(set(ids))
    for example in split.examples:
        assert sha256_text(example.prompt_text) == example.prompt_sha256
        assert is_call(example.gold_call)
    for language, rows in split.slices.items():
        assert rows and all(e.language == language for e in rows)


SURROGATE_TEXT = st.text(max_size=4).map(lambda s: s + "\ud800")
JSON_VALUES = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False),
        st.text(max_size=8), st.sampled_from(["en", "he", "en-0", "0" * 64]), SURROGATE_TEXT,
    ),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=5,
)  # fmt: skip
FIELDS = sorted(make_row("en-0", "en"))


@st.composite
def split_texts(draw: st.DrawFn) -> bytes:
    """The default split with field-level and byte-level mutations."""
    rows = default_rows()
    for _ in range(draw(st.integers(0, 3))):
        row = draw(st.sampled_from(rows))
        field = draw(st.sampled_from([*FIELDS, "extra"]))
        action = draw(st.sampled_from(["set", "drop", "nest", "escape"]))
        if action == "drop":
            row.pop(field, None)
        elif action == "nest":  # the field's value: arrays nested (in the text) DEPTHS deep
            row[field] = f"@nest{draw(DEPTHS)}@"
        elif action == "escape" and isinstance(row.get(field), str):  # valid JSON, bad Unicode
            row[field] = row[field] + draw(SURROGATE_TEXT)
        else:
            row[field] = draw(JSON_VALUES)
    ascii_only = draw(st.booleans())
    lines = [json.dumps(r, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") for r in rows]
    raw = b"\n".join(lines) + b"\n"
    for depth in (3, 50, 5000):
        raw = raw.replace(f'"@nest{depth}@"'.encode(), b"[" * depth + b"0" + b"]" * depth)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(raw)))
        kind = draw(st.sampled_from(["delete", "insert", "truncate", "deep", "digits"]))
        if kind == "delete":
            raw = raw[:at] + raw[at + draw(st.integers(1, 6)) :]
        elif kind == "insert":
            raw = raw[:at] + draw(st.binary(min_size=1, max_size=6)) + raw[at:]
        elif kind == "deep":  # a line of brackets nested past the decoder's recursion limit
            depth = draw(DEPTHS)
            raw = raw[:at] + b"\n" + b"[" * depth + b"]" * depth + b"\n" + raw[at:]
        elif kind == "digits":
            raw = raw[:at] + b"9" * draw(st.sampled_from([5, 5000])) + raw[at:]
        else:
            raw = raw[:at]
    return raw


DEPTHS = st.sampled_from([3, 50, 5000])


@FUZZ
@given(split_texts(), st.sampled_from([("en",), ("en", "he"), ("he", "en"), ("en", "he", "ar")]))
def test_mutated_splits_load_or_fail_cleanly(
    tmp_path_factory: pytest.TempPathFactory, raw: bytes, slices: tuple[str, ...]
) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-split.jsonl"
    path.write_bytes(raw)
    load_or_error(path, lambda: load_split(path, slices), check_split)


def test_the_fuzz_oracle_can_fail(tmp_path: Path) -> None:
    """``load_or_error`` lets a non-SommelierError escape and checks what a loader returns."""

    def crash() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        load_or_error(tmp_path, crash, lambda _: None)

    def reject(value: Any) -> None:
        raise AssertionError(f"checked {value}")

    with pytest.raises(AssertionError):
        load_or_error(tmp_path, lambda: 1, reject)
    assert load_or_error(tmp_path, lambda: 1, lambda _: None) == "ok"
