"""What one ``SommelierCallback`` evaluation costs beyond generation (issue 41, item 5): the base's
tokenizer is loaded once per process, not at each checkpoint (a GGUF base's, read from the file,
took seconds each time: it is read from the converted-model cache's folder, the tokenizer a
pytest run's engine has), and the run page's template is compiled once per process. The time
itself is measured by ``benchmarks/bench_callback_overhead.py`` (no timed assertion here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from test_training_callback import train, training_suite  # noqa: E402

from pytest_sommelier.inference import modelcache  # noqa: E402


@pytest.mark.slow
def test_three_checkpoints_load_the_tokenizer_once(
    tiny: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny import make_tiny_model_dir

    from pytest_sommelier.training import SommelierCallback
    from pytest_sommelier.view.html import _environment

    calls: list[str] = []
    original = modelcache.load_base_tokenizer

    def counting(source: Any, suite_dir: Path) -> Any:
        calls.append(source.location)
        return original(source, suite_dir)

    monkeypatch.setattr(modelcache, "load_base_tokenizer", counting)
    model_dir = make_tiny_model_dir(tmp_path / "fresh")  # a base no earlier test loaded
    suite = training_suite(tmp_path, model_dir)
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 cache_dir=tmp_path / "cache", quiet=True)  # fmt: skip
    train(model_dir, tmp_path / "out", callback)
    assert [r.step for r in callback.results] == [2, 4, 6]
    assert all(r.stored is not None and not r.errors for r in callback.results)
    assert len(calls) == 1  # on_train_begin's; none per checkpoint
    assert _environment() is _environment()  # the page's compiled template is kept


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_gguf_bases_tokenizer_comes_from_the_load_cache_and_tokenizes_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny import make_tiny_gguf

    from pytest_sommelier.data.digests import sha256_path
    from pytest_sommelier.inference import modelref
    from pytest_sommelier.inference.engines import BaseSource

    monkeypatch.setenv("SOMMELIER_CACHE_DIR", str(tmp_path / "models"))
    gguf = make_tiny_gguf(tmp_path / "tiny.gguf")
    source = BaseSource("gguf", "tiny.gguf", str(gguf), None)
    from_file = modelcache.load_base_tokenizer(source, tmp_path)  # no cache yet: the file
    modelcache.load_base_model(source, torch.float32, tmp_path)  # builds the cache entry
    from_cache = modelcache.load_base_tokenizer(source, tmp_path)
    folder = tmp_path / "models" / sha256_path(gguf)
    assert Path(from_cache.name_or_path) == folder and Path(from_file.name_or_path) != folder
    direct = modelref.load_tokenizer("tiny.gguf", base_dir=tmp_path)
    for text in ("<|im_start|>user\nweather in Paris<|im_end|>\n", "שלום עולם", '{"a": 1}'):
        ids = direct(text, add_special_tokens=False)["input_ids"]
        assert from_cache(text, add_special_tokens=False)["input_ids"] == ids
        assert from_file(text, add_special_tokens=False)["input_ids"] == ids
    assert from_cache.chat_template == direct.chat_template
