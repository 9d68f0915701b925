"""Tiny, local, random models for tests: no network, well under a second each.

``make_tiny_model_dir`` writes a random ``LlamaForCausalLM`` (hidden 32, 2 layers, 2 heads) with
safetensors weights and a byte-level tokenizer built locally with the ``tokenizers`` library, so
any text (Hebrew included) encodes and decodes. ``make_tiny_adapter_dir`` writes a PEFT LoRA on
``q_proj``/``v_proj`` whose B weights are random and nonzero, so its greedy outputs differ from
the base. ``make_tiny_gguf`` writes a tiny random Llama as one float32 ``.gguf`` file (same
byte-level vocabulary, a gpt2-style GGUF tokenizer and the same chat template).

Invariant kept: the same arguments give byte-identical files (seeded weights, no machine paths
written into any file), so content digests are stable across temporary folders.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

PAD = "<pad>"
EOS = "<|im_end|>"
BOS = "<|im_start|>"

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _build_tokenizer():
    """A byte-level BPE with no merges: one token per byte, plus pad/eos/bos special tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = [PAD, EOS, BOS]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {token: index for index, token in enumerate(specials + alphabet)}
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token=PAD,
        eos_token=EOS,
        bos_token=BOS,
        model_max_length=512,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_tiny_model_dir(
    path: Path, *, seed: int = 0, init_std: float = 0.3, **config_overrides: Any
) -> Path:
    """Write a tiny random Llama causal LM and its tokenizer into ``path``; return ``path``.

    The folder holds ``config.json``, ``model.safetensors`` and the tokenizer files; the same
    ``seed`` gives the same weights. ``config_overrides`` replace LlamaConfig fields (e.g. a
    larger ``hidden_size`` for benchmarks); weights are drawn with standard deviation
    ``init_std`` (wider than the usual 0.02, so greedy outputs vary with the input).
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _build_tokenizer()
    settings: dict[str, Any] = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "tie_word_embeddings": False,
    }
    config = LlamaConfig(**{**settings, **config_overrides})
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    parameter.normal_(0.0, init_std)
    finally:
        torch.random.set_rng_state(generator_state)
    model.eval()
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


def make_tiny_adapter_dir(model_dir: Path, path: Path, *, seed: int = 1, r: int = 4) -> Path:
    """Write a PEFT LoRA (q_proj, v_proj) for the model in ``model_dir`` into ``path``.

    The LoRA B weights are random and nonzero (A too), so the adapted model's outputs differ
    from the base; saved as ``adapter_config.json`` + ``adapter_model.safetensors``.
    """
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    path = Path(path)
    base = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True)
    config = LoraConfig(
        r=r,
        lora_alpha=2 * r,
        target_modules=["q_proj", "v_proj"],
        lora_dropout=0.0,
        bias="none",
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(base, config)
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if "lora_A" in name or "lora_B" in name:
                    parameter.normal_(0.0, 0.5)
    finally:
        torch.random.set_rng_state(generator_state)
    model.save_pretrained(path, safe_serialization=True, save_embedding_layers=False)
    _strip_machine_paths(path, Path(model_dir).name)
    return path


def _strip_machine_paths(path: Path, base_name: str) -> None:
    """Replace the absolute base path PEFT records with the folder name; drop the model card."""
    config_path = path / "adapter_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = base_name
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (path / "README.md").unlink(missing_ok=True)


def make_tiny_gguf(path: Path, *, seed: int = 0) -> Path:
    """Write a tiny random Llama (hidden 32, 2 layers, 2 heads) as a float32 GGUF file.

    The GGUF tokenizer is the byte-level vocabulary of ``make_tiny_model_dir`` plus one merged
    token (transformers' GGUF converter needs at least one merge). Returns ``path``.
    """
    import gguf
    import numpy as np

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    vocab = _build_tokenizer().get_vocab()
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    tokens.append("\u0120\u0120")  # "ĠĠ", the result of the one merge below
    hidden, ff, layers, heads = 32, 64, 2, 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(512)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    specials = 3
    writer.add_token_types(
        [gguf.TokenType.CONTROL] * specials + [gguf.TokenType.NORMAL] * (len(tokens) - specials)
    )
    writer.add_token_merges(["\u0120 \u0120"])
    writer.add_bos_token_id(vocab[BOS])
    writer.add_eos_token_id(vocab[EOS])
    writer.add_pad_token_id(vocab[PAD])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    rng = np.random.default_rng(seed)

    def random(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.3).astype(np.float32))

    def ones(name: str) -> None:
        writer.add_tensor(name, np.ones(hidden, dtype=np.float32))

    random("token_embd.weight", len(tokens), hidden)
    for layer in range(layers):
        block = f"blk.{layer}"
        ones(f"{block}.attn_norm.weight")
        ones(f"{block}.ffn_norm.weight")
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            random(f"{block}.{name}.weight", hidden, hidden)
        random(f"{block}.ffn_gate.weight", ff, hidden)
        random(f"{block}.ffn_up.weight", ff, hidden)
        random(f"{block}.ffn_down.weight", hidden, ff)
    ones("output_norm.weight")
    random("output.weight", len(tokens), hidden)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
