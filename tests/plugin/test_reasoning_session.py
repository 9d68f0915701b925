"""Real pytest sessions (pytester) where the adapter reasons before it calls and the base does
not: under ``[parser] reasoning = "think"`` the reasoning never reaches parser v1, both arms are
compared fairly, the reports and page show the reasoning figures, and ``sommelier rescore``
re-derives everything from ``raw_text``. Without the key the same outputs are misses.

The expected numbers are worked out by hand from the script below.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, write_scripted_suite

from pytest_sommelier.cli import main

EN = ("en-0", "en-1", "en-2", "en-3")
# the adapter reasons about brackets and quotes before every call; en-3's reasoning never
# closes. The base answers en-0 and en-1 directly and nothing else.
ADAPTER = {
    "en-0": '<think>\nThe list is [1, 2] and {"a": 1}.\n</think>\n\n' + call_text(GOLD["en-0"]),
    "en-1": "  <think>[</think>" + call_text(GOLD["en-1"]),
    "en-2": "<think>ok</think>" + call_text(GOLD["en-2"]),
    "en-3": "<think>still thinking about [room] " + call_text(GOLD["en-3"]),
}
BASE = {k: call_text(GOLD[k]) for k in ("en-0", "en-1")}
SCRIPT = {"adapter": ADAPTER, "base": BASE}


def write(pytester: pytest.Pytester, reasoning: str | None) -> Path:
    parser = {} if reasoning is None else {"parser": {"reasoning": reasoning}}
    return write_scripted_suite(pytester, SCRIPT, ids=EN, suite={"slices": ["en"]}, **parser)


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return runner("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def all_json(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".md", ".jsonl")
        and p.name != "rescored.json"
    }


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_a_reasoning_adapter_is_compared_fairly(pytester: pytest.Pytester, xdist: bool) -> None:
    write(pytester, "think")
    result = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    assert result.ret == 0, result.stdout.str()
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    # adapter: 3 of 4 (en-3 never closed its reasoning); base: 2 of 4
    assert adapter["metrics"]["full_call_exact_match"]["numerator"] == 3
    assert base["metrics"]["full_call_exact_match"]["numerator"] == 2
    rule = {"start": "<think>", "end": "</think>"}
    assert adapter["parser"] == base["parser"] == {"version": "sommelier.parser.v1",
                                                   "reasoning": rule}
    figures = adapter["reasoning"]
    assert (figures["outputs"], figures["reasoned"], figures["unterminated"]) == (4, 4, 1)
    assert base["reasoning"]["reasoned"] == 0
    assert adapter["misses"]["categories"]["reasoning_unterminated"] == 1
    records = {r["example_id"]: r for r in read_jsonl(out / "eval/adapter/generations.en.jsonl")}
    assert records["en-1"]["reasoning_text"] == "["
    assert records["en-3"]["content_text"] is None
    assert records["en-3"]["miss_category"] == "reasoning_unterminated"
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert comparison["shared"]["parser"]["reasoning"] == rule
    assert comparison["deltas"]["full_call_exact_match"] == pytest.approx(1 / 4)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "reasoned" in page
    summary = (out / "report" / "adapter-vs-base.md").read_text(encoding="utf-8")
    assert "reasoning" in summary.lower()
    result.stdout.fnmatch_lines(
        ["reasoning (<think>...</think>*", "*adapter 4 of 4 reasoned*1 never closed*"]
    )


def test_without_the_key_the_reasoning_reaches_the_parser(pytester: pytest.Pytester) -> None:
    write(pytester, None)
    assert run(pytester).ret == 0
    adapter = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    # v1 takes the first bracket: en-0 and en-1 (brackets in the reasoning) and en-3 miss;
    # en-2's reasoning holds no bracket, so v1 reads the call after it
    assert adapter["metrics"]["full_call_exact_match"]["numerator"] == 1
    assert adapter["parser"]["reasoning"] is None and "reasoning" not in adapter


def test_rescore_rederives_the_split_and_reproduces_every_report(
    pytester: pytest.Pytester,
) -> None:
    write(pytester, "think")
    assert run(pytester).ret == 0
    out = pytester.path / "out"
    before = all_json(out)
    assert main(["rescore", str(out), "--out", str(pytester.path / "again")]) == 0
    assert all_json(pytester.path / "again") == before
    # an edited record (its reasoning moved into the content) is re-derived from raw_text
    path = out / "eval" / "adapter" / "generations.en.jsonl"
    rows = read_jsonl(path)
    rows[0].update(reasoning_text=None, content_text=rows[0]["raw_text"], parse_status="ok")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["rescore", str(out), "--out", str(pytester.path / "third")]) == 0
    again = read_jsonl(pytester.path / "third" / "eval" / "adapter" / "generations.en.jsonl")
    assert again[0]["reasoning_text"].startswith("\nThe list is [1, 2]")


def test_a_stored_run_under_another_rule_is_not_compared(pytester: pytest.Pytester) -> None:
    write(pytester, "think")
    assert run(pytester).ret == 0
    shutil.move(pytester.path / "out", pytester.path / "think")
    suite = write(pytester, None)
    assert run(pytester).ret == 0
    assert suite.exists()
    code = main(["compare", str(pytester.path / "think" / "eval" / "adapter"),
                 str(pytester.path / "out" / "eval" / "adapter")])
    assert code == 4
