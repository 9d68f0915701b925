"""The 0.3 import paths of the modules that moved in 0.4 keep working (``pytest_sommelier.moved``):
each old name is the new module object itself, never a second copy, the names the docs give
import from both paths, and each old path warns (``DeprecationWarning``) naming its new path and
the release that removes it."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

from pytest_sommelier.moved import MOVED, REMOVED_IN

DEPRECATED = "ignore:pytest_sommelier.* is deprecated:DeprecationWarning"
"""The aliases' own warning, expected (and checked below) wherever an old path is imported."""


@pytest.mark.filterwarnings(DEPRECATED)
@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_is_the_new_module(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_module_path_warns_naming_its_new_path(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)  # the first import in this process
    pattern = rf"^{re.escape(old)} is deprecated: import {re.escape(new)} \(the old path is "
    with pytest.warns(DeprecationWarning, match=pattern + rf"removed in {REMOVED_IN}\)$"):
        assert importlib.import_module(old) is importlib.import_module(new)


def test_the_new_paths_and_the_package_warn_about_nothing() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import pytest_sommelier.plugin.session, pytest_sommelier.commands.rescore\n"
        "import pytest_sommelier.data.prepare.importers.driver, pytest_sommelier.view.html\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_moved_name_is_a_module_that_no_longer_exists_at_its_old_path() -> None:
    from pathlib import Path

    root = Path(importlib.import_module("pytest_sommelier").__file__).parent  # type: ignore[arg-type]
    for old in MOVED:
        rel = Path(*old.split(".")[1:])
        assert not (root / rel.with_suffix(".py")).exists(), old
        assert not (root / rel / "__init__.py").exists(), old


DOCUMENTED = [
    "from pytest_sommelier.data.suite import load_suite, suite_identity, valid_name, OVERALL",
    "from pytest_sommelier.data.split import load_split, row_gold_call",
    "from pytest_sommelier.data.formatting import format_file, DEFAULT_POLICY",
    "from pytest_sommelier.data.native_policy import POLICY_NATIVE_TOOLS_V1",
    "from pytest_sommelier.data.importers.driver import import_file",
    "from pytest_sommelier.data.view.html import write_report, render_report, build_context",
    "from pytest_sommelier.data.view.terminal import run_summary_lines",
    "from pytest_sommelier.data.view.text import fmt, fmt_interval, table",
    "from pytest_sommelier.data.runread import read_run",
    "from pytest_sommelier.data.references import resolve_pkg_path",
    "from pytest_sommelier.data.digests import sha256_file",
    "from pytest_sommelier.cli import format_split",
    "import pytest_sommelier.data.view.markdown as m; m.comparison_markdown",
]


def test_the_documented_old_imports_work_in_a_fresh_interpreter() -> None:
    script = "\n".join(DOCUMENTED) + (
        "\nimport sys\nimport pytest_sommelier.view.html as new\n"
        "assert sys.modules['pytest_sommelier.data.view.html'] is new\n"
    )
    done = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c", script],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "pytest_sommelier.data.view.html is deprecated: import pytest_sommelier.view.html" in (
        done.stderr
    )


@pytest.mark.filterwarnings(DEPRECATED)
def test_core_reports_keeps_every_public_name_of_its_three_new_homes() -> None:
    # 0.4 split core.reports by job; the 0.3 module stays and re-exports the same objects
    from pytest_sommelier.core import report_blocks, report_comparison, report_identity, reports

    homes = (report_blocks, report_identity, report_comparison)
    for name in reports.__all__:
        found = [home for home in homes if name in vars(home)]
        assert found and getattr(reports, name) is getattr(found[0], name), name
    assert reports.build_evaluation_report.__module__ == "pytest_sommelier.core.report_blocks"
    assert reports.check_identity.__module__ == "pytest_sommelier.core.report_identity"
    assert reports.build_comparison_report.__module__ == "pytest_sommelier.core.report_comparison"
