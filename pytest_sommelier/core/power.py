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

from pytest_sommelier.core.distributions import t_quantile
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


def _null_variance(delta: float, psi: float, margin: float) -> float:
    """The variance of Tango's (= Nam's) score statistic under the null ``difference = margin``
    at the true cell probabilities ``p12 = (psi + delta) / 2``, ``p21 = (psi - delta) / 2``:
    ``2 p21~ + margin (1 - margin)``, ``p21~`` the limit of the constrained maximum-likelihood
    estimate (Tango 1998, eq. 4 with the counts divided by ``n``; Nam 1997, eq. 2.3)."""
    p21 = (psi - delta) / 2.0
    bq = -psi + (2.0 - delta) * margin
    cq = -p21 * margin * (1.0 - margin)
    root = math.sqrt(max(bq * bq - 8.0 * cq, 0.0))
    p21_null = -2.0 * cq / (root + bq) if bq > 0 else (root - bq) / 4.0
    return max(2.0 * p21_null + margin * (1.0 - margin), 0.0)


def margin_pairs(
    margin: float, discordant_proportion: float, *, difference: float = 0.0,
    confidence_level: float = 0.95, power: float = DEFAULT_POWER, side: str = "lower",
) -> float | None:  # fmt: skip
    """Pairs (a real number, not rounded) for a one-sided score test of ``difference ==
    margin`` to reject with power ``power`` when the true difference is ``difference`` and the
    discordant proportion ``psi``: Nam (1997), "Establishing equivalence of two treatments and
    sample size requirements in matched-pairs design", Biometrics 53:1422-1430, the score
    (Tango) statistic's size; the same as Liu, Hsueh, Hsieh & Chen (2002), Stat Med 21:231-245,

        n = [z_a sigma_0 + z_b sqrt(psi - difference^2)]^2 / (difference - margin)^2,

    ``sigma_0^2`` the null variance at the constrained estimate (:func:`_null_variance`), ``z_a``
    the one-sided critical value of the gate's bound (``1 - (1 - cl) / 2``). A non-inferiority
    gate ``ci_lower_at_least = -m`` is ``margin = -m``; a bounded gain ``ci_upper_at_most = m``
    is ``margin = m`` with ``side = "upper"``. At ``margin = 0`` it is Connor's (1987) formula.
    None when the true difference is not on the passing side of the margin (above a lower
    one, below an upper one), or impossible at ``psi`` (``|difference| > psi``)."""
    _check(confidence_level, power, 1.0)
    psi, delta = discordant_proportion, difference
    passing = delta > margin if side == "lower" else delta < margin
    if not (0.0 < psi <= 1.0) or abs(delta) > psi or not passing or abs(margin) >= 1.0:
        return None
    z_alpha, z_beta = _critical_values(confidence_level, power)
    sigma0 = math.sqrt(_null_variance(delta, psi, margin))
    sigma1 = math.sqrt(max(psi - delta * delta, 0.0))
    return (z_alpha * sigma0 + z_beta * sigma1) ** 2 / (delta - margin) ** 2


def margin_power(
    margin: float, pairs: float, discordant_proportion: float, *, difference: float = 0.0,
    confidence_level: float = 0.95, design_effect: float = 1.0, side: str = "lower",
) -> float | None:  # fmt: skip
    """The power of ``pairs`` pairs (``pairs / deff`` effective) for the one-sided score test
    of :func:`margin_pairs`: ``Phi((s |difference - margin| - z_a sigma_0) / sigma_1)`` when
    the difference is on the passing side of the margin, ``Phi(-...)``-small (at most the
    level) otherwise; None where the difference is impossible at ``psi``."""
    _check(confidence_level, 0.5, design_effect)
    psi, delta = discordant_proportion, difference
    if pairs <= 0 or not (0.0 < psi <= 1.0) or abs(delta) > psi or abs(margin) >= 1.0:
        return None
    toward = (delta - margin) if side == "lower" else (margin - delta)
    z_alpha = NormalDist().inv_cdf(1.0 - (1.0 - confidence_level) / 2.0)
    sigma0 = math.sqrt(_null_variance(delta, psi, margin))
    sigma1 = math.sqrt(max(psi - delta * delta, 0.0))
    numerator = math.sqrt(pairs / design_effect) * toward - z_alpha * sigma0
    if sigma1 == 0.0:
        return 1.0 if numerator > 0 else 0.0
    return NormalDist().cdf(numerator / sigma1)


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


def design_effect_upper_limit(
    design_effect: float, df: float, level: float = PLAN_UPPER_LEVEL
) -> float:
    """The one-sided ``level`` upper confidence limit of a design effect estimated from
    clusters: ``deff * df / chi2_{1 - level}(df)``, the limit of a variance whose estimate is
    ``chi2_df / df`` distributed (Satterthwaite 1946, "An approximate distribution of estimates
    of variance components", Biometrics Bull 2:110-114; the upper limit of a pilot's variance
    that Browne 1995 sizes on), with Wilson & Hilferty's (1931, PNAS 17:684-688) chi-square
    quantile. ``df`` below 1 counts as 1. Never below ``design_effect``."""
    k = max(float(df), 1.0)
    z = NormalDist().inv_cdf(1.0 - level)
    term = 2.0 / (9.0 * k)
    chi2 = k * max(1.0 - term + z * math.sqrt(term), 1e-3) ** 3
    return max(float(design_effect), float(design_effect) * k / chi2)


def _t_sized(
    size: Any, needed: int, confidence_level: float, power: float, per_cluster: float
) -> tuple[int, float]:
    """Re-size with the main run's t quantiles: the critical values of the size at ``df =
    units - 1`` (its clusters, ``pairs / per_cluster``, or its pairs), by the normal-equivalent
    levels ``1 - 2 Phi(-t_{cl, df})`` and ``Phi(t_{power, df})``, until the size is stable (a
    few rounds; never below the z size). Returns ``(pairs, df)``."""
    normal = NormalDist()
    current = needed
    df = max(math.ceil(current / per_cluster - 1e-9) - 1.0, 1.0)
    for _ in range(8):
        df = max(math.ceil(current / per_cluster - 1e-9) - 1.0, 1.0)
        level = 1.0 - 2.0 * normal.cdf(-t_quantile(confidence_level, df))
        wanted = normal.cdf(t_quantile(2.0 * power - 1.0, df))
        if not (level < 1.0 - 1e-12 and wanted < 1.0 - 1e-12):
            break
        again = size(level, wanted)
        if again is None or again <= current:
            break
        current = again
    return max(current, needed), df


PLAN_FORMULAS = {"superiority": "connor_1987", "non-inferiority": "nam_1997_score",
                 "equivalence": "nam_1997_score_tost"}  # fmt: skip
"""The formula a plan row sizes with, by the design of the claim (recorded as ``formula``)."""

Limits = tuple[tuple[str, float], ...]
"""A gate's interval limits as ``(side, limit)``: ``("lower", -0.02)`` for ``ci_lower_at_least
= -0.02``, ``("upper", 0.05)`` for ``ci_upper_at_most = 0.05``."""


def design_of(limits: Limits) -> str:
    """The design a gate's interval limits make: ``superiority`` (no limit, or one at 0),
    ``non-inferiority`` (one non-zero limit: a bounded loss or gain, or superiority by a
    margin), ``equivalence`` (a lower and an upper one)."""
    if len(limits) >= 2:
        return "equivalence"
    if limits and limits[0][1] != 0.0:
        return "non-inferiority"
    return "superiority"


def assumed_difference(limits: Limits, effect: float | None) -> float | None:
    """The true difference a margin claim is planned and powered at: 0 (the arms equal) when
    0 lies on the passing side of every limit and no ``effect`` is given; with ``effect``, that
    far on the passing side (``+effect`` above a lower limit at or below 0, ``limit + effect``
    above a positive one, mirrored for an upper limit; equivalence: ``+effect``, or 0). None
    when a positive lower (negative upper) limit has no effect to add."""
    if len(limits) >= 2:
        return 0.0 if effect is None else abs(effect)
    side, limit = limits[0]
    size = 0.0 if effect is None else abs(effect)
    if side == "lower":
        if limit < 0:
            return size
        return None if effect is None else limit + size
    if limit > 0:
        return -size
    return None if effect is None else limit - size


def _margin_needed(
    limits: Limits, planning: float, difference: float, confidence_level: float,
    power: float, design_effect: float,
) -> int | None:  # fmt: skip
    """Pairs for a margin design: one limit, Nam's size; two (equivalence, TOST), the larger
    of the two one-sided sizes at power ``1 - (1 - power) / 2`` each (so the chance that
    either side fails is at most ``1 - power``). None when a size is None."""
    wanted = power if len(limits) == 1 else 1.0 - (1.0 - power) / 2.0
    sizes = [margin_pairs(limit, planning, difference=difference, side=side,
                          confidence_level=confidence_level, power=wanted)
             for side, limit in limits]  # fmt: skip
    if any(size is None for size in sizes):
        return None
    pairs = design_effect * max(float(size) for size in sizes if size is not None)
    return math.ceil(pairs - 1e-9 * pairs)


def design_power(
    limits: Limits, effect: float, pairs: float, discordant_proportion: float, *,
    confidence_level: float = 0.95, design_effect: float = 1.0,
) -> float | None:  # fmt: skip
    """The power of a design of ``pairs`` pairs for a gate's claim: superiority (limits at 0),
    Connor's power to detect ``effect`` (:func:`power_at`); a margin, Nam's power at the
    :func:`assumed_difference` (equivalence: both sides, ``max(0, p_lower + p_upper - 1)``, a
    lower bound). None where the claim cannot be shown at that discordance."""
    limits = tuple((side, limit) for side, limit in limits if limit != 0.0 or len(limits) > 1)
    if design_of(limits) == "superiority":
        return power_at(effect, pairs, discordant_proportion, confidence_level=confidence_level,
                        design_effect=design_effect)  # fmt: skip
    difference = assumed_difference(limits, effect)
    if difference is None:
        return None
    powers = [margin_power(limit, pairs, discordant_proportion, difference=difference,
                           confidence_level=confidence_level, design_effect=design_effect,
                           side=side) for side, limit in limits]  # fmt: skip
    if any(p is None for p in powers):
        return None
    return max(0.0, sum(float(p) for p in powers if p is not None) - (len(powers) - 1))


def plan(
    effect: float, candidate_only: int, reference_only: int, pairs: int, *,
    clusters: int | None = None, design_effect: float = 1.0, confidence_level: float = 0.95,
    power: float = DEFAULT_POWER, discordance: str = "upper",
    limits: Limits = (), difference: float | None = None, df: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Pairs (and clusters) a run needs for a claim, from a pilot's discordance table.

    Without ``limits`` (or with one at 0) the claim is superiority: detect ``effect`` (Connor
    1987). With a gate's non-zero ``limits`` it is non-inferiority (a bounded loss or gain) or
    equivalence at the true difference ``difference`` (default :func:`assumed_difference`
    with no effect: 0, the arms equal), sized by Nam's (1997) score-test formula
    (:func:`margin_pairs`).

    ``discordance = "upper"`` (the default) sizes on the :func:`discordance_upper_limit` of
    the pilot's discordance, so that the power holds end to end (the pilot's discordance is an
    estimate: plugging it in as if known delivered 0.77 power for a promised 0.80);
    ``"observed"`` plugs in the estimate (0.3's rule). Returns ``{effect, power,
    confidence_level, discordant_proportion, discordance_floored, planning_discordance,
    sized_on, design, formula, limits, difference, design_effect, pairs_needed,
    clusters_needed, pilot_pairs, pilot_clusters, pilot_discordant, pilot_too_small}``;
    ``clusters_needed`` divides by the pilot's mean cluster size; ``pairs_needed`` is None
    when the claim cannot be shown at the planning discordance; ``pilot_too_small`` when
    fewer than :data:`SMALL_PILOT_DISCORDANT` effective discordant pairs were seen.

    Since 0.5 (issue 38) the upper rule also: plans on at least ``|effect|`` (or the margin
    claim's ``|difference|``): a true difference that large implies a discordance at least as
    large, so a pilot whose upper limit falls below it says nothing against it (0.4 said "not
    detectable"); sizes on the :func:`design_effect_upper_limit` of a clustered pilot's design
    effect at its degrees of freedom ``df`` (the interval's, informative clusters included; the
    estimate is as uncertain as the discordance); and reads the main run's bound at the t
    quantile of its own degrees of freedom (:func:`_t_sized`: its clusters, or pairs, less
    one) instead of z. The row records ``planning_design_effect`` and ``main_df``.
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
    limits = tuple((side, float(limit)) for side, limit in limits)
    if len(limits) == 1 and limits[0][1] == 0.0:
        limits = ()
    design = design_of(limits)
    assumed: float | None = None
    if design != "superiority":
        assumed = difference if difference is not None else assumed_difference(limits, None)
    planning_deff = float(design_effect)
    if discordance == "upper":
        planning = max(psi, discordance_upper_limit(candidate_only, reference_only, pairs,
                                                    design_effect=design_effect))  # fmt: skip
        floor = abs(effect) if design == "superiority" else abs(assumed or 0.0)
        planning = min(1.0, max(planning, floor))
        if df is not None:
            planning_deff = design_effect_upper_limit(design_effect, df)
    cluster_count = pairs if clusters is None else clusters
    per_cluster = pairs / cluster_count

    def size(level: float, wanted: float) -> int | None:
        if design == "superiority":
            return required_pairs(effect, planning, confidence_level=level, power=wanted,
                                  design_effect=planning_deff)  # fmt: skip
        if assumed is None:
            return None
        return _margin_needed(limits, planning, assumed, level, wanted, planning_deff)

    needed, main_df = size(confidence_level, power), None
    if discordance == "upper" and needed is not None:
        needed, main_df = _t_sized(size, needed, confidence_level, power,
                                   per_cluster if clusters is not None else 1.0)  # fmt: skip
    discordant = candidate_only + reference_only
    return {
        "effect": abs(float(effect)), "power": float(power),
        "confidence_level": float(confidence_level), "discordant_proportion": psi,
        "discordance_floored": floored, "design_effect": float(design_effect),
        "planning_discordance": planning, "planning_design_effect": planning_deff,
        "main_df": main_df,
        "sized_on": (f"upper {PLAN_UPPER_LEVEL:.0%} limit of the discordance"
                     if discordance == "upper" else "observed discordance"),
        "design": design, "formula": PLAN_FORMULAS[design],
        "limits": [[side, limit] for side, limit in limits], "difference": assumed,
        "pilot_discordant": discordant,
        "pilot_too_small": discordant / design_effect < SMALL_PILOT_DISCORDANT,
        "pairs_needed": needed,
        "clusters_needed": None if needed is None else math.ceil(needed / per_cluster - 1e-9),
        "pilot_pairs": pairs, "pilot_clusters": cluster_count,
    }  # fmt: skip
