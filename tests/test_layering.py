"""The package's layers import one way, with no cycles (lazy and TYPE_CHECKING imports included).

core <- data <- inference <- plugin; ``errors`` and ``version`` are dependency-free leaves any
layer may import (both count as the ``errors`` leaf below);
``cli`` and the package ``__init__`` facade sit on top. Each layer may also import a fixed set of
third-party packages (docs/architecture.md, "The dependency rule"); only ``plugin`` imports pytest.
Every import statement anywhere in a module counts, at any depth (function bodies included).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = "pytest_sommelier"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

LAYERS = ("core", "data", "inference", "plugin")
THIRD_PARTY: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "core": frozenset({"numpy"}),
    "data": frozenset({"numpy", "jsonschema", "jinja2", "pyarrow"}),
    "inference": frozenset(
        {"numpy", "jsonschema", "jinja2", "pyarrow", "torch", "transformers", "peft", "gguf",
         "safetensors", "huggingface_hub", "vllm"}
    ),
    "plugin": frozenset(
        {"numpy", "jsonschema", "jinja2", "pyarrow", "torch", "transformers", "peft", "gguf",
         "safetensors", "huggingface_hub", "vllm", "pytest", "_pytest", "xdist"}
    ),
}
INTERNAL: dict[str, frozenset[str]] = {
    "errors": frozenset({"errors"}),
    "core": frozenset({"errors", "core"}),
    "data": frozenset({"errors", "core", "data"}),
    "inference": frozenset({"errors", "core", "data", "inference"}),
    "plugin": frozenset({"errors", "core", "data", "inference", "plugin"}),
}


def module_name(root: Path, path: Path) -> str:
    """Dotted module name of ``path`` inside the package at ``root`` (``__init__`` -> package)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    """``errors``, one of LAYERS, or ``top`` (the facade, ``cli`` and anything else on top)."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] == "version":
        return "errors"
    if len(parts) >= 2 and parts[1] in (*LAYERS, "errors"):
        return parts[1]
    return "top"


def imports_of(root: Path, path: Path, modules: set[str]) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in its body, as (line, absolute dotted name).

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module of the
    package, else ``pkg``; relative imports are resolved against the module's package.
    """
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((node.lineno, candidate if candidate in modules else base))
    return found


def violations(root: Path) -> list[str]:
    """One line per forbidden import and per import cycle among the package's modules."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, path) for path in files}
    graph: dict[str, set[str]] = {}
    problems: list[str] = []
    stdlib = sys.stdlib_module_names
    for path in files:
        name = module_name(root, path)
        layer = layer_of(name)
        edges = graph.setdefault(name, set())
        for line, imported in imports_of(root, path, modules):
            top = imported.split(".")[0]
            where = f"{path.relative_to(root.parent)}:{line}"
            if top == root.name:
                if imported in modules:
                    edges.add(imported)
                if layer == "top":
                    continue
                target = layer_of(imported)
                if target not in INTERNAL[layer]:
                    problems.append(f"{where}: {layer} must not import {imported} ({target})")
            elif top in stdlib or top == "__future__":
                continue
            elif layer != "top" and top not in THIRD_PARTY[layer]:
                problems.append(f"{where}: {layer} must not import third-party {top!r}")
    problems.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph))
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first search (one representative per back edge)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def engine_import_violations(root: Path, engines: set[str]) -> list[str]:
    """One line per import of an engine module by any module of the package: engines are reached
    only through the registry, by module path, so no engine imports another and no shared
    module (the base, the caches, parity, the plugin) depends on one."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, path) for path in files}
    return [
        f"{path.relative_to(root.parent)}:{line}: imports the engine module {imported}"
        for path in files
        for line, imported in imports_of(root, path, modules)
        if imported in engines
    ]


def registered_engine_modules() -> set[str]:
    """The modules the engine registry names (``inference/select_engine.ENGINES``)."""
    from pytest_sommelier.inference.select_engine import ENGINES

    return {spec.partition(":")[0] for spec in ENGINES.values()}


def test_package_layers_import_one_way_without_cycles() -> None:
    assert violations(ROOT) == []


def test_every_module_is_in_a_layer_or_on_top() -> None:
    tops = sorted(
        module_name(ROOT, path) for path in ROOT.rglob("*.py")
        if layer_of(module_name(ROOT, path)) == "top"
    )
    assert tops == ["pytest_sommelier", "pytest_sommelier.cli"]


def test_every_module_is_described_in_the_architecture_doc() -> None:
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.py"))
    assert [m for m in modules if f"`{m}`" not in text] == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / PACKAGE
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "data/__init__.py": "",
                      "plugin/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"core/a.py": "def f():\n    from pytest_sommelier.data import b\n",
          "data/b.py": ""}, "core/a.py:2: core must not import pytest_sommelier.data.b (data)"),
        ({"data/b.py": "import pytest\n"},
         "data/b.py:1: data must not import third-party 'pytest'"),
        ({"core/a.py": "import torch\n"}, "core/a.py:1: core must not import third-party 'torch'"),
        ({"errors.py": "from pytest_sommelier.core import a\n", "core/a.py": ""},
         "errors.py:1: errors must not import pytest_sommelier.core.a (core)"),
        ({"plugin/x.py": "from . import y\n", "plugin/y.py":
          "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import Z\n"},
         "import cycle: pytest_sommelier.plugin.x -> pytest_sommelier.plugin.y -> "
         "pytest_sommelier.plugin.x"),
    ],
)
def test_a_forbidden_import_or_a_cycle_is_reported(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    root = _tree(tmp_path, files)
    found = violations(root)
    assert any(line.endswith(expected) for line in found), found


def test_the_top_may_import_anything_and_layers_may_import_down(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "cli.py": "import pytest\nfrom pytest_sommelier.plugin import p\n",
        "plugin/p.py": "import pytest\nfrom pytest_sommelier.data import d\n",
        "data/d.py": "import jsonschema\nfrom pytest_sommelier.core import c\n",
        "core/c.py": "import json\nimport numpy\nfrom pytest_sommelier import errors\n",
        "errors.py": "import dataclasses\n",
    })
    assert violations(root) == []


def test_no_module_imports_an_engine_module() -> None:
    engines = registered_engine_modules()
    assert len(engines) == 3
    assert engine_import_violations(ROOT, engines) == []


def test_an_engine_importing_another_engine_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "inference/__init__.py": "",
        "inference/base.py": "",
        "inference/one_engine.py": "from pytest_sommelier.inference import base\n",
        "inference/two_engine.py":
            "def f():\n    from pytest_sommelier.inference import one_engine\n",
    })
    engines = {"pytest_sommelier.inference.one_engine", "pytest_sommelier.inference.two_engine"}
    assert [line.split(": ", 1)[1] for line in engine_import_violations(root, engines)] == [
        "imports the engine module pytest_sommelier.inference.one_engine"
    ]
