"""BFCL's irrelevance checker against this project's conservative abstention rule, on the same
outputs.

For every row of a BFCL abstention category (default ``irrelevance``, 240 rows), scripted
outputs cover the boundary: an apology in prose, prose with a bracket, an empty output, an
empty list, a valid JSON call of the offered function, the same inside ``<tool_call>`` tags, a
``<tool_call>`` cut off mid-arguments (the output gorilla issue 1362 shows BFCL crediting), the
marker alone, and BFCL's own Python-call syntax. Each output is judged twice:

- by BFCL: its irrelevance rule (``eval_runner._evaluate_single_relevance_entry``: the output
  counts as a call exactly when the prompting handlers' ``default_decode_ast_prompting``
  decodes it and ``bfcl_eval.utils.is_empty_output`` says it is not empty; an irrelevance row
  is credited when it does not count as a call), run with BFCL's own two functions, imported
  from the wheel in a child process (``tree_sitter``, ``tenacity``, ``filelock`` and
  ``dotenv``, which the imported modules import for other paths, are stand-ins there; nothing
  of BFCL is a dependency of the project);
- by this project: parser v1, then ``core.abstention.abstention_outcome`` with the Hermes /
  Qwen call markers (``<tool_call>``, ``</tool_call>``).

Prints, per kind of output, how many rows each credits, and the table of disagreements. Every
disagreement should be an output BFCL credits although it attempted a call (never the reverse):

    pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl
    python benchmarks/bench_bfcl_irrelevance.py \
        --wheel /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl [--category live_irrelevance]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

from pytest_sommelier.core.abstention import ABSTAINED, abstention_outcome
from pytest_sommelier.core.parse import parse_tool_call

MARKERS = ("<tool_call>", "</tool_call>")

DRIVER = r"""
import json, sys, types

class _Stand:  # stands for the modules BFCL's imports pull in for other paths
    def __init__(self, *args, **kwargs): pass
    def __call__(self, *args, **kwargs): return _Stand()
    def __getattr__(self, name): return _Stand()

for name in ("tree_sitter", "tree_sitter_java", "tree_sitter_javascript", "tenacity",
             "filelock", "dotenv"):
    module = types.ModuleType(name)
    module.__getattr__ = lambda attribute: _Stand
    sys.modules.setdefault(name, module)
sys.path.insert(0, sys.argv[1])
from bfcl_eval.model_handler.utils import default_decode_ast_prompting
from bfcl_eval.utils import is_empty_output

for line in sys.stdin:
    text = json.loads(line)
    # eval_runner._evaluate_single_relevance_entry, as written there
    try:
        decoded = default_decode_ast_prompting(text)
        contain_func_call = not is_empty_output(decoded)
    except Exception:
        contain_func_call = False
    print(json.dumps({"credited": not contain_func_call}))
"""


def outputs(function: dict[str, Any]) -> list[tuple[str, str]]:
    """The scripted outputs ``(kind, text)`` for a row offering ``function`` first."""
    name = function["name"]
    required = (function.get("parameters") or {}).get("required") or []
    arguments = {argument: 1 for argument in required}
    call = json.dumps({"name": name, "arguments": arguments})
    python_args = ", ".join(f"{argument}=1" for argument in required)
    return [
        ("prose", "I'm sorry, none of the available functions can do that."),
        ("prose_with_bracket", "I can't do that [no suitable function is available]."),
        ("empty", ""),
        ("empty_list", "[]"),
        ("json_call", call),
        ("tool_call_tag", f"<tool_call>\n{call}\n</tool_call>"),
        ("tool_call_cut_off", f'<tool_call>\n{{"name": "{name}", "arguments": {{'),
        ("tool_call_marker_alone", "<tool_call>"),
        ("bfcl_python_call", f"[{name}({python_args})]"),
    ]


def ours(text: str) -> tuple[bool, str]:
    """This project's verdict: ``(credited, outcome)``."""
    _, status = parse_tool_call(text)
    outcome = abstention_outcome(text, status, MARKERS)
    return outcome == ABSTAINED, outcome


def questions(wheel: Path, category: str) -> list[dict[str, Any]]:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"bfcl_eval/data/BFCL_v4_{category}.json").decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the bfcl-eval wheel")
    parser.add_argument("--category", default="irrelevance",
                        choices=("irrelevance", "live_irrelevance"))  # fmt: skip
    parser.add_argument("--python", default=sys.executable, help="the child's interpreter")
    parser.add_argument("--json", type=Path, help="write every case here")
    args = parser.parse_args(argv)
    rows = questions(args.wheel, args.category)
    cases = [
        {"id": row["id"], "kind": kind, "text": text}
        for row in rows
        for kind, text in outputs(row["function"][0] if row["function"] else {"name": "f"})
    ]
    with tempfile.TemporaryDirectory() as folder:
        with zipfile.ZipFile(args.wheel) as archive:
            archive.extractall(folder)
        done = subprocess.run(
            [args.python, "-c", DRIVER, folder],
            input="".join(json.dumps(case["text"]) + "\n" for case in cases),
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(cases), done.stderr[-2000:]
    by_kind: dict[str, Counter[str]] = {}
    disagreements: Counter[tuple[str, bool, bool, str]] = Counter()
    examples: dict[tuple[str, bool, bool, str], str] = {}
    for case, verdict in zip(cases, verdicts, strict=True):
        bfcl = bool(verdict["credited"])
        credited, outcome = ours(case["text"])
        case.update(bfcl=bfcl, sommelier=credited, outcome=outcome)
        counts = by_kind.setdefault(case["kind"], Counter())
        counts["rows"] += 1
        counts["bfcl"] += bfcl
        counts["sommelier"] += credited
        if bfcl != credited:
            key = (case["kind"], bfcl, credited, outcome)
            disagreements[key] += 1
            examples.setdefault(key, case["text"])
    print(f"BFCL {args.category}: {len(rows)} rows, {len(cases)} scripted outputs")
    print()
    print("| output | rows | BFCL credits | sommelier credits | disagree |")
    print("|---|---|---|---|---|")
    for kind, counts in by_kind.items():
        print(f"| {kind} | {counts['rows']} | {counts['bfcl']} | {counts['sommelier']} | "
              f"{abs(counts['bfcl'] - counts['sommelier'])} |")  # fmt: skip
    agree = len(cases) - sum(disagreements.values())
    print()
    print(f"agreement: {agree}/{len(cases)} = {agree / len(cases):.3f}")
    print()
    print("| output | BFCL | sommelier | sommelier outcome | outputs | example |")
    print("|---|---|---|---|---|---|")
    reverse = 0
    for (kind, bfcl, credited, outcome), count in disagreements.items():
        reverse += count if credited else 0
        example = json.dumps(examples[(kind, bfcl, credited, outcome)])[:60].replace("|", "\\|")
        theirs, mine = ("credits" if bfcl else "misses"), ("credits" if credited else "misses")
        print(f"| {kind} | {theirs} | {mine} | {outcome} | {count} | `{example}` |")
    print()
    print(f"disagreements where this project credits and BFCL does not: {reverse}")
    if args.json:
        args.json.write_text(json.dumps(cases, ensure_ascii=False, indent=1))
    return 0 if reverse == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
