"""One suite file, three uses (pytest sessions): the sweep's suite file (an adapter glob over
three checkpoints, a ``[selection]``, a stored gate against the shipped adapter and two
per-checkpoint gates) runs the shipped baseline (``--sommelier-arms adapter=shipped``, stored
as ``shipped``), the checkpoint sweep (each checkpoint compared with the shipped ``adapter``,
the verdict the selected checkpoint's) and the chosen checkpoint
(``--sommelier-arms adapter=out/checkpoint-200``); the sweep serial and ``-n 2``. The one fake
model answers per arm (``script.json``): the shipped adapter hits 12 of 24, the checkpoints 4,
20 and 12 (or 4, 8 and 6), the base 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sweep_helpers import gate_of, hits, junit_gates, session, sweep

pytest_plugins = ["pytester"]

METRIC = "full_call_exact_match"
GATES = [
    {"name": "not-worse-than-shipped", "arm": "adapter", "stored": "label:shipped",
     "metric": METRIC, "ci_lower_at_least": -0.05},
    {"name": "uplift", "candidate": "adapter", "reference": "base", "metric": METRIC,
     "ci_lower_above": 0.0},
    {"name": "parses", "arm": "adapter", "metric": "valid_json_rate", "min": 0.5},
]  # fmt: skip
COMPARISONS = [{"candidate": "adapter", "reference": "base"}]
LEVEL = 1 - 0.05 / 3


def one_suite(pytester: pytest.Pytester, counts: tuple[int, int, int]) -> Path:
    """The one suite file, its three checkpoints and the shipped adapter's folder."""
    suite = sweep(pytester, counts, GATES, base=2, comparisons=COMPARISONS)
    shipped = suite.parent / "shipped"
    shipped.mkdir(exist_ok=True)
    (shipped / "adapter_config.json").write_text('{"peft_type": "LORA", "r": 8}\n')
    return suite


def answer(suite: Path, adapter: int) -> None:
    """The fake's answers for the arm named ``adapter`` (the folder ``--sommelier-arms`` gives)."""
    script = json.loads((suite.parent / "script.json").read_text(encoding="utf-8"))
    script["adapter"] = hits(adapter)
    (suite.parent / "script.json").write_text(json.dumps(script), encoding="utf-8")


def verdict_of(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "gate_verdict.json").read_text(encoding="utf-8")))


def store_shipped(pytester: pytest.Pytester, suite: Path) -> Path:
    """The baseline: the sweep's suite file with its glob arm given the shipped folder."""
    answer(suite, 12)
    result, run_dir = session(
        pytester, "shipped", "--sommelier-arms", "adapter=suite/shipped",
        "--sommelier-autosave", "--sommelier-label", "shipped", "--sommelier-storage", "store",
    )  # fmt: skip
    reports = sorted(p.name for p in (run_dir / "eval").iterdir())
    assert reports == ["adapter", "base"]  # one arm named adapter, no checkpoint
    assert not (run_dir / "report" / "selection.json").exists()
    verdict = verdict_of(run_dir)
    gates = {g["name"]: g for g in verdict["gates"]}
    assert list(gates) == ["not-worse-than-shipped", "uplift", "parses"]
    assert "per_candidate" not in verdict
    assert gates["uplift"]["passed"] and gates["parses"]["passed"]
    # nothing is labelled shipped yet: the stored gate fails with that as its reason
    first = gates["not-worse-than-shipped"]
    assert first["passed"] is False
    assert "unavailable: no comparable stored run of suite 'factory'" in first["reason"]
    assert first["subject"] == "adapter-vs-adapter@label:shipped"
    assert result.ret == 1
    index = json.loads((pytester.path / "store" / "index.json").read_text(encoding="utf-8"))
    assert [entry.get("label") for entry in index["runs"]] == ["shipped"]
    return run_dir


@pytest.mark.parametrize(  # -n 2 starts two worker processes per session: slow tier
    "workers", [(), pytest.param(("-n", "2"), marks=pytest.mark.slow)], ids=["serial", "xdist"]
)
def test_one_suite_file_is_the_baseline_the_sweep_and_the_chosen_checkpoint(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    suite = one_suite(pytester, (4, 20, 12))
    store_shipped(pytester, suite)
    # the sweep: each checkpoint against the shipped adapter, the verdict the selected one's
    result, run_dir = session(pytester, "sweep", "--sommelier-storage", "store",
                              "--junitxml=junit.xml", *workers)  # fmt: skip
    verdict = verdict_of(run_dir)
    assert result.ret == 0, result.stdout.str()
    assert verdict["verdict"] == "pass"
    assert [g["name"] for g in verdict["gates"]] == ["not-worse-than-shipped", "uplift", "parses"]
    copies = {g["name"]: g for g in verdict["per_candidate"]}
    assert sorted(copies) == sorted(f"{g['name']}@{s}" for g in GATES for s in (100, 200, 300))
    for step, passed in ((100, False), (200, True), (300, False)):
        copy = copies[f"not-worse-than-shipped@{step}"]
        assert copy["subject"] == f"adapter@{step}-vs-adapter@label:shipped"
        assert copy["passed"] is passed, copy["reason"]
        assert "has no arm" not in copy["reason"]
        assert copy["interval"]["confidence_level"] == pytest.approx(0.95)
    assert copies["uplift@100"]["passed"] is False and copies["parses@100"]["passed"] is False
    chosen = gate_of(run_dir, "not-worse-than-shipped")
    assert chosen["subject"] == "adapter@200-vs-adapter@label:shipped" and chosen["passed"]
    assert chosen["selection"] == {"selected": "adapter@200", "reference": "adapter",
                                   "stored": "label:shipped", "candidates": 3,
                                   "confidence_level": pytest.approx(LEVEL),
                                   "method": "bonferroni"}  # fmt: skip
    assert chosen["interval"]["confidence_level"] == pytest.approx(LEVEL)
    assert chosen["interval"]["discordant"] == {"candidate_only": 8, "reference_only": 0}
    assert gate_of(run_dir, "uplift")["subject"] == "adapter@200-vs-base"
    parses = gate_of(run_dir, "parses")
    assert parses["subject"] == "adapter@200" and parses["observed"] == pytest.approx(20 / 24)
    assert verdict["familywise"]["family"] == ["not-worse-than-shipped", "uplift"]
    result.stdout.fnmatch_lines([
        "PASS not-worse-than-shipped: adapter@200-vs-adapter@label:*",
        "per checkpoint, reported (the selected one's decides): not-worse-than-shipped: "
        "@100 fail, @200 pass, @300 fail",
    ])  # fmt: skip
    summary = (run_dir / "report" / "summary.md").read_text(encoding="utf-8")
    reported = summary.split("Per checkpoint, reported", 1)[1]
    assert "| **FAIL** | not-worse-than-shipped@100 |" in reported
    assert "| PASS | not-worse-than-shipped@200 |" in reported
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert page.count("(reported)</td>") == len(copies)
    cases = junit_gates(pytester)
    assert {"not-worse-than-shipped", "uplift", "parses"} <= set(cases)
    assert not any("@" in name for name in cases)
    assert all(case.find("failure") is None for case in cases.values())
    # the chosen checkpoint, from the same file
    answer(suite, 20)
    result, chosen_dir = session(
        pytester, "chosen", "--sommelier-arms", "adapter=suite/out/checkpoint-200",
        "--sommelier-storage", "store", *workers,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    gates = {g["name"]: g for g in verdict_of(chosen_dir)["gates"]}
    assert gates["not-worse-than-shipped"]["subject"] == "adapter-vs-adapter@label:shipped"
    assert gates["not-worse-than-shipped"]["passed"] is True
    assert "selection" not in gates["not-worse-than-shipped"]
    # the arm is the checkpoint's folder, by its content digest, as the sweep recorded it
    resolved = json.loads((chosen_dir / "suite.resolved.json").read_text(encoding="utf-8"))
    swept = json.loads((run_dir / "suite.resolved.json").read_text(encoding="utf-8"))
    assert list(resolved["arms"]) == ["adapter", "base"] and "selection" not in resolved
    assert resolved["arms"]["adapter"] == swept["arms"]["adapter@200"]


def test_a_sweep_whose_chosen_checkpoint_is_worse_than_shipped_fails(
    pytester: pytest.Pytester,
) -> None:
    suite = one_suite(pytester, (4, 8, 6))
    store_shipped(pytester, suite)
    result, run_dir = session(pytester, "sweep", "--sommelier-storage", "store")
    assert result.ret == 1
    verdict = verdict_of(run_dir)
    assert verdict["verdict"] == "fail"
    chosen = gate_of(run_dir, "not-worse-than-shipped")
    assert chosen["passed"] is False and chosen["selection"]["selected"] == "adapter@200"
    assert chosen["interval"]["discordant"] == {"candidate_only": 0, "reference_only": 4}
    assert chosen["reason"].startswith("failed:")
    result.stdout.fnmatch_lines(["FAIL not-worse-than-shipped: adapter@200-vs-adapter@label:*"])


def test_an_arm_the_suite_lacks_or_its_base_arm_is_one_line_at_collection(
    pytester: pytest.Pytester,
) -> None:
    one_suite(pytester, (4, 20, 12))
    for given, what in (("v2=suite/shipped", "does not have"), ("base=suite/shipped", "base arm")):
        result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-arms", given)
        assert result.ret == 2
        text = result.stdout.str()
        assert "SOM-OPTION-VALUE" in text and what in text and "Traceback" not in text
        assert "--sommelier-arms / ini sommelier_arms" in text


# --- a tiny random Llama and real peft adapters ----------------------------------------------

REAL_GATES = [
    # the checkpoint changed the shipped adapter's outputs (a copy of its weights did not)
    {"name": "changed-from-shipped", "arm": "adapter", "stored": "label:shipped",
     "metric": "identical_outputs", "max": 0.5},
    {"name": "not-worse-than-shipped", "arm": "adapter", "stored": "label:shipped",
     "metric": METRIC, "delta_at_least": 0.0},
]  # fmt: skip


def real_suite(pytester: pytest.Pytester, model: Path) -> Path:
    """The one suite file over the tiny model: checkpoint-10 and -30 are LoRAs of their own,
    checkpoint-20 is the shipped adapter's weights, byte for byte."""
    import shutil

    from plugin_helpers import rows
    from suite_factory import match_base_tokenizer, write_suite
    from tiny import make_tiny_adapter_dir

    folder = pytester.path / "suite"
    shipped = make_tiny_adapter_dir(model, folder / "shipped", seed=1)
    make_tiny_adapter_dir(model, folder / "out" / "checkpoint-10", seed=2)
    shutil.copytree(shipped, folder / "out" / "checkpoint-20")
    make_tiny_adapter_dir(model, folder / "out" / "checkpoint-30", seed=3)
    suite = write_suite(
        folder, rows=rows(("en-0", "en-1", "en-2", "he-0", "he-1")),
        model={"base": "model", "revision": None},
        decoding={"max_new_tokens": 6, "batch_size": 2},
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
        comparisons=COMPARISONS, selection={"metric": METRIC, "among": "adapter@*"},
        gates=REAL_GATES,
    )  # fmt: skip
    shutil.rmtree(folder / "adapter")
    shutil.copytree(model, folder / "model")
    return match_base_tokenizer(suite)


def real_session(pytester: pytest.Pytester, out: str, *args: str) -> tuple[int, Path, str]:
    result = pytester.runpytest_subprocess(
        "suite", "-p", "no:cacheprovider", "--sommelier-out", out, "--sommelier-storage",
        "store", "--sommelier-cache-dir", "cache", *args,
    )  # fmt: skip
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text and (pytester.path / out / "gate_verdict.json").is_file(), text
    return result.ret, pytester.path / out, text


@pytest.mark.slow
def test_one_suite_file_with_a_real_model_and_real_adapters(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    real_suite(pytester, tiny[0])
    ret, shipped, _ = real_session(pytester, "shipped", "--sommelier-arms=adapter=suite/shipped",
                                   "--sommelier-autosave", "--sommelier-label", "shipped")
    assert ret == 1  # nothing labelled shipped yet: both stored gates fail with that reason
    assert all("no comparable stored run" in g["reason"] for g in verdict_of(shipped)["gates"])
    for workers in ((), ("-n", "2", "--sommelier-no-cache")):
        ret, sweep_dir, text = real_session(pytester, f"sweep{len(workers)}", *workers)
        verdict = verdict_of(sweep_dir)
        copies = {g["name"]: g for g in verdict["per_candidate"]}
        for step in (10, 20, 30):
            for gate in REAL_GATES:
                copy = copies[f"{gate['name']}@{step}"]
                assert copy["subject"] == f"adapter@{step}-vs-adapter@label:shipped"
                assert "has no arm" not in copy["reason"], copy["reason"]
            # checkpoint-20 is the shipped weights: every output identical, the gate fails
            changed = copies[f"changed-from-shipped@{step}"]
            assert changed["passed"] is (step != 20), changed["reason"]
            assert copies[f"not-worse-than-shipped@{step}"]["passed"] is True
        # a random model calls no tool: every checkpoint ties at 0, the first is selected
        selection = json.loads((sweep_dir / "report" / "selection.json").read_text())
        assert selection["selected"] == "adapter@10"
        assert [g["name"] for g in verdict["gates"]] == [g["name"] for g in REAL_GATES]
        assert all(g["passed"] and g["subject"].startswith("adapter@10-vs-adapter@")
                   for g in verdict["gates"]) and ret == 0, text[-3000:]  # fmt: skip
    # the chosen checkpoint from the same file: checkpoint-20 did not change the shipped one
    ret, chosen, _ = real_session(pytester, "chosen",
                                  "--sommelier-arms=adapter=suite/out/checkpoint-20")
    gates = {g["name"]: g for g in verdict_of(chosen)["gates"]}
    assert ret == 1 and gates["changed-from-shipped"]["passed"] is False
    assert gates["changed-from-shipped"]["observed"] == 1.0  # every output as shipped
    assert gates["not-worse-than-shipped"]["passed"] is True
    generations = (chosen / "eval" / "adapter" / "generations.en.jsonl").read_text().splitlines()
    assert all(json.loads(line)["cached"] for line in generations)  # the sweep's outputs
