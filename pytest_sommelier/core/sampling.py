"""The one seeded ``--sample`` draw (``sommelier import``, ``import bfcl`` and ``parity``).

Invariant kept: which items are kept is a function of ``(count, sample, seed)`` only:
``sample`` distinct positions of ``range(count)`` drawn without replacement with
``random.Random(seed)``, returned ascending (so the items keep their order); every position
when ``sample`` is None or not smaller than ``count``. Callers check that ``sample`` is
positive, under their own error code.
"""

from __future__ import annotations

import random


def sample_positions(count: int, sample: int | None, seed: int) -> list[int]:
    """The positions in ``range(count)`` a seeded ``--sample`` keeps, ascending."""
    if sample is None or sample >= count:
        return list(range(count))
    return sorted(random.Random(seed).sample(range(count), sample))
