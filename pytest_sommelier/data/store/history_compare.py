"""Comparing a run with a stored run, arm by arm, paired by example (``report/compare-NNNN``).

``compare_runs(candidate, reference)`` pairs every arm of the candidate run with the arm of
the same name in the reference run (usually a stored run), re-derives both arms' reports from
their stored ``raw_text`` (as ``sommelier rescore`` does), and for each pair the identity gate
(``core.report_identity.check_identity``) decides whether they may be compared at all.

Invariants kept:

- No pair is compared unless the identity gate accepted it; a refused pair is one line naming
  the field (never a silent skip), and so is an arm the stored run does not have.
- Borrowed evidence is refused (:func:`refuse_borrowed`): a stored base arm is never evidence
  about an adapter arm (or the reverse), another suite's run never about this suite's arms,
  and a stored arm stands in for a configured arm only when it is the same adapter.
- A run is never compared with itself (the same folder, or a copy with the same run id), nor
  with an incomplete run.
- Every interval comes from :func:`paired_interval`: the intervals the suite's ``[statistics]``
  selects (what gates read) and the percentile bootstrap ``ci95`` beside them; deltas are
  ``core.report_blocks.metric_gaps`` of the re-derived reports; fixed and broken counts equal
  McNemar's discordant counts (both from the full-call hit rule).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.metrics import record_hit
from pytest_sommelier.core.pipeline import (
    ArmRun,
    RunOutcome,
    build_arm_reports,
    config_sha256,
)
from pytest_sommelier.core.report_blocks import comparison_interval_block, metric_gaps
from pytest_sommelier.core.report_comparison import identical_outputs
from pytest_sommelier.core.report_identity import check_identity
from pytest_sommelier.core.stats import (
    check_paired_records,
    mcnemar_exact,
)
from pytest_sommelier.core.types import (
    EvaluationReport,
    FormattedSplit,
    IntervalBlock,
    ScoringRecord,
    StatisticsConfig,
    Suite,
)
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.history import StoredRun
from pytest_sommelier.data.store.history_record import config_difference
from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm, stored_scorers
from pytest_sommelier.errors import EvaluationError, InputError, SommelierError

COMPARE_SCHEMA = "sommelier.stored_comparison.v1"
DEFAULT_FLIPS = 10

Records = Sequence[ScoringRecord]


# --- the rules -----------------------------------------------------------------------------


def paired_interval(
    reference_records: Records,
    candidate_records: Records,
    statistics: StatisticsConfig,
    label: str,
    clusters: Mapping[str, Hashable] | None = None,
) -> tuple[IntervalBlock, dict[str, Any]]:
    """``(ci95, intervals)`` of candidate minus reference over paired records: the one place
    a comparison with a stored run computes intervals (seed ``derive_seed(seed, label)``).
    ``intervals`` are the ones the suite's ``[statistics] interval`` selects, over the
    clusters of ``[statistics] cluster`` (what gates read, as for every comparison);
    ``ci95`` is the percentile bootstrap from the same draw."""
    block = comparison_interval_block(
        reference_records,
        candidate_records,
        statistics,
        label=label,
        clusters=clusters,
        acceptable=False,
    )
    ci95 = cast(IntervalBlock, block.pop("bootstrap"))
    return ci95, block


def refuse_same_run(candidate: StoredRun, reference: StoredRun) -> None:
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


def _other_run_hint(candidate: StoredRun, reference: StoredRun) -> str:
    """A hint naming a run other than the one compared with itself (never the command that
    just failed): the stored run before it, when there is one."""
    number = reference.number or candidate.number
    if number is not None and number > 1:
        return (
            f"compare with another run, e.g. `sommelier compare {number:04d} {number - 1:04d}`; "
            "`sommelier history` lists the store's runs"
        )
    return "compare with another run: `sommelier history` lists the store's runs"


def refuse_same_arm_folder(candidate: Path, reference: Path) -> None:
    """Refuse ``sommelier compare A A`` for arm folders: the same folder, or the same arm of
    the same run (a stored copy). ``InputError`` ``SOM-HISTORY-SAME``."""
    same = candidate.resolve() == reference.resolve()
    if not same:
        reports = []
        for arm_dir in (candidate, reference):
            path = runlayout.arm_report(arm_dir)
            report = artifacts.read_json(path) if path.is_file() else {}
            reports.append(
                (report.get("run_id"), report.get("arm")) if isinstance(report, dict) else None
            )
        same = reports[0] is not None and reports[0] == reports[1] and reports[0][0] is not None
    if same:
        raise InputError(
            "SOM-HISTORY-SAME",
            f"{candidate} and {reference} are the same arm of the same run; it would be "
            "compared with itself",
            "compare two different arms or runs",
        )


def arm_origin(resolved: Mapping[str, Any], report: Mapping[str, Any] | None, name: str) -> dict:
    """What an arm is: its suite, its configured kind and its adapter reference (content
    digest or hub revision), from ``suite.resolved.json``; the report's kind when the suite
    does not configure the arm."""
    configured = (resolved.get("arms") or {}).get(name) or {}
    kind = configured.get("model_kind") or (report or {}).get("model_kind")
    return {"suite": resolved.get("name"), "model_kind": kind, "adapter": configured.get("adapter")}


def _short_identity(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, Mapping):
        for key in ("sha256", "revision"):
            if isinstance(value.get(key), str):
                return f"{key} {value[key][:12]}"
    return sha256_json(value)[:12]


def refuse_borrowed(
    name: str,
    current: Mapping[str, Any],
    stored: Mapping[str, Any],
    *,
    stored_label: str,
    stand_in: bool,
) -> None:
    """Refuse a stored arm that would be borrowed evidence for this suite's arm ``name``.

    ``current`` and ``stored`` are :func:`arm_origin` dicts. Always refused: a stored arm of
    another kind (a base arm mapped onto an adapter arm or the reverse) and another suite's
    adapter arm. When the stored arm stands in for the configured arm (``stand_in``: a
    baseline, ``stored = "last"``), its adapter must also be the configured adapter; else it
    is a reference under its own name. ``EvaluationError`` ``SOM-HISTORY-BORROWED``.
    """
    problem = None
    if stored.get("model_kind") != current.get("model_kind"):
        problem = (
            f"{stored_label}'s arm {name!r} has model_kind {stored.get('model_kind')}, this "
            f"suite's {name!r} has model_kind {current.get('model_kind')}"
        )
    elif stored.get("model_kind") == "adapter" and stored.get("suite") != current.get("suite"):
        problem = (
            f"{stored_label}'s arm {name!r} is an adapter of suite {stored.get('suite')!r}, "
            f"not of suite {current.get('suite')!r}"
        )
    elif (
        stand_in
        and current.get("model_kind") == "adapter"
        and sha256_json(stored.get("adapter")) != sha256_json(current.get("adapter"))
    ):
        problem = (
            f"{stored_label}'s arm {name!r} ran adapter {_short_identity(stored.get('adapter'))}, "
            f"the configured adapter is {_short_identity(current.get('adapter'))}"
        )
    if problem:
        raise EvaluationError(
            "SOM-HISTORY-BORROWED",
            f"{problem}; refusing to use it as arm {name!r}",
            "a stored arm stands in for an arm only when it is the same arm; compare against "
            "it as a reference under its own name (NAME=DIR with another NAME)",
            where=name,
        )


def refuse_borrowed_stand_in(configured: Mapping[str, Any], name: str, arm_dir: Path) -> None:
    """Refuse a stored arm folder (``runs/<id>/eval/<arm>``) standing in for arm ``name`` of
    the configured suite (``configured`` is its ``suite_identity``, the shape of
    ``suite.resolved.json``): the rule of :func:`refuse_borrowed` with ``stand_in``, for
    ``--sommelier-baseline`` and ``stored = "last"`` gates. For a folder outside a run (no
    ``suite.resolved.json`` two levels up) the adapter cannot be checked, so an adapter arm
    is refused and a base arm judged by its report's kind."""
    arm_dir = Path(arm_dir)
    report_path = runlayout.arm_report(arm_dir)
    report = artifacts.read_json(report_path) if report_path.is_file() else {}
    report = report if isinstance(report, dict) else {}
    resolved_path = runlayout.resolved(runlayout.run_of_arm(arm_dir))
    stored_resolved = artifacts.read_json(resolved_path) if resolved_path.is_file() else {}
    stored_resolved = stored_resolved if isinstance(stored_resolved, dict) else {}
    arm_field = report.get("arm")
    stored_name = arm_field if isinstance(arm_field, str) else arm_dir.name
    stored = arm_origin(stored_resolved, report, stored_name)
    if not stored_resolved:
        stored = {**stored, "suite": configured.get("name"), "adapter": None}
    refuse_borrowed(
        name,
        arm_origin(configured, None, name),
        stored,
        stored_label=f"stored arm {arm_dir}",
        stand_in=True,
    )


# --- re-deriving the arms ------------------------------------------------------------------


class Scored(NamedTuple):
    """One side of a comparison: its resolved suite, suite, split, arm reports, scoring
    records per arm and slice, and why an arm could not be re-derived (one line each)."""

    resolved: dict[str, Any]
    suite: Suite
    split: FormattedSplit
    reports: dict[str, Any]
    scoring: dict[str, Any]
    problems: dict[str, str]


def scored_outcome(
    resolved: Mapping[str, Any], suite: Suite, split: FormattedSplit, outcome: RunOutcome
) -> Scored:
    """The run just evaluated as a comparison side, from memory (nothing read back): its
    reports and scoring records as the session holds them, in the stored arm order;
    ``resolved`` as given to ``artifacts.write_outcome``."""
    stored = artifacts.as_stored(artifacts.stored_resolved(resolved, split))
    # the arms in the order a stored run's resolved suite lists them (its keys sorted)
    names = [name for name in stored.get("arms") or {} if name in outcome.arm_reports]
    return Scored(
        resolved=stored,
        suite=suite,
        split=split,
        reports={name: artifacts.as_stored(outcome.arm_reports[name]) for name in names},
        scoring={name: outcome.records[name] for name in names},
        problems={},
    )


def _scored_arms(run: StoredRun) -> Scored:
    """A stored run as a comparison side: its arms re-derived from their stored records."""
    resolved, suite, split = load_run_inputs(run.path)
    arms: dict[str, ArmRun] = {}
    problems: dict[str, str] = {}
    for name in suite.arms:
        arm_dir = runlayout.arm_dir(run.path, name)
        if not runlayout.arm_report(arm_dir).is_file():
            continue
        try:
            arms[name] = stored_arm(suite, split, arm_dir)
        except SommelierError as error:
            problems[name] = str(error)
    digest = config_sha256(suite, split, resolved["model"])
    built = build_arm_reports(
        suite, split, arms, run_id=resolved.get("run_id", run.path.name), digest=digest,
        scorers=stored_scorers(suite, run.path),
    )  # fmt: skip
    return Scored(resolved, suite, split, dict(built.reports), dict(built.scoring), problems)


def _flips(reference: Records, candidate: Records, slices: Mapping[str, str], limit: int) -> dict:
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
    block: dict[str, Any] = {
        "status": "compared",
        "reference_arm": ref_report["arm"],
        "model_kind": cand_report.get("model_kind"),
        "candidate_adapter_identity": cand_report.get("adapter_identity"),
        "reference_adapter_identity": ref_report.get("adapter_identity"),
        "adapter_changed": sha256_json(cand_report.get("adapter_identity"))
        != sha256_json(ref_report.get("adapter_identity")),
        "compared_examples": len(cand_all),
        "identical_outputs": identical_outputs(ref_all, cand_all),
        "deltas": metric_gaps(cand_report["metrics"], ref_report["metrics"]),
        "mcnemar": mcnemar_exact(ref_all, cand_all),
        "flips": _flips(ref_all, cand_all, slice_of, limit),
        "slices": {},
    }
    block["ci95"], block["intervals"] = paired_interval(
        ref_all, cand_all, statistics, f"stored:{name}", clusters
    )
    for lang in langs:
        ci95, intervals = paired_interval(
            ref[lang], cand[lang], statistics, f"stored:{name}:{lang}", clusters
        )
        block["slices"][lang] = {
            "deltas": metric_gaps(
                cand_report["slices"][lang]["metrics"], ref_report["slices"][lang]["metrics"]
            ),
            "ci95": ci95,
            "intervals": intervals,
            "mcnemar": mcnemar_exact(ref[lang], cand[lang]),
            "identical_outputs": identical_outputs(ref[lang], cand[lang]),
            "compared_examples": len(cand[lang]),
            "flips": _flips(ref[lang], cand[lang], slice_of, limit),
        }
    return block


def _side(run: StoredRun) -> dict[str, Any]:
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


def scored_run(run: StoredRun) -> Scored:
    """A stored run as a comparison side (its arms re-derived from their stored records), for
    a caller that compares it more than once (:func:`compare_runs`, :func:`compare_arm_pair`)."""
    return _scored_arms(run)


def compare_arm_pair(
    candidate: StoredRun,
    reference: StoredRun,
    names: tuple[str, str],
    *,
    flips: int = DEFAULT_FLIPS,
    scored: Scored | None = None,
    reference_scored: Scored | None = None,
) -> dict[str, Any]:
    """One arm of ``candidate`` against a differently named arm of ``reference``
    (``names = (candidate arm, reference arm)``: a selection gate's selected checkpoint against
    the stored run's selected one), under the same rules as :func:`compare_runs` (the run
    checks raise; borrowed evidence, the identity gate and a missing arm are a refused block):
    the block is :func:`compare_runs`'s arm block, ``status`` ``compared`` or ``refused``."""
    _refuse_runs(candidate, reference)
    cand = scored if scored is not None else _scored_arms(candidate)
    ref = reference_scored if reference_scored is not None else _scored_arms(reference)
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


def _refuse_runs(candidate: StoredRun, reference: StoredRun) -> None:
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


def compare_runs(
    candidate: StoredRun,
    reference: StoredRun,
    *,
    flips: int = DEFAULT_FLIPS,
    scored: Scored | None = None,
    reference_scored: Scored | None = None,
) -> dict[str, Any]:
    """The comparison of every arm of ``candidate`` with the same-named arm of ``reference``
    (candidate minus reference, paired by example); ``flips`` caps the listed flipped examples.
    ``scored`` is the candidate's side when the caller holds it (the session finish, from
    memory: :func:`scored_outcome`); without it the candidate's stored records are re-scored.

    Raises ``InputError`` for a run compared with itself and ``EvaluationError`` for an
    incomplete run or a run of another suite; a refused arm is a line in ``arms.<arm>``.
    ``reference_scored`` is the reference's side when the caller already re-derived it.
    """
    _refuse_runs(candidate, reference)
    cand = scored if scored is not None else _scored_arms(candidate)
    cand_resolved, suite, split, cand_reports, cand_scoring, cand_problems = cand
    ref_side = reference_scored if reference_scored is not None else _scored_arms(reference)
    ref_resolved, _, _, ref_reports, ref_scoring, ref_problems = ref_side
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


def write_compare(folder: Path, report: Mapping[str, Any], markdown: str) -> tuple[Path, Path]:
    """Write ``<folder>/compare-<NNNN>.json`` and its Markdown (``view.compare.compare_markdown``)
    atomically (a run's ``report/`` folder, or any folder); returns both paths."""
    return artifacts.write_comparison(Path(folder), report["name"], report, markdown)


__all__ = [
    "COMPARE_SCHEMA",
    "Scored",
    "arm_origin",
    "compare_arm_pair",
    "compare_runs",
    "paired_interval",
    "refuse_borrowed",
    "refuse_borrowed_stand_in",
    "refuse_same_arm_folder",
    "refuse_same_run",
    "scored_outcome",
    "scored_run",
    "write_compare",
]
