"""Content digests: known vectors, canonical JSON, ordered set digests, folder digests."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core.canonical import (
    pair_set_sha256,
    prompt_set_sha256,
    sha256_bytes,
    sha256_json,
    sha256_text,
)
from pytest_sommelier.data.digests import sha256_file, sha256_path, sha256_tree
from pytest_sommelier.data.split.load import Example

ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_known_vectors() -> None:
    assert sha256_bytes(b"abc") == ABC
    assert sha256_text("abc") == ABC
    assert sha256_text("שלום") == hashlib.sha256("שלום".encode()).hexdigest()


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 64, 1000])
def test_file_digest_is_streamed_and_equal_to_bytes_digest(tmp_path: Path, size: int) -> None:
    data = bytes(range(256)) * 4
    path = tmp_path / "f.bin"
    path.write_bytes(data[:size])
    assert sha256_file(path, chunk_size=8) == sha256_bytes(data[:size])
    assert sha256_file(path) == sha256_bytes(data[:size])


def test_json_digest_is_of_the_canonical_text() -> None:
    value = {"b": [1, 2.5, None], "a": "é", "c": {"y": True, "x": False}}
    canonical = '{"a":"\\u00e9","b":[1,2.5,null],"c":{"x":false,"y":true}}'
    assert sha256_json(value) == sha256_text(canonical)


def test_json_digest_refuses_nan() -> None:
    with pytest.raises(ValueError):
        sha256_json({"x": float("nan")})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=examples(100))
@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5))
def test_json_digest_ignores_key_order(value: dict) -> None:
    reordered = dict(reversed(list(value.items())))
    assert sha256_json(reordered) == sha256_json(value)


def _example(example_id: str, prompt_sha256: str) -> Example:
    return Example(example_id, "en", None, "p", prompt_sha256, {}, 1)


def test_prompt_set_digest_definition_and_inputs() -> None:
    rows = [("en-0", "a" * 64), ("en-1", "b" * 64)]
    expected = sha256_json([list(row) for row in rows])
    assert prompt_set_sha256([_example(*row) for row in rows]) == expected
    records = [{"example_id": i, "prompt_sha256": s, "raw_text": "x"} for i, s in rows]
    assert prompt_set_sha256(records) == expected


@settings(max_examples=examples(100))
@given(st.lists(st.text(min_size=1, max_size=4), min_size=2, max_size=6, unique=True))
def test_prompt_set_digest_depends_on_order(ids: list[str]) -> None:
    rows = [_example(i, sha256_text(i)) for i in ids]
    assert prompt_set_sha256(rows) != prompt_set_sha256(rows[::-1])


def test_prompt_set_digest_changes_with_a_prompt() -> None:
    before = [_example("en-0", sha256_text("p0")), _example("en-1", sha256_text("p1"))]
    after = [before[0], _example("en-1", sha256_text("p1 edited"))]
    assert prompt_set_sha256(before) != prompt_set_sha256(after)


def test_pair_set_digest_definition() -> None:
    pairs = [("en-0", "a" * 64, "he-0", "b" * 64), ("en-1", "c" * 64, "he-1", "d" * 64)]
    assert pair_set_sha256(pairs) == sha256_json([list(p) for p in pairs])
    assert pair_set_sha256(pairs) != pair_set_sha256(pairs[::-1])
    swapped = [("en-1", "c" * 64, "he-0", "b" * 64), ("en-0", "a" * 64, "he-1", "d" * 64)]
    assert pair_set_sha256(pairs) != pair_set_sha256(swapped)
    assert pair_set_sha256([]) == sha256_json([])


def test_pair_set_digest_refuses_a_short_pair() -> None:
    with pytest.raises(ValueError, match="root_id"):
        pair_set_sha256([("en-0", "he-0")])  # type: ignore[list-item]


def _tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "a.json").write_text("{}")
    (root / "sub" / "b.bin").write_bytes(b"\x00\x01")
    return root


def test_tree_digest_is_location_independent_and_content_sensitive(tmp_path: Path) -> None:
    first = _tree(tmp_path / "one")
    second = tmp_path / "two"
    shutil.copytree(first, second)
    digest = sha256_tree(first)
    assert sha256_tree(second) == digest
    expected = sha256_json(
        [["a.json", sha256_bytes(b"{}")], ["sub/b.bin", sha256_bytes(b"\x00\x01")]]
    )
    assert digest == expected
    (second / "sub" / "b.bin").rename(second / "sub" / "c.bin")
    assert sha256_tree(second) != digest


def test_path_digest_sees_a_rewritten_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.gguf"
    path.write_bytes(b"one")
    assert sha256_path(path) == sha256_bytes(b"one")
    path.write_bytes(b"second")
    assert sha256_path(path) == sha256_bytes(b"second")
    assert sha256_path(_tree(tmp_path / "dir")) == sha256_tree(tmp_path / "dir")
