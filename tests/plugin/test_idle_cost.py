"""The plugin is free when idle (issue 16): loading its entry point, and a whole pytest session
that collects no suite, import no layer module and none of numpy, jsonschema or jinja2.

Each check runs in a fresh interpreter (``sys.modules`` of this test process holds everything
already). The session loads the plugin the way the ``pytest11`` entry point does (``-p`` with
the module the entry point names; autoloading is off so only this module is loaded), uses
options from the command line and from the ini file (so they are registered and their twins
read), and must pass its one test. The time it costs is measured by benchmarks/bench_idle.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_sommelier  # the copy under test: a source tree, or an installed wheel (CI)

pytestmark = pytest.mark.slow

PACKAGE_HOME = Path(pytest_sommelier.__file__).resolve().parent.parent
ENTRY_POINT = "pytest_sommelier.plugin.hooks"
THIRD_PARTY = ("numpy", "jsonschema", "jinja2", "torch", "transformers")
LAYERS = ("pytest_sommelier.core", "pytest_sommelier.data", "pytest_sommelier.inference")

PROBE = """
import json, sys
{body}
print(json.dumps(sorted(sys.modules)))
"""


def modules_after(body: str, cwd: Path) -> tuple[int, list[str], str]:
    """Run ``body`` in a fresh interpreter; the modules it left imported and its output."""
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_HOME), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(body=body)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    modules = json.loads(lines[-1]) if lines and lines[-1].startswith("[") else []
    return done.returncode, modules, done.stdout + done.stderr


def heavy(modules: list[str]) -> list[str]:
    """The modules the idle plugin must not import."""
    return [
        name
        for name in modules
        if name.split(".")[0] in THIRD_PARTY or name.startswith(LAYERS)
    ]


def test_loading_the_entry_point_imports_no_layer(tmp_path: Path) -> None:
    code, modules, output = modules_after(f"import {ENTRY_POINT}", tmp_path)
    assert code == 0, output
    assert ENTRY_POINT in modules
    assert heavy(modules) == []


def test_a_session_without_a_suite_imports_no_layer(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("def test_a():\n    assert 1 + 1 == 2\n")
    ini = "[pytest]\nsommelier_strict = true\nsommelier_misses = 3\n"
    (tmp_path / "pytest.ini").write_text(ini)
    body = (
        "import pytest\n"
        f"code = pytest.main(['-q', '-p', 'no:cacheprovider', '-p', '{ENTRY_POINT}',"
        # an ini key nobody registered would be an error here
        " '-W', 'error::pytest.PytestConfigWarning',"
        " '--sommelier-out', 'out', '--sommelier-gates', 'off', 'test_a.py'])\n"
        "assert code == 0, code\n"
    )
    code, modules, output = modules_after(body, tmp_path)
    assert code == 0 and "1 passed" in output, output
    assert heavy(modules) == []
    # no extension registry is built, so no entry point of sommelier.* is read (issue 29)
    assert "pytest_sommelier.registry" not in modules
    assert "pytest_sommelier.plugin.extensions" not in modules
    assert not (tmp_path / "out").exists()  # no suite ran: no run is written


def test_the_probe_sees_a_layer_when_one_is_imported(tmp_path: Path) -> None:
    # the check itself can fail: a session that collects a suite imports the layers
    code, modules, output = modules_after(
        f"import {ENTRY_POINT}\nimport pytest_sommelier.plugin.session", tmp_path
    )
    assert code == 0, output
    assert "numpy" in modules and any(m.startswith(LAYERS) for m in modules)
