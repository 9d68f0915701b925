"""``[statistics] noise_floor`` and the ``noise_flips`` gate take counts (row R54 of
docs/hardening.md): a noise floor larger than the split, or 2**63, and a ``max = 0.5`` were
accepted, and the gate's count was shown as a signed delta."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_factory import write_suite

from pytest_sommelier.core.gates import gate_text
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.gates import check_gates_against_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import InputError

QUIET = {"name": "quiet", "candidate": "adapter", "reference": "base", "metric": "noise_flips"}


def _loaded(tmp_path: Path, noise: object, gate_max: object = 0) -> None:
    suite_path = write_suite(
        tmp_path, statistics={"noise_floor": noise}, gates=[{**QUIET, "max": gate_max}]
    )
    suite = load_suite(suite_path)
    check_gates_against_split(suite, load_split(suite.test_split, suite.slices))


@pytest.mark.parametrize("noise", [2**63, 100_001])
def test_a_noise_floor_past_its_bound_is_refused_at_load(tmp_path: Path, noise: int) -> None:
    with pytest.raises(InputError) as caught:
        _loaded(tmp_path, noise)
    assert caught.value.code == "SOM-SUITE-INVALID-VALUE"
    assert "'noise_floor'" in str(caught.value) and "[0, 100000]" in str(caught.value)


def test_a_noise_floor_larger_than_the_split_is_refused_at_collection(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        _loaded(tmp_path, 1000)
    assert caught.value.code == "SOM-SUITE-INVALID-VALUE"
    assert "noise_floor' = 1000 is more than the split's" in str(caught.value)
    _loaded(tmp_path, 4)  # within the split: fine


@pytest.mark.parametrize("gate_max", [0.5, True, -1, "0"])
def test_a_noise_flips_gate_takes_a_whole_count(tmp_path: Path, gate_max: object) -> None:
    with pytest.raises(InputError) as caught:
        _loaded(tmp_path, 4, gate_max)
    assert caught.value.code in {"SOM-SUITE-GATE-THRESHOLD", "SOM-SUITE-TYPE"}


def test_the_gate_line_shows_flips_as_a_count() -> None:
    result = {"name": "quiet", "kind": "comparison", "metric": "noise_flips", "slice": "overall",
              "subject": "adapter-vs-base", "threshold": {"max": 0}, "observed": 2.0}  # fmt: skip
    text = gate_text(result)
    assert "flips 2 > 0 (max)" in text and "+2" not in text and "delta" not in text
