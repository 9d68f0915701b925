"""Abstention examples in real pytest sessions (pytester): a split mixing call and no-call
examples, scored conservatively, with gates on the abstention metrics and rescore equality.

The expected numbers are worked out by hand from the script below:

- adapter: the four call examples hit (full call 4/4); of the four no-call examples two
  abstain (prose), one is ``attempted_call`` (an unparseable ``<tool_call>``), one is
  ``over_call`` (a valid call): abstention 2/4, decision (4 calls + 2 abstentions) 6/8;
- base: prose everywhere: every call example misses (0/4), every no-call example abstains
  (abstention 4/4), decision 4/8.
"""

from __future__ import annotations

import json

import pytest
from fakes import FAKE_CONFTEST
from plugin_helpers import GOLD, call_text, read_json, read_jsonl
from suite_factory import make_row, write_suite

from pytest_sommelier.cli import main

MARKERS = ["<tool_call>", "</tool_call>"]
NO_CALL = ("en-n0", "en-n1", "he-n0", "he-n1")
SOURCES = {"he-0": "en-0", "he-1": "en-1", "he-n0": "en-n0", "he-n1": "en-n1"}


def rows() -> list[dict]:
    out = []
    for example_id in ("en-0", "en-1", "en-n0", "en-n1", "he-0", "he-1", "he-n0", "he-n1"):
        prompt = f"<user>prompt {example_id}</user>\n"
        if example_id in NO_CALL:
            row = make_row(
                example_id, example_id[:2], SOURCES.get(example_id), prompt_text=prompt,
                schema_version="sommelier.formatted_example.v3", target_text="",
                full_text=prompt, expect="no_call", call_markers=MARKERS,
            )  # fmt: skip
        else:
            row = make_row(example_id, example_id[:2], SOURCES.get(example_id),
                           GOLD[example_id], prompt_text=prompt)  # fmt: skip
        out.append(row)
    return out


ADAPTER = {
    **{i: call_text(GOLD[i]) for i in ("en-0", "en-1", "he-0", "he-1")},
    "en-n0": "Sorry, none of my tools can book a flight.",
    "en-n1": '<tool_call>\n{"name": "search", "arguments": {"q": "flights"',
    "he-n0": call_text({"name": "search", "arguments": {"q": "טיסות"}}),
    "he-n1": "מצטער, אין לי כלי שמתאים לבקשה.",
}
SCRIPT = {"adapter": ADAPTER, "base": {}}


def write(pytester: pytest.Pytester, gates: list[dict] | None = None) -> None:
    overrides = {"gates": gates} if gates else {}
    write_suite(pytester.path / "suite", rows=rows(), **overrides)
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return runner("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def metric(block: dict, name: str) -> tuple[int, int]:
    return block[name]["numerator"], block[name]["denominator"]


GATES = [
    {"name": "abstains", "arm": "adapter", "metric": "abstention_accuracy", "min": 0.5},
    {"name": "decides", "arm": "adapter", "metric": "decision_accuracy", "min": 0.75},
    {
        "name": "no-worse-abstaining",
        "candidate": "adapter",
        "reference": "base",
        "metric": "abstention_accuracy",
        "ci_lower_at_least": -1.0,
    },
]


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_mixed_split_reports_abstention_metrics(pytester: pytest.Pytester, xdist: bool) -> None:
    write(pytester, GATES)
    result = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    assert result.ret == 0, result.stdout.str()[-3000:]
    outcomes = result.parseoutcomes()
    # hits: adapter 4 calls + 2 abstentions, base 4 abstentions
    assert (outcomes.get("passed"), outcomes.get("missed")) == (10, 6)
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert metric(adapter["metrics"], "full_call_exact_match") == (4, 4)
    assert metric(adapter["metrics"], "valid_json_rate") == (4, 4)
    assert metric(adapter["metrics"], "abstention_accuracy") == (2, 4)
    assert metric(adapter["metrics"], "decision_accuracy") == (6, 8)
    assert metric(base["metrics"], "full_call_exact_match") == (0, 4)
    assert metric(base["metrics"], "abstention_accuracy") == (4, 4)
    assert metric(base["metrics"], "decision_accuracy") == (4, 8)
    assert metric(adapter["slices"]["he"]["metrics"], "abstention_accuracy") == (1, 2)
    assert adapter["slices"]["en"]["expects"] == {"call": 2, "no_call": 2, "any_call": 0}
    categories = adapter["misses"]["categories"]
    assert (categories["attempted_call"], categories["over_call"], adapter["misses"]["misses"]) == (
        1,
        1,
        2,
    )
    generations = {
        g["example_id"]: g for g in read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")
    }
    # an unparseable <tool_call> is never an abstention
    assert generations["en-n1"]["miss_category"] == "attempted_call"
    assert generations["en-n0"]["miss_category"] is None
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert comparison["deltas"]["abstention_accuracy"] == pytest.approx(-0.5)
    interval = comparison["intervals"]["intervals"]["abstention_accuracy"]
    assert interval["discordant"] == {"candidate_only": 0, "reference_only": 2}
    gap = adapter["paired_slices"]["he"]
    assert "abstention_accuracy" in gap["intervals"]["intervals"]
    verdict = read_json(out / "gate_verdict.json")
    assert [g["passed"] for g in verdict["gates"]] == [True, True, True]
    result.stdout.fnmatch_lines(["*calls*no_call*any_call*", "*abstention accuracy*"])
    # the gaps table counts the pairs full_call's gap is over: the 2 call pairs, not all 4
    assert gap["pairs"] == 4
    (row,) = [x for x in result.stdout.lines if x.strip().startswith("adapter  he - en")]
    assert row.split()[4] == "2", row


def test_gate_on_abstention_fails(pytester: pytest.Pytester) -> None:
    gates = [{"name": "abstains", "arm": "adapter", "metric": "abstention_accuracy", "min": 0.75}]
    write(pytester, gates)
    result = run(pytester)
    assert result.ret == 1
    (gate,) = read_json(pytester.path / "out" / "gate_verdict.json")["gates"]
    assert gate["passed"] is False and gate["observed"] == pytest.approx(0.5)
    result.stdout.fnmatch_lines(["*FAIL abstains*"])


def test_gate_on_abstention_without_abstention_examples_is_refused(
    pytester: pytest.Pytester,
) -> None:
    gates = [{"name": "abstains", "arm": "adapter", "metric": "abstention_accuracy", "min": 0.5}]
    write_suite(pytester.path / "suite", gates=gates)
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))
    result = run(pytester)
    assert result.ret != 0
    result.stdout.fnmatch_lines(['*SOM-SUITE-UNKNOWN-METRIC*expect = "no_call"*'])


def test_suite_without_abstention_examples_has_no_abstention_metrics(
    pytester: pytest.Pytester,
) -> None:
    write_suite(pytester.path / "suite")
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(SCRIPT))
    assert run(pytester).ret == 0
    report = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    assert "abstention_accuracy" not in report["metrics"]
    assert "decision_accuracy" not in report["metrics"]
    assert "expects" not in report["slices"]["en"]


def test_rescore_reproduces_an_abstention_run(pytester: pytest.Pytester) -> None:
    write(pytester, GATES)
    run(pytester)
    out = pytester.path / "out"
    before = {
        str(p.relative_to(out)): p.read_text()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".md", ".jsonl") and p.name != "rescored.json"
    }
    assert main(["rescore", str(out), "--out", str(pytester.path / "again")]) == 0
    again = pytester.path / "again"
    after = {
        str(p.relative_to(again)): p.read_text()
        for p in sorted(again.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".md", ".jsonl") and p.name != "rescored.json"
    }
    assert after == before
