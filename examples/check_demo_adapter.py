#!/usr/bin/env python3
"""Quick greedy check of the demo adapter against its base, outside the plugin.

Generates for every prompt of the formatted test split with the base (adapter disabled) and
with the adapter: greedy, batches with left padding, ``--max-new-tokens`` (default 96). Parses
with ``sommelier.parser.v1`` and prints the five metrics per arm and language, plus the number
of gold targets longer than the token limit. This is a sanity check for the training run; the
evaluation proper is ``pytest -m eval eval_suites/demo``.

    python examples/check_demo_adapter.py [--adapter eval_suites/demo/adapter] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# Idle OpenMP threads sleep instead of spinning: on shared CPUs a spinning team makes every
# parallel region wait for descheduled threads (measured: 5-7 s vs 0.8 s per forward pass).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from pytest_sommelier.core.metrics import compute_metrics
from pytest_sommelier.core.parse import parse_tool_call

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_demo_adapter import load_base


def generate(model: Any, tokenizer: Any, prompts: list[str], *, max_new_tokens: int,
             batch_size: int) -> list[str]:
    """Greedy completions, one per prompt, in order (left padding, special tokens dropped)."""
    tokenizer.padding_side = "left"
    outputs: list[str] = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[start : start + batch_size], return_tensors="pt",
                          padding=True, add_special_tokens=False)
        with torch.no_grad():
            generated = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                       pad_token_id=tokenizer.pad_token_id)
        new_tokens = generated[:, batch["input_ids"].shape[1] :]
        outputs += tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
    return outputs


def score(rows: list[dict[str, Any]], texts: list[str]) -> dict[str, dict[str, float]]:
    """Metric values per language and overall."""
    records = []
    for row, text in zip(rows, texts, strict=True):
        call, status = parse_tool_call(text)
        records.append({"example_id": row["example_id"], "language": row["language"],
                        "parse_status": status, "parsed_call": call,
                        "gold_call": json.loads(row["target_text"])[0]})
    result = {}
    for language in ["overall", *sorted({r["language"] for r in rows})]:
        chosen = [r for r in records if language in ("overall", r["language"])]
        metrics = compute_metrics(chosen)
        result[language] = {name: round(value["value"], 3) for name, value in metrics.items()}
    return result


def main(argv: list[str] | None = None) -> int:
    """Generate with both arms, print metrics (and write raw outputs with --dump)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", type=Path, default=Path("eval_suites/demo/data/test.jsonl"))
    parser.add_argument("--adapter", type=Path, default=Path("eval_suites/demo/adapter"))
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--arms", default="adapter,base")
    parser.add_argument("--dump", type=Path, default=None, help="write raw outputs here (JSONL)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    from peft import PeftModel

    rows = [json.loads(line) for line in args.split.read_text(encoding="utf-8").splitlines()]
    if args.limit:
        rows = rows[: args.limit]
    base, tokenizer = load_base()
    targets = [len(tokenizer(r["target_text"], add_special_tokens=False)["input_ids"]) + 1
               for r in rows]
    print(f"{len(rows)} prompts; longest gold target {max(targets)} tokens incl. EOS; "
          f"{sum(t > args.max_new_tokens for t in targets)} longer than {args.max_new_tokens}")
    model = PeftModel.from_pretrained(base, str(args.adapter))
    model.eval()
    dump = []
    for arm in args.arms.split(","):
        started = time.monotonic()
        prompts = [r["prompt_text"] for r in rows]
        if arm == "base":
            with model.disable_adapter():
                texts = generate(model, tokenizer, prompts, max_new_tokens=args.max_new_tokens,
                                 batch_size=args.batch_size)
        else:
            texts = generate(model, tokenizer, prompts, max_new_tokens=args.max_new_tokens,
                             batch_size=args.batch_size)
        elapsed = time.monotonic() - started
        print(f"{arm}: {elapsed:.0f}s", json.dumps(score(rows, texts)), flush=True)
        dump += [{"arm": arm, "example_id": r["example_id"], "raw_text": t}
                 for r, t in zip(rows, texts, strict=True)]
    if args.dump:
        args.dump.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in dump),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
