"""Formatted splits under parser v2 (data/split/load.py): a call row's ``target_text`` holds one
or more gold calls; a v1 read of the same file is unchanged (exactly one call); hostile
``target_text`` values load or fail in one line naming file, line and field."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import make_row, write_split

from pytest_sommelier.data.split import load_split
from pytest_sommelier.errors import InputError

PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
LONDON = {"name": "get_weather", "arguments": {"city": "London"}}


def text(calls: Any) -> str:
    return json.dumps(calls, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def row(example_id: str, target: str) -> dict[str, Any]:
    prompt = f"<user>{example_id}</user>\n"
    return make_row(example_id, "en", None, PARIS, prompt_text=prompt, target_text=target,
                    full_text=prompt + target)  # fmt: skip


def test_v2_reads_gold_call_sets_and_v1_reads_the_one_call_rows_as_before(tmp_path: Path) -> None:
    path = write_split(tmp_path / "s.jsonl", [row("a", text([PARIS])),
                                               row("b", text([PARIS, LONDON]))])  # fmt: skip
    split = load_split(path, ["en"], parser_version="v2", parser_order="exact")
    a, b = split.examples
    assert a.gold_calls == (PARIS,) and b.gold_calls == (PARIS, LONDON)
    assert b.gold_call == PARIS and b.call_order == "exact" and b.parser_version == "v2"
    with pytest.raises(InputError) as info:
        load_split(path, ["en"])
    assert "s.jsonl:2" in str(info.value) and "holds 2 calls, not exactly one" in str(info.value)
    one = write_split(tmp_path / "one.jsonl", [row("a", text([PARIS]))])
    (example,) = load_split(one, ["en"]).examples
    assert example.gold_calls is None and example.call_order is None
    assert example.parser_version == "v1" and example.gold_call == PARIS


def test_acceptable_values_on_several_gold_calls_are_refused(tmp_path: Path) -> None:
    several = row("a", text([PARIS, LONDON]))
    several["acceptable_arguments"] = {"language": "python", "required": [], "arguments": {}}
    path = write_split(tmp_path / "s.jsonl", [several])
    with pytest.raises(InputError) as info:
        load_split(path, ["en"], parser_version="v2")
    assert "acceptable_arguments" in str(info.value) and "s.jsonl:1" in str(info.value)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip
TARGETS = st.one_of(
    st.text(max_size=30),
    JSON.map(text),
    st.lists(st.one_of(st.just(PARIS), st.just(LONDON), JSON), max_size=4).map(text),
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TARGETS)
def test_hostile_targets_load_or_fail_in_one_line(target: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write_split(Path(folder) / "s.jsonl", [row("a", target)])
        try:
            (example,) = load_split(path, ["en"], parser_version="v2").examples
        except InputError as error:
            message = str(error)
            assert "\n" not in message and "s.jsonl:1" in message
            assert "target_text" in message
            return
    value = json.loads(target)
    assert isinstance(value, list) and value and example.gold_calls == tuple(value)
