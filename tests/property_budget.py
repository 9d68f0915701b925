"""How many examples each hypothesis property draws: its full count, or in the fast tier a share.

The README's test command, every CI job and ``SOMMELIER_TEST_EXAMPLES=full`` run each property
at the count its ``@settings`` names (hypothesis' default of 100 where it names none). The fast
tier (``-m "not slow"``, the inner loop) runs a third of that count, never fewer than
``min(count, FLOOR)``: the same properties, the same strategies, a smaller draw.

Every property names its full count this way (``tests/test_property_budget.py`` holds it), the
hostile and fuzzing properties docs/hardening.md lists included: the counts that document
states are the full run's, drawn whole by the README's command and every CI job. The tier is
chosen once per process, in ``tests/conftest.py``'s ``pytest_configure``, before any test
module is imported (a count is read when its module is).
"""

from __future__ import annotations

import math
import os

FAST_SHARE = 1 / 3  # of each count, in the fast tier
FLOOR = 20  # the fewest examples a property draws in the fast tier (or its count, if smaller)
ENV = "SOMMELIER_TEST_EXAMPLES"  # "full": the full counts in the fast tier too (CI sets it)

_share = {"share": 1.0}


def fast_tier(markexpr: str | None, environ: dict[str, str] | os._Environ[str]) -> bool:
    """True for the fast tier's marker expression (``-m "not slow"``, spaces as typed) unless
    ``SOMMELIER_TEST_EXAMPLES=full`` asks for the full counts; a bad value of the variable is
    refused, never read as either."""
    wanted = environ.get(ENV, "")
    if wanted not in ("", "full", "fast"):
        raise ValueError(f"{ENV}={wanted!r}: expected 'full' or 'fast'")
    if wanted == "full":
        return False
    return wanted == "fast" or (markexpr or "").split() == ["not", "slow"]


def choose(fast: bool) -> None:
    """Set the share every later :func:`examples` call reads (1 outside the fast tier)."""
    _share["share"] = FAST_SHARE if fast else 1.0


def examples(count: int) -> int:
    """The examples a property whose full count is ``count`` draws in this tier: ``count``
    itself outside the fast tier; in it ``ceil(count * FAST_SHARE)``, at least
    ``min(count, FLOOR)``."""
    if count < 1:
        raise ValueError(f"a property draws at least one example, not {count}")
    share = _share["share"]
    if share >= 1.0:
        return count
    return max(min(count, FLOOR), math.ceil(count * share))
