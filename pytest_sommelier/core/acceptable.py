"""``acceptable_call_match``: BFCL's acceptable-values rules for one call (pure, no I/O).

A sixth metric, reported apart from the five exact ones and never instead of them. It is
computed only for examples that carry ``acceptable_arguments`` (written by ``sommelier import
bfcl``)::

    {"language": "python" | "java" | "javascript",
     "required": [argument names the function doc requires],
     "arguments": {name: {"type": BFCL type name, "items_type": BFCL type name (arrays only),
                          "values": [acceptable values; "" = may be left out]}}}

The rules are a port of ``simple_function_checker`` in BFCL's
``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` (bfcl-eval 2026.3.23), applied to the parsed
JSON call, point by point (see docs/metrics.md, "acceptable-values match"):

1. the function name must equal the gold name;
2. every argument the function doc requires must be present;
3. every argument given must be one the possible answer lists (else "unexpected");
4. type: the value's Python type must be the one BFCL maps the declared type to (``bool`` is
   not ``int``), except that for Python an integer is accepted where a float is expected, and a
   value of the type of the first non-``""`` acceptable value is accepted as a "variable"; for
   arrays, each item is checked against the item type, one level deep;
5. strings compare after BFCL's normalisation: spaces and ``,./-_*^`` removed, lower-cased,
   ``'`` turned into ``"``; lists compare element-wise with their string elements normalised;
   dicts compare key by key against each acceptable dict (values normalised when strings, no
   deeper); lists of dicts compare dict by dict, in order; anything else by Python equality;
6. every listed argument that is left out must have ``""`` among its acceptable values.

For Java and JavaScript rows BFCL expects source-code strings and converts them; here the
model writes JSON, so the same rules apply to the JSON values, without the int-for-float rule
(which BFCL applies to Python only).

**Several gold calls** (parser v2, ``core.call_sets``). A row with several gold calls carries a
list of such objects, one per gold call in the gold's order (``sommelier import bfcl
--parser v2`` writes it for BFCL's parallel categories). Its example is accepted when the answer
holds as many calls as the gold and every gold call is paired with a distinct predicted call
that its entry accepts (:func:`calls_acceptable`): under ``order = "exact"`` by position, under
``"any"`` by a maximum bipartite matching of the "accepts" relation (``call_sets
.max_assignment`` over 0/1 weights), as the v2 metrics pair calls. BFCL's own parallel checker
(``parallel_function_checker_no_order``) pairs greedily, each gold call taking the first
unpaired call it accepts, which can miss a pairing that exists; a maximum matching never does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_sommelier.core.call_sets import max_assignment
from pytest_sommelier.core.parse_v2 import ORDER_EXACT
from pytest_sommelier.core.types import Call, MetricValue, ScoringRecord
from pytest_sommelier.errors import InvariantError

if TYPE_CHECKING:  # numpy is imported where an array is built (collection builds none)
    import numpy as np
    import numpy.typing as npt

METRIC_NAME = "acceptable_call_match"
METRIC_LABEL = "acceptable-values match (BFCL rules)"

#: BFCL type name -> the Python type its checker expects (PYTHON_TYPE_MAPPING, plus the
#: Java/JavaScript names of JAVA_TYPE_CONVERSION / JS_TYPE_CONVERSION for JSON values)
PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "number": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "object": dict,
    "any": str,
    "String": str,
    "Boolean": bool,
    "bool": bool,
    "list": list,
    "byte": int,
    "short": int,
    "long": int,
    "Bigint": int,
    "double": float,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Queue": list,
    "Stack": list,
    "HashMap": dict,
    "Hashtable": dict,
    "Any": str,
}
LANGUAGES = ("python", "java", "javascript")
NESTED_TYPES = frozenset({"array", "tuple", "list", "Array", "ArrayList", "Queue", "Stack"})

_STRIP = re.compile(r"[ \,\.\/\-\_\*\^]")


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``"``."""
    return _STRIP.sub("", text).lower().replace("'", '"')


def _first_type(values: Any) -> type | None:
    """The Python type of the first acceptable value that is not ``""`` (None if none)."""
    for value in values:
        if value != "":
            return type(value)
    return None


def _type_check(value: Any, values: Any, expected: type, nested: type | None) -> tuple[bool, bool]:
    """``(valid, is_variable)``: BFCL's type_checker (nested types one level deep)."""
    answer_type = _first_type(values)
    is_variable = answer_type is not None and answer_type is not expected
    elements: Any = value  # a list when ``nested`` is set (the declared type is an array)
    if type(value) is expected:
        if nested is None:
            return True, is_variable
        for item in values:
            if isinstance(item, list) and not all(
                _type_check(element, item, nested, None)[0] for element in elements
            ):
                continue
            return True, is_variable
        return False, False
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, False


def _standardized(values: list[Any]) -> list[Any]:
    return [standardize_string(v) if type(v) is str else v for v in values]


def _list_ok(value: list[Any], values: list[Any]) -> bool:
    """BFCL's list_checker: string elements normalised on both sides, then list equality."""
    return _standardized(value) in [
        _standardized(list(answer)) for answer in values if isinstance(answer, (list, str))
    ]


def _dict_ok(value: dict[str, Any], answers: list[Any]) -> bool:
    """BFCL's dict_checker: some acceptable dict takes every given key (string values
    normalised) and every key it lists without ``""`` is given."""
    for answer in answers:
        if not isinstance(answer, dict):  # "" (optional) or malformed data: accepts nothing
            continue
        if all(
            key in answer
            and isinstance(answer[key], list)
            and (standardize_string(item) if type(item) is str else item)
            in _standardized(answer[key])
            for key, item in value.items()
        ) and all(key in value or "" in options for key, options in answer.items()):
            return True
    return False


def _list_dict_ok(value: list[Any], answers: list[Any]) -> bool:
    """BFCL's list_dict_checker: same length, each dict accepted by the answer's dict there."""
    for answer in answers:
        if not isinstance(answer, (list, str)) or len(value) != len(answer):
            continue
        if all(
            isinstance(item, dict) and _dict_ok(item, [answer[i]]) for i, item in enumerate(value)
        ):
            return True
    return False


def _argument_ok(value: Any, entry: Mapping[str, Any], language: str) -> bool:
    """One given argument against its acceptable entry (rules 4 and 5)."""
    declared = entry["type"]
    values = entry["values"]
    expected = PYTHON_TYPES[declared]
    nested = None
    if declared in NESTED_TYPES:
        nested = PYTHON_TYPES[entry["items_type"]]
    if language == "python" and declared == "float" and type(value) is int:
        value = float(value)
    valid, is_variable = _type_check(value, values, expected, nested)
    if not valid:
        return False
    if not is_variable:
        if expected is dict:
            return _dict_ok(value, values)
        if expected is list and nested is dict:
            return _list_dict_ok(value, values)
        if expected is str:
            return standardize_string(value) in [
                standardize_string(v) for v in values if type(v) is str
            ]
        if expected is list:
            return _list_ok(value, values)
    return value in values


def call_acceptable(call: Mapping[str, Any], gold_name: str, acceptable: Mapping[str, Any]) -> bool:
    """True when ``call`` is accepted under BFCL's rules (rules 1 to 6 of the module doc)."""
    if call["name"] != gold_name:
        return False
    given = call["arguments"]
    listed = acceptable["arguments"]
    if any(name not in given for name in acceptable["required"]):
        return False
    language = acceptable["language"]
    for name, value in given.items():
        if name not in listed or not _argument_ok(value, listed[name], language):
            return False
    return all(name in given or "" in entry["values"] for name, entry in listed.items())


def calls_acceptable(
    predicted: Sequence[Call],
    gold: Sequence[Call],
    acceptable: Sequence[Mapping[str, Any]],
    order: str,
) -> bool:
    """True when the answer's calls are accepted call by call (module doc, "Several gold
    calls"): as many as the gold, each gold call ``gold[i]`` paired with a distinct predicted
    call that ``acceptable[i]`` accepts; by position under ``order`` ``exact``, else by a
    maximum bipartite matching."""
    if len(predicted) != len(gold) or len(acceptable) != len(gold):
        return False
    if order == ORDER_EXACT:
        return all(
            call_acceptable(call, want["name"], entry)
            for call, want, entry in zip(predicted, gold, acceptable, strict=True)
        )
    accepts = [
        [int(call_acceptable(call, want["name"], entry)) for call in predicted]
        for want, entry in zip(gold, acceptable, strict=True)
    ]
    if not all(any(row) for row in accepts):
        return False
    matched = sum(accepts[row][column] for row, column in max_assignment(accepts))
    return matched == len(gold)


def acceptable_entries(acceptable: Any) -> list[Any]:
    """The per-call entries of an ``acceptable_arguments`` value: the list itself (several gold
    calls), or the one object as a list of one."""
    return list(acceptable) if isinstance(acceptable, list) else [acceptable]


def acceptable_shape_error(acceptable: Any) -> str | None:
    """Why ``acceptable`` is not ``{language, required, arguments: {name: {type, values,
    items_type?}}}`` with known BFCL type names, nor (several gold calls) a list of two or more
    such objects (None when it is)."""
    if isinstance(acceptable, list):
        if len(acceptable) < 2:
            return (
                "must be an object {language, required, arguments}, or a list of two or more "
                "(one per gold call)"
            )
        for index, entry in enumerate(acceptable):
            problem = _one_shape_error(entry)
            if problem is not None:
                return f"[{index}]: {problem}"
        return None
    return _one_shape_error(acceptable)


def _one_shape_error(acceptable: Any) -> str | None:
    """:func:`acceptable_shape_error` for one gold call's object."""
    if not isinstance(acceptable, Mapping):
        return "must be an object {language, required, arguments}"
    unknown = sorted(set(acceptable) - {"language", "required", "arguments"})
    if unknown:
        return f"unknown key {unknown[0]!r}"
    if acceptable.get("language") not in LANGUAGES:
        return f"language must be one of {', '.join(LANGUAGES)}"
    required = acceptable.get("required")
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        return "required must be a list of argument names"
    arguments = acceptable.get("arguments")
    if not isinstance(arguments, Mapping):
        return "arguments must be an object {name: {type, values}}"
    for name, entry in arguments.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("values"), list):
            return f"arguments[{name!r}] must be {{type, values: [...]}}"
        extra = sorted(set(entry) - {"type", "items_type", "values"})
        if extra:
            return f"arguments[{name!r}] has unknown key {extra[0]!r}"
        if entry.get("type") not in PYTHON_TYPES:
            return f"arguments[{name!r}].type {entry.get('type')!r} is not a BFCL type name"
        if entry["type"] in NESTED_TYPES and entry.get("items_type") not in PYTHON_TYPES:
            return f"arguments[{name!r}].items_type must name the item type of an array"
    return None


def check_acceptable(acceptable: Any, where: str) -> Mapping[str, Any]:
    """``acceptable`` after :func:`acceptable_shape_error` found nothing; InvariantError naming
    ``where`` otherwise (a formatted split is checked on load, so this is a broken record)."""
    problem = acceptable_shape_error(acceptable)
    if problem is not None:
        raise InvariantError(
            "SOM-METRIC-BAD-ACCEPTABLE",
            f"acceptable_arguments: {problem}",
            "re-create the prepared file with sommelier import bfcl",
            where=where,
        )
    checked: Mapping[str, Any] = acceptable
    return checked


def acceptable_component(record: ScoringRecord) -> tuple[int, int]:
    """``(numerator, denominator)`` of ``acceptable_call_match`` for one record.

    ``(0, 0)`` when the record carries no ``acceptable_arguments`` (it is not counted);
    otherwise denominator 1 and numerator 1 exactly when the parsed call is accepted (a parser
    v2 record, one with ``call_order``: when its calls are, :func:`calls_acceptable`). A parse
    failure (no parsed call) is ``(0, 1)``: it stays in the denominator, as in the five.
    """
    acceptable = record.get("acceptable_arguments")
    if acceptable is None:
        return 0, 0
    where = f"example {record.get('example_id', '<unknown>')}"
    check_acceptable(acceptable, where)
    gold = record.get("gold_call")
    if gold is None:  # an abstention example (core.abstention) carries no acceptable values
        return 0, 0
    order = record.get("call_order")
    if order is not None:
        calls = record.get("parsed_calls")
        if not calls:
            return 0, 1
        golds = record.get("gold_calls") or [gold]
        return int(calls_acceptable(calls, golds, acceptable_entries(acceptable), order)), 1
    if isinstance(acceptable, list):
        raise InvariantError(
            "SOM-METRIC-BAD-ACCEPTABLE",
            "acceptable_arguments: a list (several gold calls) on a parser v1 record",
            "score several gold calls under [parser] version = \"v2\"",
            where=where,
        )
    parsed = record.get("parsed_call")
    if parsed is None:
        return 0, 1
    return int(call_acceptable(parsed, gold["name"], acceptable)), 1


def carries_acceptable(records: Iterable[ScoringRecord]) -> bool:
    """True when any record carries ``acceptable_arguments`` (the metric is then reported)."""
    return any(record.get("acceptable_arguments") is not None for record in records)


def acceptable_metric(records: Iterable[ScoringRecord]) -> MetricValue:
    """``{value, numerator, denominator}`` of ``acceptable_call_match`` over ``records``:
    the sums of :func:`acceptable_component` (value None when the denominator is 0)."""
    numerator = denominator = 0
    for record in records:
        num, den = acceptable_component(record)
        numerator += num
        denominator += den
    return {
        "value": numerator / denominator if denominator else None,
        "numerator": numerator,
        "denominator": denominator,
    }


def acceptable_arrays(
    records: Sequence[ScoringRecord],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Numerators and denominators as two int64 arrays of shape ``(len(records), 1)``: the
    column the paired bootstrap appends after the five."""
    import numpy as np

    rows = [acceptable_component(record) for record in records]
    array = np.array(rows, dtype=np.int64).reshape(len(rows), 2)
    return array[:, :1].copy(), array[:, 1:].copy()
