"""Tango's interval of one table in Python floats is the array path's, bit for bit.

``core.proportions.tango_bounds`` bisects one table (finite counts, ``n > 0``) in Python floats
(``_tango_bounds_one``) and several at once with numpy; both must give the same bits: every
integer table up to 20 pairs at three levels with and without the continuity correction, and
random tables of non-integer (design-effect-scaled) counts, critical values and corrections.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core import proportions


def bits(values: Any) -> bytes:
    return struct.pack(f"{len(values)}d", *(float(v) for v in values))


def agree(tables: list[tuple[float, float, float, float, float]]) -> None:
    """Each table alone (the scalar path) against all of them as arrays (the numpy path)."""
    b, c, n, z, cc = (np.array(column, dtype=np.float64) for column in zip(*tables, strict=True))
    by_continuity: dict[float, list[int]] = {}
    for i, table in enumerate(tables):
        by_continuity.setdefault(table[4], []).append(i)
    for continuity, rows in by_continuity.items():
        lower, upper = proportions.tango_bounds(b[rows], c[rows], n[rows], z[rows], continuity)
        alone = [proportions.tango_bounds(*tables[i][:4], continuity) for i in rows]
        assert all(isinstance(x, float) for pair in alone for x in pair)
        assert bits([pair[0] for pair in alone]) == bits(lower), [tables[i] for i in rows]
        assert bits([pair[1] for pair in alone]) == bits(upper), [tables[i] for i in rows]
    assert cc.shape == b.shape


def test_every_small_integer_table_agrees() -> None:
    tables = [
        (float(b), float(c), float(n), z, continuity)
        for n in range(1, 21)
        for b in range(n + 1)
        for c in range(n + 1 - b)
        for z in (1.6448536269514722, 1.959963984540054, 2.5758293035489004)
        for continuity in (0.0, 0.5)
    ]
    agree(tables)


TABLE = st.tuples(
    st.floats(0.01, 5000.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.01, 6.0),
    st.sampled_from([0.0, 0.5]) | st.floats(0.0, 3.0),
).map(lambda t: (t[0] * t[1], t[0] * (1 - t[1]) * t[2], t[0], t[3], t[4]))  # fmt: skip


@settings(max_examples=examples(60), deadline=None)  # up to 20 tables each: ~1 s
@given(tables=st.lists(TABLE, min_size=1, max_size=20))
def test_random_scaled_tables_agree(tables: list[tuple[float, float, float, float, float]]) -> None:
    agree(tables)


def test_what_the_scalar_path_leaves_to_numpy_is_unchanged() -> None:
    """A table with no pairs or a non-finite count goes the array path (NaN bounds as before)."""
    for table in ((0.0, 0.0, 0.0, 1.96), (1.0, 0.0, float("inf"), 1.96), (1.0, 1.0, 5.0, np.inf)):
        with np.errstate(all="ignore"):  # the array path's own warnings on these
            alone = proportions.tango_bounds(*table)
            lower, upper = proportions.tango_bounds(*(np.array([x]) for x in table))
        assert bits(alone) == bits([lower[0], upper[0]])
