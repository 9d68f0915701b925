"""Row-wise batched greedy decoding against ``model.generate`` one prompt at a time.

The claim of ``inference.greedy_rows``: for any batch, each row's new tokens are what a batch of
one gives (then padding up to the longest row, as ``generate`` pads), with rows leaving the
batch as they stop. Checked on the tiny random Llama, base and LoRA (peft) models, with stop
ids chosen so that rows stop at different steps; and the fallbacks: a cache it cannot stack, a
model it does not support."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples

pytest.importorskip("torch")

import torch

from pytest_sommelier.inference import greedy_rows

sys.path.insert(0, str(Path(__file__).parents[1]))
from tiny import make_tiny_adapter_dir, make_tiny_model_dir

pytestmark = [  # real (tiny) models
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning"),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tiny Llama alone and wrapped with a LoRA adapter (peft), and its tokenizer."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    root = tmp_path_factory.mktemp("rows")
    make_tiny_model_dir(root / "m")
    make_tiny_adapter_dir(root / "m", root / "ad", seed=1)
    torch.set_num_threads(1)
    base = AutoModelForCausalLM.from_pretrained(root / "m", use_safetensors=True).eval()
    adapted = AutoModelForCausalLM.from_pretrained(root / "m", use_safetensors=True)
    adapted = PeftModel.from_pretrained(adapted, str(root / "ad"), is_trainable=False).eval()
    tokenizer = AutoTokenizer.from_pretrained(root / "m")
    if not greedy_rows.supported(base):
        pytest.skip("this transformers has no layered dynamic cache: the engine uses generate")
    return {"base": base, "adapter": adapted, "tokenizer": tokenizer}


def one_at_a_time(
    model: Any, rows: list[list[int]], stops: list[int], max_new_tokens: int, pad: int
) -> list[list[int]]:
    """The reference: ``model.generate`` on each prompt alone (a clean greedy config), the rows
    then padded with ``pad`` to the longest, as a batch's output is."""
    from transformers import GenerationConfig

    config = GenerationConfig(
        do_sample=False,
        num_beams=1,
        max_new_tokens=max_new_tokens,
        eos_token_id=stops,
        pad_token_id=pad,
    )
    outputs = []
    with torch.inference_mode():
        for row in rows:
            ids = torch.tensor([row])
            generated = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config
            )
            outputs.append(generated[0, len(row) :].tolist())
    width = max(len(each) for each in outputs)
    return [each + [pad] * (width - len(each)) for each in outputs]


def frequent_tokens(model: Any, rows: list[list[int]], count: int) -> list[int]:
    """Tokens the model tends to produce on these rows (so that, as stop ids, rows stop at
    different steps and leave the batch early)."""
    seen: dict[int, int] = {}
    for row in one_at_a_time(model, rows, [], 6, 0):
        for token in row:
            seen[token] = seen.get(token, 0) + 1
    return sorted(seen, key=lambda token: -seen[token])[:count]


prompt_rows = st.lists(
    st.lists(st.integers(min_value=3, max_value=258), min_size=1, max_size=24),
    min_size=2,
    max_size=6,
)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=prompt_rows,
    arm=st.sampled_from(["base", "adapter"]),
    max_new_tokens=st.integers(min_value=1, max_value=10),
    stop_count=st.integers(min_value=0, max_value=3),
)
def test_every_row_is_what_a_batch_of_one_gives(
    models: dict[str, Any], rows: list[list[int]], arm: str, max_new_tokens: int, stop_count: int
) -> None:
    model = models[arm]
    stops = [1, *frequent_tokens(model, rows, stop_count)]  # 1 is the tiny tokenizer's eos
    with torch.inference_mode():
        batched = greedy_rows.greedy_batch(
            model, rows, stop_ids=stops, max_new_tokens=max_new_tokens, pad_id=0, device="cpu"
        )
    assert batched == one_at_a_time(model, rows, stops, max_new_tokens, 0)


def test_rows_leave_the_batch_when_they_stop(
    models: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row that stopped is not fed again: the decoding steps shrink (the point of the loop)."""
    model = models["base"]
    rows = [[5, 6, 7, 8], [9, 10], [11, 12, 13]]
    stops = frequent_tokens(model, rows, 2)
    expected = one_at_a_time(model, rows, stops, 8, 0)
    lengths = [next((i + 1 for i, t in enumerate(r) if t in stops), 8) for r in expected]
    assert len(set(lengths)) > 1, "the chosen stops must end rows at different steps"
    widths: list[int] = []
    original = type(model).forward

    @functools.wraps(original)  # the signature stays the model's (the cache keyword is read)
    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        widths.append(int(kwargs["input_ids"].shape[0]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(model), "forward", counting)
    with torch.inference_mode():
        got = greedy_rows.greedy_batch(
            model, rows, stop_ids=stops, max_new_tokens=8, pad_id=0, device="cpu"
        )
    assert got == expected
    steps = widths[len(rows) :]  # after one prefill per row
    assert steps == sorted(steps, reverse=True) and steps[0] <= len(rows)
    assert sum(steps) == sum(length - 1 for length in lengths)  # each row fed once per token


def test_a_cache_it_cannot_stack_is_refused_before_decoding(models: dict[str, Any]) -> None:
    class Other:
        def __init__(self) -> None:
            self.layers = [object()]

    with pytest.raises(greedy_rows.Unsupported):
        greedy_rows._plain_layers(Other())
    from transformers import DynamicCache

    with pytest.raises(greedy_rows.Unsupported):  # an empty cache holds no layer to stack
        greedy_rows._plain_layers(DynamicCache())


def test_models_it_does_not_know_are_not_supported() -> None:
    class NoCache:
        config = None

        def forward(self, input_ids: Any) -> None: ...

    assert not greedy_rows.supported(NoCache())
    assert greedy_rows.cache_keyword(NoCache()) is None


def test_the_engine_batches_row_wise_and_equals_batch_one(tmp_path: Path) -> None:
    """Through the engine: batch 4 goes row-wise where the model qualifies (and is cached
    under the procedure's name), and every completion (text, finish, count) equals batch 1's
    either way."""
    from engine_configs import arm_config, model_config

    from pytest_sommelier.inference import transformers_engine as backend

    make_tiny_model_dir(tmp_path / "m")
    make_tiny_adapter_dir(tmp_path / "m", tmp_path / "ad", seed=1)
    backend._BASES.clear()
    try:
        arms = {"base": arm_config("base"), "adapter": arm_config("adapter", "ad")}
        generators = backend.load_generators(model_config("m"), arms, suite_dir=tmp_path)
        prompts = ["hello", "x", "שלום עולם, what is the weather?", "a" * 30, "{}"]
        decoding = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 12}
        for generator in generators.values():
            single = generator.generate_completions(prompts, {**decoding, "batch_size": 1})
            batched = generator.generate_completions(prompts, {**decoding, "batch_size": 4})
            # row-wise where transformers has layered caches (4.56+), else generate
            assert generator.base.rowwise is greedy_rows.supported(generator.base.model)
            assert batched == single
            assert generator.cache_identity == {"batching": greedy_rows.PROCEDURE}
    finally:
        backend._BASES.clear()
