"""``[parser] version`` and ``[parser] order``: validated at load with one line naming the table
and key; ``version = "v2"`` selects parser v2 with either order."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.core.parse_v2 import ORDERS, PARSER_VERSIONS
from pytest_sommelier.data.suite import load_suite
from pytest_sommelier.errors import InputError

KEYS = st.text(alphabet=st.characters(max_codepoint=127, blacklist_categories=("Cs",)), max_size=6)
# (the factory quotes a non-ASCII key with JSON escapes, which TOML refuses)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = st.one_of(
    TEXT,
    st.sampled_from(
        ["v1", "v2", "V1", "v1 ", "any", "exact", "Any", "", "v3", "sommelier.parser.v2"]
    ),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
)
HOSTILE = st.one_of(
    SCALARS, st.lists(SCALARS, max_size=3), st.dictionaries(KEYS, SCALARS, max_size=2)
)


def test_absent_keys_are_v1_and_any(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path))
    assert (suite.parser_version, suite.parser_order) == ("v1", "any")
    assert PARSER_VERSIONS["v1"] == "sommelier.parser.v1"


@pytest.mark.parametrize("order", ORDERS)
def test_v1_and_each_order_load(tmp_path: Path, order: str) -> None:
    suite = load_suite(write_suite(tmp_path, parser={"version": "v1", "order": order}))
    assert (suite.parser_version, suite.parser_order) == ("v1", order)


@pytest.mark.parametrize("order", ORDERS)
def test_v2_loads_with_each_order(tmp_path: Path, order: str) -> None:
    suite = load_suite(write_suite(tmp_path, parser={"version": "v2", "order": order}))
    assert (suite.parser_version, suite.parser_order) == ("v2", order)
    assert PARSER_VERSIONS["v2"] == "sommelier.parser.v2"


def test_an_unknown_parser_key_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path, parser={"ordr": "any"}))
    assert info.value.code == "SOM-SUITE-UNKNOWN-KEY" and "ordr" in str(info.value)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["version", "order"]), HOSTILE)
def test_hostile_values_load_or_fail_in_one_line_naming_the_key(key: str, value: Any) -> None:
    accepted = {"version": ["v1", "v2"], "order": list(ORDERS)}[key]
    with tempfile.TemporaryDirectory() as folder:
        suite_file = write_suite(folder, parser={key: value})
        if isinstance(value, str) and value in accepted:
            suite = load_suite(suite_file)
            assert getattr(suite, f"parser_{key}") == value
            return
        with pytest.raises(InputError) as info:
            load_suite(suite_file)
    text = str(info.value)
    assert info.value.code in ("SOM-SUITE-INVALID-VALUE", "SOM-SUITE-TYPE"), text
    assert "\n" not in text and "[parser" in text and key in text
