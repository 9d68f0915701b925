"""The hook specification of pytest-sommelier's extensions (docs/extending.md): the documented
path of ``pytest_sommelier.plugin.hookspec``, whose hooks it re-exports."""

from pytest_sommelier.plugin.hookspec import (
    pytest_sommelier_add_engines,
    pytest_sommelier_add_importers,
    pytest_sommelier_add_scorers,
    pytest_sommelier_model_identity,
    pytest_sommelier_run_written,
    pytest_sommelier_verdict,
)

__all__ = [
    "pytest_sommelier_add_engines",
    "pytest_sommelier_add_importers",
    "pytest_sommelier_add_scorers",
    "pytest_sommelier_model_identity",
    "pytest_sommelier_run_written",
    "pytest_sommelier_verdict",
]
