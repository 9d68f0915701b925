"""Comparison reports (pure): candidate minus reference over two arms the identity gate
accepted, with their intervals, power, McNemar test, efficiency and misses.

Invariant kept: a comparison report exists only after
:func:`~pytest_sommelier.core.report_identity.check_identity` accepted both arms; each arm's
records are checked against its report and paired by example first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple, cast

from pytest_sommelier.core import canonical
from pytest_sommelier.core.abstention import EXPECT_CALL, expect_of
from pytest_sommelier.core.acceptable import (
    METRIC_NAME as ACCEPTABLE,
)
from pytest_sommelier.core.metrics import FULL_CALL_EXACT_MATCH
from pytest_sommelier.core.proportions import mcnemar_mid_p
from pytest_sommelier.core.report_blocks import (
    MARGINAL_COHORT,
    Clusters,
    Records,
    comparison_arrays,
    counted_pairs,
    interval_block,
    metric_gaps,
    power_block,
    record_clusters,
    same_json,
    short_text,
    unknown_slice,
)
from pytest_sommelier.core.report_identity import check_identity
from pytest_sommelier.core.stats import (
    check_paired_records,
    mcnemar_exact,
)
from pytest_sommelier.core.types import (
    ArmEfficiency,
    ComparisonReport,
    Efficiency,
    EvaluationReport,
    IntervalBlock,
    McNemar,
    PairedIntervals,
    PowerBlock,
    ScoringRecord,
    StatisticsConfig,
    Telemetry,
)
from pytest_sommelier.errors import InvariantError

COMPARISON_SCHEMA = "sommelier.comparison_report.v1"
SUCCESS_METRIC = FULL_CALL_EXACT_MATCH
TELEMETRY_MATCH_FIELDS = ("batch_size", "concurrency", "device", "device_count", "boundary")

IDENTICAL_WARN_FRACTION = 0.9
"""An adapter-vs-base comparison whose candidate outputs equal the reference's on every example,
or on more than this fraction of them, is flagged in the terminal ("adapter had no effect")."""


def _checked_arm_records(
    report: EvaluationReport, records_by_slice: Mapping[str, Records], langs: Sequence[str]
) -> dict[str, list[ScoringRecord]]:
    """An arm's records per slice, checked to be exactly the examples its report scored.

    The ordered ``[example_id, prompt_sha256]`` digest of each slice's records must equal the
    report's ``prompt_set_sha256`` (so ids, prompts and order all match the report).
    """
    arm = report.get("arm")
    unknown = unknown_slice(records_by_slice, langs)
    if unknown is not None:
        raise InvariantError(
            "SOM-COMPARE-RECORDS",
            f"records of arm {arm!r} given for slice {unknown!r}, which is not compared",
            "pass records only for the reports' slices",
        )
    checked: dict[str, list[ScoringRecord]] = {}
    for lang in langs:
        records = list(records_by_slice.get(lang, ()))
        if canonical.prompt_set_sha256(records) != report["slices"][lang]["prompt_set_sha256"]:
            raise InvariantError(
                "SOM-COMPARE-RECORDS",
                f"records of arm {arm!r} slice {lang!r} ({len(records)} records) are not the "
                "examples its report scored, in split order",
                "pass the records the report was built from (generations.<slice>.jsonl)",
                where=f"{arm}/{lang}",
            )
        checked[lang] = records
    return checked


def _arm_efficiency(report: EvaluationReport, telemetry: Telemetry | None) -> ArmEfficiency:
    """``{seconds_per_example, device_seconds_per_success, device_count}`` of one arm.

    ``device_seconds_per_success`` is ``total_seconds * device_count / successes`` and is
    None when there is no telemetry, no success, or any example was not timed (cached).
    """
    if telemetry is None:
        return {
            "seconds_per_example": None,
            "device_seconds_per_success": None,
            "device_count": None,
        }
    successes = report["metrics"][SUCCESS_METRIC]["numerator"]
    total = telemetry.get("total_seconds")
    device_count = telemetry.get("device_count")
    examples = telemetry.get("examples") or 0
    fully_timed = examples > 0 and telemetry.get("timed_examples") == examples
    per_success = None
    if fully_timed and total is not None and device_count and successes > 0:
        per_success = total * device_count / successes
    return {
        "seconds_per_example": telemetry.get("seconds_per_example"),
        "device_seconds_per_success": per_success,
        "device_count": device_count,
    }


def _comparability(
    arms: Sequence[tuple[str, EvaluationReport]], telemetry: Mapping[str, Telemetry]
) -> list[str]:
    """Why two arms' timings are not comparable (empty list: they are)."""
    reasons = [f"no telemetry for arm {arm!r}" for arm, _ in arms if arm not in telemetry]
    if reasons:
        return reasons
    (cand, cand_report), (ref, ref_report) = arms
    for name in (*TELEMETRY_MATCH_FIELDS, "schema_version"):
        left, right = telemetry[cand].get(name), telemetry[ref].get(name)
        if not same_json(left, right):
            reasons.append(f"{name} differs ({short_text(left)} vs {short_text(right)})")
    if not same_json(cand_report.get("decoding"), ref_report.get("decoding")):
        reasons.append("decoding differs")
    for arm, _ in arms:
        cached = telemetry[arm].get("cached_examples") or 0
        if cached:
            reasons.append(f"arm {arm!r} has {cached} cached (untimed) examples")
    return reasons


def efficiency_block(
    candidate_report: EvaluationReport,
    reference_report: EvaluationReport,
    telemetry: Mapping[str, Telemetry] | None,
) -> Efficiency:
    """The comparison's ``efficiency`` block: per-arm figures plus cross-comparability.

    ``cross_comparable`` is True only when both arms have telemetry, none of their examples
    came from the cache, and batch_size, concurrency, device, device_count, decoding, the
    telemetry boundary and schema all match; ``reason`` says which did not.
    """
    telemetry = telemetry or {}
    arms = [
        (candidate_report["arm"], candidate_report),
        (reference_report["arm"], reference_report),
    ]
    block: Efficiency = {arm: _arm_efficiency(report, telemetry.get(arm)) for arm, report in arms}
    reasons = _comparability(arms, telemetry)
    block["cross_comparable"] = not reasons
    block["reason"] = "; ".join(reasons) or (
        "batch_size, concurrency, device, device_count, decoding and telemetry boundary match"
    )
    return block


class PairedPart(NamedTuple):
    """One block of a comparison (overall, or one slice): what candidate minus reference shows
    over paired records."""

    ci95: IntervalBlock  # the seed's percentile bootstrap over examples
    intervals: PairedIntervals  # what ``[statistics] interval`` selects, over clusters
    power: PowerBlock | None  # what the pairs can detect (None: not asked for)
    mcnemar: McNemar
    identical_outputs: int
    compared_examples: int


def paired_part(
    ref_records: Records,
    cand_records: Records,
    statistics: StatisticsConfig,
    label: str,
    clusters: Clusters,
    *,
    acceptable: bool,
    power: bool = True,
    mid_p: bool = True,
) -> PairedPart:
    """The one builder of a comparison block over paired records, for a comparison of two arms
    of a run (:func:`build_comparison_report`) and of a run with a stored run
    (``core.stored_comparison``) alike: the records checked to pair by example, the intervals
    and the bootstrap ``ci95`` from one draw (seed ``derive_seed(seed, label)``), the power
    block (``power``), McNemar's exact test (with its mid-p value: ``mid_p``) and the count of
    byte-identical outputs. ``acceptable`` adds ``acceptable_call_match`` over the pairs it
    counts."""
    check_paired_records(ref_records, cand_records)
    matrices, names = comparison_arrays(ref_records, cand_records, acceptable)
    keys = record_clusters(ref_records, clusters)
    block = interval_block(matrices, statistics, label=label, clusters=keys, metric_names=names)
    ci95 = cast(IntervalBlock, block.pop("bootstrap"))
    partial = acceptable or any(expect_of(r) != EXPECT_CALL for r in ref_records)
    counted = counted_pairs(matrices, names) if partial else None
    return PairedPart(
        ci95=ci95,
        intervals=cast(PairedIntervals, block),
        power=power_block(block, keys, statistics, counted) if power else None,
        mcnemar=mcnemar_block(ref_records, cand_records) if mid_p else mcnemar_exact(
            ref_records, cand_records
        ),
        identical_outputs=identical_outputs(ref_records, cand_records),
        compared_examples=len(cand_records),
    )


def mcnemar_block(ref_records: Records, cand_records: Records) -> McNemar:
    """McNemar's exact test on full_call_exact_match with the mid-p value beside it."""
    exact = mcnemar_exact(ref_records, cand_records)
    exact["mid_p_value"] = mcnemar_mid_p(exact["candidate_only"], exact["reference_only"])
    return exact


def identical_outputs(reference_records: Records, candidate_records: Records) -> int:
    """How many paired examples have byte-identical ``raw_text`` (records already paired)."""
    return sum(
        ref.get("raw_text") == cand.get("raw_text")
        for ref, cand in zip(reference_records, candidate_records, strict=True)
    )


def adapter_had_no_effect(
    report: ComparisonReport, candidate_kind: str | None, reference_kind: str | None
) -> bool:
    """An adapter arm compared with a base arm whose outputs are identical on every example, or
    on more than ``IDENTICAL_WARN_FRACTION`` of them (was the adapter loaded at all?)."""
    n, same = report.get("compared_examples"), report.get("identical_outputs")
    if candidate_kind != "adapter" or reference_kind != "base" or not n or same is None:
        return False
    return same == n or same / n > IDENTICAL_WARN_FRACTION


def build_comparison_report(
    candidate_report: EvaluationReport,
    reference_report: EvaluationReport,
    candidate_records_by_slice: Mapping[str, Records],
    reference_records_by_slice: Mapping[str, Records],
    statistics: StatisticsConfig,
    *,
    telemetry: Mapping[str, Telemetry] | None = None,
    clusters: Clusters = None,
) -> ComparisonReport:
    """Build ``report/<candidate>-vs-<reference>.json`` (candidate minus reference).

    Runs :func:`check_identity` first (refusal: ``EvaluationError``), then checks each arm's
    records against its report and pairs them by example (``InvariantError`` otherwise).
    Overall records are the slices concatenated in configured order. Seeds:
    ``derive_seed(seed, name)`` overall, ``derive_seed(seed, f"{name}:{lang}")`` per slice.
    ``clusters`` maps example ids to cluster keys (``core.clusters.example_clusters`` of the
    split; None: every example alone): the ``intervals`` and ``power`` blocks use them, the
    ``ci95`` block (the seed's bootstrap over examples) never does.
    """
    shared = check_identity(candidate_report, reference_report)
    cand_arm, ref_arm = candidate_report["arm"], reference_report["arm"]
    name = f"{cand_arm}-vs-{ref_arm}"
    langs = shared["slices"]
    cand = _checked_arm_records(candidate_report, candidate_records_by_slice, langs)
    ref = _checked_arm_records(reference_report, reference_records_by_slice, langs)
    for lang in langs:
        check_paired_records(ref[lang], cand[lang], where=f"{name}/{lang}")
    cand_all = [r for lang in langs for r in cand[lang]]
    ref_all = [r for lang in langs for r in ref[lang]]

    acceptable = ACCEPTABLE in candidate_report["metrics"]
    overall = paired_part(ref_all, cand_all, statistics, name, clusters, acceptable=acceptable)
    per_slice = {
        lang: paired_part(ref[lang], cand[lang], statistics, f"{name}:{lang}", clusters,
                          acceptable=acceptable)
        for lang in langs
    }  # fmt: skip
    result: ComparisonReport = {
        "schema_version": COMPARISON_SCHEMA,
        "name": name,
        "candidate": cand_arm,
        "reference": ref_arm,
        "shared": shared,
        "identical_outputs": overall.identical_outputs,
        "compared_examples": overall.compared_examples,
        "deltas": metric_gaps(candidate_report["metrics"], reference_report["metrics"]),
        "ci95": overall.ci95,
        "intervals": overall.intervals,
        "power": cast(PowerBlock, overall.power),
        "mcnemar": overall.mcnemar,
        "slices": {
            lang: {
                "deltas": metric_gaps(
                    candidate_report["slices"][lang]["metrics"],
                    reference_report["slices"][lang]["metrics"],
                ),
                "ci95": per_slice[lang].ci95,
                "intervals": per_slice[lang].intervals,
                "power": cast(PowerBlock, per_slice[lang].power),
                "identical_outputs": per_slice[lang].identical_outputs,
                "compared_examples": per_slice[lang].compared_examples,
            }
            for lang in langs
        },
        "paired_language_gaps": {
            cand_arm: candidate_report["paired_slices"],
            ref_arm: reference_report["paired_slices"],
        },
        "language_gaps": {
            "cohort": MARGINAL_COHORT,
            "arms": {
                cand_arm: candidate_report["language_gaps"],
                ref_arm: reference_report["language_gaps"],
            },
        },
        "efficiency": efficiency_block(candidate_report, reference_report, telemetry),
        "misses": {
            arm: {
                "slices": {lang: report["slices"][lang].get("misses") for lang in langs},
                "overall": report.get("misses"),
            }
            for arm, report in ((cand_arm, candidate_report), (ref_arm, reference_report))
            if report.get("misses") is not None
        },
    }
    reasoning = {  # [parser] reasoning: each arm's reasoning figures (core.reasoning)
        arm: report["reasoning"]
        for arm, report in ((cand_arm, candidate_report), (ref_arm, reference_report))
        if isinstance(report.get("reasoning"), Mapping)
    }
    if reasoning:
        result["reasoning"] = reasoning
    return result
