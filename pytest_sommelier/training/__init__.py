"""Training integration: ``SommelierCallback``, the suite evaluated inside a transformers
``Trainer`` at each checkpoint (``training.callback``). This layer sits beside ``plugin``: it
imports ``core``, ``data``, ``view``, ``inference`` and the pytest-free ``plugin.runner``, never
pytest; the package re-exports ``SommelierCallback``."""

from pytest_sommelier.training.callback import SommelierCallback

__all__ = ["SommelierCallback"]
