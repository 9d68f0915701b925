"""``sommelier plan``: from a pilot run, the pairs (and clusters) a run needs to detect an effect.

The pilot's stored generations are re-scored through ``data.store.stored`` (the same readers and
checks as ``sommelier rescore``; nothing in the run folder is written), its comparisons rebuilt,
and for every comparison and slice (and overall) Connor's (1987) formula is applied to the
upper 80% confidence limit of the pilot's discordance, its design effect and mean cluster size
(``core.power.plan``); a block with fewer than 10 discordant pilot pairs is flagged.

Invariant kept: every figure comes from the pilot's own records under its own suite settings
(seed, level, clusters); a slice whose discordance cannot show the effect says so (``None``
pairs needed) rather than printing a number that cannot happen.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.pipeline import evaluate_run
from pytest_sommelier.core.power import plan
from pytest_sommelier.core.types import ComparisonReport
from pytest_sommelier.data.store.stored import load_run_inputs, stored_arm
from pytest_sommelier.errors import InputError

DEFAULT_EFFECT = 0.03
PLAN_METRIC = "full_call_exact_match"


def pilot_comparisons(run_dir: Path) -> tuple[dict[str, ComparisonReport], Any]:
    """The pilot run's comparison reports rebuilt from its stored generations, and its suite."""
    resolved, suite, split = load_run_inputs(run_dir)
    arms = {}
    for name in suite.arms:
        arm_dir = run_dir / "eval" / name
        if arm_dir.is_dir():
            arms[name] = stored_arm(suite, split, arm_dir)
    outcome = evaluate_run(
        suite, split, arms, run_id=resolved.get("run_id", run_dir.name), model=resolved["model"],
        gates=False,
    )  # fmt: skip
    return outcome.comparison_reports, suite


def plan_rows(
    run_dir: Path | str,
    *,
    comparison: str | None = None,
    effect: float = DEFAULT_EFFECT,
    power: float | None = None,
    metric: str = PLAN_METRIC,
) -> list[dict[str, Any]]:
    """One row per comparison and block (``overall``, then each slice): the pilot's pairs,
    clusters, discordance and design effect and ``core.power.plan``'s pairs and clusters
    needed to detect ``effect`` at ``power`` (default: the suite's ``[statistics] power``)."""
    reports, suite = pilot_comparisons(Path(run_dir))
    if metric not in METRIC_NAMES or metric == "argument_f1":
        rates = [name for name in METRIC_NAMES if name != "argument_f1"]
        raise InputError(
            "SOM-PLAN-METRIC",
            f"--metric {metric!r} is not a rate metric",
            f"plan one of {', '.join(rates)} (Connor's formula is for paired proportions)",
            where="--metric",
        )
    if comparison is not None and comparison not in reports:
        raise InputError(
            "SOM-PLAN-COMPARISON",
            f"the pilot run has no comparison {comparison!r}",
            f"compared: {', '.join(reports) or '(none: run both arms of a comparison)'}",
            where="--comparison",
        )
    if not reports:
        raise InputError(
            "SOM-PLAN-COMPARISON",
            "the pilot run has no comparison to plan from",
            "run a suite with [[comparisons]] and both of its arms first",
            where=str(run_dir),
        )
    wanted = power if power is not None else suite.statistics.power
    rows = []
    for name, report in reports.items():
        if comparison is not None and name != comparison:
            continue
        blocks: list[tuple[str, Mapping[str, Any]]] = [
            ("overall", report),
            *report.get("slices", {}).items(),
        ]
        for label, block in blocks:
            rows.append(_plan_row(name, label, block, metric, effect, wanted))
    return rows


def _plan_row(
    name: str, label: str, block: Mapping[str, Any], metric: str, effect: float, power: float
) -> dict[str, Any]:
    """One block's plan (``core.power.plan`` on its interval's discordance and design effect)."""
    intervals = block["intervals"]
    entry = intervals["intervals"][metric]
    summary = block["power"][metric]
    discordant = entry["discordant"]
    row: dict[str, Any] = {"comparison": name, "slice": label, "metric": metric}
    if not summary["pairs"]:
        return {**row, "pilot_pairs": 0, "pairs_needed": None, "clusters_needed": None}
    row.update(plan(
        effect, discordant["candidate_only"], discordant["reference_only"], summary["pairs"],
        clusters=summary["clusters"], design_effect=max(1.0, entry["design_effect"] or 1.0),
        confidence_level=intervals["confidence_level"], power=power,
    ))  # fmt: skip
    return row


def plan_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The plan as a table per comparison, then what the columns mean."""
    from pytest_sommelier.view.text import table

    lines: list[str] = []
    for name in dict.fromkeys(row["comparison"] for row in rows):
        mine = [row for row in rows if row["comparison"] == name]
        first = mine[0]
        level = first.get("confidence_level", 0)
        sized_on = first.get("sized_on", "observed discordance")
        lines.append(
            f"{name} ({first['metric']}): pairs to detect ±{first.get('effect', 0):.3f} at "
            f"{first.get('power', 0):.0%} power, {level:.0%} two-sided (one-sided "
            f"{(1 - level) * 50:.3g}%), sized on the {sized_on}"
        )
        body = [
            [
                row["slice"],
                str(row.get("pilot_pairs", 0)),
                str(row.get("pilot_clusters", "-")),
                _number(row.get("discordant_proportion")),
                _number(row.get("planning_discordance")),
                _number(row.get("design_effect"), 2),
                _needed(row.get("pairs_needed"), row),
                _needed(row.get("clusters_needed"), row),
            ]
            for row in mine
        ]
        header = ["slice", "pilot pairs", "clusters", "discordance", "planned on", "deff",
                  "pairs needed", "clusters needed"]  # fmt: skip
        lines += ["  " + line for line in table(header, body)]
        small = [row["slice"] for row in mine if row.get("pilot_too_small")]
        if small:
            lines.append(
                f"  pilot too small to estimate the discordance in {', '.join(small)} (fewer "
                "than 10 discordant pairs): the upper limit is wide, so are the pairs needed; "
                "run a larger pilot there before trusting the number"
            )
    lines.append(
        "pairs needed: Connor (1987) at the upper 80% confidence limit of the pilot's discordant "
        "proportion (Wilson, on the pilot's effective pairs; the estimate itself under-delivers "
        "the power), times its design effect; clusters needed: pairs needed / the pilot's pairs "
        "per cluster; 'not detectable': the effect exceeds that discordance. Sized for a "
        "superiority gate (ci_lower_above = 0); a non-inferiority margin needs its own sizing."
    )
    return lines


def _number(value: Any, places: int = 3) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def _needed(value: Any, row: Mapping[str, Any]) -> str:
    if value is not None:
        return str(value)
    return "-" if not row.get("pilot_pairs") else "not detectable"


# --- the subcommand ----------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """``sommelier plan RUN_DIR``: from a pilot run, the pairs and clusters needed per slice."""
    import json

    rows = plan_rows(
        Path(args.run_dir), comparison=args.comparison, effect=args.effect, power=args.power,
        metric=args.metric,
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
        "design effect: the pairs and clusters a run needs to detect --effect at --power.",
    )
    parser.add_argument("run_dir", help="a pilot run directory (runs/<run_id>)")
    parser.add_argument("--comparison", default=None, help="one comparison (default: every one)")
    parser.add_argument(
        "--effect", type=_effect, default=DEFAULT_EFFECT,
        help=f"the difference to detect (default {DEFAULT_EFFECT})",
    )  # fmt: skip
    parser.add_argument(
        "--power", type=_probability, default=None,
        help="the power wanted (default: the suite's [statistics] power, 0.8)",
    )  # fmt: skip
    parser.add_argument(
        "--metric", default=PLAN_METRIC, help=f"a rate metric (default {PLAN_METRIC})"
    )
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
