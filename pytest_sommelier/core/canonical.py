"""Pure digests of text and JSON values: every identity pytest-sommelier records is SHA-256 hex.

Invariants kept by every function here:

- a digest is 64 lowercase hex characters;
- text is hashed as UTF-8, JSON as its canonical form (``sort_keys``, separators ``(",", ":")``,
  ``ensure_ascii=True``, no NaN/Infinity), so equal values give equal digests on every machine;
- the set digests are *ordered*: the same rows in another order give another digest, so a
  reordered split or a different selection never passes an identity check.

No I/O: file and folder digests live in ``pytest_sommelier.data.digests``. The exact byte-level
definitions are documented in docs/formatted_split.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def sha256_bytes(data: bytes) -> str:
    """SHA-256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """SHA-256 hex digest of ``text`` encoded as UTF-8 (how ``prompt_sha256`` is defined)."""
    return sha256_bytes(text.encode("utf-8"))


def prompt_digest(prompt_text: str, template_kwargs: Mapping[str, Any] | None = None) -> str:
    """An example's ``prompt_sha256``: the SHA-256 of ``prompt_text`` (UTF-8) when it was
    rendered without template options (every split before they existed keeps its digests);
    with ``template_kwargs`` (``[format] template_kwargs``) the digest of the canonical JSON
    ``{"prompt_text": ..., "template_kwargs": ...}``, so changing an option changes the digest
    even where the template renders the same text."""
    if not template_kwargs:
        return sha256_text(prompt_text)
    return sha256_json({"prompt_text": prompt_text, "template_kwargs": dict(template_kwargs)})


def canonical_json_text(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, compact separators, ASCII escapes.

    NaN and infinities are refused (``ValueError``): they are not JSON.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def sha256_json(value: Any) -> str:
    """SHA-256 of the canonical JSON text of ``value`` (key order never changes the digest)."""
    return sha256_text(canonical_json_text(value))


def _field(item: Any, name: str) -> Any:
    """Read ``name`` from a mapping (a generation record) or an attribute (an ``Example``)."""
    if isinstance(item, Mapping):
        return item[name]
    return getattr(item, name)


def prompt_set_sha256(examples: Iterable[Any]) -> str:
    """Digest of one slice's ordered prompt identities.

    ``examples`` are ``Example`` objects or records (mappings) with ``example_id`` and
    ``prompt_sha256``, in split order. The digest is
    ``sha256_json([[example_id, prompt_sha256], ...])``: it changes when a prompt is edited,
    an example is added or removed, or the order changes.
    """
    return sha256_json(
        [[_field(item, "example_id"), _field(item, "prompt_sha256")] for item in examples]
    )


def pair_set_sha256(pairs: Iterable[tuple[str, str, str, str]]) -> str:
    """Digest of one target slice's ordered matched pairs.

    ``pairs`` are ``(root_id, root_prompt_sha256, target_id, target_prompt_sha256)`` tuples in
    target-slice split order. The digest is ``sha256_json([[root_id, root_prompt_sha256,
    target_id, target_prompt_sha256], ...])``: it binds both sides' prompts, so editing either
    prompt, re-pairing a row or reordering the target slice changes it.
    """
    rows = []
    for pair in pairs:
        if len(pair) != 4:
            raise ValueError(f"a pair is (root_id, root_sha, target_id, target_sha), got {pair!r}")
        rows.append(list(pair))
    return sha256_json(rows)
