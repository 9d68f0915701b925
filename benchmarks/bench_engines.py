"""Benchmark: the vllm engine, two ratios in one run (run it in the vLLM environment).

1. **Overhead**: the plugin's vllm generator (``generate(prompts, decoding)``: tokenization with
   the base's tokenizer, one ``LLM.generate`` call, decoding, checks) against a bare
   ``LLM.generate`` on the same token ids with the same sampling parameters, on the *same*
   ``vllm.LLM``, alternating, ``--repeats`` times each after one warm-up; prints plugin / bare
   (goal: <= 1.05) and checks both return the same texts.
2. **One engine for all arms vs one load per arm**: the suite's arms (base and adapter)
   generated from one engine (one load, the adapter a ``LoRARequest``) against a fresh engine
   load per arm (the base arm without LoRA, the adapter arm with it), wall time of loads plus
   generation; prints per-arm / all-arms.

    python benchmarks/bench_engines.py [--prompts 8] [--max-new-tokens 32] [--repeats 3]
                                       [--skip-loads]

Uses the demo suite (``eval_suites/demo``): its GGUF base goes through the safetensors load
cache. vLLM starts its engine in a spawned subprocess, hence the ``__main__`` guard.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "eval_suites" / "demo" / "sommelier.toml"


def demo_inputs(count: int) -> tuple[object, list[str], dict]:
    """The demo suite, its first ``count`` prompts (English first) and its decoding."""
    from pytest_sommelier.data.suite.load import load_suite

    suite = load_suite(DEMO)
    rows = [json.loads(line) for line in suite.test_split.read_text(encoding="utf-8").splitlines()]
    return suite, [row["prompt_text"] for row in rows[:count]], dict(suite.decoding)


def bare_generate(engine: object, lora: object, prompts: list[str], max_tokens: int) -> list[str]:
    """``LLM.generate`` on token ids with the engine's own sampling parameters, nothing else."""
    from vllm import SamplingParams, TokensPrompt
    from vllm.lora.request import LoRARequest

    from pytest_sommelier.inference import vllm_engine

    ids = [engine.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    params = SamplingParams(
        n=1,
        temperature=0.0,
        top_p=1.0,
        top_k=vllm_engine._disabled_top_k(SamplingParams),
        max_tokens=max_tokens,
        seed=0,
        stop_token_ids=list(engine.stop_ids),
        detokenize=False,
    )
    request = None if lora is None else LoRARequest(lora.name, lora.int_id, lora.folder)
    results = engine.llm.generate(
        [TokensPrompt(prompt_token_ids=row) for row in ids], params, use_tqdm=False,
        lora_request=request,
    )  # fmt: skip
    return [
        engine.tokenizer.decode(r.outputs[0].token_ids, skip_special_tokens=True) for r in results
    ]


def overhead(args: argparse.Namespace) -> None:
    from pytest_sommelier.inference import engines, vllm_engine

    suite, prompts, decoding = demo_inputs(args.prompts)
    decoding["max_new_tokens"] = args.max_new_tokens
    generators = vllm_engine.load_generators(
        engines.EngineConfig(name="vllm"), suite.model, suite.arms, suite_dir=suite.path.parent
    )
    adapter = generators["adapter"]
    started = time.perf_counter()
    warm = adapter.generate(prompts[:1], decoding)
    print(f"engine load + warm-up: {time.perf_counter() - started:.1f} s", flush=True)
    bare_generate(adapter.engine, adapter.lora, prompts[:1], args.max_new_tokens)
    plugin_s, bare_s = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        ours = adapter.generate(list(prompts), decoding)
        plugin_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        theirs = bare_generate(adapter.engine, adapter.lora, prompts, args.max_new_tokens)
        bare_s.append(time.perf_counter() - t)
        assert ours == theirs, "plugin and bare LLM.generate disagree"
    del warm
    plugin, bare = min(plugin_s), min(bare_s)
    print(
        f"overhead ({len(prompts)} prompts, adapter arm, {args.max_new_tokens} new tokens, best of "
        f"{args.repeats}): plugin {plugin:.2f} s, bare LLM.generate {bare:.2f} s, "
        f"ratio {plugin / bare:.3f} (goal <= 1.05); outputs identical",
        flush=True,
    )
    vllm_engine.clear_cache()
    del generators, adapter
    gc.collect()


def loads(args: argparse.Namespace) -> None:
    from dataclasses import replace

    from pytest_sommelier.inference import engines, vllm_engine

    suite, prompts, decoding = demo_inputs(args.prompts)
    decoding["max_new_tokens"] = args.max_new_tokens
    config = engines.EngineConfig(name="vllm")
    started = time.perf_counter()
    generators = vllm_engine.load_generators(
        config, suite.model, suite.arms, suite_dir=suite.path.parent
    )
    together = {arm: generators[arm].generate(list(prompts), decoding) for arm in suite.arms}
    one_engine = time.perf_counter() - started
    print(f"all arms, one engine: {one_engine:.1f} s", flush=True)
    _shutdown(generators)
    separate: dict[str, list[str]] = {}
    started = time.perf_counter()
    for name, arm in suite.arms.items():
        vllm_engine.clear_cache()
        only = {name: replace(arm)}
        per_arm = vllm_engine.load_generators(
            config, suite.model, only, suite_dir=suite.path.parent
        )
        separate[name] = per_arm[name].generate(list(prompts), decoding)
        _shutdown(per_arm)
    one_per_arm = time.perf_counter() - started
    pairs = [p for arm in together for p in zip(together[arm], separate[arm], strict=True)]
    same = sum(a == b for a, b in pairs)
    total = sum(len(v) for v in together.values())
    print(
        f"one engine load per arm: {one_per_arm:.1f} s; ratio per-arm / one-engine "
        f"{one_per_arm / one_engine:.2f}; outputs identical {same}/{total}",
        flush=True,
    )


def _shutdown(generators: dict) -> None:
    """Drop the engine so its worker process exits before the next load."""
    from pytest_sommelier.inference import vllm_engine

    engine = next(iter(generators.values())).engine
    llm = engine.llm
    engine.llm = None
    vllm_engine.clear_cache()
    if llm is not None and hasattr(llm, "llm_engine"):
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception:
            pass
    del llm
    gc.collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-loads", action="store_true", help="only the overhead ratio")
    parser.add_argument("--skip-overhead", action="store_true", help="only the loads ratio")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if not args.skip_overhead:
        overhead(args)
    if not args.skip_loads:
        loads(args)


if __name__ == "__main__":
    main()
