"""``--sommelier-baseline``: a stored arm of an earlier run stands in for an arm of the suite.

``--sommelier-baseline DIR`` takes the stored arm folder ``runs/<id>/eval/<arm>`` and replaces
the suite's arm of the same name; ``NAME=DIR`` replaces arm ``NAME``. The arm is not
regenerated (collection yields no items for it). Invariants kept: its metrics are re-derived
from its stored ``raw_text`` (never read from its stored report), while the conditions it was
measured under (config digest, split digest, decoding, identities) stay those of its stored
report, so a baseline from other conditions is refused by the identity gate, never silently
compared; the new run directory holds a copy of its generations and re-derived report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_sommelier.core.pipeline import ArmRun
from pytest_sommelier.data.split import FormattedSplit
from pytest_sommelier.data.stored import stored_arm
from pytest_sommelier.data.suite import Suite
from pytest_sommelier.errors import InputError
from pytest_sommelier.plugin.settings import settings_of


def baseline_map(config: pytest.Config) -> dict[str, Path]:
    """Arm name -> stored arm folder, from every ``--sommelier-baseline`` given."""
    mapping: dict[str, Path] = {}
    for value in settings_of(config).baseline:
        name, sep, folder = value.partition("=")
        path = Path(folder if sep else name)
        if not path.is_absolute():
            path = config.invocation_params.dir / path
        arm = name if sep else path.name
        mapping[arm] = path
    return mapping


def baseline_arms(config: pytest.Config, suite: Suite, split: FormattedSplit) -> dict[str, ArmRun]:
    """The suite's arms that come from stored runs, read (``data.stored.stored_arm``) and
    checked against the session's split."""
    arms: dict[str, ArmRun] = {}
    for name, folder in baseline_map(config).items():
        if name not in suite.arms:
            raise InputError(
                "SOM-BASELINE-ARM",
                f"--sommelier-baseline: suite '{suite.name}' has no arm '{name}'",
                f"use NAME=DIR with one of: {', '.join(suite.arms)}",
            )
        arms[name] = stored_arm(suite, split, folder, name=name, as_baseline=True)
    return arms
