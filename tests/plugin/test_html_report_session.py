"""Who writes ``report.html``: the session finish (serial and ``-n 2``, complete or not),
``sommelier rescore`` and ``sommelier report`` (pytester sessions over the scripted suite)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.view.html import REPORT_FILE, render_report

SCRIPT = {
    "adapter": {k: call_text(v) for k, v in GOLD.items() if k != "en-2"},
    "base": {"en-0": call_text(GOLD["en-0"])},
}
GATES = [{"name": "adapter-exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]


def run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    runner = pytester.runpytest_subprocess if subprocess else pytester.runpytest
    return runner("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


def page_verdict(page: str) -> str:
    return re.search(r'class="verdict-word" data-verdict="([a-z]+)"', page).group(1)


def other_files(run_dir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(run_dir)): p.read_bytes()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file() and p.name != REPORT_FILE
    }


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_session_finish_writes_the_page_with_the_verdict(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result = run(pytester, *(["-n", "2"] if xdist else []), subprocess=xdist)
    assert result.ret == 0
    out = pytester.path / "out"
    page = (out / REPORT_FILE).read_text(encoding="utf-8")
    assert page_verdict(page) == read_json(out / "gate_verdict.json")["verdict"] == "pass"
    assert page == render_report(out)  # the session renders exactly what `report` renders
    result.stdout.fnmatch_lines([f"*HTML report: *{REPORT_FILE}*"])


def test_an_incomplete_run_gets_a_page_that_says_so(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result = run(pytester, "-k", "not he-")
    assert result.ret != 0
    page = (pytester.path / "out" / REPORT_FILE).read_text(encoding="utf-8")
    assert page_verdict(page) == "incomplete"
    assert 'data-banner="incomplete"' in page and 'data-banner="subset"' in page


def test_a_rewrite_removes_the_earlier_page_first(tmp_path: Path) -> None:
    (tmp_path / REPORT_FILE).write_text("an earlier run's page", encoding="utf-8")
    artifacts.remove_stale(tmp_path)
    assert not (tmp_path / REPORT_FILE).exists()


def test_rescore_writes_the_page_in_place_and_elsewhere(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    run(pytester)
    out = pytester.path / "out"
    (out / REPORT_FILE).unlink()
    assert main(["rescore", str(out)]) == 0
    assert (out / REPORT_FILE).read_text(encoding="utf-8") == render_report(out)
    again = pytester.path / "again"
    assert main(["rescore", str(out), "--out", str(again)]) == 0
    assert page_verdict((again / REPORT_FILE).read_text(encoding="utf-8")) == "pass"
    assert f"HTML report: {again / REPORT_FILE}" in capsys.readouterr().out


def test_report_command_renders_a_stored_run_without_touching_it(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    run(pytester)
    out = pytester.path / "out"
    (out / REPORT_FILE).unlink()
    before = other_files(out)
    assert main(["report", str(out)]) == 0
    assert (out / REPORT_FILE).is_file()
    assert f"wrote {out / REPORT_FILE}" in capsys.readouterr().out
    target = pytester.path / "pages" / "demo.html"
    assert main(["report", str(out), "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == (out / REPORT_FILE).read_text(encoding="utf-8")
    assert other_files(out) == before


def test_report_command_refuses_a_folder_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sommelier report: SOM-STORED-MISSING:") and "\n" not in err
    assert not (tmp_path / REPORT_FILE).exists()
