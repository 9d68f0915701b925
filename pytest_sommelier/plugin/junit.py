"""Gates (and the verdict) as test cases in ``--junitxml`` output.

Invariant kept: one ``<testcase>`` per gate, named ``<suite>::gates::<gate name>``, failing
exactly when the gate failed, plus ``<suite>::gates::verdict`` failing unless the verdict is
``pass``; nothing is added to the terminal statistics or the exit status (the session sets
that from the verdict).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_sommelier.core.gates import gate_text, threshold_text
from pytest_sommelier.core.types import Verdict


def _logxml(config: pytest.Config) -> Any:
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - pytest moved it; junit output just lacks gates
        return None
    return config.stash.get(xml_key, None)


def _case(xml: Any, nodeid: str, suite: str, passed: bool, message: str, props: list) -> None:
    location = (suite, None, nodeid.rsplit("::", 1)[-1])
    call = pytest.TestReport(
        nodeid,
        location,
        {},
        "passed" if passed else "failed",
        None if passed else message,
        "call",
        user_properties=props,
    )
    teardown = pytest.TestReport(nodeid, location, {}, "passed", None, "teardown")
    xml.pytest_runtest_logreport(call)
    xml.pytest_runtest_logreport(teardown)


def add_gate_cases(config: pytest.Config, suite_nodeid: str, verdict: Verdict) -> None:
    """Report each gate and the verdict to the junitxml plugin, if it is active."""
    xml = _logxml(config)
    if xml is None:
        return
    for gate in verdict["gates"]:
        threshold = threshold_text(gate["threshold"])
        # the terminal's gate line, then the observed number at full precision
        message = (
            f"gate {gate['name']} failed: {gate_text(gate)} "
            f"(observed {gate['observed']!r}; {threshold})"
        )
        if gate.get("evidence"):  # a compare-fail gate: the interval and the flips
            message += f"; {gate['evidence']}"
        _case(
            xml,
            f"{suite_nodeid}::gates::{gate['name']}",
            suite_nodeid,
            bool(gate["passed"]),
            message,
            [("observed", gate["observed"]), ("threshold", threshold)],
        )
    word = "no gates" if verdict["verdict"] == "pass" and not verdict["gates"] else None
    _case(
        xml,
        f"{suite_nodeid}::gates::verdict",
        suite_nodeid,
        verdict["verdict"] == "pass",
        f"verdict: {word or verdict['verdict']} (complete: {verdict['complete']})",
        [("verdict", word or verdict["verdict"])],
    )
