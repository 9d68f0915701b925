"""A taxonomy of misses: one primary category per example that is not a full-call exact match.

Pure functions over the same records the metrics read (``parse_status``, ``parsed_call``,
``gold_call``). A *miss* is an example whose ``full_call_exact_match`` component is 0; each miss
gets exactly one category, the first that applies in this order:

0. ``reasoning_unterminated``: a declared reasoning span never closed, so there was no answer
   (``content_text`` null, ``core.reasoning``); where it also hit ``max_new_tokens`` the
   arm's reasoning figures count it as truncated inside the reasoning;
1. ``truncated``: no call parsed and the output hit ``max_new_tokens`` (its record's
   ``finish_reason`` is ``length``): a cut-off answer, not malformed JSON;
2. ``parse_no_json`` / ``parse_invalid_json`` / ``parse_invalid_shape``: the parse status;
3. ``wrong_function``: parsed, but the name differs from the gold name;
4. ``missing_argument``: a gold (top-level) argument is absent;
5. ``unexpected_argument``: an argument the gold call does not have is present;
6. ``wrong_type``: same argument names, and some value has another JSON type than the gold at
   the same path (``"2"`` for ``2``, ``2.0`` for ``2``, ``[..]`` for ``".."``), looking inside
   objects (shared keys) and arrays (shared indexes);
7. ``wrong_value``: everything else (same names, same types, different values).

Under parser v2 (``core.call_sets``) a miss with fewer calls than the gold is ``missing_call``,
with more ``extra_call``; otherwise rules 3 to 7 judge the first matched pair that differs.

An example that expects no single gold call (``core.abstention``) is a miss when its decision is
wrong: a ``no_call`` example is ``over_call`` (a valid call parsed) or ``attempted_call`` (a
bracket span that is not a call, or a template call marker); an ``any_call`` example is
``truncated`` or ``parse_<status>`` as above, or ``wrong_function`` (a valid call of a tool that
was not offered).

Besides, ``value_language_mismatch`` flags a miss of a *translated* example where some string
value is written in another script than the gold value at the same path (e.g. a Hebrew city
name where the gold is in Latin letters): the value kept the user's language. Scripts are read
from Unicode character names (``LATIN``, ``HEBREW``, ``CYRILLIC``, ``CJK`` ...): a string's
script is the one most of its letters belong to; strings without letters have none.

Invariant: over any records, the category counts sum to the number of misses exactly.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, NotRequired, TypedDict

from pytest_sommelier.core.abstention import (
    ATTEMPTED_CALL,
    EXPECT_CALL,
    EXPECT_NO_CALL,
    OVER_CALL,
    expect_of,
    no_answer,
    record_outcome,
)
from pytest_sommelier.core.call_sets import CALL_ORDER_FIELD, checked_call_sets, match_calls
from pytest_sommelier.core.metrics import canonical_json, full_call_hit, record_hit
from pytest_sommelier.core.reasoning import REASONING_UNTERMINATED
from pytest_sommelier.core.types import (
    FINISH_LENGTH,
    FINISH_REASONS,
    FINISH_UNKNOWN,
    Call,
    MissCounts,
    ScoringRecord,
)

MISSING_CALL = "missing_call"
EXTRA_CALL = "extra_call"
CALL_SET_CATEGORIES: tuple[str, ...] = (MISSING_CALL, EXTRA_CALL)
"""Parser v2's added categories, listed only in the miss blocks of a v2 run (so a v1 report
keeps its categories): fewer or more calls than the gold."""

MISS_CATEGORIES: tuple[str, ...] = (
    REASONING_UNTERMINATED,
    "truncated",
    "parse_no_json",
    "parse_invalid_json",
    "parse_invalid_shape",
    "wrong_function",
    "missing_argument",
    "unexpected_argument",
    "wrong_type",
    "wrong_value",
    OVER_CALL,
    ATTEMPTED_CALL,
)
LANGUAGE_FLAG: Final = "value_language_mismatch"


class MissFields(TypedDict):
    """What a generation record learns when it is scored (``miss_fields``)."""

    miss_category: str | None
    value_language_mismatch: NotRequired[bool]  # translated examples only


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value (``integer`` and ``number`` kept apart, as the strict
    metrics do: ``1`` is not ``1.0``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _aligned(gold: Any, predicted: Any) -> Iterator[tuple[Any, Any]]:
    """Pairs of values at the same path in both (objects by shared key, arrays by shared
    index), the pair itself first. Iterative, so depth never recurses."""
    pending = [(gold, predicted)]
    while pending:
        left, right = pending.pop()
        yield left, right
        if isinstance(left, dict) and isinstance(right, dict):
            pending.extend((left[key], right[key]) for key in left.keys() & right.keys())
        elif isinstance(left, list) and isinstance(right, list):
            pending.extend(zip(left, right, strict=False))


def _type_differs(gold: dict[str, Any], predicted: dict[str, Any]) -> bool:
    return any(json_kind(g) != json_kind(p) for g, p in _aligned(gold, predicted))


def miss_category(record: ScoringRecord) -> str | None:
    """The primary miss category of one record, or None when it is a full-call exact match.

    The record is checked as the metrics check it (InvariantError for a self-contradicting one).
    """
    if expect_of(record) != EXPECT_CALL:
        return _decision_miss(record)
    if full_call_hit(record, record.get("gold_call")):
        return None
    parsed = record.get("parsed_call")
    if parsed is None:
        if "content_text" in record and record["content_text"] is None:
            return REASONING_UNTERMINATED
        if record.get("finish_reason") == FINISH_LENGTH:
            return "truncated"
        return f"parse_{record['parse_status']}"
    gold = record["gold_call"]
    if gold is None:  # checked by full_call_hit above: a call example has a gold call
        raise AssertionError("a call example without a gold call")
    if record.get(CALL_ORDER_FIELD) is not None:  # parser v2: the first call that misses
        found = _call_set_miss(record)
        if isinstance(found, str):
            return found
        parsed, gold = found
    if parsed["name"] != gold["name"]:
        return "wrong_function"
    gold_args, given = gold["arguments"], parsed["arguments"]
    if any(name not in given for name in gold_args):
        return "missing_argument"
    if any(name not in gold_args for name in given):
        return "unexpected_argument"
    if _type_differs(gold_args, given):
        return "wrong_type"
    return "wrong_value"


def _call_set_miss(record: ScoringRecord) -> str | tuple[Call, Call]:
    """A parser v2 miss: ``missing_call`` (fewer calls than the gold), ``extra_call`` (more),
    else the first matched pair (``core.call_sets.match_calls``, by gold index) whose calls
    differ, which the v1 rules then categorise."""
    parsed, gold = checked_call_sets(record)
    if parsed is None:  # checked by the caller: the record parsed
        raise AssertionError("a parsed v2 record without parsed calls")
    if len(parsed) < len(gold):
        return MISSING_CALL
    if len(parsed) > len(gold):
        return EXTRA_CALL
    matching = match_calls(parsed, gold, str(record.get(CALL_ORDER_FIELD)))
    for p, g in matching.pairs:
        if canonical_json(parsed[p]) != canonical_json(gold[g]):
            return parsed[p], gold[g]
    raise AssertionError("a v2 miss whose calls all match")  # full_call_hit said it missed


def _decision_miss(record: ScoringRecord) -> str | None:
    """The miss category of a ``no_call`` or ``any_call`` record (module docstring)."""
    if record_hit(record):
        return None
    if no_answer(record):
        return REASONING_UNTERMINATED
    if expect_of(record) == EXPECT_NO_CALL:
        return record_outcome(record)
    if record.get("parsed_call") is None:
        if record.get("finish_reason") == FINISH_LENGTH:
            return "truncated"
        return f"parse_{record['parse_status']}"
    return "wrong_function"


def script_of(text: str) -> str | None:
    """The script most letters of ``text`` belong to (first word of the Unicode character
    name: ``LATIN``, ``HEBREW``, ``CJK`` ...), None when it has no letters. Ties go to the
    alphabetically first script, so the result is deterministic."""
    counts: Counter[str] = Counter()
    for char in text:
        if unicodedata.category(char).startswith("L"):
            name = unicodedata.name(char, "")
            counts[name.split(" ")[0] if name else "UNKNOWN"] += 1
    if not counts:
        return None
    best = max(counts.values())
    return min(script for script, count in counts.items() if count == best)


def value_language_mismatch(record: ScoringRecord) -> bool:
    """True when some string value of the parsed call is in another script than the gold
    string at the same path (both having letters). False for parse failures and hits."""
    parsed, gold_call = record.get("parsed_call"), record.get("gold_call")
    if parsed is None or gold_call is None:
        return False
    for gold, given in _aligned(gold_call["arguments"], parsed["arguments"]):
        if isinstance(gold, str) and isinstance(given, str) and gold != given:
            gold_script, given_script = script_of(gold), script_of(given)
            if gold_script and given_script and gold_script != given_script:
                return True
    return False


def miss_fields(record: ScoringRecord, *, translated: bool) -> MissFields:
    """The fields a generation record carries: ``miss_category`` (None for a hit) and, for a
    translated example, ``value_language_mismatch`` (false for a hit)."""
    category = miss_category(record)
    fields: MissFields = {"miss_category": category}
    if translated:
        fields[LANGUAGE_FLAG] = category is not None and value_language_mismatch(record)
    return fields


def miss_categories(records: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The categories a miss block over ``records`` lists: :data:`MISS_CATEGORIES`, then
    :data:`CALL_SET_CATEGORIES` when some record is parser v2's."""
    if any(record.get(CALL_ORDER_FIELD) is not None for record in records):
        return (*MISS_CATEGORIES, *CALL_SET_CATEGORIES)
    return MISS_CATEGORIES


def miss_counts(records: Iterable[ScoringRecord], *, translated: bool) -> MissCounts:
    """``{misses, categories: {category: count, every category listed}, value_language_mismatch
    (translated slices only)}``. Invariant: ``sum(categories.values()) == misses``."""
    records = list(records)
    categories = dict.fromkeys(miss_categories(records), 0)
    flagged = 0
    misses = 0
    for record in records:
        fields = miss_fields(record, translated=translated)
        if fields["miss_category"] is None:
            continue
        misses += 1
        categories[fields["miss_category"]] += 1
        flagged += int(fields.get(LANGUAGE_FLAG, False))
    result: MissCounts = {"misses": misses, "categories": categories}
    if translated:
        result[LANGUAGE_FLAG] = flagged
    return result


def finish_counts(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many records ended each way: ``{"stop", "length", "unknown"}`` (every key listed;
    a record without a ``finish_reason``, written before 0.3, counts as unknown)."""
    counts = dict.fromkeys(FINISH_REASONS, 0)
    for record in records:
        reason = record.get("finish_reason")
        counts[reason if reason in counts else FINISH_UNKNOWN] += 1
    return counts
