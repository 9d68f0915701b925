"""Read the rows of a training-data file: JSON lines, a JSON array, or Parquet.

The file type is chosen by the name: ``.jsonl`` / ``.ndjson`` are JSON lines, ``.parquet`` is
Parquet (through pyarrow, the optional extra ``pytest-sommelier[parquet]``), and ``.json`` is a
JSON array when its first non-blank character is ``[`` and JSON lines otherwise (hub datasets
name both ``.json``).

Invariants kept: rows come in file order as ``(where, number, row)``, ``where`` naming the file
and the line (JSON lines: ``file:LINE``, from 1) or the row (array and Parquet: ``file: row N``,
from 0, as ``dataset[N]`` counts); every row is a JSON object (a dict), decoded strictly (no
repeated keys, no NaN); anything else is one InputError naming the file and line or row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_sommelier.data.json_input import JSON_DEPTH_LIMIT, depth_problem
from pytest_sommelier.data.split.load import json_lines, lone_surrogate_path, strict_json
from pytest_sommelier.errors import InputError, SommelierEnvironmentError, exception_text

JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_BATCH = 1024

Row = tuple[str, int, dict[str, Any]]


def read_rows(path: str | Path) -> Iterator[Row]:
    """Every row of ``path`` (see the module docstring), or InputError naming file and row."""
    path = Path(path)
    if not path.is_file():
        raise InputError(
            "SOM-IMPORT-MISSING", "input file not found", "check the path", where=str(path)
        )
    suffix = path.suffix.lower()
    if suffix in PARQUET_SUFFIXES:
        yield from _parquet_rows(path)
    elif suffix in JSON_SUFFIXES:
        yield from _json_rows(path)
    else:
        raise InputError(
            "SOM-IMPORT-FILE-TYPE",
            f"unknown input file type {path.suffix or '(none)'!r}",
            "give a .jsonl, .json or .parquet file",
            where=str(path),
        )


def _not_object(where: str, value: Any) -> InputError:
    return InputError(
        "SOM-IMPORT-JSON",
        f"row is a JSON {type(value).__name__}, not an object",
        "each row is one JSON object",
        where=where,
    )


def _refuse_surrogates(where: str, row: dict[str, Any]) -> None:
    """A row holding a lone surrogate (``\\ud800``) is one line, before it is converted."""
    found = lone_surrogate_path(row)
    if found is not None:
        raise InputError(
            "SOM-IMPORT-ENCODING",
            f"field {found!r} holds a lone UTF-16 surrogate (e.g. \\ud800), which is not valid "
            "Unicode text",
            "fix or drop the broken escape",
            where=where,
        )


def _json_rows(path: Path) -> Iterator[Row]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            "SOM-IMPORT-ENCODING", "file is not UTF-8", "save it as UTF-8", where=str(path)
        ) from exc
    if text.lstrip().startswith("["):
        try:
            rows = strict_json(text)
        except (ValueError, RecursionError) as exc:
            line = getattr(exc, "lineno", None)
            raise InputError(
                "SOM-IMPORT-JSON",
                f"file is not one JSON array: {str(exc)[:160]}",
                "write a JSON array of objects, or one object per line",
                where=f"{path}:{line}" if line else str(path),
            ) from exc
        for index, row in enumerate(rows):
            where = f"{path}: row {index}"
            if not isinstance(row, dict):
                raise _not_object(where, row)
            if "\\u" in text:  # a lone surrogate can only come from an escape
                _refuse_surrogates(where, row)
            yield where, index, row
        return
    for number, line in enumerate(json_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = strict_json(line)
        except (ValueError, RecursionError) as exc:
            raise InputError(
                "SOM-IMPORT-JSON",
                f"line is not JSON: {str(exc)[:160]}",
                "write one JSON object per line (UTF-8, no repeated keys, no NaN)",
                where=where,
            ) from exc
        if not isinstance(row, dict):
            raise _not_object(where, row)
        if "\\u" in line:  # a lone surrogate can only come from an escape
            _refuse_surrogates(where, row)
        yield where, number, row


def _parquet_rows(path: Path) -> Iterator[Row]:
    try:
        import pyarrow.parquet as parquet
    except ImportError as exc:
        raise SommelierEnvironmentError(
            "SOM-IMPORT-PARQUET",
            "reading Parquet needs pyarrow, which is not installed",
            "pip install 'pytest-sommelier[parquet]' (or convert the file to JSON lines)",
            where=str(path),
        ) from exc
    try:
        table = parquet.ParquetFile(path)
        batches = table.iter_batches(batch_size=PARQUET_BATCH)
        index = 0
        for batch in batches:
            for row in batch.to_pylist():
                deep = depth_problem(row, JSON_DEPTH_LIMIT)
                if deep is not None:
                    raise InputError(
                        "SOM-IMPORT-JSON",
                        f"row is {deep}",
                        "flatten the row's nested columns",
                        where=f"{path}: row {index}",
                    )
                yield f"{path}: row {index}", index, row
                index += 1
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(
            "SOM-IMPORT-PARQUET-READ",
            f"not a readable Parquet file: {exception_text(exc, 160)}",
            "give a Parquet file as written by pyarrow or datasets",
            where=str(path),
        ) from exc
