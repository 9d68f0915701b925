"""A sampled run (``--sommelier-sample N:SEED``) says so in every view of the run store:
``sommelier history``'s table and ``history.html``, ``sommelier compare`` (terminal and
``compare-NNNN.md``), the run's ``report/summary.md`` and its page; and a sampled run never
compares as the full suite (the identity gate refuses it, naming the split).

Real pytester sessions over the scripted fake (``history_helpers``), with and without xdist.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from history_helpers import V1, session
from hypothesis import example, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.view.history_page import history_lines

SAMPLED = "sample: 2 of 4 roots with their translations (seed 1)"


def stored_pair(pytester: pytest.Pytester, *xdist: str) -> Path:
    """Run 0001: the whole split; run 0002: a seeded sample of 2 roots; both autosaved."""
    session(pytester, "full", V1, *xdist, "--sommelier-autosave")
    session(pytester, "part", V1, *xdist, "--sommelier-autosave", "--sommelier-sample", "2:1")
    return pytester.path / ".sommelier"


@pytest.mark.parametrize(  # -n 2 starts two worker processes per session: slow tier
    "xdist", [(), pytest.param(("-n", "2"), marks=pytest.mark.slow)], ids=["plain", "xdist"]
)
def test_every_view_says_a_sampled_run_was_a_sample(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], xdist: tuple[str, ...]
) -> None:
    store = stored_pair(pytester, *xdist)
    index = json.loads((store / "index.json").read_text())["runs"]
    assert "sample" not in index[0]["identity"] and index[1]["identity"]["sample"]["roots"] == 2
    capsys.readouterr()
    assert main(["history", str(store), "--out", str(pytester.path / "history.html")]) == 0
    table = capsys.readouterr().out.splitlines()
    rows: dict[str, str] = {}
    for line in table:  # the table row: the first line that starts with the run's label
        rows.setdefault(line[:4], line)
    assert "(sample)" in rows["0002"] and "(sample)" not in rows["0001"]
    assert any(line.startswith(f"0002: {SAMPLED}") for line in table)
    assert not any(line.startswith("0001: sample") for line in table)
    page = (pytester.path / "history.html").read_text()
    assert page.count('class="sample"') == 1 and f'title="{SAMPLED}' in page
    # the sampled run's own summary and page
    part = pytester.path / "part"
    assert SAMPLED in (part / "report" / "summary.md").read_text()
    assert SAMPLED in (part / "report.html").read_text()
    # compared with the full run: refused by the identity gate, and the sample said
    assert main(["compare", str(part), "1"]) == 4  # nothing could be compared
    out = capsys.readouterr().out
    assert f"this run: {SAMPLED}" in out and "the stored run: sample" not in out
    assert "REFUSED" in out and "test_split" in out


def test_a_sampled_stored_run_is_said_when_it_is_the_reference(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    store = stored_pair(pytester)
    capsys.readouterr()
    out_dir = pytester.path / "compared"
    main(["compare", str(pytester.path / "full"), "2", "--store", str(store), "--out",
          str(out_dir)])  # fmt: skip
    out = capsys.readouterr().out
    assert f"the stored run: {SAMPLED}" in out and "this run: sample" not in out
    markdown = (out_dir / "compare-0002.md").read_text()
    assert f"**the stored run**: {SAMPLED}" in markdown and "**this run**" not in markdown


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["roots", "of_roots", "seed", "x"]), inner, max_size=4),
    max_leaves=10,
)


@settings(max_examples=examples(100))  # docs/hardening.md, V38: whole in every tier
@given(sample=JSON)
@example(sample={"roots": "\n"})  # a stored line break once printed a second line
def test_the_history_table_marks_a_sample_only_for_a_recorded_draw(sample: object) -> None:
    run = {"label": "0001", "commit": None, "dirty": False, "time": "t", "suite": "s",
           "verdict": "pass", "arms": {}, "adapters": {}, "run_label": None, "sample": sample}
    lines = history_lines([run])  # a stored run's identity.sample of any shape: never raises
    (row,) = [line for line in lines if line.startswith("0001 ")]
    marked = "(sample)" in row
    assert marked == isinstance(sample, dict)
    assert any(line.startswith("0001: sample: ") for line in lines) == marked
    assert all("\n" not in line for line in lines)
