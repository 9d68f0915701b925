"""Which process am I: the one rule every part of the plugin asks.

A pytest-xdist worker is a process whose config carries ``workerinput`` (set by xdist for this
very session); anything else (a plain run, the xdist controller, a pytester session started
inside a worker) is ``main``. Invariant kept: the role comes from the session's config only,
never from ``PYTEST_XDIST_WORKER`` (an outer xdist run leaves that variable to every session
started inside it). Pytest and the standard library only (the entry point imports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Role:
    """This process in the run: its worker id, its worker number, and the run's process count."""

    worker_id: str = "main"  # "gw3" on an xdist worker
    index: int = 0  # 3 for "gw3"; 0 outside xdist (the CUDA device choice reads it)
    processes: int = 1  # the run's number of worker processes; 1 for a plain run
    is_worker: bool = False


def role_of(config: Any) -> Role:
    """This session's role, read from ``config.workerinput`` (absent outside an xdist worker)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return Role()
    worker_id = str(workerinput.get("workerid", "gw0"))
    digits = worker_id.removeprefix("gw")
    return Role(
        worker_id=worker_id,
        index=int(digits) if digits.isdigit() else 0,
        processes=int(workerinput.get("workercount", 1)),
        is_worker=True,
    )
