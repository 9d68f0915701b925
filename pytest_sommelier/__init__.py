"""pytest-sommelier: evaluate LoRA tool-calling adapters against their base model in pytest.

The public facade: the version, the generator protocol engines implement (and the
``Completion`` a generator's optional ``generate_completions`` returns), and the error
classes (with their stable ``SOM-...`` codes). Everything else lives in the layers
``core`` <- ``data`` <- ``view`` / ``inference`` <- ``plugin`` (see docs/architecture.md).
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
    from pytest_sommelier.core.types import Completion
    from pytest_sommelier.inference.protocol import Generator

__version__ = VERSION

__all__ = [
    "Completion",
    "EvaluationError",
    "Generator",
    "InputError",
    "InvariantError",
    "SommelierEnvironmentError",
    "SommelierError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """``Generator`` and ``Completion`` on first use: the package (which the pytest entry point
    sits in) imports no layer module when it is loaded."""
    if name == "Generator":
        from pytest_sommelier.inference.protocol import Generator

        return Generator
    if name == "Completion":
        from pytest_sommelier.core.types import Completion

        return Completion
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
