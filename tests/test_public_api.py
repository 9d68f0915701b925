"""The public API page (docs/api.md) is true: every name it lists imports, the facade's
``__all__`` resolves, and importing the facade imports no layer module."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_sommelier

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def test_every_facade_name_resolves() -> None:
    for name in pytest_sommelier.__all__:
        assert getattr(pytest_sommelier, name) is not None, name
    for name in re.findall(r"^\| `([A-Za-z_]+)`", PAGE, flags=re.M):
        assert name in pytest_sommelier.__all__, name
    with pytest.raises(AttributeError):
        pytest_sommelier.NotAName  # noqa: B018


def dotted_names() -> list[tuple[str, str | None]]:
    """(module, attribute or None) of every ``pytest_sommelier.x.y`` path the page's tables
    give, and of the further names of the same cell (```a.b.c`, `d```: ``d`` in ``a.b``)."""
    found: list[tuple[str, str | None]] = []
    for cell in re.findall(r"^\| (`pytest_sommelier\.[^|]*)\|", PAGE, flags=re.M):
        module = ""
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", cell):
            if not name.startswith("pytest_sommelier."):
                found.append((module, name))
                continue
            try:
                importlib.import_module(name)
            except ImportError:
                module, attribute = name.rsplit(".", 1)
                found.append((module, attribute))
            else:
                module = name
                found.append((module, None))
    return found


def test_every_documented_path_imports() -> None:
    names = dotted_names()
    assert len(names) > 15
    for module, name in names:
        imported = importlib.import_module(module)
        assert name is None or hasattr(imported, name), f"{module}.{name}"


def test_importing_the_facade_imports_no_layer(tmp_path: Path) -> None:
    code = (
        "import json, sys, pytest_sommelier\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pytest_sommelier.'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    modules = json.loads(done.stdout)
    assert [m for m in modules if m.split(".")[1] in ("core", "data", "view", "inference")] == []


def test_the_extension_modules_hold_what_the_page_says() -> None:
    for module in ("pytest_sommelier.hookspec", "pytest_sommelier.registry",
                   "pytest_sommelier.data.prepare.importers.common"):  # fmt: skip
        row = next(line for line in PAGE.splitlines() if line.startswith(f"| `{module}`"))
        names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(kind\))?`", row.split("|")[2])
        assert names, module
        imported = importlib.import_module(module)
        assert [n for n in names if not hasattr(imported, n)] == [], module
