"""``--sommelier-baseline``: a stored arm of an earlier run stands in for an arm of the suite.

``--sommelier-baseline DIR`` takes the stored arm folder ``runs/<id>/eval/<arm>`` and replaces
the suite's arm of the same name; ``NAME=DIR`` replaces arm ``NAME``. The arm is not
regenerated (collection yields no items for it). Invariants kept: its metrics are re-derived
from its stored ``raw_text`` (never read from its stored report), while the conditions it was
measured under (config digest, split digest, decoding, identities) stay those of its stored
report, so a baseline from other conditions is refused by the identity gate, never silently
compared; the new run directory holds a copy of its generations and re-derived report. A
stored arm stands in for an arm only when it is the same arm: a stored base arm for an adapter
arm (or the reverse), another suite's adapter, or another adapter than the configured one is
refused with one line (``data.store.history_compare.refuse_borrowed_stand_in``) before it is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_sommelier.errors import InputError
from pytest_sommelier.plugin.settings import settings_of

if TYPE_CHECKING:  # the store and the pipeline are imported where a stored arm is read
    from pytest_sommelier.core.pipeline import ArmRun
    from pytest_sommelier.core.types import FormattedSplit, Suite


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
    """The suite's arms that come from stored runs, read (``data.store.stored.stored_arm``) and
    checked against the session's split."""
    from pytest_sommelier.core import runlayout
    from pytest_sommelier.data.store.history_compare import refuse_borrowed_stand_in
    from pytest_sommelier.data.store.stored import stored_arm
    from pytest_sommelier.data.suite.load import suite_identity

    arms: dict[str, ArmRun] = {}
    configured: dict | None = None
    for name, folder in baseline_map(config).items():
        if name not in suite.arms:
            raise InputError(
                "SOM-BASELINE-ARM",
                f"--sommelier-baseline: suite '{suite.name}' has no arm '{name}'",
                f"use NAME=DIR with one of: {', '.join(suite.arms)}",
            )
        if runlayout.arm_report(folder).is_file():  # else stored_arm names what is missing
            configured = configured or suite_identity(suite)
            refuse_borrowed_stand_in(configured, name, folder)
        arms[name] = stored_arm(suite, split, folder, name=name, as_baseline=True)
    return arms


def baseline_origins(config: pytest.Config) -> dict[str, str]:
    """Arm name -> where its stored arm comes from (``stored arm 0003 (commit abc1234)``)."""
    from pytest_sommelier.data.store.history import describe_arm_folder

    return {name: describe_arm_folder(folder) for name, folder in baseline_map(config).items()}
