"""Typed records shared by every layer: the loaded suite, the formatted split and its examples,
the generation and scoring records, timings, worker payloads and batch keys.

These are plain frozen dataclasses with no behaviour beyond derived names, so the pure core
(pipeline, reports, gates) can take them without importing the loaders in
``pytest_sommelier.data``. Invariants are kept by the loaders that build them
(``data.suite.load_suite``, ``data.split.load_split``), documented there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict


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


ENGINE_NAMES: tuple[str, ...] = ("transformers", "vllm", "openai")
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

    name: str = "transformers"
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


@dataclass(frozen=True)
class StatisticsConfig:
    """``[statistics]``: paired-bootstrap settings."""

    seed: int
    resamples: int
    confidence_level: float


@dataclass(frozen=True)
class GateConfig:
    """One ``[[gates]]`` entry; ``kind`` is derived from its keys ("arm", "comparison", "gap")."""

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


@dataclass(frozen=True)
class Suite:
    """A loaded, validated suite; ``slices[0]`` is the reference (root) slice."""

    path: Path
    name: str
    test_split: Path
    slices: tuple[str, ...]
    model: ModelConfig
    decoding: dict
    arms: dict[str, ArmConfig]
    comparisons: tuple[ComparisonConfig, ...]
    statistics: StatisticsConfig
    gates: tuple[GateConfig, ...]
    engine: EngineConfig = field(default_factory=EngineConfig)

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
    gold_call: dict
    line: int
    acceptable_arguments: dict | None = None  # BFCL's acceptable values (core.acceptable)


@dataclass(frozen=True)
class FormattedSplit:
    """A validated split partitioned into the configured slices (``slices[0]`` is the root)."""

    path: Path
    sha256: str
    split: str
    examples: tuple[Example, ...]
    slices: dict[str, tuple[Example, ...]]
    prompt_set_sha256: dict[str, str]
    pairs: dict[str, tuple[tuple[str, str], ...]]
    pair_set_sha256: dict[str, str]


# --------------------------------------------------------------------------- records
# JSON records are TypedDicts: they are written to and read from JSON artifacts as they are, and
# travel between xdist processes as report attributes, so they stay plain dicts at run time.


class GenerationRecord(TypedDict):
    """One line of ``eval/<arm>/generations.<slice>.jsonl`` (``cached`` only in a run's own
    records: whether the output came from the generation cache)."""

    example_id: str
    arm: str
    model_kind: str  # "base" | "adapter"
    language: str
    prompt_sha256: str
    raw_text: str
    parsed_call: dict[str, Any] | None
    parse_status: str
    decoding: dict[str, Any]
    cached: NotRequired[bool]
    miss_category: NotRequired[str | None]  # core.misses; set when the run is scored
    value_language_mismatch: NotRequired[bool]  # translated examples only


class ScoringRecord(GenerationRecord):
    """A generation record plus the gold call of its example: what metrics and stats take."""

    gold_call: dict[str, Any]
    acceptable_arguments: NotRequired[dict[str, Any] | None]


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
    selfcheck_differs: bool | None


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


@dataclass(frozen=True)
class BatchKey:
    """One fixed generation batch: batch ``index`` of (suite file, arm, slice)."""

    suite: str
    arm: str
    language: str
    index: int
