"""Load and validate a suite file (``sommelier.toml``) into plain frozen dataclasses.

The pipeline, each stage raising a ``SommelierError`` with a stable code that names the file,
table and key (see docs/suite.md for the reference and every code):

1. read the file and parse it with ``tomllib`` (a syntax error names the file and line);
2. validate the structure against ``schemas/suite.schema.json`` (``additionalProperties``
   is false everywhere, so an unknown key is an error naming the key and its table);
3. semantic checks: decoding validated, never coerced (``EvaluationError``), model and adapter
   references classified and resolved, arms/comparisons/gates cross-referenced.

Invariant kept: a ``Suite`` returned by :func:`load_suite` is internally consistent (every name
a comparison or gate uses exists, the split file exists, local paths stay inside the suite's
folder unless written as absolute paths) and describes exactly what is on disk: nothing is
silently coerced or defaulted other than the documented defaults.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE_METRIC
from pytest_sommelier.core.decoding import validate_decoding
from pytest_sommelier.core.gates import (
    ALL_THRESHOLDS,
    ARM_THRESHOLDS,
    COMPARISON_THRESHOLDS,
    IDENTICAL_METRIC,
)
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.misses import json_kind
from pytest_sommelier.core.types import (
    ArmConfig,
    ComparisonConfig,
    EngineConfig,
    GateConfig,
    ModelConfig,
    StatisticsConfig,
    Suite,
    model_kind_of,
)
from pytest_sommelier.data.digests import sha256_path
from pytest_sommelier.data.references import (
    inside_folder,
    probe_path,
    reference_kind,
    resolve_pkg_path,
    resolve_reference,
)
from pytest_sommelier.data.schema import (
    MISSING_KEY,
    SUITE_SCHEMA_FILE,
    UNKNOWN_KEYS,
    WRONG_TYPE,
    Violation,
    json_path_text,
    violation,
)
from pytest_sommelier.data.statistics_bounds import statistics_problem
from pytest_sommelier.errors import InputError

SUITE_IDENTITY_VERSION = "sommelier.suite_resolved.v1"

GATE_METRICS: tuple[str, ...] = (*METRIC_NAMES, ACCEPTABLE_METRIC)
"""Metric names a gate may name: the five metrics of ``metrics.METRIC_NAMES`` and
``acceptable_call_match`` (present only when the split's examples carry acceptable values)."""

OVERALL = "overall"
DEFAULT_STATISTICS: dict[str, Any] = {"seed": 41, "resamples": 2000, "confidence_level": 0.95}

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*\Z")  # \Z, not $: no trailing newline


def valid_name(name: object) -> bool:
    """Whether ``name`` may name an arm or a slice (it becomes part of file names):
    letters, digits, ``_`` and ``-``, not starting with ``_``/``-``, and not ``overall``."""
    return isinstance(name, str) and bool(NAME.match(name)) and name != "overall"






# --------------------------------------------------------------------------- reading


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read, validate and resolve one suite file; raise a ``SommelierError`` on any problem."""
    suite_path = Path(path)
    label = str(path)
    data = _read_toml(suite_path, label)
    _validate_structure(data, label)
    folder = suite_path.resolve().parent
    section = data["suite"]
    slices = tuple(section["slices"])
    model = _model_config(data["model"], folder, label)
    decoding = validate_decoding(data.get("decoding", {}), where=f"{label}: [decoding]")
    arms = _arm_configs(data["arms"], folder, label)
    comparisons = _comparison_configs(data.get("comparisons", []), arms, label)
    gates = _gate_configs(data.get("gates", []), arms, comparisons, slices, label)
    statistics = {**DEFAULT_STATISTICS, **data.get("statistics", {})}
    bounded = statistics_problem(statistics)
    if bounded is not None:
        raise InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"key {bounded[0]!r} {bounded[1]}",
            "see docs/suite.md, [statistics]",
            where=f"{label}: [statistics]",
        )
    test_split = _split_path(section["test_split"], folder, label)
    engine = _engine_config(data.get("engine", {}), label)
    return Suite(
        path=suite_path.resolve(),
        name=section["name"],
        test_split=test_split,
        slices=slices,
        model=model,
        decoding=decoding,
        arms=arms,
        comparisons=comparisons,
        statistics=StatisticsConfig(
            seed=statistics["seed"],
            resamples=statistics["resamples"],
            confidence_level=float(statistics["confidence_level"]),
        ),
        gates=gates,
        engine=engine,
    )


def _engine_config(table: Mapping[str, Any], label: str) -> EngineConfig:
    """``[engine]`` (structure checked by the schema); ``options`` must be JSON-safe, since
    they are recorded in the arms' ``model_identity``."""
    options = dict(table.get("options", {}))
    try:
        json.dumps(options, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(
            "SOM-SUITE-ENGINE-OPTIONS",
            f"engine.options holds a value that is not JSON ({exc})",
            "use strings, numbers, booleans, arrays and tables (no dates or times)",
            where=f"{label}: [engine]",
        ) from None
    defaults = EngineConfig()
    return EngineConfig(
        name=table.get("name", defaults.name),
        options=options,
        base_url=table.get("base_url"),
        api_key_env=table.get("api_key_env"),
        concurrency=table.get("concurrency", defaults.concurrency),
        request_timeout_s=float(table.get("request_timeout_s", defaults.request_timeout_s)),
        max_retries=table.get("max_retries", defaults.max_retries),
        prompt_format=table.get("prompt_format", defaults.prompt_format),
    )


def _read_toml(path: Path, label: str) -> dict[str, Any]:
    """Parse the file as TOML; a missing file, bad UTF-8, bad syntax, nesting too deep to read
    or a value Python cannot hold (an integer over 4300 digits) is an ``InputError``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(
            "SOM-SUITE-MISSING", "suite file not found", "check the path", where=label
        ) from None
    except OSError as exc:
        raise InputError(
            "SOM-SUITE-UNREADABLE",
            f"cannot read suite file: {exc.strerror}",
            "give a readable sommelier.toml file",
            where=label,
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            "SOM-SUITE-ENCODING",
            "not valid UTF-8",
            "save the file as UTF-8",
            where=f"{label}:{line}",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, detail = _toml_error_position(str(exc), text)
        raise InputError(
            "SOM-SUITE-TOML",
            f"TOML syntax error: {detail}",
            "fix the TOML syntax at that line",
            where=f"{label}:{line}",
        ) from None
    except RecursionError:
        raise InputError(
            "SOM-SUITE-TOML",
            "TOML arrays or tables are nested too deeply to read",
            "a suite file needs no more than a few levels of nesting",
            where=label,
        ) from None
    except ValueError as exc:  # tomllib lets int()'s digit limit through, for one
        raise InputError(
            "SOM-SUITE-TOML",
            f"TOML value cannot be read: {_short(str(exc), 120)}",
            "fix the value (integers are limited to 4300 digits)",
            where=label,
        ) from None


def _toml_error_position(message: str, text: str) -> tuple[int, str]:
    """Line number and message of a ``TOMLDecodeError`` ("at end of document" -> last line)."""
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        detail = message[: match.start()] + f" (column {match.group(2)})"
        return int(match.group(1)), detail
    match = re.search(r"\s*\(at end of document\)\s*$", message)
    if match:
        return max(1, len(text.splitlines())), message[: match.start()] + " (at end of file)"
    return 1, message


# --------------------------------------------------------------------------- schema


def _validate_structure(data: dict[str, Any], label: str) -> None:
    """Raise an ``InputError`` for the most useful schema violation, if any."""
    found = violation(SUITE_SCHEMA_FILE, data)
    if found is not None:
        raise _schema_error(found, data, label)


def _schema_error(found: Violation, data: Any, label: str) -> InputError:
    """Word one schema violation as a one-line ``InputError`` naming the table and key."""
    path = list(found.path)
    table, key = _locate(data, path)
    where = f"{label}: {table}"
    if found.kind == UNKNOWN_KEYS:
        names = ", ".join(repr(k) for k in found.keys)
        return InputError(
            "SOM-SUITE-UNKNOWN-KEY",
            f"unknown key{'s' if len(found.keys) > 1 else ''} {names}",
            f"allowed keys here: {', '.join(found.allowed)} (see docs/suite.md)",
            where=where,
        )
    if found.kind == MISSING_KEY:
        return InputError(
            "SOM-SUITE-MISSING-KEY",
            f"missing required key {found.keys[0]!r}",
            "see docs/suite.md for the required keys",
            where=where,
        )
    if found.kind == WRONG_TYPE:
        expected = _toml_type_name(found.expected)
        return InputError(
            "SOM-SUITE-TYPE",
            f"{_subject(key)} must be {expected}, got {_toml_value_type(found.instance)}",
            "see docs/suite.md for each key's type",
            where=where,
        )
    if "propertyNames" in found.schema_path or (
        path[:2] == ["suite", "slices"] and found.rule in {"pattern", "not"}
    ):
        what = "arm name" if "propertyNames" in found.schema_path else "slice name"
        return InputError(
            "SOM-SUITE-BAD-NAME",
            f"{what} {found.instance!r} is not allowed",
            "use a letter or digit, then letters, digits, '_' or '-'; 'overall' is reserved",
            where=where,
        )
    if found.rule == "minProperties":
        return InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"{table} needs at least one entry",
            "add one, e.g. [arms.base] for the base model itself",
            where=where,
        )
    return InputError(
        "SOM-SUITE-INVALID-VALUE",
        f"{_subject(key)}: {_short(found.message)}",
        "see docs/suite.md for the allowed values",
        where=where,
    )


def _locate(data: Any, path: Sequence[Any]) -> tuple[str, str]:
    """Split a JSON path into the innermost TOML table's label and the key path inside it."""
    node = data
    table_length = 0
    for index, part in enumerate(path):
        node = node[part]
        if isinstance(node, dict):
            table_length = index + 1
    return _table_label(data, path[:table_length]), json_path_text(path[table_length:])


def _table_label(data: Any, table: Sequence[Any]) -> str:
    """``[decoding]``, ``[arms.adapter]``, ``[[gates]] #2 ('uplift')`` or ``top level``."""
    if not table:
        return "top level"
    label = ""
    names: list[str] = []
    for part in table:
        if isinstance(part, int):
            label = f"[[{'.'.join(names)}]] #{part + 1}"
            names = []
        else:
            names.append(str(part))
    if names:
        label = (label + " " if label else "") + f"[{'.'.join(names)}]"
    node = data
    for part in table:
        node = node[part]
    if isinstance(table[-1], int) and isinstance(node.get("name"), str):
        label += f" ({node['name']!r})"
    return label


def _subject(key: str) -> str:
    """How a message refers to the offending key ("key 'seed'" or "this table")."""
    return f"key {key!r}" if key else "this table"


def _toml_type_name(expected: Any) -> str:
    """Human (TOML) name of a JSON Schema type."""
    names = {
        "object": "a table",
        "array": "an array",
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "a boolean",
    }
    if isinstance(expected, list):
        return " or ".join(names.get(str(item), str(item)) for item in expected)
    return names.get(str(expected), str(expected))


_TOML_KINDS = {
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a float",
    "string": "a string",
    "array": "an array",
    "object": "a table",
}


def _toml_value_type(value: Any) -> str:
    """Human (TOML) name of a parsed value's type (``core.misses.json_kind``, in TOML words;
    a date or time, which JSON lacks, by its Python name)."""
    if not isinstance(value, (bool, int, float, str, list, dict)):
        return f"a {type(value).__name__}"
    return _TOML_KINDS[json_kind(value)]


def _short(message: str, limit: int = 160) -> str:
    """One line, at most ``limit`` characters."""
    line = " ".join(message.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _split_path(value: str, folder: Path, label: str) -> Path:
    """Resolve ``suite.test_split``; a missing file is an ``InputError`` naming the path."""
    where = f"{label}: [suite]"
    expanded = os.path.expanduser(value)
    if os.path.isabs(expanded):
        path = Path(os.path.normpath(expanded))
    else:
        path = inside_folder(value, folder, field="suite.test_split", where=where)
    if not probe_path(path, Path.is_file, value, field="suite.test_split", where=where):
        raise InputError(
            "SOM-SUITE-SPLIT-MISSING",
            f"suite.test_split: split file not found: {path}",
            "write the formatted split there (sommelier format) or fix the path",
            where=where,
        )
    return path


# --------------------------------------------------------------------------- tables


def _model_config(table: dict[str, Any], folder: Path, label: str) -> ModelConfig:
    """``[model]`` with ``base`` resolved (``references.resolve_reference``)."""
    revision = table.get("revision")
    base = resolve_reference(
        table["base"],
        folder,
        field="model.base",
        revision=revision,
        revision_field="model.revision",
        adapter=False,
        where=f"{label}: [model]",
    )
    return ModelConfig(
        base=base,
        revision=revision,
        dtype=table.get("dtype"),
        device=table.get("device"),
        served_name=table.get("served_name"),
    )


def _arm_configs(table: dict[str, Any], folder: Path, label: str) -> dict[str, ArmConfig]:
    """``[arms.*]`` in file order; an arm without ``adapter`` is the base model."""
    arms: dict[str, ArmConfig] = {}
    for name, arm in table.items():
        where = f"{label}: [arms.{name}]"
        revision = arm.get("adapter_revision")
        adapter = arm.get("adapter")
        if adapter is None:
            if revision is not None:
                raise InputError(
                    "SOM-SUITE-REVISION-UNUSED",
                    f"arms.{name}.adapter_revision is set but the arm has no adapter",
                    "remove adapter_revision, or add adapter",
                    where=where,
                )
        else:
            adapter = resolve_reference(
                adapter,
                folder,
                field=f"arms.{name}.adapter",
                revision=revision,
                revision_field=f"arms.{name}.adapter_revision",
                adapter=True,
                where=where,
            )
        arms[name] = ArmConfig(
            name=name,
            adapter=adapter,
            adapter_revision=revision,
            served_name=arm.get("served_name"),
        )
    return arms


def _comparison_configs(
    entries: list[dict[str, Any]], arms: Mapping[str, ArmConfig], label: str
) -> tuple[ComparisonConfig, ...]:
    """``[[comparisons]]``: existing, distinct arms; no comparison listed twice."""
    seen: set[tuple[str, str]] = set()
    comparisons = []
    for index, entry in enumerate(entries):
        where = f"{label}: [[comparisons]] #{index + 1}"
        for key in ("candidate", "reference"):
            _require_arm(entry[key], arms, f"comparisons.{key}", where)
        pair = (entry["candidate"], entry["reference"])
        if pair[0] == pair[1]:
            raise InputError(
                "SOM-SUITE-COMPARISON-SELF",
                f"comparison compares arm {pair[0]!r} with itself",
                "candidate and reference must be different arms",
                where=where,
            )
        if pair in seen:
            raise InputError(
                "SOM-SUITE-DUPLICATE-COMPARISON",
                f"comparison {pair[0]}-vs-{pair[1]} is listed twice",
                "remove the duplicate",
                where=where,
            )
        seen.add(pair)
        comparisons.append(ComparisonConfig(candidate=pair[0], reference=pair[1]))
    return tuple(comparisons)


def _require_arm(name: str, arms: Mapping[str, ArmConfig], field: str, where: str) -> None:
    """``name`` must be a configured arm."""
    if name not in arms:
        raise InputError(
            "SOM-SUITE-UNKNOWN-ARM",
            f"{field} names unknown arm {name!r}",
            f"configured arms: {', '.join(arms)}",
            where=where,
        )


def _gate_configs(
    entries: list[dict[str, Any]],
    arms: Mapping[str, ArmConfig],
    comparisons: Sequence[ComparisonConfig],
    slices: Sequence[str],
    label: str,
) -> tuple[GateConfig, ...]:
    """``[[gates]]``: kind derived from the keys, every reference checked, names unique."""
    gates: list[GateConfig] = []
    for index, entry in enumerate(entries):
        where = f"{label}: [[gates]] #{index + 1} ({entry['name']!r})"
        if any(gate.name == entry["name"] for gate in gates):
            raise InputError(
                "SOM-SUITE-DUPLICATE-GATE",
                f"gate name {entry['name']!r} is used twice",
                "give every gate a unique name",
                where=where,
            )
        gates.append(_gate_config(entry, arms, comparisons, slices, where))
    return tuple(gates)


def _gate_kind(entry: Mapping[str, Any], where: str) -> str:
    """Derive the kind: ``arm`` -> "arm"; ``arm`` + ``gap`` -> "gap";
    ``candidate`` + ``reference`` -> "comparison"; anything else is an error."""
    has_arm = "arm" in entry
    has_pair = "candidate" in entry or "reference" in entry
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
        "use arm (an arm gate), arm + gap (a language-gap gate) or candidate + reference "
        "(a comparison gate)",
        where=where,
    )


def _gate_config(
    entry: Mapping[str, Any],
    arms: Mapping[str, ArmConfig],
    comparisons: Sequence[ComparisonConfig],
    slices: Sequence[str],
    where: str,
) -> GateConfig:
    """Build one gate after checking its arms, metric, slice and thresholds."""
    kind = _gate_kind(entry, where)
    for key in ("arm", "candidate", "reference"):
        if key in entry:
            _require_arm(entry[key], arms, f"gates.{key}", where)
    if entry["metric"] == IDENTICAL_METRIC and kind != "comparison":
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric {IDENTICAL_METRIC!r} is a comparison gate's metric",
            "name candidate and reference (and max) instead of arm",
            where=where,
        )
    if entry["metric"] not in (*GATE_METRICS, IDENTICAL_METRIC):
        raise InputError(
            "SOM-SUITE-UNKNOWN-METRIC",
            f"gates.metric names unknown metric {entry['metric']!r}",
            f"metrics: {', '.join(GATE_METRICS)}",
            where=where,
        )
    if kind == "comparison":
        _require_comparison(entry["candidate"], entry["reference"], comparisons, where)
    slice_name = _gate_slice(entry, kind, slices, where)
    _check_thresholds(entry, kind, where)
    return GateConfig(
        name=entry["name"],
        kind=kind,
        metric=entry["metric"],
        slice=slice_name,
        arm=entry.get("arm"),
        candidate=entry.get("candidate"),
        reference=entry.get("reference"),
        gap=entry.get("gap"),
        **{key: _float_or_none(entry.get(key)) for key in ALL_THRESHOLDS},
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
    ``max`` in [0, 1]; others: exactly one threshold in [-1, 1]."""
    if kind == "comparison" and entry.get("metric") == IDENTICAL_METRIC:
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
    if not present or (kind != "arm" and len(present) > 1):
        wanted = "min and/or max" if kind == "arm" else f"exactly one of {', '.join(allowed)}"
        raise InputError(
            "SOM-SUITE-GATE-THRESHOLD",
            f"{_article(kind)} {kind} gate needs {wanted}",
            "see docs/suite.md, [[gates]]",
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
    if kind == "arm" and len(present) == 2 and entry["min"] > entry["max"]:
        raise InputError(
            "SOM-SUITE-GATE-THRESHOLD",
            f"gates.min {entry['min']!r} is above gates.max {entry['max']!r}",
            "no value could pass this gate",
            where=where,
        )


def _article(word: str) -> str:
    """ "an" before a vowel, else "a"."""
    return "an" if word[:1] in "aeiou" else "a"


def _float_or_none(value: Any) -> float | None:
    """Thresholds are stored as floats (an integer 0 in TOML becomes 0.0)."""
    return None if value is None else float(value)


# --------------------------------------------------------------------------- identity


def suite_identity(suite: Suite) -> dict[str, Any]:
    """The resolved suite as JSON-safe data with content digests instead of machine paths.

    Written as ``suite.resolved.json``. Local model/adapter files and directories appear as
    ``{"kind": "local", "sha256": ...}``, package references as ``{"kind": "pkg", "ref": ...,
    "sha256": ...}``, hub ids as ``{"kind": "hub", "id": ..., "revision": ...}``; the split as
    its file name and digest. No absolute path of this machine appears anywhere.
    """
    return {
        "schema_version": SUITE_IDENTITY_VERSION,
        "name": suite.name,
        "test_split": {"file": suite.test_split.name, "sha256": sha256_path(suite.test_split)},
        "slices": list(suite.slices),
        "reference_slice": suite.reference_slice,
        "model": {
            "base": reference_identity(suite.model.base, suite.model.revision),
            "dtype": suite.model.dtype,
            "device": suite.model.device,
        },
        "decoding": dict(suite.decoding),
        "arms": {
            name: {
                "model_kind": model_kind_of(arm.adapter),
                "adapter": None
                if arm.adapter is None
                else reference_identity(arm.adapter, arm.adapter_revision),
            }
            for name, arm in suite.arms.items()
        },
        "comparisons": [
            {"name": c.name, "candidate": c.candidate, "reference": c.reference}
            for c in suite.comparisons
        ],
        "statistics": asdict(suite.statistics),
        "gates": [asdict(gate) for gate in suite.gates],
    }


def reference_identity(value: str, revision: str | None) -> dict[str, Any]:
    """Identity of one loaded model/adapter reference (see :func:`suite_identity`)."""
    kind = reference_kind(value)
    if kind == "hub":
        return {"kind": "hub", "id": value, "revision": revision}
    if kind == "pkg":
        return {"kind": "pkg", "ref": value, "sha256": sha256_path(resolve_pkg_path(value))}
    return {"kind": "local", "sha256": sha256_path(value)}
