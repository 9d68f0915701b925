"""Evaluation reports, language gaps, the identity gate and comparison reports (pure functions).

Plain records and report dicts in, JSON-safe dicts out; no I/O, no pytest. The shapes are those
of ``docs/artifacts.md``; the statistics are in ``docs/statistics.md``.

Invariants kept:

- A report is built only from records that passed the consistency checks: every record names
  an example of its slice, carries that slice's language and the example's ``prompt_sha256``,
  ran with the report's decoding, and appears once. Violations raise ``InvariantError``.
- Records are scored in split order, so ``prompt_set_sha256`` (over the scored examples) is a
  function of *which* examples were scored, never of the order they arrived in.
- Point differences (deltas, gaps) are computed exactly from numerators and denominators and
  rounded once, so a delta that equals a threshold as a decimal compares equal to it.
- A comparison report exists only after :func:`check_identity` accepted both arms.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any, TypeVar, cast

import numpy as np

from pytest_sommelier.core import canonical
from pytest_sommelier.core.acceptable import (
    METRIC_NAME as ACCEPTABLE,
)
from pytest_sommelier.core.acceptable import (
    acceptable_arrays,
    acceptable_metric,
    carries_acceptable,
)
from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.intervals import RATIO_OF_SUMS
from pytest_sommelier.core.metrics import (
    METRIC_NAMES,
    component_arrays,
    compute_metrics,
    metric_order,
)
from pytest_sommelier.core.misses import LANGUAGE_FLAG, MISS_CATEGORIES, miss_counts
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY, recorded_arguments_key
from pytest_sommelier.core.power import power_summary
from pytest_sommelier.core.proportions import mcnemar_mid_p
from pytest_sommelier.core.stats import (
    check_paired_records,
    derive_seed,
    mcnemar_exact,
    paired_intervals_arrays,
)
from pytest_sommelier.core.types import (
    ArmEfficiency,
    ComparisonReport,
    Deltas,
    Efficiency,
    EvaluationReport,
    Example,
    FormattedSplit,
    IntervalBlock,
    MarginalGap,
    McNemar,
    Metrics,
    MetricValue,
    MissCounts,
    PairedIntervals,
    PairedSlice,
    PowerBlock,
    ScoringRecord,
    SharedBlock,
    SliceBlock,
    StatisticsConfig,
    Telemetry,
)
from pytest_sommelier.errors import EvaluationError, InvariantError
from pytest_sommelier.version import VERSION

EVALUATION_SCHEMA = "sommelier.evaluation_report.v1"
COMPARISON_SCHEMA = "sommelier.comparison_report.v1"
MARGINAL_COHORT = "marginal_full_slices"
SUCCESS_METRIC = "full_call_exact_match"
TELEMETRY_MATCH_FIELDS = ("batch_size", "concurrency", "device", "device_count", "boundary")

IDENTICAL_WARN_FRACTION = 0.9
"""An adapter-vs-base comparison whose candidate outputs equal the reference's on every example,
or on more than this fraction of them, is flagged in the terminal ("adapter had no effect")."""

_MISSING = object()
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
    then ``acceptable_call_match`` when both blocks have it."""
    names = [*METRIC_NAMES, *[n for n in (ACCEPTABLE,) if n in target and n in reference]]
    return {name: metric_difference(target[name], reference[name]) for name in names}


def _metrics(records: Records, acceptable: bool) -> Metrics:
    """The five metrics, plus ``acceptable_call_match`` (apart, after them) when the arm's
    examples carry acceptable values (core.acceptable)."""
    metrics = compute_metrics(records)
    if acceptable:
        metrics[ACCEPTABLE] = acceptable_metric(records)
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
            for name in MISS_CATEGORIES
        },
    }
    if len(slices) > 1:
        overall[LANGUAGE_FLAG] = sum(
            block.get(LANGUAGE_FLAG, 0) for block in list(per_slice.values())[1:]
        )
    return per_slice, overall


def _unknown_slice(records_by_slice: Mapping[str, object], slices: Sequence[str]) -> str | None:
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
            f"generation prompt_sha256 {_short(record.get('prompt_sha256'))} != the split's "
            f"{_short(example.prompt_sha256)}",
            "the prompt was edited or the split reordered; re-generate this arm",
            where=where,
        )
    if not _same(record.get("decoding"), decoding):
        raise InvariantError(
            "SOM-REPORT-DECODING-MIX",
            f"generation ran with decoding {_short(record.get('decoding'))}, the report's is "
            f"{_short(dict(decoding))}",
            "records of one report must share one decoding config; re-generate",
            where=where,
        )


def _same(left: Any, right: Any) -> bool:
    """JSON equality with types kept (``1`` is not ``1.0``, ``true`` is not ``1``)."""
    try:
        return canonical.canonical_json_text(left) == canonical.canonical_json_text(right)
    except (TypeError, ValueError):
        return bool(left == right)


def _short(value: Any) -> str:
    """A one-line rendering of ``value`` cut to about 40 characters (for error messages)."""
    if value is _MISSING:
        return "<missing>"
    text = value if isinstance(value, str) else canonical.canonical_json_text(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


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
    ref_num, ref_den = component_arrays(roots)
    tgt_num, tgt_den = component_arrays(targets)
    return interval_block(
        (ref_num, ref_den, tgt_num, tgt_den),
        statistics,
        label=gap_label(arm, lang),
        clusters=record_clusters(roots, clusters),
        metric_names=METRIC_NAMES,
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
    reference_metrics = compute_metrics(roots)
    target_metrics = compute_metrics(targets)
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
        "power": power_block(block, record_clusters(roots, clusters), statistics),
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
) -> EvaluationReport:
    """Build one arm's ``evaluation_report.json`` dict from its scoring records.

    ``slices`` is the configured order (the first is the reference language); records are
    checked and put in split order per slice. ``complete`` in the result is the caller's flag
    AND "every example of every configured slice was scored". Adds ``slice_order`` (the
    configured slice order) to the documented fields. ``ordered=True`` says the records were
    already checked and put in split order by ``order_slice_records`` (the pipeline does it
    once, in ``order_records``): they are then not checked again. ``parser_version`` and
    ``arguments_key`` together are the parser's identity (``core.parse.parser_identity``).
    """
    slices = tuple(slices)
    unknown = _unknown_slice(records_by_slice, slices)
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
    slice_misses, overall_misses = _miss_block(scored, slices)
    slice_blocks: dict[str, SliceBlock] = {
        lang: {
            "metrics": _metrics(scored[lang], acceptable),
            "misses": slice_misses[lang],
            "examples": len(scored[lang]),
            "prompt_set_sha256": canonical.prompt_set_sha256(scored[lang]),
            "generation_artifact": _artifact(generation_artifacts, lang),
        }
        for lang in slices
    }
    reference_slice, targets = slices[0], slices[1:]
    clusters = example_clusters(split.examples, statistics.cluster)
    all_scored = all(len(scored[lang]) == len(_slice_examples(split, lang)) for lang in slices)
    return {
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
        "metrics": _metrics([r for lang in slices for r in scored[lang]], acceptable),
        "misses": overall_misses,
        "complete": bool(complete) and all_scored,
    }


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


# --- identity gate -------------------------------------------------------------------------


def _field(report: Mapping[str, Any], *path: str) -> Any:
    """``report[path[0]][path[1]]...`` or ``_MISSING`` when any step is absent."""
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _identity_fields(report: EvaluationReport) -> list[tuple[str, Any]]:
    """The identity fields of a report, in the order the gate checks them.

    Per-slice fields follow the report's own ``slice_order``; after the slice-set check both
    reports have the same one, so the lists line up.
    """
    order = _field(report, "slice_order")
    langs = list(order) if isinstance(order, list) else []
    metrics = _field(report, "metrics")
    fields: list[tuple[str, Any]] = [
        (name, _field(report, name))
        for name in ("model_identity", "config_sha256", "split", "test_split_sha256")
    ]
    fields.append(("slices", order))
    fields += [
        (f"slices.{lang}.prompt_set_sha256", _field(report, "slices", lang, "prompt_set_sha256"))
        for lang in langs
    ]
    fields += [
        (
            f"paired_slices.{lang}.pair_set_sha256",
            _field(report, "paired_slices", lang, "pair_set_sha256"),
        )
        for lang in langs[1:]
    ]
    fields.append(("parser_version", _field(report, "parser_version")))
    key = recorded_arguments_key(report) or _field(report, "arguments_key")  # unknown: as is
    fields.append(("arguments_key", key))
    fields.append(("decoding", _field(report, "decoding")))
    names = metric_order(metrics) if isinstance(metrics, Mapping) else _MISSING
    fields.append(("metric_names", names))
    return fields


def _first_difference(path: str, left: Any, right: Any) -> tuple[str, Any, Any] | None:
    """The first (sorted-key, depth-first) sub-path where two JSON values differ, or None."""
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        for key in sorted(set(left) | set(right), key=str):
            found = _first_difference(
                f"{path}.{key}", left.get(key, _MISSING), right.get(key, _MISSING)
            )
            if found:
                return found
        return None
    if left is _MISSING or right is _MISSING or not _same(left, right):
        return path, left, right
    return None


def _underneath(candidate: EvaluationReport, reference: EvaluationReport) -> str:
    """What differs underneath ``config_sha256`` (a digest of the split, slices, base model,
    decoding, parser and statistics settings): the first later identity field that differs,
    else the parts only the digest holds."""
    later = zip(_identity_fields(candidate), _identity_fields(reference), strict=False)
    for (name, cand_value), (_, ref_value) in later:
        if name in ("model_identity", "config_sha256"):
            continue
        diff = _first_difference(name, cand_value, ref_value)
        if diff:
            return f"{diff[0]}: {_short(diff[1])} vs {_short(diff[2])}"
    return "a setting only the digest holds: the base model reference or [statistics]"


def _subset_note(
    candidate: EvaluationReport, reference: EvaluationReport, path: str
) -> str | None:
    """For a prompt- or pair-set difference: which arm scored fewer examples (pairs) of the
    slice (a ``-k`` / ``--deselect`` subset run), or None when both scored as many."""
    parts = path.split(".")
    if len(parts) != 3 or parts[2] not in ("prompt_set_sha256", "pair_set_sha256"):
        return None
    block, lang = parts[0], parts[1]
    unit = "examples" if block == "slices" else "pairs"
    counts = [_field(report, block, lang, unit) for report in (candidate, reference)]
    if not all(isinstance(count, int) for count in counts) or counts[0] == counts[1]:
        return None
    which = "candidate" if counts[0] < counts[1] else "reference"
    fewer, more = sorted(counts)
    return (
        f"the {which} scored {fewer} of the {more} {unit} of slice {lang!r} the other scored "
        "(a subset run: -k, --deselect or a crash)"
    )


def _refuse_identity(
    candidate: EvaluationReport, reference: EvaluationReport, diff: tuple[str, Any, Any]
) -> EvaluationError:
    """The identity-gate refusal naming the field and both (shortened) values; for
    ``config_sha256`` also what differs underneath it, for a prompt set the subset run."""
    path, cand_value, ref_value = diff
    cand_arm, ref_arm = candidate.get("arm", "candidate"), reference.get("arm", "reference")
    subset = _subset_note(candidate, reference, path)
    if subset is not None:
        return EvaluationError(
            "SOM-COMPARE-IDENTITY",
            f"arms disagree on {path}: {subset}; refusing to compare",
            "compare arms of complete runs, every example scored in both",
            where=path,
        )
    detail = ""
    if path == "config_sha256":
        detail = f" (underneath: {_underneath(candidate, reference)})"
    return EvaluationError(
        "SOM-COMPARE-IDENTITY",
        f"arms disagree on {path}: candidate {cand_arm!r} has {_short(cand_value)}, "
        f"reference {ref_arm!r} has {_short(ref_value)}{detail}; refusing to compare",
        "evaluate both arms under the same model, split, slices, prompts, parser and decoding "
        "(batch size included), with every example scored in both",
        where=path,
    )


def check_identity(
    candidate_report: EvaluationReport, reference_report: EvaluationReport
) -> SharedBlock:
    """The identity gate: return the ``shared`` block both reports agree on, or refuse.

    Fields are checked in this order and the FIRST disagreement (or absence) raises
    ``EvaluationError("SOM-COMPARE-IDENTITY")`` naming the field path and both values:
    model_identity, config_sha256, split, test_split_sha256, slices (the slice set, in
    configured order), slices.<lang>.prompt_set_sha256, paired_slices.<lang>.pair_set_sha256,
    parser_version, arguments_key, decoding (batch_size included), metric_names.

    A report without ``arguments_key`` (written before the key was recorded, when parser v1
    read only ``arguments``) counts as ``arguments``, so stored runs stay comparable.
    """
    cand_fields = _identity_fields(candidate_report)
    ref_fields = _identity_fields(reference_report)
    for (name, cand_value), (_, ref_value) in zip(cand_fields, ref_fields, strict=False):
        diff = _first_difference(name, cand_value, ref_value)
        if diff:
            raise _refuse_identity(candidate_report, reference_report, diff)
    values = dict(cand_fields)
    langs = values["slices"]
    return {
        "model_identity": values["model_identity"],
        "config_sha256": values["config_sha256"],
        "split": values["split"],
        "test_split_sha256": values["test_split_sha256"],
        "parser_version": values["parser_version"],
        "arguments_key": values["arguments_key"],
        "decoding": values["decoding"],
        "slices": list(langs),
        "prompt_set_sha256": {lang: values[f"slices.{lang}.prompt_set_sha256"] for lang in langs},
        "pair_set_sha256": {
            lang: values[f"paired_slices.{lang}.pair_set_sha256"] for lang in langs[1:]
        },
        "metric_names": values["metric_names"],
    }


# --- comparison report ---------------------------------------------------------------------


def _checked_arm_records(
    report: EvaluationReport, records_by_slice: Mapping[str, Records], langs: Sequence[str]
) -> dict[str, list[ScoringRecord]]:
    """An arm's records per slice, checked to be exactly the examples its report scored.

    The ordered ``[example_id, prompt_sha256]`` digest of each slice's records must equal the
    report's ``prompt_set_sha256`` (so ids, prompts and order all match the report).
    """
    arm = report.get("arm")
    unknown = _unknown_slice(records_by_slice, langs)
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
        if not _same(left, right):
            reasons.append(f"{name} differs ({_short(left)} vs {_short(right)})")
    if not _same(cand_report.get("decoding"), ref_report.get("decoding")):
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
    ``acceptable_call_match`` as a sixth column when the arms carry it."""
    sides: list[Any] = []
    for records in (ref_records, cand_records):
        num, den = component_arrays(list(records))
        if acceptable:
            extra_num, extra_den = acceptable_arrays(list(records))
            num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
        sides += [num, den]
    names = (*METRIC_NAMES, ACCEPTABLE) if acceptable else tuple(METRIC_NAMES)
    return (sides[0], sides[1], sides[2], sides[3]), names


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
        if metric in RATIO_OF_SUMS:
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


def _counted(matrices: Matrices, names: Sequence[str]) -> dict[str, list[bool]]:
    """Per metric, the pairs it counts (a denominator above 0 on either side)."""
    ref_den, cand_den = np.asarray(matrices[1]), np.asarray(matrices[3])
    return {
        name: [bool(x) for x in (ref_den[:, j] > 0) | (cand_den[:, j] > 0)]
        for j, name in enumerate(names)
    }


def _comparison_part(
    ref_records: Records,
    cand_records: Records,
    statistics: StatisticsConfig,
    label: str,
    clusters: Clusters,
    acceptable: bool,
) -> tuple[IntervalBlock, PairedIntervals, PowerBlock]:
    """``(ci95, intervals, power)`` of one comparison block, from one bootstrap draw."""
    check_paired_records(ref_records, cand_records)
    matrices, names = comparison_arrays(ref_records, cand_records, acceptable)
    keys = record_clusters(ref_records, clusters)
    block = interval_block(matrices, statistics, label=label, clusters=keys, metric_names=names)
    ci95 = cast(IntervalBlock, block.pop("bootstrap"))
    counted = _counted(matrices, names) if acceptable else None
    return ci95, cast(PairedIntervals, block), power_block(block, keys, statistics, counted)


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
    overall = _comparison_part(ref_all, cand_all, statistics, name, clusters, acceptable)
    per_slice = {
        lang: _comparison_part(ref[lang], cand[lang], statistics, f"{name}:{lang}", clusters,
                               acceptable)
        for lang in langs
    }  # fmt: skip
    return {
        "schema_version": COMPARISON_SCHEMA,
        "name": name,
        "candidate": cand_arm,
        "reference": ref_arm,
        "shared": shared,
        "identical_outputs": identical_outputs(ref_all, cand_all),
        "compared_examples": len(cand_all),
        "deltas": metric_gaps(candidate_report["metrics"], reference_report["metrics"]),
        "ci95": overall[0],
        "intervals": overall[1],
        "power": overall[2],
        "mcnemar": mcnemar_block(ref_all, cand_all),
        "slices": {
            lang: {
                "deltas": metric_gaps(
                    candidate_report["slices"][lang]["metrics"],
                    reference_report["slices"][lang]["metrics"],
                ),
                "ci95": per_slice[lang][0],
                "intervals": per_slice[lang][1],
                "power": per_slice[lang][2],
                "identical_outputs": identical_outputs(ref[lang], cand[lang]),
                "compared_examples": len(cand[lang]),
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
