"""Training integration: ``SommelierCallback``, the suite evaluated inside a transformers
``Trainer`` at each checkpoint (``training.callback``), and ``load_base``, the suite's base
loaded for training and named so that its adapters name the suite's base
(``training.base``). This layer sits beside ``plugin``: it imports ``core``, ``data``,
``view``, ``inference`` and the pytest-free ``plugin.runner``, never pytest; the package
re-exports ``SommelierCallback`` and ``load_base``."""

from pytest_sommelier.training.base import load_base
from pytest_sommelier.training.callback import SommelierCallback

__all__ = ["SommelierCallback", "load_base"]
