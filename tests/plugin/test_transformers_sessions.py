"""Real pytest sessions through the default transformers + peft backend, on a tiny random Llama.

The expected outputs are computed independently in the test with plain transformers / peft
(batch 1, greedy), not through the plugin's backend.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from plugin_helpers import read_json, read_jsonl, rows
from suite_factory import match_base_tokenizer, write_suite
from tiny import make_tiny_adapter_dir, make_tiny_model_dir

pytestmark = pytest.mark.slow  # real-model sessions (a tiny Llama through transformers + peft)

IDS = ("en-0", "en-1", "en-2", "he-0", "he-1")
MAX_NEW_TOKENS = 6


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny")
    model = make_tiny_model_dir(root / "model")
    adapter = make_tiny_adapter_dir(model, root / "adapter")
    return model, adapter


def expected_outputs(model_dir: Path, adapter_dir: Path | None, prompts: list[str]) -> list[str]:
    """Greedy outputs with plain transformers (and peft for the adapter), batch 1."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_dir)
    model.eval()
    outputs = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
            generated = model.generate(
                **encoded,
                do_sample=False,
                max_new_tokens=MAX_NEW_TOKENS,
                pad_token_id=tokenizer.pad_token_id,
            )
            new = generated[0, encoded["input_ids"].shape[1] :]
            outputs.append(tokenizer.decode(new, skip_special_tokens=True))
    return outputs


def write_tiny_suite(pytester: pytest.Pytester, tiny_dirs: tuple[Path, Path]) -> Path:
    model, adapter = tiny_dirs
    suite = write_suite(
        pytester.path / "suite",
        rows=rows(IDS),
        model={"base": "model", "revision": None},
        decoding={"max_new_tokens": MAX_NEW_TOKENS, "batch_size": 2},
        gates=[{"name": "valid", "arm": "adapter", "metric": "valid_json_rate", "max": 1.0}],
    )
    shutil.rmtree(suite.parent / "adapter")
    shutil.copytree(model, suite.parent / "model")
    shutil.copytree(adapter, suite.parent / "adapter")
    return match_base_tokenizer(suite)


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_tiny_llama_through_transformers_and_peft(
    pytester: pytest.Pytester, tiny_dirs: tuple[Path, Path], xdist: bool
) -> None:
    suite = write_tiny_suite(pytester, tiny_dirs)
    args = ["-p", "no:cacheprovider", "--sommelier-out", "out"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("missed", 0) == 2 * len(IDS), outcomes
    assert result.ret == 0
    out = pytester.path / "out"
    split = read_jsonl(suite.parent / "data" / "test.jsonl")
    prompts = {row["example_id"]: row["prompt_text"] for row in split}
    for arm, adapter_dir in (("base", None), ("adapter", suite.parent / "adapter")):
        stored = {
            g["example_id"]: g["raw_text"]
            for lang in ("en", "he")
            for g in read_jsonl(out / "eval" / arm / f"generations.{lang}.jsonl")
        }
        expected = expected_outputs(suite.parent / "model", adapter_dir, [prompts[i] for i in IDS])
        assert [stored[i] for i in IDS] == expected, arm
    base_texts = read_jsonl(out / "eval" / "base" / "generations.en.jsonl")
    adapter_texts = read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")
    assert [g["raw_text"] for g in base_texts] != [g["raw_text"] for g in adapter_texts]
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    assert base["model_identity"] == adapter["model_identity"]
    assert adapter["adapter_identity"]["sha256"]
    text = json.dumps([base, adapter])
    assert str(pytester.path) not in text and "/tmp" not in text
    assert read_json(out / "gate_verdict.json")["verdict"] == "pass"
    resolved = (out / "suite.resolved.json").read_text()
    assert str(pytester.path) not in resolved
