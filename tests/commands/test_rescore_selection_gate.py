"""``sommelier rescore`` of a run with a selection gate: the same verdict as the session, from
the run's own resolved suite (which records its ``[selection]``), under ``--suite``, and for
the stored form against the store."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sweep_helpers import BEATS_BASE, STORED, gate_of, session, sweep

from pytest_sommelier.cli import main

pytest_plugins = ["pytester"]
KEPT = ("passed", "subject", "observed", "estimate", "interval", "selection", "reason")


def judged(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: entry.get(key) for key in KEPT}


@pytest.mark.parametrize("counts", [(8, 20, 12), (3, 6, 4)], ids=["passes", "fails"])
def test_rescore_gives_the_sessions_verdict(
    pytester: pytest.Pytester, counts: tuple[int, int, int]
) -> None:
    suite = sweep(pytester, counts, [BEATS_BASE])
    result, run_dir = session(pytester, "out")
    held = gate_of(run_dir, "best-beats-base")
    resolved = json.loads((run_dir / "suite.resolved.json").read_text(encoding="utf-8"))
    assert resolved["selection"]["candidates"] == ["adapter@100", "adapter@200", "adapter@300"]
    own, again = pytester.path / "own", pytester.path / "again"
    assert main(["rescore", str(run_dir), "--out", str(own)]) == result.ret
    assert main(["rescore", str(run_dir), "--suite", str(suite), "--out", str(again)]) == (
        result.ret
    )
    for folder in (own, again):
        assert judged(gate_of(folder, "best-beats-base")) == judged(held)


def test_rescore_judges_the_stored_form_against_the_store(pytester: pytest.Pytester) -> None:
    sweep(pytester, (3, 6, 4), [])
    session(pytester, "one", "--sommelier-autosave", "--sommelier-label", "shipped")
    sweep(pytester, (10, 12, 24), [STORED])
    result, two = session(pytester, "two")
    held = gate_of(two, "beats-shipped")
    assert result.ret == 0 and held["passed"] is True
    again = pytester.path / "again"
    store = pytester.path / ".sommelier"
    assert main(["rescore", str(two), "--out", str(again), "--store", str(store)]) == 0
    assert judged(gate_of(again, "beats-shipped")) == judged(held)
    # the stored run's selection.json goes through the store's validating reader: edited, the
    # gate fails with its one line (never a traceback, never a pass)
    (stored,) = [p for p in store.iterdir() if p.is_dir() and (p / "report").is_dir()]
    selection = stored / "report" / "selection.json"
    block = json.loads(selection.read_text(encoding="utf-8"))
    selection.write_text(json.dumps({**block, "selected": 7}), encoding="utf-8")
    edited = pytester.path / "edited"
    assert main(["rescore", str(two), "--out", str(edited), "--store", str(store)]) == 1
    entry = gate_of(edited, "beats-shipped")
    assert entry["passed"] is False and "SOM-STORED-FIELD" in entry["reason"]
    assert "selected" in entry["reason"] and "\n" not in entry["reason"]


