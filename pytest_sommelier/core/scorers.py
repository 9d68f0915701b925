"""The scorer contract: the one way to add a metric (pure functions, no I/O; docs/extending.md).

A scorer is a named, versioned, pure function of one example::

    score(parsed_call, gold_call, example) -> (numerator, denominator)

``parsed_call`` is the parsed call or None (the output did not parse: it still counts in the
denominator), ``gold_call`` the example's gold call, ``example`` a read-only view of the
example (:func:`example_view`: id, language, root, tools, gold call, acceptable values). Its
``kind`` says how its components add up: ``rate`` (0 or 1 out of 1 per example, like
``full_call_exact_match``) or ``ratio`` (summed, then divided, like ``argument_f1``).

A suite that names a scorer (``[suite] scorers``) gets it as a metric after the built-in ones,
everywhere a built-in metric goes: its components are computed once per record
(:func:`record_scores`, into the record's ``scores``) and read from there by every block. Like
the five, a scorer counts ``call`` examples only: an example that expects no single gold call
(``core.abstention``) is never passed to it and scores 0/0.

Invariants kept:

- a scorer's output is checked every time: two Python ints (``bool`` is not one), ``0 <=
  numerator <= denominator``, a rate's denominator exactly 1; called twice on copies of its
  inputs it must give the same answer (pure). Any violation, or an exception, is one
  ``SOM-SCORER-*`` EvaluationError naming the scorer and the example: the run has no verdict;
- a scorer's kind is declared when it is checked (:func:`declare_kind`) and read by the
  interval selection through :func:`is_ratio`; the built-in ratio is ``argument_f1`` alone.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_sommelier.core.call_sets import CALL_PRECISION, CALL_RECALL
from pytest_sommelier.core.metrics import ARGUMENT_F1
from pytest_sommelier.core.types import Call, Example, MetricValue, ScoringRecord
from pytest_sommelier.errors import (
    EXTENSION_ERRORS,
    EvaluationError,
    InputError,
    InvariantError,
    exception_text,
)
from pytest_sommelier.registry import Registry

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

KINDS: tuple[str, ...] = ("rate", "ratio")
"""A scorer's kinds: ``rate`` (0/1 of 1 per example) or ``ratio`` (a ratio of sums)."""

BUILTIN_RATIOS = frozenset({ARGUMENT_F1, CALL_PRECISION, CALL_RECALL})
"""The built-in metrics that are ratios of sums (every other built-in is a rate): argument F1
and parser v2's call precision and recall (pooled over calls, core.call_sets)."""

NAME = re.compile(r"[a-z][a-z0-9_]{0,63}(?!\n)")
"""A scorer's name: lower-case snake case, at most 64 characters (it becomes a metric name, a
column, a gate metric)."""
VERSION = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?(?!\n)")
"""A scorer's version: 1 to 64 printable ASCII characters, no control character, no blank at
either end (it is part of the report identity and every view prints it)."""
COMPONENT_LIMIT = 2**32
"""The largest numerator or denominator one example's score may have: the sums over a run are
64-bit integers (``score_arrays``), so a run of a million examples never overflows."""

ScoreFunction = Callable[[Call | None, Call, Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Scorer:
    """One scorer: ``name`` (its metric name), ``version`` (part of the report identity: two
    runs compare only with equal versions), ``kind`` (``rate`` or ``ratio``), ``score`` (the
    pure function) and an optional one-line ``label`` for the views."""

    name: str
    version: str
    kind: str
    score: ScoreFunction
    label: str = ""
    recorded: bool = False  # a scorer known by its identity only: its scores are the records'


def recorded_scorer(identity: Mapping[str, Any]) -> Scorer:
    """A scorer known only by the ``{name, version, kind}`` a process that could run it
    recorded (an xdist worker that loaded the ``conftest.py`` the controller never loads): its
    components are the records' own ``scores``, each checked like a scorer's output."""

    def unavailable(parsed_call: Any, gold_call: Any, example: Any) -> Any:
        raise RuntimeError("a recorded scorer is never called")

    return check_scorer(
        Scorer(
            str(identity.get("name")), str(identity.get("version")), str(identity.get("kind")),
            unavailable, recorded=True,
        ),
        "the workers' records",
    )  # fmt: skip


_KINDS: dict[str, str] = {}


def declare_kind(name: str, kind: str) -> None:
    """Record that metric ``name`` is of ``kind`` in this process (what :func:`is_ratio`
    answers), done when a scorer is checked: the suite being evaluated declares its scorers'
    kinds before any report block is built, so a name reused with another kind by another
    suite of the same process is read with the kind of the suite in hand."""
    _KINDS[name] = kind


def is_ratio(name: str) -> bool:
    """Whether metric ``name`` is a ratio of sums (``argument_f1``, a ``ratio`` scorer): the
    interval selection's one question about a metric."""
    return name in BUILTIN_RATIOS or _KINDS.get(name) == "ratio"


def check_scorer(value: Any, source: str, reserved: Iterable[str] = ()) -> Scorer:
    """``value`` as a Scorer after the contract's checks (a name of :data:`NAME` that is no
    built-in metric in ``reserved``, a non-empty version, a known kind, a callable), its kind
    declared; an InputError (``SOM-SCORER-CONTRACT``) naming ``source`` otherwise."""

    def refuse(problem: str) -> InputError:
        return InputError(
            "SOM-SCORER-CONTRACT",
            f"the scorer from {source} {problem}",
            "register a pytest_sommelier.Scorer(name, version, kind, score) (docs/extending.md)",
        )

    if not isinstance(value, Scorer):
        raise refuse(f"is a {type(value).__name__}, not a Scorer")
    if not isinstance(value.name, str) or not NAME.fullmatch(value.name):
        raise refuse(
            f"has name {exception_safe(value.name)}, not lower-case snake case of at most 64 "
            "characters"
        )
    if value.name in set(reserved):
        raise refuse(f"is named {value.name!r}, a built-in metric")
    if not isinstance(value.version, str) or not VERSION.fullmatch(value.version):
        raise refuse(
            f"{value.name!r} has version {exception_safe(value.version)}, not 1 to 64 printable "
            "ASCII characters"
        )
    if value.kind not in KINDS:
        raise refuse(f"{value.name!r} has kind {value.kind!r}, not one of {', '.join(KINDS)}")
    if not callable(value.score):
        raise refuse(f"{value.name!r} has a score that is not callable")
    declare_kind(value.name, value.kind)
    return value


def resolve_scorers(
    names: Sequence[str], found: Registry, *, where: str, reserved: Iterable[str]
) -> tuple[Scorer, ...]:
    """The scorers ``names`` (``[suite] scorers``) from the scorer registry ``found``, each
    loaded and checked (:func:`check_scorer`) and named as registered: the one resolution the
    pytest session, ``sommelier rescore`` and the tests share. ``SOM-SCORER-UNKNOWN`` at
    ``where`` for a name no entry has."""
    scorers = []
    reserved = tuple(reserved)
    for name in names:
        entry = found.entry(name, where=where, code="SOM-SCORER-UNKNOWN")
        scorer = check_scorer(entry.load(), entry.source, reserved=reserved)
        if scorer.name != name:
            raise InputError(
                "SOM-SCORER-CONTRACT",
                f"the scorer registered as {name!r} by {entry.source} is named {scorer.name!r}",
                "register a scorer under its own name",
                where=where,
            )
        scorers.append(scorer)
    return tuple(scorers)


def scorer_identity(scorers: Sequence[Scorer]) -> list[dict[str, str]]:
    """``[{name, version, kind}]`` in name order: what a report records and the identity gate
    compares."""
    return [
        {"name": s.name, "version": s.version, "kind": s.kind}
        for s in sorted(scorers, key=lambda s: s.name)
    ]


def example_view(example: Example) -> dict[str, Any]:
    """What a scorer reads of an example (a fresh copy for every call)."""
    return {
        "example_id": example.example_id,
        "language": example.language,
        "source_example_id": example.source_example_id,
        "tools": copy.deepcopy(example.tools),
        "gold_call": copy.deepcopy(example.gold_call),
        "acceptable_arguments": copy.deepcopy(example.acceptable_arguments),
    }


def _is_int(value: Any) -> bool:
    """A Python ``int`` or a numpy integer, never a ``bool`` (numpy's either)."""
    import numpy as np

    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def output_problem(kind: str, output: Any) -> tuple[str, str] | None:
    """``(code, problem)`` when ``output`` is not a valid ``(numerator, denominator)`` of
    ``kind``, else None: the one check of a scorer's output."""
    if not isinstance(output, tuple | list) or len(output) != 2:
        return "SOM-SCORER-TYPE", f"returned {exception_safe(output)}, not (numerator, denominator)"
    numerator, denominator = output
    if not (_is_int(numerator) and _is_int(denominator)):
        kinds = ", ".join(sorted({type(v).__name__ for v in output if not _is_int(v)}))
        return (
            "SOM-SCORER-TYPE",
            f"returned ({exception_safe(numerator)}, {exception_safe(denominator)}): "
            f"numerator and denominator must be integers (Python or numpy), not {kinds}",
        )
    numerator, denominator = int(numerator), int(denominator)
    if denominator > COMPONENT_LIMIT:
        return (
            "SOM-SCORER-RANGE",
            f"returned ({exception_safe(numerator)}, {exception_safe(denominator)}): a "
            f"component is at most 2**32 per example (the run's sums are 64-bit)",
        )
    if numerator < 0 or denominator < 0 or numerator > denominator:
        return (
            "SOM-SCORER-RANGE",
            f"returned ({numerator}, {denominator}): needs 0 <= numerator <= denominator",
        )
    if kind == "rate" and denominator != 1:
        return "SOM-SCORER-RANGE", f"returned ({numerator}, {denominator}): a rate is 0 or 1 of 1"
    return None


def exception_safe(value: Any) -> str:
    """A short repr of a scorer's output for an error line (never raises)."""
    try:
        text = repr(value)
    except Exception:  # a user's object whose repr raises
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _failure(scorer: Scorer, example_id: str, code: str, problem: str) -> EvaluationError:
    return EvaluationError(
        code,
        f"scorer {scorer.name!r} {scorer.version} {problem}",
        "fix the scorer (docs/extending.md, the scorer contract); the run has no verdict",
        where=f"example {example_id}",
    )


def score_one(scorer: Scorer, parsed_call: Call | None, example: Example) -> list[int]:
    """``[numerator, denominator]`` of one example, checked (module docstring); called twice on
    copies of its inputs, the two answers must agree (``SOM-SCORER-IMPURE``)."""
    if example.gold_call is None:  # record_scores never passes a non-call example
        raise InvariantError(
            "SOM-SCORER-MISSING",
            "a scorer was asked to score an example without a gold call",
            "scorers count call examples only (core.abstention)",
            where=f"example {example.example_id}",
        )
    answers = []
    for _ in range(2):
        try:
            output = scorer.score(
                copy.deepcopy(parsed_call), copy.deepcopy(example.gold_call), example_view(example)
            )
        except EXTENSION_ERRORS as exc:  # the scorer's bug (sys.exit too): one line
            raise _failure(
                scorer, example.example_id, "SOM-SCORER-RAISED", f"raised {exception_text(exc)}"
            ) from None
        problem = output_problem(scorer.kind, output)
        if problem is not None:
            raise _failure(scorer, example.example_id, *problem)
        answers.append([int(output[0]), int(output[1])])
    if answers[0] != answers[1]:
        raise _failure(
            scorer, example.example_id, "SOM-SCORER-IMPURE",
            f"gave {answers[0]} and then {answers[1]} for the same example: it is not pure",
        )  # fmt: skip
    return answers[0]


def record_scores(
    scorers: Sequence[Scorer],
    parsed_call: Call | None,
    example: Example,
    stored: Mapping[str, Any] | None = None,
    *,
    compare: bool = False,
) -> dict[str, list[int]]:
    """Every scorer's checked components of one example, by name in name order. With
    ``compare`` the ``stored`` scores (a stored record's, written under the same scorer
    versions) must agree with the recomputation: a difference is ``SOM-SCORER-IMPURE``
    (different on rescore). A recorded scorer (:func:`recorded_scorer`) takes its component
    from ``stored``, checked like an output (``SOM-SCORER-MISSING`` when there is none)."""
    scores: dict[str, list[int]] = {}
    for scorer in sorted(scorers, key=lambda s: s.name):
        if example.expect != "call" or example.gold_call is None:
            scores[scorer.name] = [0, 0]  # not a call example: no gold call to score against
            continue
        if scorer.recorded:
            scores[scorer.name] = _recorded(scorer, stored, example)
            continue
        scores[scorer.name] = score_one(scorer, parsed_call, example)
        if compare and stored is not None and scorer.name in stored:
            before = stored[scorer.name]
            if before != scores[scorer.name]:
                raise _failure(
                    scorer, example.example_id, "SOM-SCORER-IMPURE",
                    f"gives {scores[scorer.name]} on rescore where the run recorded "
                    f"{exception_safe(before)}: it is not pure",
                )  # fmt: skip
    return scores


def _recorded(scorer: Scorer, stored: Mapping[str, Any] | None, example: Example) -> list[int]:
    """The component a worker recorded for a recorded scorer, checked."""
    value = (stored or {}).get(scorer.name)
    if value is None:
        raise InvariantError(
            "SOM-SCORER-MISSING",
            f"record has no score for {scorer.name}",
            "every record of a run is scored by every scorer of its suite",
            where=f"example {example.example_id}",
        )
    problem = output_problem(scorer.kind, value)
    if problem is not None:
        raise _failure(scorer, example.example_id, *problem)
    return [int(value[0]), int(value[1])]


def score_names(records: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The scorer metrics every one of the records carries, in name order (none without
    scorers, or when some record has none: a stored run re-read without its scorers is then
    compared on the built-in metrics alone)."""
    names: set[str] | None = None
    for record in records:
        carried = set(record.get("scores") or ())
        names = carried if names is None else names & carried
    return tuple(sorted(names or ()))


def score_arrays(
    records: Sequence[ScoringRecord], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators of the named scorer metrics, two int64 arrays of shape
    ``(len(records), len(names))``; a record lacking a score is an InvariantError."""
    import numpy as np

    rows = []
    for record in records:
        scores = record.get("scores") or {}
        missing = [name for name in names if name not in scores]
        if missing:
            raise InvariantError(
                "SOM-SCORER-MISSING",
                f"record has no score for {', '.join(missing)}",
                "every record of a run is scored by every scorer of its suite",
                where=f"example {record.get('example_id')}",
            )
        rows.append([scores[name] for name in names])
    components = np.array(rows, dtype=np.int64).reshape(len(rows), len(names), 2)
    return components[:, :, 0].copy(), components[:, :, 1].copy()


def score_metrics(records: Sequence[ScoringRecord], names: Sequence[str]) -> dict[str, MetricValue]:
    """``{name: {value, numerator, denominator}}`` of each named scorer metric over the records
    (every record in every denominator)."""
    numerators, denominators = score_arrays(records, names)
    out: dict[str, MetricValue] = {}
    for column, name in enumerate(names):
        num, den = int(numerators[:, column].sum()), int(denominators[:, column].sum())
        out[name] = {"value": num / den if den else None, "numerator": num, "denominator": den}
    return out


__all__ = [
    "BUILTIN_RATIOS",
    "KINDS",
    "Scorer",
    "check_scorer",
    "declare_kind",
    "example_view",
    "is_ratio",
    "output_problem",
    "record_scores",
    "score_arrays",
    "score_metrics",
    "score_names",
    "score_one",
    "scorer_identity",
]
