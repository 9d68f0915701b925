"""Every third-party module the project's own code imports is declared (issue 24).

The package's runtime imports must be in ``[project] dependencies`` or an extra; what
``tests/``, ``benchmarks/``, ``tools/``, ``scripts/``, ``examples/`` and the root
``conftest.py`` import must be in an extra (or a runtime dependency). A package installed by
hand on a developer's machine hides a missing declaration from CI's old environment; this test
reads the imports with ``ast`` and the declarations from ``pyproject.toml``, so a new
undeclared import fails the fast tier, not a user.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from source_trees import parsed

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("tests", "benchmarks", "tools", "scripts", "examples")


def normalized(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution a PEP 508 requirement string names."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return normalized(match.group(1))


def declared() -> tuple[set[str], set[str]]:
    """(runtime dependencies, runtime dependencies and every extra), normalized."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = {requirement_name(r) for r in project["dependencies"]}
    extras = {
        requirement_name(r)
        for reqs in project.get("optional-dependencies", {}).values()
        for r in reqs
        if not r.startswith("pytest-sommelier")
    }
    return runtime, runtime | extras


def top_level_imports(path: Path) -> dict[str, int]:
    """Top-level module name -> first line, of every absolute import anywhere in ``path``."""
    found: dict[str, int] = {}
    for node in ast.walk(parsed(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            found.setdefault(name.split(".")[0], node.lineno)
    return found


def third_party(files: list[Path]) -> dict[str, str]:
    """Top-level module -> where it is first imported, for every module that is neither the
    standard library, the package itself, nor a module of the project's own folders."""
    local = {p.stem for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")}
    local |= {"pytest_sommelier", "conftest"}
    result: dict[str, str] = {}
    for path in files:
        for module, line in top_level_imports(path).items():
            if module in sys.stdlib_module_names or module in local or module == "__future__":
                continue
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            result.setdefault(module, f"{shown}:{line}")
    return result


@functools.cache
def module_distributions() -> dict[str, list[str]]:
    """``importlib.metadata.packages_distributions()``, read once: it reads every installed
    distribution's file list, which each module's lookup paid again before (issue 40)."""
    return importlib.metadata.packages_distributions()


def distributions_of(module: str) -> set[str]:
    """The installed distributions that provide top-level module ``module``."""
    return {normalized(d) for d in module_distributions().get(module, [])}


def undeclared(imports: dict[str, str], allowed: set[str]) -> list[str]:
    problems = []
    for module, where in sorted(imports.items()):
        dists = distributions_of(module)
        if not dists:
            problems.append(f"{where}: imports {module!r}, which no installed distribution has")
        elif not dists & allowed:
            problems.append(f"{where}: imports {module!r} ({', '.join(sorted(dists))}), undeclared")
    return problems


def project_files() -> list[Path]:
    files = [ROOT / "conftest.py"]
    for folder in FOLDERS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return files


# imported only under the vllm extra's own environment (scripts/engines.sh): not installed in
# the main environment, declared in the ``vllm`` extra; and the ``train`` extra's, which CI's
# lowest job leaves out (trl needs a newer transformers than the lowest supported)
NOT_INSTALLED_HERE = {"vllm": "vllm", "trl": "trl", "datasets": "datasets"}


def checked_imports(files: list[Path], allowed: set[str]) -> dict[str, str]:
    """``third_party(files)`` less the modules of NOT_INSTALLED_HERE whose distribution is
    declared (they cannot be mapped to an installed distribution here)."""
    return {
        m: w
        for m, w in third_party(files).items()
        if not (m in NOT_INSTALLED_HERE and NOT_INSTALLED_HERE[m] in allowed)
    }


def test_every_test_tool_and_benchmark_import_is_declared() -> None:
    _, allowed = declared()
    assert undeclared(checked_imports(project_files(), allowed), allowed) == []


def test_every_package_import_is_a_runtime_dependency_or_an_extra() -> None:
    runtime, allowed = declared()
    imports = checked_imports(sorted((ROOT / "pytest_sommelier").rglob("*.py")), allowed)
    # optional engines and formats are extras; everything else must be a runtime dependency
    optional = {"vllm", "pyarrow"}
    assert undeclared({m: w for m, w in imports.items() if m not in optional}, runtime) == []
    assert undeclared({m: w for m, w in imports.items() if m in optional}, allowed) == []


def test_the_check_fails_on_an_undeclared_import(tmp_path: Path) -> None:
    """The rule can fail: an installed but undeclared distribution is named with its line."""
    script = tmp_path / "bench_x.py"
    script.write_text("import json\nimport pluggy\n\nfrom hypothesis import given\n")
    imports = third_party([script])
    assert imports == {"pluggy": f"{script}:2", "hypothesis": f"{script}:4"}
    assert undeclared(imports, {"hypothesis"}) == [
        f"{script}:2: imports 'pluggy' (pluggy), undeclared"
    ]
    assert undeclared({"no_such_module_x": "a.py:1"}, {"x"}) == [
        "a.py:1: imports 'no_such_module_x', which no installed distribution has"
    ]


@pytest.mark.parametrize(
    ("requirement", "name"),
    [
        ("pytest>=8.0", "pytest"),
        ("Jinja2 >= 3.1", "jinja2"),
        ("pytest_xdist[psutil]", "pytest-xdist"),
    ],
)
def test_requirement_names(requirement: str, name: str) -> None:
    assert requirement_name(requirement) == name


def lower_bounds() -> dict[str, str]:
    """Distribution -> the version of its ``>=`` bound, over dependencies and extras."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    requirements += [r for reqs in project["optional-dependencies"].values() for r in reqs]
    bounds = {}
    for requirement in requirements:
        match = re.search(r">=\s*([0-9][0-9.]*)", requirement)
        if match:
            bounds[requirement_name(requirement)] = match.group(1)
    return bounds


def padded(version: str) -> tuple[int, ...]:
    """``4.21`` and ``4.21.0`` compare equal."""
    parts = [int(p) for p in version.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def test_the_lowest_versions_file_pins_exactly_the_lower_bounds() -> None:
    """requirements/lowest.txt (CI's lowest job) pins each tested package at its declared
    lower bound, so the declared window is the tested one (torch aside: one CPU build)."""
    pins = {}
    for line in (ROOT / "requirements" / "lowest.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[normalized(name)] = version.strip()
    bounds = lower_bounds()
    assert pins, "no pins"
    for name, version in pins.items():
        assert name in bounds, f"{name} is pinned but has no lower bound"
        assert padded(version) == padded(bounds[name]), (name, version, bounds[name])
    tested = {"pytest", "pytest-xdist", "transformers", "peft", "numpy", "jsonschema"}
    assert tested <= set(pins)
