"""Extension scorers in the run-store views: ``sommelier history`` (the table and
``history.html``), the comparison with a stored run (``sommelier compare``,
``report/compare-NNNN.md``) and ``report/summary.md``. Real sessions with the ``conftest.py``
scorer of ``test_extension_session`` (``lenient_call``), autosaved into the store.

Hand-derived numbers (tests/history_helpers.py): the outputs there are exact calls or calls of
a wrong name, so ``lenient_call`` counts what ``full_call_exact_match`` counts: V1's adapter
4 of 7 (en 3 of 4, he 1 of 3), REGRESSED's 2 of 7 (en 1 of 4, he 1 of 3), the base 2 of 7 in
every run (en 2 of 4, he 0 of 3); REGRESSED minus V1 is -2/7 overall, -2/4 in en, 0 in he.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from history_helpers import REGRESSED, V1, script
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import SCORER_HOOK, write_scripted_suite
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.core.scorers import NAME
from pytest_sommelier.data.store.validate import problem
from pytest_sommelier.view.history_page import history_lines
from pytest_sommelier.view.text import scorer_metrics

SCORED = {"scorers": ["lenient_call"]}


def autosaved(
    pytester: pytest.Pytester, out: str, outputs: dict[str, str], *args: str, **suite: Any
) -> Path:
    """One real session of the scripted suite (with the ``lenient_call`` hook in its
    ``conftest.py``; ``suite`` the ``[suite]`` table's overrides), stored."""
    path = write_scripted_suite(pytester, script(outputs), suite=suite)
    with (path.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(SCORER_HOOK)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", out, "--sommelier-autosave", *args)  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    return pytester.path / out


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def md_rows(text: str, first: str) -> list[list[str]]:
    """The rows (header first) of the Markdown table whose header starts with ``first``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first} |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append(cells(line))
    return rows


FIVE = [
    "valid_json_rate",
    "function_name_accuracy",
    "argument_exact_match",
    "argument_f1",
    "full_call_exact_match",
]


def test_history_shows_a_scorer_column_where_a_run_has_it_and_a_dash_where_not(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    autosaved(pytester, "one", V1)  # no scorers enabled: the five alone
    autosaved(pytester, "two", V1, **SCORED)
    capsys.readouterr()
    assert main(["history"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[-6:] == ["valid_json", "name_acc", "args_exact", "args_f1", "full_call",
                           "lenient_call"]  # fmt: skip
    table = [line.split() for line in lines[1:] if re.match(r"(\d{4}\s|\s{4})", line)]
    # run 0001: 2 arms x 3 slices, no lenient_call (a dash); run 0002: the values
    first, second = table[:6], table[6:12]
    assert all(row[-1] == "-" for row in first), first
    by_arm_slice = {(row[-8], row[-7]): row[-1] for row in second}
    assert by_arm_slice[("adapter", "overall")] == "0.571"
    assert by_arm_slice[("adapter", "en")] == "0.750"
    assert by_arm_slice[("adapter", "he")] == "0.333"
    assert by_arm_slice[("base", "overall")] == "0.286"
    assert all(row[-1] == row[-2] for row in second)  # here lenient equals the strict metric
    page = (pytester.path / ".sommelier" / "history.html").read_text(encoding="utf-8")
    assert re.findall(r"<h3>([a-z0-9_]+)</h3>", page) == [*FIVE, "lenient_call"]
    chart = page.split('data-metric="lenient_call" data-slice="overall"', 1)[1]
    points = re.findall(r'<g class="pt[^"]*" data-run="(\d+)"', chart.split("</figure>")[0])
    assert points == ["0002", "0002"]  # both arms in run 0002, none in 0001 (not scored)
    full = page.split('data-metric="full_call_exact_match" data-slice="overall"', 1)[1]
    assert len(re.findall(r'<g class="pt', full.split("</figure>")[0])) == 4


def test_the_comparison_with_a_stored_run_and_the_summary_show_the_scorer_after_the_five(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    autosaved(pytester, "one", V1, **SCORED)
    two = autosaved(pytester, "two", REGRESSED, "--sommelier-compare", "last", **SCORED)
    compared = (two / "report" / "compare-0001.md").read_text(encoding="utf-8")
    rows = md_rows(compared, "slice")  # the adapter's table first, then the base's
    assert rows[0] == ["slice", *FIVE, "lenient_call"]
    adapter = {row[0]: row for row in rows[1:4]}
    assert adapter["overall"][-1].startswith("-0.286 ")
    assert adapter["en"][-1].startswith("-0.500 ") and adapter["he"][-1].startswith("+0.000 ")
    assert adapter["overall"][-1].split(" ", 1)[1].startswith("[")  # with its interval
    summary = (two / "report" / "summary.md").read_text(encoding="utf-8")
    metrics = md_rows(summary, "arm")
    assert metrics[0] == ["arm", "slice", *FIVE, "lenient_call", "n"]
    values = {(row[0], row[1]): row[-2] for row in metrics[1:]}
    assert values[("adapter", "overall")] == "0.286" and values[("base", "en")] == "0.500"
    deltas = md_rows(summary, "slice")
    assert deltas[0] == ["slice", *FIVE, "lenient_call"]
    assert deltas[1][0] == "overall" and deltas[1][-1].startswith("+0.000 ")  # adapter-vs-base
    # the comparison with the stored run inside the summary is the compare file's table
    assert "| overall |" in summary and adapter["overall"][-1] in summary
    # sommelier compare prints the same column in the terminal
    capsys.readouterr()
    assert main(["compare", "2", "1", "--out", str(pytester.path / "cmp")]) in (0, 1)
    printed = capsys.readouterr().out
    header = next(line for line in printed.splitlines() if line.strip().startswith("slice"))
    assert header.split()[-1] == "lenient_call" and header.split()[-2] == "full_call"


def test_a_summary_without_scorers_has_the_five_alone(pytester: pytest.Pytester) -> None:
    one = autosaved(pytester, "one", V1)
    summary = (one / "report" / "summary.md").read_text(encoding="utf-8")
    assert md_rows(summary, "arm")[0] == ["arm", "slice", *FIVE, "n"]
    assert md_rows(summary, "slice")[0] == ["slice", *FIVE]


# --- hostile stored scorer names ------------------------------------------------------------

HOSTILE = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=8),
    st.lists(st.text(max_size=8), max_size=2),
    st.lists(
        st.fixed_dictionaries(
            {"name": st.one_of(st.text(max_size=10), st.integers(), st.none()),
             "version": st.one_of(st.text(max_size=3), st.integers()),
             "kind": st.one_of(st.sampled_from(["rate", "ratio"]), st.text(max_size=5))}
        ),
        max_size=2,
    ),
)  # fmt: skip


@settings(max_examples=examples(100))
@given(HOSTILE)
def test_a_stored_reports_scorers_field_fits_the_schema_or_is_refused(value: Any) -> None:
    """The one validating reader's rule for ``scorers``: a list of ``{name, version, kind}``
    whose names are scorer names; whatever it accepts names only scorer-named columns."""
    report = {"schema_version": "sommelier.evaluation_report.v1", "arm": "a", "slices": {},
              "metrics": {}, "scorers": value}  # fmt: skip
    fits = problem("evaluation_report", report) is None
    shaped = isinstance(value, list) and all(
        isinstance(e, dict) and isinstance(e.get("name"), str) and NAME.fullmatch(e["name"])
        and isinstance(e.get("version"), str) and e["version"] != ""
        and e.get("kind") in ("rate", "ratio")
        for e in value
    )  # fmt: skip
    assert fits == shaped, value


@settings(max_examples=examples(100))
@given(st.dictionaries(st.text(max_size=10), st.floats(0, 1), max_size=4))
def test_no_stored_metric_key_but_a_scorer_name_becomes_a_column(metrics: dict) -> None:
    names = scorer_metrics(metrics)
    assert all(NAME.fullmatch(name) for name in names)
    assert not set(names) & {*FIVE, "acceptable_call_match"}
    values = {key: {"value": value, "lower": None, "upper": None} for key, value in metrics.items()}
    values.update({m: {"value": 0.5, "lower": None, "upper": None} for m in FIVE})
    run = {"label": "0001", "commit": None, "dirty": False, "time": "t", "suite": "s",
           "verdict": "pass", "arms": {"a": {"values": {"overall": values}, "mark": None,
                                               "adapter_changed": False}}}  # fmt: skip
    header = history_lines([run])[0].split()
    assert header[15:] == names  # after run..slice (label, step, checkpoint among) and the five


def test_a_hostile_scorers_field_in_a_stored_report_is_one_line(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    autosaved(pytester, "one", V1, **SCORED)
    stored = next((pytester.path / ".sommelier").glob("0001_*"))
    path = stored / "eval" / "adapter" / "evaluation_report.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    report["scorers"] = [{"name": "x | <b>", "version": "1", "kind": "rate"}]
    path.write_text(json.dumps(report), encoding="utf-8")
    capsys.readouterr()
    assert main(["history"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SOM-STORED-" in err[0] and "evaluation_report.json" in err[0]
    assert "scorers" in err[0]
