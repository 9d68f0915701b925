"""xdist scheduling that keeps each fixed generation batch in one process.

The controller (which never collects) derives every suite item's batch itself: a suite item's
node id reads ``<suite file>::<arm>::<slice>::<example id>``, and the suite file's formatted
split (loaded on the controller with ``collect.load_suite_once``, the same loader the workers
and the session finish use) says where that example sits in its slice, so its fixed batch is
``position // batch_size`` (:func:`batch_index_map`). Nothing travels through a node id and no
private attribute of a pytest or xdist object is written: items keep their own node ids in every
report, ``--lf``, junit and the run, on every pytest (pytest 9.2 keeps node ids structurally;
xdist's own ``loadgroup`` depends on rewriting them, pytest-xdist issue 1386).

:class:`BatchScheduling` (xdist's ``LoadScopeScheduling`` with its own scope rule) replaces the
scheduler of ``load`` (implicit ``-n N`` or explicit), ``loadscope``, ``loadfile``,
``loadgroup`` and ``worksteal``: a suite item's unit is its batch; any other test keeps the unit
its ``--dist`` mode gives it (:func:`scope_of`). ``each`` and ``no`` are left to xdist.

Invariants kept: items of one batch are sent to one worker together, so a batch is generated
once per run, under any selection (``-k``, ``--deselect``, ``--lf``, node ids); a suite item
whose batch cannot be derived (its suite failed to load on the controller, an example id the
split does not hold) is sent with its whole (suite, arm, slice), coarser but never split; a
batch whose worker crashed is not retried on another worker (its items stay unrun and the run
is incomplete).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_sommelier.plugin.keys import BatchIndex, batch_index_map, suite_nodeid

GROUP_PREFIX = "sommelier:"
TAKEN_OVER = ("load", "loadscope", "loadfile", "loadgroup", "worksteal")
"""The ``--dist`` modes whose scheduler :class:`BatchScheduling` replaces."""


def batch_group(suite: str, arm: str, language: str, index: int) -> str:
    """The unit name of batch ``index`` of slice ``language`` of ``arm`` in the suite with
    node id ``suite``: two batches share a name exactly when all four agree."""
    return f"{GROUP_PREFIX}{suite}::{arm}::{language}::batch{index}"


def mode_scope(dist: str) -> Callable[[str], str]:
    """The unit xdist's ``--dist`` mode ``dist`` gives a test that is not a suite item (the
    rules of xdist's own schedulers, restated so none of their private methods is called)."""
    if dist == "loadscope":
        return lambda nodeid: nodeid.rsplit("::", 1)[0]
    if dist == "loadfile":
        return lambda nodeid: nodeid.split("::", 1)[0]
    if dist == "loadgroup":
        # xdist's workers suffix ``@<group>`` to a marked test's id on pytest < 9.2
        return lambda nodeid: (
            nodeid.rsplit("@", 1)[-1] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
        )
    return lambda nodeid: nodeid


def scope_of(nodeid: str, batches: Callable[[str], BatchIndex | None], dist: str = "load") -> str:
    """The unit a collected node id is sent with: for a suite item, its batch group (the
    suite's batches from ``batches(suite node id)``), or its whole (suite, arm, slice) when the
    batch is unknown; any other test, the unit of ``--dist`` mode ``dist``."""
    suite = suite_nodeid(nodeid)
    if suite is None:
        return mode_scope(dist)(nodeid)
    parts = nodeid.split("::", 3)
    if len(parts) < 4:
        return nodeid
    _, arm, language, example_id = parts
    index = (batches(suite) or {}).get((language, example_id))
    if index is None:
        return "::".join(parts[:3])
    return batch_group(suite, arm, language, index)


def suite_batches(config: pytest.Config) -> Callable[[str], BatchIndex | None]:
    """On the controller: suite node id -> its batch map, loaded once per suite; None when the
    suite does not load here (its items then go by whole slice; the workers' collection
    reports the error itself)."""
    known: dict[str, BatchIndex | None] = {}

    def batches(suite: str) -> BatchIndex | None:
        if suite not in known:
            known[suite] = None
            from pytest_sommelier.errors import SommelierError
            from pytest_sommelier.plugin.collect import load_suite_once

            try:
                loaded, split = load_suite_once(config, Path(config.rootpath) / suite)
            except SommelierError:  # the workers report the suite's own error at collection
                return None
            size = int(loaded.decoding["batch_size"])
            ids = {lang: [e.example_id for e in rows] for lang, rows in split.slices.items()}
            known[suite] = batch_index_map(ids, size)
        return known[suite]

    return batches


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Return the batch scheduler for the ``--dist`` modes it takes over, else None (xdist's
    own: ``each``, ``no``)."""
    dist = str(config.getvalue("dist"))
    if dist not in TAKEN_OVER:
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    batches = suite_batches(config)

    class BatchScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """LoadScope with sommelier batches as the units of suite items."""

        def remove_node(self, node: Any) -> str | None:
            """LoadScope's ``remove_node`` without re-queueing the batch that crashed the
            worker (LoadScope re-queues the whole unit, crashing item included, so one batch
            could kill worker after worker). The crashing item is reported as crashed, the
            rest of its batch stays unrun (the run is incomplete); other units are
            re-queued (of a crashed unit that is not a batch, all but the crashing test)."""
            workload = self.assigned_work.pop(node)
            crashed_scope, crashitem = next(
                (
                    (scope, nodeid)
                    for scope, unit in workload.items()
                    for nodeid, completed in unit.items()
                    if not completed
                ),
                (None, None),
            )
            if crashitem is None:
                return None
            if str(crashed_scope).startswith(GROUP_PREFIX):
                # the whole batch stays unrun: regenerating it would kill the next worker too
                del workload[crashed_scope]
            else:  # any other unit: the crashing test alone is dropped (as xdist's ``load``)
                del workload[crashed_scope][crashitem]
            self.workqueue.update(
                (scope, unit) for scope, unit in workload.items() if not all(unit.values())
            )
            for other in self.assigned_work:
                self._reschedule(other)
            return str(crashitem)

        def _split_scope(self, nodeid: str) -> str:  # xdist's documented override point
            return scope_of(nodeid, batches, dist)

    return BatchScheduling(config, log)
