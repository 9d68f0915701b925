"""Typed records shared by every layer: the loaded suite, the formatted split and its examples.

These are plain frozen dataclasses with no behaviour beyond derived names, so the pure core
(pipeline, reports, gates) can take them without importing the loaders in
``pytest_sommelier.data``. Invariants are kept by the loaders that build them
(``data.suite.load_suite``, ``data.split.load_split``), documented there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelConfig:
    """``[model]``: ``base`` is a hub id or ``pkg:`` ref as written, or a resolved local path."""

    base: str
    revision: str | None
    dtype: str | None
    device: str | None


@dataclass(frozen=True)
class ArmConfig:
    """``[arms.<name>]``: no adapter means the base model itself."""

    name: str
    adapter: str | None
    adapter_revision: str | None


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
