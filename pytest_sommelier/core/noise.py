"""The noise floor: how much of an adapter-minus-base discordance the engine makes by itself.

Greedy decoding is not batch-invariant on every device: the same prompt can give other tokens
in another batch. With ``[statistics] noise_floor = N`` the run regenerates ``N`` seeded
examples of each comparison's reference arm once more, one at a time (batch size 1) in
another order, on the same engine with the same decoding, and the comparison report records
how many of those outputs differ from the run's and how many full-call outcomes flip
(:func:`noise_floor_block`). ``sommelier parity RUN_DIR --rebatch`` measures the same on a
stored run.

Pure functions: the sample is a function of the example ids and the seed only
(:func:`noise_sample`, the one sampling rule parity uses too), so every process, every
``-k`` selection and every rerun picks the same examples.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_sommelier.core.metrics import full_call_hit
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.types import (
    ComparisonConfig,
    ComparisonReport,
    NoiseDiff,
    NoiseFloor,
    RebatchedOutput,
    ScoringRecord,
)

METHOD = (
    "regenerated one at a time (batch size 1), in reverse batch order, same engine and decoding"
)
SHOWN = 10
"""How many differing examples a noise-floor block lists."""
SNIPPET = 160


def noise_sample(example_ids: Iterable[str], count: int, seed: int) -> set[str]:
    """``count`` example ids drawn with ``random.Random(seed)`` from the sorted ids (all of
    them when ``count`` is at least their number; none when it is 0 or less)."""
    ids = sorted(set(example_ids))
    if count <= 0:
        return set()
    if count >= len(ids):
        return set(ids)
    return set(random.Random(seed).sample(ids, count))


def noise_arms(comparisons: Iterable[ComparisonConfig]) -> tuple[str, ...]:
    """The arms whose noise floor a run measures: every comparison's reference, once each."""
    return tuple(dict.fromkeys(comparison.reference for comparison in comparisons))


def rebatch_order(example_ids: Sequence[str]) -> list[str]:
    """The order a batch's sampled examples are regenerated in: reversed (another order than
    the batch's, so a stateful engine sees other neighbours too)."""
    return list(reversed(example_ids))


def noise_floor_block(
    arm: str,
    reference: Mapping[str, Sequence[ScoringRecord]],
    rebatched: Mapping[str, RebatchedOutput],
    *,
    requested: int,
    seed: int,
    comparison: ComparisonReport,
) -> NoiseFloor:
    """The noise floor of ``arm`` (a comparison's reference) from its scoring records by slice
    and its re-batched outputs by example id; ``comparison`` gives the candidate's discordance
    to state beside it (outputs not byte-identical, and full-call outcomes that differ: the
    McNemar discordant pairs). An example re-batched but not scored (an errored item) is not
    counted."""
    differing: list[NoiseDiff] = []
    examples = flips = differ = 0
    for language, records in reference.items():
        for record in records:
            again = rebatched.get(record["example_id"])
            if again is None:
                continue
            examples += 1
            parsed, status = parse_tool_call(again["raw_text"])
            new: dict[str, Any] = {"parsed_call": parsed, "parse_status": status}
            gold = record["gold_call"]
            flipped = full_call_hit(record, gold) != full_call_hit(new, gold)
            flips += int(flipped)
            if again["raw_text"] == record["raw_text"]:
                continue
            differ += 1
            differing.append(
                {
                    "example_id": record["example_id"],
                    "language": language,
                    "full_call_flips": flipped,
                    "text": record["raw_text"][:SNIPPET],
                    "rebatched_text": again["raw_text"][:SNIPPET],
                }
            )
    mcnemar = comparison.get("mcnemar") or {}
    return {
        "arm": arm,
        "requested": requested,
        "examples": examples,
        "outputs_differ": differ,
        "full_call_flips": flips,
        "seed": seed,
        "method": METHOD,
        "candidate_outputs_differ": int(comparison["compared_examples"])
        - int(comparison["identical_outputs"]),
        "candidate_discordant": int(mcnemar.get("candidate_only", 0))
        + int(mcnemar.get("reference_only", 0)),
        "differing": differing[:SHOWN],
    }


def noise_floor_line(block: NoiseFloor) -> str:
    """The terminal's line for a noise floor: ``noise floor: 0 of 32 base outputs differ when
    re-batched``; when some do, the full-call flips and the candidate's discordance beside."""
    text = (
        f"noise floor: {block['outputs_differ']} of {block['examples']} {block['arm']} outputs "
        "differ when re-batched"
    )
    if block["examples"] < block["requested"]:
        text += f" (of {block['requested']} sampled, {block['examples']} were run)"
    if block["outputs_differ"]:
        text += (
            f", {block['full_call_flips']} full-call outcome(s) flip; the candidate differs "
            f"from it on {block['candidate_outputs_differ']} outputs, "
            f"{block['candidate_discordant']} full-call outcomes"
        )
    return text
