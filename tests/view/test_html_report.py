"""The HTML report renderer (``view/html.py``) over runs written by real sessions.

The run comes from a pytest session over the scripted suite of ``html_helpers`` (outcomes
worked out by hand there); a few tests edit a copy of it to show how the page degrades.
The page is checked in a real browser in ``tests/view/test_html_report_browser.py``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
from pathlib import Path

import pytest
from html_helpers import COUNTS, HITS, INJECTED, make_run, page_blob, table_rows

from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.errors import InputError
from pytest_sommelier.view.html import (
    RAW_LIMIT,
    REPORT_FILE,
    forest_plot,
    render_report,
    write_report,
)


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("scripted"))


@pytest.fixture
def run(scripted_run: Path, tmp_path: Path) -> Path:
    """A private copy of the scripted run (tests may edit it)."""
    return Path(shutil.copytree(scripted_run, tmp_path / "run"))


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value), encoding="utf-8")


@pytest.mark.slow
def test_header_shows_identity_verdict_and_each_gate(run: Path) -> None:
    page = render_report(run)
    resolved = read(run / "suite.resolved.json")
    assert f"<bdi>{resolved['name']}</bdi>" in page
    assert resolved["run_id"] in page
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", page)
    config = read(run / "eval/adapter/evaluation_report.json")["config_sha256"]
    assert f">{config[:12]}<" in page and f'title="{config}"' in page
    assert resolved["test_split"]["sha256"][:12] in page
    assert 'data-verdict="fail"' in page and ">FAIL<" in page
    gates = {row[0]: row for row in table_rows(page, "gates")[1:]}
    # adapter valid_json 5/7 >= 0.7 passes; the uplift interval's lower bound is not above 0
    assert gates["adapter-valid"][3] == "0.714" and gates["adapter-valid"][5] == "pass"
    assert gates["uplift"][4] == "ci_lower_above 0.0" and gates["uplift"][5].startswith("FAIL")


@pytest.mark.slow
def test_metrics_table_holds_each_arm_slice_with_fractions(run: Path) -> None:
    rows = {(r[0], r[1]): r[2:] for r in table_rows(render_report(run), "metrics")[1:]}
    assert set(rows) == {(a, s) for a in ("adapter", "base") for s in ("en", "he", "overall")}
    # hand-derived: adapter parses 5 of 7 and hits en-0, en-1, he-0; base hits en-0, en-2
    assert rows["adapter", "overall"][0] == "0.714 5/7"
    assert rows["adapter", "overall"][4] == "0.429 3/7"
    assert rows["base", "overall"][4] == "0.286 2/7"
    assert rows["adapter", "he"][-1] == "3" and rows["base", "en"][-1] == "4"


@pytest.mark.slow
def test_forest_plot_has_a_row_per_slice_and_metric_and_marks_intervals_off_zero(
    run: Path,
) -> None:
    report = read(run / "report/adapter-vs-base.json")
    # the plot draws the selected intervals (the ``intervals`` block; ``ci95`` is the seed's
    # bootstrap kept beside them), so the edits go to both
    for block, metric, bounds in (
        (report["slices"]["en"], "argument_f1", {"lower": 0.1, "upper": 0.4}),
        (report, "valid_json_rate", {"lower": -0.5, "upper": -0.2}),
    ):
        block["ci95"]["intervals"][metric] = dict(bounds)
        block["intervals"]["intervals"][metric].update(bounds)
    report["slices"]["en"]["deltas"]["argument_f1"] = 0.2
    report["deltas"]["valid_json_rate"] = -0.3
    plot = forest_plot(report)
    assert len(plot["rows"]) == 3 * len(METRIC_NAMES)
    marked = {(r["slice"], r["metric"]) for r in plot["rows"] if r["excludes_zero"]}
    expected = {
        (label, metric)
        for label, block in [("overall", report), *report["slices"].items()]
        for metric, i in block["intervals"]["intervals"].items()
        if i["lower"] > 0 or i["upper"] < 0
    }
    assert marked == expected and ("en", "argument_f1") in marked
    for row in plot["rows"]:
        assert plot["left"] <= row["x1"] <= row["cx"] <= row["x2"] <= plot["right"]
    assert plot["left"] < plot["zero"] < plot["right"]
    write(run / "report/adapter-vs-base.json", report)
    page = render_report(run)
    assert page.count('<g class="frow') == 15 and page.count('<g class="frow excl"') == 2


@pytest.mark.slow
def test_blob_outcomes_agree_with_the_metrics_module(run: Path) -> None:
    blob = page_blob(render_report(run))
    assert blob["arms"] == ["base", "adapter"]
    hits = {
        arm: {e[0] for e in blob["ex"] if e[7][a][0] == 1} for a, arm in enumerate(blob["arms"])
    }
    assert hits == HITS
    pairs = {"fixed": (1, 0), "broken": (0, 1), "both_miss": (0, 0), "both_hit": (1, 1)}
    for name, (cand, ref) in pairs.items():
        count = sum(e[7][1][0] == cand and e[7][0][0] == ref for e in blob["ex"])
        assert count == COUNTS[name], name
    en3 = next(e for e in blob["ex"] if e[0] == "en-3")
    assert en3[7][1][4] == [[".room", "4", '"4"']]


@pytest.mark.slow
def test_untrusted_text_cannot_leave_its_element(run: Path) -> None:
    identity = read(run / "eval/adapter/evaluation_report.json")
    identity["adapter_identity"] = {"name": "<b onmouseover=alert(1)>x</b>"}
    write(run / "eval/adapter/evaluation_report.json", identity)
    page = render_report(run)
    assert INJECTED not in page and "<b onmouseover" not in page
    assert "&lt;b onmouseover=alert(1)&gt;x&lt;/b&gt;" in page
    # only the page's own two script elements exist
    assert page.count("<script") == 2 and page.count("</script>") == 2
    blob = page_blob(page)
    he3 = next(e for e in blob["ex"] if e[0] == "he-3")
    assert he3[7][1][2] == INJECTED  # the text itself survives, as data


@pytest.mark.slow
def test_content_security_policy_allows_only_the_pages_own_blocks(run: Path) -> None:
    page = render_report(run)
    csp = html.unescape(
        re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    )
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    for tag in ("style", "script"):
        body = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S)[-1]
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in csp
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page


@pytest.mark.slow
def test_missing_optional_artifacts_are_said_not_fatal(run: Path) -> None:
    (run / "gate_verdict.json").unlink()
    (run / "eval/base/inference_telemetry.json").unlink()
    (run / "report/adapter-vs-base.json").unlink()
    page = render_report(run)
    assert 'data-verdict="none"' in page and "gate_verdict.json is absent" in page
    assert "no inference_telemetry.json for this arm" in page
    assert "comparison &#39;adapter-vs-base&#39; has no report" in page
    assert '<g class="frow' not in page
    assert len(page_blob(page)["ex"]) == 7  # the examples still show


@pytest.mark.slow
def test_an_edited_or_missing_split_copy_hides_the_examples_and_says_why(run: Path) -> None:
    split = run / "inputs/test_split.jsonl"
    split.write_text(split.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    page = render_report(run)
    assert 'id="data"' not in page and 'id="no-examples"' in page
    assert "does not have the digest the run recorded" in page
    split.unlink()
    assert "is absent, so gold calls and prompts are unknown" in render_report(run)


@pytest.mark.slow
def test_subset_run_gets_incomplete_and_subset_banners(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, "-k", "not he-")
    page = render_report(run_dir)
    assert 'data-verdict="incomplete"' in page
    assert 'data-banner="incomplete"' in page
    subset = re.search(r'data-banner="subset">([^<]*)<', page).group(1)
    assert "adapter/he: 0 of 3" in subset and "base/he: 0 of 3" in subset
    blob = page_blob(page)
    he0 = next(e for e in blob["ex"] if e[0] == "he-0")
    assert [o[0] for o in he0[7]] == [-1, -1]  # not scored in either arm


@pytest.mark.slow
def test_cached_and_not_cross_comparable_banners(run: Path) -> None:
    telemetry = read(run / "eval/adapter/inference_telemetry.json")
    telemetry["cached_examples"] = 2
    write(run / "eval/adapter/inference_telemetry.json", telemetry)
    report = read(run / "report/adapter-vs-base.json")
    report["efficiency"]["cross_comparable"] = False
    report["efficiency"]["reason"] = "device differs (cpu vs cuda)"
    write(run / "report/adapter-vs-base.json", report)
    page = render_report(run)
    assert re.search(r'data-banner="cached">[^<]*adapter: 2', page)
    assert re.search(r'data-banner="timing">[^<]*device differs \(cpu vs cuda\)', page)
    assert "not cross-comparable" in page


@pytest.mark.slow
def test_newer_fields_show_when_present(run: Path) -> None:
    """Fields other 0.2 features add (engine, a sixth metric, identical_outputs,
    miss_category) render without a change to the renderer."""
    extra = {"value": 0.5, "numerator": 1, "denominator": 2}
    for arm in ("adapter", "base"):
        path = run / f"eval/{arm}/evaluation_report.json"
        report = read(path)
        report["model_identity"] = {**report["model_identity"], "engine": {"name": "vllm"}}
        report["metrics"]["acceptable_call_match"] = extra
        for block in report["slices"].values():
            block["metrics"]["acceptable_call_match"] = extra
            block["future_counts"] = {"wrong_value": 1}
        write(path, report)
    comparison = read(run / "report/adapter-vs-base.json")
    comparison["deltas"]["acceptable_call_match"] = 0.25
    comparison["ci95"]["intervals"]["acceptable_call_match"] = {"lower": 0.1, "upper": 0.4}
    comparison["identical_outputs"] = 3
    write(run / "report/adapter-vs-base.json", comparison)
    generations = run / "eval/adapter/generations.en.jsonl"
    records = artifacts.read_jsonl(generations)
    records[3]["miss_category"] = "wrong_type"
    generations.write_text(artifacts.jsonl(records), encoding="utf-8")
    page = render_report(run)
    assert "name=vllm" in page
    header = table_rows(page, "metrics")[0]
    # after the five, before n, under the label the terminal and Markdown use
    assert header[-2] == "acceptable-values match (BFCL rules)"
    assert 'data-metric="acceptable_call_match"' in page
    assert 'data-identical="adapter-vs-base">3 of 7 byte for byte; en ' in page
    assert "en.future_counts" in page and "wrong_value=1" in page
    en3 = next(e for e in page_blob(page)["ex"] if e[0] == "en-3")
    assert en3[7][1][6] == "wrong_type"


@pytest.mark.slow
def test_long_raw_output_is_cut_in_the_page_and_says_its_length(run: Path) -> None:
    generations = run / "eval/base/generations.he.jsonl"
    records = artifacts.read_jsonl(generations)
    records[0]["raw_text"] = "x" * (RAW_LIMIT + 10)
    generations.write_text(artifacts.jsonl(records), encoding="utf-8")
    entry = next(e for e in page_blob(render_report(run))["ex"] if e[0] == records[0]["example_id"])
    assert len(entry[7][0][2]) == RAW_LIMIT and entry[7][0][8] == RAW_LIMIT + 10


@pytest.mark.slow
def test_a_tampered_generation_record_is_refused_naming_it(run: Path) -> None:
    generations = run / "eval/adapter/generations.he.jsonl"
    records = artifacts.read_jsonl(generations)
    records[1]["parse_status"] = "ok"  # he-1 did not parse: no parsed_call
    generations.write_text(artifacts.jsonl(records), encoding="utf-8")
    with pytest.raises(InputError, match=r"generations\.he\.jsonl: example 'he-1'") as info:
        render_report(run)
    assert info.value.code == "SOM-STORED-FIELD"


@pytest.mark.slow
def test_refuses_a_folder_that_is_not_a_run(tmp_path: Path, run: Path) -> None:
    with pytest.raises(InputError, match=r"suite\.resolved\.json: not found") as info:
        render_report(tmp_path)
    assert info.value.code == "SOM-STORED-MISSING"
    several = tmp_path / "several"
    shutil.copytree(run, several / "demo")
    shutil.copytree(run, several / "bfcl")
    with pytest.raises(InputError, match="give one of: bfcl, demo"):
        render_report(several)


@pytest.mark.slow
def test_write_report_writes_the_rendered_page_atomically(run: Path, tmp_path: Path) -> None:
    target = write_report(run)
    assert target == run / REPORT_FILE
    assert target.read_text(encoding="utf-8") == render_report(run)
    assert not list(run.glob(f".{REPORT_FILE}.*"))
    elsewhere = write_report(run, tmp_path / "out" / "page.html")
    assert elsewhere.read_text(encoding="utf-8") == target.read_text(encoding="utf-8")


@pytest.mark.slow
def test_no_machine_path_reaches_the_page(run: Path) -> None:
    page = render_report(run)
    assert str(run) not in page and str(run.parent) not in page


@pytest.mark.slow
def test_a_run_with_no_arm_report_still_renders(run: Path) -> None:
    """A session whose model never loaded writes a verdict but no arm report."""
    shutil.rmtree(run / "eval")
    shutil.rmtree(run / "report")
    page = render_report(run)
    assert 'data-verdict="fail"' in page
    assert "arm &#39;adapter&#39; has no evaluation report" in page
    assert [e[7] for e in page_blob(page)["ex"]] == [[]] * 7


@pytest.mark.slow
def test_misses_by_category_table(run: Path) -> None:
    """The ``misses`` blocks (per arm, slice and overall) become one table."""
    page = render_report(run)
    rows = {(r[0], r[1]): r[2:] for r in table_rows(page, "misses")[1:]}
    header = table_rows(page, "misses")[0]
    report = read(run / "eval/adapter/evaluation_report.json")
    for lang, block in [*report["slices"].items(), ("overall", report)]:
        expected = block["misses"]
        cells = dict(zip(header[2:], rows["adapter", lang], strict=True))
        assert cells["misses"] == str(expected["misses"])
        for name, count in expected["categories"].items():
            assert cells[name] == str(count)


@pytest.mark.slow
def test_an_adapter_with_no_effect_gets_a_banner(run: Path) -> None:
    report = read(run / "report/adapter-vs-base.json")
    report["identical_outputs"] = report["compared_examples"] = 7
    write(run / "report/adapter-vs-base.json", report)
    page = render_report(run)
    assert re.search(r'data-banner="noeffect">Adapter had no effect on 7 of 7 outputs', page)
