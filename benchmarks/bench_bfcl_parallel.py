"""BFCL's parallel checker against this project's parser v2 and acceptable-values metric, on the
same outputs.

For every row of BFCL's four parallel categories that ``sommelier import bfcl --parser v2``
converts (``parallel``, ``parallel_multiple``, ``live_parallel``, ``live_parallel_multiple``),
outputs are generated from the data, deterministically (no model): the gold calls themselves;
their permutations (all of them up to four calls, three seeded shuffles beyond); every call
taking its last acceptable value instead of its first, in order and permuted; one call dropped
(each in turn); one extra (the first repeated); a wrong value, a wrong function name, a missing
required argument (in the first call); an optional argument left out. Each output is judged:

- by BFCL: ``ast_checker`` of ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` with the
  category's name (``parallel_function_checker_no_order`` for all four), imported from the wheel
  in a child process; its ``model_config`` (which imports every model handler's client library
  and serves only a function-name spelling rule for some API models) is a stand-in there.
  Nothing of BFCL is a dependency of the project;
- by this project: the output written as a JSON array, read by ``sommelier.parser.v2``, scored
  by ``core.acceptable.calls_acceptable`` (order ``any``) against the row's acceptable values,
  and by the v2 metric ``full_call_exact_match`` (exact values; not BFCL's question, shown
  beside it).

Prints, per kind of output, how many each credits, the agreement, and every disagreement with
its reason. Where the two differ by construction: BFCL pairs greedily (each gold call takes
the first unpaired output call it accepts), this project by a maximum matching, so an output
BFCL's greedy pass strands can be accepted here; a reason is printed for each disagreement.

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl
    python benchmarks/bench_bfcl_parallel.py --wheel /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_sommelier.core.acceptable import call_acceptable, calls_acceptable
from pytest_sommelier.core.call_sets import call_set_components
from pytest_sommelier.core.parse_v2 import ORDER_ANY, parse_tool_calls
from pytest_sommelier.data.prepare.bfcl import PARALLEL_CATEGORIES, convert_row, gold_value

DRIVER = r"""
import json, sys, types

class _Config:  # model_config serves ast_checker one rule: underscore_to_dot (API models only)
    underscore_to_dot = False

class _Configs(dict):
    def __missing__(self, key):
        return _Config()

stand_in = types.ModuleType("bfcl_eval.constants.model_config")
stand_in.MODEL_CONFIG_MAPPING = _Configs()
sys.modules["bfcl_eval.constants.model_config"] = stand_in
sys.path.insert(0, sys.argv[1])
from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

for line in sys.stdin:
    case = json.loads(line)
    output = [{call["name"]: call["arguments"]} for call in case["calls"]]
    try:
        result = ast_checker(case["functions"], output, case["ground_truth"], Language.PYTHON,
                             case["category"], "sommelier-bench")
    except Exception as exc:  # an output BFCL's checker cannot take counts as not credited
        result = {"valid": False, "error_type": f"raised {type(exc).__name__}"}
    print(json.dumps({"valid": bool(result["valid"]),
                      "error_type": result.get("error_type", "")}))
"""

SHUFFLES = 3
ALL_PERMUTATIONS_UP_TO = 4


def altered(value: Any) -> Any:
    """A value no acceptable list holds (BFCL normalises strings: the suffix survives that)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 7
    if isinstance(value, float):
        return value + 7.5
    if isinstance(value, str):
        return value + "zz"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["zz"]
    if isinstance(value, dict):
        return {**value, "zz": 1}
    return "zz"


def last_values(call: dict[str, Any], acceptable: dict[str, Any]) -> dict[str, Any]:
    """``call`` with each argument taking its last acceptable value that is not ``""``."""
    arguments = dict(call["arguments"])
    for name, entry in acceptable["arguments"].items():
        values = [value for value in entry["values"] if value != ""]
        if name in arguments and values:
            arguments[name] = gold_value(values[-1], entry["type"], entry.get("items_type"))
    return {"name": call["name"], "arguments": arguments}


def permutations(calls: list[Any], rng: random.Random) -> list[list[Any]]:
    """Every other order of ``calls`` (all up to four calls, seeded shuffles beyond)."""
    if len(calls) <= ALL_PERMUTATIONS_UP_TO:
        found = [list(order) for order in itertools.permutations(calls)]
    else:
        found = []
        for _ in range(SHUFFLES):
            order = list(calls)
            rng.shuffle(order)
            found.append(order)
    return [order for order in found[1:] if order != calls] if found else []


def outputs(row: dict[str, Any], rng: random.Random) -> list[tuple[str, list[dict[str, Any]]]]:
    """The generated outputs ``(kind, calls)`` of one imported row."""
    calls = row.get("gold_calls") or [row["gold_call"]]
    entries = row["acceptable_arguments"]
    entries = entries if isinstance(entries, list) else [entries]
    cases: list[tuple[str, list[dict[str, Any]]]] = [("gold", calls)]
    cases += [("permuted", order) for order in permutations(calls, rng)]
    alternative = [last_values(call, entry) for call, entry in zip(calls, entries, strict=True)]
    if alternative != calls:
        cases.append(("other_acceptable", alternative))
        cases += [("other_acceptable_permuted", o) for o in permutations(alternative, rng)]
    cases += [("one_dropped", calls[:i] + calls[i + 1 :]) for i in range(len(calls))]
    cases.append(("one_extra", [*calls, calls[0]]))
    first = calls[0]
    if first["arguments"]:
        name = next(iter(first["arguments"]))
        wrong = {**first["arguments"], name: altered(first["arguments"][name])}
        cases.append(("wrong_value", [{"name": first["name"], "arguments": wrong}, *calls[1:]]))
    others = [t["name"] for t in row["tools"] if t["name"] != first["name"]]
    renamed = others[0] if others else first["name"] + "_zz"
    cases.append(("wrong_name", [{"name": renamed, "arguments": first["arguments"]}, *calls[1:]]))
    required = [n for n in entries[0]["required"] if n in first["arguments"]]
    if required:
        kept = {k: v for k, v in first["arguments"].items() if k != required[0]}
        cases.append(("missing_required", [{"name": first["name"], "arguments": kept},
                                           *calls[1:]]))  # fmt: skip
    for index, (call, entry) in enumerate(zip(calls, entries, strict=True)):
        optional = [n for n, e in entry["arguments"].items() if "" in e["values"]]
        present = [n for n in optional if n in call["arguments"]]
        if present:
            kept = {k: v for k, v in call["arguments"].items() if k != present[0]}
            left = [*calls[:index], {"name": call["name"], "arguments": kept}, *calls[index + 1 :]]
            cases.append(("optional_left_out", left))
            break
    return cases


def greedy_strands(predicted: list[Any], gold: list[Any], entries: list[Any]) -> bool:
    """Whether BFCL's greedy pairing (each gold call, in order, takes the first unpaired output
    call it accepts) leaves a gold call unpaired while a maximum matching pairs them all."""
    taken: set[int] = set()
    for want, entry in zip(gold, entries, strict=True):
        free = [i for i, call in enumerate(predicted)
                if i not in taken and call_acceptable(call, want["name"], entry)]  # fmt: skip
        if not free:
            return calls_acceptable(predicted, gold, entries, ORDER_ANY)
        taken.add(free[0])
    return False


def read_category(wheel: Path, category: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    with zipfile.ZipFile(wheel) as archive:
        q = archive.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode("utf-8")
        a = archive.read(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json").decode()
    questions = [json.loads(line) for line in q.splitlines() if line.strip()]
    answers = [json.loads(line) for line in a.splitlines() if line.strip()]
    return list(zip(questions, answers, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the bfcl-eval wheel")
    parser.add_argument("--python", default=sys.executable, help="the child's interpreter")
    parser.add_argument("--seed", type=int, default=13, help="seed of the shuffles")
    parser.add_argument("--json", type=Path, help="write every case here")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    cases: list[dict[str, Any]] = []
    rows = skipped = 0
    for category in PARALLEL_CATEGORIES:
        for question, answer in read_category(args.wheel, category):
            row, _ = convert_row(question, answer, language="python", q_where=category,
                                    a_where=category, several=True)  # fmt: skip
            if row is None:
                skipped += 1
                continue
            rows += 1
            for kind, calls in outputs(row, rng):
                cases.append({"id": row["example_id"], "category": category, "kind": kind,
                              "calls": calls, "functions": question["function"],
                              "ground_truth": answer["ground_truth"], "row": row})  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        with zipfile.ZipFile(args.wheel) as archive:
            archive.extractall(folder)
        child_input = "".join(
            json.dumps({k: case[k] for k in ("calls", "functions", "ground_truth", "category")})
            + "\n"
            for case in cases
        )
        done = subprocess.run([args.python, "-c", DRIVER, folder], input=child_input,
                              capture_output=True, text=True, check=True)  # fmt: skip
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(cases), done.stderr[-2000:]
    by_kind: dict[str, Counter[str]] = {}
    disagreements: Counter[tuple[str, bool, bool, str]] = Counter()
    first_ids: dict[tuple[str, bool, bool, str], str] = {}
    for case, verdict in zip(cases, verdicts, strict=True):
        row = case.pop("row")
        gold = row.get("gold_calls") or [row["gold_call"]]
        entries = row["acceptable_arguments"]
        entries = entries if isinstance(entries, list) else [entries]
        predicted, status = parse_tool_calls(json.dumps(case["calls"]))
        record = {"parse_status": status, "parsed_calls": predicted, "gold_calls": gold,
                  "parsed_call": predicted[0] if predicted else None,
                  "gold_call": gold[0]}  # fmt: skip
        ours = predicted is not None and calls_acceptable(predicted, gold, entries, ORDER_ANY)
        exact = call_set_components(record, ORDER_ANY)[4] == (1, 1)
        bfcl = verdict["valid"]
        counts = by_kind.setdefault(case["kind"], Counter())
        counts["outputs"] += 1
        counts["bfcl"] += bfcl
        counts["acceptable"] += ours
        counts["exact"] += exact
        counts["agree"] += bfcl == ours
        case.update(bfcl=bfcl, bfcl_error=verdict["error_type"], acceptable=ours, exact=exact)
        if bfcl != ours:
            if ours and predicted is not None and greedy_strands(predicted, gold, entries):
                reason = "BFCL's greedy pairing strands a call a maximum matching pairs"
            else:
                reason = f"BFCL: {verdict['error_type'] or 'valid'}"
            key = (case["kind"], bfcl, ours, reason)
            disagreements[key] += 1
            first_ids.setdefault(key, case["id"])
    total = sum(counts["outputs"] for counts in by_kind.values())
    agree = sum(counts["agree"] for counts in by_kind.values())
    print(f"BFCL parallel categories: {rows} rows imported (--parser v2), {skipped} skipped by "
          f"the import, {total} generated outputs")  # fmt: skip
    print()
    print("| output | outputs | BFCL credits | acceptable_call_match | full_call_exact_match "
          "| agree |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for kind, counts in by_kind.items():
        print(f"| {kind} | {counts['outputs']} | {counts['bfcl']} | {counts['acceptable']} | "
              f"{counts['exact']} | {counts['agree']} |")  # fmt: skip
    print()
    print(f"agreement (BFCL vs acceptable_call_match): {agree}/{total} = {agree / total:.4f}")
    print()
    if disagreements:
        print("| output | BFCL | sommelier | reason | outputs | first row |")
        print("|---|---|---|---|---|---|")
        for (kind, bfcl, ours, reason), count in sorted(disagreements.items()):
            print(f"| {kind} | {'credit' if bfcl else 'miss'} | {'credit' if ours else 'miss'} "
                  f"| {reason} | {count} | {first_ids[(kind, bfcl, ours, reason)]} |")  # fmt: skip
    else:
        print("no disagreement")
    if args.json:
        args.json.write_text(json.dumps(cases, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
