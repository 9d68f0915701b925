"""A checkpoint sweep for selection-gate tests: three fake checkpoint folders behind an adapter
glob, the one fake model (``fakes.FAKE_CONFTEST``) scripted per checkpoint, and the gates the
session, rescore and core tests share."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from suite_factory import make_row, write_suite

from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, order_records
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite, suite_identity

N = 24
IDS = tuple(f"en-{i}" for i in range(N))
GOLD = {i: {"name": f"tool_{n}", "arguments": {"n": n}} for n, i in enumerate(IDS)}
SELECTION = {"metric": "full_call_exact_match", "among": "adapter@*"}
STEPS = ("checkpoint-100", "checkpoint-200", "checkpoint-300")


def hits(count: int) -> dict[str, str]:
    """The fake's answers for an arm that gets the first ``count`` examples right."""
    return {i: json.dumps(GOLD[i]) for i in IDS[:count]}


def sweep(
    pytester: pytest.Pytester, counts: tuple[int, int, int], gates: list[dict[str, Any]],
    *, base: int = 0, **overrides: Any,
) -> Path:
    """A suite with arms ``base`` and ``adapter = "out/checkpoint-*"`` over three checkpoint
    folders; checkpoint k hits the first ``counts[k]`` examples, the base the first ``base``."""
    folder = pytester.path / "suite"
    for name in STEPS:
        (folder / "out" / name).mkdir(parents=True, exist_ok=True)
        (folder / "out" / name / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
    arms = {f"adapter@{step.removeprefix('checkpoint-')}": hits(c)
            for step, c in zip(STEPS, counts, strict=True)}  # fmt: skip
    script = {"base": hits(base), **arms}
    rows = [make_row(i, "en", None, GOLD[i]) for i in IDS]
    suite = write_suite(
        folder, rows=rows, model={"base": "fake-org/fake-model"},
        **{"suite": {"slices": ["en"]}, "arms": {"base": {}, "adapter": {"adapter":
           "out/checkpoint-*"}}, "comparisons": None, "selection": SELECTION, "gates": gates,
           **overrides},
    )  # fmt: skip
    (folder / "conftest.py").write_text(FAKE_CONFTEST)
    (folder / "script.json").write_text(json.dumps(script))
    return suite


def gate_of(run_dir: Path, name: str) -> dict[str, Any]:
    verdict = json.loads((run_dir / "gate_verdict.json").read_text(encoding="utf-8"))
    return next(g for g in verdict["gates"] if g["name"] == name)


BEATS_BASE = {"name": "best-beats-base", "selected": True, "metric": "full_call_exact_match",
              "ci_lower_above": 0.0}  # fmt: skip


LEVEL = 1 - 0.05 / 3  # Bonferroni over the three candidates
STORED = {"name": "beats-shipped", "selected": True, "metric": "full_call_exact_match",
          "ci_lower_above": 0.0, "stored": "label:shipped"}  # fmt: skip


def junit_gates(pytester: pytest.Pytester) -> dict[str, ET.Element]:
    """The JUnit gate cases (``<suite>::gates::<name>``) by gate name."""
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    return {str(c.get("name")): c for c in cases if str(c.get("classname")).endswith("gates")}


def session(pytester: pytest.Pytester, out: str, *args: str) -> tuple[pytest.RunResult, Path]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                "--sommelier-out", out, *args)  # fmt: skip
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (pytester.path / out / "gate_verdict.json").is_file(), result.stdout.str()
    return result, pytester.path / out


# --- in memory, no pytest session: the pipeline over scripted hits ---------------------------

METRIC = "full_call_exact_match"
BEST = {"name": "best", "selected": True, "metric": METRIC, "ci_lower_above": 0.0}


def build(tmp: Path, n: int, k: int, gates: list[dict[str, Any]], **statistics: Any) -> Any:
    """A suite with arms ``base`` and ``c1``..``cK`` over ``n`` English examples and
    ``[selection] among = "c*"``; returns the suite, its split and its identity."""
    golds = {f"en-{i}": {"name": f"t{i}", "arguments": {"i": i}} for i in range(n)}
    rows = [make_row(i, "en", None, gold) for i, gold in golds.items()]
    arms = {"base": {}, **{f"c{j}": {"adapter": "adapter"} for j in range(1, k + 1)}}
    suite_file = write_suite(
        tmp / "suite", rows=rows, suite={"slices": ["en"]}, arms=arms,
        comparisons=[{"candidate": "c1", "reference": "base"}],
        selection={"metric": METRIC, "among": "c*"}, gates=gates,
        statistics={"resamples": 200, **statistics},
    )  # fmt: skip
    suite = load_suite(suite_file)
    return suite, load_split(suite.test_split, suite.slices), suite_identity(suite)


def arm_runs(suite: Any, split: Any, hits: dict[str, list[bool]]) -> dict[str, ArmRun]:
    """Every arm's records: a hit answers the gold call, a miss answers prose."""
    runs = {}
    for arm, row in hits.items():
        kind = "base" if arm == "base" else "adapter"
        records = [
            {"example_id": e.example_id, "arm": arm, "model_kind": kind, "language": e.language,
             "prompt_sha256": e.prompt_sha256, "raw_text": json.dumps(e.gold_call) if hit else
             "no call", "parsed_call": None, "parse_status": "no_json",
             "decoding": dict(suite.decoding), "cached": False}
            for e, hit in zip(split.examples, row, strict=True)
        ]  # fmt: skip
        runs[arm] = ArmRun(name=arm, model_kind=kind, model_identity={"fake": "m"},
                           adapter_identity=None if kind == "base" else {"fake": arm},
                           records=order_records(suite, split, arm, records))  # fmt: skip
    return runs


def verdict(suite: Any, split: Any, identity: Any, hits: dict[str, list[bool]]) -> Any:
    outcome = evaluate_run(suite, split, arm_runs(suite, split, hits), run_id="r",
                           model=identity["model"])  # fmt: skip
    return outcome, {gate["name"]: gate for gate in outcome.verdict["gates"]}


def false_pass_rates(
    tmp: Path, *, n: int, k: int, replications: int, seed: int, familywise: str = "none"
) -> tuple[float, float]:
    """``(selection gate, unadjusted)`` false pass rates with no true effect: K candidates and
    the base each hit each of ``n`` examples with probability 0.5 independently; per seeded
    replication the whole pipeline runs; "unadjusted" is the same claim (lower bound > 0) read
    at the plain level of the selected candidate's own comparison."""
    suite, split, identity = build(tmp, n, k, [BEST], familywise=familywise)
    rng = random.Random(seed)
    adjusted = unadjusted = 0
    for _ in range(replications):
        hits = {arm: [rng.random() < 0.5 for _ in range(n)] for arm in suite.arms}
        outcome, gates = verdict(suite, split, identity, hits)
        adjusted += bool(gates["best"]["passed"])
        chosen = outcome.selection["selected"]
        plain = outcome.comparison_reports[f"{chosen}-vs-base"]["intervals"]["intervals"]
        unadjusted += plain[METRIC]["lower"] > 0.0
    return adjusted / replications, unadjusted / replications
