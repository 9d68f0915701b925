"""Benchmark: the training callback's evaluation against a pytest run of the same examples.

On a random Llama built locally (``tests/tiny.py``, wider than the tests' one) with a LoRA
adapter saved as ``out/checkpoint-1``, one suite (a base arm and that adapter), generation
cache off on both sides, in one process:

1. ``pytest -m eval`` of the suite, in process: a first run loads the base and attaches the
   adapter (cold); later runs find them loaded (warm: what the callback, whose model is in
   memory already, is compared with);
2. ``SommelierCallback.on_save`` for a copy of that checkpoint with the model in memory (the
   base under ``disable_adapter()``, the adapter as trained), timed; warm pytest runs and
   callback evaluations alternate ``--repeats`` times and the fastest of each is kept (a
   loaded machine slows both alike); then once more under ``tracemalloc`` with the process's
   peak RSS reset (``/proc/self/clear_refs``), for the peak extra memory of one evaluation.

Prints both times, the ratio callback / warm pytest run (the issue's bound: <= 1.2), and the
peak extra RSS and Python heap of one evaluation; ``--json`` writes them too.

    python benchmarks/bench_callback.py [--examples 24] [--max-new-tokens 24] [--batch-size 4]
                                        [--hidden 128] [--layers 4] [--threads 2] [--repeats 2]
                                        [--json F]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def rss_kib(field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process in KiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def reset_peak_rss() -> bool:
    """Reset the process's peak RSS (``VmHWM``) to its current RSS; False where not allowed."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def build(root: Path, args: argparse.Namespace) -> tuple[Path, Any]:
    """The model folder, a suite over it and the in-memory LoRA model saved as checkpoint-1."""
    import torch
    from peft import LoraConfig, get_peft_model
    from suite_factory import make_row, match_base_tokenizer, write_suite
    from tiny import make_tiny_model_dir
    from transformers import AutoModelForCausalLM

    model_dir = make_tiny_model_dir(
        root / "suite" / "model", hidden_size=args.hidden, intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=4,
    )
    roots = (args.examples + 1) // 2
    rows = [make_row(f"en-{i}", "en", prompt_text=f"<|im_start|>user\nweather in city {i}"
                     "<|im_end|>\n<|im_start|>assistant\n") for i in range(roots)]
    rows += [make_row(f"he-{i}", "he", f"en-{i}", prompt_text=f"<|im_start|>user\nמזג אוויר "
                      f"{i}<|im_end|>\n<|im_start|>assistant\n")
             for i in range(args.examples - roots)]
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                            lora_dropout=0.0, task_type="CAUSAL_LM"))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.2)  # an adapter that changes the outputs
    model.save_pretrained(str(root / "suite" / "out" / "checkpoint-1"), safe_serialization=True)
    suite = write_suite(
        root / "suite", rows=rows, model={"base": "model", "revision": None},
        decoding={"max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size},
        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-1"}},
        statistics={"resamples": 500},
    )
    return match_base_tokenizer(suite), model


def pytest_run(suite: Path, out: Path) -> float:
    """One in-process ``pytest -m eval`` of the suite (no cache); its wall time."""
    import pytest

    started = time.perf_counter()
    code = pytest.main([str(suite.parent), "-q", "-p", "no:cacheprovider", "--sommelier-no-cache",
                        "--sommelier-out", str(out), "-m", "eval", "--no-header", "-rN"])
    elapsed = time.perf_counter() - started
    if code not in (0, 1):
        raise SystemExit(f"the pytest run exited {code}")
    return elapsed


def callback_run(suite: Path, model: Any, root: Path, step: int, *, memory: bool) -> dict:
    """One ``on_save`` of the callback for ``out/checkpoint-<step>``: time (and memory)."""
    from transformers import TrainerControl, TrainerState

    from pytest_sommelier.training import SommelierCallback

    callback = SommelierCallback(suite, out=root / f"cb-runs-{step}", store=root / "store",
                                 cache_dir=None, quiet=True)
    state, control = TrainerState(), TrainerControl()
    args = SimpleNamespace(output_dir=str(suite.parent / "out"))
    model.train()
    callback.on_train_begin(args, state, control, model=model)
    state.global_step = step
    rss_before = rss_kib("VmRSS")
    peak_reset = reset_peak_rss() if memory else False
    if memory:
        tracemalloc.start()
    started = time.perf_counter()
    callback.on_save(args, state, control, model=model)
    elapsed = time.perf_counter() - started
    result = {"seconds": elapsed, "line": callback.results[-1].line}
    if memory:
        _, heap_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        result["python_heap_peak_mib"] = heap_peak / 2**20
        if peak_reset:
            result["rss_peak_extra_mib"] = (rss_kib("VmHWM") - rss_before) / 1024
    assert model.training, "the callback left the model in eval mode"
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=24)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="timed runs of each (min)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite, model = build(root, args)
        checkpoints = suite.parent / "out"
        for step in range(2, args.repeats + 2):
            shutil.copytree(checkpoints / "checkpoint-1", checkpoints / f"checkpoint-{step}")
        cold = pytest_run(suite, root / "pytest-cold")
        warms, timings = [], []
        for step in range(1, args.repeats + 1):  # interleaved: a loaded machine hits both
            warms.append(pytest_run(suite, root / "pytest-warm"))
            timings.append(callback_run(suite, model, root, step, memory=False))
        warm = min(warms)
        timed = min(timings, key=lambda t: t["seconds"])
        measured = callback_run(suite, model, root, args.repeats + 1, memory=True)
        same = json.loads((root / "pytest-warm" / "eval" / "adapter" / "evaluation_report.json")
                          .read_text())["metrics"]
        ours = json.loads((next((root / "cb-runs-1").glob("2*")) / "eval" / "adapter"
                           / "evaluation_report.json").read_text())["metrics"]
    ratio = timed["seconds"] / warm
    report = {
        "examples": args.examples, "arms": 2, "max_new_tokens": args.max_new_tokens,
        "batch_size": args.batch_size, "pytest_cold_s": cold, "pytest_warm_s": warm,
        "pytest_warm_runs_s": warms, "callback_runs_s": [t["seconds"] for t in timings],
        "callback_s": timed["seconds"], "ratio_callback_over_pytest_warm": ratio,
        "python_heap_peak_mib": measured.get("python_heap_peak_mib"),
        "rss_peak_extra_mib": measured.get("rss_peak_extra_mib"),
        "same_metrics_as_pytest": same == ours,
    }
    print(f"pytest run (cold: base loaded)    {cold:8.2f} s")
    print(f"pytest run (warm: base in memory) {warm:8.2f} s")
    print(f"callback evaluation (in memory)   {timed['seconds']:8.2f} s")
    print(f"ratio callback / warm pytest run  {ratio:8.2f}  (bound: <= 1.2)")
    print(f"peak extra RSS of one evaluation  {report['rss_peak_extra_mib']} MiB")
    print(f"peak Python heap (tracemalloc)    {report['python_heap_peak_mib']:.1f} MiB")
    print(f"same metrics as the pytest run    {report['same_metrics_as_pytest']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
