"""``sommelier plan``: from a pilot run, the pairs (and clusters) a run needs for its claims.

The pilot's stored generations are re-scored through ``data.store.stored`` (the same readers and
checks as ``sommelier rescore``; nothing in the run folder is written), its comparisons rebuilt,
and for every comparison and slice (and overall) Connor's (1987) formula is applied to the
upper 80% confidence limit of the pilot's discordance, its design effect and mean cluster size
(``core.power.plan``); then every claim the suite's gates make is sized as it is judged: a gate
at 0 by Connor's formula at the effect, a gate with a margin (non-inferiority, a bounded loss or
gain, equivalence) by Nam's (1997) score-test formula, on the comparison, the language gap or
the comparison with a stored run it reads. ``--comparison ARM-vs-ARM@NNNN`` plans a comparison
with a stored run. A block with fewer than 10 discordant pilot pairs is flagged, and its
numbers marked.

Invariant kept: every figure comes from the pilot's own records under its own suite settings
(seed, level, clusters); a slice whose discordance cannot show the effect says so (``None``
pairs needed) rather than printing a number that cannot happen; every row names the formula
it used.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pytest_sommelier.core.gates import (
    IDENTICAL_METRIC,
    NOISE_METRIC,
    SELECTION_KIND,
    THRESHOLDS,
    interval_limits,
    is_interval_gate,
    resolve_selection_gates,
    selection_level,
    selection_subject,
    stored_subject,
)
from pytest_sommelier.core.intervals import RATIO_OF_SUMS
from pytest_sommelier.core.metrics import ARGUMENT_F1, FULL_CALL_EXACT_MATCH, METRIC_NAMES
from pytest_sommelier.core.pipeline import evaluate_run
from pytest_sommelier.core.power import SMALL_PILOT_DISCORDANT, Limits, assumed_difference, plan
from pytest_sommelier.core.types import ComparisonReport, GateConfig
from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm, stored_scorers
from pytest_sommelier.errors import InputError

DEFAULT_EFFECT = 0.03
PLAN_METRIC = FULL_CALL_EXACT_MATCH


def pilot_comparisons(run_dir: Path) -> tuple[dict[str, ComparisonReport], Any]:
    """The pilot run's comparison reports rebuilt from its stored generations, and its suite."""
    outcome, suite = pilot_outcome(run_dir)
    return dict(outcome.comparison_reports), suite


STORED_COMPARISON = re.compile(r"^(?P<arm>[^@]+)-vs-(?P=arm)@(?P<spec>[^@]+)$")
"""``adapter-vs-adapter@0003`` (or ``@last``): an arm of the pilot against the same arm of a
stored run, as a ``stored`` gate names its subject."""


def plan_rows(
    run_dir: Path | str,
    *,
    comparison: str | None = None,
    effect: float | None = None,
    power: float | None = None,
    metric: str = PLAN_METRIC,
    store: Path | str | None = None,
) -> list[dict[str, Any]]:
    """One row per comparison and block (``overall``, then each slice): the pilot's pairs,
    clusters, discordance and design effect and ``core.power.plan``'s pairs and clusters
    needed to detect ``effect`` (default: the suite's ``[statistics] effect``, else
    :data:`DEFAULT_EFFECT`) at ``power`` (default: the suite's ``[statistics] power``);
    then one row per interval gate of the suite on a rate metric (``gate`` names it), sized
    for the claim it makes. ``comparison`` keeps one subject (``ARM-vs-ARM@NNNN``: a
    comparison with a stored run of ``store``)."""
    run_dir = Path(run_dir)
    outcome, suite = pilot_outcome(run_dir)
    reports: dict[str, Any] = dict(outcome.comparison_reports)
    _check_metric(metric)
    stored = _stored_comparisons(run_dir, suite, comparison, store)
    if comparison is not None and comparison not in reports and comparison not in stored:
        raise InputError(
            "SOM-PLAN-COMPARISON",
            f"the pilot run has no comparison {comparison!r}",
            f"compared: {', '.join(reports) or '(none: run both arms of a comparison)'}; or a "
            "stored run's: ARM-vs-ARM@NNNN (e.g. adapter-vs-adapter@last)",
            where="--comparison",
        )
    if not reports and not stored:
        raise InputError(
            "SOM-PLAN-COMPARISON",
            "the pilot run has no comparison to plan from",
            "run a suite with [[comparisons]] and both of its arms first",
            where=str(run_dir),
        )
    wanted = power if power is not None else suite.statistics.power
    if effect is None:
        effect = suite.statistics.effect or DEFAULT_EFFECT
    rows = []
    for name, report in {**reports, **stored}.items():
        if comparison is not None and name != comparison:
            continue
        for label, block in _blocks(report):
            rows.append(_plan_row(name, label, block, metric, effect, wanted))
    for gate in suite.gates:
        row = _gate_row(gate, outcome, reports, run_dir, suite, store, effect, wanted)
        if row is not None and (comparison is None or row["comparison"] == comparison):
            rows.append(row)
    return rows


def pilot_outcome(run_dir: Path) -> tuple[Any, Any]:
    """The pilot run re-scored from its stored generations (``core.pipeline.RunOutcome``, no
    gates) and its suite."""
    resolved, suite, split = load_run_inputs(run_dir)
    arms = {}
    for name in suite.arms:
        arm_dir = run_dir / "eval" / name
        if arm_dir.is_dir():
            arms[name] = stored_arm(suite, split, arm_dir)
    outcome = evaluate_run(
        suite, split, arms, run_id=resolved.get("run_id", run_dir.name), model=resolved["model"],
        gates=False, scorers=stored_scorers(suite, run_dir),
    )  # fmt: skip
    return outcome, suite


def _check_metric(metric: str) -> None:
    if metric not in METRIC_NAMES or metric == ARGUMENT_F1:
        rates = [name for name in METRIC_NAMES if name != ARGUMENT_F1]
        raise InputError(
            "SOM-PLAN-METRIC",
            f"--metric {metric!r} is not a rate metric",
            f"plan one of {', '.join(rates)} (Connor's formula is for paired proportions)",
            where="--metric",
        )


def _blocks(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    return [("overall", report), *report.get("slices", {}).items()]


def _stored_comparisons(
    run_dir: Path, suite: Any, comparison: str | None, store: Path | str | None
) -> dict[str, Mapping[str, Any]]:
    """``{ARM-vs-ARM@SPEC: the arm's block}`` for a ``--comparison`` that names a stored run
    (compared through ``core.stored_comparison.compare_runs``, as a ``stored`` gate is)."""
    found = STORED_COMPARISON.match(comparison or "")
    if found is None:
        return {}
    arm, spec = found["arm"], found["spec"]
    block = _stored_block(run_dir, suite, arm, spec, store)
    if isinstance(block, str):
        raise InputError("SOM-PLAN-COMPARISON", f"--comparison {comparison!r}: {block}",
                         "name a stored run of this suite the pilot can be compared with "
                         "(`sommelier history` lists them)", where="--comparison")  # fmt: skip
    return {str(comparison): block}


def _stored_block(
    run_dir: Path, suite: Any, arm: str, spec: str, store: Path | str | None
) -> Mapping[str, Any] | str:
    """The pilot's arm against the same arm of the stored run ``spec``, or why there is none."""
    from pytest_sommelier.core.pipeline import derive_side
    from pytest_sommelier.core.stored_comparison import compare_runs, refuse_runs
    from pytest_sommelier.data.store.history import resolve_stored, run_at
    from pytest_sommelier.data.store.history_verdict import read_inputs
    from pytest_sommelier.errors import SommelierError

    try:
        reference = resolve_stored(Path(store or ".sommelier"), spec, suite=suite.name)
        pilot = run_at(run_dir)
        refuse_runs(pilot, reference)
        report = compare_runs(
            pilot, reference, scored=derive_side(pilot, read_inputs(pilot)),
            reference_scored=derive_side(reference, read_inputs(reference)),
        )  # fmt: skip
    except SommelierError as error:
        return str(error)
    block = report["arms"].get(arm)
    if block is None:
        return f"arm {arm!r} is not in the pilot run"
    if block.get("status") != "compared":
        return str(block.get("reason", "refused"))
    return cast(Mapping[str, Any], block)


def _counts(block: Mapping[str, Any], metric: str) -> dict[str, Any] | None:
    """A block's discordant counts, pairs, clusters, design effect and level for ``metric``
    (None without pairs): from its power summary, or from the interval entry where the block
    has none (a comparison with a stored run)."""
    intervals = block["intervals"]
    entry = (intervals.get("intervals") or {}).get(metric)
    if not entry or not entry.get("discordant"):
        return None
    summary = (block.get("power") or {}).get(metric) or {}
    pairs = summary.get("pairs") or entry.get("pairs") or intervals.get("pairs")
    if not pairs:
        return None
    return {
        "b": entry["discordant"]["candidate_only"], "c": entry["discordant"]["reference_only"],
        "pairs": int(pairs), "clusters": summary.get("clusters") or intervals.get("clusters"),
        "design_effect": max(1.0, entry.get("design_effect") or 1.0),
        "confidence_level": intervals["confidence_level"],
        "df": entry.get("df") if isinstance(entry.get("df"), (int, float)) else None,
    }  # fmt: skip


def _plan_row(
    name: str, label: str, block: Mapping[str, Any], metric: str, effect: float, power: float,
    limits: Limits = (), difference: float | None = None, confidence_level: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One block's plan (``core.power.plan`` on its interval's discordance and design effect),
    at ``confidence_level`` where given (a selection gate's K-adjusted level), else the
    block's."""
    row: dict[str, Any] = {"comparison": name, "slice": label, "metric": metric}
    counts = _counts(block, metric)
    if counts is None:
        return {**row, "pilot_pairs": 0, "pairs_needed": None, "clusters_needed": None}
    level = counts["confidence_level"] if confidence_level is None else confidence_level
    row.update(plan(
        effect, counts["b"], counts["c"], counts["pairs"], clusters=counts["clusters"],
        design_effect=counts["design_effect"], confidence_level=level,
        power=power, limits=limits, difference=difference, df=counts["df"],
    ))  # fmt: skip
    return row


def _gate_row(
    gate: GateConfig, outcome: Any, reports: Mapping[str, Any], run_dir: Path, suite: Any,
    store: Path | str | None, effect: float, power: float,
) -> dict[str, Any] | None:  # fmt: skip
    """The plan of one interval gate's claim on a rate metric (None for any other gate):
    its subject's block, its limits, the gate's ``effect`` (else ``effect``, the plan's) for a
    gate at 0, the arms equal (or that effect on the passing side) at a
    margin."""
    if not is_interval_gate(gate) or gate.metric in RATIO_OF_SUMS or gate.metric in (
        IDENTICAL_METRIC, NOISE_METRIC
    ):
        return None
    size = gate.effect if gate.effect is not None else effect
    limits = tuple((THRESHOLDS[key].bound, limit) for key, limit in interval_limits(gate))
    block: Mapping[str, Any] | str
    level = None
    if gate.kind == SELECTION_KIND:  # the selected candidate's claim, at the K-adjusted level
        (gate,) = resolve_selection_gates((gate,), outcome.selection)
        subject = selection_subject(gate)
        level = selection_level(suite.statistics.confidence_level, 1, max(1, gate.candidates))
        pair = f"{gate.candidate}-vs-{gate.reference}"
        if gate.candidates <= 0:
            block = "the pilot selected no candidate ([selection] and its reference not run)"
        elif gate.stored is not None:
            block = ("a selection gate against a stored run is not sized here: plan its "
                     f"comparison against the reference ({pair}) instead")  # fmt: skip
        else:
            block = reports.get(pair) or f"the pilot made no comparison {pair!r}"
    elif gate.kind == "comparison":
        subject = f"{gate.candidate}-vs-{gate.reference}"
        block = reports.get(subject) or f"the pilot made no comparison {subject!r}"
    elif gate.kind == "gap":
        subject = f"{gate.arm} gap {gate.gap}"
        arm_report = outcome.arm_reports.get(str(gate.arm)) or {}
        block = (arm_report.get("paired_slices") or {}).get(str(gate.gap)) or (
            f"the pilot has no {gate.gap!r} gap of arm {gate.arm!r}")  # fmt: skip
    else:
        subject = stored_subject(str(gate.arm), str(gate.stored))
        block = _stored_block(run_dir, suite, str(gate.arm), str(gate.stored), store)
    if isinstance(block, Mapping) and gate.kind != "gap" and gate.slice != "overall":
        block = (block.get("slices") or {}).get(gate.slice) or f"no slice {gate.slice!r}"
    label = gate.gap if gate.kind == "gap" else gate.slice
    if isinstance(block, str):
        return {"gate": gate.name, "comparison": subject, "slice": label, "metric": gate.metric,
                "pilot_pairs": 0, "pairs_needed": None, "clusters_needed": None,
                "unavailable": block}  # fmt: skip
    margins = tuple((side, limit) for side, limit in limits if limit != 0.0 or len(limits) > 1)
    difference = None
    if margins:
        difference = assumed_difference(margins, gate.effect)
        if difference is None:  # superiority by a margin: the effect beyond it
            difference = assumed_difference(margins, size)
    row = _plan_row(subject, str(label), block, gate.metric, size, power, margins, difference,
                    confidence_level=level)  # fmt: skip
    return {"gate": gate.name, **row}


FORMULA_TEXT = {
    "connor_1987": "Connor 1987",
    "nam_1997_score": "Nam 1997 score test",
    "nam_1997_score_tost": "Nam 1997 score test, both sides (TOST)",
}


def plan_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The plan as a table per comparison, then a table of the gates' claims, then what the
    columns mean; a number resting on a pilot too small to estimate the discordance is marked
    ``*`` and named below its table."""
    from pytest_sommelier.view.text import table

    lines: list[str] = []
    plain = [row for row in rows if "gate" not in row]
    for name in dict.fromkeys(row["comparison"] for row in plain):
        mine = [row for row in plain if row["comparison"] == name]
        first = mine[0]
        lines.append(
            f"{name} ({first['metric']}): pairs to detect ±{first.get('effect', 0):.3f} "
            f"(superiority, {FORMULA_TEXT['connor_1987']}) at {_levels(first)}"
        )
        body = [
            [row["slice"], str(row.get("pilot_pairs", 0)), str(row.get("pilot_clusters", "-")),
             _number(row.get("discordant_proportion")), _number(row.get("planning_discordance")),
             _number(row.get("design_effect"), 2), _needed(row.get("pairs_needed"), row),
             _needed(row.get("clusters_needed"), row)]
            for row in mine
        ]  # fmt: skip
        header = ["slice", "pilot pairs", "clusters", "discordance", "planned on", "deff",
                  "pairs needed", "clusters needed"]  # fmt: skip
        lines += ["  " + line for line in table(header, body)]
        lines += _small_lines(mine)
    gates = [row for row in rows if "gate" in row]
    if gates:
        lines.append(f"gates: pairs each gate's claim needs, as the gate is judged, at "
                     f"{_levels(next((r for r in gates if 'power' in r), gates[0]))}")  # fmt: skip
        body = [
            [row["gate"], f"{row['comparison']} [{row['slice']}]", row["metric"],
             _claim(row), FORMULA_TEXT.get(row.get("formula", ""), "-"),
             str(row.get("pilot_pairs", 0)), _number(row.get("discordant_proportion")),
             _number(row.get("planning_discordance")), _number(row.get("design_effect"), 2),
             _needed(row.get("pairs_needed"), row), _needed(row.get("clusters_needed"), row)]
            for row in gates
        ]  # fmt: skip
        header = ["gate", "subject", "metric", "claim", "formula", "pilot pairs", "discordance",
                  "planned on", "deff", "pairs needed", "clusters needed"]  # fmt: skip
        lines += ["  " + line for line in table(header, body)]
        lines += _small_lines(gates, key="gate")
        for row in gates:
            if row.get("unavailable"):
                lines.append(f"  {row['gate']}: not planned: {row['unavailable']}")
    lines.append(
        "pairs needed: at the upper 80% confidence limit of the pilot's discordant proportion "
        "(Wilson, on the pilot's effective pairs; the estimate itself under-delivers the "
        "power), never below the effect, times the upper 80% limit of its design effect "
        "over clusters, with the main run's t quantile; a gate at 0 by Connor (1987) at the "
        "effect, a gate with a margin by Nam's (1997) score-test formula (the test Tango's "
        "interval inverts, which the gate reads) at the true difference shown; clusters "
        "needed: pairs needed / the pilot's pairs per cluster; 'not detectable': the claim "
        "cannot be shown at that discordance."
    )
    return lines


def _levels(row: Mapping[str, Any]) -> str:
    level = row.get("confidence_level", 0.95)
    sized_on = row.get("sized_on", "observed discordance")
    return (f"{row.get('power', 0):.0%} power, {level:.0%} two-sided (one-sided "
            f"{(1 - level) * 50:.3g}%), sized on the {sized_on}")  # fmt: skip


def _claim(row: Mapping[str, Any]) -> str:
    """``superiority, ±0.030``, ``non-inferiority at -0.05, true difference +0.000``."""
    design = row.get("design")
    if design is None:
        return "-"
    if design == "superiority":
        return f"superiority, ±{row.get('effect', 0):.3f}"
    limits = " and ".join(f"{limit:+g}" for _, limit in row.get("limits") or [])
    difference = row.get("difference")
    shown = "-" if difference is None else f"{difference:+.3f}"
    return f"{design} at {limits}, true difference {shown}"


def _small_lines(rows: Sequence[Mapping[str, Any]], key: str = "slice") -> list[str]:
    small = [str(row[key]) for row in rows if row.get("pilot_too_small")]
    if not small:
        return []
    return [
        f"  * pilot too small to estimate the discordance in {', '.join(small)} (fewer than "
        f"{SMALL_PILOT_DISCORDANT} discordant pairs): the number rests on a handful of "
        "examples and the upper limit it uses is wide; run a larger pilot there before "
        "trusting it"
    ]


def _number(value: Any, places: int = 3) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _needed(value: Any, row: Mapping[str, Any]) -> str:
    if value is not None:
        return f"{value}*" if row.get("pilot_too_small") else str(value)
    return "-" if not row.get("pilot_pairs") else "not detectable"


# --- the subcommand ----------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """``sommelier plan RUN_DIR``: from a pilot run, the pairs and clusters needed per slice."""
    import json

    rows = plan_rows(
        Path(args.run_dir), comparison=args.comparison, effect=args.effect, power=args.power,
        metric=args.metric, store=args.store,
    )  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True))
    else:
        for line in plan_lines(rows):
            print(line)
    return 0


def _bounded(text: str, key: str, example: str) -> float:
    """An argparse value for the ``[statistics]`` setting ``key`` (``power`` or ``effect``),
    refused by the same rule the suite loader applies (``statistics_bounds``)."""
    from pytest_sommelier.data.suite.statistics_bounds import effect_problem, power_problem
    from pytest_sommelier.numbers import decimal_number

    value = decimal_number(text)
    if value is None and text.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise argparse.ArgumentTypeError(f"{key} = {text.strip()} is not a finite number")
    if value is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (ASCII digits, e.g. {example})")
    if key == "effect" and value < 0:
        raise argparse.ArgumentTypeError(
            f"effect {text!r} is negative: give the size of the difference to detect (e.g. "
            f"{text.strip().lstrip('-')}); the plan sizes a two-sided test"
        )
    why = (power_problem if key == "power" else effect_problem)(value)
    if why is not None:
        raise argparse.ArgumentTypeError(f"{key} {why}")
    return value


def _probability(text: str) -> float:
    """An argparse type: a power, as ``[statistics] power`` takes it."""
    return _bounded(text, "power", "0.8")


def _effect(text: str) -> float:
    """An argparse type: a difference to detect, as ``[statistics] effect`` takes it."""
    return _bounded(text, "effect", "0.03")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``sommelier plan``."""

    parser = subparsers.add_parser(
        "plan",
        help="from a pilot run, the pairs (and clusters) needed to detect an effect",
        description="Re-score a stored pilot run (no model; nothing is written) and, for each "
        "comparison and slice, apply Connor's (1987) sample-size formula to its discordance and "
        "design effect: the pairs and clusters a run needs to detect --effect at --power; then "
        "size each gate's claim as it is judged (Nam's 1997 score-test formula at a margin).",
    )
    parser.add_argument("run_dir", help="a pilot run directory (runs/<run_id>)")
    parser.add_argument(
        "--comparison", default=None,
        help="one comparison, or ARM-vs-ARM@NNNN|last against a stored run (default: every "
        "comparison of the pilot)",
    )  # fmt: skip
    parser.add_argument(
        "--effect", type=_effect, default=None,
        help="the difference to detect (default: the suite's [statistics] effect, else "
        f"{DEFAULT_EFFECT}; a gate's own effect wins for that gate)",
    )  # fmt: skip
    parser.add_argument(
        "--power", type=_probability, default=None,
        help="the power wanted (default: the suite's [statistics] power, 0.8)",
    )  # fmt: skip
    parser.add_argument(
        "--metric", default=PLAN_METRIC, help=f"a rate metric (default {PLAN_METRIC})"
    )
    parser.add_argument(
        "--store", default=".sommelier",
        help="the run store for ARM-vs-ARM@NNNN and stored gates (default .sommelier)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.set_defaults(handler=run)


__all__ = [
    "DEFAULT_EFFECT",
    "PLAN_METRIC",
    "add_parser",
    "pilot_comparisons",
    "plan_lines",
    "plan_rows",
    "run",
]
