"""Helpers for pytester-driven plugin tests: a suite with a scripted fake backend.

``write_scripted_suite(pytester, outputs, **suite_overrides)`` writes a suite (through
``suite_factory``) and a ``conftest.py`` overriding ``sommelier_model`` with a fake whose
``generate`` answers from ``script.json`` (arm -> example_id -> output; the keys the fake
reads are documented in tests/fakes.py). Unlisted examples answer prose. The fake also logs its
calls in ``calls.jsonl`` so tests can check batching.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from suite_factory import make_row, match_base_tokenizer, write_suite

GOLD = {
    "en-0": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
    "en-1": {"name": "search", "arguments": {"q": "tea", "filters": {"max": 3, "tags": ["a"]}}},
    "en-2": {"name": "noop", "arguments": {}},
    "en-3": {"name": "book", "arguments": {"room": 4, "late": True}},
    "he-0": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}},
    "he-1": {"name": "search", "arguments": {"q": "tea", "filters": {"max": 3, "tags": ["a"]}}},
    "he-3": {"name": "book", "arguments": {"room": 4, "late": True}},
}
SOURCES = {"he-0": "en-0", "he-1": "en-1", "he-3": "en-3"}

def rows(ids: tuple[str, ...] = tuple(GOLD)) -> list[dict[str, Any]]:
    return [
        make_row(i, i[:2], SOURCES.get(i), GOLD[i], prompt_text=f"<user>prompt {i}</user>\n")
        for i in ids
    ]


def call_text(call: dict[str, Any], prose: str = "") -> str:
    return prose + json.dumps(call)


def write_scripted_suite(
    pytester: pytest.Pytester,
    script: dict[str, Any],
    *,
    ids: tuple[str, ...] = tuple(GOLD),
    **overrides: Any,
) -> Path:
    """Write suite + split + fake conftest + script into ``pytester.path``."""
    overrides.setdefault("model", {"base": "fake-org/fake-model"})
    suite = write_suite(pytester.path / "suite", rows=rows(ids), **overrides)
    (pytester.path / "suite" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "suite" / "script.json").write_text(json.dumps(script))
    return suite


def tiny_suite(pytester: pytest.Pytester, tiny: tuple[Path, Path]) -> Path:
    """A two-arm suite over copies of the tiny model and adapter (the ``tiny`` fixture of
    tests/conftest.py) inside the suite folder."""
    import shutil

    model, adapter = tiny
    suite = write_suite(
        pytester.path / "suite",
        rows=[make_row(i, "en") for i in ("en-0", "en-1")],
        model={"base": "model", "revision": None},
        suite={"slices": ["en"]},
        decoding={"max_new_tokens": 2},
        gates=[{"name": "any", "arm": "adapter", "metric": "valid_json_rate", "max": 1.0}],
    )
    shutil.copytree(model, suite.parent / "model")
    shutil.rmtree(suite.parent / "adapter")
    shutil.copytree(adapter, suite.parent / "adapter")
    return match_base_tokenizer(suite)


# the conftest.py scorer of the extension tests (docs/extending.md): ``lenient_call`` counts a
# call whose name is the gold's and whose arguments equal the gold's once numeric strings are
# read as numbers; appended to a suite's conftest.py after FAKE_CONFTEST
SCORER_HOOK = """

from pytest_sommelier import Scorer


def _number(value):
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {key: _number(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_number(item) for item in value]
    return value


def lenient(parsed, gold, example):
    if parsed is None:
        return (0, 1)
    same = parsed["name"] == gold["name"]
    return (int(same and _number(parsed["arguments"]) == _number(gold["arguments"])), 1)


def pytest_sommelier_add_scorers(config):
    return [Scorer("lenient_call", "2", "rate", lenient)]
"""


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def cache_key(
    cache: Any, generator: Any, prompt_sha256: str, decoding: dict, *, batch_prompts: Any = None
) -> str:
    """A generation-cache entry's key, as the cache derives it: sha256 of the canonical JSON of
    its key fields (for tests that locate or tamper with entries)."""
    from pytest_sommelier.core.canonical import canonical_json_text, sha256_text

    fields = cache.key_fields(generator, prompt_sha256, decoding, batch_prompts=batch_prompts)
    return sha256_text(canonical_json_text(fields))


def settings(pytester: pytest.Pytester, *args: str, ini: str | None = None) -> Any:
    """The ``Settings`` a run with ``args`` (and this ini file) would build at configure."""
    from pytest_sommelier.plugin.settings import build_settings

    if ini is not None:
        pytester.makeini("[pytest]\n" + ini + "\n")
    return build_settings(pytester.parseconfig(*args))
