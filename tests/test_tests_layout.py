"""The tests mirror the package: a test module lives in the folder of the layer (or the job of
``data/``) it tests, is named by what it tests, and every pytester suite uses the one fake model.

- ``tests/<layer>/`` for ``core``, ``data`` (with ``data/<job>/`` for ``split``, ``suite``,
  ``prepare``, ``store``), ``inference``, ``plugin``, ``view``, ``commands``: each folder is a
  package folder of ``pytest_sommelier``; ``tests/hardening/`` holds the rows of
  docs/hardening.md (faults, bad input, hostile inputs, fuzzing, security), which cross layers
  by design; the project-wide checks (layering, declared imports, docs, moved paths, the
  public API, the reference extension, this file) and the tests of the package's top-level
  modules (``test_registry.py``) stay in ``tests/``, with the check of the property tests'
  budget (``test_property_budget.py``).
- A test module named after a package module (``test_<module>.py``) lives in the folder that
  mirrors the module's place (``tests/core/test_verdict.py`` tests ``core/verdict.py``).
- No module is named by an issue (``issue``, ``part``, a bare number) and basenames are unique
  (pytest's default import mode needs it: the folders have no ``__init__.py``).
- ``def sommelier_model`` appears in one place only, ``tests/fakes.py``: a test that needs a
  different model behaviour says so in its suite's ``script.json``.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "pytest_sommelier"
CROSS_LAYER = {"hardening"}
PROJECT_WIDE = {
    "test_declared_imports.py",
    "test_docs.py",
    "test_layering.py",
    "test_moved.py",
    "test_property_budget.py",  # the property tests' examples per tier (tests/property_budget.py)
    "test_public_api.py",  # docs/api.md's names
    "test_semantic_extension.py",  # the reference extension, examples/sommelier-semantic
    "test_tests_layout.py",
}


def modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_folder_is_a_package_folder_or_the_hardening_matrix() -> None:
    folders = {p.parent.relative_to(TESTS) for p in modules()} - {Path(".")}
    assert folders, "the tests are in folders"
    for folder in folders:
        if folder.parts[0] in CROSS_LAYER:
            assert len(folder.parts) == 1, folder
            continue
        assert (PACKAGE / folder / "__init__.py").is_file(), (
            f"tests/{folder} mirrors no package folder of pytest_sommelier"
        )


def test_only_the_project_wide_checks_stay_in_the_tests_folder() -> None:
    """... and the tests of the package's top-level modules (``registry.py``: test_registry)."""
    top = {f"test_{p.stem}.py" for p in PACKAGE.glob("*.py")}
    names = {p.name for p in TESTS.glob("test_*.py")}
    assert names - top - PROJECT_WIDE == set() and PROJECT_WIDE <= names


def test_each_layer_has_its_tests() -> None:
    layers = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    jobs = {p.name for p in (PACKAGE / "data").iterdir() if (p / "__init__.py").is_file()}
    tested = {p.parent.relative_to(TESTS).parts for p in modules()}
    for layer in layers - {"__pycache__"}:
        assert any(parts[:1] == (layer,) for parts in tested), f"no tests/{layer}/"
    for job in jobs - {"schemas", "templates"}:
        assert ("data", job) in tested, f"no tests/data/{job}/"


def test_names_say_what_is_tested_and_are_unique() -> None:
    names = [p.name for p in modules()]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for name in names:
        assert not re.search(r"issue|_part\d|_\d+\.py$", name), name


def test_the_one_fake_model_is_the_only_sommelier_model_override() -> None:
    overriding = sorted(
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("*.py")
        if re.search(r"^\s*def sommelier_model\(", p.read_text(encoding="utf-8"), re.M)
    )
    assert overriding == ["fakes.py"]


def test_a_test_module_imports_other_test_modules_of_its_own_folder_only() -> None:
    """pytest puts a test module's own folder on ``sys.path`` (no ``__init__.py``): importing a
    test module of another folder works only when that folder was collected first."""
    pattern = re.compile(r"^\s*(?:from|import) (test_\w+)", re.M)
    for path in modules():
        for name in pattern.findall(path.read_text(encoding="utf-8")):
            assert (path.parent / f"{name}.py").is_file(), f"{path.relative_to(TESTS)}: {name}"


def package_homes() -> dict[str, set[Path]]:
    """Each module name of ``pytest_sommelier`` and the package folders that hold a module of
    that name (``Path(".")`` for a top-level module such as ``registry.py``)."""
    homes: dict[str, set[Path]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            homes.setdefault(path.stem, set()).add(path.parent.relative_to(PACKAGE))
    return homes


def misplaced(tests: list[Path], homes: dict[str, set[Path]]) -> list[str]:
    """The test modules named after a package module (``test_<module>.py``) that do not live in
    ``tests/<folder of that module>/``: a module's own tests mirror its place in the package."""
    wrong = []
    for path in tests:
        folders = homes.get(path.stem.removeprefix("test_"))
        if folders and path.parent.relative_to(TESTS) not in folders:
            wrong.append(f"tests/{path.relative_to(TESTS)} -> tests/{sorted(folders)[0]}/")
    return wrong


def test_a_modules_own_tests_mirror_its_place_in_the_package() -> None:
    assert misplaced(modules(), package_homes()) == []


def test_the_mirror_rule_names_a_misplaced_module_test() -> None:
    """The rule can fail: a test of ``core/verdict.py`` put under ``tests/data/`` is named."""
    homes = package_homes()
    assert Path("core") in homes["verdict"]
    wrong = misplaced([TESTS / "data" / "test_verdict.py"], homes)
    assert wrong == ["tests/data/test_verdict.py -> tests/core/"]
    assert misplaced([TESTS / "core" / "test_verdict.py"], homes) == []
