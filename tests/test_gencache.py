"""The generation cache: unit tests on ``GenerationCache`` and pytester sessions through the plugin.

Unit tests use small fake generators; the plugin tests reuse the scripted fake backend of
``plugin_helpers`` (it logs every ``generate`` call in ``calls.jsonl``) with
``--sommelier-cache-dir`` (pytester sessions run with ``-p no:cacheprovider``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_sommelier import gencache
from pytest_sommelier.digests import sha256_text
from pytest_sommelier.errors import InvariantError
from pytest_sommelier.gencache import CACHE_SCHEMA, GenerationCache, GenerationCacheWarning

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 64, "batch_size": 1}
PROMPT = sha256_text("<user>weather in Paris?</user>\n")
OUTPUT = 'Sure: {"name": "get_weather", "arguments": {"city": "Paris"}}\n'


class FakeGenerator:
    """A generator with the attributes the cache reads (no ``generate`` needed here)."""

    def __init__(self, **overrides: Any) -> None:
        self.model_identity = {"base": "org/model", "dtype": "float32", "tokenizer_id": "org/tok"}
        self.adapter_identity: dict | None = {"sha256": "a" * 64}
        self.device_kind = "cpu"
        for name, value in overrides.items():
            setattr(self, name, value)

    def device_info(self) -> dict[str, Any]:
        return {"device": self.device_kind, "device_count": 1}


class OtherGenerator(FakeGenerator):
    """Same attributes, another class: must not share entries with ``FakeGenerator``."""


@pytest.fixture
def cache(tmp_path: Path) -> GenerationCache:
    return GenerationCache(tmp_path / "cache")


def entry_files(cache: GenerationCache) -> list[Path]:
    return sorted(p for p in cache.folder.rglob("*") if p.is_file())


# -- hits and layout ---------------------------------------------------------------------------


def test_miss_then_hit_after_put(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    assert cache.get(generator, PROMPT, DECODING) is None
    cache.put(generator, PROMPT, DECODING, OUTPUT)
    assert cache.get(generator, PROMPT, DECODING) == OUTPUT
    assert (cache.stats.hits, cache.stats.misses, cache.stats.writes) == (1, 1, 1)


def test_a_new_instance_on_the_same_folder_hits(cache: GenerationCache) -> None:
    cache.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)
    assert GenerationCache(cache.folder).get(FakeGenerator(), PROMPT, DECODING) == OUTPUT


def test_entry_is_one_sharded_json_file_with_key_fields(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    cache.put(generator, PROMPT, DECODING, OUTPUT)
    key = cache.key(generator, PROMPT, DECODING)
    assert entry_files(cache) == [cache.folder / key[:2] / f"{key}.json"]
    entry = json.loads(entry_files(cache)[0].read_text(encoding="utf-8"))
    assert entry["schema_version"] == CACHE_SCHEMA
    assert entry["output"] == OUTPUT
    fields = entry["key_fields"]
    assert fields["prompt_sha256"] == PROMPT
    assert fields["decoding"] == DECODING
    assert fields["model_identity"] == generator.model_identity
    assert fields["adapter_identity"] == generator.adapter_identity
    assert fields["device"] == {"kind": "cpu"}
    assert fields["generator_class"].endswith("test_gencache.FakeGenerator")
    assert set(fields["libraries"]) == {"torch", "transformers", "peft"}


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=st.text())
def test_get_returns_exactly_the_stored_str(cache: GenerationCache, output: str) -> None:
    generator = FakeGenerator()
    prompt = sha256_text(output)  # a fresh key per example
    cache.put(generator, prompt, DECODING, output)
    got = cache.get(generator, prompt, DECODING)
    assert got == output and type(got) is str


def test_overwrite_replaces_the_entry(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    cache.put(generator, PROMPT, DECODING, "first")
    cache.put(generator, PROMPT, DECODING, "second")
    assert cache.get(generator, PROMPT, DECODING) == "second"
    assert len(entry_files(cache)) == 1


# -- every key field changes the key -----------------------------------------------------------


def _changed(field: str) -> tuple[Any, str, dict[str, Any]]:
    """(generator, prompt, decoding) with exactly one key field changed."""
    generator, prompt, decoding = FakeGenerator(), PROMPT, dict(DECODING)
    if field == "model":
        generator.model_identity = {**generator.model_identity, "base": "org/other"}
    elif field == "dtype":
        generator.model_identity = {**generator.model_identity, "dtype": "bfloat16"}
    elif field == "adapter":
        generator.adapter_identity = {"sha256": "b" * 64}
    elif field == "no-adapter":
        generator.adapter_identity = None
    elif field == "prompt":
        prompt = sha256_text("another prompt")
    elif field == "max_new_tokens":
        decoding["max_new_tokens"] = 65
    elif field == "batch_size":
        decoding["batch_size"] = 4
    elif field == "extra-decoding-key":
        decoding["repetition_penalty"] = 1.0
    elif field == "device":
        generator.device_kind = "cuda-like"
    elif field == "class":
        generator = OtherGenerator()
    elif field == "cache_identity":
        generator.cache_identity = {"engine": "vllm-0.6"}
    return generator, prompt, decoding


FIELDS = [
    "model",
    "dtype",
    "adapter",
    "no-adapter",
    "prompt",
    "max_new_tokens",
    "batch_size",
    "extra-decoding-key",
    "device",
    "class",
    "cache_identity",
]


@pytest.mark.parametrize("field", FIELDS)
def test_any_key_field_change_misses(cache: GenerationCache, field: str) -> None:
    cache.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)
    generator, prompt, decoding = _changed(field)
    assert cache.get(generator, prompt, decoding) is None
    # and the original entry is still there and still hits
    assert cache.get(FakeGenerator(), PROMPT, DECODING) == OUTPUT


@pytest.mark.parametrize("library", ["torch", "transformers", "peft"])
def test_a_library_version_change_misses(tmp_path: Path, library: str) -> None:
    first = GenerationCache(tmp_path)
    first.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)
    upgraded = GenerationCache(tmp_path)
    upgraded._versions = {**first.versions(), library: "99.0"}
    assert upgraded.get(FakeGenerator(), PROMPT, DECODING) is None


def test_key_ignores_decoding_key_order(cache: GenerationCache) -> None:
    cache.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)
    reordered = dict(reversed(list(DECODING.items())))
    assert cache.get(FakeGenerator(), PROMPT, reordered) == OUTPUT


def test_batch_prompts_join_the_key_only_for_batches(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    batch4 = {**DECODING, "batch_size": 4}
    mates = [PROMPT, sha256_text("b"), sha256_text("c")]
    cache.put(generator, PROMPT, batch4, OUTPUT, batch_prompts=mates)
    assert cache.get(generator, PROMPT, batch4, batch_prompts=mates) == OUTPUT
    assert cache.get(generator, PROMPT, batch4, batch_prompts=mates[:2]) is None
    assert cache.get(generator, PROMPT, batch4) is None
    cache.put(generator, PROMPT, DECODING, OUTPUT)  # batch_size 1: the mates are irrelevant
    assert cache.get(generator, PROMPT, DECODING, batch_prompts=["x"]) == OUTPUT


def test_cuda_device_key_names_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gencache, "_cuda_name", lambda device: "NVIDIA H200")
    monkeypatch.setitem(sys.modules, "torch", sys.modules.get("torch", object()))
    generator = FakeGenerator(device_kind="cuda")
    assert gencache.device_fields(generator) == {"kind": "cuda", "name": "NVIDIA H200"}


def test_device_kind_from_a_device_attribute_or_unknown() -> None:
    class WithDevice:
        device = "cpu"

    assert gencache.device_fields(WithDevice()) == {"kind": "cpu"}
    assert gencache.device_fields(object()) == {"kind": "unknown"}


# -- corrupt, partial and tampered entries -----------------------------------------------------


def _entry(cache: GenerationCache) -> Path:
    generator = FakeGenerator()
    cache.put(generator, PROMPT, DECODING, OUTPUT)
    return cache.entry_path(cache.key(generator, PROMPT, DECODING))


def _tamper_fields(text: str) -> str:
    entry = json.loads(text)
    entry["key_fields"]["prompt_sha256"] = "0" * 64
    return json.dumps(entry)


def _set_output(value: Any) -> Any:
    def edit(text: str) -> str:
        entry = json.loads(text)
        entry["output"] = value
        return json.dumps(entry)

    return edit


CORRUPTIONS = {
    "truncated": lambda text: text[: len(text) // 2],
    "empty": lambda text: "",
    "not-json": lambda text: "not json at all",
    "json-list": lambda text: "[1, 2]",
    "no-output": lambda text: json.dumps(
        {k: v for k, v in json.loads(text).items() if k != "output"}
    ),
    "output-null": _set_output(None),
    "output-list": _set_output(["a"]),
    "tampered-key-fields": _tamper_fields,
    "old-schema": lambda text: text.replace(CACHE_SCHEMA, "sommelier.generation_cache.v0"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_corrupt_entry_is_a_miss_and_is_removed(cache: GenerationCache, corruption: str) -> None:
    path = _entry(cache)
    path.write_text(CORRUPTIONS[corruption](path.read_text(encoding="utf-8")), encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a corrupt entry is not even worth a warning
        assert cache.get(FakeGenerator(), PROMPT, DECODING) is None
    assert not path.exists()
    assert cache.stats.removed == 1
    cache.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)  # and it heals on the next put
    assert cache.get(FakeGenerator(), PROMPT, DECODING) == OUTPUT


def test_undecodable_bytes_are_a_miss(cache: GenerationCache) -> None:
    path = _entry(cache)
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert cache.get(FakeGenerator(), PROMPT, DECODING) is None
    assert not path.exists()


def test_entry_stored_under_another_key_is_a_miss(cache: GenerationCache) -> None:
    """A hash collision (or a copied file): the stored key fields do not match the live ones."""
    path = _entry(cache)
    other = FakeGenerator(adapter_identity=None)
    other_path = cache.entry_path(cache.key(other, PROMPT, DECODING))
    other_path.parent.mkdir(parents=True, exist_ok=True)
    other_path.write_bytes(path.read_bytes())
    assert cache.get(other, PROMPT, DECODING) is None
    assert not other_path.exists()
    assert cache.get(FakeGenerator(), PROMPT, DECODING) == OUTPUT


def test_partial_temp_file_is_ignored(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    key = cache.key(generator, PROMPT, DECODING)
    final = cache.entry_path(key)
    final.parent.mkdir(parents=True)
    partial = final.parent / f".{key[:16]}.abc123.tmp"
    partial.write_text(
        '{"schema_version": "sommelier.generation_cache.v1", "output": "half', "utf-8"
    )
    assert cache.get(generator, PROMPT, DECODING) is None
    cache.put(generator, PROMPT, DECODING, OUTPUT)
    assert cache.get(generator, PROMPT, DECODING) == OUTPUT
    assert partial.exists()  # never read, never taken for an entry


# -- failing writes ----------------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["fsync", "replace", "write"])
def test_a_failing_write_leaves_no_entry(
    cache: GenerationCache, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    if failing == "write":
        monkeypatch.setattr(gencache.os, "fdopen", lambda fd, *a, **k: _FailingFile(fd))
    else:
        monkeypatch.setattr(gencache.os, failing, boom)
    with pytest.warns(GenerationCacheWarning, match="No space left"):
        cache.put(FakeGenerator(), PROMPT, DECODING, OUTPUT)
    monkeypatch.undo()
    assert entry_files(cache) == []  # no entry and no temporary file left behind
    assert cache.stats.write_errors == 1 and cache.stats.writes == 0
    assert cache.get(FakeGenerator(), PROMPT, DECODING) is None


class _FailingFile:
    """A file object whose write fails halfway (after writing part of the text)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> _FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)

    def write(self, text: str) -> None:
        os.write(self.fd, text[: len(text) // 2].encode())
        raise OSError(28, "No space left on device")


def test_a_failing_overwrite_keeps_the_previous_entry(
    cache: GenerationCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.put(FakeGenerator(), PROMPT, DECODING, "old")
    monkeypatch.setattr(gencache.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("x")))
    with pytest.warns(GenerationCacheWarning):
        cache.put(FakeGenerator(), PROMPT, DECODING, "new")
    monkeypatch.undo()
    assert cache.get(FakeGenerator(), PROMPT, DECODING) == "old"
    assert len(entry_files(cache)) == 1


def test_unwritable_folder_warns_once_and_never_raises(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    cache = GenerationCache(blocker)
    with pytest.warns(GenerationCacheWarning) as caught:
        for index in range(3):
            cache.put(FakeGenerator(), sha256_text(str(index)), DECODING, OUTPUT)
    assert len(caught) == 1
    assert cache.stats.write_errors == 3
    assert cache.get(FakeGenerator(), PROMPT, DECODING) is None


def test_non_str_output_is_refused(cache: GenerationCache) -> None:
    for value in (None, b"bytes", ["a"], 3):
        with pytest.raises(InvariantError, match="SOM-CACHE-NONSTR"):
            cache.put(FakeGenerator(), PROMPT, DECODING, value)  # type: ignore[arg-type]
    assert entry_files(cache) == []


def test_non_json_identity_is_uncacheable_not_an_error(cache: GenerationCache) -> None:
    generator = FakeGenerator(model_identity={"path": Path("/models/x")})
    with pytest.warns(GenerationCacheWarning, match="not JSON-safe"):
        cache.put(generator, PROMPT, DECODING, OUTPUT)
    assert cache.get(generator, PROMPT, DECODING) is None
    assert entry_files(cache) == []


def test_versions_without_importing_the_libraries() -> None:
    """With a fake backend, keying must not pay for importing torch/transformers/peft."""
    code = (
        "import sys; from pytest_sommelier.gencache import library_versions; "
        "v = library_versions(); "
        "assert not {'torch', 'transformers', 'peft'} & set(sys.modules), sorted(sys.modules); "
        "assert set(v) == {'torch', 'transformers', 'peft'} and all(v.values()), v; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_versions_match_the_backend_once_imported() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("peft")
    from pytest_sommelier.backend import runtime_versions

    assert gencache.library_versions() == runtime_versions()
