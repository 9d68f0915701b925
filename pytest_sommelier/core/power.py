"""Power for a paired difference of proportions: what a run can detect, and what it would take.

Connor (1987), "Sample size for testing differences in proportions for the paired-sample
design", Biometrics 43:207-211: to detect a difference ``delta = p10 - p01`` with a two-sided
level-alpha test and power ``1 - beta`` when the discordant proportion is ``psi = p10 + p01``,

    n = [z_{alpha/2} sqrt(psi) + z_beta sqrt(psi - delta^2)]^2 / delta^2   pairs.

Clustered pairs carry less information: the pairs needed are multiplied by the design effect
(:mod:`pytest_sommelier.core.clusters`), and a run of ``n`` pairs counts as ``n / deff``.

Pure functions (standard library only). Invariants kept: ``minimum_detectable_effect`` and
``required_pairs`` invert each other (``required_pairs(minimum_detectable_effect(n)) <= n``, and
one pair fewer would not do); the minimum detectable effect falls as pairs grow and rises with
the power asked for; ``None`` means "not detectable", never a number that cannot happen.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from pytest_sommelier.errors import InputError

DEFAULT_POWER = 0.8
PLAN_UPPER_LEVEL = 0.8
"""The one-sided level of the upper confidence limit of the pilot's discordance a plan sizes
on (Browne 1995, "On the use of a pilot sample for sample size determination", Stat Med
14:1933-1940: sizing on an upper limit of the pilot's variance, rather than the estimate
itself, makes the planned power hold on average over pilots; Julious 2005, Pharm Stat 4:287-291,
on how small pilots make the plug-in fall short). Chosen by benchmarks/bench_plan_power.py."""
PLAN_DISCORDANCE: tuple[str, ...] = ("upper", "observed")
SMALL_PILOT_DISCORDANT = 10
"""Below this many discordant pilot pairs (effective, after the design effect) the discordance
is too poorly estimated to size on: a plan says so beside its numbers."""


def _check(confidence_level: float, power: float, design_effect: float) -> None:
    """Refuse levels outside (0, 1) and a design effect below 1, naming the setting."""
    for name, value in (("confidence_level", confidence_level), ("power", power)):
        if not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
            raise InputError(
                "SOM-STATS-PARAMETER",
                f"{name} must lie strictly between 0 and 1, got {value!r}",
                f"pass a {name} such as 0.95 or 0.8",
                where=f"statistics.{name}",
            )
    if not (isinstance(design_effect, (int, float)) and design_effect >= 1.0):
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"design_effect must be >= 1, got {design_effect!r}",
            "pass the design effect a clustered interval reports (1.0 without clusters)",
        )


def _critical_values(confidence_level: float, power: float) -> tuple[float, float]:
    """``(z_{alpha/2}, z_beta)`` for a two-sided test at ``1 - confidence_level``."""
    normal = NormalDist()
    return normal.inv_cdf(1.0 - (1.0 - confidence_level) / 2.0), normal.inv_cdf(power)


def connor_pairs(
    effect: float, discordant_proportion: float, *, confidence_level: float = 0.95,
    power: float = DEFAULT_POWER,
) -> float:  # fmt: skip
    """Connor's formula as a real number of independent pairs (not rounded up).

    Needs ``0 < |effect| <= discordant_proportion <= 1`` (a paired difference can never exceed
    the discordant proportion), else ``InputError``.
    """
    _check(confidence_level, power, 1.0)
    delta, psi = abs(effect), discordant_proportion
    if not (0.0 < delta <= psi <= 1.0):
        raise InputError(
            "SOM-STATS-PARAMETER",
            f"an effect of {effect!r} is impossible with discordant proportion {psi!r}",
            "the effect must be non-zero and at most the discordant proportion (p10 + p01)",
        )
    z_alpha, z_beta = _critical_values(confidence_level, power)
    return (z_alpha * math.sqrt(psi) + z_beta * math.sqrt(psi - delta * delta)) ** 2 / delta**2


def required_pairs(
    effect: float, discordant_proportion: float, *, confidence_level: float = 0.95,
    power: float = DEFAULT_POWER, design_effect: float = 1.0,
) -> int | None:  # fmt: skip
    """Pairs needed to detect ``effect``: ``ceil(deff * connor_pairs(...))``; None when the
    effect exceeds the discordant proportion (no number of pairs shows it at that discordance)
    or either is 0."""
    _check(confidence_level, power, design_effect)
    delta, psi = abs(effect), discordant_proportion
    if not (0.0 < delta <= psi <= 1.0):
        return None
    pairs = design_effect * connor_pairs(
        delta, psi, confidence_level=confidence_level, power=power
    )
    return math.ceil(pairs - 1e-9 * pairs)


def minimum_detectable_effect(
    pairs: float, discordant_proportion: float, *, confidence_level: float = 0.95,
    power: float = DEFAULT_POWER, design_effect: float = 1.0,
) -> float | None:  # fmt: skip
    """The smallest ``|delta|`` that ``pairs`` pairs detect with the given power.

    With ``s = sqrt(pairs / deff)`` Connor's equation ``s delta = z_a sqrt(psi) + z_b sqrt(psi -
    delta^2)`` has the closed-form root
    ``delta = sqrt(psi) (s z_a + z_b sqrt(s^2 - z_a^2 + z_b^2)) / (s^2 + z_b^2)``.
    None when ``s <= z_a`` (too few pairs for any difference) or ``psi`` is 0. The result can
    exceed ``psi``: then no difference is detectable at this discordance (see
    :func:`power_summary`'s ``attainable``).
    """
    _check(confidence_level, power, design_effect)
    psi = discordant_proportion
    if pairs <= 0 or not (0.0 < psi <= 1.0):
        return None
    z_alpha, z_beta = _critical_values(confidence_level, power)
    s2 = pairs / design_effect
    s = math.sqrt(s2)
    if s <= z_alpha:
        return None
    root = math.sqrt(max(s2 - z_alpha * z_alpha + z_beta * z_beta, 0.0))
    return math.sqrt(psi) * (s * z_alpha + z_beta * root) / (s2 + z_beta * z_beta)


def power_at(
    effect: float, pairs: float, discordant_proportion: float, *,
    confidence_level: float = 0.95, design_effect: float = 1.0,
) -> float | None:  # fmt: skip
    """The power of a design of ``pairs`` pairs to detect ``effect`` (Connor's equation solved
    for ``z_beta``): ``Phi((s |delta| - z_a sqrt(psi)) / sqrt(psi - delta^2))`` with ``s =
    sqrt(pairs / deff)``; 1.0 when ``|delta| = psi`` (every discordant pair goes one way) and
    None when the effect exceeds the discordance (no such difference can happen) or ``psi`` is
    0. This is a property of the design at an assumed discordance, not of the observed result:
    it is what a run of this size would detect, never a verdict on this run's estimate.
    """
    _check(confidence_level, 0.5, design_effect)
    delta, psi = abs(effect), discordant_proportion
    if pairs <= 0 or not (0.0 < delta <= psi <= 1.0):
        return None
    z_alpha = NormalDist().inv_cdf(1.0 - (1.0 - confidence_level) / 2.0)
    spread = math.sqrt(max(psi - delta * delta, 0.0))
    numerator = math.sqrt(pairs / design_effect) * delta - z_alpha * math.sqrt(psi)
    if spread == 0.0:
        return 1.0 if numerator > 0 else 0.0
    return NormalDist().cdf(numerator / spread)


def observed_discordance(
    candidate_only: int, reference_only: int, pairs: int
) -> tuple[float, bool]:
    """The discordant proportion ``(b + c) / n`` of a run, floored at one pair: with no discordant
    pair the smallest discordance the run could have shown, ``1 / n``, is used instead (and the
    second value is True)."""
    discordant = candidate_only + reference_only
    if discordant > 0:
        return discordant / pairs, False
    return 1.0 / pairs, True


def power_summary(
    candidate_only: int, reference_only: int, pairs: int, *, clusters: int | None = None,
    design_effect: float = 1.0, confidence_level: float = 0.95, power: float = DEFAULT_POWER,
    effect: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What one comparison can detect, from its discordance table.

    Returns ``{power, confidence_level, pairs, clusters, design_effect, effective_pairs,
    discordant_proportion, discordance_floored, minimum_detectable_effect, attainable}``;
    ``attainable`` is False when the minimum detectable effect is None or exceeds the
    discordant proportion. With no pairs every number is None. With ``effect`` (the suite's
    ``[statistics] effect``) it also has ``effect`` and ``power_at_effect``: the design's power
    for that difference at the observed discordance (:func:`power_at`).
    """
    _check(confidence_level, power, design_effect)
    summary: dict[str, Any] = {
        "power": float(power), "confidence_level": float(confidence_level), "pairs": pairs,
        "clusters": pairs if clusters is None else clusters,
        "design_effect": float(design_effect),
    }  # fmt: skip
    if effect is not None:
        summary["effect"] = abs(float(effect))
        summary["power_at_effect"] = None
    if pairs <= 0:
        summary.update(effective_pairs=None, discordant_proportion=None, discordance_floored=False,
                       minimum_detectable_effect=None, attainable=False)  # fmt: skip
        return summary
    psi, floored = observed_discordance(candidate_only, reference_only, pairs)
    mde = minimum_detectable_effect(
        pairs, psi, confidence_level=confidence_level, power=power, design_effect=design_effect
    )
    summary.update(
        effective_pairs=pairs / design_effect,
        discordant_proportion=psi,
        discordance_floored=floored,
        minimum_detectable_effect=mde,
        attainable=mde is not None and mde <= psi,
    )
    if effect is not None:
        summary["power_at_effect"] = power_at(
            effect, pairs, psi, confidence_level=confidence_level, design_effect=design_effect
        )
    return summary


def discordance_upper_limit(
    candidate_only: int, reference_only: int, pairs: int, *, design_effect: float = 1.0,
    level: float = PLAN_UPPER_LEVEL,
) -> float:  # fmt: skip
    """The one-sided ``level`` upper confidence limit of the discordant proportion ``(b + c) /
    n``: Wilson's score limit (Wilson 1927, JASA 22:209-212) on the effective sample ``n /
    deff`` (clustered pairs carry less information about it). Positive even with no discordant
    pair (``z^2 / (n_eff + z^2)``), at most 1."""
    _check(0.95, level, design_effect)
    n = pairs / design_effect
    p = (candidate_only + reference_only) / pairs
    z = NormalDist().inv_cdf(level)
    centre = p + z * z / (2.0 * n)
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return min(1.0, (centre + half) / (1.0 + z * z / n))


def plan(
    effect: float, candidate_only: int, reference_only: int, pairs: int, *,
    clusters: int | None = None, design_effect: float = 1.0, confidence_level: float = 0.95,
    power: float = DEFAULT_POWER, discordance: str = "upper",
) -> dict[str, Any]:  # fmt: skip
    """Pairs (and clusters) a run needs to detect ``effect``, from a pilot's discordance table.

    ``discordance = "upper"`` (the default) sizes on the :func:`discordance_upper_limit` of
    the pilot's discordance, so that the power holds end to end (the pilot's discordance is an
    estimate: plugging it in as if known delivered 0.77 power for a promised 0.80);
    ``"observed"`` plugs in the estimate (0.3's rule). Returns ``{effect, power,
    confidence_level, discordant_proportion, discordance_floored, planning_discordance,
    sized_on, design_effect, pairs_needed, clusters_needed, pilot_pairs, pilot_clusters,
    pilot_too_small}``; ``clusters_needed`` divides by the pilot's mean cluster size;
    ``pairs_needed`` is None when the effect exceeds the planning discordance;
    ``pilot_too_small`` when fewer than :data:`SMALL_PILOT_DISCORDANT` effective discordant
    pairs were seen.
    """
    _check(confidence_level, power, design_effect)
    if pairs <= 0:
        raise InputError("SOM-STATS-PARAMETER", "a plan needs a pilot with at least one pair",
                         "run the pilot on some examples first")  # fmt: skip
    if discordance not in PLAN_DISCORDANCE:
        raise InputError("SOM-STATS-PARAMETER", f"unknown discordance rule {discordance!r}",
                         f"use one of {', '.join(PLAN_DISCORDANCE)}")  # fmt: skip
    psi, floored = observed_discordance(candidate_only, reference_only, pairs)
    planning = psi
    if discordance == "upper":
        planning = max(psi, discordance_upper_limit(candidate_only, reference_only, pairs,
                                                    design_effect=design_effect))  # fmt: skip
    needed = required_pairs(effect, planning, confidence_level=confidence_level, power=power,
                            design_effect=design_effect)  # fmt: skip
    cluster_count = pairs if clusters is None else clusters
    per_cluster = pairs / cluster_count
    return {
        "effect": abs(float(effect)), "power": float(power),
        "confidence_level": float(confidence_level), "discordant_proportion": psi,
        "discordance_floored": floored, "design_effect": float(design_effect),
        "planning_discordance": planning,
        "sized_on": (f"upper {PLAN_UPPER_LEVEL:.0%} limit of the discordance"
                     if discordance == "upper" else "observed discordance"),
        "pilot_too_small": (candidate_only + reference_only) / design_effect
        < SMALL_PILOT_DISCORDANT,
        "pairs_needed": needed,
        "clusters_needed": None if needed is None else math.ceil(needed / per_cluster - 1e-9),
        "pilot_pairs": pairs, "pilot_clusters": cluster_count,
    }  # fmt: skip
