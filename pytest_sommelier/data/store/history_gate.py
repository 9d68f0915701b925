"""The regression gate in one flag, parsed: ``METRIC[:SLICE]:MARGIN`` against a stored run
(``--sommelier-compare-fail``, ``sommelier rescore --compare-fail``, ``sommelier compare ...
--fail``). What a spec means and how it is judged is ``core.compare_fail``'s.

Invariant kept: a spec is parsed once, and a bad one is one ``InputError`` line naming the
part that is wrong (``SOM-HISTORY-FAIL-SPEC``).
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_sommelier.core.compare_fail import FailSpec
from pytest_sommelier.data.suite.load import GATE_METRICS, OVERALL, valid_name
from pytest_sommelier.errors import InputError
from pytest_sommelier.numbers import decimal_number

OPTION = "--sommelier-compare-fail"
SHAPE = "METRIC[:SLICE]:MARGIN"


def _bad(text: str, part: str, message: str, hint: str, option: str) -> InputError:
    return InputError(
        "SOM-HISTORY-FAIL-SPEC",
        f"{option} {text!r}: {part} {message}",
        f"{hint} (the form is METRIC[:SLICE]:MARGIN)",
    )


def parse_fail_spec(text: str, *, option: str = OPTION) -> FailSpec:
    """Parse ``METRIC[:SLICE]:MARGIN``: a gate metric, an optional slice name (``overall`` by
    default) and a margin, a finite ASCII number in [0, 1) (an absolute difference: 0.02 is two
    points; 1 or more could never fail).
    """
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise _bad(
            text,
            "the spec",
            f"is not {SHAPE}",
            "e.g. full_call_exact_match:0.02 or full_call_exact_match:he:0.03",
            option,
        )
    metric, margin_text = parts[0], parts[-1]
    slice_name = parts[1] if len(parts) == 3 else OVERALL
    if metric not in GATE_METRICS:
        raise _bad(
            text,
            "metric",
            f"{metric!r} is not a metric",
            "one of: " + ", ".join(GATE_METRICS),
            option,
        )
    if slice_name != OVERALL and not valid_name(slice_name):
        raise _bad(
            text,
            "slice",
            f"{slice_name!r} is not a slice name",
            "a slice of the suite (letters, digits, '_', '-') or overall",
            option,
        )
    if margin_text.endswith("%"):
        raise _bad(
            text,
            "margin",
            f"{margin_text!r} is a percentage",
            "give the margin as an absolute difference of the metric: 0.02 for two points",
            option,
        )
    margin = decimal_number(margin_text, low=0.0)
    if margin is None:
        raise _bad(
            text,
            "margin",
            f"{margin_text!r} is not a number >= 0 (ASCII digits)",
            "e.g. 0.02 (fail when this run is more than 0.02 below the stored run)",
            option,
        )
    if margin >= 1:
        raise _bad(
            text,
            "margin",
            f"{margin_text!r} is 1 or more: a metric difference is never below -1, so the gate "
            "could never fail",
            "give the margin as an absolute difference below 1: 0.02 for two points",
            option,
        )
    return FailSpec(metric=metric, slice=slice_name, margin=margin, text=text.strip())


def parse_fail_specs(texts: Sequence[str], *, option: str = OPTION) -> list[FailSpec]:
    """Every spec of a repeatable option, in order."""
    return [parse_fail_spec(text, option=option) for text in texts]


__all__ = ["OPTION", "SHAPE", "FailSpec", "parse_fail_spec", "parse_fail_specs"]
