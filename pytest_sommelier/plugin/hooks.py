"""pytest-sommelier's pytest entry point: options and hook wiring only.

Everything else lives in its own module: collection (``collect``), the per-process runner
(``runner``), aggregation and the session finish (``session``), the fixture (``fixture``),
xdist scheduling (``scheduling``).

Invariant kept: the plugin is free when idle. This module, and what it imports at load
(``keys``, ``role``, ``settings``, ``fixture``), import only pytest and the standard library;
collection, the session aggregator and with them ``core``, ``data``, ``inference``, numpy,
jsonschema and jinja2 are imported when a ``sommelier.toml`` is collected or a suite item
reports (tests/plugin/test_idle_cost.py, benchmarks/bench_idle.py); collecting imports what
reading the suite and its split needs, never numpy, the statistics, the pipeline, the store or
a view (tests/plugin/test_collect.py, benchmarks/bench_collection.py).
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.plugin.fixture import sommelier_model
from pytest_sommelier.plugin.keys import RESULT_KEY, SUITE_FILENAME, suite_nodeid
from pytest_sommelier.plugin.settings import add_options, configure_settings

if TYPE_CHECKING:
    from pytest_sommelier.plugin.session import SommelierSession

__all__ = ["sommelier_model"]


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The extension hooks (``plugin.hookspec``; docs/extending.md)."""
    from pytest_sommelier.plugin import hookspec

    pluginmanager.add_hookspecs(hookspec)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_report_collectionfinish(config: pytest.Config) -> str | None:
    """The extensions the collected suites use, on one line after collection (the entry
    points are read only when a suite is collected, so the header before it cannot). A run
    that collected no suite never imported ``plugin.extensions``, and does not now."""
    if "pytest_sommelier.plugin.extensions" not in sys.modules:
        return None
    from pytest_sommelier.plugin.extensions import SHOWN_KEY, loaded_line

    line = loaded_line(config)
    config.stash[SHOWN_KEY] = line is not None
    return line


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "eval: one evaluated example of a sommelier suite (select with -m eval)"
    )
    configure_settings(config)
    config.pluginmanager.register(SuiteReports(config), "sommelier-session")


class SuiteReports:
    """Hands every suite item's report to the session aggregator, created on the first one
    (on the xdist controller too, which collects nothing), and forwards the session finish and
    the terminal summary to it: a run without a suite never imports the aggregator."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: SommelierSession | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if suite_nodeid(report.nodeid) is None:
            return
        if self.session is None:
            from pytest_sommelier.plugin.session import SommelierSession

            self.session = SommelierSession(self.config)
        self.session.record(report)

    @pytest.hookimpl(tryfirst=True)  # before junitxml writes its file (gates become test cases)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.session is None:
            return
        self.session.pytest_session = session
        forced = self.session.finish()
        if forced is not None and session.exitstatus == 0:
            session.exitstatus = forced

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        if self.session is not None:
            self.session.summary(terminalreporter)
            from pytest_sommelier.plugin.extensions import SHOWN_KEY, loaded_line

            line = loaded_line(self.config)
            if line is not None and not self.config.stash.get(SHOWN_KEY, False):
                terminalreporter.write_line(line)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == SUITE_FILENAME:
        from pytest_sommelier.plugin.collect import SuiteFile

        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, Any]:
    report = yield
    payload = item.stash.get(RESULT_KEY, None)
    if call.when == "call" and payload is not None:
        report.sommelier = payload
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    record = getattr(report, "sommelier", None)
    if report.when == "call" and report.passed and record is not None and not record["hit"]:
        return "missed", "m", ("MISS", {"yellow": True})
    return None


@pytest.hookimpl(optionalhook=True)  # only exists when pytest-xdist is loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from pytest_sommelier.plugin.scheduling import make_scheduler

    return make_scheduler(config, log)
