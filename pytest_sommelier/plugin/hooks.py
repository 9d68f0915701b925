"""pytest-sommelier's pytest entry point: options and hook wiring only.

Everything else lives in its own module: collection (``collect``), the per-process runner
(``runner``), aggregation and the session finish (``session``), the fixture (``fixture``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_sommelier.plugin.collect import RESULT_KEY, SUITE_FILENAME, SuiteFile
from pytest_sommelier.plugin.fixture import sommelier_model
from pytest_sommelier.plugin.session import SESSION_KEY, SommelierSession
from pytest_sommelier.plugin.settings import add_options, configure_settings

__all__ = ["sommelier_model"]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "eval: one evaluated example of a sommelier suite (select with -m eval)"
    )
    configure_settings(config)
    sommelier = SommelierSession(config)
    config.stash[SESSION_KEY] = sommelier
    # the session object receives pytest_runtest_logreport (as pytest-benchmark's does)
    config.pluginmanager.register(sommelier, "sommelier-session")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name == SUITE_FILENAME:
        return SuiteFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
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


@pytest.hookimpl(tryfirst=True)  # before junitxml writes its file (gates become test cases)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    sommelier = session.config.stash.get(SESSION_KEY, None)
    if sommelier is None:
        return
    forced = sommelier.finish()
    if forced is not None and session.exitstatus == 0:
        session.exitstatus = forced


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    sommelier = config.stash.get(SESSION_KEY, None)
    if sommelier is not None:
        sommelier.summary(terminalreporter)
