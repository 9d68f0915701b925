"""A parser v2 suite made end to end by the importer (pytester): xLAM rows with one-, two- and
three-call answers, ``sommelier import xlam --parser v2`` then ``sommelier format --parser v2``,
run serial and under ``-n 2``. The adapter answers every row correctly, the two- and three-call
rows in another order: every answer is a full-call hit under ``order = "any"``, and the
permuted ones are misses under ``"exact"`` (the one-call row stays a hit).

Expected, from the script: ``any``: full call 3/3, call recall 6/6; ``exact``: full call 1/3,
and by position the two-call answer (B, A) against (A, B) matches nothing, the three-call one
(C, A, B) against (A, B, C) nothing: call recall 1/6. The base writes prose: 0/3.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from plugin_helpers import read_json
from suite_factory import FAKE_REVISION, write_suite
from tool_templates import build_tokenizer

from pytest_sommelier.data.prepare.formatting import format_file
from pytest_sommelier.data.prepare.importers.common import ImportOptions
from pytest_sommelier.data.prepare.importers.driver import import_file

TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
TOOLS = [
    {"name": "get_weather", "description": "Weather.",
     "parameters": {"city": {"type": "str", "description": "city"}}},
    {"name": "set_timer", "description": "Timer.",
     "parameters": {"minutes": {"type": "int", "description": "minutes"}}},
]  # fmt: skip
PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
LONDON = {"name": "get_weather", "arguments": {"city": "London"}}
FIVE = {"name": "set_timer", "arguments": {"minutes": 5}}
ANSWERS = {  # xLAM row -> (its gold calls, the adapter's answer)
    "one": ([PARIS], [PARIS]),
    "two": ([PARIS, LONDON], [LONDON, PARIS]),
    "three": ([PARIS, LONDON, FIVE], [FIVE, PARIS, LONDON]),
}


def imported_rows(folder: Path) -> list[dict[str, Any]]:
    """The formatted rows of the xLAM rows, through the importer and the formatter (v2)."""
    source = folder / "xlam.jsonl"
    source.write_text("".join(
        json.dumps({"id": name, "query": f"Do {name}", "tools": json.dumps(TOOLS),
                    "answers": json.dumps(gold)}) + "\n"
        for name, (gold, _) in ANSWERS.items()), encoding="utf-8")  # fmt: skip
    prepared = folder / "prepared.jsonl"
    import_file("xlam", source, prepared, ImportOptions(parser="v2", id_field="id"))
    return format_file(prepared, folder / "formatted.jsonl", tokenizer=build_tokenizer(TEMPLATE),
                       tokenizer_id="fake-org/fake-model", tokenizer_revision=FAKE_REVISION,
                       split="test",
                       policy="sommelier.tools-in-system.v2", parser="v2")  # fmt: skip


def write(pytester: pytest.Pytester, order: str) -> None:
    rows = imported_rows(pytester.path)
    write_suite(pytester.path / "suite", rows=rows, suite={"slices": ["en"]},
                parser={"version": "v2", "order": order},
                gates=[{"name": "full", "arm": "adapter", "metric": "full_call_exact_match",
                        "min": 0.5}])  # fmt: skip
    script = {"adapter": {name: json.dumps(answer) for name, (_, answer) in ANSWERS.items()},
              "base": {}}  # fmt: skip
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(script))


def metric(report: dict, name: str) -> tuple[int, int]:
    return report["metrics"][name]["numerator"], report["metrics"][name]["denominator"]


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
@pytest.mark.parametrize("order", ["any", "exact"])
def test_an_imported_v2_suite_scores_permuted_answers_by_its_order(
    pytester: pytest.Pytester, xdist: bool, order: str
) -> None:
    write(pytester, order)
    runner = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = runner("-p", "no:cacheprovider", "--sommelier-out", "out",
                    *(["-n", "2"] if xdist else []))  # fmt: skip
    assert result.ret == (0 if order == "any" else 1), result.stdout.str()[-3000:]
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert adapter["parser"]["version"] == "sommelier.parser.v2"
    expected = {"any": ((3, 3), (6, 6)), "exact": ((1, 3), (1, 6))}[order]
    assert metric(adapter, "full_call_exact_match") == expected[0]
    assert metric(adapter, "call_recall") == expected[1]
    assert metric(adapter, "call_count_match") == (3, 3)
    assert metric(base, "full_call_exact_match") == (0, 3)
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert "full_call_exact_match" in comparison["intervals"]["intervals"]
    verdict = read_json(out / "gate_verdict.json")
    assert [gate["passed"] for gate in verdict["gates"]] == [order == "any"]
