"""``inference.base_check``: is the peft model in memory the suite's ``[model] base``? Its
``config.json`` and safetensors headers against the model's config and state-dict shapes, on
the tiny random Llama (``tests/tiny.py``) and tiny Llamas of other shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

pytest.importorskip("torch")
pytest.importorskip("peft")

from tiny import make_tiny_model_dir

from pytest_sommelier.core.types import ModelConfig
from pytest_sommelier.errors import InputError
from pytest_sommelier.inference.base_check import (
    CONFIG_FIELDS,
    check_live_base,
    config_difference,
    live_shapes,
    shape_difference,
)


def peft_model(folder: Path) -> Any:
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True)
    config = LoraConfig(r=2, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    return get_peft_model(base, config)


def model_config(base: Path) -> ModelConfig:
    return ModelConfig(base=str(base), revision=None, dtype=None, device=None)


def check(base: Path, model: Any) -> None:
    check_live_base(model_config(base), base.parent, model, where="suite.toml: [model] base")


@pytest.fixture(scope="module")
def trained(tiny: tuple[Path, Path]) -> Any:
    return peft_model(tiny[0])


@pytest.mark.slow
def test_the_models_own_base_passes_and_peft_names_map_to_the_checkpoints(
    tiny: tuple[Path, Path], trained: Any
) -> None:
    check(tiny[0], trained)
    shapes = live_shapes(trained.get_base_model().state_dict())
    assert "model.layers.0.self_attn.q_proj.weight" in shapes
    assert not any("lora_" in name or "base_layer" in name for name in shapes)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"hidden_size": 48}, "config.json hidden_size is 48 in the base, 32 in the model"),
        ({"num_hidden_layers": 3}, "num_hidden_layers is 3 in the base, 2 in the model"),
        # a field config.json is not compared on: the headers tell it
        ({"intermediate_size": 96}, "mlp.down_proj.weight has shape [32, 96] in the base's"),
    ],
)
def test_a_base_of_another_shape_is_one_line_naming_the_difference(
    tmp_path: Path, trained: Any, overrides: dict[str, int], named: str
) -> None:
    other = make_tiny_model_dir(tmp_path / "other", **overrides)
    with pytest.raises(InputError) as caught:
        check(other, trained)
    text = str(caught.value)
    assert caught.value.code == "SOM-TRAIN-BASE" and "\n" not in text
    assert named in text and "suite.toml: [model] base" in text


@pytest.mark.slow
def test_a_base_with_tensors_the_model_lacks_is_named(tmp_path: Path, trained: Any) -> None:
    from safetensors.torch import load_file, save_file

    folder = make_tiny_model_dir(tmp_path / "extra")
    tensors = load_file(folder / "model.safetensors")
    tensors["model.layers.0.extra.weight"] = tensors["model.norm.weight"].clone()
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(InputError, match=r"1 tensors only in the base: model\.layers\.0\.extra"):
        check(folder, trained)


@pytest.mark.slow
def test_an_unreadable_config_is_one_line(tmp_path: Path, trained: Any) -> None:
    folder = make_tiny_model_dir(tmp_path / "broken")
    (folder / "config.json").write_text('{"hidden_size": 32, "hidden_size": 33}')
    with pytest.raises(InputError) as caught:
        check(folder, trained)
    assert caught.value.code == "SOM-TRAIN-BASE" and "\n" not in str(caught.value)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=examples(100))
@given(
    base=st.dictionaries(st.sampled_from([*CONFIG_FIELDS, "other"]), JSON, max_size=6),
    model=st.dictionaries(st.sampled_from([*CONFIG_FIELDS, "other"]), JSON, max_size=6),
)
def test_config_difference_over_hostile_configs_names_a_compared_field_or_nothing(
    base: dict[str, Any], model: dict[str, Any]
) -> None:
    found = config_difference(base, model)  # JSON of any shape: never raises
    same = all(
        key not in base or key not in model or base[key] is None or model[key] is None
        or base[key] == model[key]
        for key in CONFIG_FIELDS
    )  # fmt: skip
    assert (found is None) == same
    if found is not None:
        assert "\n" not in found and any(f"config.json {key} " in found for key in CONFIG_FIELDS)


@settings(max_examples=examples(100))
@given(
    base=st.dictionaries(st.text(max_size=6), st.tuples(st.integers(0, 9)), max_size=5),
    model=st.dictionaries(st.text(max_size=6), st.tuples(st.integers(0, 9)), max_size=5),
)
def test_shape_difference_is_none_exactly_when_names_and_shapes_agree(
    base: dict[str, tuple[int, ...]], model: dict[str, tuple[int, ...]]
) -> None:
    found = shape_difference(base, model)
    assert (found is None) == (base == model)


def test_live_shapes_drops_peft_tensors_and_wrappers() -> None:
    torch = pytest.importorskip("torch")
    state = {
        "model.q_proj.base_layer.weight": torch.zeros(4, 2),
        "model.q_proj.lora_A.default.weight": torch.zeros(1, 2),
        "lm_head.modules_to_save.default.weight": torch.zeros(3, 2),
        "lm_head.original_module.weight": torch.zeros(3, 2),
    }
    assert json.dumps(live_shapes(state), sort_keys=True) == (
        '{"lm_head.weight": [3, 2], "model.q_proj.weight": [4, 2]}'
    )
