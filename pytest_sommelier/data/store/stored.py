"""Stored runs: reading a run directory's inputs and arms back (for ``sommelier rescore``,
``commands.rescore``, and one side of ``sommelier compare A B`` over two stored arms), with no
model.

Invariants kept: a run is re-derived only from its own files (``suite.resolved.json``, the
split copy in ``inputs/`` and each arm's ``generations.<slice>.jsonl``) after the same
consistency checks as a live run; the split copy must still have the digest the run recorded;
nothing in the run directory is touched unless every check passed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.parse import ARGUMENTS_KEYS, recorded_arguments_key
from pytest_sommelier.core.parse_v2 import DEFAULT_ORDER, ORDERS, PARSER_VERSIONS
from pytest_sommelier.core.pipeline import ArmRun, ArmSide, order_records
from pytest_sommelier.core.reasoning import checked_rule
from pytest_sommelier.core.scorers import Scorer, recorded_scorer
from pytest_sommelier.core.types import (
    ArmConfig,
    ComparisonConfig,
    Decoding,
    FormattedSplit,
    GateConfig,
    ModelConfig,
    SelectionConfig,
    StatisticsConfig,
    Suite,
    model_kind_of,
)
from pytest_sommelier.data.split.load import load_suite_split
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.suite.load import valid_name
from pytest_sommelier.data.suite.statistics_bounds import effect_problem, statistics_problem
from pytest_sommelier.errors import InputError, InvariantError


def _not_resolved(where: str, exc: Exception) -> InputError:
    """The error for a ``suite.resolved.json`` missing a field or holding a wrong type."""
    return InputError(
        "SOM-STORED-FIELD",
        f"{where}: not a resolved suite ({type(exc).__name__}: {exc})",
        "point at a run directory written by pytest-sommelier",
    )


def suite_from_resolved(resolved: dict[str, Any], run_dir: Path) -> Suite:
    """Rebuild the parts of a Suite that scoring needs from ``suite.resolved.json`` (a run
    written before ``arguments_key`` was recorded read ``arguments``)."""
    where = str(runlayout.resolved(run_dir))
    try:
        names = [
            *resolved["slices"],
            *resolved["arms"],
            *(c[key] for c in resolved["comparisons"] for key in ("candidate", "reference")),
        ]
    except (KeyError, TypeError) as exc:
        raise _not_resolved(where, exc) from None
    bad = [name for name in names if not valid_name(name)]
    if bad:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{where}: {bad[0]!r} is not a valid arm or slice name",
            "names are letters, digits, '_' and '-'; the resolved suite was edited",
        )
    recorded = resolved.get("statistics")
    bounded = statistics_problem(recorded if isinstance(recorded, dict) else {})
    if bounded is not None:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{where}: statistics.{bounded[0]} {bounded[1]}",
            "the resolved suite was edited; a run is re-scored with the settings it ran with",
        )
    for index, gate in enumerate(resolved.get("gates") or []):
        effect = gate.get("effect") if isinstance(gate, dict) else None
        why = None if effect is None else effect_problem(effect)
        if why is not None:
            raise InputError(
                "SOM-STORED-FIELD",
                f"{where}: gates[{index}].effect {why}",
                "the resolved suite was edited; a gate's effect is a size in [0.0001, 1]",
            )
    arguments_key = recorded_arguments_key(resolved)
    if arguments_key is None:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{where}: arguments_key {resolved['arguments_key']!r} is not one of "
            f"{', '.join(ARGUMENTS_KEYS)}",
            "the resolved suite was edited",
        )
    try:
        reasoning = checked_rule(resolved.get("reasoning"))
    except ValueError as exc:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{where}: reasoning {exc}",
            "the resolved suite was edited; a run is re-scored with the rule it ran with",
        ) from None
    parser_version, parser_order = _stored_parser(resolved.get("parser"), where)
    try:
        statistics = StatisticsConfig(**resolved["statistics"])
        return Suite(
            path=runlayout.resolved(run_dir),
            name=resolved["name"],
            test_split=runlayout.split_copy(run_dir),
            slices=tuple(resolved["slices"]),
            model=ModelConfig(base="<stored>", revision=None, dtype=None, device=None),
            decoding=cast(Decoding, dict(resolved["decoding"])),  # as recorded, not re-judged
            arms={
                name: ArmConfig(name=name, adapter=None, adapter_revision=None)
                for name in resolved["arms"]
            },
            comparisons=tuple(
                ComparisonConfig(candidate=c["candidate"], reference=c["reference"])
                for c in resolved["comparisons"]
            ),
            statistics=statistics,
            gates=tuple(GateConfig(**gate) for gate in resolved["gates"]),
            arguments_key=arguments_key,
            scorers=tuple(str(name) for name in resolved.get("scorers", ())),
            selection=_stored_selection(resolved.get("selection")),
            reasoning=reasoning,
            template_kwargs=_stored_kwargs(resolved.get("template_kwargs")),
            parser_version=parser_version,
            parser_order=parser_order,
        )
    except (KeyError, TypeError) as exc:
        raise _not_resolved(where, exc) from None


def _stored_parser(recorded: Any, where: str) -> tuple[str, str]:
    """The ``[parser] version`` and ``order`` a resolved suite records (absent: ``v1``, ``any``,
    every run before parser v2); anything else is refused, naming the field."""
    if recorded is None:
        return "v1", DEFAULT_ORDER
    version = recorded.get("version") if isinstance(recorded, dict) else None
    order = recorded.get("order") if isinstance(recorded, dict) else None
    if version not in PARSER_VERSIONS or order not in ORDERS:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{where}: parser {recorded!r} is not {{version: v1|v2, order: any|exact}}",
            "the resolved suite was edited; a run is re-scored with the parser it ran with",
        )
    return str(version), str(order)


def _stored_kwargs(recorded: Any) -> dict[str, Any]:
    """The ``[format] template_kwargs`` a resolved suite records (absent: none); anything but
    an object is a ``TypeError``, refused with the resolved suite."""
    if recorded is None:
        return {}
    if not isinstance(recorded, dict):
        raise TypeError("template_kwargs is not an object")
    return dict(recorded)


def _stored_selection(recorded: Any) -> SelectionConfig | None:
    """The ``[selection]`` a resolved suite records (``data.suite.identity``), or None (a run
    without one, or written before it was recorded); a malformed one is a ``TypeError`` /
    ``KeyError``, refused with the resolved suite."""
    if recorded is None:
        return None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("candidates"), list):
        raise TypeError("selection is not an object with a candidates list")
    return SelectionConfig(
        metric=str(recorded["metric"]),
        among=str(recorded["among"]),
        reference=str(recorded["reference"]),
        candidates=tuple(str(name) for name in recorded["candidates"]),
        slice=str(recorded.get("slice", "overall")),
    )


def load_run_inputs(run_dir: Path) -> tuple[dict[str, Any], Suite, FormattedSplit]:
    """The resolved suite and the split copy of a run, with the split's digest checked."""
    resolved = artifacts.read_resolved(run_dir)
    suite = suite_from_resolved(resolved, run_dir)
    if not suite.test_split.exists():
        raise InputError(
            "SOM-STORED-MISSING",
            f"{suite.test_split}: not found",
            "the run directory is missing its split copy; it cannot be re-scored",
        )
    split = load_suite_split(suite)
    recorded = (resolved.get("test_split") or {}).get("sha256")
    if split.sha256 != recorded:
        raise InvariantError(
            "SOM-STORED-SPLIT-DIGEST",
            f"{suite.test_split}: digest {split.sha256[:12]} does not match the recorded "
            f"test_split sha256 {str(recorded)[:12]}",
            "the split copy was edited; a run can only be re-scored against its own split",
        )
    return resolved, suite, split


def stored_arm(
    suite: Suite,
    split: FormattedSplit,
    arm_dir: Path,
    *,
    name: str | None = None,
    as_baseline: bool = False,
) -> ArmRun:
    """One stored arm folder as an ``ArmRun`` (the one reader of stored arms).

    ``name`` defaults to the report's ``arm``. For ``rescore`` and ``compare`` the report is
    rebuilt from the records, which must carry the suite's decoding. As a baseline of a new
    run (``as_baseline``) the records are checked against the stored report's own decoding
    and the stored report is kept: a different decoding is then refused, field named, by the
    identity gate of the comparison.
    """
    report, telemetry, records = artifacts.read_arm(arm_dir)
    arm = name or report["arm"]
    flat = [record for rows in records.values() for record in rows]
    decoding = report.get("decoding") if as_baseline else None
    return ArmRun(
        name=arm,
        model_kind=model_kind_of(report.get("adapter_identity")),  # the one rule, not a claim
        model_identity=report.get("model_identity"),
        adapter_identity=report.get("adapter_identity"),
        records=order_records(suite, split, arm, flat, decoding=decoding),
        stored_report=report if as_baseline else None,
        stored_telemetry=telemetry,
        rebatched=artifacts.read_rebatched(arm_dir),
    )


def stored_scorers(suite: Suite, run_dir: Path) -> tuple[Scorer, ...]:
    """The scorers a stored run was scored with, as its arm reports recorded them (names,
    versions, kinds): re-read from disk, a run's scorer metrics are its records' own ``scores``
    (each checked again), so it compares with the run it was compared with when it was made,
    whether or not the scorer's package (or ``conftest.py``) is at hand. ``sommelier rescore``
    is what re-runs the scorers themselves."""
    if not suite.scorers:
        return ()
    for name in suite.arms:
        report_path = runlayout.arm_report(runlayout.arm_dir(run_dir, name))
        if not report_path.is_file():
            continue
        report = artifacts.read_json(report_path)
        recorded = report.get("scorers") if isinstance(report, dict) else None
        entries = [e for e in recorded or () if isinstance(e, dict)]
        names = [str(e.get("name")) for e in entries]
        if len(entries) != len(recorded or ()) or sorted(names) != sorted(suite.scorers):
            raise InputError(
                "SOM-STORED-FIELD",
                f"{report_path}: scorers {names} are not the resolved suite's "
                f"{list(suite.scorers)}",
                "the run's files were edited; a run is read with the scorers it ran with",
            )
        return tuple(recorded_scorer(entry) for entry in entries)
    return ()


def read_arm_side(arm_dir: Path) -> ArmSide:
    """A stored arm folder (possibly of another run) as one side of ``sommelier compare A B``
    (``core.pipeline.compare_arm_sides``): its run's resolved suite, suite and split, the arm
    read back (:func:`stored_arm`) and the scorers its run recorded."""
    run_dir = Path(arm_dir).resolve().parent.parent
    resolved, suite, split = load_run_inputs(run_dir)
    arm = stored_arm(suite, split, Path(arm_dir))
    return ArmSide(
        resolved=resolved, suite=suite, split=split, arm=arm,
        scorers=stored_scorers(suite, run_dir), run_id=resolved.get("run_id", run_dir.name),
    )  # fmt: skip


__all__ = ["load_run_inputs", "read_arm_side", "stored_arm", "suite_from_resolved"]
