"""Paired-proportion intervals and tests from the 2x2 discordance table (pure; numpy).

For a rate metric every pair is one of four cells: both arms right (``both``), only the
candidate (``candidate_only``, b), only the reference (``reference_only``, c), neither. The
difference candidate minus reference is ``(b - c) / n``. The intervals are those recommended by
Fagerland, Lydersen & Laake (2014), "Recommended tests and confidence intervals for paired
binomial proportions", Statistics in Medicine 33:2850-2875:

- ``tango``: Tango's asymptotic score interval (Tango 1998, Stat Med 17:891-908): the
  set of differences the score test (with the constrained maximum-likelihood nuisance
  estimate) does not reject; its p-value is that score test at 0 (the asymptotic McNemar test).
- ``bonett_price``: the Wald interval with the Bonett-Price adjustment (Bonett & Price 2012,
  J Educ Behav Stat 37:479-488): one pseudo-observation added to each discordant cell.
  (Fagerland et al.'s Bonett-Price *hybrid Wilson score* interval is the one for the *ratio*
  of paired proportions; for the difference their Bonett-Price method is this one.)
- ``newcombe``: Newcombe's hybrid score interval, method 10 (Newcombe 1998, Stat Med
  17:2635-2650): Wilson intervals of both margins combined with the continuity-corrected
  correlation estimate phi*.

All functions broadcast over numpy arrays (the coverage benchmark evaluates thousands of
tables at once) and accept non-integer counts: a cluster-adjusted interval is the same method
on the counts divided by the design effect (Rao & Scott 1992).

Invariants kept: no interval is zero-width for ``n > 0`` (with no discordant pair each method
still gives a non-degenerate interval around 0); bounds lie in ``[-1, 1]``; swapping the arms
(b <-> c) negates the interval; p-values lie in ``[0, 1]`` and are 1 with no discordant pair.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pytest_sommelier.core.distributions import normal_quantile, two_sided_normal_p

_BISECTIONS = 64
_P_VALUE_Z_MAX = 40.0


def _arrays(*values: Any) -> list[np.ndarray]:
    """The arguments as broadcast float64 arrays."""
    return list(np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in values)))


def _scalar_or_array(value: np.ndarray) -> Any:
    """A 0-d array as a float, anything else unchanged."""
    return float(value) if np.ndim(value) == 0 else value


# --- Tango's asymptotic score interval ------------------------------------------------------


def _tango_quadratic(delta: Any, b: Any, c: Any, n: Any) -> tuple[Any, Any, Any]:
    """``(2n, B, C)`` of Tango's quadratic for the constrained ML estimate of p21 (1998, eq. 4):
    ``B = -b - c + (2n - b + c) delta``, ``C = -c delta (1 - delta)``; arrays or Python floats
    alike, the same operations in the same order either way."""
    return 2.0 * n, -b - c + (2.0 * n - b + c) * delta, -c * delta * (1.0 - delta)


def _tango_parts(
    delta: np.ndarray, b: np.ndarray, c: np.ndarray, n: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(b - c - n delta, sd)``: the numerator of Tango's score statistic and its null
    standard deviation ``sqrt(n (2 p21~ + delta (1 - delta)))`` with the constrained ML
    estimate of p21, the root of ``2n p^2 + B p + C = 0`` with ``B = -b - c + (2n - b + c)
    delta`` and ``C = -c delta (1 - delta)`` (Tango 1998, eq. 4), taken in a cancellation-free
    form. The sd is NaN where the variance vanishes (only at the boundary delta = +-1)."""
    a2, bq, cq = _tango_quadratic(delta, b, c, n)
    root = np.sqrt(np.maximum(bq * bq - 4.0 * a2 * cq, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p21 = np.where(bq > 0, -2.0 * cq / (root + bq), (root - bq) / (2.0 * a2))
        variance = n * (2.0 * p21 + delta * (1.0 - delta))
        sd = np.sqrt(np.where(variance > 0, variance, np.nan))
    return b - c - n * delta, sd


def _tango_statistic(delta: np.ndarray, b: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Tango's score statistic ``T(delta)`` (:func:`_tango_parts`); NaN where the variance
    vanishes."""
    numerator, sd = _tango_parts(delta, b, c, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic: np.ndarray = numerator / sd
    return statistic


def tango_interval(
    candidate_only: Any, reference_only: Any, pairs: Any, confidence_level: float,
    continuity: float = 0.0,
) -> tuple[Any, Any]:  # fmt: skip
    """Tango's asymptotic score interval for the paired difference ``(b - c) / n``.

    The bounds solve ``T(delta) = +-z`` on either side of the estimate (vectorised bisection,
    64 halvings of ``[-1, estimate]`` and ``[estimate, 1]``: exact to double precision). A bound
    is -1 (or 1) when the score test accepts every difference on that side. With
    ``continuity`` (0.5: half a unit of ``b - c``) each one-sided test moves its numerator that
    far towards accepting, ``(b - c - n delta -+ continuity) / sd`` (the correction of Edwards
    1948 and of Tango 1998, sec. 5, to the score test), so each bound moves outwards.
    """
    return tango_bounds(
        candidate_only, reference_only, pairs, normal_quantile(confidence_level), continuity
    )


def tango_bounds(
    candidate_only: Any, reference_only: Any, pairs: Any, critical: Any,
    continuity: float = 0.0,
) -> tuple[Any, Any]:  # fmt: skip
    """:func:`tango_interval` at a two-sided critical value ``critical`` (which broadcasts
    with the counts: a benchmark passes one t quantile per table)."""
    b, c, n, z = _arrays(candidate_only, reference_only, pairs, critical)
    if b.ndim == 0 and all(math.isfinite(x) for x in (b, c, n, z, continuity)) and n > 0:
        return _tango_bounds_one(float(b), float(c), float(n), float(z), float(continuity))
    estimate = (b - c) / n
    # both sides bisected together (axis 0: lower, upper), each element on its own as before
    side = np.array([-1.0, 1.0]).reshape((2,) + (1,) * estimate.ndim)
    lower_side = side < 0
    inner, outer = np.stack([estimate, estimate]), np.broadcast_to(side, (2, *estimate.shape))
    for _ in range(_BISECTIONS):
        middle = 0.5 * (inner + outer)
        numerator, sd = _tango_parts(middle, b, c, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (numerator + side * continuity) / sd
        rejected = np.isnan(t) | np.where(lower_side, t >= z, t <= -z)
        outer = np.where(rejected, middle, outer)
        inner = np.where(rejected, inner, middle)
    bounds = 0.5 * (inner + outer)
    return _scalar_or_array(bounds[0]), _scalar_or_array(bounds[1])


def _tango_bounds_one(
    b: float, c: float, n: float, z: float, continuity: float
) -> tuple[float, float]:
    """:func:`tango_bounds` of one table (finite counts, ``n > 0``) in Python floats: the same
    operations in the same order as the array path (IEEE double arithmetic and a correctly
    rounded square root either way, so the same bits; ``tests/core/test_proportions.py``
    compares them on random tables), without numpy's per-operation cost on 0-d arrays."""
    estimate = (b - c) / n
    bounds = []
    for side in (-1.0, 1.0):
        inner, outer = estimate, side
        for _ in range(_BISECTIONS):
            middle = 0.5 * (inner + outer)
            if _tango_rejects(middle, b, c, n, z, side, continuity):
                outer = middle
            else:
                inner = middle
        bounds.append(0.5 * (inner + outer))
    return bounds[0], bounds[1]


def _tango_rejects(
    delta: float, b: float, c: float, n: float, z: float, side: float, continuity: float
) -> bool:
    """Whether one side's score test rejects ``delta``: :func:`_tango_parts` and the test of
    :func:`tango_bounds` in Python floats (``np.maximum`` keeps a NaN; a vanishing variance
    is a NaN statistic, which rejects)."""
    a2, bq, cq = _tango_quadratic(delta, b, c, n)
    discriminant = bq * bq - 4.0 * a2 * cq
    kept = discriminant >= 0.0 or discriminant != discriminant
    root = math.sqrt(discriminant if kept else 0.0)
    p21 = -2.0 * cq / (root + bq) if bq > 0 else (root - bq) / (2.0 * a2)
    variance = n * (2.0 * p21 + delta * (1.0 - delta))
    if not variance > 0:
        return True
    t = (b - c - n * delta + side * continuity) / math.sqrt(variance)
    if t != t:
        return True
    return t >= z if side < 0 else t <= -z


def tango_p_value(
    candidate_only: Any, reference_only: Any, pairs: Any, null: float = 0.0,
    continuity: float = 0.0,
) -> Any:  # fmt: skip
    """Two-sided p-value of Tango's score test of ``difference == null``: ``P(|Z| >= |T(null)|)``.

    At ``null = 0`` the constrained estimate is ``(b + c) / 2n`` and ``T = (b - c) / sqrt(b +
    c)``: the asymptotic McNemar test (1.0 with no discordant pair). It is at most alpha exactly
    when the ``1 - alpha`` interval excludes ``null``. At a boundary null (+-1) with a different
    estimate it is 0. With ``continuity`` the numerator's size is reduced by it (never below 0),
    as :func:`tango_interval` does.
    """
    b, c, n = _arrays(candidate_only, reference_only, pairs)
    estimate = (b - c) / n
    numerator, sd = _tango_parts(np.full_like(b, float(null)), b, c, n)
    reduced = np.maximum(np.abs(numerator) - continuity, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = reduced / sd
    same = np.isclose(estimate, null, rtol=0.0, atol=1e-15)
    t = np.where(same, 0.0, np.where(np.isnan(t), np.inf, t))
    return _scalar_or_array(np.asarray(two_sided_normal_p(t)))


# --- clustered pairs: Tango's score interval with a null-centred cluster-robust variance -----


def cluster_moments(difference: Any, index: Any) -> tuple[float, float, float]:
    """``(sum_g D_g^2, sum_g m_g D_g, sum_g m_g^2)``: the cluster sums ``D_g = b_g - c_g`` of
    the per-pair differences (``difference``: candidate minus reference, -1, 0 or 1 per pair)
    and the cluster sizes ``m_g``, what :func:`cluster_score_interval` needs (``index``: one
    cluster number per pair, ``0..K-1``). The null-centred variance at a difference ``delta``
    is ``sum_g (D_g - m_g delta)^2 = A - 2 delta B + delta^2 C``."""
    d = np.asarray(difference, dtype=np.float64)
    groups = np.asarray(index)
    k = int(groups.max()) + 1 if groups.size else 0
    sums = np.bincount(groups, weights=d, minlength=k)
    sizes = np.bincount(groups, minlength=k).astype(np.float64)
    return float(sums @ sums), float(sizes @ sums), float(sizes @ sizes)


def _cluster_score_parts(
    delta: np.ndarray, b: np.ndarray, c: np.ndarray, n: np.ndarray, a2: np.ndarray,
    ab: np.ndarray, c2: np.ndarray, worst: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """``(b - c - n delta, sd, inflation)`` of the clustered score statistic at ``delta``: the
    variance is the larger of Tango's null variance (times ``worst``, Kish's design effect,
    where no pair is discordant) and the null-centred cluster-robust variance ``sum_g (D_g -
    m_g delta)^2``; ``inflation`` is their ratio to Tango's (>= 1)."""
    numerator, sd = _tango_parts(delta, b, c, n)
    model = sd * sd * worst
    robust = np.maximum(a2 - 2.0 * delta * ab + delta * delta * c2, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        variance = np.maximum(model, robust)
        inflation = np.where(model > 0, variance / model, 1.0)
        sd_all = np.sqrt(np.where(variance > 0, variance, np.nan))
    return numerator, sd_all, np.maximum(inflation, 1.0)


def cluster_score_interval(
    candidate_only: Any, reference_only: Any, pairs: Any, moments: Any, critical: Any,
    continuity: float = 0.0, worst: Any = 1.0,
) -> tuple[Any, Any]:  # fmt: skip
    """The score interval for clustered pairs: the differences ``delta`` where ``|b - c - n
    delta| <= critical * sd(delta)``, with ``sd(delta)^2`` the larger of Tango's null variance
    (Tango 1998) and the cluster-robust variance *centred at the null*, ``sum_g (D_g - m_g
    delta)^2`` (``moments``: :func:`cluster_moments`, last axis of length 3). At ``delta = 0``
    the robust statistic ``(b - c) / sqrt(sum_g (b_g - c_g)^2)`` is the clustered McNemar test
    of Durkalski, Palesch, Lipsitz & Rust (2003), "Analysis of clustered matched-pair data",
    Stat Med 22:2417-2428; at a margin it is the non-inferiority test for clustered matched
    pairs built the same way (the variance under the null, not at the estimate; Yang, Sun &
    Hardin 2012). A variance estimated at the estimate (a design effect from residuals about
    the mean) is smallest exactly when the estimate lies far on the passing side, which is
    what made the clustered margin gates of 0.4 pass falsely 3-4x too often.

    ``critical`` is the two-sided critical value (a t quantile: the caller's degrees of
    freedom); ``worst`` multiplies Tango's variance (Kish's design effect where no pair is
    discordant: then nothing shows the clustering); ``continuity`` moves each one-sided
    numerator towards accepting by that much times the variance inflation (half a unit of
    ``b - c`` on the design-effect-scaled counts, as :func:`tango_interval`). Vectorised
    bisection over ``[-1, estimate]`` and ``[estimate, 1]``, 64 halvings. Broadcasts.
    """
    b, c, n, crit, w = _arrays(candidate_only, reference_only, pairs, critical, worst)
    m = np.asarray(moments, dtype=np.float64)
    a2, ab, c2 = (np.broadcast_to(m[..., j], b.shape) for j in range(3))
    estimate = (b - c) / n
    bounds = []
    for side in (-1.0, 1.0):
        inner, outer = estimate.copy(), np.full_like(estimate, side)
        for _ in range(_BISECTIONS):
            middle = 0.5 * (inner + outer)
            numerator, sd, inflation = _cluster_score_parts(middle, b, c, n, a2, ab, c2, w)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = (numerator + side * continuity * inflation) / sd
            rejected = np.isnan(t) | (t >= crit if side < 0 else t <= -crit)
            outer = np.where(rejected, middle, outer)
            inner = np.where(rejected, inner, middle)
        bounds.append(0.5 * (inner + outer))
    return _scalar_or_array(bounds[0]), _scalar_or_array(bounds[1])


def cluster_score_statistic(
    candidate_only: Any, reference_only: Any, pairs: Any, moments: Any, null: float = 0.0,
    continuity: float = 0.0, worst: Any = 1.0,
) -> Any:  # fmt: skip
    """``|T(null)|`` of :func:`cluster_score_interval`'s statistic (its size reduced by the
    continuity correction, never below 0); 0 where the estimate is ``null``, inf where the
    variance vanishes. A two-sided p-value is ``P(|T_df| >= |T|)``."""
    b, c, n, w = _arrays(candidate_only, reference_only, pairs, worst)
    m = np.asarray(moments, dtype=np.float64)
    a2, ab, c2 = (np.broadcast_to(m[..., j], b.shape) for j in range(3))
    delta = np.full_like(b, float(null))
    numerator, sd, inflation = _cluster_score_parts(delta, b, c, n, a2, ab, c2, w)
    reduced = np.maximum(np.abs(numerator) - continuity * inflation, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = reduced / sd
    same = np.isclose((b - c) / n, null, rtol=0.0, atol=1e-15)
    return _scalar_or_array(np.where(same, 0.0, np.where(np.isnan(t), np.inf, t)))


# --- Bonett-Price adjusted Wald -------------------------------------------------------------


def _bonett_price_centre(b: np.ndarray, c: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, ...]:
    """The adjusted difference and its standard error (one pseudo-pair added per cell)."""
    p12 = (b + 1.0) / (n + 2.0)
    p21 = (c + 1.0) / (n + 2.0)
    centre = p12 - p21
    return centre, np.sqrt((p12 + p21 - centre * centre) / (n + 2.0))


def bonett_price_interval(
    candidate_only: Any, reference_only: Any, pairs: Any, confidence_level: float
) -> tuple[Any, Any]:
    """Bonett-Price adjusted Wald interval ``(p12~ - p21~) +- z se~``, truncated to [-1, 1].

    ``p12~ = (b + 1) / (n + 2)``, ``p21~ = (c + 1) / (n + 2)``,
    ``se~ = sqrt((p12~ + p21~ - (p12~ - p21~)^2) / (n + 2))``. Centred on the adjusted
    difference, so at low confidence levels it can exclude the raw estimate.
    """
    b, c, n = _arrays(candidate_only, reference_only, pairs)
    centre, se = _bonett_price_centre(b, c, n)
    z = normal_quantile(confidence_level)
    lower = np.maximum(-1.0, centre - z * se)
    upper = np.minimum(1.0, centre + z * se)
    return _scalar_or_array(lower), _scalar_or_array(upper)


def bonett_price_p_value(
    candidate_only: Any, reference_only: Any, pairs: Any, null: float = 0.0
) -> Any:
    """Two-sided Wald p-value of ``difference == null`` with the adjusted difference and its
    standard error: at most alpha exactly when the (untruncated) ``1 - alpha`` interval excludes
    ``null``."""
    b, c, n = _arrays(candidate_only, reference_only, pairs)
    centre, se = _bonett_price_centre(b, c, n)
    return two_sided_normal_p((centre - null) / se)


# --- Newcombe's hybrid score (method 10) ----------------------------------------------------


def _wilson(successes: np.ndarray, n: np.ndarray, z: Any) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for ``successes / n`` (z may broadcast)."""
    p = successes / n
    z2 = np.asarray(z) ** 2
    centre = (2.0 * successes + z2) / (2.0 * (n + z2))
    half = np.asarray(z) * np.sqrt(z2 + 4.0 * successes * (1.0 - p)) / (2.0 * (n + z2))
    return centre - half, centre + half


def _newcombe_phi(
    both: np.ndarray, b: np.ndarray, c: np.ndarray, neither: np.ndarray
) -> np.ndarray:
    """Newcombe's continuity-corrected correlation phi* between the two margins.

    ``A = both * neither - b * c``; phi* = ``(A - n/2) / sqrt(margins)`` when ``A > n/2``,
    0 when ``0 <= A <= n/2``, ``A / sqrt(margins)`` when ``A < 0``; 0 when a margin is 0.
    """
    n = both + b + c + neither
    margins = (both + b) * (c + neither) * (both + c) * (b + neither)
    a = both * neither - b * c
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.sqrt(np.where(margins > 0, margins, 1.0))
        phi = np.where(a > n / 2.0, (a - n / 2.0) / root, np.where(a >= 0, 0.0, a / root))
    return np.where(margins > 0, phi, 0.0)


def _newcombe_bounds(
    both: np.ndarray, b: np.ndarray, c: np.ndarray, neither: np.ndarray, z: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Newcombe's method-10 bounds for critical value(s) ``z``."""
    n = both + b + c + neither
    p1 = (both + b) / n  # candidate
    p2 = (both + c) / n  # reference
    l1, u1 = _wilson(both + b, n, z)
    l2, u2 = _wilson(both + c, n, z)
    phi = _newcombe_phi(both, b, c, neither)
    estimate = p1 - p2
    low = np.sqrt(np.maximum(
        (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2.0 * phi * (p1 - l1) * (u2 - p2), 0.0))
    high = np.sqrt(np.maximum(
        (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2.0 * phi * (p2 - l2) * (u1 - p1), 0.0))
    return estimate - low, estimate + high


def newcombe_interval(
    both: Any, candidate_only: Any, reference_only: Any, neither: Any, confidence_level: float
) -> tuple[Any, Any]:
    """Newcombe's hybrid score interval (method 10) for the paired difference ``(b - c) / n``.

    Needs the whole 2x2 table (the concordant cells enter the margins' Wilson intervals and
    phi*), not just the discordant counts. Truncated to [-1, 1] (rounding in the Wilson bounds
    can leave an ulp outside at a difference of +-1).
    """
    both_, b, c, neither_ = _arrays(both, candidate_only, reference_only, neither)
    lower, upper = _newcombe_bounds(both_, b, c, neither_, normal_quantile(confidence_level))
    return _scalar_or_array(np.maximum(-1.0, lower)), _scalar_or_array(np.minimum(1.0, upper))


def newcombe_p_value(
    both: Any, candidate_only: Any, reference_only: Any, neither: Any, null: float = 0.0
) -> Any:
    """The p-value that inverts Newcombe's interval at ``null``: ``P(|Z| >= z*)`` where ``z*``
    is the critical value at which the bound between the estimate and ``null`` reaches it.

    So ``p <= alpha`` exactly when the ``1 - alpha`` interval excludes ``null`` (bisection on z
    in ``[0, 40]``, 64 halvings); 1.0 when the estimate equals ``null``, 0.0 when even ``z = 40``
    excludes it.
    """
    both_, b, c, neither_ = _arrays(both, candidate_only, reference_only, neither)
    estimate = (b - c) / (both_ + b + c + neither_)
    sign = np.where(np.isclose(estimate, null, rtol=0.0, atol=1e-15), 0.0,
                    np.sign(estimate - null))  # fmt: skip
    inner = np.zeros_like(b)
    outer = np.full_like(b, _P_VALUE_Z_MAX)

    def excludes(z: np.ndarray) -> np.ndarray:
        lower, upper = _newcombe_bounds(both_, b, c, neither_, z)
        return np.where(sign > 0, lower > null, upper < null)

    never = excludes(outer)
    for _ in range(_BISECTIONS):
        middle = 0.5 * (inner + outer)
        out = excludes(middle)
        inner = np.where(out, middle, inner)
        outer = np.where(out, outer, middle)
    p = np.asarray(two_sided_normal_p(0.5 * (inner + outer)))
    p = np.where(sign == 0, 1.0, np.where(never, 0.0, p))
    return _scalar_or_array(p)


# --- McNemar mid-p --------------------------------------------------------------------------


def mcnemar_mid_p(candidate_only: int, reference_only: int) -> float:
    """McNemar's mid-p value (Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91).

    With ``n = b + c`` and ``X ~ Binomial(n, 1/2)``: ``2 P[X <= min(b, c)] - P[X = b]`` when
    ``b != c`` and ``1 - P[X = b] / 2`` when ``b == c`` (exact integer arithmetic, rounded
    once). 1.0 with no discordant pairs (Fagerland's formula would give 0.5 there: no evidence
    is reported as no evidence).
    """
    n = candidate_only + reference_only
    if n == 0:
        return 1.0
    point = math.comb(n, candidate_only)
    if candidate_only == reference_only:
        return ((1 << (n + 1)) - point) / (1 << (n + 1))
    tail = sum(math.comb(n, k) for k in range(min(candidate_only, reference_only) + 1))
    return (2 * tail - point) / (1 << n)
