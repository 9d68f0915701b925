"""The GGUF -> safetensors load cache: a real tiny GGUF, and the mechanics with fake converters."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

import torch

from pytest_sommelier.errors import SommelierEnvironmentError
from pytest_sommelier.inference import modelcache

sys.path.insert(0, str(Path(__file__).parents[1]))
from tiny import make_tiny_gguf, make_tiny_model_dir

torch.set_num_threads(1)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning")]

PROMPTS = ["hello", '{"name": "f", "arguments": {}}', "שלום", "a b c d e f"]
SHA = "ab" * 32


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny float32 Llama GGUF file."""
    return make_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny safetensors model folder, the output of the fake converters."""
    return make_tiny_model_dir(tmp_path_factory.mktemp("dir") / "m")


def greedy(model: Any, tokenizer: Any, prompts: list[str]) -> list[list[int]]:
    """Greedy token ids (8 new tokens) per prompt."""
    outputs = []
    with torch.inference_mode():
        for prompt in prompts:
            encoded = tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            generated = model.generate(
                **encoded, do_sample=False, max_new_tokens=8, pad_token_id=tokenizer.pad_token_id
            )
            outputs.append(generated[0, encoded["input_ids"].shape[1] :].tolist())
    return outputs


class CountingConverter:
    """A converter that loads a safetensors folder and counts its calls."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.calls = 0

    def __call__(self, gguf_path: Path) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.calls += 1
        tokenizer = AutoTokenizer.from_pretrained(self.folder)
        model = AutoModelForCausalLM.from_pretrained(self.folder, use_safetensors=True)
        return model, tokenizer


def leftovers(root: Path) -> list[str]:
    """Hidden staging or stale folders left in the cache root."""
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


def test_real_gguf_miss_then_hit_token_identical(tiny_gguf: Path, tmp_path: Path) -> None:
    digest = "cd" * 32
    calls: list[Path] = []

    def converter(path: Path) -> tuple[Any, Any]:
        calls.append(path)
        return modelcache.dequantize_gguf(path)

    first = modelcache.load_gguf(
        tiny_gguf, digest, torch.float32, use_cache=True, root=tmp_path, converter=converter
    )
    second = modelcache.load_gguf(
        tiny_gguf, digest, torch.float32, use_cache=True, root=tmp_path, converter=converter
    )
    direct = modelcache.load_gguf(tiny_gguf, digest, torch.float32, use_cache=False)
    assert (first.status, second.status, direct.status) == ("miss", "hit", "disabled")
    assert len(calls) == 1
    folder = tmp_path / digest
    assert first.folder == second.folder == folder
    assert (folder / "model.safetensors").is_file()
    assert modelcache.is_valid_cache(folder, digest)
    assert leftovers(tmp_path) == []
    reference = greedy(direct.model, direct.tokenizer, PROMPTS)
    assert greedy(first.model, first.tokenizer, PROMPTS) == reference
    assert greedy(second.model, second.tokenizer, PROMPTS) == reference
    for prompt in PROMPTS:
        assert second.tokenizer(prompt)["input_ids"] == direct.tokenizer(prompt)["input_ids"]
    for name, tensor in direct.model.state_dict().items():
        assert torch.equal(tensor, second.model.state_dict()[name]), name


def test_cache_root_and_switch_follow_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(modelcache.CACHE_DIR_ENV, str(tmp_path / "here"))
    assert modelcache.cache_root() == tmp_path / "here"
    monkeypatch.delenv(modelcache.CACHE_DIR_ENV)
    assert modelcache.cache_root() == Path.home() / ".cache" / "pytest-sommelier" / "models"
    for value, enabled in (("0", False), ("off", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(modelcache.CACHE_SWITCH_ENV, value)
        assert modelcache.cache_enabled() is enabled


def test_env_switch_bypasses_cache(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(modelcache.CACHE_SWITCH_ENV, "0")
    converter = CountingConverter(tiny_dir)
    for _ in range(2):
        loaded = modelcache.load_gguf(
            tmp_path / "x.gguf", SHA, torch.float32, root=tmp_path / "c", converter=converter
        )
        assert loaded.status == "disabled"
    assert converter.calls == 2
    assert not (tmp_path / "c").exists()


def test_stale_marker_rebuilds(tiny_dir: Path, tmp_path: Path) -> None:
    converter = CountingConverter(tiny_dir)
    load = lambda: modelcache.load_gguf(  # noqa: E731
        tmp_path / "x.gguf", SHA, torch.float32, use_cache=True, root=tmp_path, converter=converter
    )
    assert load().status == "miss"
    marker = tmp_path / SHA / modelcache.MARKER_NAME
    recorded = json.loads(marker.read_text())
    marker.write_text(json.dumps({**recorded, "transformers": "0.0.1"}))
    assert not modelcache.is_valid_cache(tmp_path / SHA, SHA)
    assert load().status == "miss"
    assert load().status == "hit"
    assert converter.calls == 2
    assert modelcache.is_valid_cache(tmp_path / SHA, SHA)
    assert leftovers(tmp_path) == []


def test_marker_names_the_digest(tiny_dir: Path, tmp_path: Path) -> None:
    converter = CountingConverter(tiny_dir)
    modelcache.load_gguf(
        tmp_path / "x.gguf", SHA, torch.float32, use_cache=True, root=tmp_path, converter=converter
    )
    assert modelcache.is_valid_cache(tmp_path / SHA, SHA)
    assert not modelcache.is_valid_cache(tmp_path / SHA, "ef" * 32)


def test_failed_conversion_leaves_nothing(tmp_path: Path) -> None:
    def broken(path: Path) -> tuple[Any, Any]:
        raise ValueError("truncated file")

    with pytest.raises(SommelierEnvironmentError) as caught:
        modelcache.load_gguf(
            tmp_path / "x.gguf", SHA, torch.float32, use_cache=True, root=tmp_path, converter=broken
        )
    assert caught.value.code == "SOM-BACKEND-GGUF-LOAD"
    assert "x.gguf" in str(caught.value)
    assert [p.name for p in tmp_path.iterdir() if p.suffix != ".lock"] == []


def test_rival_process_entry_is_kept(tiny_dir: Path, tmp_path: Path) -> None:
    """Another process publishes the same entry while we convert: ours is dropped, no error."""
    converter = CountingConverter(tiny_dir)
    rival_root = tmp_path / "rival"
    modelcache.load_gguf(
        tmp_path / "x.gguf",
        SHA,
        torch.float32,
        use_cache=True,
        root=rival_root,
        converter=converter,
    )
    root = tmp_path / "root"

    def racing(path: Path) -> tuple[Any, Any]:
        (rival_root / SHA).rename(root / SHA)  # the rival wins the race during our conversion
        return converter(path)

    loaded = modelcache.load_gguf(
        tmp_path / "x.gguf", SHA, torch.float32, use_cache=True, root=root, converter=racing
    )
    assert loaded.status == "miss"
    assert loaded.folder == root / SHA
    assert modelcache.is_valid_cache(root / SHA, SHA)
    assert leftovers(root) == []


def test_unwritable_cache_falls_back_to_direct_load(tiny_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    converter = CountingConverter(tiny_dir)
    with pytest.warns(UserWarning, match="could not write the model cache"):
        loaded = modelcache.load_gguf(
            tmp_path / "x.gguf",
            SHA,
            torch.float32,
            use_cache=True,
            root=blocker,
            converter=converter,
        )
    assert loaded.status == "disabled"
    assert loaded.folder is None
    assert converter.calls == 1


def test_waiting_process_reads_the_entry_built_meanwhile(tiny_dir: Path, tmp_path: Path) -> None:
    """A process that saw no entry, then got the lock after a rival built it, converts nothing."""
    builder = CountingConverter(tiny_dir)
    waiter = CountingConverter(tiny_dir)
    original = modelcache._build_lock

    @contextlib.contextmanager
    def rival_builds_first(root: Path, name: str) -> Iterator[None]:
        modelcache.build_cache_entry(tmp_path / "x.gguf", SHA, root / SHA, builder)
        with original(root, name):
            yield

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(modelcache, "_build_lock", rival_builds_first)
        loaded = modelcache.load_gguf(
            tmp_path / "x.gguf",
            SHA,
            torch.float32,
            use_cache=True,
            root=tmp_path,
            converter=waiter,
        )
    assert (builder.calls, waiter.calls) == (1, 0)
    assert loaded.status == "hit"
