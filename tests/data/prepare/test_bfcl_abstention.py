"""``sommelier import bfcl`` of BFCL's abstention categories: ``irrelevance`` and
``live_irrelevance`` as ``no_call``, ``live_relevance`` as ``any_call``; hand-written rows in
tmp_path, plus BFCL v4's real data when the bfcl_eval wheel is present
(``pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl``, or ``SOMMELIER_BFCL_WHEEL``)."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.bfcl import import_bfcl, import_category, locate_source
from pytest_sommelier.data.prepare.formatting import read_prepared, validate_prepared_row
from pytest_sommelier.errors import InputError

WHEEL_NAME = "bfcl_eval-2026.3.23-py3-none-any.whl"
CANDIDATES = [
    Path(os.environ.get("SOMMELIER_BFCL_WHEEL", "/nonexistent")),
    Path("/work/bfcl") / WHEEL_NAME,
    Path("/tmp/bfcl") / WHEEL_NAME,
]
REAL_WHEEL = next((path for path in CANDIDATES if path.is_file()), CANDIDATES[-1])

FUNCTION = {
    "name": "math.sum",
    "description": "Sum numbers.",
    "parameters": {"type": "dict", "properties": {"numbers": {"type": "array",
                                                             "items": {"type": "float"}}},
                   "required": ["numbers"]},
}  # fmt: skip


def question(example_id: str, *roles: str, functions: list | None = None) -> dict:
    messages = [{"role": role, "content": f"{role} text"} for role in roles or ("user",)]
    return {"id": example_id, "question": [messages],
            "function": [FUNCTION] if functions is None else functions}  # fmt: skip


def wheel(tmp_path: Path, category: str, rows: list[dict]) -> Path:
    path = tmp_path / "bfcl_eval-0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"bfcl_eval/data/BFCL_v4_{category}.json",
                         "".join(json.dumps(row) + "\n" for row in rows))  # fmt: skip
    return path


def test_irrelevance_rows_are_no_call_without_a_possible_answer_file(tmp_path: Path) -> None:
    source = wheel(tmp_path, "irrelevance", [question("irrelevance_0"), question("irrelevance_1")])
    out = tmp_path / "out.jsonl"
    (result,) = import_bfcl(["irrelevance"], source, out).categories
    assert len(result.rows) == 2 and result.skipped == []
    first, _ = read_prepared(out)
    assert (first.expect, first.gold_call) == ("no_call", None)
    assert first.tools[0]["parameters"]["type"] == "object"  # dict -> object, as for calls


def test_live_relevance_rows_are_any_call(tmp_path: Path) -> None:
    source = wheel(tmp_path, "live_relevance", [question("live_relevance_0-0-0")])
    (result,) = import_bfcl(["live_relevance"], source, tmp_path / "o.jsonl").categories
    assert result.rows[0]["expect"] == "any_call" and "gold_call" not in result.rows[0]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (question("live_irrelevance_1-0-0", "user", "assistant", "user"), "multi_turn"),
        (question("live_irrelevance_2-0-0", "system", "user"), "system_message"),
        (question("live_irrelevance_3-0-0", functions=[]), "no_tools"),
        (question("live_irrelevance_4-0-0", functions=[FUNCTION, FUNCTION]), "duplicate_tool"),
    ],
)
def test_rows_the_method_cannot_score_are_named_skips(tmp_path: Path, row, reason) -> None:
    source = wheel(tmp_path, "live_irrelevance", [question("live_irrelevance_0-0-0"), row])
    (result,) = import_bfcl(["live_irrelevance"], source, tmp_path / "o.jsonl").categories
    assert [(s.example_id, s.reason) for s in result.skipped] == [(row["id"], reason)]
    assert str(source) in result.skipped[0].where


def test_a_system_turn_is_kept_for_the_native_policy(tmp_path: Path) -> None:
    source = wheel(tmp_path, "live_irrelevance", [question("live_irrelevance_2-0-0", "system",
                                                           "user")])  # fmt: skip
    outcome = import_bfcl(["live_irrelevance"], source, tmp_path / "o.jsonl",
                          policy="sommelier.native-tools.v1")  # fmt: skip
    (row,) = outcome.categories[0].rows
    assert row["system"] == "system text" and row["query"] == "user text"


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"id": "irrelevance_0", "question": "no", "function": [FUNCTION]}, "question"),
        ({"id": "irrelevance_0", "question": [[{"role": "user"}]], "function": [FUNCTION]},
         "question[0]"),
        ({"id": "irrelevance_0", "question": [[{"role": "user", "content": "x"}]],
          "function": {"name": "f"}}, "function"),
        ({"id": "irrelevance_0", "question": [[{"role": "user", "content": "x"}]],
          "function": [{"name": "f"}]}, "function[0]"),
    ],
)  # fmt: skip
def test_hostile_rows_are_one_line(tmp_path: Path, row: dict, field: str) -> None:
    source = wheel(tmp_path, "irrelevance", [row])
    with pytest.raises(InputError) as info:
        import_bfcl(["irrelevance"], source, tmp_path / "o.jsonl")
    assert info.value.code == "SOM-BFCL-FIELD" and f"field {field!r}" in str(info.value)
    assert "BFCL_v4_irrelevance.json:1" in str(info.value)
    assert not (tmp_path / "o.jsonl").exists()


def test_unknown_category_names_both_kinds(capsys) -> None:
    assert main(["import", "bfcl", "--category", "relevance", "--out", "/tmp/x.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "SOM-BFCL-CATEGORY" in err and "irrelevance" in err


# ---------------------------------------------------------------- the real data


@pytest.mark.skipif(not REAL_WHEEL.exists(), reason=f"BFCL wheel absent: {REAL_WHEEL}")
@pytest.mark.parametrize(
    ("category", "policy", "converted", "skipped"),
    [
        ("irrelevance", None, 240, {}),
        ("live_irrelevance", None, 830, {"multi_turn": 9, "no_tools": 4, "system_message": 41}),
        ("live_irrelevance", "sommelier.native-tools.v1", 871, {"multi_turn": 9, "no_tools": 4}),
        ("live_relevance", None, 15, {"system_message": 1}),
        ("live_relevance", "sommelier.native-tools.v1", 16, {}),
    ],
)
def test_real_bfcl_v4_abstention_categories(category, policy, converted, skipped) -> None:
    keep_system = policy is not None
    result = import_category(locate_source(REAL_WHEEL), category, keep_system=keep_system)
    assert len(result.rows) == converted
    counts: dict[str, int] = {}
    for item in result.skipped:
        counts[item.reason] = counts.get(item.reason, 0) + 1
        assert item.example_id.startswith(category) and item.detail
    assert counts == skipped
    expect = "any_call" if category == "live_relevance" else "no_call"
    for number, row in enumerate(result.rows, start=1):
        example = validate_prepared_row(row, f"row {number}", number)
        assert example.expect == expect and example.gold_call is None
