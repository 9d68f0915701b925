"""The distribution functions the intervals need, in pure Python (no scipy).

- the standard normal: two-sided critical values and tail p-values (``statistics.NormalDist``
  and ``math.erfc``, accurate far in the tail);
- Student's t: the CDF through the regularised incomplete beta function (continued fraction,
  Lentz's method, as in Press et al., Numerical Recipes, 2nd ed., section 6.4) and the quantile
  by bisection on it.

Invariants kept: every p-value lies in ``[0, 1]``; ``t_quantile`` inverts ``t_cdf`` to about
1e-12; with ``df`` beyond 1e7 Student's t is the standard normal.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any

import numpy as np

_NORMAL = NormalDist()
_NORMAL_DF = 1e7
_CF_ITERATIONS = 20_000
_CF_EPSILON = 1e-15
_TINY = 1e-300


def normal_quantile(confidence_level: float) -> float:
    """The two-sided standard normal critical value ``z_{1 - (1 - cl)/2}``."""
    return _NORMAL.inv_cdf(1.0 - (1.0 - confidence_level) / 2.0)


def normal_cdf(z: float) -> float:
    """The standard normal CDF."""
    return _NORMAL.cdf(z)


def normal_inverse_cdf(p: float) -> float:
    """The standard normal quantile function."""
    return _NORMAL.inv_cdf(p)


def two_sided_normal_p(z: Any) -> Any:
    """Two-sided p-value ``P(|Z| >= |z|)`` (erfc, so tiny p-values keep their precision);
    broadcasts over arrays."""
    values = np.abs(np.asarray(z, dtype=np.float64))
    out = np.vectorize(lambda v: math.erfc(v / math.sqrt(2.0)), otypes=[np.float64])(values)
    return float(out) if out.ndim == 0 else out


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _CF_ITERATIONS + 1):
        m2 = 2 * m
        for numerator in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                          -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):  # fmt: skip
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _CF_EPSILON:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` for ``a, b > 0``, ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))  # fmt: skip
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def two_sided_t_p(t: float, df: float) -> float:
    """Two-sided p-value ``P(|T_df| >= |t|)`` = ``I_{df/(df+t^2)}(df/2, 1/2)``."""
    if df > _NORMAL_DF:
        return float(two_sided_normal_p(t))
    if t == 0.0:
        return 1.0
    if math.isinf(t):
        return 0.0
    return min(1.0, regularized_beta(df / 2.0, 0.5, df / (df + t * t)))


def t_cdf(t: float, df: float) -> float:
    """Student's t CDF with ``df > 0`` degrees of freedom."""
    tail = 0.5 * two_sided_t_p(t, df)
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(confidence_level: float, df: float) -> float:
    """The two-sided critical value ``t_{1 - (1 - cl)/2, df}`` (bisection on the tail p-value,
    which is monotone in t). Memoised per process: a run asks for the same few (level, df)
    pairs once per metric, slice and comparison (each bisection is ~50 continued fractions)."""
    if df > _NORMAL_DF:
        return normal_quantile(confidence_level)
    alpha = 1.0 - confidence_level
    low, high = 0.0, max(1.0, normal_quantile(confidence_level))
    while two_sided_t_p(high, df) > alpha:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if two_sided_t_p(middle, df) > alpha:
            low = middle
        else:
            high = middle
        if high - low <= 1e-14 * high:
            break
    return 0.5 * (low + high)
