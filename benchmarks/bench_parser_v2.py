"""Benchmark of sommelier.parser.v2 (core/parse_v2.py) and the call-set matching, in one run.

Prints:
1. parses/second of ``parse_tool_calls`` (v2) and ``parse_tool_call`` (v1) on the same mix of
   typical outputs (one call, prose + call, two calls, an array of three, prose only, broken
   JSON) and their ratio: what reading on after the first span costs;
2. the time of 1 MB and 2 MB outputs of four shapes (many calls between prose, one array of
   many calls, prose with brackets only in the last call, many calls then an unterminated
   string) and the 2 MB / 1 MB ratio (about 2 means linear);
3. the time of ``match_calls`` under ``any`` for n predicted against n gold calls that share
   some argument pairs and are never exactly equal (the assignment's worst case, O(n^3)).

Run: ``python benchmarks/bench_parser_v2.py`` (single-threaded; a few seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pytest_sommelier.core.call_sets import match_calls
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.parse_v2 import parse_tool_calls

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parser import best_time, rate  # the v1 benchmark's timing, shared

CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "units": "celsius", "days": 3}}'
CALL2 = '{"name": "get_weather", "arguments": {"city": "London", "units": "celsius", "days": 3}}'
TYPICAL = [
    CALL,
    f"Sure! I'll check the weather for you.\n```json\n{CALL}\n```\nAnything else?",
    f"Two calls:\n{CALL}\n{CALL2}",
    f"[{CALL}, {CALL2}, {CALL}]",
    "I'm sorry, but I can't help with that request without more details about the city.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "units": "celsius",}}',
]


def large_outputs(size: int) -> dict[str, str]:
    """Outputs of about ``size`` characters, by shape."""
    between = " and then, for the next city, "
    count = size // (len(CALL) + len(between))
    prose = ("The weather tool takes a city and units. " * (size // 41 + 1))[:size]
    return {
        "calls between prose": between.join([CALL] * count),
        "one array of calls": "[" + ", ".join([CALL] * count) + "]",
        "prose, then one call": prose + CALL,
        "calls, then unterminated": between.join([CALL] * (count // 2))
        + ' {"name": "f", "arguments": {"s": "'
        + "x" * (size // 2),
    }


def matching_case(n: int) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """n predicted and n gold calls sharing argument pairs, never exactly equal."""
    gold = [{"name": "f", "arguments": {"a": i % 3, "b": i % 5, "c": i}} for i in range(n)]
    predicted = [
        {"name": "f", "arguments": {"a": i % 3, "b": i % 7, "c": -i - 1}} for i in range(n)
    ]
    return predicted, gold


def main() -> None:
    """Run the three measurements and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    v2 = rate(parse_tool_calls, TYPICAL, 2_000, args.repeats)
    v1 = rate(parse_tool_call, TYPICAL, 2_000, args.repeats)
    print("typical mix (one call, prose + call, two calls, an array of three, prose, broken):")
    print(f"  parse_tool_calls (v2) {v2:12,.0f} parses/s")
    print(f"  parse_tool_call  (v1) {v1:12,.0f} parses/s")
    print(f"  v2 / v1               {v2 / v1:12.2f}x")

    print(f"\nlarge outputs (best of {args.repeats} runs; times in ms):")
    print(f"  {'shape':26} {'1 MB':>9} {'2 MB':>9} {'2MB/1MB':>8} {'calls':>7} {'status':>13}")
    sized = {size: large_outputs(size) for size in (1_000_000, 2_000_000)}
    for shape in sized[1_000_000]:
        one, two = sized[1_000_000][shape], sized[2_000_000][shape]
        t1 = best_time(lambda text=one: parse_tool_calls(text), args.repeats)
        t2 = best_time(lambda text=two: parse_tool_calls(text), args.repeats)
        calls, status = parse_tool_calls(two)
        found = len(calls) if calls else 0
        print(f"  {shape:26} {t1 * 1e3:9.3f} {t2 * 1e3:9.3f} {t2 / t1:8.2f} {found:7} {status:>13}")

    print(f"\nmatch_calls under 'any' (best of {args.repeats} runs; times in ms):")
    previous = None
    for n in (4, 8, 16, 32, 64):
        predicted, gold = matching_case(n)
        elapsed = best_time(lambda p=predicted, g=gold: match_calls(p, g, "any"), args.repeats)
        growth = "" if previous is None else f"  x{elapsed / previous:5.1f} for 2x calls"
        print(f"  n = {n:3}  {elapsed * 1e3:9.3f}{growth}")
        previous = elapsed
    json.dumps(match_calls(*matching_case(4), "any"))  # the matching is plain data


if __name__ == "__main__":
    main()
