"""pytest-sommelier: evaluate LoRA tool-calling adapters against their base model in pytest.

The public facade (docs/api.md): the version, the generator protocol engines implement (and
the ``Completion`` a generator's optional ``generate_completions`` returns, the
``EngineLoader`` signature), the extension contracts (``Scorer``; ``Importer`` with its
``Candidate`` and ``Skip``), and the error classes (with their stable ``SOM-...`` codes).
Everything else lives in the layers ``core`` <- ``data`` <- ``view`` / ``inference`` <-
``plugin`` (see docs/architecture.md).
"""

from typing import TYPE_CHECKING, Any

from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
    SommelierError,
)
from pytest_sommelier.moved import install as _install_moved
from pytest_sommelier.version import VERSION

_install_moved()  # the 0.3 import paths of modules that moved in 0.4 (moved.MOVED)

if TYPE_CHECKING:
    from pytest_sommelier.core.scorers import Scorer
    from pytest_sommelier.core.types import Completion
    from pytest_sommelier.data.prepare.importers.common import Candidate, Importer, Skip
    from pytest_sommelier.inference.protocol import EngineLoader, Generator

__version__ = VERSION

PUBLIC: dict[str, str] = {
    "Generator": "pytest_sommelier.inference.protocol",
    "EngineLoader": "pytest_sommelier.inference.protocol",
    "Completion": "pytest_sommelier.core.types",
    "Scorer": "pytest_sommelier.core.scorers",
    "Importer": "pytest_sommelier.data.prepare.importers.common",
    "Candidate": "pytest_sommelier.data.prepare.importers.common",
    "Skip": "pytest_sommelier.data.prepare.importers.common",
}
"""The public names imported on first use (docs/api.md), and the module each lives in."""

__all__ = [
    "Candidate",
    "Completion",
    "EngineLoader",
    "EvaluationError",
    "Generator",
    "Importer",
    "InputError",
    "InvariantError",
    "Scorer",
    "Skip",
    "SommelierEnvironmentError",
    "SommelierError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """The names of :data:`PUBLIC` on first use: the package (which the pytest entry point sits
    in) imports no layer module when it is loaded."""
    module = PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
