"""xdist scheduling that keeps each fixed generation batch in one process.

Used when the user asked for ``-n N`` without choosing ``--dist`` (xdist's default ``load``).
Scope of a suite item: ``<suite>::<arm>::<slice>`` plus its batch number, where batches are
consecutive runs of ``batch_size`` items of that (arm, slice) in collection order; every other
test is its own scope, which distributes like ``load``. Invariant kept: items of one batch are
sent to one worker together, so a batch is generated once per run; a batch whose worker crashed
is not retried on another worker (its items stay unrun and the run is incomplete).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest


def _batch_size(rootpath: Path, suite_nodeid: str, cache: dict[str, int]) -> int:
    if suite_nodeid not in cache:
        try:
            with (rootpath / suite_nodeid).open("rb") as handle:
                data = tomllib.load(handle)
            size = int(data.get("decoding", {}).get("batch_size", 1))
        except (OSError, tomllib.TOMLDecodeError, TypeError, ValueError):
            size = 1  # the suite itself reports the problem at collection
        cache[suite_nodeid] = max(size, 1)
    return cache[suite_nodeid]


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Return a batch-aware scheduler for ``--dist load`` (implicit), else None."""
    explicit = any(
        a == "--dist" or a.startswith("--dist=") or a == "-d" for a in config.invocation_params.args
    )
    if config.getvalue("dist") != "load" or explicit:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class BatchScheduling(LoadScopeScheduling):
        """LoadScope with sommelier batches as scopes."""

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self._scopes: dict[str, str] = {}
            self._sizes: dict[str, int] = {}

        def remove_node(self, node: Any) -> str | None:
            """LoadScope's ``remove_node`` without re-queueing the batch that crashed the
            worker (LoadScope re-queues the whole unit, crashing item included, so one batch
            could kill worker after worker). The crashing item is reported as crashed, the
            rest of its batch stays unrun (the run is incomplete); other units are re-queued."""
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
            return crashitem

        def _split_scope(self, nodeid: str) -> str:
            if not self._scopes:
                self._index()
            return self._scopes.get(nodeid, nodeid)

        def _index(self) -> None:
            counters: dict[str, int] = {}
            for nodeid in self.collection or []:
                parts = nodeid.split("::")
                if len(parts) != 4 or not parts[0].endswith("sommelier.toml"):
                    continue
                prefix = "::".join(parts[:3])
                position = counters.get(prefix, 0)
                counters[prefix] = position + 1
                size = _batch_size(config.rootpath, parts[0], self._sizes)
                self._scopes[nodeid] = f"{prefix}::batch{position // size}"

    return BatchScheduling(config, log)
