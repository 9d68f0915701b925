"""Loading a formatted split: slices, pairs, digests, and the row rules beyond the basics."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import default_rows, make_row, write_split

from pytest_sommelier.core.canonical import pair_set_sha256, prompt_set_sha256, sha256_bytes
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.errors import InputError, InvariantError


def test_default_split(tmp_path: Path) -> None:
    path = write_split(tmp_path / "s.jsonl", default_rows())
    split = load_split(path, ("en", "he"))
    assert split.sha256 == sha256_bytes(path.read_bytes())
    assert split.split == "test"
    assert list(split.slices) == ["en", "he"]
    assert [e.example_id for e in split.slices["en"]] == ["en-0", "en-1", "en-2"]
    assert [e.example_id for e in split.slices["he"]] == ["he-0", "he-1"]
    assert [e.line for e in split.examples] == [1, 2, 3, 4, 5]
    assert split.pairs == {"he": (("en-0", "he-0"), ("en-1", "he-1"))}
    assert split.slices["en"][2].gold_call == {"name": "noop", "arguments": {}}
    assert split.prompt_set_sha256["en"] == prompt_set_sha256(split.slices["en"])
    roots, targets = split.slices["en"], split.slices["he"]
    assert split.pair_set_sha256["he"] == pair_set_sha256(
        [
            (roots[0].example_id, roots[0].prompt_sha256, "he-0", targets[0].prompt_sha256),
            (roots[1].example_id, roots[1].prompt_sha256, "he-1", targets[1].prompt_sha256),
        ]
    )


def test_slices_follow_configured_order_not_file_order(tmp_path: Path) -> None:
    rows = [make_row("he-0", "he"), make_row("en-0", "en")]
    split = load_split(write_split(tmp_path / "s.jsonl", rows), ("en", "he"))
    assert list(split.slices) == ["en", "he"]
    assert [e.example_id for e in split.examples] == ["he-0", "en-0"]


def test_unconfigured_languages_are_left_out_but_validated(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("fr-0", "fr", "en-0")]
    path = write_split(tmp_path / "s.jsonl", rows)
    split = load_split(path, ("en", "he"))
    assert "fr" not in split.slices
    assert all(e.language != "fr" for e in split.examples)
    assert split.sha256 == sha256_bytes(path.read_bytes())
    rows[-1]["prompt_sha256"] = "0" * 64
    with pytest.raises(InvariantError):
        load_split(write_split(tmp_path / "s.jsonl", rows), ("en", "he"))


def test_only_the_reference_slice_needs_no_pairs(tmp_path: Path) -> None:
    split = load_split(write_split(tmp_path / "s.jsonl", default_rows()), ("en",))
    assert split.pairs == {}
    assert split.pair_set_sha256 == {}


def test_null_source_in_a_target_slice_is_unpaired(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("he-x", "he")]
    split = load_split(write_split(tmp_path / "s.jsonl", rows), ("en", "he"))
    assert [e.example_id for e in split.slices["he"]] == ["he-0", "he-1", "he-x"]
    assert split.pairs["he"] == (("en-0", "he-0"), ("en-1", "he-1"))


def test_pairs_follow_target_order(tmp_path: Path) -> None:
    rows = [
        make_row("en-0", "en"),
        make_row("en-1", "en"),
        make_row("he-a", "he", "en-1"),
        make_row("he-b", "he", "en-0"),
    ]
    split = load_split(write_split(tmp_path / "s.jsonl", rows), ("en", "he"))
    assert split.pairs["he"] == (("en-1", "he-a"), ("en-0", "he-b"))


def test_source_must_be_in_the_reference_slice_not_just_in_the_file(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("ar-0", "ar", "he-0")]
    path = write_split(tmp_path / "s.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_split(path, ("en", "he", "ar"))
    assert info.value.code == "SOM-SPLIT-DANGLING-SOURCE"
    assert f"{path}:6" in str(info.value)


def test_a_root_pairs_once_per_target_slice(tmp_path: Path) -> None:
    rows = [*default_rows(), make_row("he-2", "he", "en-0")]
    path = write_split(tmp_path / "s.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_split(path, ("en", "he"))
    assert info.value.code == "SOM-SPLIT-DUPLICATE-PAIR"
    assert "'he-0'" in str(info.value) and f"{path}:6" in str(info.value)


def test_trailing_blank_lines_are_ignored_but_hashed(tmp_path: Path) -> None:
    path = write_split(tmp_path / "s.jsonl", default_rows())
    plain = load_split(path, ("en", "he"))
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n  \n")
    padded = load_split(path, ("en", "he"))
    assert padded.examples == plain.examples
    assert padded.sha256 != plain.sha256
    assert padded.sha256 == sha256_bytes(path.read_bytes())


def test_blank_line_inside_the_split_is_an_error(tmp_path: Path) -> None:
    path = write_split(tmp_path / "s.jsonl", default_rows())
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join([*lines[:2], "\n", *lines[2:]]), encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_split(path, ("en", "he"))
    assert info.value.code == "SOM-SPLIT-BLANK-LINE"
    assert info.value.where == f"{path}:3"


def test_missing_split_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_split(tmp_path / "nope.jsonl", ("en",))
    assert info.value.code == "SOM-SPLIT-MISSING"
    assert str(tmp_path / "nope.jsonl") in str(info.value)


@pytest.mark.parametrize(
    ("mutate", "code", "fragment"),
    [
        (lambda r: r.update(extra=1), "SOM-SPLIT-FIELD", "unknown field 'extra'"),
        (lambda r: r.update(prompt_sha256="XYZ"), "SOM-SPLIT-FIELD", "field 'prompt_sha256'"),
        (lambda r: r.update(source_example_id=7), "SOM-SPLIT-FIELD", "'source_example_id'"),
        (
            lambda r: r.update(messages=[{"content": "x"}]),
            "SOM-SPLIT-FIELD",
            "missing field 'messages[0].role'",
        ),
        (lambda r: r.update(split="dev"), "SOM-SPLIT-MIXED-SPLIT", "'dev'"),
        (lambda r: r.update(target_text="[{"), "SOM-SPLIT-GOLD-CALL", "not valid JSON"),
        (lambda r: r.update(target_text="[]"), "SOM-SPLIT-GOLD-CALL", "holds 0 calls"),
        (
            lambda r: r.update(target_text='{"name":"a","arguments":{}}'),
            "SOM-SPLIT-GOLD-CALL",
            "not a JSON array",
        ),
        (
            lambda r: r.update(target_text='[{"name":"","arguments":{}}]'),
            "SOM-SPLIT-GOLD-CALL",
            "name",
        ),
        (
            lambda r: r.update(target_text='[{"name":"a","arguments":[]}]'),
            "SOM-SPLIT-GOLD-CALL",
            "arguments",
        ),
        (
            lambda r: r.update(target_text='[{"name":"a","arguments":{},"id":1}]'),
            "SOM-SPLIT-GOLD-CALL",
            "not {",
        ),
        (
            lambda r: r.update(target_text='[{"name":"a","arguments":{"x":1,"x":2}}]'),
            "SOM-SPLIT-GOLD-CALL",
            "repeated key 'x'",
        ),
        (
            lambda r: r.update(target_text='[{"name":"a","arguments":{"x":NaN}}]'),
            "SOM-SPLIT-GOLD-CALL",
            "NaN",
        ),
    ],
    ids=[
        "extra-field",
        "bad-sha-pattern",
        "source-type",
        "message-without-role",
        "mixed-split",
        "target-broken",
        "target-empty",
        "target-object",
        "target-empty-name",
        "target-list-arguments",
        "target-extra-key",
        "target-repeated-key",
        "target-nan",
    ],
)
def test_bad_row(tmp_path: Path, mutate: Any, code: str, fragment: str) -> None:
    rows = default_rows()
    mutate(rows[1])
    path = write_split(tmp_path / "s.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_split(path, ("en", "he"))
    assert info.value.code == code, str(info.value)
    assert info.value.where == f"{path}:2"
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('["not", "an", "object"]', "not an object"),
        ('{"example_id": "a", "example_id": "b"}', "repeated key 'example_id'"),
    ],
)
def test_bad_json_line(tmp_path: Path, line: str, fragment: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(make_row("en-0", "en")) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_split(path, ("en",))
    assert info.value.code == "SOM-SPLIT-JSON"
    assert info.value.where == f"{path}:2"
    assert fragment in str(info.value)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(json.dumps(make_row("en-0", "en")).encode() + b"\n\xff\xfe\n")
    with pytest.raises(InputError) as info:
        load_split(path, ("en",))
    assert info.value.code == "SOM-SPLIT-ENCODING"
    assert info.value.where == f"{path}:2"


@pytest.mark.parametrize("slices", [(), ("en", "en")])
def test_slice_list_must_be_distinct_and_non_empty(tmp_path: Path, slices: tuple) -> None:
    path = write_split(tmp_path / "s.jsonl", default_rows())
    with pytest.raises(InputError) as info:
        load_split(path, slices)
    assert info.value.code == "SOM-SPLIT-SLICES"


LANGUAGES = ("en", "he", "ar")
TOKENIZERS = (("org/a", "r1"), ("org/a", None), ("org/b", "r1"), ("dir:tok", "sha256:" + "0" * 64))


@st.composite
def splits(draw: st.DrawFn) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """Valid rows over en/he/ar (each configured slice non-empty) and the configured slices."""
    slices = ("en", *draw(st.sampled_from([(), ("he",), ("he", "ar"), ("ar",)])))
    languages = draw(
        st.lists(st.sampled_from(LANGUAGES), min_size=len(slices), max_size=12).filter(
            lambda langs: set(slices) <= set(langs)
        )
    )
    roots = [f"r{i}" for i, lang in enumerate(languages) if lang == "en"]
    rows = []
    used: dict[str, set[str]] = {}
    for index, language in enumerate(languages):
        source = None
        if language != "en" and roots and draw(st.booleans()):
            free = [r for r in roots if r not in used.setdefault(language, set())]
            if free:
                source = draw(st.sampled_from(free))
                used[language].add(source)
        tokenizer_id, revision = draw(st.sampled_from(TOKENIZERS))
        rows.append(
            make_row(
                f"r{index}",
                language,
                source,
                prompt_text=f"prompt {index}",
                tokenizer_id=tokenizer_id,
                tokenizer_revision=revision,
            )
        )
    return rows, slices


@settings(max_examples=examples(40), deadline=None)
@given(splits())
def test_split_properties(case: tuple[list[dict[str, Any]], tuple[str, ...]]) -> None:
    rows, slices = case
    with tempfile.TemporaryDirectory() as folder:
        split = load_split(write_split(Path(folder) / "s.jsonl", rows), slices)
    configured = [r for r in rows if r["language"] in slices]
    assert [e.example_id for e in split.examples] == [r["example_id"] for r in configured]
    assert list(split.slices) == list(slices)
    for name, members in split.slices.items():
        assert [e.example_id for e in members] == [
            r["example_id"] for r in configured if r["language"] == name
        ]
    roots = {e.example_id for e in split.slices[slices[0]]}
    assert set(split.pairs) == set(slices[1:])
    for target, pairs in split.pairs.items():
        expected = [
            (r["source_example_id"], r["example_id"])
            for r in rows
            if r["language"] == target and r["source_example_id"] is not None
        ]
        assert list(pairs) == expected
        assert all(root in roots for root, _ in pairs)
        assert len({root for root, _ in pairs}) == len(pairs)
    # every row's tokenizer (left out or not), distinct, in file order; a null revision reads as
    # "None", as inference.split_check.split_tokenizers reads the file
    assert split.tokenizers == tuple(
        dict.fromkeys((r["tokenizer_id"], str(r["tokenizer_revision"])) for r in rows)
    )
