"""``sommelier import hook NAME``: an importer registered by a ``pytest_sommelier_add_importers``
hook (a ``conftest.py``, or a plugin module named with ``-p``) used from the command line,
found through pytest's own configuration of the folder, as ``pytest DIR`` would load it.

The conftest importer (``kv``) reads rows ``{"ask": ..., "tool": ..., "args": {...}}``: one
declared tool of that name with a parameter per argument, its call the gold; a row without
``tool`` is skipped (``no_call``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.registry import NAME_LIMIT

IMPORTER = """
from pytest_sommelier import Candidate, Importer, Skip


def convert(row, where):
    if "tool" not in row:
        return Skip("no_call", "the row calls no tool")
    properties = {key: {"type": "string"} for key in row["args"]}
    tool = {"name": row["tool"], "description": "a tool",
            "parameters": {"type": "object", "properties": properties}}
    return Candidate(row["ask"], [tool], {"name": row["tool"], "arguments": row["args"]})


KV = Importer("key-value rows of the tests", convert)
"""

CONFTEST = (
    IMPORTER
    + """

def pytest_sommelier_add_importers(config):
    return {"kv": KV}
"""
)

ROWS = [
    {"ask": "Weather in Paris?", "tool": "weather", "args": {"city": "Paris"}},
    {"ask": "Just chat"},
    {"ask": "Book Lima", "tool": "book", "args": {"city": "Lima", "when": "soon"}},
]


def project(folder: Path, conftest: str = CONFTEST) -> Path:
    """A folder with the importer's ``conftest.py`` and a rows file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conftest.py").write_text(conftest, encoding="utf-8")
    (folder / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return folder


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(autouse=True)
def tests_conftest_kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """pytest imports every ``conftest.py`` outside a package as the module ``conftest``,
    dropping the one before: the tests' own is put back after each test, and the import
    state (``sys.path``, ``sys.meta_path``) is as it was."""
    if "conftest" in sys.modules:
        monkeypatch.setitem(sys.modules, "conftest", sys.modules["conftest"])
    # pytest puts each conftest.py folder on sys.path: the tests' own is put back too
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = list(sys.meta_path)
    yield
    assert sys.meta_path == before  # no import hook is left behind (assertion rewriting off)


def test_a_conftest_importer_converts_rows_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project(tmp_path / "proj")
    out = tmp_path / "prepared.jsonl"
    code = main(["import", "hook", "kv", str(folder / "rows.jsonl"), "--out", str(out),
                 "--conftest-dir", str(folder)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "2 converted, 1 skipped (no_call 1)" in printed
    rows = read_rows(out)
    assert [row["gold_call"] for row in rows] == [
        {"name": "weather", "arguments": {"city": "Paris"}},
        {"name": "book", "arguments": {"city": "Lima", "when": "soon"}},
    ]
    assert [row["example_id"] for row in rows] == ["kv-1", "kv-3"]
    assert rows[0]["query"] == "Weather in Paris?"


def test_a_conftest_below_the_folder_is_not_loaded_as_pytest_would_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Like pytest run in ``top``: a ``conftest.py`` in ``top/sub`` adds nothing to ``top``
    until a suite below it is collected; here nothing is collected, so ``kv`` is unknown."""
    top = tmp_path / "top"
    project(top / "sub")
    (top / "rows.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    monkeypatch.chdir(top)
    code = main(["import", "hook", "kv", "rows.jsonl", "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "SOM-IMPORT-FORMAT" in err[0], err
    assert "'kv' is not known" in err[0]
    # from the folder itself (the default, the current folder) it is found
    monkeypatch.chdir(top / "sub")
    assert main(["import", "hook", "kv", "rows.jsonl", "--out", str(tmp_path / "o.jsonl")]) == 0


def test_a_plugin_module_named_with_p_registers_an_importer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    plugins = tmp_path / "site"
    plugins.mkdir()
    module = "kv_rows_plugin_of_the_tests"
    (plugins / f"{module}.py").write_text(CONFTEST, encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugins))
    folder = project(tmp_path / "proj", conftest="")
    out = tmp_path / "prepared.jsonl"
    args = ["import", "hook", "kv", str(folder / "rows.jsonl"), "--out", str(out),
            "--conftest-dir", str(folder)]  # fmt: skip
    assert main(args) == 2  # without the plugin: unknown
    assert "SOM-IMPORT-FORMAT" in capsys.readouterr().err
    assert main([*args, "-p", module]) == 0
    assert len(read_rows(out)) == 2


@pytest.mark.parametrize(
    ("conftest", "code", "words"),
    [
        ("raise RuntimeError('no config here')\n", "SOM-PLUGIN-PYTEST", "no config here"),
        (IMPORTER + "\ndef pytest_sommelier_add_importers(config):\n    return {'xlam': KV}\n",
         "SOM-PLUGIN-DUPLICATE", "'xlam' is defined twice: by built-in and by hook"),
        ("def pytest_sommelier_add_importers(config):\n    return {'kv': 42}\n",
         "SOM-IMPORT-CONTRACT", "importer 'kv' from hook pytest_sommelier_add_importers"),
    ],
    ids=["conftest-raises", "duplicate-built-in", "not-an-importer"],
)  # fmt: skip
def test_a_broken_conftest_importer_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], conftest: str, code: str, words: str
) -> None:
    folder = project(tmp_path / "proj", conftest)
    out = tmp_path / "prepared.jsonl"
    status = main(["import", "hook", "kv", str(folder / "rows.jsonl"), "--out", str(out),
                   "--conftest-dir", str(folder)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert status in (2, 3) and len(err) == 1, err
    assert code in err[0] and words in err[0] and "Traceback" not in err[0], err
    assert not out.exists()


def test_a_conftest_dir_that_is_not_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project(tmp_path / "proj")
    rows = str(folder / "rows.jsonl")
    out = str(tmp_path / "o.jsonl")
    status = main(["import", "hook", "kv", rows, "--out", out, "--conftest-dir", rows])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "SOM-PLUGIN-PYTEST" in err[0], err


RETURNED = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=6),
    st.lists(st.text(max_size=4), max_size=2),
    st.dictionaries(
        st.one_of(st.text(max_size=6), st.sampled_from(["kv", " kv", "", "xlam"])),
        st.one_of(st.sampled_from(["KV"]), st.integers(), st.none(), st.text(max_size=4)),
        max_size=3,
    ),
)
"""What a hook may return: the importer map or anything else (``"KV"`` stands for the
conftest's Importer, every other value is returned as it is)."""


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=RETURNED)
@example(value={"\x1b": "KV", "kv": "KV"})  # a name that is not printable: one line
def test_whatever_the_hook_returns_the_import_works_or_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any
) -> None:
    folder = project(tmp_path / "proj", IMPORTER + (
        "\nimport json, pathlib\n\ndef pytest_sommelier_add_importers(config):\n"
        "    value = json.loads((pathlib.Path(__file__).parent / 'value.json').read_text())\n"
        "    if isinstance(value, dict):\n"
        "        return {k: KV if v == 'KV' else v for k, v in value.items()}\n"
        "    return value\n"))  # fmt: skip
    (folder / "value.json").write_text(json.dumps(value), encoding="utf-8")
    out = tmp_path / "prepared.jsonl"
    out.unlink(missing_ok=True)
    capsys.readouterr()
    status = main(["import", "hook", "kv", str(folder / "rows.jsonl"), "--out", str(out),
                   "--conftest-dir", str(folder)])  # fmt: skip
    captured = capsys.readouterr()
    works = isinstance(value, dict) and value.get("kv") == "KV" and "xlam" not in value and all(
        isinstance(k, str) and k.strip() and k == k.strip() and k.isprintable()
        and len(k) <= NAME_LIMIT for k in value)  # fmt: skip  (registry.merge's name rule)
    if works:
        assert status == 0, captured.err
        assert len(read_rows(out)) == 2
    else:
        err = captured.err.strip().splitlines()
        assert status in (2, 3) and len(err) == 1 and "SOM-" in err[0], (value, captured.err)
        assert "Traceback" not in captured.err and not out.exists()


def test_sommelier_plugins_lists_the_conftest_importer_with_its_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = project(tmp_path / "proj")
    assert main(["plugins"]) == 0
    assert "  kv  (" not in capsys.readouterr().out  # outside pytest: entry points only
    assert main(["plugins", "--conftest-dir", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    hooked = [line for line in lines if line.startswith("  kv  (")]
    source = f"hook pytest_sommelier_add_importers of {folder / 'conftest.py'}"
    assert hooked == [f"  kv  ({source})"], lines
    assert lines.index(hooked[0]) > lines.index("  hermes  (built-in)")  # after the built-ins


def test_an_importer_named_like_a_source_is_reached_through_hook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hook (or an entry point) may name an importer ``hook`` or ``bfcl``: the command line
    still builds (no conflicting subcommand) and ``sommelier import hook hook`` reaches it."""
    conftest = IMPORTER + "\ndef pytest_sommelier_add_importers(config):\n    return {'hook': KV}\n"
    folder = project(tmp_path / "proj", conftest)
    out = tmp_path / "prepared.jsonl"
    assert main(["import", "hook", "hook", str(folder / "rows.jsonl"), "--out", str(out),
                 "--conftest-dir", str(folder)]) == 0  # fmt: skip
    assert len(read_rows(out)) == 2


def test_an_installed_importer_named_hook_or_bfcl_does_not_break_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_sommelier import registry
    from pytest_sommelier.cli import build_parser

    installed = [
        ("entry point sommelier.importers:hook of clash 1.0", {"hook": "clash:IMPORTER"}),
        ("entry point sommelier.importers:bfcl of clash 1.0", {"bfcl": "clash:IMPORTER"}),
    ]
    monkeypatch.setattr(registry, "entry_point_sources",
                        lambda kind: installed if kind == "importers" else [])  # fmt: skip
    parser = build_parser()  # before the guard: argparse's "conflicting subparser: hook"
    args = parser.parse_args(["import", "hook", "hook", "rows.jsonl", "--out", "o.jsonl"])
    assert args.name == "hook" and args.source_handler.__name__ == "cmd_import_hook"
