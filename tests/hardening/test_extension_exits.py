"""``sys.exit()`` (``SystemExit``, any code) from extension code is the extension's one line and
a non-zero exit, never a CI pass without a verdict (docs/hardening.md, rows V02): a scorer, an
engine's loader and its ``generate``, a registration hook, the event hooks, an identity hook,
an importer and an entry point's import. Each place catches ``errors.EXTENSION_ERRORS``
(``Exception`` and ``SystemExit``); ``KeyboardInterrupt`` still interrupts.

The sessions run in process (fast tier); a ``SystemExit`` that escaped would end the run with
its own status, which the run's ``ret`` shows.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, SCORER_HOOK, call_text, write_scripted_suite
from property_budget import examples
from source_trees import parsed

from pytest_sommelier.core.types import Example
from pytest_sommelier.errors import EXTENSION_ERRORS, EvaluationError, SommelierError

SCRIPT = {"adapter": {i: call_text(GOLD[i]) for i in GOLD}, "base": {}}
GATES = [{"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]
EXAMPLE = Example(
    example_id="en-7", language="en", source_example_id=None, prompt_text="p",
    prompt_sha256="0" * 64, gold_call={"name": "book", "arguments": {}}, line=7,
    tools=[{"name": "book", "parameters": {"type": "object", "properties": {}}}],
)  # fmt: skip

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_sommelier"

EXITING_SCORER = SCORER_HOOK.replace(
    "def lenient(parsed, gold, example):\n",
    "def lenient(parsed, gold, example):\n    import sys\n    sys.exit(0)\n",
)
HOOKS = {
    "scorer": EXITING_SCORER,
    "scorer-hook": SCORER_HOOK.replace(
        "def pytest_sommelier_add_scorers(config):\n",
        "def pytest_sommelier_add_scorers(config):\n    raise SystemExit(0)\n",
    ),
    "run-written": SCORER_HOOK + (
        "\n\ndef pytest_sommelier_run_written(config, run_dir):\n    raise SystemExit(0)\n"
    ),
    "verdict": SCORER_HOOK + (
        "\n\ndef pytest_sommelier_verdict(config, verdict, run_dir):\n    raise SystemExit(0)\n"
    ),
    "identity": SCORER_HOOK + (
        "\n\ndef pytest_sommelier_model_identity(config, arm, identity):\n    raise SystemExit(0)\n"
    ),
}  # fmt: skip
LINES = {
    "scorer": "SOM-SCORER-RAISED",
    "scorer-hook": "SOM-PLUGIN-HOOK",
    "run-written": "SOM-PLUGIN-HOOK",
    "verdict": "SOM-PLUGIN-HOOK",
    "identity": "SOM-PLUGIN-HOOK",
}


def session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """In process: a ``SystemExit`` escaping the session would end ``pytest.main`` with its own
    status, which pytester reports as the run's (0 for ``sys.exit(0)``)."""
    return pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)


@pytest.mark.parametrize("place", sorted(HOOKS))
def test_a_sys_exit_in_extension_code_is_one_line_and_never_exit_0(
    pytester: pytest.Pytester, place: str
) -> None:
    """V02: a scorer calling ``sys.exit()`` made every item F, wrote no summary line and no
    verdict, and the process exited 0; the hooks' ``SystemExit`` the same."""
    suite = write_scripted_suite(
        pytester, SCRIPT, suite={"scorers": ["lenient_call"]}, gates=GATES
    )
    with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(HOOKS[place])
    result = session(pytester)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret not in (0, None), text[-3000:]
    assert LINES[place] in text and "SystemExit" in text, text[-3000:]
    assert "INTERNALERROR" not in text
    verdict = pytester.path / "out" / "gate_verdict.json"
    if place != "verdict":  # the verdict hook runs after the verdict is written
        assert not verdict.exists() or json.loads(verdict.read_text())["verdict"] != "pass"


ENGINE = '''
import sys


class Exiting:
    model_identity = {"engine": {"name": "exiting", "version": "1"}}
    adapter_identity = None

    def generate(self, prompts, decoding):
        sys.exit(0)


def load(engine, model, arms, *, suite_dir, worker_index=0):
    if PLACE == "load":
        sys.exit(0)
    return {name: Exiting() for name in arms}


def pytest_sommelier_add_engines(config):
    return {"exiting": load}
'''


@pytest.mark.parametrize("place", ["load", "generate"])
def test_a_sys_exit_in_an_engine_is_its_arms_line(pytester: pytest.Pytester, place: str) -> None:
    from suite_factory import write_suite

    suite = write_suite(
        pytester.path / "suite", arms={"base": {}}, comparisons=None,
        engine={"name": "exiting"}, model={"base": "fake-org/fake-model"},
    )  # fmt: skip
    (suite.parent / "conftest.py").write_text(f"PLACE = {place!r}\n" + ENGINE)
    result = session(pytester)
    text = result.stdout.str()
    assert result.ret == 1, text[-3000:]
    code = "SOM-MODEL-LOAD" if place == "load" else "SOM-MODEL-ERROR"
    assert f"{code}" in text and "SystemExit" in text, text[-3000:]
    assert "verdict: INCOMPLETE" in text


def test_a_sys_exit_in_an_importer_or_an_entry_points_import_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_sommelier.cli import main
    from pytest_sommelier.registry import Entry

    (tmp_path / "conftest.py").write_text(
        "from pytest_sommelier.data.prepare.importers.common import Importer\n\n"
        "def convert(row, where):\n    raise SystemExit(0)\n\n"
        "def pytest_sommelier_add_importers(config):\n"
        "    return {'exiting': Importer('exits', convert)}\n"
    )
    (tmp_path / "rows.jsonl").write_text('{"a": 1}\n')
    status = main(["import", "hook", "exiting", str(tmp_path / "rows.jsonl"), "--conftest-dir",
                   str(tmp_path), "--out", str(tmp_path / "out.jsonl")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert status == 2 and "SOM-IMPORT-CONTRACT" in err and "SystemExit" in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "out.jsonl").exists()
    (tmp_path / "exiting_module.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SommelierError, match=r"SOM-PLUGIN-LOAD.*SystemExit"):
        Entry("scorers", "exiting", "a test", "exiting_module:thing").load()


@settings(max_examples=examples(60), deadline=None)
@given(code=st.one_of(st.none(), st.integers(-(2**70), 2**70), st.text(max_size=200)))
def test_any_exit_code_from_a_scorer_is_its_line(code: object) -> None:
    """Any ``SystemExit`` code (0, None, a huge number, a text with newlines) from a scorer is
    one ``SOM-SCORER-RAISED`` line naming the scorer and the example."""
    from pytest_sommelier.core.scorers import Scorer, score_one

    def exiting(parsed: object, gold: object, view: object) -> object:
        raise SystemExit(code)

    with pytest.raises(EvaluationError) as caught:
        score_one(Scorer("exits", "1", "rate", exiting), None, EXAMPLE)
    assert caught.value.code == "SOM-SCORER-RAISED" and "\n" not in str(caught.value)
    assert "'exits'" in str(caught.value) and "SystemExit" in str(caught.value)


CALLS_INTO_EXTENSIONS = {
    "core/scorers.py": "score_one",
    "inference/select_engine.py": "load_generators",
    "inference/model_call.py": "__call__",
    "plugin/extensions.py": "hook_sources",
    "plugin/runner.py": "generator",
    "registry.py": "load",
    "data/prepare/importers/driver.py": "checked",
}
"""Every place extension code is called (module -> function): each catches EXTENSION_ERRORS."""


def test_every_call_into_extension_code_catches_system_exit() -> None:
    """The one class: each place that turns an extension's exception into its line catches
    ``EXTENSION_ERRORS`` (``Exception`` and ``SystemExit``), never ``Exception`` alone; the
    session finish catches them and ``KeyboardInterrupt``, and the event hooks go through
    ``extensions.call_event``."""
    assert SystemExit in EXTENSION_ERRORS and KeyboardInterrupt not in EXTENSION_ERRORS
    for module, function in CALLS_INTO_EXTENSIONS.items():
        tree = parsed(PACKAGE / module)
        found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                 and n.name == function]  # fmt: skip
        assert found, (module, function)
        handlers = [h for f in found for h in ast.walk(f) if isinstance(h, ast.ExceptHandler)]
        names = {ast.unparse(h.type) for h in handlers if h.type is not None}
        assert "EXTENSION_ERRORS" in names and "Exception" not in names, (module, names)
    session = (PACKAGE / "plugin" / "session.py").read_text(encoding="utf-8")
    assert "(*EXTENSION_ERRORS, KeyboardInterrupt)" in session and "except FINISH_ERRORS" in session
    assert "config.hook.pytest_sommelier" not in session
    assert "config.hook.pytest_sommelier" not in (PACKAGE / "plugin" / "extensions.py").read_text()


@pytest.mark.slow
def test_a_sys_exit_in_a_scorer_under_xdist_is_one_line_and_never_exit_0(
    pytester: pytest.Pytester,
) -> None:
    """V02 under ``-n 2``: the workers score each item (``worker_scores``) and the controller
    finishes the run; the exit reaches neither as a process exit."""
    suite = write_scripted_suite(
        pytester, SCRIPT, suite={"scorers": ["lenient_call"]}, gates=GATES
    )
    with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(EXITING_SCORER)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "out", "-n", "2", timeout=300
    )
    text = result.stdout.str() + result.stderr.str()
    assert result.ret not in (0, None), text[-3000:]
    assert "SOM-SCORER-RAISED" in text and "SystemExit" in text and "INTERNALERROR" not in text
    assert not (pytester.path / "out" / "gate_verdict.json").exists()
