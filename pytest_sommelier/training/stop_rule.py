"""``stop_when``: when the callback ends training. Two forms, one parser
(:func:`parse_stop_when`):

- ``"no_improvement:METRIC:PATIENCE"``: stop when the paired evidence shows no gain over the
  best checkpoint for PATIENCE evaluations in a row (:class:`StopRule`, below);
- ``"gate_fail:NAME"``: stop at the first checkpoint whose verdict holds gate NAME failed (the
  name is checked against the evaluated suite's gates at ``on_train_begin``).

The first evaluated checkpoint is the best so far. Each later one is compared with the best
over the same examples (``core.stored_comparison.paired_interval``: the suite's ``[statistics]``
interval over its clusters, seed ``derive_seed(seed, label)``): when the selected interval's
lower bound of ``METRIC`` (this checkpoint minus the best) is above zero, it is the new best
and the count restarts; otherwise the count grows, and at PATIENCE the rule says stop. A
point estimate above the best without an interval above zero is not a gain: that is the
evidence rule of every gate.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_sommelier.core.extra_columns import EXTRA_METRICS
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.stored_comparison import paired_interval
from pytest_sommelier.core.text import fmt, fmt_interval, selected_interval
from pytest_sommelier.core.types import ScoringRecord, StatisticsConfig
from pytest_sommelier.errors import InputError

RULE = "no_improvement"
GATE_FAIL = "gate_fail"
HINT = "e.g. stop_when='no_improvement:full_call_exact_match:2' or stop_when='gate_fail:NAME'"


@dataclass(frozen=True)
class StopWhen:
    """One parsed ``stop_when``: ``kind`` is :data:`RULE` (``metric``, ``patience`` set) or
    :data:`GATE_FAIL` (``gate`` set)."""

    kind: str
    metric: str | None = None
    patience: int | None = None
    gate: str | None = None


def refuse(spec: object, problem: str) -> InputError:
    """The one line of a bad ``stop_when``."""
    shown = repr(spec)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return InputError(
        "SOM-TRAIN-OPTION", f"stop_when {shown} {problem}", HINT,
        where="SommelierCallback(stop_when=...)",
    )  # fmt: skip


def parse_stop_when(spec: object) -> StopWhen:
    """Either form of ``stop_when`` (module docstring); one ``SOM-TRAIN-OPTION`` line naming
    ``stop_when`` otherwise. A gate name is printable text without ``::`` (as the suite's)."""
    if isinstance(spec, str) and spec.startswith(f"{GATE_FAIL}:"):
        name = spec[len(GATE_FAIL) + 1 :]
        if not name.strip() or not name.isprintable() or "::" in name:
            raise refuse(spec, "names no gate: gate_fail:NAME takes a gate's name")
        return StopWhen(GATE_FAIL, gate=name)
    metric, patience = parse_stop_rule(spec)
    return StopWhen(RULE, metric=metric, patience=patience)


def parse_stop_rule(spec: object) -> tuple[str, int]:
    """``(metric, patience)`` of ``no_improvement:METRIC:PATIENCE``; an ``InputError``
    (``SOM-TRAIN-OPTION``) naming ``stop_when`` otherwise."""
    if not isinstance(spec, str):
        raise refuse(spec, "is not a string")
    parts = spec.split(":")
    problem = None
    if len(parts) != 3 or parts[0] != RULE:
        problem = "is not no_improvement:METRIC:PATIENCE nor gate_fail:NAME"
    elif parts[1] not in (*METRIC_NAMES, *EXTRA_METRICS):
        known = ", ".join((*METRIC_NAMES, *EXTRA_METRICS))
        problem = f"names metric {parts[1]!r}, not one of {known}"
    elif re.fullmatch(r"[0-9]{1,6}", parts[2]) is None or int(parts[2]) < 1:
        problem = f"has patience {parts[2]!r}, not a whole number of evaluations >= 1"
    if problem is not None:
        raise refuse(spec, problem)
    return parts[1], int(parts[2])


@dataclass
class StopRule:
    """The rule's state across evaluations: the best checkpoint and the evaluations since."""

    metric: str
    patience: int
    statistics: StatisticsConfig
    clusters: Mapping[str, Hashable] | None = None
    best_step: int | None = None
    best_records: list[ScoringRecord] = field(default_factory=list)
    since_best: int = 0

    @classmethod
    def of(
        cls,
        spec: str,
        statistics: StatisticsConfig,
        clusters: Mapping[str, Hashable] | None = None,
    ) -> StopRule:
        """The rule ``spec`` names (:func:`parse_stop_rule`)."""
        metric, patience = parse_stop_rule(spec)
        return cls(metric, patience, statistics, clusters)

    def update(self, step: int, records: Sequence[ScoringRecord]) -> tuple[bool, str]:
        """Take checkpoint ``step``'s records (split order); ``(stop, evidence line)``."""
        if self.best_step is None:
            self.best_step, self.best_records = step, list(records)
            return False, f"{self.metric}: step {step} is the first, the best so far"
        _, block = paired_interval(
            self.best_records,
            list(records),
            self.statistics,
            f"stop:{self.metric}:{step}-vs-{self.best_step}",
            self.clusters,
        )
        entry = selected_interval({"intervals": block}, self.metric) or {}
        lower = entry.get("lower")
        shown = f"{fmt(entry.get('estimate'), True)} {fmt_interval(entry)}"
        if lower is not None and lower > 0:
            line = f"{self.metric}: step {step} beats best step {self.best_step} by {shown}"
            self.best_step, self.best_records, self.since_best = step, list(records), 0
            return False, line
        self.since_best += 1
        stop = self.since_best >= self.patience
        line = (
            f"{self.metric}: step {step} vs best step {self.best_step} {shown}: no gain "
            f"({self.since_best} of {self.patience})" + ("; stopping" if stop else "")
        )
        return stop, line


__all__ = ["GATE_FAIL", "RULE", "StopRule", "StopWhen", "parse_stop_rule", "parse_stop_when"]
