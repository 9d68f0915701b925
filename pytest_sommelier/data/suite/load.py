"""Load and validate a suite file (``sommelier.toml``) into plain frozen dataclasses.

The pipeline, each stage raising a ``SommelierError`` with a stable code that names the file,
table and key (see docs/suite.md for the reference and every code):

1. read the file and parse it with ``tomllib`` (a syntax error names the file and line);
2. validate the structure against ``schemas/suite.schema.json`` (``additionalProperties``
   is false everywhere, so an unknown key is an error naming the key and its table);
3. semantic checks: decoding validated, never coerced (``EvaluationError``), model and adapter
   references classified and resolved, arms/comparisons/gates cross-referenced.

The stages live by job: ``suite_toml`` (reading and the schema check), ``suite_arms`` (model,
arms, comparisons, engine), ``suite_gates`` (gates), ``suite_names`` (arm and slice names) and
``suite_identity`` (the resolved suite written into a run); this module composes them.

Invariant kept: a ``Suite`` returned by :func:`load_suite` is internally consistent (every name
a comparison or gate uses exists, the split file exists and stays inside the suite's folder
unless written as an absolute path; model and adapter paths are relative to the suite file and
may leave its folder) and describes exactly what is on disk: nothing is silently coerced or
defaulted other than the documented defaults.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core.decoding import validate_decoding as validate_decoding
from pytest_sommelier.core.gates import NOISE_METRIC
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY
from pytest_sommelier.core.parse_v2 import DEFAULT_ORDER
from pytest_sommelier.core.reasoning import ReasoningRule, checked_rule
from pytest_sommelier.core.types import GateConfig as GateConfig
from pytest_sommelier.core.types import StatisticsConfig, Suite
from pytest_sommelier.data.references import inside_folder, probe_path
from pytest_sommelier.data.split.template_render import template_kwargs_problem
from pytest_sommelier.data.suite.arms import (
    arm_configs,
    comparison_configs,
    engine_config,
    model_config,
)
from pytest_sommelier.data.suite.gates import GATE_METRICS as GATE_METRICS
from pytest_sommelier.data.suite.gates import gate_configs
from pytest_sommelier.data.suite.globs import (
    expand_globs,
    live_tables,
    with_arms,
    without_idle_selection,
)
from pytest_sommelier.data.suite.identity import SUITE_IDENTITY_VERSION as SUITE_IDENTITY_VERSION
from pytest_sommelier.data.suite.identity import reference_identity as reference_identity
from pytest_sommelier.data.suite.identity import suite_identity as suite_identity
from pytest_sommelier.data.suite.names import NAME as NAME
from pytest_sommelier.data.suite.names import OVERALL as OVERALL
from pytest_sommelier.data.suite.names import valid_name as valid_name
from pytest_sommelier.data.suite.selection import selection_config
from pytest_sommelier.data.suite.statistics_bounds import statistics_problem
from pytest_sommelier.data.suite.toml import read_toml, validate_structure
from pytest_sommelier.errors import InputError

DEFAULT_STATISTICS: dict[str, Any] = {
    "seed": 41,
    "resamples": 2000,
    "confidence_level": 0.95,
    "interval": "auto",
    "cluster": "root",
    "familywise": "none",
    "power": 0.8,
}
"""``[statistics]`` defaults; the schema (``schemas/suite.schema.json``) checks every key's
type and choices (``interval``, ``cluster``, ``familywise``); ``statistics_bounds`` the ranges
(``power`` in [0.5, 0.999], ``effect`` in [0.0001, 1], finite numbers only)."""


SUITE_FILE = "sommelier.toml"
"""The suite file's name in a suite folder (the plugin's ``keys.SUITE_FILENAME``, which the
plugin cannot import from here without loading this layer; a test checks they agree)."""


def suite_file(path: str | os.PathLike[str]) -> Path:
    """The suite file a path names: the path itself, or a folder's ``sommelier.toml`` (a suite
    folder is taken wherever a suite file is, as pytest takes it)."""
    given = Path(path)
    return given / SUITE_FILE if given.is_dir() else given


def load_suite(
    path: str | os.PathLike[str], *, live: bool = False, given: Mapping[str, str] | None = None
) -> Suite:
    """Read, validate and resolve one suite file (or a folder's ``sommelier.toml``,
    ``suite_file``); raise a ``SommelierError`` on any problem. ``live``: the suite as the
    training callback reads it (``data.suite.globs.live_tables``: a glob arm is one arm, its
    adapter kept as written; no ``[selection]``). ``given``: arm name -> an adapter folder
    (absolute) evaluated in place of what the file writes (``--sommelier-arms``,
    ``data.suite.globs.with_arms``): a glob arm so given is one arm of its own name, and a
    ``[selection]`` left with nothing to choose among is left out with its gates."""
    suite_path = suite_file(path)
    label = str(suite_path)
    data = read_toml(suite_path, label)
    validate_structure(data, label)
    folder = suite_path.resolve().parent
    data, fixed = with_arms(data, given or {}, label)
    # checkpoint sweeps: one arm per folder (a live reading expands nothing)
    data = live_tables(data, label) if live else expand_globs(data, folder, label, fixed)
    if fixed:
        data = without_idle_selection(data)
    section = data["suite"]
    slices = tuple(section["slices"])
    model = model_config(data["model"], folder, label)
    decoding = validate_decoding(data.get("decoding", {}), where=f"{label}: [decoding]")
    arms = arm_configs(data["arms"], folder, label, keep_globs=live)
    comparisons = comparison_configs(data.get("comparisons", []), arms, label)
    scorers = tuple(section.get("scorers", ()))
    gates = gate_configs(
        data.get("gates", []), arms, comparisons, slices, label, scorers,
        has_selection=data.get("selection") is not None,
    )  # fmt: skip
    selection = selection_config(data.get("selection"), arms, label, scorers, slices)
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
    engine = engine_config(data.get("engine", {}), label)
    parser_version, parser_order = _parser_keys(data.get("parser", {}), label)
    reasoning = _reasoning(data.get("parser", {}), label)
    template_kwargs = _template_kwargs(data.get("format", {}), label)
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
            interval=statistics["interval"],
            cluster=statistics["cluster"],
            familywise=statistics["familywise"],
            power=float(statistics["power"]),
            noise_floor=_noise_floor(statistics, gates, label),
            effect=None if statistics.get("effect") is None else abs(float(statistics["effect"])),
        ),
        gates=gates,
        engine=engine,
        arguments_key=section.get("arguments_key", DEFAULT_ARGUMENTS_KEY),
        split_tokenizer=section.get("split_tokenizer", "base"),
        selection=selection,
        scorers=scorers,
        parser_version=parser_version,
        parser_order=parser_order,
        reasoning=reasoning,
        template_kwargs=template_kwargs,
    )


def _parser_keys(section: dict[str, Any], label: str) -> tuple[str, str]:
    """``[parser] version`` and ``order`` (the schema checks their values; absent: ``v1``,
    ``any``); ``version = "v2"`` selects ``sommelier.parser.v2`` (``core.parse_v2``) and the
    call-set metrics (``core.call_sets``) for the whole run."""
    version = section.get("version", "v1")
    return version, section.get("order", DEFAULT_ORDER)


def _reasoning(section: dict[str, Any], label: str) -> ReasoningRule:
    """``[parser] reasoning`` (``core.reasoning.checked_rule``; absent: no rule)."""
    try:
        return checked_rule(section.get("reasoning"))
    except ValueError as exc:
        raise InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"key 'reasoning' {exc}",
            'write reasoning = "think", "engine" or {start = "<think>", end = "</think>"} '
            "(docs/parser.md, Reasoning models)",
            where=f"{label}: [parser]",
        ) from None


def _template_kwargs(section: dict[str, Any], label: str) -> dict[str, Any]:
    """``[format] template_kwargs`` (``template_render.template_kwargs_problem``; absent: none)."""
    value = section.get("template_kwargs", {})
    problem = template_kwargs_problem(value)
    if problem is not None:
        raise InputError(
            "SOM-SUITE-INVALID-VALUE",
            f"key 'template_kwargs' {problem}",
            "write template_kwargs = {enable_thinking = false} (names to JSON values; "
            "docs/suite.md, [format])",
            where=f"{label}: [format]",
        )
    return dict(value)


def _noise_floor(statistics: dict[str, Any], gates: tuple[GateConfig, ...], label: str) -> int:
    """``[statistics] noise_floor`` (default 0: off); a ``noise_flips`` gate needs it on."""
    count = int(statistics.get("noise_floor", 0))
    gate = next((gate for gate in gates if gate.metric == NOISE_METRIC), None)
    if gate is not None and count == 0:
        raise InputError(
            "SOM-SUITE-GATE-NOISE",
            f"gate {gate.name!r} reads {NOISE_METRIC}, but [statistics] noise_floor is 0 (off)",
            "set [statistics] noise_floor = N (e.g. 32) to measure it",
            where=f"{label}: [statistics]",
        )
    return count


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
