"""An engine from an installed package: ``tests/packages/sommelier-echo-engine`` registers
``echo-package`` through the ``sommelier.engines`` entry point of its ``pyproject.toml``, and a
suite chooses it by ``[engine] name`` like a built-in. The package is installed for real: in
the fast tier its module and a ``*.dist-info`` (``METADATA``, ``entry_points.txt`` written from
its ``pyproject.toml``, as pip writes them) go into a folder put on ``sys.path``; the slow test
has pip build and install it (``pip install --no-deps --target``) and runs the session in a
subprocess. Either way ``importlib.metadata.entry_points`` finds it, nothing is faked.

The engine answers every prompt with the gold call of en-0 (and he-0, its translation): 2
full-call hits of the default split's 5 for the one base arm. Its faults (``[engine]
options.mode``) each give one line, never a traceback, and the run is incomplete.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from plugin_helpers import read_json
from suite_factory import write_suite

from pytest_sommelier.cli import main

PACKAGE = Path(__file__).resolve().parent.parent / "packages" / "sommelier-echo-engine"
MODULE = "sommelier_echo_engine"


def install_by_hand(target: Path) -> Path:
    """The package as an installed distribution in ``target``: the module, and its
    ``.dist-info`` with the metadata and entry points its ``pyproject.toml`` declares."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(PACKAGE / f"{MODULE}.py", target / f"{MODULE}.py")
    info = target / f"{MODULE}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
        encoding="utf-8",
    )
    groups = project["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items())
            for group, points in groups.items()
        ),
        encoding="utf-8",
    )
    return target


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The echo-engine package installed into a folder on ``sys.path`` for this test."""
    site = install_by_hand(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    return site


def echo_suite(pytester: pytest.Pytester, **engine: object) -> Path:
    """The default split, one base arm, ``[engine] name = "echo-package"`` (and ``options``)."""
    return write_suite(
        pytester.path / "suite",
        arms={"base": {}},
        comparisons=None,
        engine={"name": "echo-package", **engine},
        model={"base": "fake-org/fake-model"},
    )


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                              "--sommelier-out", "out", *args)  # fmt: skip


SOURCE = "entry point sommelier.engines:echo-package of sommelier-echo-engine 1.0"


def test_an_installed_engine_is_chosen_by_name_like_a_built_in(
    pytester: pytest.Pytester, installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    echo_suite(pytester)
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"sommelier extensions: engine echo-package (from {SOURCE})"])
    report = read_json(pytester.path / "out" / "eval" / "base" / "evaluation_report.json")
    assert report["model_identity"]["engine"] == {"name": "echo-package", "version": "1.0"}
    full_call = report["metrics"]["full_call_exact_match"]
    assert (full_call["numerator"], full_call["denominator"]) == (2, 5)  # en-0 and he-0
    capsys.readouterr()
    assert main(["plugins"]) == 0
    assert f"  echo-package  ({SOURCE})" in capsys.readouterr().out.splitlines()


FAULTS = {
    "load-raises": ("SOM-MODEL-LOAD", "engine 'echo-package' failed to load the generators: "
                    "RuntimeError: the echo engine cannot start"),
    "not-a-mapping": ("SOM-ENGINE-CONTRACT", "engine 'echo-package' returned a list, not "
                      "{arm name: generator}"),
    "missing-arm": ("SOM-ENGINE-CONTRACT", "returned no generator for arm 'base'"),
    "extra-arm": ("SOM-ENGINE-CONTRACT", "returned a generator for 'stowaway', not an arm"),
    "generate-raises": ("SOM-MODEL-ERROR", "the echo engine lost its voice"),
    "count": ("SOM-GEN-COUNT", ""),
    "type": ("SOM-GEN-TYPE", ""),
    "identity": ("SOM-MODEL-CONTRACT", "model_identity"),
}  # fmt: skip


@pytest.mark.parametrize("mode", list(FAULTS))
def test_a_bad_installed_engine_is_one_line_and_the_run_incomplete(
    pytester: pytest.Pytester, installed: Path, mode: str
) -> None:
    code, words = FAULTS[mode]
    echo_suite(pytester, options={"mode": mode})
    result = run(pytester)
    text = result.stdout.str()
    assert result.ret != 0 and "Traceback" not in text, text
    # each errored item's report is that one line (and the short summary lists each item)
    reports = [line for line in result.stdout.lines if line.startswith(f"{code}: ")]
    assert len(reports) == 5 and len(set(reports)) == 1, text
    assert words in reports[0], reports[0]
    summary = [line for line in result.stdout.lines if line.startswith("ERROR ")]
    assert len(summary) == 5, text
    # pytest 8.1 and later add the error's line to the short summary; 8.0 names the item only
    assert all(f" - {code}: " in line or " - " not in line for line in summary), text
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"


@pytest.mark.slow
def test_the_package_built_and_installed_by_pip_is_found_in_a_subprocess_session(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = shutil.copytree(PACKAGE, tmp_path / "source")  # pip builds in its source folder
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "--target", str(target), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    points = (next(target.glob(f"{MODULE}-*.dist-info")) / "entry_points.txt").read_text()
    assert "[sommelier.engines]" in points and "echo-package" in points
    echo_suite(pytester)
    path = os.pathsep.join([str(target), *filter(None, [os.environ.get("PYTHONPATH")])])
    monkeypatch.setenv("PYTHONPATH", path)  # the subprocess finds the installed package
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines([f"sommelier extensions: engine echo-package (from {SOURCE})"])
    report = read_json(pytester.path / "out" / "eval" / "base" / "evaluation_report.json")
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 2
