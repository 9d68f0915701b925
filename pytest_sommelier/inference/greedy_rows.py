"""Batched greedy decoding where each row is prefilled alone and leaves the batch when done.

``model.generate`` on a left-padded batch spends work a batch of one does not: every prompt's
prefill runs at the batch's longest length (the padding is computed and thrown away), and every
decoding step runs all rows until the last one stops (a row that stopped at token 24 is carried,
as padding, to token 80). :func:`greedy_batch` removes both:

1. each prompt is prefilled alone, exactly as a batch of one is (the whole prompt, logits of its
   last position only), and its first new token is the argmax of those logits;
2. the rows' key/value caches are left-padded to the longest prompt and stacked into one
   batch, the padding masked by the attention mask (positions count each row's own tokens);
3. each decoding step feeds every live row its last token; a row that produced a stop id or
   reached ``max_new_tokens`` leaves the batch (``DynamicCache.batch_select_indices``).

The result is the token matrix ``generate`` returns for the same batch: each row's new tokens,
then the pad id up to the longest row's length (what ``generate`` writes after a row stops), so
the engine's one decode rule and finish rule read it unchanged. Greedy means the plain argmax of
the float32 logits: the engine's generation config is clean (no processor applies).

:func:`supported` says whether a model qualifies: transformers' layered ``DynamicCache`` (4.56
and later) whose layers are all plain ``DynamicLayer``s after a prefill (no sliding windows, no
hybrid or linear-attention layers, no quantized cache) and a decoder-only model. Anything else
keeps ``model.generate`` (the engine's fallback), so what a model needs that this loop does not
do is never silently skipped. Only public names of transformers and peft are used: the forward's
cache keyword is read from the model's own signature (``cache`` in transformers 5, before that
``past_key_values``), nothing private is read or written.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Sequence
from typing import Any

from pytest_sommelier.inference import engines

PROCEDURE = "rowwise-prefill.v1"
"""Names this module's batching procedure in the generation cache key (bumped when it changes
what a batch can output); ``model.generate``'s fallback is part of the same procedure."""


def forward_parameters(model_class: Any) -> frozenset[str]:
    """The parameter names of ``model_class.forward`` (empty when unreadable)."""
    try:
        return frozenset(inspect.signature(model_class.forward).parameters)
    except (AttributeError, TypeError, ValueError):
        return frozenset()


def cache_keyword(model: Any) -> str | None:
    """The keyword the (peft-unwrapped) model's forward takes its key/value cache by:
    ``cache`` (transformers 5), ``past_key_values`` (before), None if neither."""
    parameters = forward_parameters(type(engines.underlying_model(model)))
    for name in ("cache", "past_key_values"):
        if name in parameters:
            return name
    return None


def _layered_cache_classes() -> tuple[type, type] | None:
    """``(DynamicCache, DynamicLayer)`` where transformers has layered caches, else None."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:
        return None
    return DynamicCache, DynamicLayer


def supported(model: Any) -> bool:
    """True when :func:`greedy_batch` may run ``model``: a decoder-only transformers model whose
    forward takes a cache keyword and ``logits_to_keep``, on a transformers with layered dynamic
    caches. (Each prefill's cache is checked again in :func:`greedy_batch`.)"""
    classes = _layered_cache_classes()
    inner = engines.underlying_model(model)
    config = getattr(inner, "config", None)
    if classes is None or config is None or getattr(config, "is_encoder_decoder", False):
        return False
    parameters = forward_parameters(type(inner))
    return cache_keyword(model) is not None and {"logits_to_keep", "position_ids"} <= parameters


class Unsupported(Exception):
    """A prefill's cache is not what :func:`greedy_batch` can stack (raised before any row is
    decoded: the caller generates the batch with ``model.generate`` instead)."""


def _output_cache(output: Any, keyword: str) -> Any:
    """The cache a forward returned (``cache`` in transformers 5, else ``past_key_values``)."""
    return getattr(output, keyword)


def _plain_layers(cache: Any) -> list[tuple[Any, Any]]:
    """The (keys, values) of every layer of a prefill's cache; :class:`Unsupported` unless it
    is a ``DynamicCache`` of plain ``DynamicLayer``s, all filled."""
    classes = _layered_cache_classes()
    if classes is None:
        raise Unsupported("no layered caches")
    dynamic_cache, dynamic_layer = classes
    layers = getattr(cache, "layers", None)
    if type(cache) is not dynamic_cache or not layers:
        raise Unsupported(f"cache {type(cache).__name__}")
    pairs = []
    for layer in layers:
        keys, values = getattr(layer, "keys", None), getattr(layer, "values", None)
        if type(layer) is not dynamic_layer or keys is None or values is None or keys.ndim != 4:
            raise Unsupported(f"cache layer {type(layer).__name__}")
        pairs.append((keys, values))
    return pairs


def _argmax(logits: Any) -> Any:
    """Greedy choice per row: argmax of the last position's logits in float32 (``generate``'s
    greedy rule with no logits processor)."""
    import torch

    return torch.argmax(logits[:, -1, :].to(dtype=torch.float32), dim=-1)


def greedy_batch(
    model: Any,
    rows: Sequence[Sequence[int]],
    *,
    stop_ids: Collection[int],
    max_new_tokens: int,
    pad_id: int,
    device: Any,
) -> list[list[int]]:
    """The new tokens of every row (prompt token ids, no padding), greedy, as ``generate``
    returns them for the left-padded batch: each row's tokens through its first stop id (or
    ``max_new_tokens``), then ``pad_id`` up to the longest row's count.

    Call under ``torch.inference_mode()`` with the arm's adapter selected. Raises
    :class:`Unsupported` (before decoding) when a prefill's cache cannot be stacked."""
    import torch
    import torch.nn.functional as functional

    keyword = cache_keyword(model)
    if keyword is None or max_new_tokens < 1 or not rows or any(len(row) < 1 for row in rows):
        raise Unsupported("model or rows")
    stops = {int(stop) for stop in stop_ids}
    longest = max(len(row) for row in rows)
    new: list[list[int]] = [[] for _ in rows]
    stacked: list[tuple[list[Any], list[Any]]] = []
    for index, row in enumerate(rows):  # 1. each prompt prefilled alone, as a batch of one
        output = model(  # what generate gives a prompt alone: full mask, positions 0..n-1
            input_ids=torch.tensor([list(row)], dtype=torch.long, device=device),
            attention_mask=torch.ones((1, len(row)), dtype=torch.long, device=device),
            position_ids=torch.arange(len(row), dtype=torch.long, device=device)[None, :],
            use_cache=True,
            logits_to_keep=1,
        )
        new[index].append(int(_argmax(output.logits)[0]))
        pad = longest - len(row)
        for layer, (keys, values) in enumerate(_plain_layers(_output_cache(output, keyword))):
            if pad:
                keys = functional.pad(keys, (0, 0, pad, 0))
                values = functional.pad(values, (0, 0, pad, 0))
            if layer == len(stacked):
                stacked.append(([], []))
            stacked[layer][0].append(keys)
            stacked[layer][1].append(values)
    if any(len(each[0]) != len(rows) for each in stacked):
        raise Unsupported("layer counts differ between rows")
    dynamic_cache = _layered_cache_classes()[0]  # type: ignore[index]
    cache = dynamic_cache()
    for layer, (keys, values) in enumerate(stacked):  # 2. one left-padded batch of caches
        cache.update(torch.cat(keys, dim=0), torch.cat(values, dim=0), layer)
    del stacked
    mask = torch.tensor(
        [[0] * (longest - len(row)) + [1] * len(row) for row in rows], dtype=torch.long
    ).to(device)
    positions = torch.tensor([[len(row)] for row in rows], dtype=torch.long, device=device)

    def done(tokens: list[int]) -> bool:
        return tokens[-1] in stops or len(tokens) >= max_new_tokens

    live = [index for index in range(len(rows)) if not done(new[index])]
    if live and len(live) < len(rows):
        keep = torch.tensor(live, dtype=torch.long, device=device)
        cache.batch_select_indices(keep)
        mask, positions = mask[keep], positions[keep]
    while live:  # 3. one step for every live row; finished rows leave the batch
        last = torch.tensor([[new[index][-1]] for index in live], dtype=torch.long, device=device)
        mask = torch.cat([mask, mask.new_ones((len(live), 1))], dim=1)
        output = model(
            input_ids=last,
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            **{keyword: cache},
        )
        cache = _output_cache(output, keyword)
        for index, token in zip(live, _argmax(output.logits).tolist(), strict=True):
            new[index].append(int(token))
        kept = [slot for slot, index in enumerate(live) if not done(new[index])]
        if len(kept) < len(live):
            if kept:
                keep = torch.tensor(kept, dtype=torch.long, device=device)
                cache.batch_select_indices(keep)
                mask, positions = mask[keep], positions[keep]
            live = [live[slot] for slot in kept]
        positions = positions + 1
    width = max(len(tokens) for tokens in new)
    return [tokens + [int(pad_id)] * (width - len(tokens)) for tokens in new]
