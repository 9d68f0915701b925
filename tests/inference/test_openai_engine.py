"""The openai engine against a local fault-injecting server (tests/fault_server.py)."""

from __future__ import annotations

import json
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_sommelier.core.types import ArmConfig
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    SommelierEnvironmentError,
)
from pytest_sommelier.inference import engines, openai_engine

sys.path.insert(0, str(Path(__file__).parents[1]))
from fault_server import FaultServer, completion_ids, completion_text

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 7, "batch_size": 4}
PROMPTS = ["hello", "שלום עולם", '{"name": "f"}', "a" * 30, "x"]


from engine_configs import arm_config  # noqa: E402
from engine_configs import model_config as _model_config  # noqa: E402
from property_budget import examples  # noqa: E402

model_config = partial(_model_config, served_name="smol")
"""This module's ``[model]`` record (its defaults as keyword arguments)."""


@pytest.fixture(scope="module")
def suite_dir(tiny: tuple[Path, Path]) -> Path:
    """The folder holding the tiny model ``model`` and its adapter ``adapter``."""
    return tiny[0].parent


def arms() -> dict[str, ArmConfig]:
    return {
        "base": arm_config("base"),
        "adapter": arm_config("adapter", "adapter", served_name="smol-lora"),
    }


def load(server: FaultServer, suite_dir: Path, **engine: Any) -> dict[str, Any]:
    """Generators for both arms over ``server``, with instant backoff."""
    config = engines.EngineConfig(name="openai", base_url=server.url, **engine)
    generators = openai_engine.load_generators(
        config, model_config("model"), arms(), suite_dir=suite_dir
    )
    for generator in generators.values():
        generator.server.backoff_s = 0.0
    return generators


def token_ids(suite_dir: Path, prompt: str) -> list[int]:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(suite_dir / "model"))
    return tokenizer(prompt, add_special_tokens=False)["input_ids"]


@pytest.mark.slow
def test_outputs_in_order_token_ids_and_explicit_greedy_params(suite_dir: Path) -> None:
    with FaultServer() as server:
        generators = load(server, suite_dir)
        base = generators["base"].generate(list(PROMPTS), DECODING)
        lora = generators["adapter"].generate(list(PROMPTS), DECODING)
    ids = [token_ids(suite_dir, p) for p in PROMPTS]
    assert base == [completion_text("smol", row) for row in ids]
    assert lora == [completion_text("smol-lora", row) for row in ids]
    bodies = server.completions()
    assert len(bodies) == 2 * len(PROMPTS)
    for body in bodies:
        assert body["temperature"] == 0.0 and body["top_p"] == 1.0 and body["n"] == 1
        assert body["max_tokens"] == 7 and body["stream"] is False and body["seed"] == 0
        assert isinstance(body["prompt"], list)
    assert {b["model"] for b in bodies} == {"smol", "smol-lora"}


@pytest.mark.slow
def test_returned_token_ids_are_decoded_locally(suite_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(suite_dir / "model"))
    with FaultServer(return_token_ids=True) as server:
        outputs = load(server, suite_dir)["adapter"].generate(list(PROMPTS), DECODING)
    expected = [
        tokenizer.decode(completion_ids(token_ids(suite_dir, p)), skip_special_tokens=True)
        for p in PROMPTS
    ]
    assert outputs == expected
    assert outputs != [completion_text("smol-lora", token_ids(suite_dir, p)) for p in PROMPTS]
    assert all(body["return_token_ids"] is True for body in server.completions())


@pytest.mark.slow
def test_responses_out_of_order_are_stored_in_input_order(suite_dir: Path) -> None:
    prompts = [f"p{'x' * i}" for i in range(6)]

    def delay(body: dict[str, Any]) -> float:  # the first prompt answers last
        return 0.05 * (8 - len(body["prompt"]))

    with FaultServer(delay=delay) as server:
        generators = load(server, suite_dir, concurrency=6)
        outputs = generators["adapter"].generate(prompts, DECODING)
    ids = [token_ids(suite_dir, p) for p in prompts]
    assert server.finished != ids  # the server really answered out of order
    assert sorted(map(tuple, server.finished)) == sorted(map(tuple, ids))
    assert outputs == [completion_text("smol-lora", row) for row in ids]


@pytest.mark.slow
def test_connection_errors_429_and_5xx_are_retried(suite_dir: Path) -> None:
    with FaultServer(faults=["429", "500", "drop"]) as server:
        generators = load(server, suite_dir, max_retries=3, concurrency=1)
        outputs = generators["base"].generate(["hello"], DECODING)
    assert outputs == [completion_text("smol", token_ids(suite_dir, "hello"))]
    assert len(server.completions()) == 4


@pytest.mark.slow
def test_retries_are_bounded_and_fail_the_whole_batch(suite_dir: Path) -> None:
    with FaultServer(faults=["503"] * 4) as server:
        generators = load(server, suite_dir, max_retries=3, concurrency=1)
        with pytest.raises(EvaluationError) as caught:
            generators["base"].generate(["hello", "world", "again"], DECODING)
    assert caught.value.code == "SOM-OPENAI-RETRIES"
    assert "4 attempt(s)" in str(caught.value) and "HTTP 503" in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.slow
def test_backoff_is_bounded(suite_dir: Path) -> None:
    waits: list[float] = []
    with FaultServer(faults=["429"] * 6) as server:
        generators = load(server, suite_dir, max_retries=6, concurrency=1)
        generators["base"].server.backoff_s = 5.0
        generators["base"].server.sleep = waits.append
        generators["base"].generate(["hello"], DECODING)
    assert len(waits) == 6 and max(waits) <= openai_engine.MAX_BACKOFF_S


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["400"])
def test_client_errors_are_not_retried(suite_dir: Path, fault: str) -> None:
    with FaultServer(faults=[fault]) as server:
        generators = load(server, suite_dir, max_retries=3, concurrency=1)
        with pytest.raises(EvaluationError) as caught:
            generators["base"].generate(["hello"], DECODING)
    assert caught.value.code == "SOM-OPENAI-HTTP"
    assert len(server.completions()) == 1


@pytest.mark.slow
def test_a_hung_server_hits_the_request_timeout(suite_dir: Path) -> None:
    answer = threading.Event()  # the server answers only once the test lets it

    def hang(body: Any) -> float:
        answer.wait(timeout=10)  # a client that never times out gets its answer then
        return 0.0

    with FaultServer(delay=hang) as server:
        generators = load(server, suite_dir, request_timeout_s=0.3, concurrency=1)
        try:
            with pytest.raises(EvaluationError) as caught:
                generators["base"].generate(["hello"], DECODING)
            # the client gave up on its own: one request, and the server had answered nothing
            assert len(server.completions()) == 1 and server.finished == []
        finally:
            answer.set()
    assert caught.value.code == "SOM-OPENAI-TIMEOUT"
    assert "request_timeout_s = 0.3 s" in str(caught.value)


@pytest.mark.slow
def test_a_missing_served_name_is_a_setup_error_naming_it(suite_dir: Path) -> None:
    with (
        FaultServer(models=["smol", "other"]) as server,
        pytest.raises(SommelierEnvironmentError) as caught,
    ):
        load(server, suite_dir)
    text = str(caught.value)
    assert caught.value.code == "SOM-OPENAI-MODEL-MISSING"
    assert "'smol-lora' (arms.adapter.served_name)" in text and "it serves: other, smol" in text
    assert server.completions() == []


@pytest.mark.slow
def test_a_missing_served_name_key_is_an_input_error(suite_dir: Path) -> None:
    config = engines.EngineConfig(name="openai", base_url="http://127.0.0.1:9/v1")
    bad = {"base": arm_config("base"), "adapter": arm_config("adapter", "adapter")}
    with pytest.raises(InputError) as caught:
        openai_engine.load_generators(config, model_config("model"), bad, suite_dir=suite_dir)
    assert caught.value.code == "SOM-OPENAI-SERVED-NAME"
    assert "arms.adapter.served_name" in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "code"),
    [
        ("wrong-model", "SOM-OPENAI-WRONG-MODEL"),
        ("garbage", "SOM-OPENAI-RESPONSE"),
        ("two-choices", "SOM-OPENAI-RESPONSE"),
    ],
)
def test_bad_responses_fail_the_batch(suite_dir: Path, fault: str, code: str) -> None:
    with FaultServer(faults=[fault]) as server:
        generators = load(server, suite_dir, concurrency=1)
        with pytest.raises(EvaluationError) as caught:
            generators["adapter"].generate(["hello", "world"], DECODING)
    assert caught.value.code == code


@pytest.mark.slow
def test_api_key_comes_from_the_named_variable_and_never_leaks(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-very-secret-0123456789"
    monkeypatch.setenv("SOMMELIER_TEST_KEY", secret)
    with FaultServer(api_key=secret, faults=["echo-auth"]) as server:
        generators = load(server, suite_dir, api_key_env="SOMMELIER_TEST_KEY", max_retries=0)
        with pytest.raises(EvaluationError) as caught:
            generators["base"].generate(["hello"], DECODING)
        outputs = generators["base"].generate(["hello"], DECODING)
    assert outputs == [completion_text("smol", token_ids(suite_dir, "hello"))]
    assert all(h.get("Authorization") == f"Bearer {secret}" for _, h, _ in server.requests[1:])
    assert secret not in str(caught.value) and "***" in str(caught.value)
    for generator in generators.values():
        dumped = json.dumps([generator.model_identity, generator.adapter_identity])
        assert secret not in dumped and "SOMMELIER_TEST_KEY" not in dumped
        assert secret not in repr(generator)


@pytest.mark.slow
def test_a_wrong_key_is_not_retried_and_names_the_variable(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOMMELIER_TEST_KEY", "wrong")
    with FaultServer(api_key="right") as server, pytest.raises(EvaluationError) as caught:
        load(server, suite_dir, api_key_env="SOMMELIER_TEST_KEY")
    assert "HTTP 401" in str(caught.value) and "api_key_env" in str(caught.value)
    assert "wrong" not in str(caught.value).replace("wrong key", "")


@pytest.mark.slow
def test_an_unset_key_variable_is_named(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOMMELIER_NO_SUCH_KEY", raising=False)
    with FaultServer() as server, pytest.raises(SommelierEnvironmentError) as caught:
        load(server, suite_dir, api_key_env="SOMMELIER_NO_SUCH_KEY")
    assert caught.value.code == "SOM-OPENAI-KEY" and "SOMMELIER_NO_SUCH_KEY" in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["ftp://host/v1", "http://user:pw@127.0.0.1:8000/v1", "127.0.0.1:8000", "http://h/v1?x=1", ""],
)
def test_bad_base_urls_are_refused(url: str) -> None:
    with pytest.raises(InputError) as caught:
        openai_engine.check_base_url(url)
    assert caught.value.code == "SOM-OPENAI-URL"
    assert "pw" not in str(caught.value)


@pytest.mark.slow
def test_text_prompts_for_servers_that_refuse_token_ids(suite_dir: Path) -> None:
    with FaultServer(refuse_token_ids=True) as server:
        generators = load(server, suite_dir, concurrency=1)
        with pytest.raises(EvaluationError) as caught:
            generators["base"].generate(["hello"], DECODING)
        assert 'prompt_format = "text"' in str(caught.value)
        generators = load(server, suite_dir, prompt_format="text")
        outputs = generators["adapter"].generate(["hello", "world"], DECODING)
    assert outputs == [completion_text("smol-lora", p) for p in ["hello", "world"]]
    body = server.completions()[-1]
    assert isinstance(body["prompt"], str) and body["add_special_tokens"] is False
    assert generators["base"].model_identity["engine"]["prompt_input"] == "text"


@pytest.mark.slow
def test_identity_records_the_server_without_loading_anything(
    suite_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_tokenizer(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("identity must not load a tokenizer")

    monkeypatch.setattr(engines, "load_engine_tokenizer", no_tokenizer)
    with FaultServer(models=["smol-lora", "smol"], version="9.9") as server:
        generators = load(server, suite_dir)
    base, lora = generators["base"], generators["adapter"]
    assert base.model_identity == lora.model_identity
    engine = base.model_identity["engine"]
    assert engine == {
        "name": "openai",
        "server_version": "9.9",
        "served_models": ["smol", "smol-lora"],
        "base_served_name": "smol",
        "prompt_input": "token_ids",
    }
    assert base.adapter_identity is None
    assert lora.adapter_identity["served_name"] == "smol-lora"
    assert len(lora.adapter_identity["sha256"]) == 64
    dumped = json.dumps([base.model_identity, lora.adapter_identity])
    assert str(suite_dir) not in dumped and "127.0.0.1" not in dumped


@pytest.mark.slow
def test_a_server_without_version_endpoint_records_none(suite_dir: Path) -> None:
    with FaultServer(version=None) as server:
        generators = load(server, suite_dir)
    assert generators["base"].model_identity["engine"]["server_version"] is None


@pytest.mark.slow
@settings(
    max_examples=examples(20),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    faults=st.lists(st.sampled_from(["429", "500", "503", "drop"]), max_size=4),
    retries=st.integers(min_value=0, max_value=3),
)
def test_retry_outcome_follows_the_budget(suite_dir: Path, faults: list[str], retries: int) -> None:
    with FaultServer(faults=faults) as server:
        generators = load(server, suite_dir, max_retries=retries, concurrency=1)
        if len(faults) <= retries:
            outputs = generators["base"].generate(["hi"], DECODING)
            assert outputs == [completion_text("smol", token_ids(suite_dir, "hi"))]
        else:
            with pytest.raises(EvaluationError) as caught:
                generators["base"].generate(["hi"], DECODING)
            assert caught.value.code == "SOM-OPENAI-RETRIES"
    assert len(server.completions()) == min(len(faults), retries) + 1


@pytest.mark.slow
def test_a_gguf_base_is_tokenized_through_the_load_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")  # the tiny GGUF is written from a torch model
    from tiny import make_tiny_gguf
    from transformers import AutoTokenizer

    monkeypatch.setenv("SOMMELIER_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "suite").mkdir()
    make_tiny_gguf(tmp_path / "suite" / "tiny.gguf")
    with FaultServer(models=["smol"]) as server:
        config = engines.EngineConfig(name="openai", base_url=server.url)
        generators = openai_engine.load_generators(
            config,
            model_config("tiny.gguf"),
            {"base": arm_config("base")},
            suite_dir=tmp_path / "suite",
        )
        assert not (tmp_path / "cache").exists()  # identity needs no conversion
        outputs = generators["base"].generate(["hello"], DECODING)
    assert generators["base"].model_identity["format"] == "gguf"
    (folder,) = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    ids = tokenizer("hello", add_special_tokens=False)["input_ids"]
    assert outputs == [completion_text("smol", ids)]


@pytest.mark.slow
def test_the_servers_reasoning_channel_is_kept_apart(suite_dir: Path) -> None:
    """A server with a reasoning parser answers ``reasoning_content`` beside the text: the
    engine keeps it apart (the text is the content only, never the locally decoded token ids
    that would hold the reasoning too); reasoning with a null text is no content at all.
    Read under ``[parser] reasoning = "engine"`` by the core split (core.reasoning)."""
    from pytest_sommelier.core.reasoning import ENGINE, split_output

    faults = ["reasoning:think [1, 2] first", "reasoning-only:cut off [", "length"]
    with FaultServer(faults=faults, return_token_ids=True) as server:
        outputs = load(server, suite_dir, concurrency=1)["base"].generate_completions(
            ["a", "b", "c"], {**DECODING, "batch_size": 1, "max_new_tokens": 7}
        )
    ids = [token_ids(suite_dir, p) for p in "abc"]
    first, second, third = outputs
    assert (first.text, first.reasoning, first.has_content) == (
        completion_text("smol", ids[0]), "think [1, 2] first", True)
    assert (second.text, second.reasoning, second.has_content) == ("", "cut off [", False)
    assert second.finish_reason == "length"
    assert third.reasoning is None and third.has_content is True
    split = split_output(second.text, ENGINE, engine_reasoning=second.reasoning,
                         engine_content=second.has_content)
    assert split == ("cut off [", None)
    assert split_output(first.text, ENGINE, engine_reasoning=first.reasoning) == (
        "think [1, 2] first", first.text)
