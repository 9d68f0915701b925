"""xdist scheduling that keeps each fixed generation batch in one process.

Used when the user asked for ``-n N`` without choosing ``--dist`` (xdist's default ``load``).
Every suite item carries an ``xdist_group`` mark naming its own batch (:func:`batch_group`, built
from its ``BatchKey``: suite node id, arm, slice, batch index), so the scope an item is sent
with comes from the item, never from its position in the selected collection or from
re-reading a file: ``-k``, ``--lf`` and ``--deselect`` cannot split a batch across workers.

How the group reaches the controller (which never collects): xdist's ``--dist loadgroup``
appends ``@<group>`` to each item's node id for good, which breaks ``--lf`` and every report
name. Here the suffix is shown only in the collection a worker sends the controller (the
``collectionfinish`` event, :class:`BatchGroups`) and taken off again at once, so reports,
``--lf``, junit and the run keep the item's own node id. The controller's
:class:`BatchScheduling` (xdist's ``LoadGroupScheduling``) sends each group to one worker as a
unit; every other test is its own scope (as with ``load``).

Invariants kept: items of one batch are sent to one worker together, so a batch is generated
once per run; should a suite item ever arrive without its group (a pytest that ignores the
node-id suffix), its scope is its whole (suite, arm, slice), coarser but still never split;
a batch whose worker crashed is not retried on another worker (its items stay unrun and the
run is incomplete). With an explicit ``--dist loadgroup`` xdist groups by the same marks
itself (and keeps its own node-id suffix and retry rule); other explicit ``--dist`` modes are
left alone.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.plugin.keys import suite_nodeid

if TYPE_CHECKING:
    from pytest_sommelier.core.types import BatchKey

GROUP_PREFIX = "sommelier:"
WORKER_FLAG = "sommelier_batch_groups"
"""``workerinput`` key: the controller schedules by batch group (set in ``configure_node``)."""


def batch_group(suite: str, key: BatchKey) -> str:
    """The ``xdist_group`` name of batch ``key`` of the suite with node id ``suite``: unique per
    batch of a run, free of ``@`` (xdist splits a node id at its last ``@``)."""
    name = f"{GROUP_PREFIX}{suite}::{key.arm}::{key.language}::batch{key.index}"
    return name.replace("@", "%40")


def schedules_by_batch(config: pytest.Config) -> bool:
    """True when this run's xdist distribution is the implicit ``load`` (``-n N`` and no
    ``--dist``): then :class:`BatchScheduling` replaces it."""
    explicit = any(
        a == "--dist" or a.startswith("--dist=") or a == "-d" for a in config.invocation_params.args
    )
    return config.getvalue("dist") == "load" and not explicit


def configure_node(node: Any) -> None:
    """Tell a starting worker whether the controller schedules by batch group."""
    node.workerinput[WORKER_FLAG] = schedules_by_batch(node.config)


def watch_collection(config: pytest.Config) -> None:
    """On a worker of a run scheduled by batch, make sure :class:`BatchGroups` is registered
    (called when a suite file is collected; once per process)."""
    workerinput = getattr(config, "workerinput", None) or {}
    if workerinput.get(WORKER_FLAG) and not config.pluginmanager.has_plugin(BatchGroups.NAME):
        config.pluginmanager.register(BatchGroups(), BatchGroups.NAME)


class BatchGroups:
    """Worker side: the collection this worker reports to the controller names each suite
    item's batch group as ``<node id>@<group>``; the items keep their own node ids."""

    NAME = "sommelier-batch-groups"

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_finish(self, session: pytest.Session) -> Generator[None, None, None]:
        renamed: list[tuple[Any, str]] = []
        for item in session.items:
            group = getattr(item, "batch_group", None)
            if isinstance(group, str):
                renamed.append((item, item.nodeid))
                item._nodeid = f"{item.nodeid}@{group}"
        try:
            return (yield)  # xdist's worker sends the ids it sees here
        finally:
            for item, nodeid in renamed:
                item._nodeid = nodeid


def split_group(nodeid: str) -> tuple[str, str | None]:
    """``(the item's own node id, its batch group or None)`` of a reported collection id."""
    head, sep, group = nodeid.rpartition("@")
    if sep and group.startswith(GROUP_PREFIX):
        return head, group
    return nodeid, None


def scope_of(nodeid: str) -> str:
    """The unit a collection id is sent with: its batch group; for a suite item without one,
    its (suite, arm, slice); for any other test, itself."""
    own, group = split_group(nodeid)
    if group is not None:
        return group
    if suite_nodeid(own) is not None:
        return "::".join(own.split("::")[:3])
    return own


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Return the batch scheduler for the implicit ``--dist load``, else None (xdist's own)."""
    if not schedules_by_batch(config):
        return None
    from xdist.scheduler import LoadGroupScheduling  # type: ignore[import-untyped]

    class BatchScheduling(LoadGroupScheduling):  # type: ignore[misc]
        """LoadGroup with sommelier batches as the groups."""

        def remove_node(self, node: Any) -> str | None:
            """LoadScope's ``remove_node`` without re-queueing the batch that crashed the
            worker (LoadScope re-queues the whole unit, crashing item included, so one batch
            could kill worker after worker). The crashing item is reported as crashed (under
            its own node id), the rest of its batch stays unrun (the run is incomplete); other
            units are re-queued."""
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
            # the whole batch stays unrun: regenerating it would kill the next worker too
            del workload[crashed_scope]
            self.workqueue.update(
                (scope, unit) for scope, unit in workload.items() if self._pending_of({scope: unit})
            )
            for other in self.assigned_work:
                self._reschedule(other)
            return split_group(crashitem)[0]

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return BatchScheduling(config, log)
