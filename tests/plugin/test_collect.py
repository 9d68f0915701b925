"""Collection (``plugin.collect``) imports what collecting needs and nothing more (issue 40):
a ``--collect-only`` session over a suite reads the suite and its split and checks the outputs,
and imports neither numpy nor the statistics, the evaluation pipeline, the run store or a view
(the items' setup and the session finish import them). Checked in a fresh interpreter, the
plugin loaded as its entry point does; the time it costs is measured by
benchmarks/bench_collection.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from suite_factory import write_suite

import pytest_sommelier  # the copy under test: a source tree, or an installed wheel (CI)

pytestmark = pytest.mark.slow

PACKAGE_HOME = Path(pytest_sommelier.__file__).resolve().parent.parent
ENTRY_POINT = "pytest_sommelier.plugin.hooks"
NOT_AT_COLLECTION = (
    "numpy",
    "jinja2",
    "pytest_sommelier.core.intervals",
    "pytest_sommelier.core.stats",
    "pytest_sommelier.core.pipeline",
    "pytest_sommelier.core.report_blocks",
    "pytest_sommelier.data.store.history",
    "pytest_sommelier.view",
)
PROBE = """
import json, sys
import pytest
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "{entry}", "suite"])
print(json.dumps([code, sorted(sys.modules)]))
"""


def test_collecting_a_suite_imports_no_statistics_pipeline_store_or_view(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite")
    env = {**os.environ, "PYTHONPATH": str(PACKAGE_HOME), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=ENTRY_POINT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("["), done.stdout + done.stderr
    code, modules = json.loads(lines[-1])
    assert code == 0, done.stdout
    assert "sommelier.toml::adapter::en::en-0" in done.stdout
    assert "pytest_sommelier.plugin.collect" in modules
    assert "pytest_sommelier.data.split.load" in modules
    imported = [
        name
        for name in modules
        if any(name == heavy or name.startswith(heavy + ".") for heavy in NOT_AT_COLLECTION)
    ]
    assert imported == []
