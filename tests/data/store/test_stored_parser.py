"""The parser a resolved suite records (``parser: {version, order}``, written under v2 only):
read back by ``suite_from_resolved`` so a re-score parses as the run did; absent is v1; a
hostile value is one ``SOM-STORED-FIELD`` line."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import write_suite

from pytest_sommelier.data.store.stored import suite_from_resolved
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import InputError


@pytest.mark.parametrize("order", ["any", "exact"])
def test_a_v2_suite_records_its_parser_and_a_v1_suite_records_none(
    tmp_path: Path, order: str
) -> None:
    v1 = suite_identity(load_suite(write_suite(tmp_path / "one")))
    assert "parser" not in v1
    assert suite_from_resolved(v1, tmp_path).parser_version == "v1"
    suite = load_suite(write_suite(tmp_path / "two", parser={"version": "v2", "order": order}))
    resolved = suite_identity(suite)
    assert resolved["parser"] == {"version": "v2", "order": order}
    back = suite_from_resolved(resolved, tmp_path)
    assert (back.parser_version, back.parser_order) == ("v2", order)


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
                    st.sampled_from(["v1", "v2", "any", "exact", "V2"]))  # fmt: skip
HOSTILE = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=2),
    st.dictionaries(st.sampled_from(["version", "order", "x"]), SCALARS, max_size=3),
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE)
def test_hostile_recorded_parsers_are_read_or_refused_in_one_line(value: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        resolved = suite_identity(load_suite(write_suite(folder)))
        resolved["parser"] = value
        valid = (
            isinstance(value, dict)
            and value.get("version") in ("v1", "v2")
            and value.get("order") in ("any", "exact")
        )
        if value is None or valid:
            suite = suite_from_resolved(resolved, Path(folder))
            if valid:
                assert (suite.parser_version, suite.parser_order) == (
                    value["version"],
                    value["order"],
                )
            return
        with pytest.raises(InputError) as info:
            suite_from_resolved(resolved, Path(folder))
    assert info.value.code == "SOM-STORED-FIELD" and "\n" not in str(info.value)
    assert "parser" in str(info.value)
