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
from property_budget import examples

from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.data import atomic
from pytest_sommelier.errors import InvariantError
from pytest_sommelier.inference import gencache
from pytest_sommelier.inference.gencache import (
    CACHE_SCHEMA,
    GenerationCache,
    GenerationCacheWarning,
)

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
    key = cache_key(cache, generator, PROMPT, DECODING)
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


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    return cache.entry_path(cache_key(cache, generator, PROMPT, DECODING))


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
    other_path = cache.entry_path(cache_key(cache, other, PROMPT, DECODING))
    other_path.parent.mkdir(parents=True, exist_ok=True)
    other_path.write_bytes(path.read_bytes())
    assert cache.get(other, PROMPT, DECODING) is None
    assert not other_path.exists()
    assert cache.get(FakeGenerator(), PROMPT, DECODING) == OUTPUT


def test_partial_temp_file_is_ignored(cache: GenerationCache) -> None:
    generator = FakeGenerator()
    key = cache_key(cache, generator, PROMPT, DECODING)
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
        monkeypatch.setattr(atomic.os, "fdopen", lambda fd, *a, **k: _FailingFile(fd))
    else:
        monkeypatch.setattr(atomic.os, failing, boom)
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
    monkeypatch.setattr(atomic.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("x")))
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


@pytest.mark.slow
def test_versions_without_importing_the_libraries() -> None:
    """With a fake backend, keying must not pay for importing torch/transformers/peft."""
    code = (
        "import sys; from pytest_sommelier.inference.gencache import library_versions; "
        "v = library_versions(); "
        "assert not {'torch', 'transformers', 'peft'} & set(sys.modules), sorted(sys.modules); "
        "assert set(v) == {'torch', 'transformers', 'peft'} and all(v.values()), v; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_versions_are_the_libraries_own_once_imported() -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")

    assert gencache.library_versions() == {
        "torch": str(torch.__version__),
        "transformers": str(transformers.__version__),
        "peft": str(peft.__version__),
    }


# -- through the plugin (pytester sessions with the scripted fake backend) ---------------------

from plugin_helpers import (  # noqa: E402
    GOLD,
    cache_key,
    call_text,
    read_json,
    read_jsonl,
    write_scripted_suite,
)

SCRIPT = {
    "adapter": {
        "en-0": call_text(GOLD["en-0"]),
        "en-1": call_text(GOLD["en-1"], prose="Sure! "),
        "he-1": '{"name": "search", "arguments": {"q": "tea"',
        "he-3": call_text(GOLD["he-3"]),
    },
    "base": {"en-0": call_text(GOLD["en-0"])},
}
GATES = [{"name": "adapter-valid", "arm": "adapter", "metric": "valid_json_rate", "min": 0.4}]
ARMS = ("base", "adapter")
SLICES = ("en", "he")
EXAMPLES = len(GOLD)


def run_cached(pytester: pytest.Pytester, out: str, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-cache-dir", "cachedir", "--sommelier-out", out, *args
    )


def generate_calls(pytester: pytest.Pytester) -> list[dict]:
    """The fake's generate calls since the last reset (and reset the log)."""
    log = pytester.path / "suite" / "calls.jsonl"
    if not log.exists():
        return []
    calls = read_jsonl(log)
    log.unlink()
    return calls


def generations(pytester: pytest.Pytester, out: str, arm: str) -> list[dict]:
    folder = pytester.path / out / "eval" / arm
    return [g for lang in SLICES for g in read_jsonl(folder / f"generations.{lang}.jsonl")]


def without_run_id(path: Path) -> dict:
    data = read_json(path)
    data.pop("run_id", None)
    data.pop("efficiency", None)  # derived from timings
    return data


def test_second_identical_run_regenerates_nothing(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    first = run_cached(pytester, "out1")
    assert first.ret == 0
    cold = generate_calls(pytester)
    # per arm: one untimed warm-up + one call per example (batch_size 1)
    assert sum(c["n"] for c in cold) == 2 * (EXAMPLES + 1)
    assert len(list((pytester.path / "cachedir").rglob("*.json"))) == 2 * EXAMPLES

    second = run_cached(pytester, "out2")
    assert second.ret == 0
    assert generate_calls(pytester) == []  # no generation, no warm-up
    assert second.parseoutcomes() == first.parseoutcomes()
    for arm in ARMS:
        cold_records, warm_records = (
            generations(pytester, "out1", arm),
            generations(pytester, "out2", arm),
        )
        assert [r["cached"] for r in cold_records] == [False] * EXAMPLES
        assert [r["cached"] for r in warm_records] == [True] * EXAMPLES
        assert [{**r, "cached": None} for r in warm_records] == [
            {**r, "cached": None} for r in cold_records
        ]
        telemetry = read_json(pytester.path / "out2" / "eval" / arm / "inference_telemetry.json")
        assert telemetry["cached_examples"] == EXAMPLES
        assert telemetry["timed_examples"] == 0
        assert telemetry["total_seconds"] == 0
        assert telemetry["seconds_per_example"] is None
        for lang in SLICES:
            block = telemetry["slices"][lang]
            assert block["seconds"] == 0 and block["cached_examples"] == block["examples"] > 0
        cold_telemetry = read_json(
            pytester.path / "out1" / "eval" / arm / "inference_telemetry.json"
        )
        assert cold_telemetry["cached_examples"] == 0
        assert cold_telemetry["timed_examples"] == EXAMPLES
        report = f"eval/{arm}/evaluation_report.json"
        assert without_run_id(pytester.path / "out2" / report) == without_run_id(
            pytester.path / "out1" / report
        )
    comparison = "report/adapter-vs-base.json"
    efficiency = read_json(pytester.path / "out2" / comparison)["efficiency"]
    assert efficiency["cross_comparable"] is False and "cached" in efficiency["reason"]
    assert without_run_id(pytester.path / "out2" / comparison) == without_run_id(
        pytester.path / "out1" / comparison
    )
    assert without_run_id(pytester.path / "out2" / "gate_verdict.json") == without_run_id(
        pytester.path / "out1" / "gate_verdict.json"
    )


def test_no_cache_regenerates_and_writes_nothing(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    assert run_cached(pytester, "out1").ret == 0
    generate_calls(pytester)
    entries = sorted((pytester.path / "cachedir").rglob("*.json"))

    result = run_cached(pytester, "out2", "--sommelier-no-cache")
    assert result.ret == 0
    assert sum(c["n"] for c in generate_calls(pytester)) == 2 * (EXAMPLES + 1)
    for arm in ARMS:
        assert [r["cached"] for r in generations(pytester, "out2", arm)] == [False] * EXAMPLES
    assert sorted((pytester.path / "cachedir").rglob("*.json")) == entries


def test_changed_decoding_misses(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    assert run_cached(pytester, "out1").ret == 0
    generate_calls(pytester)
    write_scripted_suite(pytester, SCRIPT, gates=GATES, decoding={"max_new_tokens": 32})
    assert run_cached(pytester, "out2").ret == 0
    assert sum(c["n"] for c in generate_calls(pytester)) == 2 * (EXAMPLES + 1)
    for arm in ARMS:
        assert [r["cached"] for r in generations(pytester, "out2", arm)] == [False] * EXAMPLES
    # both decodings are now stored side by side
    assert len(list((pytester.path / "cachedir").rglob("*.json"))) == 4 * EXAMPLES


def test_changed_prompt_misses_only_that_example(pytester: pytest.Pytester) -> None:
    suite = write_scripted_suite(pytester, SCRIPT, gates=GATES)
    assert run_cached(pytester, "out1").ret == 0
    generate_calls(pytester)
    split = suite.parent / "data" / "test.jsonl"
    rows = read_jsonl(split)
    edited = next(r for r in rows if r["example_id"] == "he-1")
    edited["prompt_text"] = "<user>prompt he-1, reworded</user>\n"
    edited["prompt_sha256"] = sha256_text(edited["prompt_text"])
    edited["full_text"] = edited["prompt_text"] + edited["target_text"]
    split.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")

    assert run_cached(pytester, "out2").ret == 0
    calls = generate_calls(pytester)
    assert sorted((c["arm"], c["n"]) for c in calls) == sorted(
        [(arm, 1) for arm in ARMS for _ in ("warm-up", "he-1")]
    )
    for arm in ARMS:
        cached = {r["example_id"]: r["cached"] for r in generations(pytester, "out2", arm)}
        assert cached == {i: i != "he-1" for i in GOLD}
    telemetry = read_json(pytester.path / "out2" / "eval" / "adapter" / "inference_telemetry.json")
    assert telemetry["timed_examples"] == 1 and telemetry["cached_examples"] == EXAMPLES - 1


@pytest.mark.slow
def test_xdist_workers_share_the_cache(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    assert run_cached(pytester, "out1").ret == 0
    generate_calls(pytester)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--sommelier-cache-dir",
        "cachedir",
        "--sommelier-out",
        "out2",
        "-n",
        "2",
    )
    assert result.ret == 0
    assert generate_calls(pytester) == []
    for arm in ARMS:
        assert [r["cached"] for r in generations(pytester, "out2", arm)] == [True] * EXAMPLES


def test_default_folder_is_pytest_cache(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    assert pytester.runpytest("--sommelier-out", "out1").ret == 0
    folder = pytester.path / ".pytest_cache" / "d" / "sommelier-generations"
    assert len(list(folder.rglob("*.json"))) == 2 * EXAMPLES
    generate_calls(pytester)
    assert pytester.runpytest("--sommelier-out", "out2").ret == 0
    assert generate_calls(pytester) == []
    assert pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out3").ret == 0
    assert len(generate_calls(pytester)) == 2 * (EXAMPLES + 1)  # no cacheprovider: no cache
