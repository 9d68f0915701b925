"""An importer's ``convert`` held to its contract on every row (``data.prepare.importers.
driver``): whatever it raises (but a ``SommelierError``) or returns (but a ``Candidate`` or a
``Skip``), on whichever row, the import is one ``SOM-IMPORT-CONTRACT`` line naming the importer,
its source and the file and line, and no output file is written."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier import registry as reg
from pytest_sommelier.data.prepare.importers.common import Candidate, Importer, Skip
from pytest_sommelier.data.prepare.importers.driver import import_file
from pytest_sommelier.errors import InputError

SOURCE = "hook pytest_sommelier_add_importers of conftest.py"
TOOL = {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}


def good(row: dict[str, Any], where: str) -> Candidate:
    return Candidate(query=f"q {row['n']}", tools=[TOOL], gold_call={"name": "f", "arguments": {}})


EXCEPTIONS = st.sampled_from([TypeError, KeyError, ValueError, RuntimeError, ZeroDivisionError,
                              AttributeError, RecursionError, UnicodeError])  # fmt: skip
RETURNED = st.one_of(st.none(), st.integers(), st.text(max_size=20),
                     st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
                     st.builds(lambda: (1, 2)), st.builds(object))  # fmt: skip


@settings(max_examples=examples(60), deadline=None)
@given(rows=st.integers(1, 5), bad_row=st.integers(0, 4), raises=st.booleans(),
       exception=EXCEPTIONS, returned=RETURNED, message=st.text(max_size=80))  # fmt: skip
def test_a_misbehaving_converter_is_one_line_naming_it_and_the_row(
    rows: int, bad_row: int, raises: bool, exception: type[Exception], returned: object,
    message: str,
) -> None:
    bad_row %= rows

    def convert(row: dict[str, Any], where: str) -> Any:
        if row["n"] != bad_row:
            return good(row, where)
        if raises:
            raise exception(message)
        return returned

    found = reg.merge("importers", [(SOURCE, {"odd": Importer("odd rows", convert)})])
    with tempfile.TemporaryDirectory() as folder:
        path, out = Path(folder) / "rows.jsonl", Path(folder) / "out.jsonl"
        path.write_text("".join(f'{{"n": {n}}}\n' for n in range(rows)), encoding="utf-8")
        with pytest.raises(InputError) as caught:
            import_file("odd", path, out, importers=found)
        text = str(caught.value)
        assert caught.value.code == "SOM-IMPORT-CONTRACT", text
        assert "\n" not in text and "'odd'" in text and SOURCE in text
        assert f"rows.jsonl:{bad_row + 1}" in text
        assert not out.exists()


def test_a_skip_and_a_candidate_are_the_contract(tmp_path: Path) -> None:
    def convert(row: dict[str, Any], where: str) -> Candidate | Skip:
        return Skip("unsupported", "odd row") if row["n"] % 2 else good(row, where)

    found = reg.merge("importers", [(SOURCE, {"odd": Importer("odd rows", convert)})])
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(f'{{"n": {n}}}\n' for n in range(4)), encoding="utf-8")
    result = import_file("odd", path, tmp_path / "out.jsonl", importers=found)
    assert result.written == 2 and len(result.skipped) == 2
