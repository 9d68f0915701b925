"""The hook specification is typed (issue 34): every argument and result of every hook names
the record it is (``run_dir: Path``, ``verdict: Verdict``, ...), none is ``typing.Any``, and each
annotation resolves to a real type; the module still imports only pytest at run time."""

from __future__ import annotations

import ast
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from pytest_sommelier.plugin import hookspec

SOURCE = Path(hookspec.__file__).read_text(encoding="utf-8")
HOOKS = [name for name in vars(hookspec) if name.startswith("pytest_sommelier_")]


def test_no_annotation_of_the_hookspec_is_any() -> None:
    annotations = [
        ast.unparse(node)
        for function in ast.walk(ast.parse(SOURCE))
        if isinstance(function, ast.FunctionDef)
        for node in [*(a.annotation for a in function.args.args), function.returns]
        if node is not None
    ]
    assert len(annotations) >= 2 * len(HOOKS)
    assert [text for text in annotations if "Any" in text] == []


@pytest.mark.parametrize("name", HOOKS)
def test_every_hook_annotation_resolves(name: str) -> None:
    from pytest_sommelier.core.scorers import Scorer
    from pytest_sommelier.core.types import Verdict
    from pytest_sommelier.data.prepare.importers.common import Importer
    from pytest_sommelier.inference.protocol import EngineLoader

    names = {"Scorer": Scorer, "Verdict": Verdict, "Importer": Importer,
             "EngineLoader": EngineLoader}  # fmt: skip
    hints = typing.get_type_hints(getattr(hookspec, name), localns=names)
    assert hints["config"] is pytest.Config
    assert "return" in hints
    if "run_dir" in hints:
        assert hints["run_dir"] is Path
    if "verdict" in hints:
        assert hints["verdict"] is Verdict


def test_the_documented_hooks_are_the_specified_ones() -> None:
    from pytest_sommelier import hookspec as documented

    assert sorted(documented.__all__) == sorted(HOOKS)


def test_the_hookspec_imports_no_layer_at_run_time(tmp_path: Path) -> None:
    code = (
        "import sys, pytest_sommelier.plugin.hookspec\n"
        "print(sorted(m for m in sys.modules if m.startswith('pytest_sommelier.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=True)  # fmt: skip
    layers = ("core", "data", "view", "inference")
    assert "pytest_sommelier.plugin.hookspec" in done.stdout
    assert [m for m in ast.literal_eval(done.stdout.strip()) if m.split(".")[1] in layers] == []
