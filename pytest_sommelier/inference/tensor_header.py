"""A safetensors file's header read alone: the tensors it declares (name, dtype, shape), never
the data after it. The adapter preflight (``inference.preflight``) reads adapters and bases
through it.

Invariants kept: at most the 8-byte length and ``HEADER_LENGTH_LIMIT`` bytes of JSON are read;
a short, oversized, non-JSON or malformed header is one ``SOM-ADAPTER-HEADER`` line naming the
file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_sommelier.errors import InputError

HEADER_LENGTH_LIMIT = 100_000_000
"""The largest safetensors header accepted (the safetensors library's own limit)."""


@dataclass(frozen=True)
class TensorHeader:
    """One tensor's entry in a safetensors header: its dtype and its shape."""

    dtype: str
    shape: tuple[int, ...]


def read_safetensors_header(path: Path) -> dict[str, TensorHeader]:
    """The tensors a safetensors file declares, from its header alone.

    Reads the 8-byte little-endian header length and that many bytes of JSON, never the data
    that follows; ``__metadata__`` is left out. A header that is short, too long, not a JSON
    object or whose entries lack a dtype or an integer shape is an InputError naming the file.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            prefix = handle.read(8)
            length = int.from_bytes(prefix, "little") if len(prefix) == 8 else -1
            if not 0 < length <= min(HEADER_LENGTH_LIMIT, size - 8):
                raise _bad_header(path, f"header length {length} does not fit a {size}-byte file")
            raw = handle.read(length)
    except OSError as exc:
        raise _bad_header(path, f"cannot be read: {type(exc).__name__}") from exc
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad_header(path, "header is not JSON") from exc
    if not isinstance(header, dict):
        raise _bad_header(path, "header is not a JSON object")
    tensors: dict[str, TensorHeader] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = entry.get("shape") if isinstance(entry, dict) else None
        dtype = entry.get("dtype") if isinstance(entry, dict) else None
        if not isinstance(dtype, str) or not isinstance(shape, list):
            raise _bad_header(path, f"tensor {name!r} has no dtype or shape")
        if not all(type(dim) is int and dim >= 0 for dim in shape):
            raise _bad_header(path, f"tensor {name!r} has a shape that is not a list of sizes")
        tensors[name] = TensorHeader(dtype, tuple(shape))
    return tensors


def _bad_header(path: Path, detail: str) -> InputError:
    return InputError(
        "SOM-ADAPTER-HEADER",
        f"{path.name} is not a readable safetensors file: {detail}",
        "re-save it with safetensors (save_pretrained(..., safe_serialization=True))",
        where=str(path.parent.name),
    )


__all__ = ["HEADER_LENGTH_LIMIT", "TensorHeader", "read_safetensors_header"]
