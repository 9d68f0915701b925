"""Runs over time inside pytest: --sommelier-autosave, --sommelier-compare,
--sommelier-compare-fail, ``[[gates]] stored = ...`` and where each arm came from, in real
pytester sessions over the scripted fake (outputs and hand-derived hits in history_helpers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from history_helpers import HE_DROP, IMPROVED, REGRESSED, V1, script, subprocess_session
from plugin_helpers import write_scripted_suite

from pytest_sommelier.data.store.history import read_index, stored_runs

ROOT = Path(__file__).resolve().parents[2]
FAIL = "--sommelier-compare-fail=full_call_exact_match:0.02"
ADAPTER_GATE = "compare-fail:adapter:full_call_exact_match:0.02"


def run(
    pytester: pytest.Pytester,
    out: str,
    adapter_outputs: dict[str, str] = V1,
    *args: str,
    **suite_overrides: Any,
) -> tuple[pytest.RunResult, Path]:
    """One real session of the scripted suite into ``out`` (generation cache off, so a changed
    script always changes the outputs); returns the result and the run folder."""
    write_scripted_suite(pytester, script(adapter_outputs), **suite_overrides)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-no-cache", "--sommelier-out", out, *args
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    return result, pytester.path / out


def verdict_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "gate_verdict.json").read_text(encoding="utf-8"))


def gate(run_dir: Path, name: str) -> dict[str, Any]:
    return next(g for g in verdict_of(run_dir)["gates"] if g["name"] == name)


def junit_cases(path: Path) -> dict[str, bool]:
    """``--junitxml`` gate case (``gates::<name>``) -> passed."""
    cases = ET.parse(path).getroot().iter("testcase")
    return {
        f"gates::{case.get('name')}": case.find("failure") is None
        for case in cases
        if str(case.get("classname")).endswith("gates")
    }


def junit_messages(path: Path) -> dict[str, str]:
    """``--junitxml`` failed gate case -> its failure message."""
    return {
        f"gates::{case.get('name')}": str(failure.get("message"))
        for case in ET.parse(path).getroot().iter("testcase")
        if (failure := case.find("failure")) is not None
    }


def store_of(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".sommelier"


# --- storing ---------------------------------------------------------------------------------


def test_three_runs_autosaved_then_compared_with_last_and_a_number(
    pytester: pytest.Pytester,
) -> None:
    for n, out in enumerate(("one", "two", "three"), start=1):
        result, run_dir = run(pytester, out, V1, "--sommelier-autosave")
        assert result.ret == 0, result.stdout.str()
        result.stdout.fnmatch_lines(
            [
                "base: 7 generated",
                "adapter: 7 generated",
                f"stored as run {n:04d} (no commit recorded) in {store_of(pytester)}",
            ]
        )
        assert (run_dir / "report" / "summary.md").is_file()
    runs = stored_runs(store_of(pytester))
    assert [r.number for r in runs] == [1, 2, 3] and all(r.comparable for r in runs)
    assert all(r.entry["git"] is None and "_unversioned_" in r.path.name for r in runs)
    # the stored copy is the run folder as the session left it, summary and page included
    assert (runs[0].path / "report" / "summary.md").is_file()
    assert (runs[0].path / "report.html").is_file()

    result, four = run(pytester, "four", V1, "--sommelier-compare", FAIL)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "against stored run 0003 (no commit recorded): this run minus the stored run*",
            "adapter vs adapter@0003",
            "  McNemar exact (full_call): fixed 0, broken 0, p = 1; identical outputs 7 of 7",
            f"PASS {ADAPTER_GATE}: adapter-vs-adapter@0003 full_call_exact_match ?overall?*",
            "verdict: PASS",
        ]
    )
    assert (four / "report" / "compare-0003.json").is_file()
    assert gate(four, ADAPTER_GATE)["passed"] is True
    assert len(read_index(store_of(pytester))) == 3  # compared, not stored
    page = (four / "report.html").read_text(encoding="utf-8")
    assert '<section id="stored">' in page and "stored run 0003" in page
    assert "stored run 0003" in (four / "report" / "summary.md").read_text(encoding="utf-8")

    result, five = run(pytester, "five", V1, "--sommelier-compare=1")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["against stored run 0001 (no commit recorded)*"])
    assert (five / "report" / "compare-0001.json").is_file()
    assert not any(g["name"].startswith("compare-fail") for g in verdict_of(five)["gates"])


def test_a_regression_beyond_the_margin_fails_in_verdict_and_junit(
    pytester: pytest.Pytester,
) -> None:
    run(pytester, "one", V1, "--sommelier-autosave")
    result, two = run(
        pytester, "two", REGRESSED, "--sommelier-compare=last", FAIL, "--junitxml=results.xml"
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "adapter vs adapter@0001",
            "  broken: en-1, en-3",
            f"FAIL {ADAPTER_GATE}: adapter-vs-adapter@0001 full_call_exact_match ?overall? "
            "delta -0.286 < -0.02 (delta_at_least); this run minus stored run 0001 ?overall?: "
            "-0.286 [[]*]; fixed 0; broken 2 (en-1, en-3)",
            "PASS compare-fail:base:full_call_exact_match:0.02:*",
            "verdict: FAIL",
        ]
    )
    verdict = verdict_of(two)
    assert verdict["verdict"] == "fail"
    failed = gate(two, ADAPTER_GATE)
    assert failed["passed"] is False and failed["observed"] == pytest.approx(-2 / 7)
    assert "broken 2 (en-1, en-3)" in failed["reason"]  # the flips beside the interval
    cases = junit_cases(pytester.path / "results.xml")
    messages = junit_messages(pytester.path / "results.xml")
    assert "broken 2 (en-1, en-3)" in messages[f"gates::{ADAPTER_GATE}"]
    assert cases[f"gates::{ADAPTER_GATE}"] is False
    assert cases["gates::compare-fail:base:full_call_exact_match:0.02"] is True
    assert cases["gates::verdict"] is False
    summary = (two / "report" / "summary.md").read_text(encoding="utf-8")
    assert "**FAIL**" in summary
    assert "broken (stored run hit, this run misses): en-1, en-3" in summary
    # the page shows the verdict with the compare-fail gate
    assert ADAPTER_GATE in (two / "report.html").read_text(encoding="utf-8")


def test_an_improvement_passes_and_a_slice_margin_is_its_own_gate(
    pytester: pytest.Pytester,
) -> None:
    run(pytester, "one", V1, "--sommelier-autosave")
    he = "--sommelier-compare-fail=full_call_exact_match:he:0.03"
    result, two = run(pytester, "two", IMPROVED, "--sommelier-compare", FAIL, he)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["  fixed:  he-1", "verdict: PASS"])
    assert gate(two, "compare-fail:adapter:full_call_exact_match:he:0.03")["passed"] is True
    wide = "--sommelier-compare-fail=full_call_exact_match:0.15"
    result, three = run(pytester, "three", HE_DROP, "--sommelier-compare", wide, he)
    assert result.ret == 1
    overall = gate(three, "compare-fail:adapter:full_call_exact_match:0.15")
    assert overall["passed"] is True and overall["observed"] == pytest.approx(-1 / 7)
    dropped = gate(three, "compare-fail:adapter:full_call_exact_match:he:0.03")
    assert dropped["passed"] is False and "broken 1 (he-0)" in dropped["reason"]


def test_a_changed_decoding_refuses_the_pair_with_one_line(pytester: pytest.Pytester) -> None:
    run(pytester, "one", V1, "--sommelier-autosave")
    result, two = run(
        pytester, "two", V1, "--sommelier-compare", FAIL, decoding={"max_new_tokens": 9}
    )
    assert result.ret == 1
    refused = [line for line in result.stdout.lines if ": REFUSED: " in line]
    assert [line.split(":")[0] for line in refused] == ["adapter", "base"]
    assert all("decoding.max_new_tokens: 64 -> 9" in line for line in refused)
    failed = gate(two, ADAPTER_GATE)
    assert failed["passed"] is False and "SOM-COMPARE-IDENTITY" in failed["reason"]


# --- what is stored, and what a comparison may use -------------------------------------------


def test_an_incomplete_run_is_not_stored_as_comparable(pytester: pytest.Pytester) -> None:
    result, _ = run(pytester, "part", V1, "--sommelier-autosave", "-k", "not he-1")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["not stored: incomplete*--sommelier-autosave=all keeps it*"])
    assert not store_of(pytester).exists()
    result, _ = run(pytester, "part2", V1, "--sommelier-autosave=all", "-k", "not he-1")
    result.stdout.fnmatch_lines(["stored as run 0001 (*), incomplete: never compared*"])
    (kept,) = stored_runs(store_of(pytester))
    assert kept.comparable is False and kept.entry["complete"] is False
    # `last` skips it: nothing comparable yet, so no compare-fail gate is added
    result, three = run(pytester, "three", V1, "--sommelier-compare", FAIL)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["no stored run of suite 'factory' to compare with (last: *)"])
    assert not any(g["name"].startswith("compare-fail") for g in verdict_of(three)["gates"])
    # naming it is an error, one line
    result, _ = run(pytester, "four", V1, "--sommelier-compare=1", FAIL)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["ERROR not compared with stored run '1': SOM-HISTORY-INCOMPLETE: stored run 0001*"]
    )


def test_a_run_in_git_records_its_commit(pytester: pytest.Pytester) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    write_scripted_suite(pytester, script(V1))
    for args in (["init", "-q", "-b", "trunk"], ["add", "suite"], ["commit", "-q", "-m", "s"]):
        subprocess.run([*git, *args], cwd=pytester.path, check=True, capture_output=True)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=pytester.path, check=True, capture_output=True, text=True
    ).stdout.strip()
    result, _ = run(pytester, "one", V1, "--sommelier-autosave")
    result.stdout.fnmatch_lines([f"stored as run 0001 (commit {head[:7]}) in *"])
    (kept,) = stored_runs(store_of(pytester))
    assert kept.entry["git"] == {"commit": head, "branch": "trunk", "dirty": False}
    # the baseline from the store says where it came from
    arm = kept.path / "eval" / "base"
    result, _ = run(pytester, "two", V1, "--sommelier-baseline", str(arm))
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [f"base: stored arm 0001 (commit {head[:7]})", "adapter: 7 generated"]
    )


def test_a_stored_base_arm_never_stands_in_for_the_adapter(pytester: pytest.Pytester) -> None:
    run(pytester, "one", V1)
    result, _ = run(pytester, "two", V1, "--sommelier-baseline", "adapter=one/eval/base")
    assert result.ret == 1
    (line,) = [x for x in result.stdout.lines if "SOM-HISTORY-BORROWED" in x]
    assert "has model_kind base" in line and "refusing to use it as arm 'adapter'" in line


def test_a_damaged_store_is_one_line_at_finish_and_leaves_no_verdict(
    pytester: pytest.Pytester,
) -> None:
    store_of(pytester).mkdir()
    (store_of(pytester) / "index.json").write_text('{"runs": [', encoding="utf-8")
    result, one = run(pytester, "one", V1, "--sommelier-autosave", "--sommelier-compare", FAIL)
    assert result.ret == 1
    errors = [line for line in result.stdout.lines if line.startswith("ERROR ")]
    assert len(errors) == 1 and "SOM-HISTORY-INDEX" in errors[0] and "index.json" in errors[0]
    assert errors[0].startswith("ERROR not compared with stored run 'last': ")
    # the gates were evaluated (the failing one shows its reason) but the finish failed: no
    # verdict file of this run, one line saying why in place of the verdict line, not stored
    result.stdout.fnmatch_lines(
        ["FAIL compare-fail:full_call_exact_match:0.02:*SOM-HISTORY-INDEX*"]
    )
    why = [line for line in result.stdout.lines if line.startswith("no verdict was written")]
    assert why == [f"no verdict was written for this suite: {errors[0].removeprefix('ERROR ')}"]
    assert not any(line.startswith("verdict: ") for line in result.stdout.lines)
    assert not (one / "gate_verdict.json").exists()
    assert (one / "report.html").is_file() and (one / "report" / "summary.md").is_file()
    assert "not stored" not in result.stdout.str()
    assert (store_of(pytester) / "index.json").read_text(encoding="utf-8") == '{"runs": ['


def test_the_ini_twins_store_and_compare(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nsommelier_storage = kept\nsommelier_autosave = true\n"
        "sommelier_compare = last\nsommelier_compare_fail =\n    full_call_exact_match:0.02\n"
    )
    result, _ = run(pytester, "one", V1)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["no stored run of suite 'factory' to compare with*"])
    result, two = run(pytester, "two", REGRESSED)
    assert result.ret == 1
    assert gate(two, ADAPTER_GATE)["passed"] is False
    assert [r.number for r in stored_runs(pytester.path / "kept")] == [1, 2]


# --- a stored gate: the claim in the suite ---------------------------------------------------

STORED_GATE = [
    {
        "name": "not-worse-than-shipped",
        "arm": "adapter",
        "stored": "last",
        "metric": "full_call_exact_match",
        "ci_lower_at_least": -0.5,
    }
]
PAIRS_ALONE = {"cluster": "example"}  # 7 pairs in 4 root clusters could show no margin at all


def test_a_stored_gate_holds_against_the_last_stored_run(pytester: pytest.Pytester) -> None:
    result, one = run(pytester, "one", V1, "--sommelier-autosave", gates=STORED_GATE,
                      statistics=PAIRS_ALONE)  # fmt: skip
    assert result.ret == 1  # nothing stored yet: a claim without evidence never passes
    first = gate(one, "not-worse-than-shipped")
    assert first["passed"] is False and "no comparable stored run of suite 'factory'" in (
        first["reason"]
    )
    assert stored_runs(store_of(pytester))[0].comparable  # a failing verdict is still complete
    result, two = run(pytester, "two", V1, gates=STORED_GATE, statistics=PAIRS_ALONE)
    assert result.ret == 0, result.stdout.str()
    held = gate(two, "not-worse-than-shipped")
    assert held["subject"] == "adapter-vs-adapter@last" and held["passed"] is True
    # the lower bound of Tango's interval (a margin gate) of identical outputs over 7 pairs: it
    # cannot rule out a large loss, so only a wide margin can pass
    assert held["interval"]["method"] == "tango_asymptotic_score"
    assert -0.5 <= held["observed"] < 0
    assert (two / "report" / "compare-0001.json").is_file()
    result, three = run(pytester, "three", REGRESSED, gates=STORED_GATE, statistics=PAIRS_ALONE)
    assert result.ret == 1
    broken = gate(three, "not-worse-than-shipped")
    assert broken["passed"] is False and broken["observed"] < -0.5


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"stored": "newest"}, 'gates.stored = \'newest\' is not "last", "last-any"'),
        ({"stored": 0}, "gates.stored = 0 is not"),
        ({"candidate": "adapter"}, "a stored gate names arm and stored only"),
        ({"min": 0.5, "ci_lower_at_least": None}, "key 'min' does not apply to a stored gate"),
    ],
    ids=["word", "zero", "candidate", "arm-threshold"],
)
def test_a_bad_stored_gate_is_one_line(
    pytester: pytest.Pytester, entry: dict[str, Any], message: str
) -> None:
    bad = {**STORED_GATE[0], **entry}
    bad = {k: v for k, v in bad.items() if v is not None}
    result, _ = run(pytester, "one", V1, gates=[bad])
    assert result.ret != 0
    assert message in result.stdout.str()


# --- two sessions at once ---------------------------------------------------------------------


@pytest.mark.slow
def test_two_concurrent_autosaves_keep_the_index_whole(tmp_path: Path) -> None:
    folders = [tmp_path / "a", tmp_path / "b"]
    store = tmp_path / "store"
    for folder in folders:
        folder.mkdir()
        subprocess_session(folder, "warm", V1)  # the suite, and a first run to check it works
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    def command(folder: Path, out: str) -> list[str]:
        return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                "--sommelier-no-cache", str(folder / "suite"), "--sommelier-out", out,
                "--sommelier-autosave", "--sommelier-storage", str(store)]  # fmt: skip

    sessions = [
        subprocess.Popen(
            command(folder, f"r{i}"),
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for folder in folders
        for i in range(2)
    ]
    outputs = [s.communicate(timeout=600)[0] for s in sessions]
    assert [s.returncode for s in sessions] == [0, 0, 0, 0], outputs
    index = read_index(store)
    assert [e["number"] for e in index] == [1, 2, 3, 4]
    assert len({e["run_id"] for e in index}) == 4
    folders_on_disk = sorted(p.name for p in store.iterdir() if not p.name.startswith("."))
    assert folders_on_disk == sorted([e["folder"] for e in index] + ["index.json"])


# --- sommelier rescore under the suite's current gates ----------------------------------------


def test_rescore_applies_the_suites_current_gates_with_the_sessions_tables(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sommelier.cli import main
    from pytest_sommelier.commands.rescore import generation_files
    from pytest_sommelier.data.digests import sha256_file

    _, one = run(pytester, "one", V1, "--sommelier-autosave")
    sources = {name: sha256_file(one / name) for name in generation_files(one, ["base", "adapter"])}
    gates = [{"name": "strict", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.9}]
    suite = write_scripted_suite(pytester, script(V1), gates=[*gates, *STORED_GATE])
    capsys.readouterr()
    again = pytester.path / "again"
    code = main(["rescore", str(one), "--suite", str(suite), "--out", str(again),
                 "--store", str(store_of(pytester))])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1
    # the session's tables: metrics, comparison, language gaps, misses by category, drilldown
    for line in ("arm      slice    valid_json", "adapter-vs-base (candidate - reference",
                 "language gaps, matched pairs (full_call_exact_match):", "misses by category:",
                 "misses (showing 8 of 8", "FAIL strict: adapter full_call_exact_match",
                 "verdict: FAIL"):  # fmt: skip
        assert line in out, line
    # the stored gate: the rescored copy is the stored run itself (the same run id): refused
    held = gate(again, "not-worse-than-shipped")
    assert held["passed"] is False and "SOM-HISTORY-SAME" in held["reason"]
    record = json.loads((again / "rescored.json").read_text(encoding="utf-8"))
    assert record["by"].startswith("pytest-sommelier ") and record["suite"]["file"] == (
        "sommelier.toml"
    )
    from pytest_sommelier.core.canonical import sha256_json

    assert record["generations_sha256"] == sha256_json(sorted(map(list, sources.items())))
    assert record["from"] == {"folder": str(one), "run_id": verdict_of(one)["run_id"]}
    assert f"from generations sha256 {record['generations_sha256'][:12]}" in out
    resolved = json.loads((again / "suite.resolved.json").read_text(encoding="utf-8"))
    assert [g["name"] for g in resolved["gates"]] == ["strict", "not-worse-than-shipped"]
    # without --suite the run's own (no) gates: it passes
    assert main(["rescore", str(one), "--out", str(pytester.path / "plain")]) == 0


def test_rescore_refuses_another_split_and_a_stored_run_in_place(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_sommelier.cli import main

    _, one = run(pytester, "one", V1, "--sommelier-autosave")
    other = write_scripted_suite(pytester, script(V1), ids=("en-0", "en-1", "he-0"))
    capsys.readouterr()
    assert main(["rescore", str(one), "--suite", str(other), "--out", "x"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "SOM-RESCORE-SUITE" in line and "is not the run's" in line
    assert not (pytester.path / "x").exists()
    (stored,) = stored_runs(store_of(pytester))
    assert main(["rescore", str(stored.path)]) == 2
    assert "SOM-RESCORE-STORED" in capsys.readouterr().err
