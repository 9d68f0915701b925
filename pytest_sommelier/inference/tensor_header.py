"""A safetensors file's header read alone: the tensors it declares (name, dtype, shape), never
the data after it. The adapter preflight (``inference.preflight``) reads adapters and bases
through it.

Invariants kept: at most the 8-byte length and ``HEADER_LENGTH_LIMIT`` bytes of JSON are read,
decoded by the one bounded JSON reader (``data.json_input.strict_json``: a header nested 100,000
deep is a refusal, not a ``RecursionError``); a header is accepted only when the safetensors
library would open it (its format rules: a known dtype (``DTYPE_BITS``), a shape of sizes,
``data_offsets`` that cover the data after the header exactly, in order, without gap or overlap,
each tensor's byte size its element count times its dtype's size, ``__metadata__`` a map of
strings); anything else is one ``SOM-ADAPTER-HEADER`` line naming the file.
"""

from __future__ import annotations

import math
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_sommelier.data.json_input import strict_json
from pytest_sommelier.errors import InputError

HEADER_LENGTH_LIMIT = 100_000_000
"""The largest safetensors header accepted (the safetensors library's own limit)."""
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
"""The dtypes safetensors 0.8 reads, and the bits of one element of each."""


@dataclass(frozen=True)
class TensorHeader:
    """One tensor's entry in a safetensors header: its dtype and its shape."""

    dtype: str
    shape: tuple[int, ...]


def read_safetensors_header(path: Path, *, where: str | None = None) -> dict[str, TensorHeader]:
    """The tensors a safetensors file declares, from its header alone.

    Reads the 8-byte little-endian header length and that many bytes of JSON, never the data
    that follows; ``__metadata__`` is left out. A header that is short, too long, not a JSON
    object, or that breaks a safetensors format rule (see the module docstring) is an
    InputError naming the file; ``where`` is the error's location (default: the folder's name;
    the preflight passes ``arms.<arm>.adapter``).
    """
    path = Path(path)
    location = where or str(path.parent.name)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise _bad_header(path, "is not a regular file", location)
        size = info.st_size
        if size < 8:
            raise _bad_header(
                path, f"the file has {size} bytes, fewer than the 8-byte header length", location
            )
        with open(path, "rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if not 0 < length <= min(HEADER_LENGTH_LIMIT, size - 8):
                raise _bad_header(
                    path, f"header length {length} does not fit a {size}-byte file", location
                )
            raw = handle.read(length)
    except OSError as exc:
        raise _bad_header(path, f"cannot be read: {type(exc).__name__}", location) from exc
    try:
        header = strict_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _bad_header(path, f"header is not JSON ({str(exc)[:120]})", location) from exc
    if not isinstance(header, dict):
        raise _bad_header(path, "header is not a JSON object", location)
    problem = header_problem(header, size - 8 - length)
    if problem is not None:
        raise _bad_header(path, problem, location)
    return {
        name: TensorHeader(entry["dtype"], tuple(entry["shape"]))
        for name, entry in header.items()
        if name != "__metadata__"
    }


def header_problem(header: dict[str, Any], data_length: int) -> str | None:
    """The first safetensors format rule a decoded header breaks, for a file whose data part
    (after the header) holds ``data_length`` bytes; None when the library would open it."""
    metadata = header.get("__metadata__")
    if metadata is not None and not (
        isinstance(metadata, dict) and all(isinstance(value, str) for value in metadata.values())
    ):
        return "__metadata__ is not a map of strings"
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            return f"tensor {name!r} has no dtype or shape (its entry is not an object)"
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or not isinstance(shape, list):
            return f"tensor {name!r} has no dtype or shape"
        if dtype not in DTYPE_BITS:
            return f"tensor {name!r} has dtype {dtype[:20]!r}, which safetensors does not know"
        if not all(type(dim) is int and dim >= 0 for dim in shape):
            return f"tensor {name!r} has a shape that is not a list of sizes"
        if not (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(type(bound) is int and bound >= 0 for bound in offsets)
            and offsets[0] <= offsets[1]
        ):
            return f"tensor {name!r} has data_offsets that are not [begin, end] byte positions"
        bits = math.prod(shape) * DTYPE_BITS[dtype]
        if bits % 8 or offsets[1] - offsets[0] != bits // 8:
            needed = f"{bits // 8} bytes" if bits % 8 == 0 else f"{bits} bits (not whole bytes)"
            return (
                f"tensor {name!r}: {dtype} {shape[:8]} takes {needed}, its data_offsets span "
                f"{offsets[1] - offsets[0]}"
            )
        spans.append((offsets[0], offsets[1], name))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            return (
                f"tensor {name!r} starts at byte {begin}, where "
                f"{'the data begins' if end == 0 else 'the tensor before it ends'} is {end}: "
                f"{'a gap' if begin > end else 'an overlap'} in data_offsets"
            )
        end = stop
    if end != data_length:
        return f"data_offsets cover {end} bytes, the file holds {data_length} after its header"
    return None


def _bad_header(path: Path, detail: str, where: str) -> InputError:
    return InputError(
        "SOM-ADAPTER-HEADER",
        f"{path.parent.name}/{path.name} is not a readable safetensors file: {detail}",
        "re-save it with safetensors (save_pretrained(..., safe_serialization=True))",
        where=where,
    )


__all__ = [
    "DTYPE_BITS",
    "HEADER_LENGTH_LIMIT",
    "TensorHeader",
    "header_problem",
    "read_safetensors_header",
]
