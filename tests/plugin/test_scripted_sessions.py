"""Real pytest sessions (pytester) over a suite whose model is a scripted fake.

The expected numbers are worked out by hand from the script below, not by the project's code.
"""

from __future__ import annotations

import json

import pytest
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, write_scripted_suite

ADAPTER = {
    "en-0": call_text(GOLD["en-0"]),
    "en-1": call_text(GOLD["en-1"], prose="Sure! Here is the call: "),
    "en-2": call_text({"name": "nope", "arguments": {}}),
    "en-3": call_text({"name": "book", "arguments": {"room": "4", "late": True}}),
    "he-0": call_text(GOLD["he-0"]),
    "he-1": '{"name": "search", "arguments": {"q": "tea"',
    "he-3": call_text(GOLD["he-3"]),
}
BASE = {"en-0": call_text(GOLD["en-0"])}
SCRIPT = {"adapter": ADAPTER, "base": BASE}

# Hand-derived (see the module docstring): adapter over 7 examples.
ADAPTER_OVERALL = {
    "valid_json_rate": (6, 7),
    "function_name_accuracy": (5, 7),
    "argument_exact_match": (5, 7),
    "argument_f1": (22, 27),  # gold pairs 15, predicted 12, matched 11
    "full_call_exact_match": (4, 7),
}
BASE_OVERALL = {
    "valid_json_rate": (1, 7),
    "function_name_accuracy": (1, 7),
    "argument_exact_match": (1, 7),
    "argument_f1": (4, 17),  # gold 15, predicted 2, matched 2
    "full_call_exact_match": (1, 7),
}
GATES = [
    {"name": "adapter-valid", "arm": "adapter", "metric": "valid_json_rate", "min": 0.8},
    {
        "name": "uplift",
        "candidate": "adapter",
        "reference": "base",
        "metric": "full_call_exact_match",
        "ci_lower_at_least": -1.0,
    },
]


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return runner("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def assert_outcomes(result: pytest.RunResult, **expected: int) -> None:
    """Like RunResult.assert_outcomes, but knows the plugin's own 'missed' category."""
    outcomes = result.parseoutcomes()
    outcomes.pop("deselected", None)
    outcomes.pop("warnings", None)
    assert outcomes == expected


def check_metrics(block: dict, expected: dict) -> None:
    for metric, (numerator, denominator) in expected.items():
        value = block[metric]
        assert (value["numerator"], value["denominator"]) == (numerator, denominator), metric
        assert value["value"] == pytest.approx(numerator / denominator)


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_full_run_writes_checked_artifacts(pytester: pytest.Pytester, xdist: bool) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    # 14 items: 4 adapter hits, 1 base hit -> 5 passed, 9 missed
    assert_outcomes(result, passed=5, missed=9)
    assert result.ret == 0
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    check_metrics(adapter["metrics"], ADAPTER_OVERALL)
    check_metrics(base["metrics"], BASE_OVERALL)
    check_metrics(
        adapter["slices"]["he"]["metrics"],
        {"valid_json_rate": (2, 3), "full_call_exact_match": (2, 3), "argument_f1": (8, 11)},
    )
    assert adapter["complete"] is True and adapter["model_kind"] == "adapter"
    assert base["adapter_identity"] is None
    generations = read_jsonl(out / "eval" / "adapter" / "generations.he.jsonl")
    assert [g["example_id"] for g in generations] == ["he-0", "he-1", "he-3"]
    assert [g["parse_status"] for g in generations] == ["ok", "invalid_json", "ok"]
    assert generations[1]["raw_text"] == ADAPTER["he-1"]
    verdict = read_json(out / "gate_verdict.json")
    assert verdict["verdict"] == "pass"
    assert [g["passed"] for g in verdict["gates"]] == [True, True]
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert comparison["deltas"]["full_call_exact_match"] == pytest.approx(3 / 7)
    assert (out / "report" / "adapter-vs-base.md").read_text().startswith("# adapter vs base")
    telemetry = read_json(out / "eval" / "adapter" / "inference_telemetry.json")
    assert telemetry["examples"] == 7 and telemetry["concurrency"] == (2 if xdist else 1)
    # a property of the run, not of which worker happened to get an arm's batches
    base_telemetry = read_json(out / "eval" / "base" / "inference_telemetry.json")
    assert base_telemetry["concurrency"] == telemetry["concurrency"]
    result.stdout.fnmatch_lines(["*sommelier: factory*", "*verdict: PASS*"])


@pytest.mark.slow
def test_xdist_and_serial_write_the_same_artifacts(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    run(pytester, "--sommelier-out", "serial")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "par", "-n", "2")

    def stable(path: str) -> dict:
        data = read_json(pytester.path / path)
        data.pop("run_id", None)
        data.pop("efficiency", None)  # timings aside
        return data

    for arm in ("base", "adapter"):
        for lang in ("en", "he"):
            name = f"eval/{arm}/generations.{lang}.jsonl"
            assert (pytester.path / "serial" / name).read_text() == (
                pytester.path / "par" / name
            ).read_text()
        report = f"eval/{arm}/evaluation_report.json"
        assert stable(f"serial/{report}") == stable(f"par/{report}")
    assert stable("serial/report/adapter-vs-base.json") == stable("par/report/adapter-vs-base.json")
    assert stable("serial/gate_verdict.json") == stable("par/gate_verdict.json")


def test_k_subset_is_incomplete_and_fails(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result = run(pytester, "-k", "he")
    assert result.ret == 1
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "incomplete" and verdict["complete"] is False
    report = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    assert report["complete"] is False and report["slices"]["en"]["examples"] == 0
    result.stdout.fnmatch_lines(["*INCOMPLETE*", "*verdict: INCOMPLETE*"])


def test_failing_gate_exits_1_and_names_it(pytester: pytest.Pytester) -> None:
    gates = [{"name": "too-high", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.9}]
    write_scripted_suite(pytester, SCRIPT, gates=gates)
    result = run(pytester)
    assert result.ret == 1
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "fail"
    (gate,) = verdict["gates"]
    assert gate["name"] == "too-high" and gate["passed"] is False
    assert gate["observed"] == pytest.approx(4 / 7)
    result.stdout.fnmatch_lines(["*FAIL too-high*", "*verdict: FAIL*"])


def test_gates_off_writes_no_verdict(pytester: pytest.Pytester) -> None:
    gates = [{"name": "too-high", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.9}]
    write_scripted_suite(pytester, SCRIPT, gates=gates)
    result = run(pytester, "--sommelier-gates=off", "-k", "en-1")
    assert result.ret == 0
    assert not (pytester.path / "out" / "gate_verdict.json").exists()
    assert (pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json").exists()


@pytest.mark.parametrize(
    ("special", "message"),
    [
        ("raise", "*SOM-MODEL-ERROR*RuntimeError: CUDA out of memory (scripted)*"),
        ("short", "*SOM-GEN-COUNT*returned 1 outputs for 2 prompts*"),
        ("nonstr", "*SOM-GEN-TYPE*NoneType*"),
    ],
)
def test_bad_generator_is_an_error_and_no_passing_verdict(
    pytester: pytest.Pytester, special: str, message: str
) -> None:
    write_scripted_suite(
        pytester,
        {**SCRIPT, "__special__": {"adapter": special}},
        gates=GATES,
        decoding={"batch_size": 2},
    )
    result = run(pytester)
    assert_outcomes(result, passed=1, missed=6, errors=7)
    result.stdout.fnmatch_lines([message])
    assert result.ret == 1
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "incomplete"


def test_tampered_prompt_is_a_collection_error(pytester: pytest.Pytester) -> None:
    suite = write_scripted_suite(pytester, SCRIPT, gates=GATES)
    split = suite.parent / "data" / "test.jsonl"
    lines = split.read_text().splitlines()
    row = json.loads(lines[0])
    row["prompt_text"] += "tampered"
    lines[0] = json.dumps(row)
    split.write_text("\n".join(lines) + "\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*prompt_sha256*"])
    assert not (pytester.path / "out" / "gate_verdict.json").exists()


def test_strict_turns_misses_into_failures(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT)
    result = run(pytester, "--sommelier-strict", "-k", "adapter")
    assert_outcomes(result, passed=4, failed=3)
    result.stdout.fnmatch_lines(["*argument paths that differ: .room*"])


def test_collect_only_names_and_marker(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT)
    result = pytester.runpytest("--collect-only", "-q", "-m", "eval")
    result.stdout.fnmatch_lines(
        ["suite/sommelier.toml::base::en::en-0", "suite/sommelier.toml::adapter::he::he-3"]
    )
    result = pytester.runpytest("--collect-only", "-q", "-m", "eval", "-k", "adapter and he-1")
    result.stdout.fnmatch_lines(["suite/sommelier.toml::adapter::he::he-1", "*1/14 tests*"])


def test_miss_drilldown_in_terminal(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT)
    result = run(pytester, "--sommelier-misses=50", "-k", "adapter")
    result.stdout.fnmatch_lines(
        [
            "*misses (showing 3 of 3*",
            "*adapter::en::en-2*",
            "*name differs: 'nope' != 'noop'*",
            "*adapter::he::he-1*",
            "*invalid_json*",
        ]
    )


def test_hanging_model_times_out_per_batch(pytester: pytest.Pytester) -> None:
    write_scripted_suite(
        pytester,
        {**SCRIPT, "__special__": {"adapter": "hang"}},
        gates=GATES,
        decoding={"batch_size": 4},
    )
    result = run(pytester, "--sommelier-timeout=0.5")
    # the first adapter batch times out; the arm's later batches fail at once
    assert_outcomes(result, passed=1, missed=6, errors=7)
    result.stdout.fnmatch_lines(["*SOM-MODEL-TIMEOUT*did not return within 0.5 s*"])
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"
    calls = (pytester.path / "suite" / "calls.jsonl").read_text().splitlines()
    assert sum(json.loads(c)["arm"] == "adapter" for c in calls) == 1


def test_selfcheck_counts_outputs_that_differ_at_batch_size_1(pytester: pytest.Pytester) -> None:
    write_scripted_suite(
        pytester,
        {**SCRIPT, "__special__": {"adapter": "batchdep"}},
        decoding={"batch_size": 2},
    )
    run(pytester, "--sommelier-selfcheck=3")
    out = pytester.path / "out" / "eval"
    adapter = read_json(out / "adapter" / "inference_telemetry.json")["determinism_selfcheck"]
    base = read_json(out / "base" / "inference_telemetry.json")["determinism_selfcheck"]
    assert (adapter["checked"], adapter["differing"]) == (3, 3)
    assert (base["checked"], base["differing"]) == (3, 0)


def test_gates_appear_as_junit_test_cases(pytester: pytest.Pytester) -> None:
    import xml.etree.ElementTree as ET

    gates = [
        *GATES,
        {"name": "too-high", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.9},
    ]
    write_scripted_suite(pytester, SCRIPT, gates=gates)
    result = run(pytester, "--junitxml=junit.xml")
    assert result.ret == 1
    all_cases = list(ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"))
    assert len(all_cases) == 14 + 4
    cases = {case.get("name"): case for case in all_cases}
    assert cases["adapter-valid"].find("failure") is None
    assert cases["uplift"].find("failure") is None
    assert "observed 0.5714" in cases["too-high"].find("failure").get("message")
    assert cases["verdict"].find("failure") is not None
    assert cases["en-2"].find("failure") is None  # a miss is not a failure
