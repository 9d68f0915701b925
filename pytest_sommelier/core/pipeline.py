"""From generation records to reports and a verdict, with no model and no pytest.

The pytest session (at finish) and ``sommelier rescore`` both call :func:`evaluate_run`, so a
re-scored run goes through exactly the same checks and builders. Invariants kept: before any
report is built, every record must name a known example of its slice, carry that example's
``prompt_sha256`` and the suite's decoding, and appear at most once per arm (violations raise
``InvariantError``); records are re-parsed from ``raw_text`` here, so a report never trusts a
stored parse; ``complete`` is true only when every example of every slice of every arm was
scored and nothing errored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.abstention import scoring_fields
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE
from pytest_sommelier.core.canonical import prompt_digest, sha256_json
from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.compare_fail import FailSpec
from pytest_sommelier.core.gates import SELECTION_KIND, IntervalAt
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.misses import LANGUAGE_FLAG, finish_counts, miss_fields
from pytest_sommelier.core.noise import noise_arms, noise_floor_block, noise_sample
from pytest_sommelier.core.parse import (
    DEFAULT_ARGUMENTS_KEY,
    PARSER_VERSION,
    recorded_arguments_key,
)
from pytest_sommelier.core.parse_v2 import PARSER_VERSIONS
from pytest_sommelier.core.reasoning import (
    ReasoningRule,
    parse_fields,
    parser_block,
    recorded_reasoning,
    recorded_split,
    split_output,
)
from pytest_sommelier.core.report_blocks import (
    build_evaluation_report,
    comparison_interval_block,
    gap_cohort,
    gap_interval_block,
    order_slice_records,
)
from pytest_sommelier.core.report_comparison import build_comparison_report
from pytest_sommelier.core.scorers import Scorer, record_scores, scorer_identity
from pytest_sommelier.core.selection import selection_block
from pytest_sommelier.core.stored_comparison import (
    RunRef,
    Scored,
    candidate_run,
    scored_outcome,
)
from pytest_sommelier.core.types import (
    FINISH_UNKNOWN,
    ComparisonConfig,
    ComparisonReport,
    EvaluationReport,
    Example,
    FormattedSplit,
    GateConfig,
    GenerationRecord,
    RebatchedOutput,
    ScoringRecord,
    StatisticsConfig,
    Suite,
    Telemetry,
    TelemetrySlice,
    Timing,
    Verdict,
)
from pytest_sommelier.core.verdict import AgainstStored, Found, Recorded, against_stored, judge
from pytest_sommelier.errors import EvaluationError, InvariantError, SommelierError

Generations = dict[str, list[GenerationRecord]]
"""One arm's generation records per slice, in split order."""

STORED_CONDITIONS = (
    "run_id",
    "config_sha256",
    "split",
    "test_split_sha256",
    "arguments_key",
    "decoding",
    "model_identity",
    "adapter_identity",
)
"""The conditions a baseline arm keeps from its stored report (a report written before the
arguments key was recorded read ``arguments``, the only key there was; its parser block is
rebuilt from what it records, ``core.reasoning.recorded_reasoning``: absent = no rule)."""


@dataclass
class ArmRun:
    """Everything known about one arm of a run before its report is built."""

    name: str
    model_kind: str
    model_identity: dict[str, Any] | None
    adapter_identity: dict[str, Any] | None
    records: Generations  # slice -> generation records in split order
    timings: list[Timing] = field(default_factory=list)  # one per generated record
    stored_report: EvaluationReport | None = None  # a baseline arm's report from an earlier run
    stored_telemetry: Telemetry | None = None
    rebatched: dict[str, RebatchedOutput] = field(default_factory=dict)  # core.noise


@dataclass
class RunOutcome:
    """The derived artifacts of one run of one suite: what ``data.store.artifacts.write_outcome``
    writes (``generations`` are the arms' generation records with their miss fields, as
    ``generations.<slice>.jsonl`` holds them) and what the terminal summary shows."""

    run_id: str
    complete: bool
    arm_reports: dict[str, EvaluationReport]
    telemetry: dict[str, Telemetry]
    comparison_reports: dict[str, ComparisonReport]
    comparison_errors: dict[str, str]
    verdict: Verdict | None
    records: dict[str, dict[str, list[ScoringRecord]]]  # arm -> slice -> scoring records
    missing: dict[str, int]  # arm -> examples not scored
    generations: dict[str, Generations] = field(default_factory=dict)  # arm -> slice -> records
    rebatched: dict[str, dict[str, RebatchedOutput]] = field(default_factory=dict)  # core.noise
    interval_at: IntervalAt | None = None  # the gates' familywise recomputation (stored gates)
    selection: dict[str, Any] | None = None  # [selection]: core.selection.selection_block
    against: AgainstStored | None = None  # the comparisons with stored runs (core.verdict)


@dataclass(frozen=True)
class StoredInputs:
    """What the run store read of one stored run for a comparison with it, nothing judged:
    its resolved suite, suite and split, its arms as stored (``data.store.stored.stored_arm``;
    ``problems``: why an arm could not be read, one line each), the scorers it recorded and
    what it recorded of its ``[selection]``."""

    resolved: dict[str, Any]
    suite: Suite
    split: FormattedSplit
    arms: dict[str, ArmRun]
    problems: dict[str, str]
    scorers: tuple[Scorer, ...]
    recorded: Recorded


@dataclass(frozen=True)
class StoredEvidence:
    """Everything the gates of a run need of the run store, looked up before the run is
    evaluated (``data.store.history_verdict.look_up_stored``): per looked-up spec, in order,
    its stored run and what was read of it (or why it could not be read, one line; None:
    ``last`` with nothing stored yet); ``lookup`` maps each spec the suite and the options
    wrote to the spec looked up (the callback's pinned ``last``). ``candidate`` is this run's
    folder and ``resolved`` its resolved suite as written (``artifacts.stored_resolved``)."""

    store: Path
    suite: str
    flips: int
    candidate: Path
    resolved: dict[str, Any]
    looked_up: tuple[tuple[str, tuple[RunRef, StoredInputs | str] | str | None], ...]
    lookup: dict[str, str]


STATISTICS_ADDED = ("interval", "cluster", "familywise", "power")
"""``[statistics]`` keys of 0.3, digested by :func:`config_sha256` only away from their defaults."""


def config_sha256(suite: Suite, split: FormattedSplit, model: Mapping[str, Any]) -> str:
    """Digest of the evaluation conditions every arm shares: test split, slices, base model,
    decoding, parser and statistics settings; not arms, comparisons, gates or machine paths.

    The parser's ``arguments_key`` and the ``[statistics]`` keys added in 0.3 (``interval``,
    ``cluster``, ``familywise``, ``power``) are digested only when they differ from their
    defaults: a suite without them (every suite before they existed) keeps the digest it always
    had, so its stored runs stay comparable, while a suite that sets another value digests
    differently."""
    conditions: dict[str, Any] = {
        "split": split.split,
        "test_split_sha256": split.sha256,
        "slices": list(suite.slices),
        "model": dict(model),
        "decoding": dict(suite.decoding),
        "parser_version": PARSER_VERSIONS[suite.parser_version],
        "statistics": {
            "seed": suite.statistics.seed,
            "resamples": suite.statistics.resamples,
            "confidence_level": suite.statistics.confidence_level,
        },
    }
    statistics = asdict(suite.statistics)
    defaults = asdict(StatisticsConfig(seed=0, resamples=1, confidence_level=0.5))
    for key in STATISTICS_ADDED:
        if statistics[key] != defaults[key]:
            conditions["statistics"][key] = statistics[key]
    if suite.arguments_key != DEFAULT_ARGUMENTS_KEY:
        conditions["arguments_key"] = suite.arguments_key
    if suite.reasoning is not None:  # [parser] reasoning: digested only when declared
        conditions["reasoning"] = parser_block(PARSER_VERSION, suite.reasoning)["reasoning"]
    if suite.parser_version != "v1":  # parser v2: its order is a condition too
        conditions["parser_order"] = suite.parser_order
    return sha256_json(conditions)


def order_records(
    suite: Suite,
    split: FormattedSplit,
    arm: str,
    records: Iterable[Mapping[str, Any]],
    *,
    decoding: Mapping[str, Any] | None = None,
) -> Generations:
    """Check each generation record against the split and return them per slice in split
    order (``report_blocks.order_slice_records`` per slice). Raises InvariantError, naming the arm,
    on a record of an unconfigured slice, an unknown example, a prompt digest mismatch, a
    decoding config other than ``decoding`` (default: the suite's) or a duplicate."""
    expected = dict(suite.decoding if decoding is None else decoding)
    grouped: dict[str, list[Mapping[str, Any]]] = {language: [] for language in suite.slices}
    for record in records:
        language = record.get("language")
        if language not in grouped:
            raise InvariantError(
                "SOM-RECORD-UNKNOWN",
                f"generation for example {record.get('example_id')!r} has language "
                f"{language!r}, not a configured slice",
                "the generations do not belong to this suite",
                where=f"arm {arm}",
            )
        grouped[language].append(record)
    try:
        return {  # checked: from here on they are generation records
            language: cast(
                list[GenerationRecord], order_slice_records(split, language, rows, expected)
            )
            for language, rows in grouped.items()
        }
    except InvariantError as error:
        raise InvariantError(
            error.code, error.message, error.hint, where=f"arm {arm}, {error.where}"
        ) from None


def generation_record(
    example: Example,
    *,
    arm: str,
    model_kind: str,
    raw_text: str,
    decoding: Mapping[str, Any],
    cached: bool,
    finish_reason: str = FINISH_UNKNOWN,
    generated_tokens: int | None = None,
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    reasoning: ReasoningRule = None,
    engine_reasoning: str | None = None,
    engine_content: bool = True,
    count_tokens: Callable[[str], int | None] | None = None,
) -> GenerationRecord:
    """The generation record of one output: split by the suite's reasoning rule
    (``core.reasoning``; ``engine_reasoning`` / ``engine_content`` are the engine's own channel,
    read under ``"engine"`` only), its content parsed by ``sommelier.parser.v1`` with the
    suite's ``arguments_key``, carrying the prompt digest recomputed from the prompt that was
    sent (so a record never claims a prompt it was not generated from), the engine's finish
    reason and new-token count, and (``count_tokens``, the engine's tokenizer) the reasoning's
    token count."""
    split = split_output(
        raw_text, reasoning, engine_reasoning=engine_reasoning, engine_content=engine_content
    )
    parsed = parse_fields(split, arguments_key, example.parser_version)
    tokens = None
    if split.reasoning_text is not None and count_tokens is not None:
        tokens = count_tokens(split.reasoning_text)
    record = {
        "example_id": example.example_id,
        "arm": arm,
        "model_kind": model_kind,
        "language": example.language,
        "prompt_sha256": prompt_digest(example.prompt_text, example.template_kwargs),
        "raw_text": raw_text,
        "reasoning_text": split.reasoning_text,
        "content_text": split.content_text,
        "reasoning_tokens": tokens,
        **parsed,
        "decoding": dict(decoding),
        "finish_reason": finish_reason,
        "generated_tokens": generated_tokens,
        "cached": cached,
    }
    return cast(GenerationRecord, record)


def rescored(
    records: Sequence[GenerationRecord],
    split: FormattedSplit,
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    *,
    arm: str | None = None,
    model_kind: str | None = None,
    scorers: Sequence[Scorer] = (),
    compare_stored: bool = False,
    reasoning: ReasoningRule = None,
) -> tuple[list[GenerationRecord], list[ScoringRecord]]:
    """``(generation records, scoring records)`` of ``records``, new dicts; the records given
    are left as they are.

    A scoring record is the record with its split and parse re-derived from ``raw_text`` (the
    suite's ``reasoning`` rule, ``core.reasoning.recorded_split``, then parser v1 with
    ``arguments_key``, the suite's), the example's
    gold call (and its ``acceptable_arguments`` when it has them; for an example that expects
    no single gold call, ``core.abstention.scoring_fields``). Both get the record's
    ``miss_category`` (and, in a non-reference slice, ``value_language_mismatch``; a stale flag
    is dropped): the one place a record learns its category, so the written
    ``generations.<slice>.jsonl`` (the generation records returned here) and the drilldown
    agree (core.misses).

    Every derived field is re-derived, in both records, never copied from the input: the parse
    (``parsed_call``, ``parse_status``), the miss fields, and (when given: the arm the records
    are evaluated as) ``arm`` and ``model_kind``. So a stored record edited to claim
    ``parse_status: ok`` is written back with the parse its ``raw_text`` has.

    With ``scorers`` (core.scorers) both records get ``scores``, each scorer's checked
    components of the re-derived parse (a stale ``scores`` is dropped); ``compare_stored``
    (a stored run re-scored under the scorer versions it ran with) makes a recorded score
    that differs from the recomputed one ``SOM-SCORER-IMPURE``."""
    by_id = {example.example_id: example for example in split.examples}
    owner = {} if arm is None else {"arm": arm}
    if model_kind is not None:
        owner["model_kind"] = model_kind
    reference = next(iter(split.slices), None)
    generations: list[GenerationRecord] = []
    scoring_records: list[ScoringRecord] = []
    for record in records:
        example = by_id[record["example_id"]]
        parts = recorded_split(record, reasoning)
        parsed = parse_fields(parts, arguments_key, example.parser_version)
        parsed_call = parsed["parsed_call"]
        reparsed = {
            "reasoning_text": parts.reasoning_text,
            "content_text": parts.content_text,
            **parsed,
            **owner,
        }
        if parts.reasoning_text is None or parts.reasoning_text != record.get("reasoning_text"):
            reparsed["reasoning_tokens"] = None  # a count is kept only for the span it counted
        kept = cast(GenerationRecord, {**record, **reparsed})
        kept.pop(LANGUAGE_FLAG, None)
        stored_scores = kept.pop("scores", None)
        if scorers:
            kept["scores"] = record_scores(
                scorers,
                parsed_call,
                example,
                stored_scores if isinstance(stored_scores, dict) else None,
                compare=compare_stored,
            )
        scoring = cast(
            ScoringRecord,
            {**kept, **reparsed, "gold_call": example.gold_call, **scoring_fields(example)},
        )
        if example.acceptable_arguments is not None:
            scoring["acceptable_arguments"] = example.acceptable_arguments
        fields = miss_fields(scoring, translated=example.language != reference)
        for target in (kept, scoring):
            target["miss_category"] = fields["miss_category"]
            if LANGUAGE_FLAG in fields:
                target[LANGUAGE_FLAG] = fields[LANGUAGE_FLAG]
        generations.append(kept)
        scoring_records.append(scoring)
    return generations, scoring_records


def concurrency_of(timings: Sequence[Timing]) -> int:
    """The number of processes the run used (xdist workers; 1 serial).

    Invariant: a property of the run, not of scheduling: two arms of one run get the same value
    even when one worker happened to generate every batch of an arm (which made the arms look
    not cross-comparable by chance in 0.1).
    """
    return max((t["processes"] for t in timings), default=1)


def telemetry_for(arm: ArmRun, suite: Suite) -> Telemetry:
    """inference_telemetry.json for one arm from its per-record timings."""
    if arm.stored_telemetry is not None:
        return arm.stored_telemetry
    slices: dict[str, TelemetrySlice] = {}
    for language in suite.slices:
        rows = [t for t in arm.timings if t["language"] == language]
        timed = [t for t in rows if not t["cached"]]
        slices[language] = {
            "seconds": sum(t["seconds"] for t in timed),
            "examples": len(rows),
            "timed_examples": len(timed),
            "cached_examples": len(rows) - len(timed),
        }
    devices = {(t["device"]["device"], t["device"]["device_count"]) for t in arm.timings}
    device, device_count = sorted(devices)[0] if devices else ("unknown", 1)
    timed_total = sum(s["timed_examples"] for s in slices.values())
    checks = [
        bool(t["selfcheck_differs"]) for t in arm.timings if t.get("selfcheck_differs") is not None
    ]
    total_seconds = sum(s["seconds"] for s in slices.values())
    return {
        "schema_version": "sommelier.inference_telemetry.v1",
        "arm": arm.name,
        "boundary": "generate_call",
        "batch_size": int(suite.decoding["batch_size"]),
        "concurrency": concurrency_of(arm.timings),
        "device": device,
        "device_count": device_count,
        "slices": slices,
        "total_seconds": total_seconds,
        "examples": sum(s["examples"] for s in slices.values()),
        "timed_examples": timed_total,
        "cached_examples": sum(s["cached_examples"] for s in slices.values()),
        "seconds_per_example": (total_seconds / timed_total) if timed_total else None,
        "warmup": {"prompts": 1, "timed": False},
        "determinism_selfcheck": {
            "checked": len(checks),
            "differing": sum(checks),
            "method": "regenerated at batch size 1, untimed",
        },
    }


def comparisons_to_run(suite: Suite) -> list[ComparisonConfig]:
    """Configured comparisons plus any a comparison gate refers to, in order, once each; a
    selection gate against the reference (no ``stored``) refers to every candidate of the
    ``[selection]`` against its reference (whichever is selected, its comparison is run)."""
    wanted: dict[tuple[str, str], ComparisonConfig] = {}
    for comparison in suite.comparisons:
        wanted.setdefault((comparison.candidate, comparison.reference), comparison)
    for gate in suite.gates:
        if gate.kind == "comparison":
            key = (gate.candidate, gate.reference)
            wanted.setdefault(key, ComparisonConfig(candidate=key[0], reference=key[1]))  # type: ignore[arg-type]
        if gate.kind == SELECTION_KIND and gate.stored is None and suite.selection is not None:
            for name in suite.selection.candidates:
                pair = (name, suite.selection.reference)
                wanted.setdefault(pair, ComparisonConfig(candidate=pair[0], reference=pair[1]))
    return list(wanted.values())


def noise_plan(suite: Suite, split: FormattedSplit) -> dict[str, frozenset[str]]:
    """arm -> the example ids its noise floor re-batches (``core.noise``): the seeded sample of
    ``[statistics] noise_floor`` examples for every comparison's reference arm; empty when the
    noise floor is off (pytest collection and ``training.SommelierCallback`` alike)."""
    count = int(getattr(suite.statistics, "noise_floor", 0) or 0)
    if count <= 0:
        return {}
    sample = frozenset(
        noise_sample((e.example_id for e in split.examples), count, suite.statistics.seed)
    )
    return dict.fromkeys(noise_arms(comparisons_to_run(suite)), sample)


@dataclass
class ArmReports:
    """Every arm's scoring records, report, telemetry and count of unscored examples."""

    scoring: dict[str, dict[str, list[ScoringRecord]]] = field(default_factory=dict)
    reports: dict[str, EvaluationReport] = field(default_factory=dict)
    telemetry: dict[str, Telemetry] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)
    generations: dict[str, Generations] = field(default_factory=dict)
    rebatched: dict[str, dict[str, RebatchedOutput]] = field(default_factory=dict)


def check_scorers(suite: Suite, scorers: Sequence[Scorer]) -> None:
    """The scorers given are exactly the ones the suite enables (``[suite] scorers``)."""
    given = sorted(scorer.name for scorer in scorers)
    if given != sorted(suite.scorers):
        raise InvariantError(
            "SOM-SCORER-SET",
            f"the suite enables scorers {sorted(suite.scorers)} but {given} were given",
            "resolve the suite's scorers through the scorer registry",
        )


def build_arm_reports(
    suite: Suite,
    split: FormattedSplit,
    arms: Mapping[str, ArmRun],
    *,
    run_id: str,
    digest: str,
    scorers: Sequence[Scorer] = (),
    compare_stored: bool = False,
) -> ArmReports:
    """One ``evaluation_report.json`` per arm from its records, which ``order_records``
    already checked and put in split order (they are not checked again here); a baseline arm
    keeps the conditions of its stored report so the identity gate judges them. ``scorers``
    are the suite's (``check_scorers``), scored into every record (``rescored``)."""
    check_scorers(suite, scorers)
    built = ArmReports()
    for name, arm in arms.items():
        both = {
            language: rescored(
                records,
                split,
                suite.arguments_key,
                arm=name,
                model_kind=arm.model_kind,
                scorers=scorers,
                compare_stored=compare_stored,
                reasoning=suite.reasoning,
            )
            for language, records in arm.records.items()
        }
        built.generations[name] = {language: pair[0] for language, pair in both.items()}
        ordered = {language: pair[1] for language, pair in both.items()}
        built.scoring[name] = ordered
        built.missing[name] = sum(
            len(split.slices[language]) - len(ordered.get(language, []))
            for language in suite.slices
        )
        stored = arm.stored_report
        report = build_evaluation_report(
            run_id=run_id,
            arm=name,
            model_kind=arm.model_kind,
            model_identity=arm.model_identity,
            adapter_identity=arm.adapter_identity,
            config_sha256=digest,
            split=split,
            slices=suite.slices,
            parser_version=PARSER_VERSIONS[suite.parser_version],
            arguments_key=suite.arguments_key,
            decoding=dict(stored["decoding"]) if stored else dict(suite.decoding),
            records_by_slice=ordered,
            statistics=suite.statistics,
            generation_artifacts={
                language: runlayout.generations_artifact(name, language)
                for language in suite.slices
            },
            complete=built.missing[name] == 0,
            ordered=True,
            scorers=scorer_identity(scorers),
            reasoning=suite.reasoning,
            template_kwargs=suite.template_kwargs,
        )
        report["finish_reasons"] = finish_counts(
            record for records in built.generations[name].values() for record in records
        )
        if stored is not None:
            conditions = {key: value for key, value in stored.items() if key in STORED_CONDITIONS}
            conditions["arguments_key"] = recorded_arguments_key(stored) or stored["arguments_key"]
            conditions["parser"] = {
                "version": stored.get("parser_version"),
                "reasoning": recorded_reasoning(stored),
            }
            report.pop("template_kwargs", None)  # the stored arm's own (absent: none)
            if stored.get("template_kwargs"):
                conditions["template_kwargs"] = stored["template_kwargs"]
            report = cast(EvaluationReport, {**report, **conditions})
        built.reports[name] = report
        built.telemetry[name] = telemetry_for(arm, suite)
        if arm.stored_report is None:
            built.rebatched[name] = arm.rebatched
    return built


def build_comparisons(
    suite: Suite, arms: ArmReports, split: FormattedSplit | None = None
) -> tuple[dict[str, ComparisonReport], dict[str, str]]:
    """Every comparison to run (``comparisons_to_run``): its report, or why it was refused
    (an arm not run, or the identity gate's one-line error). With ``split`` the intervals
    use the clusters ``[statistics] cluster`` gives its examples."""
    clusters = None if split is None else example_clusters(split.examples, suite.statistics.cluster)
    reports: dict[str, ComparisonReport] = {}
    errors: dict[str, str] = {}
    for comparison in comparisons_to_run(suite):
        name = comparison.name
        candidate, reference = comparison.candidate, comparison.reference
        if candidate not in arms.reports or reference not in arms.reports:
            absent = [a for a in (candidate, reference) if a not in arms.reports]
            errors[name] = f"arm(s) not run in this selection: {', '.join(absent)}"
            continue
        try:
            reports[name] = build_comparison_report(
                arms.reports[candidate],
                arms.reports[reference],
                arms.scoring[candidate],
                arms.scoring[reference],
                suite.statistics,
                telemetry={
                    candidate: arms.telemetry[candidate],
                    reference: arms.telemetry[reference],
                },
                clusters=clusters,
            )
        except (EvaluationError, InvariantError) as error:
            errors[name] = str(error)
            continue
        requested = int(suite.statistics.noise_floor)
        if requested > 0 and reference in arms.rebatched:
            reports[name]["noise_floor"] = noise_floor_block(
                reference,
                arms.scoring[reference],
                arms.rebatched[reference],
                requested=requested,
                seed=suite.statistics.seed,
                comparison=reports[name],
                arguments_key=suite.arguments_key,
                reasoning=suite.reasoning,
            )
    return reports, errors


def gate_intervals(
    suite: Suite,
    split: FormattedSplit,
    arms: ArmReports,
    comparison_reports: Mapping[str, ComparisonReport],
) -> IntervalAt:
    """The familywise recomputation of a gate's interval (``core.gates.IntervalAt``): the same
    records, clusters and seed as its subject's report block, at another level or null."""
    clusters = example_clusters(split.examples, suite.statistics.cluster)

    def interval_at(gate: GateConfig, level: float, null: float) -> Mapping[str, Any] | None:
        against_reference = gate.kind == SELECTION_KIND and gate.stored is None
        if against_reference and (gate.candidate is None or gate.reference is None):
            return None  # a selection gate with nothing selected
        if gate.kind == "comparison" or against_reference:
            name = f"{gate.candidate}-vs-{gate.reference}"
            if name not in comparison_reports:
                return None
            langs = suite.slices if gate.slice == "overall" else (gate.slice,)
            cand, ref = arms.scoring[str(gate.candidate)], arms.scoring[str(gate.reference)]
            block = comparison_interval_block(
                [r for lang in langs for r in ref[lang]],
                [r for lang in langs for r in cand[lang]],
                suite.statistics,
                label=name if gate.slice == "overall" else f"{name}:{gate.slice}",
                clusters=clusters,
                acceptable=ACCEPTABLE in arms.reports[str(gate.candidate)]["metrics"],
                confidence_level=level,
                null=null,
                include_bootstrap=False,
            )
        elif gate.kind == "gap" and gate.arm in arms.scoring and gate.gap is not None:
            cohort = gap_cohort(split, suite.reference_slice, gate.gap, arms.scoring[gate.arm])
            block = gap_interval_block(
                cohort, gate.arm, gate.gap, suite.statistics, clusters,
                confidence_level=level, null=null, include_bootstrap=False,
            )  # fmt: skip
        else:
            return None
        entry: Mapping[str, Any] | None = block["intervals"].get(gate.metric)
        return entry

    return interval_at


class ArmSide(NamedTuple):
    """One stored arm folder as a side of ``sommelier compare A B``: its run's resolved suite,
    suite, split, the arm as stored, the scorers its run recorded and its run id."""

    resolved: dict[str, Any]
    suite: Suite
    split: FormattedSplit
    arm: ArmRun
    scorers: tuple[Scorer, ...]
    run_id: str


def compare_arm_sides(candidate: ArmSide, reference: ArmSide) -> ComparisonReport:
    """A comparison report between two stored arms (possibly of different runs): both arms'
    reports rebuilt from their records against their own run's split, then the identity gate
    decides whether they may be compared at all (``build_comparison_report``)."""
    outcomes = []
    for side in (candidate, reference):
        outcome = evaluate_run(
            side.suite, side.split, {side.arm.name: side.arm}, run_id=side.run_id,
            model=side.resolved["model"], gates=False, scorers=side.scorers,
        )  # fmt: skip
        outcomes.append(outcome)
    cand, ref = outcomes
    cand_name, ref_name = candidate.arm.name, reference.arm.name
    cand_report, ref_report = cand.arm_reports[cand_name], ref.arm_reports[ref_name]
    cand_tele, ref_tele = cand.telemetry[cand_name], ref.telemetry[ref_name]
    if cand_name == ref_name:  # the same arm from two runs: label each by its run
        cand_label, ref_label = f"{cand_name}@{candidate.run_id}", f"{ref_name}@{reference.run_id}"
        cand_report = cast(EvaluationReport, {**cand_report, "arm": cand_label})
        ref_report = cast(EvaluationReport, {**ref_report, "arm": ref_label})
        cand_tele = cast(Telemetry, {**cand_tele, "arm": cand_report["arm"]})
        ref_tele = cast(Telemetry, {**ref_tele, "arm": ref_report["arm"]})
    return build_comparison_report(
        cand_report,
        ref_report,
        cand.records[cand_name],
        ref.records[ref_name],
        candidate.suite.statistics,
        telemetry={cand_report["arm"]: cand_tele, ref_report["arm"]: ref_tele},
    )


def derive_side(run: RunRef, inputs: StoredInputs) -> Scored:
    """A stored run as a comparison side: its arm reports re-derived from the records the store
    read (:func:`build_arm_reports` under its own conditions and recorded scorers)."""
    digest = config_sha256(inputs.suite, inputs.split, inputs.resolved["model"])
    built = build_arm_reports(
        inputs.suite, inputs.split, inputs.arms,
        run_id=inputs.resolved.get("run_id", run.path.name), digest=digest,
        scorers=inputs.scorers,
    )  # fmt: skip
    return Scored(
        inputs.resolved, inputs.suite, inputs.split, dict(built.reports), dict(built.scoring),
        dict(inputs.problems),
    )  # fmt: skip


def _found(found: tuple[RunRef, StoredInputs | str]) -> Found:
    """A looked-up stored run with its side re-derived (or why not, one line)."""
    run, inputs = found
    if isinstance(inputs, str):
        return Found(run, inputs, Recorded(None, None, frozenset()))
    try:
        return Found(run, derive_side(run, inputs), inputs.recorded)
    except SommelierError as error:
        return Found(run, str(error), inputs.recorded)


def evaluate_run(
    suite: Suite,
    split: FormattedSplit,
    arms: Mapping[str, ArmRun],
    *,
    run_id: str,
    model: Mapping[str, Any],
    errored: Iterable[str] = (),
    gates: bool = True,
    scorers: Sequence[Scorer] = (),
    compare_stored: bool = False,
    stored: StoredEvidence | None = None,
    compare: str | None = None,
    fail_specs: Sequence[FailSpec] = (),
) -> RunOutcome:
    """Arm reports, then comparisons (with the stored runs too), then the verdict of one run:
    every gate judged once (``core.verdict.judge``).

    ``errored`` names items that errored (model errors, lost workers): their presence makes the
    run incomplete. ``model`` is the suite's base-model identity (content digest or revision).
    ``scorers`` are the suite's enabled scorers (core.scorers), ``compare_stored`` as in
    :func:`rescored`. ``stored`` is what the run store looked up for the gates (the stored runs
    ``compare`` and the ``stored`` gates name); with it the run is compared with each
    (``RunOutcome.against``) and its ``stored`` gates, stored selection gates and the
    compare-fail gates of ``fail_specs`` (against ``compare``'s run) join the verdict.
    """
    built = build_arm_reports(
        suite, split, arms, run_id=run_id, digest=config_sha256(suite, split, model),
        scorers=scorers, compare_stored=compare_stored,
    )  # fmt: skip
    complete = (
        set(arms) == set(suite.arms)
        and all(count == 0 for count in built.missing.values())
        and not list(errored)
    )
    comparison_reports, comparison_errors = build_comparisons(suite, built, split)
    interval_at = gate_intervals(suite, split, built, comparison_reports)
    selection = (
        None
        if suite.selection is None
        else selection_block(
            suite.selection,
            built.reports,
            built.scoring,
            suite.statistics,
            example_clusters(split.examples, suite.statistics.cluster),
        )
    )
    against = None
    if stored is not None:
        scored = scored_outcome(stored.resolved, suite, split, built.reports, built.scoring)
        reports_complete = bool(built.reports) and set(suite.arms) <= set(built.reports) and all(
            bool(report.get("complete")) for report in built.reports.values()
        )
        against = against_stored(
            candidate_run(stored.candidate, scored, reports_complete and complete),
            scored,
            suite=stored.suite,
            store=stored.store,
            flips=stored.flips,
            looked_up=[
                (spec, _found(state) if isinstance(state, tuple) else state)
                for spec, state in stored.looked_up
            ],
            lookup=stored.lookup,
        )
    verdict = (
        judge(
            suite,
            arm_reports=built.reports,
            comparison_reports=comparison_reports,
            comparison_errors=comparison_errors,
            complete=complete,
            run_id=run_id,
            interval_at=interval_at,
            selection=selection,
            against=against,
            compare=compare,
            fail_specs=fail_specs,
        )
        if gates
        else None
    )
    return RunOutcome(
        run_id=run_id,
        complete=complete,
        arm_reports=built.reports,
        telemetry=built.telemetry,
        comparison_reports=comparison_reports,
        comparison_errors=comparison_errors,
        verdict=verdict,
        records=built.scoring,
        missing=built.missing,
        generations=built.generations,
        rebatched=built.rebatched,
        interval_at=interval_at,
        selection=selection,
        against=against,
    )


__all__ = [
    "METRIC_NAMES",
    "ArmReports",
    "ArmRun",
    "ArmSide",
    "RunOutcome",
    "StoredEvidence",
    "StoredInputs",
    "build_arm_reports",
    "build_comparisons",
    "compare_arm_sides",
    "comparisons_to_run",
    "config_sha256",
    "derive_side",
    "evaluate_run",
    "gate_intervals",
    "generation_record",
    "noise_plan",
    "order_records",
    "rescored",
    "telemetry_for",
]
