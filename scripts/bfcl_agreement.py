"""Agreement of ``acceptable_call_match`` with BFCL's own ``ast_checker``.

For every converted example of a BFCL category (default: simple_python), scripted model outputs
cover each rule (exact gold, other acceptable values, int for float, string case/punctuation
variants, a left-out optional argument, a left-out required one, an extra argument, wrong types,
wrong values, a wrong function name, reordered lists, nested dict variants). Each output is
written as the model would write it (a JSON tool call), parsed by ``sommelier.parser.v1`` and
scored by ``pytest_sommelier.core.acceptable``; the same call goes to BFCL's
``ast_checker`` running in a separate virtual environment (never a dependency of the package).

    python -m venv /work/venv-bfcl
    /work/venv-bfcl/bin/pip install --no-deps bfcl_eval-2026.3.23-py3-none-any.whl
    python scripts/bfcl_agreement.py --wheel bfcl_eval-2026.3.23-py3-none-any.whl \
        --python /work/venv-bfcl/bin/python [--category simple_python] [--json out.json]

BFCL's ``ast_checker`` module imports ``bfcl_eval.constants.model_config``, which imports every
model handler (and their API clients) only so that ``convert_func_name`` can look up whether a
model replaces ``.`` in function names. The driver puts a stand-in for that one module in
``sys.modules`` (one model, ``underscore_to_dot=False``: names are compared as written); the
checker's own code runs unmodified from the installed wheel.

Prints the agreement (cases where both say accept or both say reject, over all cases), per
rule, and every disagreement with both verdicts and BFCL's error type.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pytest_sommelier.core.acceptable import acceptable_component
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.data.prepare.bfcl import gold_value, import_category, locate_source

DRIVER = r"""
import json, sys, types
stub = types.ModuleType("bfcl_eval.constants.model_config")
class _Config:
    underscore_to_dot = False
stub.MODEL_CONFIG_MAPPING = {"sommelier/agreement": _Config()}
sys.modules["bfcl_eval.constants.model_config"] = stub
from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
for line in sys.stdin:
    case = json.loads(line)
    try:
        result = ast_checker(case["functions"], case["output"], case["answer"],
                             Language.PYTHON, case["category"], "sommelier_agreement")
        print(json.dumps({"valid": bool(result["valid"]),
                          "error_type": result.get("error_type", "")}))
    except Exception as exc:  # a checker crash is a verdict of its own
        print(json.dumps({"valid": False, "error_type": f"crash:{type(exc).__name__}"}))
"""


def _variants(row: dict[str, Any], function: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Scripted calls ``(rule, {name, arguments})`` for one converted row."""
    gold = row["gold_call"]
    name, args = gold["name"], gold["arguments"]
    entries = row["acceptable_arguments"]["arguments"]
    required = row["acceptable_arguments"]["required"]
    properties = function["parameters"].get("properties", {})
    out: list[tuple[str, dict[str, Any]]] = [("exact_gold", gold)]

    def with_args(new: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "arguments": new}

    for arg, entry in entries.items():
        values = [v for v in entry["values"] if v != ""]
        declared = entry["type"]
        if arg in args:
            for alternative in values[1:2]:
                new = dict(args)
                new[arg] = gold_value(alternative, declared, entry.get("items_type"))
                out.append(("alternative_value", with_args(new)))
            value = args[arg]
            if declared == "float" and isinstance(value, float) and value.is_integer():
                out.append(("int_for_float", with_args({**args, arg: int(value)})))
            if declared == "float" and type(value) is int:
                out.append(("float_for_int_gold", with_args({**args, arg: float(value)})))
            if declared == "integer" and type(value) is int:
                out.append(("float_for_int", with_args({**args, arg: float(value)})))
                out.append(("string_for_int", with_args({**args, arg: str(value)})))
                out.append(("wrong_int", with_args({**args, arg: value + 1})))
            if declared == "boolean" and isinstance(value, bool):
                out.append(("int_for_bool", with_args({**args, arg: int(value)})))
                out.append(("wrong_bool", with_args({**args, arg: not value})))
            if isinstance(value, str):
                out.append(("string_upper", with_args({**args, arg: value.upper()})))
                out.append(
                    ("string_punctuation", with_args({**args, arg: value.replace(" ", "_") + "."}))
                )
                out.append(("string_quote", with_args({**args, arg: value.replace('"', "'")})))
                out.append(("string_wrong", with_args({**args, arg: value + " zz"})))
                out.append(("list_for_string", with_args({**args, arg: [value]})))
            if isinstance(value, list) and len(value) > 1:
                out.append(("list_reordered", with_args({**args, arg: value[::-1]})))
                out.append(("list_shorter", with_args({**args, arg: value[:-1]})))
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                out.append(
                    ("list_strings_upper", with_args({**args, arg: [v.upper() for v in value]}))
                )
            if isinstance(value, list) and value and all(type(v) is int for v in value):
                out.append(
                    ("list_ints_as_floats", with_args({**args, arg: [float(v) for v in value]}))
                )
            if isinstance(value, dict) and value:
                key = sorted(value)[0]
                inner = value[key]
                if isinstance(inner, str):
                    out.append(
                        (
                            "dict_value_upper",
                            with_args({**args, arg: {**value, key: inner.upper()}}),
                        )
                    )
                out.append(
                    (
                        "dict_key_dropped",
                        with_args({**args, arg: {k: v for k, v in value.items() if k != key}}),
                    )
                )
                out.append(("dict_key_extra", with_args({**args, arg: {**value, "zz": 1}})))
            if isinstance(value, list) and value and isinstance(value[0], dict):
                first = copy.deepcopy(value)
                key = sorted(first[0])[0] if first[0] else None
                if key is not None and isinstance(first[0][key], str):
                    first[0][key] = first[0][key].upper()
                    out.append(("list_dict_value_upper", with_args({**args, arg: first})))
            dropped = {k: v for k, v in args.items() if k != arg}
            rule = (
                "missing_required"
                if arg in required
                else ("missing_optional" if "" in entry["values"] else "missing_listed")
            )
            out.append((rule, with_args(dropped)))
        elif values:
            out.append(
                (
                    "optional_given",
                    with_args(
                        {**args, arg: gold_value(values[0], declared, entry.get("items_type"))}
                    ),
                )
            )
    for arg in properties:
        if arg not in entries:
            out.append(("declared_not_listed", with_args({**args, arg: "x"})))
            break
    out.append(("extra_argument", with_args({**args, "zz_extra": 1})))
    out.append(("wrong_function", {"name": name + "_x", "arguments": args}))
    return out


def _ours(row: dict[str, Any], call: dict[str, Any]) -> bool:
    """Our verdict: the call written as model text, parsed, scored."""
    text = json.dumps([call], ensure_ascii=False)
    parsed, status = parse_tool_call(text)
    record = {
        "example_id": row["example_id"],
        "parse_status": status,
        "parsed_call": parsed,
        "gold_call": row["gold_call"],
        "acceptable_arguments": row["acceptable_arguments"],
    }
    return acceptable_component(record) == (1, 1)


def _bfcl_rows(wheel: Path, category: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """BFCL's original function docs and ground truths by id (read straight from the wheel)."""
    name = f"BFCL_v4_{category}.json"
    with zipfile.ZipFile(wheel) as archive:
        questions = archive.read(f"bfcl_eval/data/{name}").decode().splitlines()
        answers = archive.read(f"bfcl_eval/data/possible_answer/{name}").decode().splitlines()
    docs = {r["id"]: r["function"] for r in map(json.loads, filter(None, questions))}
    truth = {r["id"]: r["ground_truth"] for r in map(json.loads, filter(None, answers))}
    return docs, truth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True, help="bfcl_eval-*.whl (data and checker)")
    parser.add_argument("--python", required=True, help="python of the venv holding bfcl_eval")
    parser.add_argument("--category", default="simple_python")
    parser.add_argument("--json", default=None, help="write the full result here")
    args = parser.parse_args(argv)
    wheel = Path(args.wheel)
    converted = import_category(locate_source(wheel), args.category)
    docs, truth = _bfcl_rows(wheel, args.category)
    cases: list[tuple[str, str, dict[str, Any], bool]] = []
    lines = []
    for row in converted.rows:
        functions = docs[row["example_id"]]
        function = next(f for f in functions if f["name"] == row["gold_call"]["name"])
        for rule, call in _variants(row, function):
            cases.append((row["example_id"], rule, call, _ours(row, call)))
            lines.append(
                json.dumps(
                    {
                        "functions": functions,
                        "output": [{call["name"]: call["arguments"]}],
                        "answer": truth[row["example_id"]],
                        "category": args.category,
                    }
                )
            )
    done = subprocess.run(
        [args.python, "-c", DRIVER],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(cases), (len(verdicts), len(cases), done.stderr[-2000:])
    per_rule: dict[str, Counter[str]] = defaultdict(Counter)
    disagreements = []
    for (example_id, rule, call, ours), theirs in zip(cases, verdicts, strict=True):
        agree = ours == theirs["valid"]
        per_rule[rule]["agree" if agree else "disagree"] += 1
        per_rule[rule]["accepted_by_bfcl"] += int(theirs["valid"])
        if not agree:
            disagreements.append(
                {
                    "example_id": example_id,
                    "rule": rule,
                    "call": call,
                    "ours": ours,
                    "bfcl": theirs["valid"],
                    "bfcl_error_type": theirs["error_type"],
                }
            )
    total = len(cases)
    agreed = total - len(disagreements)
    print(
        f"category {args.category}: {len(converted.rows)} converted examples "
        f"({len(converted.skipped)} skipped), {total} scripted outputs"
    )
    print(f"agreement: {agreed}/{total} = {agreed / total:.4f}")
    print(f"{'rule':24} {'cases':>6} {'bfcl ok':>8} {'agree':>6} {'disagree':>9}")
    for rule in sorted(per_rule):
        c = per_rule[rule]
        print(
            f"{rule:24} {c['agree'] + c['disagree']:>6} {c['accepted_by_bfcl']:>8} "
            f"{c['agree']:>6} {c['disagree']:>9}"
        )
    for item in disagreements:
        print(
            f"DISAGREE {item['example_id']} {item['rule']}: ours={item['ours']} "
            f"bfcl={item['bfcl']} ({item['bfcl_error_type']}) "
            f"call={json.dumps(item['call'], ensure_ascii=False)[:300]}"
        )
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "category": args.category,
                    "examples": len(converted.rows),
                    "cases": total,
                    "agreed": agreed,
                    "per_rule": {k: dict(v) for k, v in per_rule.items()},
                    "disagreements": disagreements,
                },
                indent=1,
                ensure_ascii=False,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
