"""What an evaluation inside a training loop must leave as it found it.

:func:`evaluation_mode` puts a model in eval mode under ``torch.no_grad()`` for the duration of
an evaluation and, whatever happens inside (an error included), restores exactly what it
recorded on entry: every module's ``training`` flag (not just the root's: a frozen submodule
kept in eval mode stays so), every parameter's ``requires_grad``, the global grad mode, and the
random number generators training draws from (Python's ``random``, numpy's global generator,
torch's CPU generator and, when CUDA is initialised, every CUDA device's). Parameters and their
``.grad`` tensors are never written: generation runs without gradients. So a training run
with the callback draws the same dropout masks and data order, and ends with the same weights,
as one without it (tests/training/test_training_callback.py checks both).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TrainingState:
    """The recorded state of a model and the process's generators (see the module docstring)."""

    modes: tuple[tuple[Any, bool], ...]
    requires_grad: tuple[tuple[Any, bool], ...]
    grad_enabled: bool
    python_rng: Any
    numpy_rng: Any
    torch_rng: Any
    cuda_rng: Any


def capture(model: Any) -> TrainingState:
    """The state :func:`restore` puts back."""
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return TrainingState(
        modes=tuple((module, bool(module.training)) for module in model.modules()),
        requires_grad=tuple((p, bool(p.requires_grad)) for p in model.parameters()),
        grad_enabled=torch.is_grad_enabled(),
        python_rng=random.getstate(),
        numpy_rng=np.random.get_state(),
        torch_rng=torch.random.get_rng_state(),
        cuda_rng=cuda,
    )


def restore(state: TrainingState) -> None:
    """Put back every recorded mode flag, ``requires_grad``, the grad mode and the generators."""
    import torch

    for module, training in state.modes:
        module.training = training  # this module's own flag (``train()`` would recurse)
    for parameter, wanted in state.requires_grad:
        if parameter.requires_grad != wanted:
            parameter.requires_grad_(wanted)
    torch.set_grad_enabled(state.grad_enabled)
    random.setstate(state.python_rng)
    np.random.set_state(state.numpy_rng)
    torch.random.set_rng_state(state.torch_rng)
    if state.cuda_rng is not None:
        torch.cuda.set_rng_state_all(state.cuda_rng)


@contextmanager
def evaluation_mode(model: Any) -> Iterator[TrainingState]:
    """``model.eval()`` under ``torch.no_grad()`` inside; on exit (normal or not) the state
    recorded on entry, exactly (:func:`restore`)."""
    import torch

    state = capture(model)
    try:
        model.eval()
        with torch.no_grad():
            yield state
    finally:
        restore(state)


__all__ = ["TrainingState", "capture", "evaluation_mode", "restore"]
