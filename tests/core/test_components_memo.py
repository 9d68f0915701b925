"""example_components is computed once per distinct record content, and the memo never changes
an answer: JSON values that differ only in type stay different, bad records always raise."""

from __future__ import annotations

import pytest

from pytest_sommelier.core import metrics
from pytest_sommelier.errors import InvariantError

GOLD = {"name": "f", "arguments": {"a": 2}}


def record(arguments: object, status: str = "ok") -> dict:
    parsed = {"name": "f", "arguments": arguments} if status == "ok" else None
    return {"example_id": "x", "parse_status": status, "parsed_call": parsed, "gold_call": GOLD}


@pytest.mark.parametrize("value", [2, "2", 2.0, True, [2], {"v": 2}, None])
def test_memoised_components_equal_the_computed_ones(value: object) -> None:
    rec = record({"a": value})
    assert metrics.example_components(rec) == metrics._example_components(rec)
    assert metrics.example_components(rec) == metrics._example_components(rec)  # from the memo
    exact = metrics.example_components(rec)[metrics.METRIC_NAMES.index("full_call_exact_match")]
    assert exact == ((1, 1) if value == 2 and type(value) is int else (0, 1))


def test_a_bad_record_raises_every_time() -> None:
    bad = {**record({"a": 2}), "parse_status": "no_json"}  # a call with a failure status
    for _ in range(2):
        with pytest.raises(InvariantError):
            metrics.example_components(bad)


def test_each_distinct_record_is_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics._COMPONENTS.clear()
    calls = []
    original = metrics._example_components
    monkeypatch.setattr(
        metrics, "_example_components", lambda r: calls.append(1) or original(r)
    )
    records = [record({"a": i % 3}) for i in range(30)]
    metrics.compute_metrics(records)
    metrics.compute_metrics(records)
    metrics.component_arrays(records)
    assert len(calls) == 3
