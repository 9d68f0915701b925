"""A real transformers session on the tiny random Llama whose tokenizer carries our own thinking
chat template (``tests/tool_templates.THINKING``): the split is formatted with
``--template-kwarg enable_thinking=false``, the suite declares the same option and
``[parser] reasoning = "think"``; the run records both, counts reasoning with the engine's
tokenizer, and a suite declaring other options refuses the split at collection."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from plugin_helpers import read_json, read_jsonl
from suite_factory import write_suite

from pytest_sommelier.cli import main

sys.path.insert(0, str(Path(__file__).parents[1]))
from tool_templates import THINKING

pytestmark = pytest.mark.slow  # a real-model session

PREPARED = [
    {"example_id": f"en-{i}", "language": "en", "source_example_id": None,
     "query": f"weather in city {i}?",
     "tools": [{"name": "get_weather", "parameters": {"type": "object", "properties": {}}}],
     "gold_call": {"name": "get_weather", "arguments": {"city": f"c{i}"}}}
    for i in range(2)
]


def thinking_suite(pytester: pytest.Pytester, tiny: tuple[Path, Path], declared: dict) -> Path:
    model, adapter = tiny
    folder = pytester.path / "suite"
    folder.mkdir()
    shutil.copytree(model, folder / "model")
    config = json.loads((folder / "model" / "tokenizer_config.json").read_text())
    config["chat_template"] = THINKING
    (folder / "model" / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "model" / "chat_template.jinja").unlink(missing_ok=True)
    prepared = pytester.path / "prepared.jsonl"
    prepared.write_text("".join(json.dumps(r) + "\n" for r in PREPARED))
    split = pytester.path / "test.jsonl"
    assert main(["format", str(prepared), "--tokenizer", str(folder / "model"), "--split",
                 "test", "--out", str(split), "--template-kwarg", "enable_thinking=false"]) == 0
    rows = [json.loads(line) for line in split.read_text().splitlines()]
    assert all(r["prompt_text"].endswith("<think>\n\n</think>\n\n") for r in rows)
    suite = write_suite(folder, rows=rows, model={"base": "model", "revision": None},
                        suite={"slices": ["en"]}, decoding={"max_new_tokens": 3},
                        arms={"base": {}}, comparisons=None,
                        parser={"reasoning": "think"}, format={"template_kwargs": declared})
    shutil.rmtree(folder / "adapter")
    assert adapter.exists()
    return suite


def test_a_thinking_template_session_records_its_options(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    thinking_suite(pytester, tiny, {"enable_thinking": False})
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret == 0, result.stdout.str()
    report = read_json(pytester.path / "out" / "eval" / "base" / "evaluation_report.json")
    assert report["template_kwargs"] == {"enable_thinking": False}
    assert report["parser"]["reasoning"] == {"start": "<think>", "end": "</think>"}
    assert report["reasoning"]["outputs"] == 2
    records = read_jsonl(pytester.path / "out" / "eval" / "base" / "generations.en.jsonl")
    for record in records:  # a random model does not open a reasoning block by itself
        if record["reasoning_text"] is None:
            assert record["content_text"] == record["raw_text"]
    resolved = read_json(pytester.path / "out" / "suite.resolved.json")
    assert resolved["template_kwargs"] == {"enable_thinking": False}


def test_other_declared_options_refuse_the_split(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    thinking_suite(pytester, tiny, {"enable_thinking": True})
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*SOM-SPLIT-TEMPLATE-KWARGS*en-0*"])


def test_the_transformers_engine_counts_reasoning_tokens(tiny: tuple[Path, Path]) -> None:
    from pytest_sommelier.core.types import ArmConfig, ModelConfig
    from pytest_sommelier.inference import transformers_engine
    from pytest_sommelier.inference.protocol import token_count_of

    model, _ = tiny
    generators = transformers_engine.load_generators(
        ModelConfig(base=str(model), revision=None, dtype=None, device="cpu"),
        {"base": ArmConfig("base", None, None)}, suite_dir=model.parent,
    )
    # the tiny tokenizer is one token per byte
    assert token_count_of(generators["base"], "think [1]") == len(b"think [1]")
