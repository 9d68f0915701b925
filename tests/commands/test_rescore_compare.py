"""Stored runs: rescore, compare, --sommelier-baseline, and a three-arm suite (pytester)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, write_scripted_suite

from pytest_sommelier.cli import main

V1 = {k: call_text(v) for k, v in GOLD.items() if k in ("en-0", "he-0")}
V3 = {k: call_text(v) for k, v in GOLD.items() if k != "he-1"}
SCRIPT = {"base": {}, "v1": V1, "v3": V3}
THREE_ARMS = {"base": {}, "v1": {"adapter": "adapter"}, "v3": {"adapter": "adapter"}}
COMPARISONS = [
    {"candidate": "v3", "reference": "base"},
    {"candidate": "v3", "reference": "v1"},
]


def run(pytester: pytest.Pytester, out: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", out, *args)


def all_json(folder: Path) -> dict[str, str]:
    """Every report of a run folder (``rescored.json``, the record of a rescore, left out)."""
    return {
        str(p.relative_to(folder)): p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix in (".json", ".md", ".jsonl") and p.name != "rescored.json"
    }


def test_three_arms_two_comparisons(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS)
    result = run(pytester, "out")
    assert result.ret == 0
    out = pytester.path / "out"
    v3_base = read_json(out / "report" / "v3-vs-base.json")
    v3_v1 = read_json(out / "report" / "v3-vs-v1.json")
    # v3 hits 6 of 7, v1 hits 2 of 7, base 0 of 7
    assert v3_base["deltas"]["full_call_exact_match"] == pytest.approx(6 / 7)
    assert v3_v1["deltas"]["full_call_exact_match"] == pytest.approx(4 / 7)
    assert v3_v1["mcnemar"]["candidate_only"] == 4 and v3_v1["mcnemar"]["reference_only"] == 0
    result.stdout.fnmatch_lines(["*v3-vs-base*", "*v3-vs-v1*"])


def test_rescore_reproduces_reports_exactly(pytester: pytest.Pytester) -> None:
    gates = [{"name": "g", "arm": "v3", "metric": "full_call_exact_match", "min": 0.5}]
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS, gates=gates)
    run(pytester, "out")
    out = pytester.path / "out"
    before = all_json(out)
    assert main(["rescore", str(out), "--out", str(pytester.path / "again")]) == 0
    assert all_json(pytester.path / "again") == before
    assert main(["rescore", str(out)]) == 0
    assert all_json(out) == before


def test_rescore_refuses_an_edited_prompt_digest(pytester: pytest.Pytester, capsys) -> None:
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS)
    run(pytester, "out")
    out = pytester.path / "out"
    path = out / "eval" / "v1" / "generations.en.jsonl"
    records = read_jsonl(path)
    records[1]["prompt_sha256"] = "0" * 64
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    verdict_before = (out / "report" / "v3-vs-v1.json").read_text()
    assert main(["rescore", str(out)]) == 5
    err = capsys.readouterr().err
    assert "SOM-REPORT-PROMPT-DIGEST" in err and "arm v1, slice en, example en-1" in err
    assert (out / "report" / "v3-vs-v1.json").read_text() == verdict_before


def test_rescore_uses_raw_text_not_the_stored_parse(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS)
    run(pytester, "out")
    out = pytester.path / "out"
    path = out / "eval" / "v1" / "generations.en.jsonl"
    records = read_jsonl(path)
    assert records[1]["example_id"] == "en-1" and records[1]["parse_status"] == "no_json"
    records[1]["raw_text"] = call_text(GOLD["en-1"])  # what a re-run of the parser sees
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["rescore", str(out)]) == 0
    report = read_json(out / "eval" / "v1" / "evaluation_report.json")
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 3


def test_compare_two_runs_and_refuse_other_conditions(pytester: pytest.Pytester, capsys) -> None:
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS)
    run(pytester, "one")
    assert main(["compare", "one/eval/v3", "one/eval/v1", "--out", "cmp"]) == 0
    report = read_json(pytester.path / "cmp" / "v3-vs-v1.json")
    assert report["deltas"]["full_call_exact_match"] == pytest.approx(4 / 7)
    capsys.readouterr()
    # a second run under different decoding cannot be compared with the first
    write_scripted_suite(
        pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS, decoding={"max_new_tokens": 9}
    )
    run(pytester, "two")
    assert main(["compare", "two/eval/v3", "one/eval/v1"]) == 4
    err = capsys.readouterr().err
    assert "SOM-COMPARE-IDENTITY" in err and "config_sha256" in err


def test_baseline_from_an_earlier_run_gates_a_new_run(pytester: pytest.Pytester) -> None:
    gates = [
        {
            "name": "beats-released",
            "candidate": "v3",
            "reference": "v1",
            "metric": "full_call_exact_match",
            "delta_at_least": 0.5,
        }
    ]
    comparisons = [{"candidate": "v3", "reference": "v1"}]
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=comparisons, gates=gates)
    run(pytester, "released")
    calls = pytester.path / "suite" / "calls.jsonl"
    calls.unlink()
    result = run(pytester, "new", "--sommelier-baseline", "released/eval/v1")
    assert result.ret == 0
    arms_called = {json.loads(line)["arm"] for line in calls.read_text().splitlines()}
    assert arms_called == {"base", "v3"}  # v1 came from the stored run
    verdict = read_json(pytester.path / "new" / "gate_verdict.json")
    assert verdict["verdict"] == "pass"
    assert verdict["gates"][0]["observed"] == pytest.approx(4 / 7)
    # a baseline measured under other conditions is refused by the identity gate
    shutil.rmtree(pytester.path / "new")
    write_scripted_suite(
        pytester,
        SCRIPT,
        arms=THREE_ARMS,
        comparisons=comparisons,
        gates=gates,
        decoding={"max_new_tokens": 9},
    )
    result = run(pytester, "new", "--sommelier-baseline", "released/eval/v1")
    assert result.ret == 1
    verdict = read_json(pytester.path / "new" / "gate_verdict.json")
    assert verdict["verdict"] == "fail"
    assert "SOM-COMPARE-IDENTITY" in verdict["gates"][0]["reason"]
    assert not (pytester.path / "new" / "report" / "v3-vs-v1.json").exists()


def test_baseline_for_an_unknown_arm_is_an_error(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, arms=THREE_ARMS, comparisons=COMPARISONS)
    run(pytester, "one")
    result = run(pytester, "two", "--sommelier-baseline", "nope=one/eval/v1")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*SOM-BASELINE-ARM*no arm 'nope'*"])
