"""Typed records shared by every layer: the loaded suite, the formatted split and its examples,
the generation and scoring records, timings, worker payloads, batch keys, and every report a
run writes (arm report, telemetry, comparison report, gate result, verdict).

These are plain frozen dataclasses with no behaviour beyond derived names, so the pure core
(pipeline, reports, gates) can take them without importing the loaders in
``pytest_sommelier.data``. Invariants are kept by the loaders that build them
(``data.suite.load.load_suite``, ``data.split.load.load_split``), documented there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

from pytest_sommelier.registry import BUILTIN, DEFAULT_ENGINE


@dataclass(frozen=True)
class ModelConfig:
    """``[model]``: ``base`` is a hub id or ``pkg:`` ref as written, or a resolved local path."""

    base: str
    revision: str | None
    dtype: str | None
    device: str | None
    served_name: str | None = None


@dataclass(frozen=True)
class ArmConfig:
    """``[arms.<name>]``: no adapter means the base model itself."""

    name: str
    adapter: str | None
    adapter_revision: str | None
    served_name: str | None = None


ENGINE_NAMES: tuple[str, ...] = tuple(BUILTIN["engines"])
"""The built-in engines' names (``registry.BUILTIN``, their one home); an extension's engine
(an entry point or a ``pytest_sommelier_add_engines`` hook) is chosen by name as well."""
PROMPT_FORMATS: tuple[str, ...] = ("token_ids", "text")


@dataclass(frozen=True)
class EngineConfig:
    """``[engine]`` (every key optional; absent = transformers).

    ``options`` go to ``vllm.LLM`` (the vllm engine refuses the keys it owns); the other fields
    are the OpenAI-compatible client's, used only when ``name`` is ``openai``, so
    ``--sommelier-engine`` can switch engines without editing the suite. ``prompt_format`` says
    how prompts reach a server: ``token_ids`` (the tokens the transformers engine sees) or
    ``text`` for servers that refuse token-id prompts.
    """

    name: str = DEFAULT_ENGINE
    options: Mapping[str, Any] = field(default_factory=dict)
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int = 16
    request_timeout_s: float = 300.0
    max_retries: int = 3
    prompt_format: str = "token_ids"


@dataclass(frozen=True)
class ComparisonConfig:
    """``[[comparisons]]``: candidate minus reference, paired by example."""

    candidate: str
    reference: str

    @property
    def name(self) -> str:
        """The comparison's name, used for report files and seed derivation."""
        return f"{self.candidate}-vs-{self.reference}"


INTERVAL_CHOICES: tuple[str, ...] = ("auto", "bootstrap")
CLUSTER_CHOICES: tuple[str, ...] = ("root", "example")
FAMILYWISE_CHOICES: tuple[str, ...] = ("none", "bonferroni", "holm")


@dataclass(frozen=True)
class StatisticsConfig:
    """``[statistics]``: the bootstrap's seed, resamples and level, the interval method
    (``auto``: per-metric intervals; ``bootstrap``: the seed's percentile bootstrap), the
    clusters (``root``: a root and its translations, or a row's ``cluster_id``; ``example``:
    every example alone), the familywise adjustment of the interval gates and the power the
    minimum detectable effect is computed at, and ``noise_floor`` reference-arm examples
    re-batched to measure engine noise (core.noise; 0 is off). The last five have defaults so
    a resolved suite written before they existed still loads."""

    seed: int
    resamples: int
    confidence_level: float
    interval: str = "auto"
    cluster: str = "root"
    familywise: str = "none"
    power: float = 0.8
    noise_floor: int = 0
    effect: float | None = None  # the difference the suite cares about: the design's power for it


@dataclass(frozen=True)
class GateConfig:
    """One ``[[gates]]`` entry; ``kind`` is derived from its keys ("arm", "comparison", "gap",
    "stored", "selection"). A ``selection`` gate (``selected = true``) names no arm: it is
    resolved (``core.gates.resolve_selection_gates``) into ``candidate`` (the selected arm),
    ``reference`` (the selection's reference, or the stored run's arm) and ``candidates`` (K)."""

    name: str
    kind: str
    metric: str
    slice: str
    arm: str | None
    candidate: str | None
    reference: str | None
    gap: str | None
    min: float | None
    max: float | None
    ci_lower_above: float | None
    ci_lower_at_least: float | None
    delta_at_least: float | None
    ci_upper_below: float | None = None  # defaults: a resolved suite of 0.2 has no such keys
    ci_upper_at_most: float | None = None
    stored: str | None = None  # a "stored" gate: "last" or a store number (its arm's stored twin)
    effect: float | None = None  # the difference this gate's claim cares about (its power, plan)
    selected: bool = False  # ``selected = true``: a gate on the [selection]'s selected candidate
    candidates: int = 0  # a resolved selection gate: K, the candidates it was selected among


SPLIT_TOKENIZER_POLICIES: tuple[str, ...] = ("base", "any")
"""``[suite] split_tokenizer``: ``base`` (the default) requires the split to be formatted with
the base model's own tokenizer; ``any`` accepts another one on purpose (recorded in the
resolved suite)."""


@dataclass(frozen=True)
class SelectionConfig:
    """``[selection]``: choose the best of the arms ``among`` names (an ``fnmatch`` pattern over
    arm names, e.g. ``adapter@*``) by ``metric`` on ``slice`` (``overall`` or a configured
    slice) against ``reference`` (core.selection)."""

    metric: str
    among: str
    reference: str
    candidates: tuple[str, ...] = ()  # the arms ``among`` matched, in the suite's arm order
    slice: str = "overall"


@dataclass(frozen=True)
class Suite:
    """A loaded, validated suite; ``slices[0]`` is the reference (root) slice.

    ``arguments_key`` (``[suite] arguments_key``) is the key parser v1 reads a call's arguments
    under, in model outputs and in native-policy split targets (core.parse.ARGUMENTS_KEYS)."""

    path: Path
    name: str
    test_split: Path
    slices: tuple[str, ...]
    model: ModelConfig
    decoding: Decoding
    arms: dict[str, ArmConfig]
    comparisons: tuple[ComparisonConfig, ...]
    statistics: StatisticsConfig
    gates: tuple[GateConfig, ...]
    engine: EngineConfig = field(default_factory=EngineConfig)
    arguments_key: str = "arguments"
    split_tokenizer: str = "base"  # SPLIT_TOKENIZER_POLICIES: "any" accepts another tokenizer's
    selection: SelectionConfig | None = None  # [selection]: the best candidate, core.selection
    scorers: tuple[str, ...] = ()  # [suite] scorers: the extension scorers it enables (by name)
    parser_version: str = "v1"  # [parser] version: core.parse_v2.PARSER_VERSIONS
    parser_order: str = "any"  # [parser] order: core.parse_v2.ORDERS (read under v2 only)
    # [parser] reasoning: core.reasoning.ReasoningRule (None, a Delimiters pair or "engine")
    reasoning: Any = None
    # [format] template_kwargs: the chat-template options the split must be formatted with
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reference_slice(self) -> str:
        """The first configured slice: the root language pairs are joined to."""
        return self.slices[0]


@dataclass(frozen=True)
class Example:
    """One formatted example; ``line`` is its 1-based line in the split file."""

    example_id: str
    language: str
    source_example_id: str | None
    prompt_text: str
    prompt_sha256: str
    gold_call: Call | None  # None exactly when ``expect`` is not "call" (core.abstention)
    line: int
    # BFCL's acceptable values (core.acceptable): one object, or one per gold call (parser v2)
    acceptable_arguments: dict[str, Any] | list[dict[str, Any]] | None = None
    cluster_id: str | None = None  # the row's declared cluster (core.clusters.example_clusters)
    tools: Any = field(default=None, compare=False)  # the row's tools (what a scorer may read)
    # the chat-template options the row was rendered with (formatted_example.v3; None: none)
    template_kwargs: dict[str, Any] | None = field(default=None, compare=False)
    full_text: str = field(default="", compare=False)  # the rendered conversation (checks only)
    expect: str = "call"  # "call" | "no_call" | "any_call" (core.abstention.EXPECTS)
    call_markers: tuple[str, ...] = ()  # the template's call markers (core.abstention)
    # parser v2 (core.parse_v2): the suite's [parser] version the example is read under, and
    # for a "call" example its gold calls (gold_call is the first) and the suite's order
    parser_version: str = "v1"
    gold_calls: tuple[Call, ...] | None = None
    call_order: str | None = None


@dataclass(frozen=True)
class FormattedSplit:
    """A validated split partitioned into the configured slices (``slices[0]`` is the root).

    ``raw`` is the file's bytes exactly as read (``sha256`` is their digest): a run's copy of
    its split is written from them, so the copy is the split the run used, byte for byte, even
    when the file changes on disk after loading."""

    path: Path
    sha256: str
    split: str
    examples: tuple[Example, ...]
    slices: dict[str, tuple[Example, ...]]
    prompt_set_sha256: dict[str, str]
    pairs: dict[str, tuple[tuple[str, str], ...]]
    pair_set_sha256: dict[str, str]
    raw: bytes = field(default=b"", repr=False, compare=False)
    left_out: dict[str, int] = field(default_factory=dict)
    """Rows of languages that are not a configured slice (language -> rows): not evaluated."""
    sample: dict[str, Any] | None = field(default=None, compare=False)
    """A seeded sample of the file (``data.split.sample``: roots, seed, of_roots, of_sha256),
    None for the whole split."""
    tokenizers: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """The distinct ``(tokenizer_id, tokenizer_revision)`` of every row of the file (left out or
    not), in file order, as the split loader read them (``inference.split_check`` compares them
    with the base's tokenizer without reading the file again); empty for a split not built by
    the loader."""


# --------------------------------------------------------------------------- records
# JSON records are TypedDicts: they are written to and read from JSON artifacts as they are, and
# travel between xdist processes as report attributes, so they stay plain dicts at run time.
# Each is the one definition of its artifact (docs/artifacts.md); the builders in core return
# these types and every reader in core, data and plugin takes them.

ModelKind = Literal["base", "adapter"]
VerdictName = Literal["pass", "fail", "incomplete"]


def model_kind_of(adapter: object) -> ModelKind:
    """The one model-kind rule: ``"base"`` when an arm has no adapter (None), else ``"adapter"``.

    ``adapter`` is whatever names the adapter where the caller stands: a suite's
    ``ArmConfig.adapter`` or a generator's ``adapter_identity``.
    """
    return "base" if adapter is None else "adapter"


class Call(TypedDict):
    """One tool call, as the parser returns it and as a gold call is stored (core.parse)."""

    name: str
    arguments: dict[str, Any]


class Decoding(TypedDict):
    """The validated decoding settings (core.decoding.validate_decoding fills the defaults)."""

    temperature: float
    do_sample: bool
    max_new_tokens: int
    batch_size: int


FINISH_STOP: Literal["stop"] = "stop"
FINISH_LENGTH: Literal["length"] = "length"
FINISH_UNKNOWN: Literal["unknown"] = "unknown"
FINISH_REASONS: tuple[str, ...] = (FINISH_STOP, FINISH_LENGTH, FINISH_UNKNOWN)
"""Why a completion ended: ``stop`` (an end-of-sequence or stop token came within
``max_new_tokens``), ``length`` (``max_new_tokens`` was reached first) or ``unknown`` (the
generator does not say: a user-written one that returns plain strings)."""


class Completion(NamedTuple):
    """One completion as an engine's ``generate_completions`` returns it: the text, why it
    ended (one of :data:`FINISH_REASONS`) and how many new tokens were generated (the stop token
    included; None when unknown)."""

    text: str
    finish_reason: str = FINISH_UNKNOWN
    generated_tokens: int | None = None
    reasoning: str | None = None  # the engine's own reasoning channel (``reasoning_content``)
    has_content: bool = True  # False: the engine sent reasoning and no content at all


class GenerationRecord(TypedDict):
    """One line of ``eval/<arm>/generations.<slice>.jsonl`` (``cached`` only in a run's own
    records: whether the output came from the generation cache). ``finish_reason`` and
    ``generated_tokens`` are the engine's (:class:`Completion`); records written before 0.3 have
    neither and are read as ``unknown``."""

    example_id: str
    arm: str
    model_kind: str  # ModelKind: "base" | "adapter" (a stored record is not trusted to be one)
    language: str
    prompt_sha256: str
    raw_text: str
    reasoning_text: NotRequired[str | None]  # core.reasoning: the separated span, or null
    content_text: NotRequired[str | None]  # what parser v1 read; null: the span never closed
    reasoning_tokens: NotRequired[int | None]  # the engine's count of the reasoning's tokens
    parsed_call: Call | None  # parser v2: the first of parsed_calls
    parsed_calls: NotRequired[list[Call] | None]  # parser v2 only: every call, in order
    parse_status: str
    decoding: dict[str, Any]
    finish_reason: NotRequired[str]  # FINISH_REASONS
    generated_tokens: NotRequired[int | None]
    cached: NotRequired[bool]
    miss_category: NotRequired[str | None]  # core.misses; set when the run is scored
    value_language_mismatch: NotRequired[bool]  # translated examples only
    scores: NotRequired[dict[str, list[int]]]  # core.scorers: name -> [numerator, denominator]


class ScoringRecord(GenerationRecord):
    """A generation record plus the gold call of its example: what metrics and stats take.
    A non-``call`` example (core.abstention) has no gold call and carries its ``expect``, the
    template's ``call_markers`` and, for ``any_call``, the offered ``tool_names``."""

    gold_call: Call | None
    gold_calls: NotRequired[list[Call]]  # parser v2, a "call" example: its gold calls
    call_order: NotRequired[str]  # parser v2, a "call" example: [parser] order (core.call_sets)
    acceptable_arguments: NotRequired[dict[str, Any] | list[dict[str, Any]] | None]
    expect: NotRequired[str]  # absent for a "call" example
    call_markers: NotRequired[list[str]]
    tool_names: NotRequired[list[str]]


class DeviceInfo(TypedDict):
    """Where a generator runs (from its optional ``device_info()``)."""

    device: str
    device_count: int


class Timing(TypedDict):
    """One generated example's timing, the input of ``inference_telemetry.json``."""

    language: str
    cached: bool
    seconds: float
    worker: str
    processes: int
    device: DeviceInfo
    selfcheck_differs: NotRequired[bool | None]


class WorkerPayload(TypedDict):
    """What one evaluated item sends to the session aggregator (an xdist report attribute)."""

    suite: str
    record: GenerationRecord
    model_identity: dict[str, Any]
    adapter_identity: dict[str, Any] | None
    seconds: float
    worker: str
    processes: int  # the session's number of worker processes (1 outside xdist)
    device: DeviceInfo
    hit: bool
    selfcheck_differs: bool | None
    rebatched: NotRequired[RebatchedOutput | None]  # the noise floor's (core.noise)


class RebatchedOutput(TypedDict):
    """A reference-arm output generated again for the noise floor (batch size 1, another
    order, same engine and decoding), as it travels in a payload."""

    raw_text: str
    finish_reason: str
    generated_tokens: int | None


# --------------------------------------------------------------------------- reports
# The report blocks of docs/artifacts.md, innermost first. A metrics block maps metric names (the
# five of metrics.METRIC_NAMES, then acceptable_call_match when present) to a MetricValue.


class MetricValue(TypedDict):
    """One metric: ``value`` is ``numerator / denominator``, None exactly when it is 0."""

    value: float | None
    numerator: int
    denominator: int


Metrics = dict[str, MetricValue]
Deltas = dict[str, float | None]  # metric -> candidate - reference (or target - reference)


class Interval(TypedDict):
    lower: float | None
    upper: float | None


BOOTSTRAP_METHOD = "paired_bootstrap_percentile"
"""The ``method`` of a ``ci95`` block (``core.stats``) and of a percentile interval over pairs
(``core.intervals.PERCENTILE_PAIRS``): one name, kept here so neither imports the other."""


class IntervalBlock(TypedDict):
    """A ``ci95`` block: the return value of ``core.stats.paired_bootstrap``."""

    method: str
    seed: int
    confidence_level: float
    resamples: int
    pairs: int
    intervals: dict[str, Interval]


class Discordant(TypedDict):
    candidate_only: int
    reference_only: int


class PairedInterval(TypedDict):
    """One metric's entry of an ``intervals`` block (core.intervals.paired_interval_block)."""

    estimate: float | None
    lower: float | None
    upper: float | None
    method: str
    discordant: Discordant
    degenerate: bool
    design_effect: float | None
    p_value: float | None
    pairs: NotRequired[int]  # a rate metric's counted pairs (a margin gate's Tango interval)
    df: NotRequired[float]  # over clusters: <= informative_clusters - 1 (core.clusters)
    informative_clusters: NotRequired[int]  # over clusters: those holding a discordant pair


class PairedIntervals(TypedDict):
    """An ``intervals`` block: the intervals ``[statistics] interval`` selects, candidate minus
    reference (core.stats.paired_intervals_arrays without its ``bootstrap`` part)."""

    confidence_level: float
    interval: str
    pairs: int
    clusters: int
    clustered: bool
    largest_cluster: NotRequired[int]  # the pairs of the largest cluster (the views' warning)
    size_weighted_cluster: NotRequired[float]  # clustered: sum(m^2)/sum(m) (the views' warning)
    null: float
    seed: int
    resamples: int
    intervals: dict[str, PairedInterval]


class PowerSummary(TypedDict):
    """What one paired rate comparison can detect (core.power.power_summary)."""

    power: float
    confidence_level: float
    pairs: int
    clusters: int
    design_effect: float
    effective_pairs: float | None
    discordant_proportion: float | None
    discordance_floored: bool
    minimum_detectable_effect: float | None
    attainable: bool
    effect: NotRequired[float]  # [statistics] effect, when the suite declares one
    power_at_effect: NotRequired[float | None]


PowerBlock = dict[str, PowerSummary]
"""``power``: a rate metric's name -> its power summary (argument_f1 is not a proportion)."""


class MissCounts(TypedDict):
    """A ``misses`` block (core.misses): the category counts sum to ``misses``."""

    misses: int
    categories: dict[str, int]
    value_language_mismatch: NotRequired[int]  # translated slices (and overall with some)


class SliceBlock(TypedDict):
    """``slices.<lang>`` of an evaluation report."""

    metrics: Metrics
    misses: MissCounts
    examples: int
    prompt_set_sha256: str
    generation_artifact: str
    expects: NotRequired[dict[str, int]]  # core.abstention.expect_counts, with abstention only


class PairedSlice(TypedDict):
    """``paired_slices.<lang>``: the matched-pair language gap of one target slice."""

    reference_slice: str
    pairs: int
    coverage: float | None
    pair_set_sha256: str
    reference_metrics: Metrics
    target_metrics: Metrics
    gaps: Deltas
    ci95: IntervalBlock
    intervals: NotRequired[PairedIntervals]  # absent in reports written before 0.3
    power: NotRequired[PowerBlock]


class MarginalGap(TypedDict):
    """``language_gaps.<lang>``: the descriptive full-slice gap (no interval)."""

    cohort: str
    reference_slice: str
    reference_examples: int
    target_examples: int
    gaps: Deltas


class Conditions(TypedDict):
    """The evaluation conditions an arm report records and a comparison's ``shared`` block
    holds once both arms agree on them (the identity gate, ``report_identity.check_identity``)."""

    model_identity: dict[str, Any] | None
    config_sha256: str
    split: str
    test_split_sha256: str
    parser_version: str
    arguments_key: str  # the parser's argument key (core.parse.parser_identity); absent = arguments
    decoding: dict[str, Any]


class EvaluationReport(Conditions):
    """``eval/<arm>/evaluation_report.json``: one arm's report (core.report_blocks)."""

    schema_version: str
    run_id: str
    plugin_version: str  # the pytest-sommelier release that scored the arm
    arm: str
    model_kind: str
    adapter_identity: dict[str, Any] | None
    slice_order: list[str]
    slices: dict[str, SliceBlock]
    paired_slices: dict[str, PairedSlice]
    language_gaps: dict[str, MarginalGap]
    metrics: Metrics
    misses: MissCounts
    complete: bool
    finish_reasons: NotRequired[dict[str, int]]  # core.misses.finish_counts: stop/length/unknown
    scorers: NotRequired[list[dict[str, str]]]  # core.scorers.scorer_identity (with scorers)
    parser: NotRequired[dict[str, Any]]  # {version, reasoning}: core.reasoning.parser_block
    reasoning: NotRequired[dict[str, Any]]  # core.reasoning.reasoning_summary (a declared rule)
    template_kwargs: NotRequired[dict[str, Any]]  # [format] template_kwargs (when declared)


class TelemetrySlice(TypedDict):
    seconds: float
    examples: int
    timed_examples: int
    cached_examples: int


class Telemetry(TypedDict):
    """``eval/<arm>/inference_telemetry.json`` (core.pipeline.telemetry_for)."""

    schema_version: str
    arm: str
    boundary: str
    batch_size: int
    concurrency: int
    device: str
    device_count: int
    slices: dict[str, TelemetrySlice]
    total_seconds: float
    examples: int
    timed_examples: int
    cached_examples: int
    seconds_per_example: float | None
    warmup: dict[str, Any]
    determinism_selfcheck: dict[str, Any]


class SharedBlock(Conditions):
    """``shared`` of a comparison report: what the identity gate found both arms agree on."""

    slices: list[str]
    prompt_set_sha256: dict[str, str]
    pair_set_sha256: dict[str, str]
    metric_names: list[str]
    parser: NotRequired[dict[str, Any]]  # {version, reasoning} both arms agree on
    template_kwargs: NotRequired[dict[str, Any]]  # the chat-template options both used


class McNemar(TypedDict):
    metric: str
    candidate_only: int
    reference_only: int
    p_value: float
    method: str
    mid_p_value: NotRequired[float]  # core.proportions.mcnemar_mid_p (absent before 0.3)


class ComparisonSlice(TypedDict):
    """``slices.<lang>`` of a comparison report."""

    deltas: Deltas
    ci95: IntervalBlock
    intervals: NotRequired[PairedIntervals]
    power: NotRequired[PowerBlock]
    identical_outputs: int
    compared_examples: int


class ArmEfficiency(TypedDict):
    seconds_per_example: float | None
    device_seconds_per_success: float | None
    device_count: int | None


class MarginalGaps(TypedDict):
    """``language_gaps`` of a comparison report: both arms' descriptive gaps."""

    cohort: str
    arms: dict[str, dict[str, MarginalGap]]


class ArmMisses(TypedDict):
    slices: dict[str, MissCounts | None]
    overall: MissCounts | None


Efficiency = dict[str, Any]
"""``efficiency``: ``{<arm>: ArmEfficiency, "cross_comparable": bool, "reason": str}`` (arm names
and two fixed keys side by side, so not a TypedDict; ``report_comparison.efficiency_block``
builds it)."""


class NoiseDiff(TypedDict):
    """One re-batched output that differs from the run's."""

    example_id: str
    language: str
    full_call_flips: bool
    text: str
    rebatched_text: str


class NoiseFloor(TypedDict):
    """``noise_floor`` of a comparison report (docs/artifacts.md)."""

    arm: str
    requested: int
    examples: int
    outputs_differ: int
    full_call_flips: int
    seed: int
    method: str
    candidate_outputs_differ: int
    candidate_discordant: int
    differing: list[NoiseDiff]


class ComparisonReport(TypedDict):
    """``report/<candidate>-vs-<reference>.json``: candidate minus reference
    (core.report_comparison)."""

    schema_version: str
    name: str
    candidate: str
    reference: str
    shared: SharedBlock
    identical_outputs: int
    compared_examples: int
    deltas: Deltas
    ci95: IntervalBlock
    intervals: NotRequired[PairedIntervals]
    power: NotRequired[PowerBlock]
    mcnemar: McNemar
    slices: dict[str, ComparisonSlice]
    paired_language_gaps: dict[str, dict[str, PairedSlice]]
    language_gaps: MarginalGaps
    efficiency: Efficiency
    misses: dict[str, ArmMisses]
    noise_floor: NotRequired[NoiseFloor]  # core.noise, with [statistics] noise_floor > 0
    reasoning: NotRequired[dict[str, dict[str, Any]]]  # per arm: core.reasoning figures


class GateResult(TypedDict):
    """One entry of ``gate_verdict.json``'s ``gates`` (core.gates.evaluate_gate)."""

    name: str
    kind: str
    metric: str
    slice: str | None
    threshold: dict[str, float]
    subject: str
    passed: bool
    observed: float | None
    reason: str
    # interval gates only (core.gates): what the gate compared, at full precision
    estimate: NotRequired[float | None]
    interval: NotRequired[GateInterval]
    adjusted_p_value: NotRequired[float | None]  # familywise "holm"
    # compare-fail gates (data.store.history_gate): the paired difference, its interval and the
    # flipped examples against the stored run, shown beside a failed gate
    evidence: NotRequired[str]
    stored: NotRequired[str]
    selection: NotRequired[GateSelection]  # a selection gate (core.gates.SELECTION_KIND)


class GateSelection(TypedDict):
    """A selection gate's selection: the selected arm (None: nothing was selected), the arm it
    was compared with (the selection's reference or the stored run's arm), the stored run's
    spec (None: against the reference), K and the level its interval was read at."""

    selected: str | None
    reference: str | None
    stored: str | None
    candidates: int
    confidence_level: float | None
    method: str  # "bonferroni": the level's adjustment over the K candidates


class GateInterval(TypedDict):
    """The interval an interval gate read: the bounds, the method and level it was computed
    at, the discordant pairs, the design effect, the p-value at the gate's threshold (holm)
    and what the run could detect at that level (null for argument_f1)."""

    lower: float | None
    upper: float | None
    method: str
    confidence_level: float
    discordant: Discordant | None  # None: read from a ci95 block, which has no counts
    degenerate: bool
    design_effect: float | None
    p_value: float | None
    null: float | None
    minimum_detectable_effect: float | None
    pairs: int | None
    power: float | None
    effect: NotRequired[float]  # the gate's (or [statistics]) effect, when one is declared
    power_at_effect: NotRequired[float | None]  # the design's power for it, observed discordance


class Familywise(TypedDict):
    """``familywise`` of a verdict: the family (the suite's interval gates), its size, the
    method and the level each member's interval was computed at (or its adjusted p-value)."""

    method: str
    family: list[str]
    size: int
    confidence_level: float
    adjusted_confidence_level: dict[str, float]
    adjusted_p_value: dict[str, float | None]


class Verdict(TypedDict):
    """``gate_verdict.json`` (core.gates.evaluate_gates)."""

    schema_version: str
    run_id: str
    verdict: VerdictName
    complete: bool
    gates: list[GateResult]
    familywise: NotRequired[Familywise]
    # a sweep with a [selection]: every checkpoint's copy of a gate, reported; the deciding
    # entry in ``gates`` is the selected checkpoint's (core.gates.selected_copies)
    per_candidate: NotRequired[list[GateResult]]


@dataclass(frozen=True)
class BatchKey:
    """One fixed generation batch: batch ``index`` of (suite file, arm, slice)."""

    suite: str
    arm: str
    language: str
    index: int
