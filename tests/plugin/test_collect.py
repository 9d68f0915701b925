"""Collection (``plugin.collect``) imports what collecting needs and nothing more (issue 40):
a ``--collect-only`` session over a suite reads the suite and its split and checks the outputs,
and imports neither numpy nor the statistics, the evaluation pipeline, the run store or a view
(the items' setup and the session finish import them). Checked in a fresh interpreter, the
plugin loaded as its entry point does; the time it costs is measured by
benchmarks/bench_collection.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_factory import write_suite
from test_idle_cost import ENTRY_POINT, modules_after

pytestmark = pytest.mark.slow

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
COLLECT = (
    "import pytest\n"
    'code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "{entry}", '
    '"suite"])\n'
    "assert code == 0, code"
)


def test_collecting_a_suite_imports_no_statistics_pipeline_store_or_view(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite")
    code, modules, output = modules_after(COLLECT.format(entry=ENTRY_POINT), tmp_path)
    assert code == 0 and modules, output
    assert "sommelier.toml::adapter::en::en-0" in output
    assert "pytest_sommelier.plugin.collect" in modules
    assert "pytest_sommelier.data.split.load" in modules
    imported = [
        name
        for name in modules
        if any(name == heavy or name.startswith(heavy + ".") for heavy in NOT_AT_COLLECTION)
    ]
    assert imported == []
