"""The run store, comparing with a stored run, the regression gate, the history table and page,
and the CI summary, over real run folders written by pytester sessions (history_helpers)."""

from __future__ import annotations

import html
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from history_helpers import (
    HE_DROP,
    IMPROVED,
    REGRESSED,
    V1,
    compare_stored,
    files,
    save_run,
    session,
    with_run_id,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.commands.rescore import summary_markdown, write_summary
from pytest_sommelier.core.borrowed import arm_origin, refuse_borrowed
from pytest_sommelier.core.compare_fail import evaluate_fail_specs, with_fail_results
from pytest_sommelier.core.gates import evaluate_gates
from pytest_sommelier.data.store.history import (
    FOLDER,
    check_store,
    read_index,
    resolve_stored,
    run_at,
    stored_runs,
)
from pytest_sommelier.data.store.history_compare import refuse_borrowed_stand_in, write_compare
from pytest_sommelier.data.store.history_gate import parse_fail_spec, parse_fail_specs
from pytest_sommelier.data.store.history_record import git_state, suite_run_dirs
from pytest_sommelier.data.store.history_runs import history_runs
from pytest_sommelier.data.suite.load import GATE_METRICS, load_suite, suite_identity, valid_name
from pytest_sommelier.errors import EvaluationError, InputError
from pytest_sommelier.view.compare import compare_markdown, md_cell
from pytest_sommelier.view.history_page import history_lines, render_history
from pytest_sommelier.view.html import _environment

ROOT = Path(__file__).resolve().parents[3]


def store_of(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".sommelier"


# --- storing ----------------------------------------------------------------------------------


def test_three_runs_stored_byte_for_byte_and_compared(pytester: pytest.Pytester, capsys) -> None:
    store = store_of(pytester)
    runs = [
        session(pytester, "one", V1),
        session(pytester, "two", V1),
        session(pytester, "three", REGRESSED),
    ]
    stored = [save_run(run, store) for run in runs]
    assert [s.number for s in stored] == [1, 2, 3]
    for run, kept in zip(runs, stored, strict=True):
        copied = files(kept.path)
        assert copied.pop("stored_run.json")
        assert copied == files(run)  # bytes copied, not re-serialised
        match = FOLDER.match(kept.path.name)
        assert match and match.group("commit") == "unversioned"  # outside git: no commit
        assert kept.entry["git"] is None and kept.entry["comparable"] is True
    index = read_index(store)
    assert [e["number"] for e in index] == [1, 2, 3]
    assert {e["suite"] for e in index} == {"factory"}
    arms = index[0]["identity"]["arms"]
    assert arms["adapter"]["model_kind"] == "adapter" and arms["base"]["model_kind"] == "base"
    assert index[0]["identity"]["config_sha256"] == index[2]["identity"]["config_sha256"]
    assert save_run(runs[0], store).number == 1  # a run is stored once
    assert len(read_index(store)) == 3

    # compare the newest with `last` before it: resolve by number and by last
    assert resolve_stored(store, "last").number == 3
    assert resolve_stored(store, str(stored[0].path)).number == 1
    report = compare_stored(stored[2], resolve_stored(store, "2"))
    adapter, base = report["arms"]["adapter"], report["arms"]["base"]
    assert adapter["deltas"]["full_call_exact_match"] == pytest.approx(-2 / 7)
    assert adapter["mcnemar"]["reference_only"] == adapter["flips"]["broken_count"] == 2
    assert adapter["mcnemar"]["candidate_only"] == adapter["flips"]["fixed_count"] == 0
    assert [f["example_id"] for f in adapter["flips"]["broken"]] == ["en-1", "en-3"]
    assert adapter["slices"]["he"]["deltas"]["full_call_exact_match"] == 0
    assert base["identical_outputs"] == base["compared_examples"] == 7
    assert base["ci95"]["intervals"]["full_call_exact_match"] == {"lower": 0.0, "upper": 0.0}

    json_path, md_path = write_compare(runs[2] / "report", report, compare_markdown(report))
    assert json_path.name == "compare-0002.json" and md_path.name == "compare-0002.md"
    assert json.loads(json_path.read_text())["arms"]["adapter"]["flips"]["broken_count"] == 2
    assert "broken (stored run hit, this run misses): en-1, en-3" in md_path.read_text()

    # the gate: a regression beyond the margin fails; within it, or elsewhere, passes
    specs = parse_fail_specs(["full_call_exact_match:0.02", "full_call_exact_match:he:0.03"])
    results = {r["name"]: r for r in evaluate_fail_specs(specs, report)}
    failed = results["compare-fail:adapter:full_call_exact_match:0.02"]
    assert failed["passed"] is False and failed["observed"] == pytest.approx(-2 / 7)
    assert failed["threshold"] == {"delta_at_least": -0.02}
    # the two broken pairs' clusters are the only informative ones: 1 degree of freedom, and
    # the interval is all but [-1, 1] (issue 38)
    assert "[-1.000, +1.000]" in failed["reason"] and "broken 2 (en-1, en-3)" in failed["reason"]
    assert results["compare-fail:base:full_call_exact_match:0.02"]["passed"] is True
    assert results["compare-fail:adapter:full_call_exact_match:he:0.03"]["passed"] is True

    capsys.readouterr()
    assert (
        main(["compare", "3", "2", "--store", str(store), "--fail", "full_call_exact_match:0.02"])
        == 1
    )
    out = capsys.readouterr().out
    assert "against stored run 0002 (no commit recorded)" in out
    assert "FAIL compare-fail:adapter:full_call_exact_match:0.02" in out
    assert "broken: en-1, en-3" in out
    spec = ["--fail", "full_call_exact_match:he:0.03"]
    assert main(["compare", "0003", "0002", "--store", str(store), *spec]) == 0
    # identical outputs always pass, even at margin 0
    assert (
        main(["compare", "2", "1", "--store", str(store), "--fail", "full_call_exact_match:0"]) == 0
    )
    assert "identical outputs 7 of 7" in capsys.readouterr().out
    # `last` and a run folder outside the store
    assert main(["compare", "last", "1", "--store", str(store), "--fail", "argument_f1:0.02"]) == 1
    assert main(["compare", str(runs[2]), "1", "--store", str(store), "--out", "cmp"]) == 0
    assert (pytester.path / "cmp" / "compare-0001.json").is_file()


def test_improvement_passes_and_a_slice_regression_fails(pytester: pytest.Pytester, capsys) -> None:
    store = store_of(pytester)
    save_run(session(pytester, "one", V1), store)
    improved = run_at(session(pytester, "two", IMPROVED))
    report = compare_stored(improved, resolve_stored(store, "last", suite="factory"))
    flips = report["arms"]["adapter"]["flips"]
    assert (flips["fixed_count"], flips["broken_count"]) == (1, 0)
    assert flips["fixed"] == [{"example_id": "he-1", "slice": "he"}]
    specs = parse_fail_specs(["full_call_exact_match:0", "full_call_exact_match:he:0"])
    assert all(r["passed"] for r in evaluate_fail_specs(specs, report))

    dropped = run_at(session(pytester, "three", HE_DROP))
    report = compare_stored(dropped, resolve_stored(store, "1"))
    results = evaluate_fail_specs(parse_fail_specs(["full_call_exact_match:he:0.03"]), report)
    adapter = next(r for r in results if r["subject"].startswith("adapter-"))
    assert adapter["passed"] is False and adapter["observed"] == pytest.approx(-1 / 3)
    assert "broken 1 (he-0)" in adapter["reason"]
    verdict = evaluate_gates((), {}, {}, complete=True, run_id="x")
    assert verdict["verdict"] == "pass"
    gated = with_fail_results(verdict, results)
    assert gated["verdict"] == "fail" and len(gated["gates"]) == 2
    assert with_fail_results(None, results) is None
    assert (
        main(
            [
                "compare",
                str(dropped.path),
                "1",
                "--store",
                str(store),
                "--fail",
                "full_call_exact_match:he:0.03",
            ]
        )
        == 1
    )


def test_changed_decoding_is_refused_with_one_line(pytester: pytest.Pytester, capsys) -> None:
    store = store_of(pytester)
    save_run(session(pytester, "one", V1), store)
    save_run(session(pytester, "two", V1, decoding={"max_new_tokens": 9}), store)
    report = compare_stored(resolve_stored(store, "2"), resolve_stored(store, "1"))
    for arm in ("adapter", "base"):
        block = report["arms"][arm]
        assert block["status"] == "refused"
        reason = block["reason"]
        assert "\n" not in reason and reason.startswith("SOM-COMPARE-IDENTITY")
        assert "config_sha256" in reason and "decoding.max_new_tokens: 64 -> 9" in reason
    results = evaluate_fail_specs(parse_fail_specs(["full_call_exact_match:0.02"]), report)
    assert [r["passed"] for r in results] == [False, False]
    assert "unavailable: SOM-COMPARE-IDENTITY" in results[0]["reason"]
    capsys.readouterr()
    assert main(["compare", "2", "1", "--store", str(store)]) == 4
    lines = [line for line in capsys.readouterr().out.splitlines() if "REFUSED" in line]
    assert len(lines) == 2 and all("decoding.max_new_tokens" in line for line in lines)
    assert main(["compare", "2", "1", "--store", str(store), "--fail", "argument_f1:0.5"]) == 1
    # the run page's section (data/templates/history_compare.html.j2) shows the refusals
    section = (
        _environment()
        .get_template("history_compare.html.j2")
        .render(compares=[report], metric_names=["full_call_exact_match"])
    )
    assert 'data-refused="adapter"' in section and "decoding.max_new_tokens: 64 -&gt; 9" in section
    # the history marks the run with the field that changed
    runs = history_runs(store)
    mark = runs[1]["arms"]["adapter"]["mark"]
    assert mark["field"] == "config_sha256 (decoding.max_new_tokens: 64 -> 9)"
    assert runs[0]["arms"]["adapter"]["mark"] is None
    lines = history_lines(runs)
    assert any(
        line.startswith("0002 adapter: not comparable with 0001: config_sha256") for line in lines
    )


def test_an_incomplete_run_is_never_comparable(pytester: pytest.Pytester) -> None:
    store = store_of(pytester)
    partial = session(pytester, "part", V1, "-k", "not he-1")
    assert json.loads((partial / "gate_verdict.json").read_text())["verdict"] == "incomplete"
    assert save_run(partial, store) is None
    assert not (store / "index.json").exists()
    kept = save_run(partial, store, keep_incomplete=True)
    assert kept is not None and kept.entry["comparable"] is False
    with pytest.raises(InputError, match=r"SOM-HISTORY-UNKNOWN.*no comparable stored run"):
        resolve_stored(store, "last")
    complete = run_at(session(pytester, "full", V1))
    with pytest.raises(EvaluationError, match=r"SOM-HISTORY-INCOMPLETE.*stored run 0001"):
        compare_stored(complete, resolve_stored(store, "1"))
    assert save_run(complete.path, store).number == 2
    assert resolve_stored(store, "last").number == 2
    runs = history_runs(store)
    assert runs[0]["arms"]["adapter"]["mark"]["kind"] == "incomplete"
    assert runs[1]["arms"]["adapter"]["mark"] is None  # compared with no incomplete run
    refused = evaluate_fail_specs(parse_fail_specs(["argument_f1:0.1"]), None, refused="x")
    assert refused[0]["passed"] is False and refused[0]["reason"] == "x"


def _git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True).stdout


def test_git_commit_branch_and_dirty_flag(pytester: pytest.Pytester) -> None:
    run = session(pytester, "one", V1)
    root = pytester.path
    assert git_state(root) is None  # not a work tree: nothing recorded
    _git(root, "init", "-q", "-b", "trunk")
    assert git_state(root) == {"commit": None, "branch": "trunk", "dirty": False}
    _git(root, "add", "suite")
    _git(root, "commit", "-q", "-m", "suite")
    head = _git(root, "rev-parse", "HEAD").strip()
    state = git_state(root)
    assert state == {"commit": head, "branch": "trunk", "dirty": False}  # untracked runs: clean
    kept = save_run(run, root / ".sommelier", rootdir=root)
    assert kept.entry["git"] == state and kept.path.name.startswith(f"0001_{head[:7]}_")
    (root / "suite" / "script.json").write_text("{}")
    assert git_state(root)["dirty"] is True
    again = with_run_id(run, root / "again", "20260101T000000Z-000000")
    dirty = save_run(again, root / ".sommelier", rootdir=root)
    assert f"_{head[:7]}-dirty_" in dirty.path.name and dirty.describe().endswith("dirty)")
    _git(root, "checkout", "-q", "--detach")
    assert git_state(root)["branch"] is None


@pytest.mark.slow
def test_two_concurrent_saves_keep_the_index_whole(pytester: pytest.Pytester) -> None:
    run = session(pytester, "one", V1)
    copies = [
        with_run_id(run, pytester.path / f"c{i}", f"20260101T00000{i}Z-00000{i}") for i in range(6)
    ]
    store = store_of(pytester)
    code = (
        "import sys; from pathlib import Path;"
        "from pytest_sommelier.data.store.history import save_run;"
        "[save_run(Path(p), Path(sys.argv[1])) for p in sys.argv[2:]]"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    orders = [copies, list(reversed(copies))]
    workers = [
        subprocess.Popen([sys.executable, "-c", code, str(store), *map(str, order)], env=env)
        for order in orders
    ]
    assert [worker.wait(timeout=300) for worker in workers] == [0, 0]
    index = read_index(store)
    assert [e["number"] for e in index] == [1, 2, 3, 4, 5, 6]
    assert sorted(e["run_id"] for e in index) == sorted(
        json.loads((c / "suite.resolved.json").read_text())["run_id"] for c in copies
    )
    folders = sorted(p.name for p in store.iterdir() if not p.name.startswith("."))
    assert folders == sorted([e["folder"] for e in index] + ["index.json"])


# --- a damaged or foreign store ------------------------------------------------------------


def _damage(store: Path, kind: str) -> str:
    """Damage ``store`` one way; return the name the error line must mention."""
    store.mkdir(parents=True, exist_ok=True)
    good = {"schema_version": "sommelier.run_store_index.v1", "runs": []}
    if kind == "bad-json":
        (store / "index.json").write_text('{"runs": [', encoding="utf-8")
        return "index.json"
    if kind == "schema":
        (store / "index.json").write_text(json.dumps({**good, "schema_version": "other.v9"}))
        return "index.json"
    if kind == "entry":
        entry = {"number": 2, "folder": "0001_unversioned_20260101T000000Z", "suite": "s"}
        (store / "index.json").write_text(json.dumps({**good, "runs": [entry]}))
        return "index.json"
    if kind == "missing-folder":
        entry = {
            "number": 1,
            "folder": "0001_unversioned_20260101T000000Z",
            "suite": "s",
            "comparable": True,
            "complete": True,
        }
        (store / "index.json").write_text(json.dumps({**good, "runs": [entry]}))
        return "0001_unversioned_20260101T000000Z"
    if kind == "no-index":
        (store / "0001_unversioned_20260101T000000Z").mkdir()
        return "index.json: missing"
    if kind == "foreign-file":
        (store / "notes.txt").write_text("mine")
        return "notes.txt"
    if kind == "foreign-folder":
        (store / "0003_not-a-run").mkdir()
        return "0003_not-a-run"
    raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    ["bad-json", "schema", "entry", "missing-folder", "no-index", "foreign-file", "foreign-folder"],
)
def test_a_damaged_or_foreign_store_is_one_line_naming_the_file(
    tmp_path: Path, kind: str, capsys
) -> None:
    store = tmp_path / "store"
    name = _damage(store, kind)
    assert main(["history", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and name in err and "SOM-HISTORY-" in err
    with pytest.raises(InputError):
        read_index(store)
    assert main(["compare", "last", "1", "--store", str(store)]) == 2
    assert not (store / "history.html").exists()


def test_a_store_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "store").write_text("x")
    with pytest.raises(InputError, match=r"SOM-HISTORY-FOREIGN.*is a file"):
        check_store(tmp_path / "store")
    assert main(["history", str(tmp_path / "nothing")]) == 2


def test_saving_into_a_damaged_store_writes_nothing(pytester: pytest.Pytester) -> None:
    run = session(pytester, "one", V1)
    store = store_of(pytester)
    _damage(store, "bad-json")
    with pytest.raises(InputError, match=r"index\.json"):
        save_run(run, store)
    assert sorted(p.name for p in store.iterdir()) == [".lock", "index.json"]  # read locked


# --- refusing borrowed evidence and self-comparison ----------------------------------------


def test_borrowed_evidence_is_refused(pytester: pytest.Pytester) -> None:
    store = store_of(pytester)
    save_run(session(pytester, "one", V1), store)
    # this suite's "adapter" arm is a base arm: the stored adapter is not evidence about it
    base_named_adapter = run_at(session(pytester, "two", V1, arms={"base": {}, "adapter": {}}))
    report = compare_stored(base_named_adapter, resolve_stored(store, "last"))
    reason = report["arms"]["adapter"]["reason"]
    assert reason.startswith("SOM-HISTORY-BORROWED") and "model_kind adapter" in reason
    assert report["arms"]["base"]["status"] == "compared"
    # another suite's run is not evidence about this suite
    other = run_at(session(pytester, "three", V1, suite={"name": "other"}))
    with pytest.raises(EvaluationError, match=r"SOM-HISTORY-BORROWED.*suite 'factory'"):
        compare_stored(other, resolve_stored(store, "1"))
    with pytest.raises(InputError, match="no comparable stored run of suite 'other'"):
        resolve_stored(store, "last", suite="other")
    save_run(other.path, store)
    assert resolve_stored(store, "last", suite="factory").number == 1
    page = render_history(store, None, history_runs(store))
    assert page.count('<section class="suite"') == 2 and 'data-suite="other"' in page
    assert all(a["mark"] is None for run in history_runs(store) for a in run["arms"].values())


def test_a_stored_arm_folder_stands_in_only_for_its_own_adapter(pytester: pytest.Pytester) -> None:
    run = session(pytester, "one", V1)
    configured = suite_identity(load_suite(pytester.path / "suite" / "sommelier.toml"))
    refuse_borrowed_stand_in(configured, "adapter", run / "eval" / "adapter")
    refuse_borrowed_stand_in(configured, "base", run / "eval" / "base")
    with pytest.raises(EvaluationError, match="has model_kind base"):
        refuse_borrowed_stand_in(configured, "adapter", run / "eval" / "base")
    (pytester.path / "suite" / "adapter" / "adapter_config.json").write_text('{"r": 8}')
    retrained = suite_identity(load_suite(pytester.path / "suite" / "sommelier.toml"))
    with pytest.raises(EvaluationError, match=r"SOM-HISTORY-BORROWED.*the configured adapter"):
        refuse_borrowed_stand_in(retrained, "adapter", run / "eval" / "adapter")
    loose = pytester.path / "loose" / "adapter"
    shutil.copytree(run / "eval" / "adapter", loose)
    with pytest.raises(EvaluationError, match="SOM-HISTORY-BORROWED"):
        refuse_borrowed_stand_in(configured, "adapter", loose)


def test_a_session_folder_of_several_suites_is_stored_suite_by_suite(
    pytester: pytest.Pytester,
) -> None:
    run = session(pytester, "one", V1)
    session_dir = pytester.path / "several"
    with_run_id(run, session_dir / "a", "20260101T000000Z-00000a")
    with_run_id(run, session_dir / "b", "20260101T000000Z-00000b")
    with pytest.raises(InputError, match="several suites; store each: a, b"):
        save_run(session_dir, store_of(pytester))
    kept = [save_run(folder, store_of(pytester)) for folder in suite_run_dirs(session_dir)]
    assert [k.number for k in kept] == [1, 2]


def test_a_stored_arm_stands_in_only_for_the_same_adapter() -> None:
    resolved = {
        "name": "s",
        "arms": {
            "adapter": {"model_kind": "adapter", "adapter": {"kind": "local", "sha256": "a" * 64}}
        },
    }
    other = {
        **resolved,
        "arms": {
            "adapter": {"model_kind": "adapter", "adapter": {"kind": "local", "sha256": "b" * 64}}
        },
    }
    current = arm_origin(resolved, {"model_kind": "adapter"}, "adapter")
    refuse_borrowed("adapter", current, current, stored_label="stored run 0001", stand_in=True)
    stored = arm_origin(other, {"model_kind": "adapter"}, "adapter")
    refuse_borrowed("adapter", current, stored, stored_label="stored run 0001", stand_in=False)
    with pytest.raises(EvaluationError, match="ran adapter sha256 bbbbbbbbbbbb, the configured"):
        refuse_borrowed("adapter", current, stored, stored_label="stored run 0001", stand_in=True)
    base = arm_origin({"name": "s", "arms": {"adapter": {"model_kind": "base"}}}, None, "adapter")
    with pytest.raises(EvaluationError, match="has model_kind base"):
        refuse_borrowed("adapter", current, base, stored_label="stored run 0001", stand_in=True)
    foreign = {**stored, "suite": "t"}
    with pytest.raises(EvaluationError, match="adapter of suite 't'"):
        refuse_borrowed("adapter", current, foreign, stored_label="x", stand_in=False)


def test_a_run_is_never_compared_with_itself(pytester: pytest.Pytester, capsys) -> None:
    store = store_of(pytester)
    run = session(pytester, "one", V1)
    save_run(run, store)
    assert main(["compare", str(run), str(run)]) == 2
    assert main(["compare", str(run / "eval" / "adapter"), str(run / "eval" / "adapter")]) == 2
    assert main(["compare", str(run), "1", "--store", str(store)]) == 2  # its stored copy
    stored_arm = stored_runs(store)[0].path / "eval" / "adapter"
    assert main(["compare", str(run / "eval" / "adapter"), str(stored_arm)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all("SOM-HISTORY-SAME" in line for line in err)
    # two different arms of one run still compare (the existing behaviour)
    assert main(["compare", str(run / "eval" / "adapter"), str(run / "eval" / "base")]) == 0


# --- the gate spec -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "part"),
    [
        ("full_call_exact_match", "the spec"),
        ("a:b:c:d", "the spec"),
        ("full_call_exact_match::0.1", "the spec"),
        ("Exact:0.02", "metric"),  # not a scorer name either (lower-case snake case)
        ("full_call_exact_match:h e:0.02", "slice"),
        ("full_call_exact_match:he:2%", "margin"),
        ("full_call_exact_match:he:-0.1", "margin"),
        ("full_call_exact_match:nan", "margin"),
        ("full_call_exact_match:he:x", "margin"),
    ],
)
def test_a_bad_fail_spec_is_one_line_naming_the_part(text: str, part: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_fail_spec(text)
    message = str(caught.value)
    assert message.startswith("SOM-HISTORY-FAIL-SPEC: --sommelier-compare-fail")
    assert f"{text!r}: {part} " in message and "\n" not in message


@settings(max_examples=examples(100))
@given(
    metric=st.sampled_from(GATE_METRICS),
    slice_=st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,8}", fullmatch=True)),
    margin=st.floats(min_value=0, max_value=1, exclude_max=True, allow_nan=False),
)
def test_a_fail_spec_round_trips(metric: str, slice_: str | None, margin: float) -> None:
    if slice_ is not None and not valid_name(slice_):
        slice_ = None
    text = f"{metric}:{slice_}:{margin!r}" if slice_ else f"{metric}:{margin!r}"
    spec = parse_fail_spec(text)
    assert (spec.metric, spec.slice, spec.margin) == (metric, slice_ or "overall", margin)


# --- the table, the page and the CI summary ------------------------------------------------


def test_history_table_and_page(pytester: pytest.Pytester, capsys) -> None:
    store = store_of(pytester)
    for name, outputs in (("one", V1), ("two", REGRESSED), ("three", IMPROVED)):
        save_run(session(pytester, name, outputs), store)
    capsys.readouterr()
    assert main(["history", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    assert header[:10] == ["run", "commit", "time", "suite", "verdict", "label", "step",
                           "checkpoint", "arm", "slice"]  # fmt: skip
    firsts = [line.split()[0] for line in out if line[:4].isdigit()]
    assert firsts == ["0001", "0002", "0003"]
    assert len([line for line in out if " overall " in line]) == 6  # 3 runs x 2 arms
    adapter_overall = [line.split()[-1] for line in out if "adapter  overall" in line]
    assert adapter_overall == ["0.571", "0.286", "0.714"]  # full_call 4/7, 2/7, 5/7
    page = (store / "history.html").read_text(encoding="utf-8")
    assert "<script" not in page and "default-src 'none'" in html.unescape(page)
    for number in ("0001", "0002", "0003"):
        assert f'<tr data-run="{number}"' in page
    links = [p for p in page.split('href="')[1:] if "report.html" in p.split('"')[0]]
    assert len(links) == 3
    for link in links:
        assert (store / link.split('"')[0]).resolve().is_file()
    record = json.loads((stored_runs(store)[0].path / "stored_run.json").read_text())
    interval = record["intervals"]["adapter"]["overall"]["full_call_exact_match"]
    assert (
        interval["value"] == pytest.approx(4 / 7)
        and interval["lower"] <= 4 / 7 <= interval["upper"]
    )
    elsewhere = pytester.path / "pages" / "h.html"
    assert main(["history", str(store), "--out", str(elsewhere)]) == 0
    assert "../.sommelier/0001_" in elsewhere.read_text(encoding="utf-8")


def test_page_of_an_empty_store_and_inert_text(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    page = render_history(store, None, history_runs(store))
    assert 'id="empty"' in page and "<script" not in page
    assert md_cell("a|b <img src=x>\nc") == "a\\|b &lt;img src=x&gt; c"


def test_ci_summary_and_github_step_summary(pytester: pytest.Pytester, monkeypatch) -> None:
    store = store_of(pytester)
    gates = [{"name": "valid", "arm": "adapter", "metric": "valid_json_rate", "min": 0.5}]
    save_run(session(pytester, "one", V1, gates=gates), store)
    run = session(pytester, "two", REGRESSED, gates=gates)
    report = compare_stored(run_at(run), resolve_stored(store, "last"))
    write_compare(run / "report", report, compare_markdown(report))
    results = evaluate_fail_specs(parse_fail_specs(["full_call_exact_match:0.02"]), report)
    verdict = json.loads((run / "gate_verdict.json").read_text())
    (run / "gate_verdict.json").write_text(json.dumps(with_fail_results(verdict, results)))
    step = pytester.path / "step.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    target = write_summary(run)
    text = target.read_text(encoding="utf-8")
    assert target == run / "report" / "summary.md"
    lines = text.splitlines()
    assert lines[0] == "## sommelier: suite factory: FAIL"
    assert any(
        line.startswith("| PASS | valid | adapter valid_json_rate [overall] value 1.000 ")
        for line in lines
    )
    failed = next(line for line in lines if "compare-fail:adapter" in line)
    assert failed.startswith("| **FAIL** |") and "broken 2 (en-1, en-3)" in failed
    assert "| adapter | overall | 1.000 | 0.286 | 0.429 | 0.417 | 0.286 | 7 |" in lines
    assert "### adapter vs base" in lines and "#### adapter vs adapter@0001" in lines
    assert "- broken (stored run hit, this run misses): en-1, en-3" in lines
    write_summary(run, [report])
    assert step.read_text(encoding="utf-8") == "earlier step\n" + (text + "\n") * 2
    assert "#### adapter vs adapter@0001" not in summary_markdown(run, [])
