"""``sommelier parity``: a stored run regenerated on an engine and compared, per arm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import read_jsonl, tiny_suite
from property_budget import examples

from pytest_sommelier.errors import EvaluationError, InputError
from pytest_sommelier.inference import parity

pytest_plugins = ["pytester"]
TRANSFORMERS = "transformers"


@pytest.fixture
def stored_run(pytester: pytest.Pytester, tiny: tuple[Path, Path]) -> tuple[Path, Path]:
    """A tiny two-arm suite and the run folder of one real (transformers) session over it."""
    suite = tiny_suite(pytester, tiny)
    result = pytester.runpytest_subprocess(
        "-m", "eval", "-p", "no:cacheprovider", "--sommelier-out", "out", str(suite.parent)
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    return pytester.path / "out", suite


@pytest.mark.slow
def test_same_engine_regenerates_identical_outputs(stored_run: tuple[Path, Path]) -> None:
    run, suite = stored_run
    result = parity.run_parity(run, suite, TRANSFORMERS)
    assert result["sample"] == {"seed": 0, "examples": 2, "of": 2}
    for arm in ("base", "adapter"):
        row = result["arms"][arm]
        assert row["examples"] == 2 and row["identical_outputs"] == 2
        assert row["equal_parse_status"] == 2 and row["equal_full_call"] == 2
        assert row["differing"] == [] and row["stored_engine"] == "transformers"
    text = parity.render_parity(result)
    assert "identical 2/2" in text and "adapter" in text


@pytest.mark.slow
def test_a_different_output_is_listed(stored_run: tuple[Path, Path]) -> None:
    run, suite = stored_run
    path = run / "eval" / "adapter" / "generations.en.jsonl"
    records = read_jsonl(path)
    records[1]["raw_text"] = '[{"name": "edited", "arguments": {}}]'
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    row = parity.run_parity(run, suite, TRANSFORMERS)["arms"]["adapter"]
    assert row["identical_outputs"] == 1 and len(row["differing"]) == 1
    diff = row["differing"][0]
    assert diff["example_id"] == records[1]["example_id"]
    assert diff["stored_text"] == records[1]["raw_text"]


@pytest.mark.slow
def test_min_identical(stored_run: tuple[Path, Path]) -> None:
    run, suite = stored_run
    result = parity.run_parity(run, suite, TRANSFORMERS)
    parity.check_min_identical(result, 1.0)
    result["arms"]["adapter"]["identical_outputs"] = 1
    with pytest.raises(EvaluationError, match="SOM-PARITY-BELOW"):
        parity.check_min_identical(result, 0.9)


@pytest.mark.slow
def test_the_command_writes_the_report_and_exits_by_the_threshold(
    stored_run: tuple[Path, Path],
) -> None:
    from pytest_sommelier.cli import main

    run, suite = stored_run
    argv = ["parity", str(run), "--engine", "transformers", "--suite", str(suite)]
    assert main([*argv, "--min-identical", "1.0"]) == 0
    written = json.loads((run / "parity" / "transformers.json").read_text(encoding="utf-8"))
    assert written["arms"]["base"]["identical_outputs"] == 2
    assert main([*argv, "--engine", "nonsense"]) == 2


@pytest.mark.slow
def test_a_sample_is_seeded_and_shared_by_the_arms(stored_run: tuple[Path, Path]) -> None:
    run, suite = stored_run
    one = parity.run_parity(run, suite, TRANSFORMERS, sample=1, seed=5)
    assert one["sample"] == {"seed": 5, "examples": 1, "of": 2}
    assert all(row["examples"] == 1 for row in one["arms"].values())


@pytest.mark.slow
def test_another_decoding_is_refused(stored_run: tuple[Path, Path]) -> None:
    run, suite = stored_run
    text = suite.read_text(encoding="utf-8").replace("max_new_tokens = 2", "max_new_tokens = 3")
    suite.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        parity.run_parity(run, suite, TRANSFORMERS)
    assert caught.value.code == "SOM-PARITY-SUITE" and "decoding" in str(caught.value)


@pytest.mark.slow
def test_another_adapter_is_refused(stored_run: tuple[Path, Path], tmp_path: Path) -> None:
    from tiny import make_tiny_adapter_dir

    run, suite = stored_run
    shutil.rmtree(suite.parent / "adapter")
    make_tiny_adapter_dir(suite.parent / "model", suite.parent / "adapter", seed=9)
    with pytest.raises(EvaluationError) as caught:
        parity.run_parity(run, suite, TRANSFORMERS)
    assert caught.value.code == "SOM-PARITY-IDENTITY"
    assert "adapter.adapter_identity" in str(caught.value)


@settings(max_examples=examples(100))
@given(
    ids=st.lists(st.text(min_size=1, max_size=5), unique=True, max_size=30),
    sample=st.integers(min_value=1, max_value=40),
    seed=st.integers(min_value=0, max_value=10),
)
def test_sample_ids_is_a_deterministic_subset(ids: list[str], sample: int, seed: int) -> None:
    chosen = parity.sample_ids(ids, sample, seed)
    assert chosen <= set(ids) and len(chosen) == min(sample, len(ids))
    assert chosen == parity.sample_ids(list(reversed(ids)), sample, seed)


def test_a_non_positive_sample_is_refused() -> None:
    with pytest.raises(InputError, match="SOM-PARITY-SAMPLE"):
        parity.sample_ids(["a", "b", "c"], 0, 0)


@pytest.mark.slow
def test_rebatch_regenerates_on_the_runs_own_engine_one_at_a_time(
    stored_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--rebatch``: no ``--engine`` needed (the stored run's), batch size 1 in reverse order;
    the stored identities (engine included) must be the live ones."""
    from pytest_sommelier.cli import main

    run, suite = stored_run
    assert main(["parity", str(run), "--suite", str(suite), "--rebatch"]) == 0
    out = capsys.readouterr().out
    assert "re-batched (batch size 1, reverse order) on its own engine transformers" in out
    written = json.loads((run / "parity" / "rebatch.json").read_text(encoding="utf-8"))
    assert written["rebatch"] is True and written["engine"] == TRANSFORMERS
    for arm in ("base", "adapter"):
        assert written["arms"][arm]["identical_outputs"] == 2  # the tiny model on a CPU
    assert main(["parity", str(run), "--suite", str(suite)]) == 2  # neither --engine nor --rebatch
    assert "SOM-PARITY-ENGINE" in capsys.readouterr().err
    report = run / "eval" / "base" / "evaluation_report.json"
    stored = json.loads(report.read_text(encoding="utf-8"))
    stored["model_identity"]["engine"]["version"] = "0.0-other"
    report.write_text(json.dumps(stored), encoding="utf-8")
    with pytest.raises(EvaluationError, match="SOM-PARITY-IDENTITY"):
        parity.run_parity(run, suite, None, rebatch=True)
    parity.run_parity(run, suite, TRANSFORMERS)  # across engines the engine entry is set aside
