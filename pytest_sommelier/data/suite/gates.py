"""The suite's ``[[gates]]`` tables: each gate's kind, references, slice and thresholds checked.

Invariant kept: every returned ``GateConfig`` names configured arms, a configured comparison (for
a comparison gate) or a stored run (``last`` or a number, for a stored gate), a known metric
and slice, and exactly the thresholds its kind takes, within their ranges; gate names are
unique. A selection gate (``selected = true``) names no arm and exists only in a suite with a
``[selection]`` table; it takes a comparison gate's thresholds and, optionally, ``stored``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_sommelier.core.abstention import (
    ABSTENTION_ACCURACY,
    ABSTENTION_METRICS,
    DECISION_ACCURACY,
    EXPECT_CALL,
    EXPECT_NO_CALL,
)
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE_METRIC
from pytest_sommelier.core.call_sets import CALL_SET_ADDED
from pytest_sommelier.core.gates import (
    ALL_THRESHOLDS,
    ARM_THRESHOLDS,
    COMPARISON_THRESHOLDS,
    IDENTICAL_METRIC,
    INTERVAL_THRESHOLDS,
    LOWER_THRESHOLDS,
    NOISE_METRIC,
    SELECTION_KIND,
    UPPER_THRESHOLDS,
)
from pytest_sommelier.core.metrics import ARGUMENT_F1, METRIC_NAMES
from pytest_sommelier.core.types import (
    ArmConfig,
    ComparisonConfig,
    Example,
    FormattedSplit,
    GateConfig,
    Suite,
)
from pytest_sommelier.data.suite.arms import require_arm
from pytest_sommelier.data.suite.names import OVERALL, valid_name
from pytest_sommelier.data.suite.statistics_bounds import effect_problem
from pytest_sommelier.errors import InputError
from pytest_sommelier.numbers import BASELINE_WORDS, LABEL_PREFIX, run_number

GATE_METRICS: tuple[str, ...] = (
    *METRIC_NAMES,
    ACCEPTABLE_METRIC,
    *ABSTENTION_METRICS,
    *CALL_SET_ADDED,
)
"""Metric names a gate may name: the five metrics of ``metrics.METRIC_NAMES``,
``acceptable_call_match`` (present only when the split's examples carry acceptable values),
the abstention metrics (``core.abstention``: present only when the split has examples that
expect no call, or no single call) and parser v2's added metrics (``core.call_sets``: present
only under ``[parser] version = "v2"``)."""

_V2_NEED = (
    'a suite with [parser] version = "v2" (call examples with gold call sets)',
    lambda e: e.gold_calls is not None,
    'set [parser] version = "v2" (docs/parser.md, Parser v2), or gate another metric',
)

_NEEDS: dict[str, tuple[str, Callable[[Example], bool], str]] = {
    ACCEPTABLE_METRIC: (
        "examples with acceptable_arguments",
        lambda e: e.acceptable_arguments is not None,
        "write the split with sommelier import bfcl and sommelier format, or gate another metric",
    ),
    ABSTENTION_ACCURACY: (
        'examples with expect = "no_call"',
        lambda e: e.expect == EXPECT_NO_CALL,
        "add abstention examples (sommelier import --abstention keep), or gate another metric",
    ),
    DECISION_ACCURACY: (
        'examples with expect = "no_call" or "any_call"',
        lambda e: e.expect != EXPECT_CALL,
        "add abstention examples (sommelier import --abstention keep), or gate another metric",
    ),
    **dict.fromkeys(CALL_SET_ADDED, _V2_NEED),
}
"""The metrics that exist only for some examples: what they need, the test, the hint."""


RESERVED_GATE_NAME = "verdict"
"""The verdict's own name in the summary and in JUnit (``<suite>::gates::verdict``)."""


def gate_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a gate, or None: it becomes a line of the summary and the
    JUnit case ``<suite>::gates::<name>``, so not ``verdict``, blank, ``::`` or a control
    character (a newline)."""
    if name.strip().lower() == RESERVED_GATE_NAME:
        return f"is reserved: {RESERVED_GATE_NAME!r} names the verdict's own line and JUnit case"
    if not name.strip() or not name.isprintable():
        return "is blank or holds a control character"
    if "::" in name:
        return "holds '::', which separates the parts of a JUnit case name"
    return None


def gate_configs(
    entries: list[dict[str, Any]],
    arms: Mapping[str, ArmConfig],
    comparisons: Sequence[ComparisonConfig],
    slices: Sequence[str],
    label: str,
    scorers: Sequence[str] = (),
    *,
    has_selection: bool = False,
) -> tuple[GateConfig, ...]:
    """``[[gates]]``: kind derived from the keys, every reference checked, names unique; a
    gate may name a scorer the suite enables (``scorers``, ``[suite] scorers``); a selection
    gate needs the suite's ``[selection]`` table (``has_selection``)."""
    gates: list[GateConfig] = []
    for index, entry in enumerate(entries):
        where = f"{label}: [[gates]] #{index + 1} ({entry['name']!r})"
        problem = gate_name_problem(entry["name"])
        if problem is not None:
            raise InputError(
                "SOM-SUITE-BAD-NAME",
                f"gate name {entry['name']!r} {problem}",
                "a gate name is printable text without '::'; 'verdict' is the verdict's",
                where=where,
            )
        if any(gate.name == entry["name"] for gate in gates):
            raise InputError(
                "SOM-SUITE-DUPLICATE-GATE",
                f"gate name {entry['name']!r} is used twice",
                "give every gate a unique name",
                where=where,
            )
        gate = _gate_config(entry, arms, comparisons, slices, where, scorers)
        if gate.kind == SELECTION_KIND and not has_selection:
            raise InputError(
                "SOM-SUITE-SELECTION",
                "a gate with selected = true needs a [selection] table to say what is selected",
                'add [selection] metric = "full_call_exact_match", among = "adapter@*"',
                where=where,
            )
        gates.append(gate)
    return tuple(gates)


def _gate_kind(entry: Mapping[str, Any], where: str) -> str:
    """Derive the kind: ``selected`` -> "selection" (:func:`_selection_kind`); ``arm`` -> "arm";
    ``arm`` + ``gap`` -> "gap"; ``arm`` + ``stored`` -> "stored"; ``candidate`` + ``reference``
    -> "comparison"; anything else is an error."""
    has_arm = "arm" in entry
    has_pair = "candidate" in entry or "reference" in entry
    if "selected" in entry:
        return _selection_kind(entry, where)
    if "stored" in entry:
        if has_arm and not has_pair and "gap" not in entry:
            return "stored"
        raise InputError(
            "SOM-SUITE-GATE-KIND",
            "a stored gate names arm and stored only (not candidate, reference or gap)",
            'write arm = "adapter" and stored = "last": this run\'s arm against the same arm '
            "of a stored run",
            where=where,
        )
    if has_arm and not has_pair:
        return "gap" if "gap" in entry else "arm"
    if has_pair and not has_arm and "gap" not in entry:
        missing = [k for k in ("candidate", "reference") if k not in entry]
        if not missing:
            return "comparison"
        raise InputError(
            "SOM-SUITE-GATE-KIND",
            f"comparison gate is missing key {missing[0]!r}",
            "a comparison gate names both candidate and reference",
            where=where,
        )
    raise InputError(
        "SOM-SUITE-GATE-KIND",
        "cannot tell the gate's kind from its keys",
        "use arm (an arm gate), arm + gap (a language-gap gate), candidate + reference "
        "(a comparison gate) or selected = true (a gate on the selected candidate)",
        where=where,
    )


def _selection_kind(entry: Mapping[str, Any], where: str) -> str:
    """A gate with ``selected``: ``selected = true`` (a TOML boolean) and none of ``arm``,
    ``candidate``, ``reference``, ``gap`` (the selection names the candidate and the
    reference), else one ``SOM-SUITE-GATE-KIND`` line."""
    if entry["selected"] is not True:
        raise InputError(
            "SOM-SUITE-GATE-KIND",
            f"gates.selected = {entry['selected']!r}: a selection gate writes selected = true "
            "(a TOML boolean)",
            "write selected = true, or remove the key",
            where=where,
        )
    named = [key for key in ("arm", "candidate", "reference", "gap") if key in entry]
    if named:
        raise InputError(
            "SOM-SUITE-GATE-KIND",
            f"a selection gate (selected = true) does not name {named[0]!r}: [selection] "
            "chooses the candidate and names the reference",
            'remove the key; add stored = "last" to compare with a stored run instead',
            where=where,
        )
    return SELECTION_KIND


def _gate_config(
    entry: Mapping[str, Any],
    arms: Mapping[str, ArmConfig],
    comparisons: Sequence[ComparisonConfig],
    slices: Sequence[str],
    where: str,
    scorers: Sequence[str] = (),
) -> GateConfig:
    """Build one gate after checking its arms, metric, slice and thresholds."""
    kind = _gate_kind(entry, where)
    for key in ("arm", "candidate", "reference"):
        if key in entry:
            require_arm(entry[key], arms, f"gates.{key}", where)
    if entry["metric"] == NOISE_METRIC and kind != "comparison":
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric {NOISE_METRIC!r} is a comparison gate's metric",
            "name candidate and reference (and max) instead of arm",
            where=where,
        )
    if entry["metric"] == IDENTICAL_METRIC and kind not in ("comparison", "stored"):
        hint = "name candidate and reference (and max) instead of arm"
        if kind == SELECTION_KIND:  # the hint that fits a selection gate (hardening V24)
            hint = (
                "a selected = true gate judges the selected checkpoint on a metric (the five, "
                "acceptable_call_match or a scorer); gate identical outputs on a comparison "
                "gate (candidate = an arm of the sweep, reference) or a stored gate instead"
            )
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric {entry['metric']!r} is a comparison gate's metric",
            hint,
            where=where,
        )
    if entry["metric"] not in (*GATE_METRICS, *scorers, IDENTICAL_METRIC, NOISE_METRIC):
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric names unknown metric {entry['metric']!r}",
            f"metrics: {', '.join((*GATE_METRICS, *scorers))}",
            where=where,
        )
    if kind == "comparison":
        _require_comparison(entry["candidate"], entry["reference"], comparisons, where)
    slice_name = _gate_slice(entry, kind, slices, where)
    _check_thresholds(entry, kind, where)
    has_stored = kind == "stored" or (kind == SELECTION_KIND and "stored" in entry)
    stored = _stored_spec(entry["stored"], where) if has_stored else None
    effect = _gate_effect(entry, kind, where)
    thresholds: dict[str, Any] = {key: _float_or_none(entry.get(key)) for key in ALL_THRESHOLDS}
    return GateConfig(
        name=entry["name"],
        kind=kind,
        metric=entry["metric"],
        slice=slice_name,
        arm=entry.get("arm"),
        candidate=entry.get("candidate"),
        reference=entry.get("reference"),
        gap=entry.get("gap"),
        stored=stored,
        effect=effect,
        selected=kind == SELECTION_KIND,
        **thresholds,
    )


def _gate_effect(entry: Mapping[str, Any], kind: str, where: str) -> float | None:
    """A gate's ``effect``: the difference its claim cares about (a size in [0.0001, 1], the
    ``[statistics] effect`` bounds), on an interval gate of a rate metric only; else one line
    naming ``gates.effect``."""
    if "effect" not in entry:
        return None
    value = entry["effect"]
    interval = any(key in entry for key in INTERVAL_THRESHOLDS)
    gated = kind in ("comparison", "gap", "stored", SELECTION_KIND)
    if (
        not gated
        or not interval
        or entry["metric"] in (ARGUMENT_F1, IDENTICAL_METRIC, NOISE_METRIC)
    ):
        raise InputError(
            "SOM-SUITE-INVALID-VALUE",
            "key 'gates.effect' is for a gate on an interval bound of a rate metric (its power "
            "and plan are a paired proportion's)",
            "remove effect, or put it on a comparison, gap or stored gate with ci_lower_* / "
            "ci_upper_*",
            where=where,
        )
    why = effect_problem(value)
    if why is not None:
        raise InputError("SOM-SUITE-INVALID-VALUE", f"key 'gates.effect' {why}",
                         "see docs/suite.md, [[gates]]", where=where)  # fmt: skip
    return abs(float(value))


def _stored_spec(value: Any, where: str) -> str:
    """A stored gate's run: ``"last"``, ``"last-any"``, ``"label:NAME"`` or a store number
    (``3``, ``"0003"``: ASCII digits, ``pytest_sommelier.numbers.run_number``), as text."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 99_999_999:
        return str(value)
    if isinstance(value, str) and (
        value in BASELINE_WORDS
        or run_number(value) is not None
        or (value.startswith(LABEL_PREFIX) and valid_name(value.removeprefix(LABEL_PREFIX)))
    ):
        return value
    raise InputError(
        "SOM-SUITE-GATE-STORED",
        f'gates.stored = {value!r} is not "last", "last-any", "label:NAME" or a store number',
        'write stored = "last" (the newest passing complete stored run of this suite), '
        '"last-any", "label:v5", or a number (ASCII digits) that `sommelier history` lists',
        where=where,
    )


def _require_comparison(
    candidate: str, reference: str, comparisons: Sequence[ComparisonConfig], where: str
) -> None:
    """A comparison gate reads a configured comparison's report."""
    if not any(c.candidate == candidate and c.reference == reference for c in comparisons):
        raise InputError(
            "SOM-SUITE-GATE-COMPARISON",
            f"no [[comparisons]] entry compares {candidate!r} with {reference!r}",
            f"add [[comparisons]] candidate = {candidate!r}, reference = {reference!r}",
            where=where,
        )


def _gate_slice(entry: Mapping[str, Any], kind: str, slices: Sequence[str], where: str) -> str:
    """The gate's slice: "overall" (default) or a configured slice; a gap gate's is its gap."""
    if kind == "gap":
        gap = entry["gap"]
        if gap not in slices[1:]:
            raise InputError(
                "SOM-SUITE-UNKNOWN-SLICE",
                f"gates.gap names {gap!r}, which is not a non-reference slice",
                f"non-reference slices: {', '.join(slices[1:]) or '(none)'}",
                where=where,
            )
        if entry.get("slice", gap) != gap:
            raise InputError(
                "SOM-SUITE-UNKNOWN-SLICE",
                f"gates.slice {entry['slice']!r} differs from gates.gap {gap!r}",
                "a gap gate's slice is its gap slice: remove slice",
                where=where,
            )
        return gap
    slice_name = entry.get("slice", OVERALL)
    if slice_name != OVERALL and slice_name not in slices:
        raise InputError(
            "SOM-SUITE-UNKNOWN-SLICE",
            f"gates.slice names unknown slice {slice_name!r}",
            f"use 'overall' or one of: {', '.join(slices)}",
            where=where,
        )
    return slice_name


def _check_thresholds(entry: Mapping[str, Any], kind: str, where: str) -> None:
    """Arm gates: ``min`` and/or ``max`` in [0, 1]; an ``identical_outputs`` comparison gate:
    ``max`` in [0, 1]; a ``noise_flips`` comparison gate: ``max`` an integer >= 0 (a count),
    overall only;
    others (a stored gate too): one lower bound (``ci_lower_above`` /
    ``ci_lower_at_least``), one upper bound (``ci_upper_below`` / ``ci_upper_at_most``), both
    (an equivalence margin, lower <= upper), or ``delta_at_least`` alone, each in [-1, 1]."""
    if kind == "comparison" and entry.get("metric") == NOISE_METRIC:
        wrong = [key for key in (*COMPARISON_THRESHOLDS, "min") if key in entry]
        count = entry.get("max")
        if wrong or type(count) is not int or count < 0:
            given = f", not {wrong[0]!r}" if wrong else ""
            if not wrong and "max" in entry:
                given = f", not max = {count!r}"
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"a {NOISE_METRIC} gate takes max, a count >= 0 (the most full-call outcomes "
                f"that may flip when re-batched){given}",
                "write e.g. max = 0",
                where=where,
            )
        if entry.get("slice", OVERALL) != OVERALL:
            raise InputError(
                "SOM-SUITE-UNKNOWN-SLICE",
                f"a {NOISE_METRIC} gate reads the whole noise floor, not slice {entry['slice']!r}",
                "remove slice",
                where=where,
            )
        return
    if kind in ("comparison", "stored") and entry.get("metric") == IDENTICAL_METRIC:
        wrong = [key for key in (*COMPARISON_THRESHOLDS, "min") if key in entry]
        if wrong or "max" not in entry:
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"an {IDENTICAL_METRIC} gate takes max (the largest fraction of identical "
                f"outputs allowed){f', not {wrong[0]!r}' if wrong else ''}",
                "write e.g. max = 0.5",
                where=where,
            )
        if not 0.0 <= entry["max"] <= 1.0:
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"gates.max = {entry['max']!r} is outside [0, 1]",
                "the identical fraction is in [0, 1] (write 0.5, not 50)",
                where=where,
            )
        return
    allowed, other = (
        (ARM_THRESHOLDS, COMPARISON_THRESHOLDS)
        if kind == "arm"
        else (COMPARISON_THRESHOLDS, ARM_THRESHOLDS)
    )
    misplaced = [key for key in other if key in entry]
    if misplaced:
        raise InputError(
            "SOM-SUITE-GATE-THRESHOLD",
            f"key {misplaced[0]!r} does not apply to {_article(kind)} {kind} gate",
            f"{_article(kind)} {kind} gate takes {' / '.join(allowed)}",
            where=where,
        )
    present = [key for key in allowed if key in entry]
    if not present or (kind != "arm" and not _one_design(present)):
        wanted = (
            "min and/or max"
            if kind == "arm"
            else f"one of {', '.join(LOWER_THRESHOLDS)} and/or one of "
            f"{', '.join(UPPER_THRESHOLDS)}, or delta_at_least alone"
        )
        raise InputError(
            "SOM-SUITE-GATE-THRESHOLD",
            f"{_article(kind)} {kind} gate needs {wanted}",
            "see docs/suite.md, [[gates]] (superiority, non-inferiority, equivalence)",
            where=where,
        )
    low = 0.0 if kind == "arm" else -1.0
    for key in present:
        if not low <= entry[key] <= 1.0:
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"gates.{key} = {entry[key]!r} is outside [{low:g}, 1]",
                "metrics are fractions in [0, 1] (write 0.7, not 70)",
                where=where,
            )
    impossible = {"ci_upper_below": -1.0, "ci_lower_above": 1.0}  # strict, at the bound
    for key in present:
        if key in impossible and entry[key] == impossible[key]:
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"gates.{key} = {entry[key]!r} can never pass: a difference of fractions is "
                f"never {'below -1' if key == 'ci_upper_below' else 'above 1'}",
                "a gate that cannot pass judges nothing; give a margin inside (-1, 1)",
                where=where,
            )
    if kind == "arm" and len(present) == 2 and entry["min"] > entry["max"]:
        raise InputError(
            "SOM-SUITE-GATE-THRESHOLD",
            f"gates.min {entry['min']!r} is above gates.max {entry['max']!r}",
            "no value could pass this gate",
            where=where,
        )
    if kind != "arm" and len(present) == 2:
        (lower,) = (key for key in present if key in LOWER_THRESHOLDS)
        (upper,) = (key for key in present if key in UPPER_THRESHOLDS)
        if entry[lower] > entry[upper]:
            raise InputError(
                "SOM-SUITE-GATE-THRESHOLD",
                f"gates.{lower} {entry[lower]!r} is above gates.{upper} {entry[upper]!r}",
                "no interval could pass this gate (an equivalence margin is lower <= upper)",
                where=where,
            )


def _one_design(present: Sequence[str]) -> bool:
    """A comparison or gap gate's thresholds form one design: at most one lower and at most
    one upper interval bound (superiority, non-inferiority, equivalence), or the delta alone."""
    lower = [key for key in present if key in LOWER_THRESHOLDS]
    upper = [key for key in present if key in UPPER_THRESHOLDS]
    delta = [key for key in present if key not in LOWER_THRESHOLDS + UPPER_THRESHOLDS]
    if delta:
        return len(present) == 1
    return len(lower) <= 1 and len(upper) <= 1


def _article(word: str) -> str:
    """ "an" before a vowel, else "a"."""
    return "an" if word[:1] in "aeiou" else "a"


def _float_or_none(value: Any) -> float | None:
    """Thresholds are stored as floats (an integer 0 in TOML becomes 0.0)."""
    return None if value is None else float(value)


def check_gates_against_split(suite: Suite, split: FormattedSplit) -> None:
    """Refuse, at load, a gate on ``acceptable_call_match`` whose slices hold no example with
    ``acceptable_arguments`` (the metric exists only for those), or on an abstention metric
    whose slices hold no example it counts: without this it was found only after every item
    had run. A gap gate needs them in its gap slice and the reference
    slice; an ``overall`` gate in any slice. A ``[statistics] noise_floor`` above the split's
    number of examples is refused here too (the one check of the suite against its split)."""
    for gate in suite.gates:
        if gate.metric not in _NEEDS:
            continue
        needs, test, hint = _NEEDS[gate.metric]
        if gate.kind == "gap":
            wanted = [suite.slices[0], gate.slice]
        elif gate.slice == OVERALL:
            wanted = list(suite.slices)
        else:
            wanted = [gate.slice]
        needs_all = gate.kind == "gap"
        present = [any(test(e) for e in split.slices.get(name, ())) for name in wanted]
        if all(present) if needs_all else any(present):
            continue
        missing = [name for name, ok in zip(wanted, present, strict=True) if not ok]
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric {gate.metric!r} needs {needs}, and the split has none in slice(s) "
            f"{', '.join(missing)}",
            hint,
            where=f"{suite.path}: [[gates]] ({gate.name!r})",
        )
    noise = suite.statistics.noise_floor
    if noise > len(split.examples):
        raise InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"key 'noise_floor' = {noise} is more than the split's {len(split.examples)} "
            "examples: it would re-batch every example and say so nowhere",
            f"set [statistics] noise_floor to at most {len(split.examples)} (e.g. 32)",
            where=f"{suite.path}: [statistics]",
        )
