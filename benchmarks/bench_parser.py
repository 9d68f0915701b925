"""Benchmark of the sommelier.parser.v1 parser against a naive baseline, in one run.

Prints:
1. parses/second on a mix of typical model outputs (a clean call, prose + call, prose only,
   broken JSON) for ``parse_tool_call`` and for a naive character-by-character scanner with
   the same rules; the ratio is the speed-up of letting the C JSON decoder do the scan;
2. the time of 1 MB and 2 MB outputs of four shapes (prose only, prose around a call, a call
   with many small arguments, an unterminated string) and the 2 MB / 1 MB ratio (about 2
   means linear), next to the naive scanner and to ``json.loads`` of the bare span as a floor.

Run: ``python benchmarks/bench_parser.py`` (single-threaded; a few seconds).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from pytest_sommelier.core.parse import MAX_DEPTH, parse_tool_call

CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "units": "celsius", "days": 3}}'
TYPICAL = [
    CALL,
    f"Sure! I'll check the weather for you.\n```json\n{CALL}\n```\nAnything else?",
    "I'm sorry, but I can't help with that request without more details about the city.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "units": "celsius",}}',
]


def naive_parse(text: str) -> tuple[Any, str]:
    """The literal rules, scanned one character at a time in Python, then ``json.loads``.

    Lighter than parse_tool_call on the decoding side (no repeated-key, NaN, overflow or
    integer-length checks), so the ratios understate the parser's advantage slightly.
    """
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None, "no_json"
    stack: list[str] = []
    in_string = escaped = False
    end = None
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            if len(stack) > MAX_DEPTH:
                return None, "invalid_json"
        elif ch in "}]":
            if stack.pop() != ch:
                return None, "invalid_json"
            if not stack:
                end = i + 1
                break
    if end is None:
        return None, "invalid_json"
    try:
        value = json.loads(text[start:end])
    except ValueError:
        return None, "invalid_json"
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, dict) and set(value) == {"name", "arguments"}:
        return value, "ok"
    return None, "invalid_shape"


def best_time(function: Callable[[], object], repeats: int) -> float:
    """The best wall time of ``repeats`` calls (the least disturbed by the shared CPU)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def rate(parser: Callable[[str], object], texts: list[str], rounds: int, repeats: int) -> float:
    """Parses per second over ``rounds`` passes of ``texts``."""

    def run() -> None:
        for _ in range(rounds):
            for text in texts:
                parser(text)

    return rounds * len(texts) / best_time(run, repeats)


def large_outputs(size: int) -> dict[str, tuple[str, str | None]]:
    """Outputs of about ``size`` characters: name -> (text, bare JSON span or None)."""
    prose = ("The weather tool takes a city and units. " * (size // 41 + 1))[: size // 2]
    items = ", ".join(f'{{"id": {i}, "tag": "t{i}"}}' for i in range(size // 26))
    many = f'{{"name": "bulk", "arguments": {{"items": [{items}]}}}}'
    return {
        "prose only (no_json)": (prose + prose, None),
        "prose around a call": (prose + CALL + prose, CALL),
        "call, many small args": (many, many),
        "unterminated string": ('{"name": "f", "arguments": {"s": "' + "x" * size, None),
    }


def main() -> None:
    """Run both comparisons and print the figures and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    for text in TYPICAL:
        assert parse_tool_call(text)[1] == naive_parse(text)[1]
    fast = rate(parse_tool_call, TYPICAL, 2_000, args.repeats)
    slow = rate(naive_parse, TYPICAL, 2_000, args.repeats)
    print("typical mix (clean call, prose + call, prose only, broken JSON):")
    print(f"  parse_tool_call   {fast:12,.0f} parses/s")
    print(f"  naive char loop   {slow:12,.0f} parses/s")
    print(f"  ratio             {fast / slow:12.1f}x")

    print(f"\nlarge outputs (best of {args.repeats} runs; times in ms):")
    print(
        f"  {'shape':24} {'1 MB':>9} {'2 MB':>9} {'2MB/1MB':>8} {'naive 2MB':>10} {'speed-up':>9}"
    )
    sized = {size: large_outputs(size) for size in (1_000_000, 2_000_000)}
    for shape in sized[1_000_000]:
        one = sized[1_000_000][shape][0]
        two, bare = sized[2_000_000][shape]
        assert parse_tool_call(two)[1] == naive_parse(two)[1]
        t1 = best_time(lambda text=one: parse_tool_call(text), args.repeats)
        t2 = best_time(lambda text=two: parse_tool_call(text), args.repeats)
        tn = best_time(lambda text=two: naive_parse(text), max(1, args.repeats // 2))
        print(
            f"  {shape:24} {t1 * 1e3:9.3f} {t2 * 1e3:9.3f} {t2 / t1:8.2f} "
            f"{tn * 1e3:10.3f} {tn / t2:8.1f}x"
        )
        if bare is not None:
            floor = best_time(lambda text=bare: json.loads(text), args.repeats)
            print(f"  {'  json.loads(span) alone':24} {'':9} {floor * 1e3:9.3f}")


if __name__ == "__main__":
    main()
