"""A run against a stored run, arm by arm, paired by example (``report/compare-NNNN.json``),
from values: each side (:class:`Scored`) is a run's arm reports and scoring records, this run's
from memory (:func:`scored_outcome`) and a stored run's re-derived from its stored records
(``core.pipeline.derive_side``, over what the store read); nothing here reads a file.

``compare_runs(candidate, reference, ...)`` pairs every arm of the candidate run with the arm of
the same name in the reference run, and for each pair the identity gate
(``core.report_identity.check_identity``) decides whether they may be compared at all.

Invariants kept:

- No pair is compared unless the identity gate accepted it; a refused pair is one line naming
  the field (never a silent skip), and so is an arm the stored run does not have.
- Borrowed evidence is refused (``core.borrowed.refuse_borrowed``): a stored base arm is never
  evidence about an adapter arm (or the reverse), another suite's run never about this suite's
  arms.
- A run is never compared with itself (the same folder, or a copy with the same run id), nor
  with an incomplete run.
- Every block is built by ``core.report_comparison.paired_part``, the builder of every
  comparison of two arms of a run too: the intervals the suite's ``[statistics]`` selects (what
  gates read) and the percentile bootstrap ``ci95`` beside them, McNemar's exact test and the
  identical outputs; deltas are ``core.report_blocks.metric_gaps`` of the two sides' reports;
  fixed and broken counts equal McNemar's discordant counts (both from the full-call hit rule).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, cast

import numpy as np

from pytest_sommelier.core.borrowed import arm_origin, refuse_borrowed
from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.extra_columns import extra_arrays, extra_names
from pytest_sommelier.core.metrics import METRIC_NAMES, component_arrays, record_hit
from pytest_sommelier.core.report_blocks import metric_gaps
from pytest_sommelier.core.report_comparison import paired_part
from pytest_sommelier.core.report_identity import (
    adapter_differs,
    check_identity,
    config_difference,
)
from pytest_sommelier.core.stats import check_paired_records, derive_seed, paired_bootstrap_arrays
from pytest_sommelier.core.types import (
    EvaluationReport,
    FormattedSplit,
    IntervalBlock,
    ScoringRecord,
    StatisticsConfig,
    Suite,
)
from pytest_sommelier.errors import EvaluationError, InputError, SommelierError

COMPARE_SCHEMA = "sommelier.stored_comparison.v1"
DEFAULT_FLIPS = 10

Records = Sequence[ScoringRecord]


class RunRef(Protocol):
    """A run as a comparison names it: a stored run (``data.store.history.StoredRun``) or this
    run (:class:`CandidateRun`). ``entry`` is its store record (``run_id``, ``suite``,
    ``comparable``, ``git``, ``saved_at``, ``identity``)."""

    @property
    def number(self) -> int | None: ...

    @property
    def path(self) -> Path: ...

    @property
    def entry(self) -> dict[str, Any]: ...

    @property
    def label(self) -> str: ...

    @property
    def suite(self) -> str | None: ...

    @property
    def comparable(self) -> bool: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class CandidateRun:
    """This run, not stored (yet): its folder and the record a run folder gives (no number,
    no commit, no time), from its values."""

    path: Path
    entry: dict[str, Any] = field(default_factory=dict)
    number: int | None = None

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def suite(self) -> str | None:
        return self.entry.get("suite")

    @property
    def comparable(self) -> bool:
        return bool(self.entry.get("comparable"))

    def describe(self) -> str:
        """``run two (no commit recorded)``, as ``StoredRun.describe`` names a run folder."""
        return f"run {self.label} (no commit recorded)"


class Scored(NamedTuple):
    """One side of a comparison: its resolved suite, suite, split, arm reports, scoring
    records per arm and slice, and why an arm could not be re-derived (one line each)."""

    resolved: dict[str, Any]
    suite: Suite
    split: FormattedSplit
    reports: dict[str, Any]
    scoring: dict[str, Any]
    problems: dict[str, str]


# --- the rules -----------------------------------------------------------------------------


def paired_interval(
    reference_records: Records,
    candidate_records: Records,
    statistics: StatisticsConfig,
    label: str,
    clusters: Mapping[str, Hashable] | None = None,
) -> tuple[IntervalBlock, dict[str, Any]]:
    """``(ci95, intervals)`` of candidate minus reference over paired records (seed
    ``derive_seed(seed, label)``), through the one block builder
    (``core.report_comparison.paired_part``): the intervals the suite's ``[statistics]
    interval`` selects, over the clusters of ``[statistics] cluster`` (what gates read, as for
    every comparison), and the percentile bootstrap ``ci95`` from the same draw. A comparison
    with a stored run, the training callback's per-checkpoint deltas and its stop rule read
    it."""
    part = paired_part(
        reference_records, candidate_records, statistics, label, clusters,
        acceptable=False, power=False, mid_p=False,
    )  # fmt: skip
    return part.ci95, dict(part.intervals)


def refuse_same_run(candidate: RunRef, reference: RunRef) -> None:
    """Refuse comparing a run with itself: one folder twice, or a run and its stored copy
    (the same run id). ``InputError`` ``SOM-HISTORY-SAME``."""
    same_path = candidate.path.resolve() == reference.path.resolve()
    run_id = candidate.entry.get("run_id")
    if same_path or (run_id is not None and run_id == reference.entry.get("run_id")):
        what = "the same folder" if same_path else f"the same run (run id {run_id})"
        raise InputError(
            "SOM-HISTORY-SAME",
            f"{candidate.path} and {reference.path} are {what}; a run compared with itself "
            "shows no change whatever the adapter does",
            _other_run_hint(candidate, reference),
        )


def _other_run_hint(candidate: RunRef, reference: RunRef) -> str:
    """A hint naming a run other than the one compared with itself (never the command that
    just failed): the stored run before it, when there is one."""
    number = reference.number or candidate.number
    if number is not None and number > 1:
        return (
            f"compare with another run, e.g. `sommelier compare {number:04d} {number - 1:04d}`; "
            "`sommelier history` lists the store's runs"
        )
    return "compare with another run: `sommelier history` lists the store's runs"


def refuse_runs(candidate: RunRef, reference: RunRef) -> None:
    """The run checks of a comparison with a stored run: never itself, never an incomplete
    run, never another suite's run."""
    refuse_same_run(candidate, reference)
    for run, role in ((candidate, "candidate"), (reference, "reference")):
        if not run.comparable:
            raise EvaluationError(
                "SOM-HISTORY-INCOMPLETE",
                f"{run.describe()} is incomplete; an incomplete run is never compared",
                f"compare with a complete {role} run (`sommelier history` marks incomplete ones)",
            )
    if candidate.suite != reference.suite:
        raise EvaluationError(
            "SOM-HISTORY-BORROWED",
            f"{reference.describe()} is suite {reference.suite!r}, this run is suite "
            f"{candidate.suite!r}; another suite's run is not evidence about this one",
            "compare with a stored run of the same suite (`last` picks the newest one)",
        )


def _as_read(value: Any) -> Any:
    """``value`` as reading its artifact back gives it (keys sorted, tuples as lists, numbers
    through JSON): the candidate's side compares as its stored copy would."""
    return json.loads(json.dumps(value, sort_keys=True, allow_nan=False))


def scored_outcome(
    resolved: Mapping[str, Any],
    suite: Suite,
    split: FormattedSplit,
    reports: Mapping[str, EvaluationReport],
    records: Mapping[str, Any],
) -> Scored:
    """The run just evaluated as a comparison side, from memory (nothing read back): its
    reports and scoring records as the evaluation holds them, in the stored arm order;
    ``resolved`` is the resolved suite as written (``artifacts.stored_resolved``)."""
    stored = _as_read(resolved)
    # the arms in the order a stored run's resolved suite lists them (its keys sorted)
    names = [name for name in stored.get("arms") or {} if name in reports]
    return Scored(
        resolved=stored,
        suite=suite,
        split=split,
        reports={name: _as_read(reports[name]) for name in names},
        scoring={name: records[name] for name in names},
        problems={},
    )


def candidate_run(path: Path, scored: Scored, complete: bool) -> CandidateRun:
    """This run as a comparison names it (:class:`CandidateRun`): its folder, run id, suite,
    completeness and, for a seeded sample, the sample it evaluated."""
    sample = (scored.resolved.get("test_split") or {}).get("sample")
    entry: dict[str, Any] = {
        "run_id": scored.resolved.get("run_id") or Path(path).name,
        "suite": scored.resolved.get("name"),
        "complete": complete,
        "comparable": complete,
        "identity": {"sample": sample} if sample is not None else {},
    }
    return CandidateRun(path=Path(path), entry=entry)


def _flips(
    reference: Records, candidate: Records, slices: Mapping[str, str], limit: int
) -> dict[str, Any]:
    """Fixed (reference missed, candidate hit) and broken (the reverse) examples, paired."""
    fixed: list[dict[str, str]] = []
    broken: list[dict[str, str]] = []
    for ref, cand in zip(reference, candidate, strict=True):
        ref_hit = record_hit(ref)
        cand_hit = record_hit(cand)
        if ref_hit != cand_hit:
            item = {"example_id": cand["example_id"], "slice": slices[cand["example_id"]]}
            (fixed if cand_hit else broken).append(item)
    return {
        "fixed_count": len(fixed),
        "broken_count": len(broken),
        "fixed": fixed[: max(limit, 0)],
        "broken": broken[: max(limit, 0)],
    }


def _pair_block(
    name: str,
    cand_report: Mapping[str, Any],
    ref_report: Mapping[str, Any],
    cand: Mapping[str, Records],
    ref: Mapping[str, Records],
    statistics: StatisticsConfig,
    limit: int,
    clusters: Mapping[str, Hashable] | None = None,
) -> dict[str, Any]:
    """Deltas, intervals, McNemar and flips of one accepted pair, overall and per slice."""
    langs = list(cand_report["slice_order"])
    for lang in langs:
        check_paired_records(ref[lang], cand[lang], where=f"{name}/{lang}")
    cand_all = [r for lang in langs for r in cand[lang]]
    ref_all = [r for lang in langs for r in ref[lang]]
    slice_of = {r["example_id"]: lang for lang in langs for r in cand[lang]}

    def part(ref_records: Records, cand_records: Records, label: str) -> Any:
        return paired_part(
            ref_records, cand_records, statistics, label, clusters,
            acceptable=False, power=False, mid_p=False,
        )  # fmt: skip

    overall = part(ref_all, cand_all, f"stored:{name}")
    block: dict[str, Any] = {
        "status": "compared",
        "reference_arm": ref_report["arm"],
        "model_kind": cand_report.get("model_kind"),
        "candidate_adapter_identity": cand_report.get("adapter_identity"),
        "reference_adapter_identity": ref_report.get("adapter_identity"),
        "adapter_changed": adapter_differs(
            cand_report.get("adapter_identity"), ref_report.get("adapter_identity")
        ),
        "compared_examples": overall.compared_examples,
        "identical_outputs": overall.identical_outputs,
        "deltas": metric_gaps(cand_report["metrics"], ref_report["metrics"]),
        "mcnemar": overall.mcnemar,
        "flips": _flips(ref_all, cand_all, slice_of, limit),
        "slices": {},
        "ci95": overall.ci95,
        "intervals": dict(overall.intervals),
    }
    for lang in langs:
        sliced = part(ref[lang], cand[lang], f"stored:{name}:{lang}")
        block["slices"][lang] = {
            "deltas": metric_gaps(
                cand_report["slices"][lang]["metrics"], ref_report["slices"][lang]["metrics"]
            ),
            "ci95": sliced.ci95,
            "intervals": dict(sliced.intervals),
            "mcnemar": sliced.mcnemar,
            "identical_outputs": sliced.identical_outputs,
            "compared_examples": sliced.compared_examples,
            "flips": _flips(ref[lang], cand[lang], slice_of, limit),
        }
    return block


def _side(run: RunRef) -> dict[str, Any]:
    side = {
        "label": run.label,
        "number": run.number,
        "folder": str(run.path),
        "run_id": run.entry.get("run_id"),
        "suite": run.suite,
        "git": run.entry.get("git"),
        "saved_at": run.entry.get("saved_at"),
        "describe": run.describe(),
        "name": run.describe().split(" (", 1)[0],
    }
    sample = (run.entry.get("identity") or {}).get("sample")
    return {**side, "sample": sample} if sample is not None else side  # a seeded sample


def compare_arm_pair(
    candidate: RunRef,
    reference: RunRef,
    names: tuple[str, str],
    *,
    scored: Scored,
    reference_scored: Scored,
    flips: int = DEFAULT_FLIPS,
) -> dict[str, Any]:
    """One arm of ``candidate`` against a differently named arm of ``reference``
    (``names = (candidate arm, reference arm)``: a selection gate's selected checkpoint against
    the stored run's selected one), under the same rules as :func:`compare_runs` (the run
    checks raise; borrowed evidence, the identity gate and a missing arm are a refused block):
    the block is :func:`compare_runs`'s arm block, ``status`` ``compared`` or ``refused``."""
    refuse_runs(candidate, reference)
    cand, ref = scored, reference_scored
    name, ref_arm = names
    for side, arm, run in ((cand, name, candidate), (ref, ref_arm, reference)):
        if arm in side.problems:
            return {"status": "refused", "reason": side.problems[arm]}
        if arm not in side.reports:
            why = f"{run.describe()} has no arm {arm!r} (it was not stored in it)"
            return {"status": "refused", "reason": why}
    cand_report = {**cand.reports[name], "arm": name}
    ref_report = {**ref.reports[ref_arm], "arm": f"{ref_arm}@{reference.label}"}
    try:
        refuse_borrowed(
            name,
            arm_origin(cand.resolved, cand_report, name),
            arm_origin(ref.resolved, ref_report, ref_arm),
            stored_label=reference.describe(),
            stand_in=False,
        )
        check_identity(cast(EvaluationReport, cand_report), cast(EvaluationReport, ref_report))
    except SommelierError as error:
        return {"status": "refused", "reason": str(error)}
    clusters = example_clusters(cand.split.examples, cand.suite.statistics.cluster)
    return _pair_block(
        f"{name}:{ref_arm}",
        cand_report,
        ref_report,
        cand.scoring[name],
        ref.scoring[ref_arm],
        cand.suite.statistics,
        flips,
        clusters,
    )


def compare_runs(
    candidate: RunRef,
    reference: RunRef,
    *,
    scored: Scored,
    reference_scored: Scored,
    flips: int = DEFAULT_FLIPS,
) -> dict[str, Any]:
    """The comparison of every arm of ``candidate`` with the same-named arm of ``reference``
    (candidate minus reference, paired by example); ``flips`` caps the listed flipped examples.
    ``scored`` is the candidate's side when the caller holds it (the session finish, from
    memory: :func:`scored_outcome`); without it the candidate's stored records are re-scored.

    Raises ``InputError`` for a run compared with itself and ``EvaluationError`` for an
    incomplete run or a run of another suite; a refused arm is a line in ``arms.<arm>``.
    ``reference_scored`` is the reference's side when the caller already re-derived it.
    """
    refuse_runs(candidate, reference)
    cand_resolved, suite, split, cand_reports, cand_scoring, cand_problems = scored
    ref_resolved, _, _, ref_reports, ref_scoring, ref_problems = reference_scored
    clusters = example_clusters(split.examples, suite.statistics.cluster)
    label = reference.label
    arms: dict[str, Any] = {}
    for name in [*cand_reports, *cand_problems]:
        ref_name = f"{name}@{label}"
        if name in cand_problems or name in ref_problems:
            arms[name] = {
                "status": "refused",
                "reason": cand_problems.get(name) or ref_problems[name],
            }
            continue
        if name not in ref_reports:
            arms[name] = {
                "status": "refused",
                "reason": f"{reference.describe()} has no arm {name!r} (it was not stored in it)",
            }
            continue
        cand_report = {**cand_reports[name], "arm": name}
        ref_report = {**ref_reports[name], "arm": ref_name}
        try:
            refuse_borrowed(
                name,
                arm_origin(cand_resolved, cand_report, name),
                arm_origin(ref_resolved, ref_report, name),
                stored_label=reference.describe(),
                stand_in=False,
            )
            try:
                check_identity(
                    cast(EvaluationReport, cand_report), cast(EvaluationReport, ref_report)
                )
            except EvaluationError as error:
                change = (
                    config_difference(ref_resolved, cand_resolved)
                    if error.where == "config_sha256"
                    else None
                )
                if change is None:
                    raise
                message = f"{error.message} (what changed: {change})"
                raise EvaluationError(error.code, message, error.hint, where=error.where) from None
            arms[name] = _pair_block(
                name,
                cand_report,
                ref_report,
                cand_scoring[name],
                ref_scoring[name],
                suite.statistics,
                flips,
                clusters,
            )
        except SommelierError as error:
            arms[name] = {"status": "refused", "reason": str(error)}
    only_reference = [name for name in ref_reports if name not in arms]
    return {
        "schema_version": COMPARE_SCHEMA,
        "name": f"compare-{label}",
        "candidate": _side(candidate),
        "reference": _side(reference),
        "arms": arms,
        "only_in_reference": only_reference,
    }


def value_intervals_of(
    scoring: Mapping[str, Mapping[str, Sequence[ScoringRecord]]], statistics: StatisticsConfig
) -> dict[str, Any]:
    """Per arm, slice (and ``overall``) and metric of scoring records (arm -> slice -> records,
    as ``RunOutcome.records``): the value with its percentile-bootstrap interval (the arm's
    value minus zero, through ``core.stats.paired_bootstrap_arrays``, seed
    ``derive_seed(seed, "history:<arm>:<slice>")``); ``statistics`` is the suite's."""
    out: dict[str, Any] = {}
    for name, by_slice in scoring.items():
        blocks = [*by_slice.items(), ("overall", [r for rows in by_slice.values() for r in rows])]
        out[name] = {}
        for label, records in blocks:
            num, den = component_arrays(list(records))
            names = [*METRIC_NAMES, *extra_names(records)]
            if len(names) > len(METRIC_NAMES):  # v2 or abstention examples: their metrics too
                extra_num, extra_den = extra_arrays(list(records), names[len(METRIC_NAMES) :])
                num, den = np.hstack([num, extra_num]), np.hstack([den, extra_den])
            block = paired_bootstrap_arrays(
                np.zeros_like(num),
                np.ones_like(den),
                num,
                den,
                seed=derive_seed(statistics.seed, f"history:{name}:{label}"),
                resamples=statistics.resamples,
                confidence_level=statistics.confidence_level,
                metric_names=names,
            )
            totals_num, totals_den = num.sum(axis=0), den.sum(axis=0)
            out[name][label] = {
                metric: {
                    "value": float(totals_num[j] / totals_den[j]) if totals_den[j] else None,
                    **block["intervals"][metric],
                }
                for j, metric in enumerate(names)
            }
    return {
        "intervals": out,
        "method": {
            "method": "paired_bootstrap_percentile (value minus 0)",
            "resamples": statistics.resamples,
            "confidence_level": statistics.confidence_level,
        },
    }


__all__ = [
    "COMPARE_SCHEMA",
    "DEFAULT_FLIPS",
    "CandidateRun",
    "RunRef",
    "Scored",
    "candidate_run",
    "compare_arm_pair",
    "compare_runs",
    "paired_interval",
    "refuse_runs",
    "refuse_same_run",
    "scored_outcome",
    "value_intervals_of",
]
