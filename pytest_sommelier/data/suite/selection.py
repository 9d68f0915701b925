"""``[selection]``: which arms compete to be chosen, by which metric, against which reference.

Invariant kept: a returned ``SelectionConfig`` names a metric the reports carry, at least one
candidate (``among``, an ``fnmatch`` pattern over the arm names after checkpoint sweeps are
expanded: ``adapter@*``) and a reference arm that is not a candidate (default: the first arm
without adapter); anything else is one ``SOM-SUITE-SELECTION`` line naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from pytest_sommelier.core.extra_columns import EXTRA_METRICS
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.types import ArmConfig, SelectionConfig
from pytest_sommelier.errors import InputError


def selection_config(
    table: Mapping[str, Any] | None,
    arms: Mapping[str, ArmConfig],
    label: str,
    scorers: Sequence[str] = (),
    slices: Sequence[str] = (),
) -> SelectionConfig | None:
    """``[selection]`` checked against the (expanded) arms; None without the table. Its
    ``metric`` is one of the five or a scorer the suite enables (``[suite] scorers``: an
    extension's metric is chosen by as a built-in one is); its ``slice`` is ``overall`` (the
    default) or one of ``slices``."""
    if table is None:
        return None
    where = f"{label}: [selection]"

    def refuse(key: str, message: str, hint: str) -> InputError:
        return InputError("SOM-SUITE-SELECTION", f"selection.{key} {message}", hint, where=where)

    metric, among = table["metric"], table["among"]
    if metric not in (*METRIC_NAMES, *EXTRA_METRICS) and metric not in scorers:
        known = ", ".join([*METRIC_NAMES, *EXTRA_METRICS, *scorers])
        raise refuse("metric", f"{metric!r} is not a metric", f"one of: {known}")
    candidates = tuple(name for name in arms if fnmatchcase(name, among))
    if not candidates:
        raise refuse("among", f"{among!r} matches no arm", f"arms: {', '.join(arms)}")
    default = next((n for n, a in arms.items() if a.adapter is None), None)
    reference = table.get("reference", default)
    if reference is None or reference not in arms:
        raise refuse("reference", f"{reference!r} is not an arm", f"arms: {', '.join(arms)}")
    if reference in candidates:
        raise refuse("reference", f"{reference!r} is one of the candidates", "narrow among")
    chosen = table.get("slice", "overall")
    if chosen != "overall" and chosen not in slices:
        known = ", ".join(slices)
        raise refuse("slice", f"{chosen!r} is not a slice", f"overall or one of: {known}")
    return SelectionConfig(
        metric=metric, among=among, reference=reference, candidates=candidates, slice=chosen
    )


__all__ = ["selection_config"]
