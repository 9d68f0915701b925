"""The noise floor: how much of an adapter-minus-base discordance the engine makes by itself.

Greedy decoding is not batch-invariant on every device: the same prompt can give other tokens
in another batch. With ``[statistics] noise_floor = N`` the run regenerates ``N`` seeded
examples of each comparison's reference arm once more, one at a time (batch size 1) in
another order, on the same engine with the same decoding, and the comparison report records
how many of those outputs differ from the run's and how many full-call outcomes flip
(:func:`noise_floor_block`). ``sommelier parity RUN_DIR --rebatch`` measures the same on a
stored run.

Pure functions: the sample is a function of the example ids and the seed only
(:func:`noise_sample`, by the one seeded draw, ``core.sampling``), so every process, every
``-k`` selection and every rerun picks the same examples.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_sommelier.core.metrics import record_hit
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY
from pytest_sommelier.core.reasoning import ReasoningRule, parse_fields, recorded_split
from pytest_sommelier.core.sampling import sample_positions
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
    """``count`` example ids by the one seeded draw (``core.sampling``) over the sorted ids,
    as ``sommelier parity --sample`` draws them (all of them when ``count`` is at least their
    number; none when it is 0 or less)."""
    ids = sorted(set(example_ids))
    if count <= 0:
        return set()
    return {ids[index] for index in sample_positions(len(ids), count, seed)}


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
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    reasoning: ReasoningRule = None,
) -> NoiseFloor:
    """The noise floor of ``arm`` (a comparison's reference) from its scoring records by slice
    and its re-batched outputs by example id; ``comparison`` gives the candidate's discordance
    to state beside it (outputs not byte-identical, and full-call outcomes that differ: the
    McNemar discordant pairs). A re-batched output is split and parsed as the run's are (the
    suite's ``reasoning`` rule, then the run's parser with the suite's ``arguments_key``). An
    example re-batched but not scored (an errored item) is not counted."""
    differing: list[NoiseDiff] = []
    examples = flips = differ = 0
    for language, records in reference.items():
        for record in records:
            again = rebatched.get(record["example_id"])
            if again is None:
                continue
            examples += 1
            split = recorded_split(dict(again), reasoning)  # the suite's rule, as every output
            version = "v2" if "parsed_calls" in record else "v1"  # the run's parser
            new: dict[str, Any] = parse_fields(split, arguments_key, version)
            flipped = record_hit(record) != record_hit(
                {**record, **new, "raw_text": again["raw_text"]}
            )
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
