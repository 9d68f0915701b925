"""A stored run of any size, written by the real pipeline with no model and no pytest.

``write_synthetic_run(folder, roots=..., translated=..., arms=...)`` writes a suite (through
``suite_factory``) whose English roots and Hebrew translations use a few tool sets, scripts
every arm's raw outputs from a seeded random mix of outcomes (exact calls, prose, truncated
JSON, wrong names, wrong values, missing and extra arguments), and writes the run with
``pipeline.evaluate_run`` and ``artifacts.write_outcome``, exactly as a session finish would.
Used by the HTML report's tests and by ``benchmarks/bench_html.py``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from suite_factory import make_row, write_suite

from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, order_records
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.view.markdown import outcome_markdown

TOOLS = [
    {
        "name": "search_restaurants",
        "parameters": {"city": "string", "cuisine": "string", "max_price": "integer"},
    },
    {
        "name": "book_flight",
        "parameters": {
            "origin": "string",
            "destination": "string",
            "date": "string",
            "passengers": "integer",
        },
    },
    {"name": "set_alarm", "parameters": {"time": "string", "label": "string"}},
    {
        "name": "convert_currency",
        "parameters": {"amount": "number", "from": "string", "to": "string"},
    },
]
CITIES = ["Paris", "Haifa", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Perth"]
HEBREW = ["מה", "מזג", "האוויר", "בחיפה", "מחר", "בבקשה", "הזמן", "טיסה", "לפריז", "שעון"]
SYSTEM = (
    "You call tools. Reply with exactly one tool call and nothing else: a JSON array holding "
    'one object {"name": <tool name>, "arguments": <object>}. No prose, no markdown.\n'
    "Tools:\n"
)
# probability of an exact call per arm kind; the rest is spread over the miss kinds below
HIT_RATE = {"base": 0.2, "v1": 0.6, "v3": 0.7, "adapter": 0.65}
MISSES = ["prose", "truncated", "wrong_name", "wrong_value", "missing_arg", "extra_arg"]


def _gold(rng: random.Random, tool: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for name, kind in tool["parameters"].items():
        if kind == "integer":
            arguments[name] = rng.randint(1, 6)
        elif kind == "number":
            arguments[name] = round(rng.uniform(1, 900), 2)
        else:
            arguments[name] = (
                rng.choice(CITIES) if name != "date" else "2026-03-0" + str(rng.randint(1, 9))
            )
    return {"name": tool["name"], "arguments": arguments}


def _output(rng: random.Random, arm: str, gold: dict[str, Any]) -> str:
    """One scripted raw output for ``gold``."""
    if rng.random() < HIT_RATE.get(arm, 0.5):
        return json.dumps([gold], ensure_ascii=False)
    kind = rng.choice(MISSES)
    arguments = dict(gold["arguments"])
    if kind == "prose":
        return (
            "Sure! To help you with that I would look up the right tool and call it with the "
            f"details you gave, for example {gold['name']} with your city. " * 2
        ).strip()
    if kind == "truncated":
        return json.dumps([gold], ensure_ascii=False)[:-7]
    if kind == "wrong_name":
        return json.dumps([{"name": gold["name"] + "_v2", "arguments": arguments}])
    key = sorted(arguments)[0]
    if kind == "wrong_value":
        arguments[key] = str(arguments[key]) + "x"
    elif kind == "missing_arg":
        arguments.pop(key)
    else:
        arguments["note"] = "please hurry"
    return json.dumps([{"name": gold["name"], "arguments": arguments}], ensure_ascii=False)


def write_synthetic_run(
    folder: Path,
    *,
    roots: int = 60,
    translated: int = 40,
    arms: tuple[str, ...] = ("base", "v1", "v3"),
    seed: int = 7,
    resamples: int = 200,
) -> Path:
    """Write a suite and its run under ``folder``; return the run directory
    (``folder/run``). The first arm is the base (no adapter); every other arm is compared
    against it."""
    suite, split, arm_runs, identity = synthetic_inputs(
        folder, roots=roots, translated=translated, arms=arms, seed=seed, resamples=resamples
    )
    run_id = "20260101T000000Z-abcdef"
    outcome = evaluate_run(suite, split, arm_runs, run_id=run_id, model=identity["model"])
    run_dir = folder / "run"
    artifacts.write_outcome(
        run_dir,
        outcome,
        resolved={**identity, "run_id": run_id},
        split=split,
        comparison_markdown=outcome_markdown(outcome),
    )
    return run_dir


def synthetic_inputs(
    folder: Path,
    *,
    roots: int = 60,
    translated: int = 40,
    arms: tuple[str, ...] = ("base", "v1", "v3"),
    seed: int = 7,
    resamples: int = 200,
    statistics: dict[str, Any] | None = None,
) -> tuple[Any, Any, dict[str, ArmRun], dict[str, Any]]:
    """The suite (written under ``folder/suite``; ``statistics`` merged into its table), split,
    scripted arm runs and resolved identity of a synthetic run, before the pipeline runs."""
    rng = random.Random(seed)
    rows = []
    golds: dict[str, dict[str, Any]] = {}
    for i in range(roots):
        tool = TOOLS[i % len(TOOLS)]
        gold = _gold(rng, tool)
        system = SYSTEM + json.dumps(TOOLS[(i % len(TOOLS)) :] + TOOLS[: i % len(TOOLS)])
        for lang, source in (("en", None), ("he", f"en-{i:05d}")):
            if lang == "he" and i >= translated:
                break
            example_id = f"{lang}-{i:05d}"
            if lang == "en":
                user = f"Please {tool['name'].replace('_', ' ')} for {gold['arguments']} (#{i})"
            else:
                user = " ".join(rng.choice(HEBREW) for _ in range(8)) + f" {i}"
            prompt = f"<|system|>{system}<|user|>{user}<|assistant|>"
            rows.append(
                make_row(
                    example_id,
                    lang,
                    source,
                    gold,
                    prompt_text=prompt,
                    messages=[
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                    ],
                )
            )
            golds[example_id] = gold
    suite_file = write_suite(
        folder / "suite",
        rows=rows,
        arms={arm: ({} if n == 0 else {"adapter": "adapter"}) for n, arm in enumerate(arms)},
        comparisons=[{"candidate": arm, "reference": arms[0]} for arm in arms[1:]],
        statistics={"resamples": resamples, **(statistics or {})},
        gates=[
            {
                "name": f"{arm}-uplift",
                "candidate": arm,
                "reference": arms[0],
                "metric": "full_call_exact_match",
                "ci_lower_above": 0.0,
            }
            for arm in arms[1:]
        ],
    )
    suite = load_suite(suite_file)
    split = load_split(suite.test_split, suite.slices)
    identity = suite_identity(suite)
    arm_runs = {}
    for n, arm in enumerate(arms):
        records = []
        for example in split.examples:
            raw = _output(rng, arm, golds[example.example_id])
            parsed, status = parse_tool_call(raw)
            records.append(
                {
                    "example_id": example.example_id,
                    "arm": arm,
                    "model_kind": "base" if n == 0 else "adapter",
                    "language": example.language,
                    "prompt_sha256": example.prompt_sha256,
                    "raw_text": raw,
                    "parsed_call": parsed,
                    "parse_status": status,
                    "decoding": dict(suite.decoding),
                    "cached": False,
                }
            )
        arm_runs[arm] = ArmRun(
            name=arm,
            model_kind="base" if n == 0 else "adapter",
            model_identity={"fake": "model-1"},
            adapter_identity=None if n == 0 else {"fake-adapter": arm},
            records=order_records(suite, split, arm, records),
            timings=[
                {
                    "language": r["language"],
                    "cached": False,
                    "seconds": 0.05,
                    "worker": "gw0",
                    "processes": 1,
                    "device": {"device": "cpu", "device_count": 1},
                }
                for r in records
            ],
        )
    return suite, split, arm_runs, identity
