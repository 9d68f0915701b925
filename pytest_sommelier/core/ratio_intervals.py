"""Intervals for a paired difference of two ratios of sums (``argument_f1``).

Pure functions (numpy and the standard library). A *unit* is a row ``[ref_num, ref_den,
cand_num, cand_den]``: one pair, or one cluster's summed pairs. The statistic is
``sum(cand_num) / sum(cand_den) - sum(ref_num) / sum(ref_den)`` (pooled micro-F1 on each side; a
side whose denominator sums to 0 counts as 0, as in :mod:`pytest_sommelier.core.stats`).

- ``jackknife_t`` (what ``auto`` uses): ``estimate +- t_{K-1} se_jack`` with the leave-one-unit-out
  jackknife standard error (Quenouille 1956, Tukey 1958; Efron & Tibshirani 1993, ch. 11), in
  O(units) from the column totals (leaving a unit out subtracts its row). Over clusters it is
  the leave-one-cluster-out jackknife with ``K - 1`` degrees of freedom. At 30 pairs it covers
  0.94-0.96 where the percentile bootstrap covers 0.89-0.93 (benchmarks/bench_coverage.py).
- ``bca``: the bias-corrected and accelerated bootstrap (Efron 1987, JASA 82:171-185), from
  resampled column sums (the caller draws them) and the jackknife acceleration;
- ``studentized``: the bootstrap-t with the delta-method standard error of every resample, from
  resampled sums of products (:func:`studentized_rows`).

Rows may carry integer ``weights`` (multiplicities): a weighted row stands for that many
identical units, so the jackknife and the linearised variance give exactly what the expanded
rows would (the coverage benchmark uses this to simulate thousands of runs cheaply).

Invariants kept: every interval contains the point estimate and lies in ``[-1, 1]``; an
interval is zero-width only when the statistic is the same for every weighting of the units
(:func:`is_constant`), and it is then reported as degenerate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pytest_sommelier.core.distributions import (
    normal_cdf,
    normal_inverse_cdf,
    t_quantile,
    two_sided_t_p,
)

UNIT_COLUMNS = 4
"""Columns of a unit row: reference numerator, reference denominator, candidate numerator and
candidate denominator."""

_TOLERANCE = 1e-12
_CONSTANT_TOLERANCE = 1e-10


def ratio_difference(sums: Any) -> np.ndarray:
    """``cand_num / cand_den - ref_num / ref_den`` over the last axis (length 4); 0 for a side
    whose denominator is 0."""
    matrix = np.asarray(sums, dtype=np.float64)
    out = np.zeros((*matrix.shape[:-1], 2))
    num = matrix[..., [0, 2]]
    den = matrix[..., [1, 3]]
    np.divide(num, den, out=out, where=den > 0)
    return out[..., 1] - out[..., 0]


def _weights(rows: np.ndarray, weights: Any) -> np.ndarray:
    """Row multiplicities as float64 (ones when None)."""
    if weights is None:
        return np.ones(rows.shape[0])
    return np.asarray(weights, dtype=np.float64)


def totals(rows: Any, weights: Any = None) -> np.ndarray:
    """Column totals of the (weighted) unit rows."""
    matrix = np.asarray(rows, dtype=np.float64)
    return _weights(matrix, weights) @ matrix


def jackknife_values(rows: Any, weights: Any = None) -> np.ndarray:
    """The statistic with one unit of each row left out: one value per row, O(rows).

    Invariant: equals recomputing the statistic on the expanded unit list without that unit.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    return ratio_difference(totals(matrix, weights)[None, :] - matrix)


def acceleration(jackknife: Any, weights: Any = None) -> float:
    """BCa acceleration ``a = sum d^3 / (6 (sum d^2)^1.5)``, ``d = mean - jackknife value``
    (weighted by the rows' multiplicities); 0 when the jackknife values are all equal."""
    values = np.asarray(jackknife, dtype=np.float64)
    w = _weights(values[:, None], weights)
    if w.sum() <= 0:
        return 0.0
    d = (w @ values) / w.sum() - values
    square = float(w @ (d * d))
    if square <= _TOLERANCE * _TOLERANCE * max(1.0, float(w.sum())):
        return 0.0
    return float(w @ (d * d * d)) / (6.0 * float(square**1.5))


def is_constant(rows: Any) -> bool:
    """True when the ratio difference is the same for every positive weighting of the units
    (so every bootstrap resample, and the jackknife, give the estimate): exactly degenerate.

    With ``k`` the full-sample value, ``X/Y - U/V = k`` for all weights iff the quadratic form
    ``XV - UY - kYV`` vanishes identically, i.e. ``A B' + B A' = 0`` for ``A = [x, -u, -k y]``
    and ``B = [v, y, v]`` (x, y candidate and u, v reference numerators and denominators). Its
    squared Frobenius norm is ``2 tr((B'A)^2) + 2 tr(A'A B'B)``: O(units), from 3x3 Gram
    matrices (rows with positive denominators; a relative tolerance of 1e-10 absorbs rounding).
    """
    matrix = np.asarray(rows, dtype=np.float64)
    if matrix.shape[0] <= 1:
        return True
    u, v, x, y = (matrix[:, k] for k in range(4))
    k = float(ratio_difference(matrix.sum(axis=0)))
    a = np.stack([x, -u, -k * y], axis=1)
    b = np.stack([v, y, v], axis=1)
    gram_ab, gram_a, gram_b = b.T @ a, a.T @ a, b.T @ b
    norm = 2.0 * np.trace(gram_ab @ gram_ab) + 2.0 * np.trace(gram_a @ gram_b)
    scale = 4.0 * np.trace(gram_a) * np.trace(gram_b)
    return bool(norm <= _CONSTANT_TOLERANCE * max(scale, _TOLERANCE))


def jackknife_standard_error(rows: Any, weights: Any = None) -> float:
    """Jackknife standard error ``sqrt((K-1)/K sum_k (theta_(k) - mean)^2)`` over the ``K``
    (weighted) units; 0 with fewer than two units."""
    matrix = np.asarray(rows, dtype=np.float64)
    w = _weights(matrix, weights)
    units = float(w.sum())
    if units < 2:
        return 0.0
    values = jackknife_values(matrix, weights)
    d = values - (w @ values) / units
    return math.sqrt(max((units - 1.0) / units * float(w @ (d * d)), 0.0))


def jackknife_t_interval(
    rows: Any, confidence_level: float, weights: Any = None, null: float = 0.0
) -> dict[str, Any]:
    """The jackknife-t interval ``estimate +- t_{K-1, 1-alpha/2} se_jack``, clipped to [-1, 1].

    Returns ``{estimate, lower, upper, degenerate, standard_error, df, p_value, defined}``;
    ``p_value`` is the two-sided t test of ``difference == null`` with the same standard error
    and degrees of freedom (at most ``1 - confidence_level`` exactly when the interval excludes
    ``null``).
    When the statistic is constant (:func:`is_constant`) the interval is ``[estimate,
    estimate]`` and degenerate. ``defined`` is False when the jackknife cannot give an interval
    although the statistic is not constant (a zero jackknife spread from a few units): the
    caller then uses a bootstrap.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    w = _weights(matrix, weights)
    present = w > 0
    estimate = float(ratio_difference(w @ matrix))
    units = float(w.sum())
    result: dict[str, Any] = {
        "estimate": estimate, "lower": estimate, "upper": estimate, "degenerate": False,
        "standard_error": 0.0, "df": max(units - 1.0, 0.0), "p_value": None, "defined": True,
    }  # fmt: skip
    if is_constant(matrix[present]):
        result.update(degenerate=True,
                      p_value=1.0 if abs(estimate - null) <= _TOLERANCE else 0.0)  # fmt: skip
        return result
    se = jackknife_standard_error(matrix, weights)
    if se <= _TOLERANCE * max(1.0, abs(estimate)) or units < 2:
        result["defined"] = False
        return result
    t = t_quantile(confidence_level, units - 1.0)
    result.update(
        lower=max(-1.0, min(estimate, estimate - t * se)),
        upper=min(1.0, max(estimate, estimate + t * se)),
        standard_error=se,
        p_value=two_sided_t_p((estimate - null) / se, units - 1.0),
    )
    return result


PSEUDO_WEIGHT = 0.5
"""The weight of each of the two pseudo-units of :func:`pseudo_jackknife_t_interval`."""


def pseudo_jackknife_t_interval(
    rows: Any, confidence_level: float, weights: Any = None, null: float = 0.0,
    pseudo_weight: float = PSEUDO_WEIGHT,
) -> dict[str, Any]:  # fmt: skip
    """The jackknife-t interval with a continuity correction: two pseudo-units are added, one
    where only the candidate scores (F1 1 against 0) and one where only the reference does,
    each with the units' mean denominator and weight ``pseudo_weight`` (0.5), in the manner of
    the pseudo-pairs Bonett & Price (2012) add to a paired rate (after Agresti & Caffo 2000,
    Am Stat 54:280-288). Near the metric's ceiling (most calls perfect on both arms) the plain
    jackknife-t covered 0.46-0.89 with up to 54% zero-width intervals; this one covered at
    least 0.94 in every cell, never zero-width, within 1.014x of the plain width at 300 pairs
    (benchmarks/bench_f1_ceiling.py; docs/statistics.md).

    The leave-one-out values leave each real unit (one copy of a weighted row) or each
    pseudo-unit out; the standard error is the weighted jackknife's over ``k = units + 2w``
    with ``k - 1`` degrees of freedom, centred on the pseudo-augmented statistic; the
    interval is widened where needed to hold the raw estimate (which is what is reported) and
    clipped to [-1, 1]. ``p_value``: the two-sided t test of ``difference == null`` with the
    same centre, standard error and degrees of freedom. Returns ``{estimate, lower, upper,
    centre, degenerate, standard_error, df, p_value, defined}``; degenerate (zero-width at the
    estimate) only when no unit has a denominator.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    w = _weights(matrix, weights)
    estimate = float(ratio_difference(w @ matrix))
    result: dict[str, Any] = {
        "estimate": estimate, "lower": estimate, "upper": estimate, "degenerate": True,
        "standard_error": 0.0, "df": 0.0, "p_value": 1.0, "defined": True,
    }  # fmt: skip
    present = w > 0
    if not present.any():
        return result
    denominator = float(w @ (matrix[:, 1] + matrix[:, 3])) / (2.0 * float(w.sum()))
    if denominator <= 0.0:
        return result
    d = denominator
    pseudo = np.array([[0.0, d, d, d], [d, d, 0.0, d]])
    units = np.vstack([matrix[present], pseudo])
    weight = np.concatenate([w[present], [pseudo_weight, pseudo_weight]])
    leave = np.concatenate([np.ones(int(present.sum())), [pseudo_weight, pseudo_weight]])
    total = weight @ units
    loo = ratio_difference(total[None, :] - units * leave[:, None])
    k = float(weight.sum())
    mean = float(weight @ loo) / k
    se = math.sqrt(max((k - 1.0) / k * float(weight @ ((loo - mean) ** 2)), 0.0))
    centre = float(ratio_difference(total))
    df = k - 1.0
    if se <= _TOLERANCE or df <= 0.0:
        return result
    t = t_quantile(confidence_level, df)
    result.update(
        lower=max(-1.0, min(estimate, centre - t * se)),
        upper=min(1.0, max(estimate, centre + t * se)),
        centre=centre,
        degenerate=False,
        standard_error=se,
        df=df,
        p_value=two_sided_t_p((centre - null) / se, df),
    )
    return result


def _close(values: np.ndarray, target: float) -> np.ndarray:
    """Replicates equal to ``target`` up to rounding (relative 1e-12)."""
    return np.abs(values - target) <= _TOLERANCE * max(1.0, abs(target))


def is_degenerate(replicates: Any, estimate: float) -> bool:
    """True when every replicate equals the estimate: the resampling distribution is a point.

    This happens exactly when the statistic does not depend on which units are drawn (for
    example both arms' outputs identical on every pair, or every pair scoring the same ratio
    on each side); no bootstrap interval can then be wider than zero.
    """
    values = np.asarray(replicates, dtype=np.float64)
    return bool(values.size) and bool(np.all(_close(values, estimate)))


def _proportion_below(values: np.ndarray, target: float) -> float:
    """``(#{v < target} + #{v == target} / 2) / R``, kept inside ``[1/(2R), 1 - 1/(2R)]``."""
    size = values.size
    equal = _close(values, target)
    below = np.count_nonzero((values < target) & ~equal)
    share = (below + 0.5 * np.count_nonzero(equal)) / size
    return min(max(share, 0.5 / size), 1.0 - 0.5 / size)


def bias_correction(replicates: Any, estimate: float) -> float:
    """BCa bias correction ``z0 = Phi^-1(share of replicates below the estimate)`` (ties count
    half), finite for any replicate set."""
    return normal_inverse_cdf(_proportion_below(np.asarray(replicates, dtype=np.float64), estimate))


def bca_levels(z0: float, a: float, confidence_level: float) -> tuple[float, float]:
    """The replicate quantile levels of the BCa bounds: ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))``
    for ``z = -+z_{1-alpha/2}``; a level whose denominator is not positive goes to 0 (lower) or
    1 (upper)."""
    z = normal_inverse_cdf(1.0 - (1.0 - confidence_level) / 2.0)
    levels = []
    for zc, limit in ((-z, 0.0), (z, 1.0)):
        u = z0 + zc
        denominator = 1.0 - a * u
        levels.append(normal_cdf(z0 + u / denominator) if denominator > 0 else limit)
    return levels[0], levels[1]


def bca_interval(
    replicates: Any,
    estimate: float,
    rows: Any,
    confidence_level: float,
    weights: Any = None,
) -> dict[str, Any]:
    """BCa interval of the ratio difference from resampled sums' statistics ``replicates``.

    ``rows`` are the units that were resampled (for the jackknife). Returns ``{lower, upper,
    degenerate, z0, acceleration}``; quantiles use numpy's linear interpolation (as the seed's
    percentile rule), then the interval is widened, if needed, to contain the estimate.
    """
    values = np.asarray(replicates, dtype=np.float64)
    if is_degenerate(values, estimate):
        return {"lower": estimate, "upper": estimate, "degenerate": True, "z0": 0.0,
                "acceleration": 0.0}  # fmt: skip
    z0 = bias_correction(values, estimate)
    a = acceleration(jackknife_values(rows, weights), weights)
    low_level, high_level = bca_levels(z0, a, confidence_level)
    lower, upper = np.quantile(values, [low_level, high_level])
    return {"lower": min(float(lower), estimate), "upper": max(float(upper), estimate),
            "degenerate": False, "z0": z0, "acceleration": a}  # fmt: skip


def bca_p_value(
    replicates: Any, estimate: float, z0: float, a: float, null: float = 0.0
) -> float:
    """The two-sided p-value that inverts the BCa interval at ``null``.

    With ``w = Phi^-1(share of replicates below null)`` the BCa bound reaches ``null`` at the
    critical value ``z_c = (w - z0) / (1 + a (w - z0)) - z0``; ``p = 2 min(Phi(z_c), 1 -
    Phi(z_c))``. A degenerate replicate set gives 1.0 when the estimate is ``null``, else 0.0.
    """
    values = np.asarray(replicates, dtype=np.float64)
    if is_degenerate(values, estimate):
        return 1.0 if abs(estimate - null) <= _TOLERANCE else 0.0
    w = normal_inverse_cdf(_proportion_below(values, null)) - z0
    denominator = 1.0 + a * w
    if denominator <= 0:
        return 0.0
    critical = w / denominator - z0
    tail = normal_cdf(critical)
    return min(1.0, 2.0 * min(tail, 1.0 - tail))


def percentile_p_value(replicates: Any, null: float = 0.0) -> float:
    """Two-sided p-value that inverts the percentile interval at ``null``:
    ``2 min(share below null, share above null)`` with ties counted half, at most 1."""
    values = np.asarray(replicates, dtype=np.float64)
    if values.size == 0:
        return 1.0
    zero = _close(values, null)
    below = (np.count_nonzero((values < null) & ~zero) + 0.5 * np.count_nonzero(zero)) / values.size
    return float(min(1.0, 2.0 * min(below, 1.0 - below)))


def linearized_residuals(rows: Any, weights: Any = None) -> np.ndarray:
    """Per-unit influence of the ratio difference (delta method), one value per row:
    ``(x - Rc y) / Y - (u - Rr v) / V`` with ``x, y`` the candidate and ``u, v`` the reference
    numerator and denominator and ``R, Y, V`` their ratios and totals (0 for a side whose total
    denominator is 0). Their weighted sum is 0."""
    matrix = np.asarray(rows, dtype=np.float64)
    total = totals(matrix, weights)
    out = np.zeros(matrix.shape[0])
    for num, den in ((2, 3), (0, 1)):
        if total[den] > 0:
            part = (matrix[:, num] - total[num] / total[den] * matrix[:, den]) / total[den]
            out = out + part if num == 2 else out - part
    return out


def linearized_standard_error(rows: Any, weights: Any = None) -> float:
    """Delta-method standard error ``sqrt(sum w r^2)`` of the ratio difference."""
    residuals = linearized_residuals(rows, weights)
    return math.sqrt(float(_weights(residuals[:, None], weights) @ (residuals * residuals)))


_PRODUCTS = ((2, 2), (2, 3), (3, 3), (0, 0), (0, 1), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1))


def studentized_rows(rows: Any) -> np.ndarray:
    """Unit rows extended with the 10 products the resampled variance needs (``(m, 14)``)."""
    matrix = np.asarray(rows, dtype=np.float64)
    products = np.stack([matrix[:, i] * matrix[:, j] for i, j in _PRODUCTS], axis=1)
    return np.concatenate([matrix, products], axis=1)


def studentized_standard_errors(sums: Any) -> np.ndarray:
    """Delta-method standard error of every resample from its sums of :func:`studentized_rows`
    (``(R, 14)``): the same formula as :func:`linearized_standard_error`, expanded in sums."""
    s = np.asarray(sums, dtype=np.float64)
    u_t, v_t, x_t, y_t = s[:, 0], s[:, 1], s[:, 2], s[:, 3]
    xx, xy, yy, uu, uv, vv, xu, xv, yu, yv = (s[:, 4 + k] for k in range(10))
    with np.errstate(divide="ignore", invalid="ignore"):
        rc = np.where(y_t > 0, x_t / y_t, 0.0)
        rr = np.where(v_t > 0, u_t / v_t, 0.0)
        inv_y = np.where(y_t > 0, 1.0 / y_t, 0.0)
        inv_v = np.where(v_t > 0, 1.0 / v_t, 0.0)
    cand = (xx - 2 * rc * xy + rc * rc * yy) * inv_y * inv_y
    ref = (uu - 2 * rr * uv + rr * rr * vv) * inv_v * inv_v
    cross = (xu - rr * xv - rc * yu + rc * rr * yv) * inv_y * inv_v
    return np.sqrt(np.maximum(cand + ref - 2 * cross, 0.0))


def studentized_interval(
    sums: Any, estimate: float, standard_error: float, confidence_level: float
) -> dict[str, Any]:
    """Bootstrap-t interval ``[est - t*_{1-a/2} se, est - t*_{a/2} se]`` from resampled sums of
    :func:`studentized_rows`; ``t* = (theta* - est) / se*`` (a resample with ``se* = 0`` gives
    ``t* = 0`` when ``theta* = est``, else +-1e300). Clipped to [-1, 1]; contains the estimate."""
    s = np.asarray(sums, dtype=np.float64)
    values = ratio_difference(s[:, :UNIT_COLUMNS])
    if is_degenerate(values, estimate) or standard_error <= 0:
        return {"lower": estimate, "upper": estimate,
                "degenerate": is_degenerate(values, estimate)}  # fmt: skip
    se = studentized_standard_errors(s)
    gap = values - estimate
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, gap / np.where(se > 0, se, 1.0),
                     np.where(_close(values, estimate), 0.0, np.sign(gap) * 1e300))
    tail = (1.0 - confidence_level) / 2.0
    t_low, t_high = np.quantile(t, [tail, 1.0 - tail])
    lower = max(-1.0, min(estimate, estimate - float(t_high) * standard_error))
    upper = min(1.0, max(estimate, estimate - float(t_low) * standard_error))
    return {"lower": lower, "upper": upper, "degenerate": False}


# --- MOVER: Wilson limits of each arm's pooled ratio, combined with their correlation -----------


def _wilson_limits(ratio: np.ndarray, n: np.ndarray, z: Any) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's (1927) score limits of a proportion ``ratio`` on ``n`` (effective) trials."""
    z2 = np.asarray(z) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 1.0 + z2 / n
        centre = (ratio + z2 / (2.0 * n)) / scale
        half = np.asarray(z) * np.sqrt(np.maximum(ratio * (1.0 - ratio), 0.0) / n
                                       + z2 / (4.0 * n * n)) / scale  # fmt: skip
    return np.clip(centre - half, 0.0, 1.0), np.clip(centre + half, 0.0, 1.0)


def _mover_parts(units: np.ndarray) -> dict[str, np.ndarray]:
    """Per run (leading axes) of unit rows ``(..., K, 4)``: each arm's ratio, its effective
    sample size, the units counted and the correlation of the two arms' linearised residuals
    (:func:`mover_interval`)."""
    u, v, x, y = (units[..., j] for j in range(4))
    out: dict[str, np.ndarray] = {}
    residuals = []
    for name, num, den in (("ref", u, v), ("cand", x, y)):
        total_num, total_den = num.sum(axis=-1), den.sum(axis=-1)
        present = (den > 0).sum(axis=-1).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(total_den > 0, total_num / total_den, 0.0)
            e = np.where(total_den[..., None] > 0,
                         (num - ratio[..., None] * den) / total_den[..., None], 0.0)  # fmt: skip
            variance = present / np.maximum(present - 1.0, 1.0) * (e * e).sum(axis=-1)
            spread = ratio * (1.0 - ratio)
            n_eff = np.where((variance > 1e-15) & (spread > 1e-15), spread / variance, present)
        n_eff = np.clip(n_eff, 1.0, np.maximum(present, total_den / 2.0))
        out[name], out[f"{name}_n"], out[f"{name}_units"] = ratio, n_eff, present
        residuals.append(e)
    er, ec = residuals
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = np.sqrt((er * er).sum(axis=-1) * (ec * ec).sum(axis=-1))
        out["correlation"] = np.where(norm > 1e-15, (er * ec).sum(axis=-1) / norm, 0.0)
    out["units"] = ((v + y) > 0).sum(axis=-1).astype(np.float64)
    return out


def _mover_bounds(parts: dict[str, np.ndarray], z: Any) -> tuple[np.ndarray, np.ndarray]:
    """Zou & Donner's (2008) MOVER bounds for ``cand - ref`` at critical value(s) ``z``; an
    arm with no unit holding a denominator (``*_units`` 0, where given) says nothing about its
    ratio, so the bounds are ``[-1, 1]`` there."""
    r1, r2, rho = parts["cand"], parts["ref"], parts["correlation"]
    l1, u1 = _wilson_limits(r1, parts["cand_n"], z)
    l2, u2 = _wilson_limits(r2, parts["ref_n"], z)
    estimate = r1 - r2
    low = np.sqrt(np.maximum((r1 - l1) ** 2 + (u2 - r2) ** 2
                             - 2.0 * rho * (r1 - l1) * (u2 - r2), 0.0))  # fmt: skip
    high = np.sqrt(np.maximum((u1 - r1) ** 2 + (r2 - l2) ** 2
                              - 2.0 * rho * (u1 - r1) * (r2 - l2), 0.0))  # fmt: skip
    lower, upper = np.maximum(-1.0, estimate - low), np.minimum(1.0, estimate + high)
    empty = (np.asarray(parts.get("ref_units", 1.0)) == 0) | (
        np.asarray(parts.get("cand_units", 1.0)) == 0
    )
    return np.where(empty, -1.0, lower), np.where(empty, 1.0, upper)


def mover_critical(confidence_level: float, units: Any) -> np.ndarray:
    """The critical value :func:`mover_interval` uses: ``t_{K-1}`` over the ``K`` counted units
    (inf below 2), by Korn & Graubard's (1998) degrees-of-freedom adjustment of the effective
    sample size, ``n_eff (z / t)^2`` for Wilson at ``z``, which is Wilson at ``t``."""
    k = np.asarray(units, dtype=np.float64)
    flat = [t_quantile(confidence_level, float(v) - 1.0) if v >= 2 else math.inf
            for v in k.reshape(-1)]  # fmt: skip
    return np.asarray(flat).reshape(k.shape)


def mover_bounds(units: Any, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`mover_interval` bounds over leading axes of ``(..., K, 4)`` unit rows
    (the coverage benchmark's form; every run one row), widened to hold the estimate."""
    matrix = np.asarray(units, dtype=np.float64)
    parts = _mover_parts(matrix)
    critical = mover_critical(confidence_level, parts["units"])
    finite = np.isfinite(critical)
    lower, upper = _mover_bounds(parts, np.where(finite, critical, 1.0))
    estimate = parts["cand"] - parts["ref"]
    lower = np.where(finite, np.minimum(lower, estimate), -1.0)
    upper = np.where(finite, np.maximum(upper, estimate), 1.0)
    return lower, upper


MOVER_METHOD = "mover_wilson"


def mover_interval(rows: Any, confidence_level: float, null: float = 0.0) -> dict[str, Any]:
    """A MOVER interval for the difference of two pooled ratios (Zou & Donner 2008, "Construction
    of confidence limits about effect measures: a general approach", Stat Med 27:1693-1702):
    each arm's ratio of sums ``R = sum(num) / sum(den)`` gets Wilson's score limits ``[l, u]``
    on its effective sample size ``n_eff = R (1 - R) / V`` (``V`` the linearised variance of
    the ratio over the units, a pair or a cluster; Korn & Graubard 1998, "Confidence intervals
    for proportions with small expected number of positive counts estimated from survey data",
    Survey Methodology 24:193-201, for Wilson or Clopper-Pearson on an effective sample size;
    the number of units where ``R`` is 0 or 1), at the t quantile of the units less one
    (:func:`mover_critical`), and the difference's limits recover the variance from them:

        L = d - sqrt((R1 - l1)^2 + (u2 - R2)^2 - 2 r (R1 - l1)(u2 - R2))
        U = d + sqrt((u1 - R1)^2 + (R2 - l2)^2 - 2 r (u1 - R1)(R2 - l2))

    ``r`` the correlation of the arms' linearised residuals. For 0/1 pairs with ``n_eff = n``
    this is Newcombe's (1998) method-10 construction; the Wilson limits carry the skewness of a
    ratio near 0 or 1, which a symmetric jackknife-t interval cannot (issue 38's floor cells).
    Returns ``{estimate, lower, upper, degenerate, p_value, units, effective: [ref, cand],
    correlation}``; ``p_value`` inverts the interval at ``null`` (the critical value at which
    the bound between the estimate and ``null`` reaches it, on t with the same degrees of
    freedom). ``degenerate`` when no unit has a denominator.
    """
    matrix = np.asarray(rows, dtype=np.float64)
    parts = _mover_parts(matrix)
    estimate = float(ratio_difference(matrix.sum(axis=0)))
    units = float(parts["units"])
    result: dict[str, Any] = {
        "estimate": estimate, "lower": -1.0, "upper": 1.0, "degenerate": units == 0,
        "p_value": 1.0, "units": int(units), "correlation": float(parts["correlation"]),
        "effective": [float(parts["ref_n"]), float(parts["cand_n"])],
    }  # fmt: skip
    if units == 0:
        result.update(lower=estimate, upper=estimate)
        return result
    critical = float(mover_critical(confidence_level, units))
    if not math.isfinite(critical):
        return result
    lower, upper = _mover_bounds(parts, critical)
    result.update(lower=min(float(lower), estimate), upper=max(float(upper), estimate))
    result["p_value"] = mover_p_value(parts, estimate, units, null)
    return result


def mover_p_value(parts: dict[str, np.ndarray], estimate: float, units: float,
                  null: float) -> float:  # fmt: skip
    """The two-sided p-value that inverts the MOVER interval at ``null``: the critical value
    ``c`` at which the bound on ``null``'s side reaches it (bisection on ``c`` in ``[0, 1000]``),
    read on t with ``units - 1`` degrees of freedom; 1 at the estimate."""
    if abs(estimate - null) <= _TOLERANCE or units < 2:
        return 1.0
    above = estimate > null
    inner, outer = 0.0, 1000.0

    def excludes(c: float) -> bool:
        lower, upper = _mover_bounds(parts, c)
        return bool(lower > null) if above else bool(upper < null)

    if excludes(outer):
        return 0.0
    for _ in range(64):
        middle = 0.5 * (inner + outer)
        if excludes(middle):
            inner = middle
        else:
            outer = middle
    return two_sided_t_p(0.5 * (inner + outer), units - 1.0)
