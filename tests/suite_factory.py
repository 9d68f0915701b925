"""Build valid suites and formatted splits in a temporary folder (shared by the test modules).

- ``make_row(example_id, language, source_example_id=None, gold_call=None, prompt_text=...)``
  returns one valid ``sommelier.formatted_example.v2`` row (a dict);
- ``write_split(path, rows)`` writes rows as JSONL;
- ``default_rows()`` is a small split: three English roots, two Hebrew translations (he-0 of
  en-0, he-1 of en-1);
- ``write_suite(directory, **overrides)`` writes a valid ``sommelier.toml``, its split and a
  placeholder local adapter directory, and returns the suite file's path;
- ``match_base_tokenizer(suite_file)`` rewrites the split's ``tokenizer_id`` and
  ``tokenizer_revision`` to the suite's base's (for suites over a real local model: the split
  belongs to the base, ``inference.split_check``).

Invariant: with no overrides, ``load_suite(write_suite(d))`` and ``load_split`` both succeed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pytest_sommelier.core.canonical import sha256_text

SCHEMA_VERSION = "sommelier.formatted_example.v2"
DEFAULT_GOLD = {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
FAKE_REVISION = "0123456789abcdef0123456789abcdef01234567"


def make_row(
    example_id: str,
    language: str,
    source_example_id: str | None = None,
    gold_call: dict[str, Any] | None = None,
    *,
    prompt_text: str | None = None,
    split: str = "test",
    **overrides: Any,
) -> dict[str, Any]:
    """One valid v2 row; ``overrides`` replace fields after the digest is computed."""
    call = DEFAULT_GOLD if gold_call is None else gold_call
    prompt = prompt_text if prompt_text is not None else f"<user>query {example_id}</user>\n"
    target = json.dumps([call], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    row = {
        "schema_version": SCHEMA_VERSION,
        "example_id": example_id,
        "split": split,
        "language": language,
        "source_example_id": source_example_id,
        "messages": [{"role": "user", "content": f"query {example_id}"}],
        "prompt_text": prompt,
        "target_text": target,
        "full_text": prompt + target,
        "prompt_sha256": sha256_text(prompt),
        "tokenizer_id": "fake-org/fake-model",  # the default base's own tokenizer
        "tokenizer_revision": FAKE_REVISION,
        "template_policy": "chat_template",
    }
    row.update(overrides)
    return row


def default_rows() -> list[dict[str, Any]]:
    """en-0..en-2 (roots) and he-0, he-1 (translations of en-0 and en-1)."""
    return [
        make_row("en-0", "en"),
        make_row("en-1", "en", gold_call={"name": "search", "arguments": {"q": "tea"}}),
        make_row("en-2", "en", gold_call={"name": "noop", "arguments": {}}),
        make_row("he-0", "he", "en-0", prompt_text="<user>מזג אוויר</user>\n"),
        make_row("he-1", "he", "en-1", gold_call={"name": "search", "arguments": {"q": "tea"}}),
    ]


def write_split(path: str | Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` as JSONL (UTF-8, one object per line, trailing newline)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    target.write_text(text, encoding="utf-8")
    return target


def default_tables() -> dict[str, Any]:
    """The tables of a valid suite (hub-id base, a base arm and a local-adapter arm)."""
    return {
        "suite": {"name": "factory", "test_split": "data/test.jsonl", "slices": ["en", "he"]},
        "model": {"base": "fake-org/fake-model", "revision": FAKE_REVISION},
        "decoding": {"temperature": 0.0, "do_sample": False, "max_new_tokens": 64},
        "arms": {"base": {}, "adapter": {"adapter": "adapter"}},
        "comparisons": [{"candidate": "adapter", "reference": "base"}],
        "statistics": {"seed": 41, "resamples": 200, "confidence_level": 0.95},
    }


MERGED_TABLES = ("suite", "model", "decoding", "statistics")


def write_suite(
    directory: str | Path,
    *,
    rows: list[dict[str, Any]] | None = None,
    text: str | None = None,
    **overrides: Any,
) -> Path:
    """Write ``sommelier.toml`` (+ ``data/test.jsonl`` and ``adapter/``) into ``directory``.

    ``overrides``: a dict for ``suite``/``model``/``decoding``/``statistics`` is merged into the
    default table (a key set to None is removed); any other name replaces (or adds) that
    top-level entry; a value of None removes the entry. ``text`` replaces the TOML verbatim.
    ``rows`` replaces the default split rows.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter").mkdir(exist_ok=True)
    (folder / "adapter" / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
    write_split(folder / "data" / "test.jsonl", default_rows() if rows is None else rows)
    tables = default_tables()
    for name, value in overrides.items():
        if value is None:
            tables.pop(name, None)
        elif name in MERGED_TABLES and isinstance(value, dict):
            merged = {**tables.get(name, {}), **value}
            tables[name] = {k: v for k, v in merged.items() if v is not None}
        else:
            tables[name] = value
    suite_file = folder / "sommelier.toml"
    suite_file.write_text(text if text is not None else to_toml(tables), encoding="utf-8")
    return suite_file


def to_toml(tables: dict[str, Any]) -> str:
    """A small TOML writer for the factory's data (scalars, arrays, tables, arrays of tables)."""
    lines: list[str] = []
    scalars = {k: v for k, v in tables.items() if not _is_table(v) and not _is_table_array(v)}
    lines.extend(f"{_key(k)} = {_value(v)}" for k, v in scalars.items())
    for name, value in tables.items():
        if _is_table(value):
            _write_table(lines, [name], value)
        elif _is_table_array(value):
            for entry in value:
                lines.append(f"\n[[{_key(name)}]]")
                lines.extend(f"{_key(k)} = {_value(v)}" for k, v in entry.items())
    return "\n".join(lines).lstrip("\n") + "\n"


def _write_table(lines: list[str], path: list[str], table: dict[str, Any]) -> None:
    """``[a.b]`` header, its scalar keys, then its sub-tables."""
    lines.append(f"\n[{'.'.join(_key(p) for p in path)}]")
    for key, value in table.items():
        if not _is_table(value):
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in table.items():
        if _is_table(value):
            _write_table(lines, [*path, key], value)


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    """A bare key when possible, else a quoted one."""
    if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key):
        return key
    return json.dumps(key)


def _value(value: Any) -> str:
    """A TOML scalar, array or inline table."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):  # TOML forbids a raw DEL (U+007F) where JSON allows it
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def match_base_tokenizer(suite_file: Path) -> Path:
    """Give every row of the suite's split the base model's tokenizer identity (in place)."""
    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.inference.split_check import base_tokenizer

    suite = load_suite(suite_file, live=True)  # no glob needs to match yet
    tokenizer_id, revision = base_tokenizer(suite)
    lines = suite.test_split.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    for row in rows:
        row.update(tokenizer_id=tokenizer_id, tokenizer_revision=revision)
    write_split(suite.test_split, rows)
    return suite_file
