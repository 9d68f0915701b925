"""A seeded sample of a split: N roots with their translations (``--sommelier-sample N:SEED``,
``SommelierCallback(max_examples=N, seed=SEED)``).

The roots are the reference slice's examples (the first configured slice); N of them are drawn
by ``core.sampling.sample_positions`` (the one seeded draw), and every example of another slice
whose ``source_example_id`` is a drawn root is kept with it, so every paired language gap and
every cluster of the sample is whole. The sample is a split of its own: its bytes are the kept
rows of the file, in file order (so a run's split copy is the sample, and its digest the
sample's), its ``sha256`` is their digest (so its ``config_sha256`` differs from the full
suite's and a sampled run never compares as the full suite), and ``sample`` records what was
drawn (``{"roots", "seed", "of_roots", "of_sha256"}``), which ``suite.resolved.json`` and every
view show. Invariant kept: the same split, N and seed give the same sample; N at or above the
number of roots is the whole split, unchanged.
"""

from __future__ import annotations

import re
from dataclasses import replace

from pytest_sommelier.core.canonical import pair_set_sha256, prompt_set_sha256, sha256_bytes
from pytest_sommelier.core.sampling import sample_positions
from pytest_sommelier.core.types import FormattedSplit
from pytest_sommelier.errors import InputError


def parse_sample(text: str, where: str) -> tuple[int, int]:
    """``(roots, seed)`` of ``N`` or ``N:SEED`` (seed 0 by default); an ``InputError``
    ``SOM-OPTION-VALUE`` naming ``where`` otherwise."""
    match = re.fullmatch(r"([0-9]{1,9})(?::([0-9]{1,18}))?", str(text))
    shown = str(text) if len(str(text)) <= 40 else str(text)[:37] + "..."
    if match is None or int(match.group(1)) < 1:
        raise InputError(
            "SOM-OPTION-VALUE",
            f"sample {shown!r} is not N or N:SEED (N: 1 to 9 ASCII digits, at least 1 root; "
            "SEED: 1 to 18 ASCII digits)",
            "e.g. --sommelier-sample 20:7",
            where=where,
        )
    return int(match.group(1)), int(match.group(2) or 0)


def sample_split(split: FormattedSplit, roots: int, seed: int) -> FormattedSplit:
    """The sample of ``roots`` roots (and their translations) of ``split`` drawn with
    ``seed`` (module docstring); ``split`` itself when the sample would be all of it."""
    if isinstance(roots, bool) or not isinstance(roots, int) or roots < 1:
        raise InputError(
            "SOM-OPTION-VALUE",
            f"a sample of {roots!r} roots: give a whole number >= 1",
            "e.g. max_examples=20",
            where="sample",
        )
    names = list(split.slices)
    reference = split.slices[names[0]] if names else ()
    if roots >= len(reference):
        return split
    chosen = {reference[i].example_id for i in sample_positions(len(reference), roots, seed)}

    def kept(example_id: str, source: str | None, language: str) -> bool:
        return example_id in chosen if language == names[0] else source in chosen

    slices = {
        name: tuple(e for e in rows if kept(e.example_id, e.source_example_id, name))
        for name, rows in split.slices.items()
    }
    ids = {e.example_id for rows in slices.values() for e in rows}
    examples = tuple(e for e in split.examples if e.example_id in ids)
    lines = split.raw.splitlines(keepends=True)
    raw = b"".join(lines[e.line - 1] for e in sorted(examples, key=lambda e: e.line))
    by_id = {e.example_id: e for e in examples}
    pairs = {
        target: tuple((r, t) for r, t in rows if r in by_id and t in by_id)
        for target, rows in split.pairs.items()
    }
    return replace(
        split,
        sha256=sha256_bytes(raw),
        raw=raw,
        examples=examples,
        slices=slices,
        prompt_set_sha256={name: prompt_set_sha256(rows) for name, rows in slices.items()},
        pairs=pairs,
        pair_set_sha256={
            target: pair_set_sha256(
                (r, by_id[r].prompt_sha256, t, by_id[t].prompt_sha256) for r, t in rows
            )
            for target, rows in pairs.items()
        },
        sample={
            "roots": len(chosen),
            "seed": seed,
            "of_roots": len(reference),
            "of_sha256": split.sha256,
        },
    )


def whole_split_note(split: FormattedSplit, roots: int, option: str) -> str | None:
    """What a run says when a sample of ``roots`` is all of ``split`` (``sample_split`` then
    returns the split itself: no sample is recorded, and the run compares as the full suite),
    else None."""
    names = list(split.slices)
    available = len(split.slices[names[0]]) if names else 0
    if roots < available:
        return None
    return (
        f"sample: {option} {roots} is at least the split's {available} roots: the whole split "
        "is evaluated, not a sample (the run is the full suite's)"
    )


__all__ = ["parse_sample", "sample_split", "whole_split_note"]
