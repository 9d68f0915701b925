"""Where a generator runs: the one reading of a generator's device (telemetry and cache keys).

A generator may offer ``device_info()`` returning ``{"device": kind, "device_count": n}``
(every engine of this package does); a custom one may instead carry a ``device`` attribute
(``"cuda:1"``), or say nothing.
"""

from __future__ import annotations

from typing import Any

from pytest_sommelier.core.types import DeviceInfo
from pytest_sommelier.inference.protocol import device_info_of


def device_of(generator: Any) -> DeviceInfo:
    """The device kind (``cpu``, ``cuda``, ...) and device count a generator runs on.

    From its optional ``device_info()``, else from a ``device`` attribute (``"cuda:1"`` ->
    ``cuda``, one device), else ``{"device": "unknown", "device_count": 1}``. Invariant: the
    kind never carries a device index, so two processes on different GPUs of one kind agree.
    """
    data = device_info_of(generator)
    if data is not None:
        return {
            "device": str(data.get("device", "unknown")),
            "device_count": int(data.get("device_count", 1)),
        }
    device = getattr(generator, "device", None)
    kind = "unknown" if device is None else str(device).split(":", 1)[0]
    return {"device": kind, "device_count": 1}
