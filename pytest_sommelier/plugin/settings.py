"""The plugin's command-line and ini options, and how they are read.

Invariant kept: every ``--sommelier-*`` option (except the repeatable ``--sommelier-baseline``)
has an ini twin of the same name (``sommelier_out``, ...); the command line wins.
"""

from __future__ import annotations

from typing import Any

import pytest

OPTIONS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "--sommelier-out",
        {"dest": "sommelier_out", "metavar": "DIR", "default": None},
        "run directory for artifacts (default: runs/<run_id>)",
        "string",
    ),
    (
        "--sommelier-strict",
        {"dest": "sommelier_strict", "action": "store_true", "default": None},
        "make every non-exact example a failure (must-pass suites, --lf drilldown)",
        "bool",
    ),
    (
        "--sommelier-misses",
        {"dest": "sommelier_misses", "metavar": "N", "type": int, "default": None},
        "how many misses the terminal drilldown shows (default 10; 0 for none)",
        "string",
    ),
    (
        "--sommelier-gates",
        {"dest": "sommelier_gates", "choices": ["on", "off"], "default": None},
        "evaluate gates and write the verdict (on, default) or not (off: drilldown runs)",
        "string",
    ),
    (
        "--sommelier-baseline",
        {"dest": "sommelier_baseline", "metavar": "[ARM=]DIR", "action": "append", "default": None},
        "use a stored arm folder of an earlier run (runs/<id>/eval/<arm>) instead of "
        "generating that arm; repeatable",
        "",
    ),
    (
        "--sommelier-timeout",
        {"dest": "sommelier_timeout", "metavar": "SECONDS", "type": float, "default": None},
        "per-batch generation timeout; a batch that does not return in time is an error "
        "for its items and the arm's later batches (default: none)",
        "string",
    ),
    (
        "--sommelier-selfcheck",
        {"dest": "sommelier_selfcheck", "metavar": "N", "type": int, "default": None},
        "determinism self-check: regenerate the first N examples of each arm (per process) "
        "at batch size 1 and record how many outputs differ in the telemetry (default 0)",
        "string",
    ),
    (
        "--sommelier-cache-dir",
        {"dest": "sommelier_cache_dir", "metavar": "DIR", "default": None},
        "generation cache folder (default: .pytest_cache/d/sommelier-generations)",
        "string",
    ),
    (
        "--sommelier-no-cache",
        {"dest": "sommelier_no_cache", "action": "store_true", "default": None},
        "do not read or write the generation cache",
        "bool",
    ),
]


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one ``sommelier`` group of ``pytest --help``."""
    group = parser.getgroup("sommelier", "pytest-sommelier (tool-call adapter evaluation)")
    for flag, kwargs, help_text, ini_type in OPTIONS:
        group.addoption(flag, help=help_text, **kwargs)
        if ini_type:
            parser.addini(kwargs["dest"], help=help_text, type=ini_type, default=None)  # type: ignore[arg-type]


def option(config: pytest.Config, name: str) -> Any:
    """A sommelier option: the command line wins, then the ini file."""
    value = config.getoption(name)
    return value if value is not None else config.getini(name)


def _number(config: pytest.Config, name: str, kind: type, *, positive: bool) -> None:
    value = option(config, name)
    if value is None or value == "":
        return
    flag = "--" + name.replace("_", "-")
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {flag} / ini {name}: {value!r} is not a "
            f"{'number' if kind is float else 'whole number'}"
        ) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise pytest.UsageError(f"SOM-OPTION-VALUE: {flag} / ini {name}: {value!r} is not finite")
    if (positive and number <= 0) or number < 0:
        bound = "greater than 0" if positive else "0 or more"
        raise pytest.UsageError(f"SOM-OPTION-VALUE: {flag} / ini {name}: {value!r} must be {bound}")


def validate(config: pytest.Config) -> None:
    """Refuse bad option values (command line or ini) before anything runs: a usage error
    naming the option, never a crash halfway through a session."""
    gates = option(config, "sommelier_gates")
    if gates not in (None, "", "on", "off"):
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: --sommelier-gates / ini sommelier_gates: {gates!r} is not on or off"
        )
    _number(config, "sommelier_misses", int, positive=False)
    _number(config, "sommelier_selfcheck", int, positive=False)
    _number(config, "sommelier_timeout", float, positive=True)
