"""``sommelier plan`` on a pilot with selection gates: the gate against the reference sized at
the level adjusted over the K candidates (more pairs than the same claim on one comparison),
the stored form listed as not sized, never a crash."""

from __future__ import annotations

import json

import pytest
from sweep_helpers import BEATS_BASE, STORED, session, sweep

from pytest_sommelier import cli

pytest_plugins = ["pytester"]
PLAIN = {"name": "plain", "candidate": "adapter@200", "reference": "base",
         "metric": "full_call_exact_match", "ci_lower_above": 0.0}  # fmt: skip


def test_plan_sizes_the_selected_candidate_at_the_adjusted_level(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep(pytester, (3, 6, 4), [BEATS_BASE, PLAIN, {**STORED, "stored": "last-any"}])
    _, run_dir = session(pytester, "out")
    capsys.readouterr()
    assert cli.main(["plan", str(run_dir), "--json", "--effect", "0.3"]) == 0
    rows = {row["gate"]: row for row in json.loads(capsys.readouterr().out) if "gate" in row}
    best, plain = rows["best-beats-base"], rows["plain"]
    assert best["comparison"] == "selected(adapter@200)-vs-base"
    assert best["confidence_level"] == pytest.approx(1 - 0.05 / 3)
    assert plain["confidence_level"] == pytest.approx(0.95)
    assert best["pilot_pairs"] == plain["pilot_pairs"] == 24
    assert best["pairs_needed"] > plain["pairs_needed"]
    stored = rows["beats-shipped"]
    assert stored["pairs_needed"] is None and "not sized here" in stored["unavailable"]
    assert cli.main(["plan", str(run_dir), "--effect", "0.3"]) == 0
    assert "selected(adapter@200)-vs-base" in capsys.readouterr().out
