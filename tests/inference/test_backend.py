"""The default transformers + peft backend on tiny local models (no network, CPU)."""

from __future__ import annotations

import importlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

import torch

from pytest_sommelier.errors import EvaluationError, InputError, SommelierEnvironmentError
from pytest_sommelier.inference import transformers_engine as backend

sys.path.insert(0, str(Path(__file__).parents[1]))
from tiny import make_tiny_adapter_dir, make_tiny_gguf, make_tiny_model_dir

torch.set_num_threads(1)

pytestmark = [  # real (tiny) models
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
]

PROMPTS = [
    "hello",
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    "שלום עולם, what is the weather in Tel Aviv?",
    "a" * 40,
    "x",
]
DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 8, "batch_size": 1}


from engine_configs import arm_config, model_config  # noqa: E402


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a tiny model ``m``, adapters ``ad`` and ``ad2``."""
    root = tmp_path_factory.mktemp("suite")
    make_tiny_model_dir(root / "m")
    make_tiny_adapter_dir(root / "m", root / "ad", seed=1)
    make_tiny_adapter_dir(root / "m", root / "ad2", seed=2)
    return root


@pytest.fixture(autouse=True)
def fresh_cache():
    """Every test starts without loaded bases."""
    backend._BASES.clear()
    yield
    backend._BASES.clear()


def two_arms(suite_dir: Path, adapter: str = "ad") -> dict[str, Any]:
    """A base arm and an adapter arm over the tiny model."""
    arms = {"base": arm_config("base"), "adapter": arm_config("adapter", adapter)}
    return backend.load_generators(model_config("m"), arms, suite_dir=suite_dir)


def plain_greedy(
    model_dir: Path, prompts: list[str], max_new_tokens: int, device: str = "cpu"
) -> list[str]:
    """Greedy outputs of the model without peft, one prompt at a time (the reference)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    model = model.to(device).eval()
    outputs = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            encoded = encoded.to(device)
            generated = model.generate(
                input_ids=encoded["input_ids"],  # the engine's inputs (no token_type_ids)
                attention_mask=encoded["attention_mask"],
                do_sample=False,
                max_new_tokens=max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
            )
            new = generated[0, encoded["input_ids"].shape[1] :]
            outputs.append(tokenizer.decode(new, skip_special_tokens=True))
    return outputs


def test_one_output_per_prompt_in_order(suite_dir: Path) -> None:
    generators = two_arms(suite_dir)
    for generator in generators.values():
        together = generator.generate(PROMPTS, {**DECODING, "batch_size": 3})
        one_by_one = [generator.generate([p], DECODING)[0] for p in PROMPTS]
        assert len(together) == len(PROMPTS)
        assert all(isinstance(text, str) for text in together)
        assert together == one_by_one
    reversed_outputs = generators["base"].generate(PROMPTS[::-1], DECODING)
    assert reversed_outputs == generators["base"].generate(PROMPTS, DECODING)[::-1]


def test_adapter_arm_differs_and_base_arm_equals_plain_model(suite_dir: Path) -> None:
    generators = two_arms(suite_dir)
    base = generators["base"].generate(PROMPTS, DECODING)
    adapted = generators["adapter"].generate(PROMPTS, DECODING)
    assert base != adapted
    device = generators["base"].device
    assert base == plain_greedy(suite_dir / "m", PROMPTS, DECODING["max_new_tokens"], device)
    # Switching back and forth keeps each arm's outputs.
    assert generators["base"].generate(PROMPTS, DECODING) == base
    assert generators["adapter"].generate(PROMPTS, DECODING) == adapted


@pytest.mark.parametrize("arm", ["base", "adapter"])
def test_batch_four_equals_batch_one_in_float32(suite_dir: Path, arm: str) -> None:
    generator = two_arms(suite_dir)[arm]
    single = generator.generate(PROMPTS, {**DECODING, "batch_size": 1})
    batched = generator.generate(PROMPTS, {**DECODING, "batch_size": 4})
    assert batched == single


def test_identities_equal_across_arms_and_free_of_machine_paths(
    suite_dir: Path, tmp_path: Path
) -> None:
    generators = two_arms(suite_dir)
    base, adapter = generators["base"], generators["adapter"]
    assert base.model_identity == adapter.model_identity
    assert base.adapter_identity is None
    assert adapter.adapter_identity is not None
    assert adapter.adapter_identity["name"] == "adapter"
    for identity in (base.model_identity, adapter.adapter_identity):
        text = json.dumps(identity, sort_keys=True)
        assert json.loads(text) == identity
        assert str(suite_dir) not in text
        assert str(Path.home()) not in text
    identity = base.model_identity
    assert identity["dtype"] == "float32"
    assert identity["format"] == "directory"
    assert len(identity["sha256"]) == 64
    # The same files elsewhere give the same identities: nothing depends on the location.
    moved = tmp_path / "elsewhere"
    shutil.copytree(suite_dir, moved)
    backend._BASES.clear()
    again = two_arms(moved)
    assert again["base"].model_identity == identity
    assert again["adapter"].adapter_identity == adapter.adapter_identity


def test_different_adapter_gives_different_identity(suite_dir: Path) -> None:
    first = two_arms(suite_dir, "ad")["adapter"]
    second = two_arms(suite_dir, "ad2")["adapter"]
    assert first.adapter_identity != second.adapter_identity
    assert first.model_identity == second.model_identity
    # Both stay usable on the one shared base, each with its own weights.
    assert first.base is second.base
    assert first.adapter_name != second.adapter_name
    assert first.generate(PROMPTS, DECODING) != second.generate(PROMPTS, DECODING)


def test_base_loaded_once_per_process(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoModelForCausalLM

    calls: list[str] = []
    original = AutoModelForCausalLM.from_pretrained

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(str(args[0]))
        return original(*args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", counting)
    first = two_arms(suite_dir)
    second = backend.load_generators(model_config("m"), {"b": arm_config("b")}, suite_dir=suite_dir)
    assert calls == []  # identities before load: nothing is loaded until a generation
    assert first["base"].model_identity["engine"]["name"] == "transformers"
    assert first["base"].base is second["b"].base
    first["adapter"].generate(PROMPTS[:1], DECODING)
    assert len(calls) == 1


def test_pickle_adapter_refused(suite_dir: Path, tmp_path: Path) -> None:
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    shutil.copy(suite_dir / "ad" / "adapter_config.json", pickled)
    (pickled / "adapter_model.bin").write_bytes(b"not loaded")
    arms = {"adapter": arm_config("adapter", str(pickled))}
    with pytest.raises(InputError) as caught:
        backend.load_generators(model_config("m"), arms, suite_dir=suite_dir)
    assert caught.value.code == "SOM-BACKEND-ADAPTER-PICKLE"
    assert "pickle" in str(caught.value)
    assert caught.value.where == "arms.adapter.adapter"


def test_pickle_base_refused(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(InputError) as caught:
        backend.load_generators(
            model_config("old"), {"base": arm_config("base")}, suite_dir=tmp_path
        )
    assert caught.value.code == "SOM-BACKEND-NO-SAFETENSORS"
    assert "pytorch_model.bin" in str(caught.value)


@pytest.mark.parametrize("size", [1, 3])
def test_the_model_s_own_generation_config_changes_nothing(suite_dir: Path, size: int) -> None:
    """A model whose generation_config.json sets a repetition penalty and no-repeat n-grams is
    still decoded by plain greedy (transformers 5 fills a passed config's unset fields from the
    model's own: the engine shields generate from it; the row-wise loop applies no processor),
    and the model's own settings are left as they were."""
    from transformers import GenerationConfig

    decoding = {**DECODING, "max_new_tokens": 12, "batch_size": size}
    generator = two_arms(suite_dir)["base"]
    clean = generator.generate(PROMPTS, decoding)
    model = generator.base.model
    inner = model.get_base_model() if generator.base.is_peft else model
    original = inner.generation_config
    noisy = GenerationConfig(**{**original.to_dict(), "repetition_penalty": 3.0})
    noisy.no_repeat_ngram_size = 1
    inner.generation_config = noisy
    try:
        assert generator.generate(PROMPTS, decoding) == clean
        assert inner.generation_config is noisy  # put back
    finally:
        inner.generation_config = original


def test_max_new_tokens_respected(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generator = two_arms(suite_dir)["adapter"]
    tokenizer = generator.base.tokenizer
    widths: list[int] = []
    original = tokenizer.batch_decode

    def spying(tokens: Any, **kwargs: Any) -> Any:
        widths.append(max(len(row) for row in tokens))  # lists of ids (a tensor at batch 1)
        return original(tokens, **kwargs)

    monkeypatch.setattr(tokenizer, "batch_decode", spying)
    for limit, size in ((1, 1), (5, 1), (1, 3), (5, 3)):  # batch 3: the row-wise loop
        widths.clear()
        decoding = {**DECODING, "max_new_tokens": limit, "batch_size": size}
        outputs = generator.generate(PROMPTS, decoding)
        assert len(outputs) == len(PROMPTS)
        assert widths and max(widths) == limit  # some prompt runs to the limit, none past it
    assert all(
        len(text) <= 1 for text in generator.generate(PROMPTS, {**DECODING, "max_new_tokens": 1})
    )


def test_empty_prompt_list(suite_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generator = two_arms(suite_dir)["base"]
    monkeypatch.setattr(generator.base.model, "generate", None)  # any call would fail
    assert generator.generate([], DECODING) == []


@pytest.mark.parametrize(
    "change",
    [
        {"do_sample": True},
        {"temperature": 0.7},
        {"max_new_tokens": 0},
        {"batch_size": 0},
        {"max_new_tokens": True},
    ],
)
def test_non_greedy_decoding_refused(suite_dir: Path, change: dict[str, Any]) -> None:
    generator = two_arms(suite_dir)["base"]
    with pytest.raises(EvaluationError) as caught:
        generator.generate(["hi"], {**DECODING, **change})
    assert caught.value.code == "SOM-BACKEND-DECODING"
    assert next(iter(change)) in str(caught.value)


def test_empty_prompt_refused(suite_dir: Path) -> None:
    generator = two_arms(suite_dir)["base"]
    with pytest.raises(EvaluationError) as caught:
        generator.generate(["hello", ""], {**DECODING, "batch_size": 2})
    assert caught.value.code == "SOM-BACKEND-EMPTY-PROMPT"
    assert "index 1" in str(caught.value)


def test_prompts_must_be_a_list_of_strings(suite_dir: Path) -> None:
    generator = two_arms(suite_dir)["base"]
    with pytest.raises(EvaluationError):
        generator.generate("hello", DECODING)  # type: ignore[arg-type]


def test_hub_id_needs_revision(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        backend.load_generators(
            model_config("org/model"), {"base": arm_config("base")}, suite_dir=tmp_path
        )
    assert caught.value.code == "SOM-SUITE-REVISION-MISSING"


def test_hub_adapter_needs_revision(suite_dir: Path) -> None:
    arms = {"adapter": arm_config("adapter", "org/adapter")}
    with pytest.raises(InputError) as caught:
        backend.load_generators(model_config("m"), arms, suite_dir=suite_dir)
    assert caught.value.code == "SOM-SUITE-REVISION-MISSING"


def test_unknown_dtype_refused(suite_dir: Path) -> None:
    with pytest.raises(InputError) as caught:
        backend.load_generators(
            model_config("m", dtype="float8"), {"b": arm_config("b")}, suite_dir=suite_dir
        )
    assert caught.value.where == "model.dtype"


def test_dtype_recorded_in_identity(suite_dir: Path) -> None:
    generator = backend.load_generators(
        model_config("m", dtype="bfloat16"), {"b": arm_config("b")}, suite_dir=suite_dir
    )["b"]
    assert generator.model_identity["dtype"] == "bfloat16"
    assert next(generator.base.model.parameters()).dtype == torch.bfloat16
    assert len(generator.generate(["hi", "there"], DECODING)) == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_device_without_cuda_refused(suite_dir: Path) -> None:
    with pytest.raises(SommelierEnvironmentError) as caught:
        backend.load_generators(
            model_config("m", device="cuda"), {"b": arm_config("b")}, suite_dir=suite_dir
        )
    assert caught.value.where == "model.device"


def test_device_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.choose_device("cpu", 3) == "cpu"
    with pytest.raises(InputError):
        backend.choose_device("teapot", 0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    assert backend.choose_device(None, 0) == "cuda:0"
    assert backend.choose_device(None, 4) == "cuda:1"
    assert backend.device_info("cuda:1") == {"device": "cuda", "device_count": 3}
    assert backend.device_info("cpu") == {"device": "cpu", "device_count": 1}


def test_runtime_versions() -> None:
    import peft
    import transformers

    versions = backend.runtime_versions()
    assert versions == {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
    }


def test_gguf_base_through_pkg_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .gguf inside an installed package: identity is the reference and the file digest."""
    package = tmp_path / "site" / "tiny_sommelier_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    make_tiny_gguf(package / "tiny.gguf")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    monkeypatch.setenv("SOMMELIER_CACHE_DIR", str(tmp_path / "cache"))
    ref = "pkg:tiny_sommelier_pkg/tiny.gguf"
    arms = {"base": arm_config("base")}
    generator = backend.load_generators(model_config(ref), arms, suite_dir=tmp_path)["base"]
    identity = generator.model_identity
    assert identity["base"] == ref
    assert identity["format"] == "gguf"
    assert identity["tokenizer_id"] == ref
    assert identity["tokenizer_revision"] == f"sha256:{identity['sha256']}"
    assert str(tmp_path) not in json.dumps(identity)
    assert generator.base.load_status == "miss"
    first = generator.generate(PROMPTS, DECODING)
    assert len(first) == len(PROMPTS)
    backend._BASES.clear()
    again = backend.load_generators(model_config(ref), arms, suite_dir=tmp_path)["base"]
    assert again.base.load_status == "hit"
    assert again.model_identity == identity
    assert again.generate(PROMPTS, DECODING) == first
