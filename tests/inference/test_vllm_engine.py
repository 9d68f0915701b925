"""The vllm engine: option and identity rules everywhere; real vLLM (in process and through its
OpenAI server) only where ``import vllm`` works (the engine job's environment)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from functools import partial
from pathlib import Path

import pytest

from pytest_sommelier.errors import InputError
from pytest_sommelier.inference import engines, openai_engine, vllm_engine

sys.path.insert(0, str(Path(__file__).parents[1]))

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 12, "batch_size": 4}
PROMPTS = ["hello", "שלום עולם", '{"name": "get_weather", "arguments": {}}', "a" * 30, "xy"]


from engine_configs import arm_config  # noqa: E402
from engine_configs import model_config as _model_config  # noqa: E402

model_config = partial(_model_config, dtype="float32", served_name="tiny")
"""This module's ``[model]`` record (its defaults as keyword arguments)."""


ARMS = {
    "base": arm_config("base"),
    "adapter": arm_config("adapter", "adapter", served_name="tiny-lora"),
}


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama vLLM's CPU attention accepts (head size 32) and a rank-4 LoRA for it."""
    pytest.importorskip("torch")
    from tiny import make_tiny_adapter_dir, make_tiny_model_dir

    root = tmp_path_factory.mktemp("vllm-suite")
    make_tiny_model_dir(root / "model", hidden_size=64, intermediate_size=128)
    make_tiny_adapter_dir(root / "model", root / "adapter", seed=3, r=4)
    return root


@pytest.fixture(autouse=True)
def fresh_engines():
    vllm_engine.clear_cache()
    yield


@pytest.mark.parametrize("key", sorted(vllm_engine.OWNED_OPTIONS))
def test_plugin_owned_options_are_refused_by_name(key: str) -> None:
    with pytest.raises(InputError) as caught:
        vllm_engine.check_options({"max_model_len": 512, key: "x"})
    assert caught.value.code == "SOM-VLLM-OPTION"
    assert f"engine.options.{key}" in str(caught.value)


def test_other_options_pass_through() -> None:
    options = {"max_model_len": 512, "tensor_parallel_size": 2, "enforce_eager": True}
    assert vllm_engine.check_options(options) == options


@pytest.mark.parametrize(
    ("ranks", "expected"), [([4], 8), ([8], 8), ([8, 16], 16), ([33], 64), ([], 1), ([1], 1)]
)
def test_max_lora_rank_is_the_smallest_supported_that_holds_every_adapter(
    ranks: list[int], expected: int
) -> None:
    assert vllm_engine.lora_rank_for(ranks) == expected


def test_a_rank_above_what_vllm_supports_is_refused() -> None:
    with pytest.raises(InputError, match="SOM-ADAPTER-VLLM-UNSUPPORTED"):
        vllm_engine.lora_rank_for([1024])


def test_rank_is_read_from_the_adapter_config(tmp_path: Path) -> None:
    (tmp_path / "adapter_config.json").write_text(
        json.dumps({"r": 8, "rank_pattern": {"q_proj": 32}}), encoding="utf-8"
    )
    assert engines.adapter_rank(tmp_path) == 32


@pytest.mark.slow
def test_identity_without_loading_anything(suite_dir: Path) -> None:
    config = engines.EngineConfig(name="vllm", options={"max_model_len": 256})
    generators = vllm_engine.load_generators(
        config, model_config("model"), ARMS, suite_dir=suite_dir
    )
    base, lora = generators["base"], generators["adapter"]
    assert base.engine is lora.engine and base.engine.llm is None and base.engine.loads == 0
    assert base.model_identity == lora.model_identity
    engine = base.model_identity["engine"]
    assert engine["name"] == "vllm" and engine["prompt_input"] == "token_ids"
    assert engine["options"] == {"max_model_len": 256}
    assert engine["version"] == engines.package_version("vllm")[1]
    assert base.adapter_identity is None and base.lora is None
    assert lora.adapter_identity["name"] == "adapter" and lora.lora.rank == 4
    dumped = json.dumps([base.model_identity, lora.adapter_identity])
    assert str(suite_dir) not in dumped


@pytest.mark.slow
def test_identity_differs_from_the_transformers_engine_only_by_the_engine(suite_dir: Path) -> None:
    from pytest_sommelier.inference import transformers_engine

    config = engines.EngineConfig(name="vllm")
    ours = vllm_engine.load_generators(config, model_config("model"), ARMS, suite_dir=suite_dir)
    theirs = transformers_engine.load_generators(model_config("model"), ARMS, suite_dir=suite_dir)
    mine = dict(ours["adapter"].model_identity)
    assert mine.pop("engine")["name"] == "vllm"
    other = {k: v for k, v in theirs["adapter"].model_identity.items() if k != "engine"}
    assert mine == other
    assert ours["adapter"].adapter_identity == theirs["adapter"].adapter_identity


@pytest.mark.slow
def test_one_engine_per_base_and_options_in_a_process(suite_dir: Path) -> None:
    config = engines.EngineConfig(name="vllm")
    first = vllm_engine.load_generators(config, model_config("model"), ARMS, suite_dir=suite_dir)
    again = vllm_engine.load_generators(config, model_config("model"), ARMS, suite_dir=suite_dir)
    assert first["adapter"].engine is again["adapter"].engine
    assert first["adapter"].lora == again["adapter"].lora
    other = engines.EngineConfig(name="vllm", options={"max_model_len": 128})
    third = vllm_engine.load_generators(other, model_config("model"), ARMS, suite_dir=suite_dir)
    assert third["adapter"].engine is not first["adapter"].engine


# --------------------------------------------------------------------------- real vLLM

needs_vllm = pytest.mark.skipif(
    not vllm_engine.vllm_importable(),
    reason="vllm does not import here (the engine job's env has it)",
)


def transformers_outputs(suite_dir: Path) -> dict[str, list[str]]:
    from pytest_sommelier.inference import transformers_engine

    generators = transformers_engine.load_generators(
        model_config("model"), ARMS, suite_dir=suite_dir
    )
    return {arm: generators[arm].generate(list(PROMPTS), DECODING) for arm in ARMS}


@pytest.mark.slow
@needs_vllm
def test_vllm_in_process_matches_transformers_token_for_token(suite_dir: Path) -> None:
    config = engines.EngineConfig(name="vllm", options={"max_model_len": 256})
    generators = vllm_engine.load_generators(
        config, model_config("model"), ARMS, suite_dir=suite_dir
    )
    ours = {arm: generators[arm].generate(list(PROMPTS), DECODING) for arm in ARMS}
    assert generators["base"].engine.loads == 1
    reference = transformers_outputs(suite_dir)
    assert ours == reference
    assert ours["adapter"] != ours["base"]  # the LoRA was applied


def _free_port() -> int:
    with socket.socket() as handle:
        handle.bind(("127.0.0.1", 0))
        return int(handle.getsockname()[1])


@pytest.mark.slow
@needs_vllm
def test_openai_engine_against_a_real_vllm_server(suite_dir: Path, tmp_path: Path) -> None:
    port = _free_port()
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(suite_dir / "model"), "--served-model-name", "tiny",
        "--dtype", "float32", "--max-model-len", "256", "--seed", "0",
        "--generation-config", "vllm", "--load-format", "safetensors",
        "--enable-lora", "--max-lora-rank", "8",
        "--lora-modules", f"tiny-lora={suite_dir / 'adapter'}",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                time.sleep(2)
        config = engines.EngineConfig(name="openai", base_url=url, concurrency=4)
        generators = openai_engine.load_generators(
            config, model_config("model"), ARMS, suite_dir=suite_dir
        )
        engine = generators["base"].model_identity["engine"]
        assert engine["served_models"] == ["tiny", "tiny-lora"]
        assert isinstance(engine["server_version"], str) and engine["server_version"]
        ours = {arm: generators[arm].generate(list(PROMPTS), DECODING) for arm in ARMS}
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()
    assert ours == transformers_outputs(suite_dir)
    assert ours["adapter"] != ours["base"]
