"""What the callback remembers across ``resume_from_checkpoint``: read back from the run store.

A resumed ``Trainer`` calls ``on_train_begin`` with ``state.global_step`` at the checkpoint it
resumed from (N > 0). The callback's memory (the previous checkpoint's records, the stop
rule's best checkpoint, its count of evaluations without a gain, and so an earlier stop) is a
function of the checkpoints this training run evaluated up to step N, which the store holds:
:func:`training_runs` finds them, :func:`replayed` reads each one's records back through the
store's own reader (``data.store.history_verdict.read_inputs``, re-derived by
``core.pipeline.derive_side``) and the callback replays its rule over them, so the resumed
callback decides exactly as an uninterrupted one would.

This training run's checkpoints: the newest complete stored run of the suite and trained arm
at step N, then the runs stored before it whose steps fall strictly, one by one (a step that
does not fall is an earlier training run in the same store). Nothing at step N (no store, a
checkpoint that was never evaluated) means a fresh start.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_sommelier.core.pipeline import derive_side
from pytest_sommelier.core.selection import flat
from pytest_sommelier.core.types import ScoringRecord
from pytest_sommelier.data.store.history import StoredRun, stored_runs
from pytest_sommelier.data.store.history_verdict import read_inputs


def training_runs(store: Path, suite: str, arm: str, step: int) -> list[StoredRun]:
    """This training run's stored checkpoints up to ``step``, oldest first (module
    docstring); [] when the store holds no complete run of ``arm`` at ``step``."""
    runs = [
        run
        for run in stored_runs(store, suite=suite)
        if isinstance(run.entry.get("training"), dict)
        and run.entry["training"].get("arm") == arm
        and run.entry.get("complete") is True
    ]
    at = [i for i, run in enumerate(runs) if run.entry["training"].get("step") == step]
    if not at:
        return []
    chain = [runs[at[-1]]]
    for run in reversed(runs[: at[-1]]):
        if int(run.entry["training"]["step"]) >= int(chain[-1].entry["training"]["step"]):
            break
        chain.append(run)
    return list(reversed(chain))


def replayed(runs: Sequence[StoredRun], arm: str) -> list[tuple[int, list[ScoringRecord]]]:
    """Each run's step and its ``arm``'s scoring records (slice order, then split order, as
    the callback keeps them), re-derived from the stored files."""
    out = []
    for run in runs:
        scored = derive_side(run, read_inputs(run))
        out.append((int(run.entry["training"]["step"]), flat(scored.scoring.get(arm, {}))))
    return out


__all__ = ["replayed", "training_runs"]
