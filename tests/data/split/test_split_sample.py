"""``--sommelier-sample N[:SEED]`` and the callback's ``max_examples``: a seeded sample of N
roots with their translations (``data.split.sample``), a complete verdict on it, a run that
says it is a sample everywhere and never compares as the full suite."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite
from property_budget import examples
from suite_factory import make_row, write_split

from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.split.sample import parse_sample, sample_split
from pytest_sommelier.errors import InputError

pytest_plugins = ["pytester"]


def split_of(tmp_path: Path, roots: int, translated: int) -> Path:
    rows = [make_row(f"en-{i}", "en") for i in range(roots)]
    rows += [make_row(f"he-{i}", "he", f"en-{i}") for i in range(min(translated, roots))]
    return write_split(tmp_path / "test.jsonl", rows)


@settings(max_examples=examples(100))
@given(roots=st.integers(1, 12), translated=st.integers(0, 12), n=st.integers(1, 15),
       seed=st.integers(0, 2**32))
def test_a_sample_keeps_n_roots_with_every_translation(
    tmp_path_factory: pytest.TempPathFactory, roots: int, translated: int, n: int, seed: int
) -> None:
    folder = tmp_path_factory.mktemp("s")
    split = load_split(split_of(folder, roots, translated), ("en", "he") if translated else ("en",))
    sample = sample_split(split, n, seed)
    kept = {e.example_id for e in sample.slices["en"]}
    assert len(kept) == min(n, roots)
    for example in sample.slices.get("he", ()):
        assert example.source_example_id in kept
    assert {e.source_example_id for e in split.slices.get("he", ())} & kept == {
        e.source_example_id for e in sample.slices.get("he", ())
    }
    if n >= roots:
        assert sample is split
    else:
        assert sample.sha256 == hashlib.sha256(sample.raw).hexdigest() != split.sha256
        assert sample.sample == {"roots": n, "seed": seed, "of_roots": roots,
                                 "of_sha256": split.sha256}
        rows = [json.loads(line) for line in sample.raw.decode().splitlines()]
        assert [r["example_id"] for r in rows] == [e.example_id for e in sample.examples]
    assert sample_split(split, n, seed).slices == sample.slices  # the same draw every time


@settings(max_examples=examples(100))
@given(st.text(max_size=12))
def test_a_bad_sample_option_is_one_line_naming_it(text: str) -> None:
    try:
        roots, seed = parse_sample(text, "--sommelier-sample")
    except InputError as error:
        assert "\n" not in str(error) and "--sommelier-sample" in str(error)
        assert re.fullmatch(r"[0-9]{1,9}(:[0-9]{1,18})?", text) is None or int(
            text.split(":")[0]
        ) == 0
        return
    head, _, tail = text.partition(":")
    assert (roots, seed) == (int(head), int(tail or 0)) and roots >= 1


def scripted(pytester: pytest.Pytester) -> Path:
    script = {"adapter": {i: call_text(GOLD[i]) for i in GOLD}, "base": {}}
    return write_scripted_suite(pytester, script, decoding={"batch_size": 1})


def test_a_sampled_run_is_complete_on_the_sample_and_says_so(pytester: pytest.Pytester) -> None:
    suite = scripted(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out",
                                "--sommelier-sample", "2:5")
    outcomes = result.parseoutcomes()
    # 2 of 4 English roots with their Hebrew translations, for both arms
    resolved = read_json(pytester.path / "out" / "suite.resolved.json")
    sample = resolved["test_split"]["sample"]
    assert sample["roots"] == 2 and sample["seed"] == 5 and sample["of_roots"] == 4
    copy = (pytester.path / "out" / "inputs" / "test_split.jsonl").read_text()
    kept = [json.loads(line)["example_id"] for line in copy.splitlines()]
    assert outcomes.get("passed", 0) + outcomes.get("missed", 0) == 2 * len(kept)
    assert len([k for k in kept if k.startswith("en")]) == 2
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["complete"] is True and verdict["verdict"] != "incomplete"
    result.stdout.fnmatch_lines(["*sample: 2 of 4 roots with their translations (seed 5)*"])
    assert "sample: 2 of 4" in (pytester.path / "out" / "report.html").read_text()
    assert "sample: 2 of 4" in (pytester.path / "out" / "report" / "summary.md").read_text()
    # only what the sample selects is generated (batch size 1: one warm-up and one prompt
    # per kept example and arm)
    calls = [json.loads(line) for line in (suite.parent / "calls.jsonl").read_text().splitlines()]
    assert sum(c["n"] for c in calls) == 2 * (1 + len(kept))
    full = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "full")
    assert full.ret == 0
    sampled = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    whole = read_json(pytester.path / "full" / "eval" / "adapter" / "evaluation_report.json")
    assert sampled["config_sha256"] != whole["config_sha256"]  # never compared as the suite


def test_a_k_selection_generates_only_its_batches(pytester: pytest.Pytester) -> None:
    suite = scripted(pytester)
    pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", "-k",
                       "adapter and (en-0 or he-1)")
    calls = [json.loads(line) for line in (suite.parent / "calls.jsonl").read_text().splitlines()]
    assert [c["arm"] for c in calls] == ["adapter"] * 3  # one warm-up, two examples
    assert sum(c["n"] for c in calls) == 3


def test_a_bad_sample_option_stops_the_session(pytester: pytest.Pytester) -> None:
    scripted(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-sample", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*SOM-OPTION-VALUE*--sommelier-sample*"])

