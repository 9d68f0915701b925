"""Abstention: examples where no call is the right answer, scored conservatively (pure).

A formatted example declares ``expect`` (:data:`EXPECTS`): ``call`` (the default: one gold call,
scored by the five metrics), ``no_call`` (no tool fits: the right answer is not to call) or
``any_call`` (no single gold call: any valid call of an offered tool is right). User
documentation: ``docs/metrics.md`` ("Abstention"), the parser's edge in ``docs/parser.md``.

The conservative rule (:func:`abstention_outcome`), a pure function of the *content text* the
parser sees (the raw output today; the text after a declared reasoning span once a reasoning
channel separates one) and of that text's parser v1 status:

- status ``ok`` (a valid call parses): ``over_call``;
- any other status but ``no_json`` (some ``{`` or ``[`` opens a span that is not a call), or
  one of the template's call markers (``<tool_call>``, ``[TOOL_CALLS]``, ...) anywhere in the
  content, alone or with anything after it: ``attempted_call``;
- otherwise (no bracket at all, no marker): ``abstained``, the one correct outcome.

So a parse failure is a wrong answer, never a correct abstention: an output with an
unparseable ``<tool_call>`` is ``attempted_call`` whatever follows the marker. The price is an
edge, kept on purpose and applied identically to both arms: prose that happens to hold a
bracket (``I can't [yet] do that``) counts as an attempt.

Metrics (:data:`ABSTENTION_METRICS`), both rates, each ``{value, numerator, denominator}``:

- ``abstention_accuracy``: over ``no_call`` examples, 1/1 when abstained, else 0/1; 0/0 for the
  other examples (not counted);
- ``decision_accuracy``: over every example, 1/1 when the decision was right: a ``call``
  example that parsed into a valid call (of any tool: which tool is the five's question), an
  ``any_call`` example that parsed into a valid call of an offered tool, a ``no_call`` example
  that abstained; else 0/1.

A report holds ``abstention_accuracy`` only when some example is ``no_call`` and
``decision_accuracy`` only when some example is not ``call`` (:func:`abstention_names`): a
suite without abstention examples has exactly the metrics it had, and a metric over no
example is never written as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from pytest_sommelier.core.metric_parts import column_totals, component_columns
from pytest_sommelier.core.parse import STATUS_NO_JSON, STATUS_OK
from pytest_sommelier.core.types import Example, MetricValue

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

EXPECT_CALL: Final = "call"
EXPECT_NO_CALL: Final = "no_call"
EXPECT_ANY_CALL: Final = "any_call"
EXPECTS: tuple[str, ...] = (EXPECT_CALL, EXPECT_NO_CALL, EXPECT_ANY_CALL)
"""What an example expects (a formatted example's ``expect``; absent = ``call``)."""

ABSTAINED: Final = "abstained"
OVER_CALL: Final = "over_call"
ATTEMPTED_CALL: Final = "attempted_call"
OUTCOMES: tuple[str, ...] = (ABSTAINED, OVER_CALL, ATTEMPTED_CALL)
"""The outcomes of :func:`abstention_outcome`; the last two are miss categories."""

ABSTENTION_ACCURACY: Final = "abstention_accuracy"
DECISION_ACCURACY: Final = "decision_accuracy"
ABSTENTION_METRICS: tuple[str, ...] = (ABSTENTION_ACCURACY, DECISION_ACCURACY)
"""The two abstention metrics, in report order (after the five and ``acceptable_call_match``)."""

LABELS: dict[str, str] = {
    ABSTENTION_ACCURACY: "abstention accuracy (no-call examples)",
    DECISION_ACCURACY: "decision accuracy (call or not, all examples)",
}


def usable_markers(markers: Iterable[str]) -> tuple[str, ...]:
    """The markers that can be looked for: each stripped of surrounding whitespace, the empty
    ones dropped (an empty marker would be found in every text), repeats dropped, order kept."""
    seen: list[str] = []
    for marker in markers:
        text = marker.strip() if isinstance(marker, str) else ""
        if text and text not in seen:
            seen.append(text)
    return tuple(seen)


def abstention_outcome(content_text: str, parse_status: str, markers: Sequence[str]) -> str:
    """``abstained``, ``over_call`` or ``attempted_call`` for one output (module docstring).

    ``content_text`` is the text parser v1 read and ``parse_status`` the status it gave (the
    same text: the status decides the bracket rule, so no second reading can disagree);
    ``markers`` the template's call markers (:func:`usable_markers` is applied). Invariant:
    ``abstained`` exactly when the status is ``no_json`` and no marker occurs in the text.
    """
    if parse_status == STATUS_OK:
        return OVER_CALL
    if parse_status != STATUS_NO_JSON:
        return ATTEMPTED_CALL
    if any(marker in content_text for marker in usable_markers(markers)):
        return ATTEMPTED_CALL
    return ABSTAINED


def expect_of(record: Mapping[str, Any]) -> str:
    """A record's (or row's) ``expect``: the field, ``call`` when absent."""
    value = record.get("expect")
    return EXPECT_CALL if value is None else str(value)


def content_text(record: Mapping[str, Any]) -> str:
    """The text parser v1 reads of a record: its ``content_text`` when it has one (a reasoning
    channel separated a span first), else its ``raw_text``."""
    content = record.get("content_text")
    return content if isinstance(content, str) else str(record.get("raw_text", ""))


def no_answer(record: Mapping[str, Any]) -> bool:
    """Whether a record has no answer at all: a declared reasoning channel left no content
    (``content_text`` null: the span never closed, ``core.reasoning``). Such an output is never
    an abstention, whatever its raw text holds: a failed attempt is a wrong answer."""
    return "content_text" in record and record["content_text"] is None


def record_outcome(record: Mapping[str, Any]) -> str:
    """:func:`abstention_outcome` of a scoring record (its content, status, ``call_markers``)."""
    return abstention_outcome(
        content_text(record), str(record.get("parse_status")), record.get("call_markers") or ()
    )


def decision_right(record: Mapping[str, Any]) -> bool:
    """Whether a scoring record's decision is right (module docstring, ``decision_accuracy``):
    a ``no_call`` record abstained; an ``any_call`` record parsed into a valid call naming one
    of its ``tool_names``; a ``call`` record parsed into a valid call."""
    if no_answer(record):  # a reasoning span that never closed: no answer, wrong everywhere
        return False
    expect = expect_of(record)
    if expect == EXPECT_NO_CALL:
        return record_outcome(record) == ABSTAINED
    parsed = record.get("parsed_call")
    if record.get("parse_status") != STATUS_OK or not isinstance(parsed, Mapping):
        return False
    if expect == EXPECT_ANY_CALL:
        return parsed.get("name") in (record.get("tool_names") or ())
    return True


def abstention_components(record: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((abstention num, den), (decision num, den))`` of one record, in ABSTENTION_METRICS
    order: abstention 1/1 or 0/1 for a ``no_call`` record, 0/0 otherwise; decision 1/1 or 0/1
    for every record."""
    right = int(decision_right(record))
    abstention = (right, 1) if expect_of(record) == EXPECT_NO_CALL else (0, 0)
    return abstention, (right, 1)


def abstention_names(records: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The abstention metrics a report over ``records`` holds: ``abstention_accuracy`` when some
    record is ``no_call``, ``decision_accuracy`` when some record is not ``call``; none for
    records that are all ``call`` (a suite without abstention examples)."""
    expects = {expect_of(record) for record in records}
    names = []
    if EXPECT_NO_CALL in expects:
        names.append(ABSTENTION_ACCURACY)
    if expects - {EXPECT_CALL}:
        names.append(DECISION_ACCURACY)
    return tuple(names)


def abstention_arrays(
    records: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators of the named abstention metrics, two int64 arrays of shape
    ``(len(records), len(names))`` (the columns the paired intervals resample)."""
    columns = [ABSTENTION_METRICS.index(name) for name in names]
    rows = [[abstention_components(record)[c] for c in columns] for record in records]
    return component_columns(rows, len(names))


def abstention_metrics(
    records: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> dict[str, MetricValue]:
    """``{name: {value, numerator, denominator}}`` of each named abstention metric over the
    records (value None when the denominator is 0: a slice without no-call examples)."""
    return column_totals(*abstention_arrays(records, names), names)


def expect_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many records expect each answer: ``{call, no_call, any_call}`` (every key listed):
    what every table says a slice holds."""
    counts = dict.fromkeys(EXPECTS, 0)
    for record in records:
        expect = expect_of(record)
        counts[expect if expect in counts else EXPECT_CALL] += 1
    return counts


def tool_names(tools: Any) -> list[str]:
    """The names of a formatted row's ``tools`` (function specs ``{"type": "function",
    "function": {"name", ...}}``), in order; none when the row lists no tools."""
    names = []
    for spec in tools or ():
        function = spec.get("function") if isinstance(spec, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if isinstance(name, str):
            names.append(name)
    return names


def scoring_fields(example: Example) -> dict[str, Any]:
    """What a scoring record carries of its example beyond the gold call (core.pipeline):
    nothing for a ``call`` example (its record is what it was before 0.5) but, under parser v2,
    its ``gold_calls`` and ``call_order`` (core.call_sets); for the others
    ``expect``, the template's ``call_markers`` and, for ``any_call``, the offered
    ``tool_names``."""
    if example.expect == EXPECT_CALL:
        if example.gold_calls is None:
            return {}
        return {"gold_calls": list(example.gold_calls), "call_order": example.call_order}
    fields: dict[str, Any] = {"expect": example.expect, "call_markers": list(example.call_markers)}
    if example.expect == EXPECT_ANY_CALL:
        fields["tool_names"] = tool_names(example.tools)
    return fields
