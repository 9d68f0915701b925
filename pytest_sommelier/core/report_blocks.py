"""The blocks every report is built of, and one arm's evaluation report (pure functions).

Plain records and report dicts in, JSON-safe dicts out; no I/O, no pytest. The shapes are those
of ``docs/artifacts.md``; the statistics are in ``docs/statistics.md``. The identity gate is in
``core.report_identity``, the comparison report in ``core.report_comparison``.

Invariants kept:

- A report is built only from records that passed the consistency checks: every record names
  an example of its slice, carries that slice's language and the example's ``prompt_sha256``,
  ran with the report's decoding, and appears once. Violations raise ``InvariantError``.
- Records are scored in split order, so ``prompt_set_sha256`` (over the scored examples) is a
  function of *which* examples were scored, never of the order they arrived in.
- Point differences (deltas, gaps) are computed exactly from numerators and denominators and
  rounded once, so a delta that equals a threshold as a decimal compares equal to it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar, cast

import numpy as np

from pytest_sommelier.core import canonical
from pytest_sommelier.core.abstention import abstention_names, expect_counts
from pytest_sommelier.core.acceptable import (
    METRIC_NAME as ACCEPTABLE,
)
from pytest_sommelier.core.acceptable import (
    acceptable_arrays,
    acceptable_metric,
    carries_acceptable,
)
from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.extra_columns import extra_arrays, extra_metrics, extra_names
from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    component_arrays,
    compute_metrics,
    metric_order,
)
from pytest_sommelier.core.misses import LANGUAGE_FLAG, miss_categories, miss_counts
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY
from pytest_sommelier.core.power import power_summary
from pytest_sommelier.core.reasoning import ReasoningRule, parser_block, reasoning_summary
from pytest_sommelier.core.scorers import is_ratio, score_arrays, score_metrics, score_names
from pytest_sommelier.core.stats import (
    check_paired_records,
    derive_seed,
    paired_intervals_arrays,
)
from pytest_sommelier.core.types import (
    Deltas,
    EvaluationReport,
    Example,
    FormattedSplit,
    MarginalGap,
    Metrics,
    MetricValue,
    MissCounts,
    PairedIntervals,
    PairedSlice,
    PowerBlock,
    ScoringRecord,
    SliceBlock,
    StatisticsConfig,
)
from pytest_sommelier.errors import InvariantError
from pytest_sommelier.version import VERSION

EVALUATION_SCHEMA = "sommelier.evaluation_report.v1"
MARGINAL_COHORT = "marginal_full_slices"

MISSING = object()
"""A field a report does not have (told apart from a null one)."""
_SHORT = 40

Records = Sequence[ScoringRecord]
Row = TypeVar("Row", bound=Mapping[str, Any])
Clusters = Mapping[str, Hashable] | None
"""Example id -> cluster key (``core.clusters.example_clusters``); None: every example alone."""


# --- helpers -------------------------------------------------------------------------------


def metric_difference(target: MetricValue, reference: MetricValue) -> float | None:
    """``target - reference`` for two ``{value, numerator, denominator}`` metric values.

    Exact rational difference rounded once to float; None when either denominator is 0.
    """
    if not target["denominator"] or not reference["denominator"]:
        return None
    exact = Fraction(target["numerator"], target["denominator"]) - Fraction(
        reference["numerator"], reference["denominator"]
    )
    return float(exact)


def metric_gaps(target: Metrics, reference: Metrics) -> Deltas:
    """Per-metric ``target - reference`` over two ``<metrics>`` blocks, in METRIC_NAMES order,
    then every other metric both blocks have (``acceptable_call_match``, scorers) in
    ``metric_order``."""
    extra = [n for n in metric_order(target) if n not in METRIC_NAMES and n in reference]
    names = [*METRIC_NAMES, *extra]
    return {name: metric_difference(target[name], reference[name]) for name in names}


def _metrics(
    records: Records,
    acceptable: bool,
    scorers: Sequence[str] = (),
    abstention: Sequence[str] = (),
) -> Metrics:
    """The five metrics, plus ``acceptable_call_match`` (apart, after them) when the arm's
    examples carry acceptable values (core.acceptable), then the named abstention metrics
    (core.abstention: present when the arm has abstention examples) and the named scorer
    metrics (core.scorers, from the records' ``scores``)."""
    metrics = compute_metrics(records)
    if acceptable:
        metrics[ACCEPTABLE] = acceptable_metric(records)
    if abstention:
        metrics.update(extra_metrics(records, abstention))
    if scorers:
        metrics.update(score_metrics(records, scorers))
    return metrics


def _miss_block(
    scored: Mapping[str, Records], slices: Sequence[str]
) -> tuple[dict[str, MissCounts], MissCounts]:
    """``misses`` per slice (core.misses; the reference slice is not translated) and overall:
    the slices' counts summed. Invariant: category counts sum to the misses."""
    per_slice = {
        lang: miss_counts(scored[lang], translated=index > 0) for index, lang in enumerate(slices)
    }
    overall: MissCounts = {
        "misses": sum(block["misses"] for block in per_slice.values()),
        "categories": {
            name: sum(block["categories"][name] for block in per_slice.values())
            for name in miss_categories(r for lang in slices for r in scored[lang])
        },
    }
    if len(slices) > 1:
        overall[LANGUAGE_FLAG] = sum(
            block.get(LANGUAGE_FLAG, 0) for block in list(per_slice.values())[1:]
        )
    return per_slice, overall


def unknown_slice(records_by_slice: Mapping[str, object], slices: Sequence[str]) -> str | None:
    """The first (sorted) slice records were given for that is not in ``slices``, or None."""
    return min(set(records_by_slice) - set(slices), default=None)


def _slice_examples(split: FormattedSplit, lang: str) -> tuple[Example, ...]:
    """The split's examples of one configured slice (an unknown slice is an invariant error)."""
    if lang not in split.slices:
        raise InvariantError(
            "SOM-REPORT-UNKNOWN-SLICE",
            f"slice {lang!r} is not a slice of the formatted split",
            "build reports with the slices the split was loaded with",
        )
    return tuple(split.slices[lang])


def order_slice_records(
    split: FormattedSplit,
    lang: str,
    records: Iterable[Row],
    decoding: Mapping[str, Any],
) -> list[Row]:
    """Check one slice's scoring records against the split and return them in split order.

    Each record must name an example of slice ``lang`` once (an ``example_id`` that is not a
    string names none), carry ``language == lang``, the example's ``prompt_sha256`` and
    exactly ``decoding``; otherwise ``InvariantError`` naming the example. Missing examples
    are allowed (the report is then incomplete).
    """
    examples = _slice_examples(split, lang)
    position = {example.example_id: i for i, example in enumerate(examples)}
    placed: dict[int, Row] = {}
    for record in records:
        example_id = record.get("example_id")
        where = f"slice {lang}, example {example_id}"
        index = position.get(example_id) if isinstance(example_id, str) else None
        if index is None:
            raise InvariantError(
                "SOM-REPORT-UNKNOWN-EXAMPLE",
                f"generation names an example that is not in slice {lang!r} of the split",
                "re-generate against the current split; stored generations must match it",
                where=where,
            )
        if index in placed:
            raise InvariantError(
                "SOM-REPORT-DUPLICATE-EXAMPLE",
                "more than one generation for this example",
                "each example is generated once per arm",
                where=where,
            )
        _check_record_fields(record, examples[index], lang, decoding, where)
        placed[index] = cast(Row, dict(record))
    return [placed[i] for i in sorted(placed)]


def _check_record_fields(
    record: Mapping[str, Any], example: Example, lang: str, decoding: Mapping[str, Any], where: str
) -> None:
    """Refuse a record whose language, prompt digest or decoding disagrees with the run."""
    if record.get("language") != lang:
        raise InvariantError(
            "SOM-REPORT-LANGUAGE",
            f"generation has language {record.get('language')!r}, the slice is {lang!r}",
            "generations must carry their slice's language",
            where=where,
        )
    if record.get("prompt_sha256") != example.prompt_sha256:
        raise InvariantError(
            "SOM-REPORT-PROMPT-DIGEST",
            f"generation prompt_sha256 {short_text(record.get('prompt_sha256'))} != the split's "
            f"{short_text(example.prompt_sha256)}",
            "the prompt was edited or the split reordered; re-generate this arm",
            where=where,
        )
    if not same_json(record.get("decoding"), decoding):
        raise InvariantError(
            "SOM-REPORT-DECODING-MIX",
            f"generation ran with decoding {short_text(record.get('decoding'))}, the report's is "
            f"{short_text(dict(decoding))}",
            "records of one report must share one decoding config; re-generate",
            where=where,
        )


def same_json(left: Any, right: Any) -> bool:
    """JSON equality with types kept (``1`` is not ``1.0``, ``true`` is not ``1``)."""
    try:
        return canonical.canonical_json_text(left) == canonical.canonical_json_text(right)
    except (TypeError, ValueError):
        return bool(left == right)


def short_text(value: Any) -> str:
    """A one-line rendering of ``value`` cut to about 40 characters (for error messages)."""
    if value is MISSING:
        return "<missing>"
    text = value if isinstance(value, str) else canonical.canonical_json_text(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


# --- interval and power blocks -----------------------------------------------------------


Matrices = tuple[Any, Any, Any, Any]
"""``(ref_num, ref_den, cand_num, cand_den)`` component arrays, one row per pair."""


def record_clusters(records: Records, clusters: Clusters) -> list[Hashable] | None:
    """The cluster key of each record (by its example id), or None without clusters."""
    if clusters is None:
        return None
    return [clusters.get(record["example_id"]) for record in records]


def comparison_arrays(
    ref_records: Records, cand_records: Records, acceptable: bool
) -> tuple[Matrices, tuple[str, ...]]:
    """Both sides' component arrays and their metric names: the five, then
    ``acceptable_call_match`` as a sixth column when the arms carry it, then the abstention
    metrics the records hold examples for (core.abstention), then the scorer metrics the
    records carry (core.scorers)."""
    scorers = score_names([*ref_records, *cand_records])
    abstention = extra_names([*ref_records, *cand_records])
    sides: list[Any] = []
    for records in (ref_records, cand_records):
        num, den = component_arrays(list(records))
        if acceptable:
            extra_num, extra_den = acceptable_arrays(list(records))
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        if abstention:
            extra_num, extra_den = extra_arrays(list(records), abstention)
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        if scorers:
            extra_num, extra_den = score_arrays(list(records), scorers)
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        sides += [num, den]
    names = (*METRIC_NAMES, ACCEPTABLE) if acceptable else tuple(METRIC_NAMES)
    return (sides[0], sides[1], sides[2], sides[3]), (*names, *abstention, *scorers)


def interval_block(
    matrices: Matrices,
    statistics: StatisticsConfig,
    *,
    label: str,
    clusters: Sequence[Hashable] | None,
    metric_names: Sequence[str],
    confidence_level: float | None = None,
    null: float = 0.0,
    include_bootstrap: bool = True,
) -> dict[str, Any]:
    """The ``intervals`` block the suite's ``[statistics] interval`` selects, seed
    ``derive_seed(seed, label)``, at the suite's level unless ``confidence_level`` is given;
    with ``include_bootstrap`` also ``bootstrap``, the seed's ``ci95`` block, from the same
    draw (so writing both costs about one bootstrap)."""
    return paired_intervals_arrays(
        *matrices,
        seed=derive_seed(statistics.seed, label),
        resamples=statistics.resamples,
        confidence_level=(
            statistics.confidence_level if confidence_level is None else confidence_level
        ),
        clusters=clusters,
        interval=statistics.interval,
        include_bootstrap=include_bootstrap,
        metric_names=metric_names,
        null=null,
    )


def comparison_interval_block(
    ref_records: Records,
    cand_records: Records,
    statistics: StatisticsConfig,
    *,
    label: str,
    clusters: Clusters,
    acceptable: bool,
    confidence_level: float | None = None,
    null: float = 0.0,
    include_bootstrap: bool = True,
) -> dict[str, Any]:
    """:func:`interval_block` over two paired record lists (checked: same ids, same order)."""
    check_paired_records(ref_records, cand_records)
    matrices, names = comparison_arrays(ref_records, cand_records, acceptable)
    return interval_block(
        matrices, statistics, label=label, clusters=record_clusters(ref_records, clusters),
        metric_names=names, confidence_level=confidence_level, null=null,
        include_bootstrap=include_bootstrap,
    )  # fmt: skip


def power_block(
    block: Mapping[str, Any],
    clusters: Sequence[Hashable] | None,
    statistics: StatisticsConfig,
    counted: Mapping[str, Sequence[bool]] | None = None,
) -> PowerBlock:
    """``power``: per rate metric, what the pairs can detect at the suite's power and the
    block's level (core.power.power_summary, with the interval's design effect and clusters).
    ``counted`` names, per metric, the pairs it counts (default: all)."""
    out: PowerBlock = {}
    for metric, entry in block["intervals"].items():
        if is_ratio(metric):
            continue
        mask = list(counted[metric]) if counted and metric in counted else None
        pairs = block["pairs"] if mask is None else sum(mask)
        if mask is None:
            cluster_count = block["clusters"]
        elif clusters is None:
            cluster_count = pairs
        else:
            keys = [k for k, m in zip(clusters, mask, strict=True) if m]
            cluster_count = len({("own", i) if k is None else k for i, k in enumerate(keys)})
        discordant = entry["discordant"]
        out[metric] = cast(Any, power_summary(
            discordant["candidate_only"], discordant["reference_only"], pairs,
            clusters=cluster_count, design_effect=max(1.0, entry.get("design_effect") or 1.0),
            confidence_level=block["confidence_level"], power=statistics.power,
            effect=statistics.effect,
        ))  # fmt: skip
    return out


def counted_pairs(matrices: Matrices, names: Sequence[str]) -> dict[str, list[bool]]:
    """Per metric, the pairs it counts (a denominator above 0 on either side)."""
    ref_den, cand_den = np.asarray(matrices[1]), np.asarray(matrices[3])
    return {
        name: [bool(x) for x in (ref_den[:, j] > 0) | (cand_den[:, j] > 0)]
        for j, name in enumerate(names)
    }


# --- evaluation report ---------------------------------------------------------------------


def gap_cohort(
    split: FormattedSplit, reference_slice: str, lang: str, scored: Mapping[str, Records]
) -> list[tuple[ScoringRecord, ScoringRecord]]:
    """The matched cohort of one target slice: ``split.pairs[lang]`` restricted to the pairs
    whose root and target were both scored, in target split order, as (root, target) records."""
    roots_by_id = {r["example_id"]: r for r in scored[reference_slice]}
    targets_by_id = {r["example_id"]: r for r in scored[lang]}
    return [
        (roots_by_id[root_id], targets_by_id[target_id])
        for root_id, target_id in split.pairs.get(lang, ())
        if root_id in roots_by_id and target_id in targets_by_id
    ]


def gap_label(arm: str, lang: str) -> str:
    """The seed name of an arm's matched language gap."""
    return f"gap:{arm}:{lang}"


def gap_interval_block(
    cohort: Sequence[tuple[ScoringRecord, ScoringRecord]],
    arm: str,
    lang: str,
    statistics: StatisticsConfig,
    clusters: Clusters,
    *,
    confidence_level: float | None = None,
    null: float = 0.0,
    include_bootstrap: bool = True,
) -> dict[str, Any]:
    """The gap intervals of one cohort (translation minus root, paired by root): a pair's
    cluster is its root's, so root clustering leaves pairs alone and a declared ``cluster_id``
    groups them."""
    roots = [root for root, _ in cohort]
    targets = [target for _, target in cohort]
    scorers = score_names([*roots, *targets])
    abstention = extra_names([*roots, *targets])
    sides: list[Any] = []
    for records in (roots, targets):
        num, den = component_arrays(records)
        if abstention:
            extra_num, extra_den = extra_arrays(records, abstention)
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        if scorers:
            extra_num, extra_den = score_arrays(records, scorers)
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        sides += [num, den]
    return interval_block(
        (sides[0], sides[1], sides[2], sides[3]),
        statistics,
        label=gap_label(arm, lang),
        clusters=record_clusters(roots, clusters),
        metric_names=(*METRIC_NAMES, *abstention, *scorers),
        confidence_level=confidence_level,
        null=null,
        include_bootstrap=include_bootstrap,
    )


def _paired_slice(
    split: FormattedSplit,
    arm: str,
    reference_slice: str,
    lang: str,
    scored: Mapping[str, Records],
    statistics: StatisticsConfig,
    clusters: Clusters,
) -> PairedSlice:
    """The matched-cohort block of one target slice (``paired_slices.<lang>``).

    The cohort is ``split.pairs[lang]`` restricted to pairs whose root and target were both
    scored, in target split order; coverage is pairs over the reference slice's size in the
    split; ``ci95`` resamples pairs with seed ``derive_seed(seed, "gap:<arm>:<lang>")`` and
    ``intervals`` (the selected method) comes from the same draw.
    """
    cohort = gap_cohort(split, reference_slice, lang, scored)
    roots = [root for root, _ in cohort]
    targets = [target for _, target in cohort]
    reference_size = len(_slice_examples(split, reference_slice))
    scorers = score_names([*roots, *targets])
    abstention = extra_names([*roots, *targets])
    reference_metrics = _metrics(roots, False, scorers, abstention)
    target_metrics = _metrics(targets, False, scorers, abstention)
    block = gap_interval_block(cohort, arm, lang, statistics, clusters)
    ci95 = block.pop("bootstrap")
    return {
        "reference_slice": reference_slice,
        "pairs": len(cohort),
        "coverage": len(cohort) / reference_size if reference_size else None,
        "pair_set_sha256": canonical.pair_set_sha256(
            (r["example_id"], r["prompt_sha256"], t["example_id"], t["prompt_sha256"])
            for r, t in cohort
        ),
        "reference_metrics": reference_metrics,
        "target_metrics": target_metrics,
        "gaps": metric_gaps(target_metrics, reference_metrics),
        "ci95": ci95,
        "intervals": cast(PairedIntervals, block),
        "power": power_block(
            block,
            record_clusters(roots, clusters),
            statistics,
            counted_pairs(*comparison_arrays(roots, targets, False)) if abstention else None,
        ),
    }


def _marginal_gap(
    reference_slice: str, lang: str, slice_blocks: Mapping[str, SliceBlock]
) -> MarginalGap:
    """The descriptive full-slice gap of one target slice (``language_gaps.<lang>``)."""
    return {
        "cohort": MARGINAL_COHORT,
        "reference_slice": reference_slice,
        "reference_examples": slice_blocks[reference_slice]["examples"],
        "target_examples": slice_blocks[lang]["examples"],
        "gaps": metric_gaps(
            slice_blocks[lang]["metrics"], slice_blocks[reference_slice]["metrics"]
        ),
    }


def build_evaluation_report(
    *,
    run_id: str,
    arm: str,
    model_kind: str,
    model_identity: dict[str, Any] | None,
    adapter_identity: dict[str, Any] | None,
    config_sha256: str,
    split: FormattedSplit,
    slices: Sequence[str],
    parser_version: str,
    decoding: Mapping[str, Any],
    records_by_slice: Mapping[str, Iterable[ScoringRecord]],
    statistics: StatisticsConfig,
    generation_artifacts: Mapping[str, str],
    complete: bool,
    ordered: bool = False,
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    scorers: Sequence[Mapping[str, str]] = (),
    reasoning: ReasoningRule = None,
    template_kwargs: Mapping[str, Any] | None = None,
) -> EvaluationReport:
    """Build one arm's ``evaluation_report.json`` dict from its scoring records.

    ``slices`` is the configured order (the first is the reference language); records are
    checked and put in split order per slice. ``complete`` in the result is the caller's flag
    AND "every example of every configured slice was scored". Adds ``slice_order`` (the
    configured slice order) to the documented fields. ``ordered=True`` says the records were
    already checked and put in split order by ``order_slice_records`` (the pipeline does it
    once, in ``order_records``): they are then not checked again. ``parser_version`` and
    ``arguments_key`` together are the parser's identity (``core.parse.parser_identity``).
    ``scorers`` (``core.scorers.scorer_identity``: names, versions, kinds) is recorded as the
    report's ``scorers`` when there are any (an identity field; absent without scorers).
    """
    slices = tuple(slices)
    unknown = unknown_slice(records_by_slice, slices)
    if unknown is not None:
        raise InvariantError(
            "SOM-REPORT-UNKNOWN-SLICE",
            f"records given for slice {unknown!r}, which is not configured",
            "pass records only for the suite's configured slices",
        )
    scored = {
        lang: list(records_by_slice.get(lang, ()))
        if ordered
        else order_slice_records(split, lang, records_by_slice.get(lang, ()), decoding)
        for lang in slices
    }
    acceptable = carries_acceptable(r for lang in slices for r in scored[lang])
    score_columns = score_names(r for lang in slices for r in scored[lang])
    abstention = extra_names(r for lang in slices for r in scored[lang])
    slice_misses, overall_misses = _miss_block(scored, slices)
    slice_blocks: dict[str, SliceBlock] = {
        lang: {
            "metrics": _metrics(scored[lang], acceptable, score_columns, abstention),
            "misses": slice_misses[lang],
            "examples": len(scored[lang]),
            "prompt_set_sha256": canonical.prompt_set_sha256(scored[lang]),
            "generation_artifact": _artifact(generation_artifacts, lang),
        }
        for lang in slices
    }
    if abstention_names(r for lang in slices for r in scored[lang]):
        for lang in slices:
            slice_blocks[lang]["expects"] = expect_counts(scored[lang])
    reference_slice, targets = slices[0], slices[1:]
    clusters = example_clusters(split.examples, statistics.cluster)
    all_scored = all(len(scored[lang]) == len(_slice_examples(split, lang)) for lang in slices)
    report: EvaluationReport = {
        "schema_version": EVALUATION_SCHEMA,
        "run_id": run_id,
        "plugin_version": VERSION,
        "arm": arm,
        "model_kind": model_kind,
        "model_identity": model_identity,
        "adapter_identity": adapter_identity,
        "config_sha256": config_sha256,
        "split": split.split,
        "test_split_sha256": split.sha256,
        "parser_version": parser_version,
        "arguments_key": arguments_key,
        "decoding": dict(decoding),
        "slice_order": list(slices),
        "slices": slice_blocks,
        "paired_slices": {
            lang: _paired_slice(split, arm, reference_slice, lang, scored, statistics, clusters)
            for lang in targets
        },
        "language_gaps": {
            lang: _marginal_gap(reference_slice, lang, slice_blocks) for lang in targets
        },
        "metrics": _metrics(
            [r for lang in slices for r in scored[lang]], acceptable, score_columns, abstention
        ),
        "misses": overall_misses,
        "complete": bool(complete) and all_scored,
    }
    if scorers:
        report["scorers"] = [dict(entry) for entry in scorers]
    report["parser"] = parser_block(parser_version, reasoning)
    if reasoning is not None:
        report["reasoning"] = {
            **reasoning_summary(r for lang in slices for r in scored[lang]),
            "slices": {lang: reasoning_summary(scored[lang]) for lang in slices},
        }
    if template_kwargs:
        report["template_kwargs"] = dict(template_kwargs)
    return report


def _artifact(generation_artifacts: Mapping[str, str], lang: str) -> str:
    """The run-relative generation artifact path of a slice (required for every slice)."""
    path = generation_artifacts.get(lang)
    if not isinstance(path, str):
        raise InvariantError(
            "SOM-REPORT-ARTIFACT",
            f"no generation artifact path for slice {lang!r}",
            "pass generation_artifacts with one run-relative path per configured slice",
        )
    return path
