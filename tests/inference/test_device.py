"""inference.device.device_of: the one reading of where a generator runs."""

from __future__ import annotations

from typing import Any

from pytest_sommelier.inference.device import device_of


class WithInfo:
    def device_info(self) -> dict[str, Any]:
        return {"device": "cuda", "device_count": 2}


class WithAttribute:
    device = "cuda:1"


def test_device_info_wins_then_the_attribute_then_unknown() -> None:
    assert device_of(WithInfo()) == {"device": "cuda", "device_count": 2}
    assert device_of(WithAttribute()) == {"device": "cuda", "device_count": 1}
    assert device_of(object()) == {"device": "unknown", "device_count": 1}


def test_missing_info_fields_default() -> None:
    class Partial:
        def device_info(self) -> dict[str, Any]:
            return {}

    assert device_of(Partial()) == {"device": "unknown", "device_count": 1}
