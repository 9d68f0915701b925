"""The extension registries (``pytest_sommelier.registry``): built-ins registered like
extensions, entry points read from installed distributions, a name defined twice refused with
both sources named, and ``sommelier plugins`` listing what was found and from where."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier import registry as reg
from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.importers.common import Importer
from pytest_sommelier.errors import InputError, SommelierEnvironmentError
from pytest_sommelier.inference import select_engine


def fake_distribution(folder: Path, name: str, groups: dict[str, dict[str, str]]) -> None:
    """An installed distribution ``name`` 1.0 in ``folder`` (a ``.dist-info`` with entry
    points), found by importlib.metadata once ``folder`` is on ``sys.path``."""
    info = folder / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = []
    for group, points in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{point} = {target}" for point, target in points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_the_builtins_are_registered_like_extensions() -> None:
    engines = reg.registry("engines")
    assert engines.names()[:3] == tuple(select_engine.ENGINES)
    assert all(e.source == reg.BUILTIN_SOURCE for e in engines.entries.values() if e.name in
               select_engine.ENGINES)  # fmt: skip
    importers = reg.merge("importers", [(reg.BUILTIN_SOURCE, reg.BUILTIN["importers"])])
    assert importers.names() == ("openai-chat", "xlam", "hermes")
    for entry in importers.entries.values():
        assert isinstance(entry.load(), Importer)
    assert callable(select_engine.engine_loader("openai"))


NAMES = st.text(alphabet="abcdefg_-", min_size=1, max_size=4).filter(lambda n: n.strip() == n)
SOURCES = st.lists(
    st.tuples(st.text(alphabet="xyz.:", min_size=1, max_size=6), st.lists(NAMES, max_size=4)),
    max_size=5,
)


@settings(max_examples=examples(100))
@given(SOURCES)
def test_merge_keeps_every_name_once_or_names_both_sources(
    sources: list[tuple[str, list[str]]],
) -> None:
    given_sources = [(f"{label}#{i}", {n: (i, n) for n in names})
                     for i, (label, names) in enumerate(sources)]  # fmt: skip
    seen: dict[str, str] = {}
    clash = None
    for source, names in given_sources:
        for name in names:
            if name in seen and clash is None:
                clash = (name, seen[name], source)
            seen.setdefault(name, source)
    if clash is None:
        merged = reg.merge("scorers", given_sources)
        assert list(merged.names()) == list(seen)
        assert {n: e.source for n, e in merged.entries.items()} == seen
        assert all(merged.entries[n].load() == merged.entries[n].target for n in seen)
        return
    with pytest.raises(InputError) as caught:
        reg.merge("scorers", given_sources)
    name, first, second = clash
    assert caught.value.code == "SOM-PLUGIN-DUPLICATE"
    text = str(caught.value)
    assert "\n" not in text and repr(name) in text and first in text and second in text


@pytest.mark.parametrize("name", ["", " x", "x ", 3, None])
def test_a_name_that_is_not_a_name_is_refused(name: object) -> None:
    with pytest.raises(InputError) as caught:
        reg.merge("engines", [("hook of p", {name: object()})])
    assert caught.value.code == "SOM-PLUGIN-NAME" and "hook of p" in str(caught.value)


def test_entry_points_join_the_registry_and_a_clash_names_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fake_ext.py").write_text("def loader(*a, **k):\n    return {}\n")
    fake_distribution(tmp_path, "fake-ext", {"sommelier.engines": {"fake": "fake_ext:loader"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    engines = reg.registry("engines")
    entry = engines.entries["fake"]
    assert entry.source == "entry point sommelier.engines:fake of fake-ext 1.0"
    assert entry.load()() == {}
    assert select_engine.engine_loader("fake") is entry.load()
    # a second distribution defining a built-in's name: one line naming both
    other = tmp_path / "other"
    fake_distribution(other, "clash-ext", {"sommelier.engines": {"vllm": "fake_ext:loader"}})
    monkeypatch.syspath_prepend(str(other))
    with pytest.raises(InputError) as caught:
        reg.registry("engines")
    text = str(caught.value)
    assert caught.value.code == "SOM-PLUGIN-DUPLICATE"
    assert "by built-in and by entry point sommelier.engines:vllm of clash-ext 1.0" in text


def test_entry_points_are_read_again_exactly_when_the_import_path_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry points are read once per state of the import path: asked again with nothing
    changed, importlib.metadata is not read; a distribution installed into a folder already on
    ``sys.path``, a folder put on it, or one taken off it is seen at the next ask."""
    reads: list[str] = []
    real = importlib.metadata.entry_points
    # an empty memo, so that what other tests in this process remembered (up to its bound,
    # where it is cleared) cannot drop a state this test counts on
    monkeypatch.setattr(reg, "_POINTS", {})

    def entry_points(**kwargs: Any) -> Any:
        reads.append(kwargs["group"])
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    assert "late" not in reg.registry("engines").entries
    assert "late" not in reg.registry("engines").entries
    assert reads == ["sommelier.engines"]  # the second ask read nothing
    (tmp_path / "late_ext.py").write_text("def loader(*a, **k):\n    return {}\n")
    fake_distribution(site, "late-ext", {"sommelier.engines": {"late": "late_ext:loader"}})
    assert reg.registry("engines").entries["late"].source.endswith("of late-ext 1.0")
    other = tmp_path / "other"
    fake_distribution(other, "other-ext", {"sommelier.engines": {"other": "late_ext:loader"}})
    with monkeypatch.context() as inner:
        inner.syspath_prepend(str(other))
        assert "other" in reg.registry("engines").entries
    assert "other" not in reg.registry("engines").entries
    assert len(reads) == 3  # the path as it was before the folder came: remembered


def test_an_entry_point_that_cannot_load_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_distribution(tmp_path, "broken-ext", {"sommelier.scorers": {"broken": "no_such:thing"}})
    monkeypatch.syspath_prepend(str(tmp_path))
    entry = reg.registry("scorers").entries["broken"]
    with pytest.raises(SommelierEnvironmentError) as caught:
        entry.load()
    assert caught.value.code == "SOM-PLUGIN-LOAD"
    assert "'broken' from entry point sommelier.scorers:broken of broken-ext 1.0" in str(
        caught.value
    )
    assert main(["plugins"]) == 3
    out = capsys.readouterr().out
    assert "broken  (entry point sommelier.scorers:broken of broken-ext 1.0)  NOT LOADED" in out


def test_plugins_lists_every_kind_and_its_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "scorers (entry point group sommelier.scorers):"
    assert "engines (entry point group sommelier.engines):" in out
    assert "  transformers  (built-in)" in out and "  hermes  (built-in)" in out


def test_an_unknown_import_format_lists_the_registered_ones(tmp_path: Path) -> None:
    from pytest_sommelier.data.prepare.importers.driver import import_file

    (tmp_path / "rows.jsonl").write_text("{}\n")
    with pytest.raises(InputError) as caught:
        import_file("nope", tmp_path / "rows.jsonl", tmp_path / "out.jsonl")
    assert caught.value.code == "SOM-IMPORT-FORMAT"
    assert "openai-chat, xlam, hermes" in caught.value.hint


def test_an_importer_that_is_not_one_is_refused(tmp_path: Path) -> None:
    from pytest_sommelier.data.prepare.importers.driver import import_file

    (tmp_path / "rows.jsonl").write_text("{}\n")
    bad = reg.merge("importers", [("hook of p", {"odd": lambda row, where: None})])
    with pytest.raises(InputError) as caught:
        import_file("odd", tmp_path / "rows.jsonl", tmp_path / "out.jsonl", importers=bad)
    assert caught.value.code == "SOM-IMPORT-CONTRACT" and "hook of p" in str(caught.value)
