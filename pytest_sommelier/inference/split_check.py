"""The split belongs to the base: a formatted split's tokenizer must be the base model's own.

A prompt is the chat template of the tokenizer the split was formatted with, rendered into text
and tokenized again by the base's tokenizer at generation time; formatted with another
tokenizer's template, it reaches the base in a format the base was not trained on, silently.
:func:`check_split_tokenizer` compares every row's ``tokenizer_id``/``tokenizer_revision``
with the base's tokenizer identity (``engines.base_ref``: references and digests, nothing
loaded):

- where both sides have a content digest (``sha256:...``: a local folder's tokenizer files, a
  ``.gguf`` or ``pkg:`` file; a pinned hub revision counts when its snapshot is in the local
  hub cache, digested the same way), the digests must be equal, whatever the names;
- otherwise the id and the revision must be equal (a hub id pinned to the same commit).

A mismatch is an ``InputError`` naming both, saying to re-run ``sommelier format``; ``[suite]
split_tokenizer = "any"`` accepts another tokenizer on purpose (and ``suite.resolved.json``
records it). Invariant kept: nothing here loads a tokenizer or weights, or reaches the network.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core.canonical import canonical_json_text
from pytest_sommelier.core.types import FormattedSplit, Suite
from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.data.references import is_hub_id
from pytest_sommelier.data.split.load import row_tokenizer
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.inference import engines, modelref

DIGEST_PREFIX = "sha256:"


def split_tokenizers(path: Path) -> list[tuple[str, str]]:
    """The distinct ``(tokenizer_id, tokenizer_revision)`` pairs of a split's rows, in file
    order (rows the split loader refuses are its business: they are skipped here)."""
    found: dict[tuple[str, str], None] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                found[row_tokenizer(strict_json(line))] = None
            except (ValueError, KeyError, TypeError):
                continue
    return list(found)


def content_digest(tokenizer_id: str, revision: str) -> str | None:
    """The tokenizer's content digest: the revision itself when it is one, else (a hub id
    pinned to a commit) the digest of its tokenizer files in the local hub cache's snapshot,
    computed as ``sommelier format`` computes a folder's; None when there is none to read."""
    if revision.startswith(DIGEST_PREFIX):
        return revision
    if not is_hub_id(tokenizer_id):
        return None
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(tokenizer_id, revision=revision, local_files_only=True))
        return DIGEST_PREFIX + modelref.folder_files_sha256(folder, modelref.TOKENIZER_FILES)
    except Exception:  # not in the local hub cache (or no huggingface_hub): compare by name
        return None


def same_tokenizer(split: tuple[str, str], base: tuple[str, str]) -> bool:
    """Whether two tokenizer identities name the same tokenizer: equal digests where both
    sides have one, else an equal id and revision."""
    if split == base:
        return True
    split_digest, base_digest = content_digest(*split), content_digest(*base)
    if split_digest is not None and base_digest is not None:
        return split_digest == base_digest
    return False


def base_tokenizer(suite: Suite) -> tuple[str, str]:
    """The base model's tokenizer identity, as every engine records it in ``model_identity``
    (``engines.model_identity_for``: ``modelref.tokenizer_identity`` of the base reference)."""
    identity = engines.base_ref(suite.model, Path(suite.path).parent).identity
    return str(identity["tokenizer_id"]), str(identity["tokenizer_revision"])


def check_split_tokenizer(suite: Suite, split: FormattedSplit | None = None) -> None:
    """Refuse a split formatted with another tokenizer than the base's (see the module
    docstring); ``[suite] split_tokenizer = "any"`` skips the check. A base the engines would
    refuse (no safetensors, no tokenizer files) is not judged here: the engine's own error
    names it when its arm is set up. ``split``: the suite's split as the loader returned it,
    whose rows' tokenizers it recorded (``FormattedSplit.tokenizers``), so the file is not read
    again; without it the file is read (:func:`split_tokenizers`)."""
    if suite.split_tokenizer == "any":
        return
    try:
        base = base_tokenizer(suite)
    except SommelierError:
        return
    found = split_tokenizers(Path(suite.test_split)) if split is None else split.tokenizers
    for split_identity in found:
        if not same_tokenizer(split_identity, base):
            raise InputError(
                "SOM-SPLIT-TOKENIZER",
                f"the split was formatted with tokenizer {_shown(split_identity)}, the base "
                f"model's tokenizer is {_shown(base)}: the prompts are in another tokenizer's "
                "chat template",
                "re-run sommelier format with --tokenizer set to the base model, or set "
                '[suite] split_tokenizer = "any" if the split uses another tokenizer on purpose',
                where=f"{suite.path.name}: [suite] test_split",
            )


def _shown(identity: tuple[str, str]) -> str:
    """``id (revision)`` with a digest cut to 12 hex digits."""
    tokenizer_id, revision = identity
    if revision.startswith(DIGEST_PREFIX):
        revision = revision[: len(DIGEST_PREFIX) + 12]
    return f"{tokenizer_id} ({revision})"


def load_checked_suite(
    path: Path, *, live: bool = False, arms: Mapping[str, str] | None = None
) -> tuple[Suite, FormattedSplit]:
    """A suite file and its split as an evaluation runs them (pytest collection and
    ``training.SommelierCallback`` alike): the suite loaded, its split read with the suite's
    ``arguments_key``, its gates checked against the split, and the split's tokenizer checked
    against the base's (:func:`check_split_tokenizer`). Raises the first load error. ``live``:
    the training callback's reading, ``arms`` the arms given a folder (``--sommelier-arms``)
    (``data.suite.load.load_suite``)."""
    from pytest_sommelier.data.split.load import load_suite_split
    from pytest_sommelier.data.suite.gates import check_gates_against_split
    from pytest_sommelier.data.suite.load import load_suite

    suite = load_suite(path, live=live, given=arms)
    split = load_suite_split(suite)
    check_gates_against_split(suite, split)
    check_split_tokenizer(suite, split)
    check_split_template_kwargs(suite, split)
    return suite, split


def check_split_template_kwargs(suite: Suite, split: FormattedSplit) -> None:
    """Every row of the split was rendered with exactly the template options the suite
    declares (``[format] template_kwargs``; none declared: none recorded), compared as canonical
    JSON (``0`` is not ``false``, nor ``1.0`` ``1``: a template tells them apart); the first
    row that was not is one InputError line naming both."""
    declared = dict(suite.template_kwargs)
    wanted = canonical_json_text(declared)
    none = canonical_json_text({})  # most rows record none: their text once, not per row
    for example in split.examples:
        recorded = dict(example.template_kwargs or {})
        if (canonical_json_text(recorded) if recorded else none) != wanted:
            raise InputError(
                "SOM-SPLIT-TEMPLATE-KWARGS",
                f"example {example.example_id!r} was formatted with template_kwargs "
                f"{_kwargs_text(recorded)}, the suite declares {_kwargs_text(declared)}",
                "re-run sommelier format with the suite's --template-kwarg options, or set "
                "[format] template_kwargs to the ones the split was formatted with",
                where=f"{suite.path.name}: [format] template_kwargs",
            )


def _kwargs_text(kwargs: dict[str, Any]) -> str:
    text = json.dumps(kwargs, sort_keys=True, ensure_ascii=True)
    return text if len(text) <= 80 else text[:77] + "..."


REASONING_OPENERS = ("<think>", "<thinking>", "<reasoning>", "<|begin_of_thought|>")
"""Reasoning-block openers chat templates of reasoning models write (what the check looks for
when the suite declares no ``[parser] reasoning``)."""
ENGINES_WITH_REASONING = ("openai",)
"""Engines that return reasoning apart from content (``[parser] reasoning = "engine"``)."""


def reasoning_warnings(
    suite: Suite, split: FormattedSplit, engine: str | None = None
) -> list[str]:
    """What ``sommelier check`` and the session's preflight warn about the reasoning channel,
    read from what the chat template rendered (each row's ``full_text`` and ``prompt_text``):

    - the template emits a reasoning block (an opener of :data:`REASONING_OPENERS` in the
      rendered target, or one left open at the end of the generation prompt) and the suite
      declares no ``[parser] reasoning``: the reasoning would reach parser v1. Both fixes are
      named: declare the rule, or format with ``template_kwargs`` that turn thinking off
      (such a split renders no block, so it is not warned about);
    - a declared delimiter never appears in anything the template rendered;
    - ``"engine"`` with an engine that returns no reasoning channel (transformers, vllm).
    """
    from pytest_sommelier.core.reasoning import ENGINE, Delimiters

    rows = [(e.prompt_text, e.full_text) for e in split.examples]
    lines: list[str] = []
    rule = suite.reasoning
    if rule is None:
        found = _reasoning_block(rows)
        if found is not None:
            opener, where = found
            lines.append(
                f"the chat template emits a reasoning block ({opener}) in {where} and the suite "
                "declares no [parser] reasoning, so parser v1 would read the reasoning: declare "
                '[parser] reasoning = "think" (or {start, end}), or format with template options '
                "that turn thinking off ([format] template_kwargs = {enable_thinking = false} "
                "and sommelier format --template-kwarg enable_thinking=false)"
            )
    elif isinstance(rule, Delimiters):
        for name, delimiter in (("start", rule.start), ("end", rule.end)):
            if not any(delimiter in full for _, full in rows):
                lines.append(
                    f"[parser] reasoning {name} delimiter {delimiter!r} never appears in what the "
                    "chat template renders: check that the rule is the model's own delimiters"
                )
    elif rule == ENGINE:
        name = engine or suite.engine.name
        if name not in ENGINES_WITH_REASONING:
            lines.append(
                f'[parser] reasoning = "engine" but the {name} engine returns the raw text, no '
                'reasoning channel: declare the delimiters ([parser] reasoning = "think" or '
                "{start, end}), or serve the model behind an OpenAI-compatible server with a "
                "reasoning parser"
            )
    return lines


def _reasoning_block(rows: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The first reasoning opener the template rendered, and where: in the target (the text
    after the prompt in ``full_text``) or left open at the end of the generation prompt."""
    for prompt, full in rows:
        target = full[len(prompt) :] if full.startswith(prompt) else full
        for opener in REASONING_OPENERS:
            if opener in target:
                return opener, "its rendered target"
            closer = opener[0] + "/" + opener[1:] if not opener.startswith("<|") else None
            at = prompt.rfind(opener)
            if at >= 0 and (closer is None or prompt.find(closer, at) < 0):
                return opener, "its generation prompt (left open)"
    return None
