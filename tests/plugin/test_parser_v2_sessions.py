"""Parser v2 in real pytest sessions (pytester): a v2 suite with one-, two- and three-call
golds reports the call-set metrics with intervals and gates, serial and under ``-n 2``; a
permuted correct answer is a full-call hit under ``order = "any"`` and a miss under
``"exact"``; ``sommelier rescore`` reproduces the run; a v1 run of the same split is refused
by the identity gate when compared against it.

Expected numbers, worked out by hand from the script below (golds: en-0 one call, en-1 two,
en-2 three; he-0 one, he-1 two):

- adapter, ``any``: en-0 right, en-1 right but permuted, en-2 two of three calls (one
  missing), he-0 right, he-1 right in order: full call 4/5, call count 4/5, call precision
  (exactly matched / predicted) 1+2+2+1+2 = 8 / 1+2+2+1+2 = 8, call recall 8 / 9;
- adapter, ``exact``: en-1's permutation pairs the calls by position: full call 3/5, recall
  6/9, precision 6/8;
- base: prose everywhere: full call 0/5, precision 0/0 (no predicted call), recall 0/9.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from plugin_helpers import read_json, read_jsonl
from suite_factory import make_row, write_suite

from pytest_sommelier.cli import main

W_PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
W_LONDON = {"name": "get_weather", "arguments": {"city": "London"}}
SEARCH = {"name": "search", "arguments": {"q": "tea", "filters": {"max": 3}}}
BOOK = {"name": "book", "arguments": {"room": 4}}
GOLDS: dict[str, list[dict[str, Any]]] = {
    "en-0": [W_PARIS],
    "en-1": [W_PARIS, W_LONDON],
    "en-2": [SEARCH, BOOK, W_LONDON],
    "he-0": [W_PARIS],
    "he-1": [W_PARIS, W_LONDON],
}
SOURCES = {"he-0": "en-0", "he-1": "en-1"}


def target(calls: list[dict[str, Any]]) -> str:
    return json.dumps(calls, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def rows() -> list[dict[str, Any]]:
    out = []
    for example_id, calls in GOLDS.items():
        prompt = f"<user>prompt {example_id}</user>\n"
        out.append(
            make_row(
                example_id, example_id[:2], SOURCES.get(example_id), calls[0],
                prompt_text=prompt, target_text=target(calls), full_text=prompt + target(calls),
            )
        )  # fmt: skip
    return out


ADAPTER = {
    "en-0": json.dumps(W_PARIS),
    "en-1": f"First {json.dumps(W_LONDON)} and then {json.dumps(W_PARIS)}.",
    "en-2": json.dumps([SEARCH, BOOK]),
    "he-0": json.dumps([W_PARIS]),
    "he-1": json.dumps([W_PARIS, W_LONDON]),
}
SCRIPT = {"adapter": ADAPTER, "base": {}}
GATES = [
    {"name": "counts", "arm": "adapter", "metric": "call_count_match", "min": 0.75},
    {"name": "recall", "arm": "adapter", "metric": "call_recall", "min": 0.8},
    {"name": "precise", "arm": "adapter", "metric": "call_precision", "min": 0.9, "slice": "he"},
]


def write(pytester: pytest.Pytester, order: str = "any", gates: list | None = None) -> None:
    parser = {"version": "v2", "order": order}
    write_suite(pytester.path / "suite", rows=rows(), parser=parser, gates=gates or GATES)
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return runner("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def metric(block: dict, name: str) -> tuple[int, int]:
    return block[name]["numerator"], block[name]["denominator"]


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_v2_suite_reports_call_set_metrics_with_intervals_and_gates(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    write(pytester)
    result = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    assert result.ret == 0, result.stdout.str()[-3000:]
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("missed")) == (4, 6)
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert adapter["parser"]["version"] == "sommelier.parser.v2"
    assert adapter["parser_version"] == "sommelier.parser.v2"
    assert metric(adapter["metrics"], "full_call_exact_match") == (4, 5)
    assert metric(adapter["metrics"], "valid_json_rate") == (5, 5)
    assert metric(adapter["metrics"], "call_count_match") == (4, 5)
    assert metric(adapter["metrics"], "call_precision") == (8, 8)
    assert metric(adapter["metrics"], "call_recall") == (8, 9)
    assert metric(adapter["slices"]["en"]["metrics"], "call_recall") == (5, 6)
    assert metric(base["metrics"], "full_call_exact_match") == (0, 5)
    assert metric(base["metrics"], "call_precision") == (0, 0)
    assert metric(base["metrics"], "call_recall") == (0, 9)
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    intervals = comparison["intervals"]["intervals"]
    for name in ("call_count_match", "call_precision", "call_recall", "full_call_exact_match"):
        assert name in intervals, sorted(intervals)
    assert intervals["call_count_match"]["discordant"] == {
        "candidate_only": 4,
        "reference_only": 0,
    }
    assert comparison["deltas"]["call_recall"] == pytest.approx(8 / 9)
    assert "call_recall" in adapter["paired_slices"]["he"]["intervals"]["intervals"]
    verdict = read_json(out / "gate_verdict.json")
    assert [g["passed"] for g in verdict["gates"]] == [True, True, True]
    generations = {
        g["example_id"]: g for g in read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")
    }
    assert generations["en-1"]["parsed_calls"] == [W_LONDON, W_PARIS]
    assert generations["en-1"]["miss_category"] is None
    assert generations["en-2"]["miss_category"] == "missing_call"
    result.stdout.fnmatch_lines(["*call recall (parser v2*", "*adapter*overall*0.889*8/9*"])
    page = next(out.rglob("*.html")).read_text(encoding="utf-8")
    assert "call_recall" in page and "call_count_match" in page
    assert adapter["misses"]["categories"]["missing_call"] == 1
    markdown = (out / "report" / "adapter-vs-base.md").read_text(encoding="utf-8")
    assert "`call_recall`: a call-set metric of parser v2" in markdown
    assert "extension scorer" not in markdown
    summary = (out / "report" / "summary.md").read_text(encoding="utf-8")
    assert "| call_count_match | call_precision | call_recall | n |" in summary
    row = "| adapter | overall | 1.000 | 0.800 | 0.800 | 0.947 | 0.800 | 0.800 | 1.000 | 0.889 |"
    assert row in summary


def test_a_permuted_answer_is_a_miss_under_exact_order(pytester: pytest.Pytester) -> None:
    write(pytester, order="exact", gates=[GATES[0]])
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()[-3000:]
    adapter = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    assert metric(adapter["metrics"], "full_call_exact_match") == (3, 5)
    assert metric(adapter["metrics"], "call_precision") == (6, 8)
    assert metric(adapter["metrics"], "call_recall") == (6, 9)
    assert metric(adapter["metrics"], "call_count_match") == (4, 5)


def test_a_gate_on_a_v2_metric_in_a_v1_suite_is_refused(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path / "suite", gates=[GATES[0]])
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(['*SOM-SUITE-UNKNOWN-METRIC*version = "v2"*'])


def test_a_v1_suite_refuses_a_split_with_several_gold_calls(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path / "suite", rows=rows())
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*SOM-SPLIT-GOLD-CALL*holds 2 calls, not exactly one*"])


def _artifacts(folder) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".md", ".jsonl") and p.name != "rescored.json"
    }


def test_rescore_reproduces_a_v2_run(pytester: pytest.Pytester) -> None:
    write(pytester)
    assert run(pytester).ret == 0
    out = pytester.path / "out"
    before = _artifacts(out)
    assert main(["rescore", str(out), "--out", str(pytester.path / "again")]) == 0
    assert _artifacts(pytester.path / "again") == before


ONE_CALL = {"en-0": W_PARIS, "en-1": SEARCH, "he-0": W_PARIS}


def _one_call_suite(pytester: pytest.Pytester, parser: dict | None) -> None:
    one = [
        make_row(i, i[:2], SOURCES.get(i), call, prompt_text=f"<user>prompt {i}</user>\n")
        for i, call in ONE_CALL.items()
    ]
    overrides = {} if parser is None else {"parser": parser}
    write_suite(pytester.path / "suite", rows=one, **overrides)
    script = {"adapter": {"en-0": json.dumps(W_PARIS), "en-1": json.dumps(BOOK)}, "base": {}}
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(script))


def test_one_call_golds_score_as_v1_and_v1_against_v2_is_not_compared(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    _one_call_suite(pytester, None)
    assert run(pytester).ret == 0
    shutil.move(pytester.path / "out", pytester.path / "v1")
    _one_call_suite(pytester, {"version": "v2"})
    assert run(pytester).ret == 0
    v1 = read_json(pytester.path / "v1" / "eval" / "adapter" / "evaluation_report.json")
    v2 = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    for name in ("valid_json_rate", "function_name_accuracy", "argument_exact_match",
                 "argument_f1", "full_call_exact_match"):  # fmt: skip
        assert v2["metrics"][name] == v1["metrics"][name], name
    assert "call_recall" not in v1["metrics"] and metric(v2["metrics"], "call_recall") == (1, 3)
    assert v1["parser"]["version"] == "sommelier.parser.v1"
    assert v2["parser"]["version"] == "sommelier.parser.v2"
    capsys.readouterr()
    code = main(["compare", str(pytester.path / "v1" / "eval" / "adapter"),
                 str(pytester.path / "out" / "eval" / "adapter")])  # fmt: skip
    assert code == 4
    assert "parser.version" in capsys.readouterr().err



def test_history_holds_the_added_metrics_with_their_intervals(pytester: pytest.Pytester) -> None:
    from pytest_sommelier.data.store.history_runs import history_runs

    write(pytester)
    assert run(pytester, "--sommelier-autosave").ret == 0
    (stored,) = history_runs(pytester.path / ".sommelier")
    overall = stored["arms"]["adapter"]["values"]["overall"]
    assert overall["call_recall"]["value"] == pytest.approx(8 / 9)
    low, high = overall["call_recall"]["lower"], overall["call_recall"]["upper"]
    assert low is not None and high is not None and low <= 8 / 9 <= high
    assert list(overall)[:8] == [
        "valid_json_rate", "function_name_accuracy", "argument_exact_match", "argument_f1",
        "full_call_exact_match", "call_count_match", "call_precision", "call_recall",
    ]  # fmt: skip
