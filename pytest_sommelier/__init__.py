"""pytest-sommelier: evaluate LoRA tool-calling adapters against their base model in pytest.

The public facade: the version, the generator protocol engines implement, and the error
classes (with their stable ``SOM-...`` codes). Everything else lives in the layers
``core`` <- ``data`` <- ``inference`` <- ``plugin`` (see docs/architecture.md).
"""

from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
    SommelierError,
)
from pytest_sommelier.inference.protocol import Generator

__version__ = "0.1.0"

__all__ = [
    "EvaluationError",
    "Generator",
    "InputError",
    "InvariantError",
    "SommelierEnvironmentError",
    "SommelierError",
    "__version__",
]
