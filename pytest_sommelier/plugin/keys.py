"""Names the plugin's modules share and the entry point needs at load: the suite file's name,
the suite part of a node id, the key of an item's result, and the batch rule collection and the
xdist scheduler both cut batches by.

Invariant kept: this module imports only pytest and the standard library (the entry point
imports it in every pytest run, with or without a suite; tests/plugin/test_idle_cost.py checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_sommelier.core.types import WorkerPayload

SUITE_FILENAME = "sommelier.toml"
BatchIndex = dict[tuple[str, str], int]
"""(slice, example id) -> the index of the example's fixed batch in its slice."""
RESULT_KEY: pytest.StashKey[WorkerPayload] = pytest.StashKey()
"""An item's result (what it reports to the session), set in ``runtest``."""


def suite_nodeid(nodeid: str) -> str | None:
    """The suite-file part of an item's node id, or None for a node id outside any suite."""
    head = nodeid.split("::", 1)[0]
    return head if head.rsplit("/", 1)[-1] == SUITE_FILENAME else None


def batch_index_map(slices: dict[str, list[str]], batch_size: int) -> BatchIndex:
    """(slice, example id) -> batch index, from each slice's example ids in split order
    (position // batch_size): the one rule both ``collect.SliceNode`` (each item's batch) and
    the controller's scheduler (each item's unit) cut batches by."""
    return {
        (language, example_id): position // batch_size
        for language, ids in slices.items()
        for position, example_id in enumerate(ids)
    }
