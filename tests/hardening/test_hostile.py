"""What a hostile tester broke (issue 20): one test per row `H` of docs/hardening.md.

Each test feeds one bad or odd input, as a user would, through the real components (a
pytester session with a scripted fake model, the ``sommelier`` command, the loaders) and pins
the promise the project makes: one clear line with a stable code, nothing half-written, never a
passing verdict from bad evidence, and a re-scored run equal to the run it re-scores.

The one fake (tests/fakes.py) answers from ``script.json`` and
misbehaves on purpose where ``script["__hostile__"]`` says so (per arm): it edits the split while
the run is in progress, raises an exception whose ``__str__`` raises, or reports an identity
that does not fit its arm.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, write_scripted_suite

from pytest_sommelier.cli import main
from pytest_sommelier.core.canonical import sha256_bytes

EXACT = {k: call_text(v) for k, v in GOLD.items()}
SCRIPT: dict[str, Any] = {"adapter": EXACT, "base": {}}
GATES = [{"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]


# ----------------------------------------------------------------------------- helpers


def hostile_suite(
    pytester: pytest.Pytester, hostile: dict[str, str] | None = None, **overrides: Any
) -> Path:
    """The scripted two-arm suite (tests/fakes.py); ``hostile``: arm -> misbehaviour."""
    overrides.setdefault("gates", GATES)
    script = {**SCRIPT, "__hostile__": hostile or {}}
    return write_scripted_suite(pytester, script, **overrides)


def session(pytester: pytest.Pytester, *args: str, out: str = "out") -> tuple[Any, str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", out, *args)
    return result, result.stdout.str() + "\n" + result.stderr.str()


def metrics_of(run: Path) -> dict[str, Any]:
    """Every arm's metrics per slice, as the run's reports hold them."""
    return {
        report.parent.name: read_json(report)["slices"]
        for report in sorted(run.glob("eval/*/evaluation_report.json"))
    }


def assert_one_line(text: str, code: str, *fragments: str) -> str:
    """``code`` on one output line holding every fragment; no traceback anywhere."""
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if code in line]
    assert lines, f"{code} not in output:\n{text}"
    matching = [line for line in lines if all(f in line for f in fragments)]
    assert matching, (fragments, lines)
    return matching[0]


# ============================================================================ H01 byte copies


def test_H01_a_crlf_split_is_copied_byte_for_byte_and_rescores(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = hostile_suite(pytester)
    split = suite.parent / "data" / "test.jsonl"
    split.write_bytes(split.read_bytes().replace(b"\n", b"\r\n"))
    original = split.read_bytes()
    result, _ = session(pytester)
    assert result.ret == 0
    run = pytester.path / "out"
    copy = run / "inputs" / "test_split.jsonl"
    assert copy.read_bytes() == original, "the run's copy of the split is a byte copy"
    assert read_json(run / "suite.resolved.json")["test_split"]["sha256"] == sha256_bytes(original)
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run)]) == 0, capsys.readouterr().err
    assert metrics_of(run) == before
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "does not have the digest" not in page and "en-1" in page


def test_H01b_a_line_separator_in_a_generation_reads_back(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """U+2028 / U+0085 inside ``raw_text`` are written raw (JSON allows them unescaped): the
    reader of stored generations splits lines at ``\\n`` only, as the split loader does."""
    adapter = {**EXACT, "en-1": "\u2028" + EXACT["en-1"] + "\x85"}
    suite = hostile_suite(pytester)
    (suite.parent / "script.json").write_text(json.dumps({**SCRIPT, "adapter": adapter}))
    result, _ = session(pytester)
    assert result.ret == 0
    run = pytester.path / "out"
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run), "--out", str(pytester.path / "again")]) == 0, (
        capsys.readouterr().err
    )
    assert metrics_of(pytester.path / "again") == before


# ============================================================================ H08 split edited


def test_H08_split_edited_while_the_run_is_in_progress(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fake rewrites one gold call of the split on its first call: the run's copy, its
    resolved digest and its reports all describe the split as it was loaded."""
    suite = hostile_suite(pytester, {"base": "edit-split"})
    original = (suite.parent / "data" / "test.jsonl").read_bytes()
    result, _ = session(pytester)
    assert (suite.parent / "edited").exists()
    assert (suite.parent / "data" / "test.jsonl").read_bytes() != original
    assert result.ret == 0
    run = pytester.path / "out"
    assert (run / "inputs" / "test_split.jsonl").read_bytes() == original
    digest = sha256_bytes(original)
    assert read_json(run / "suite.resolved.json")["test_split"]["sha256"] == digest
    for report in run.glob("eval/*/evaluation_report.json"):
        assert read_json(report)["test_split_sha256"] == digest
    before = metrics_of(run)
    capsys.readouterr()
    assert main(["rescore", str(run)]) == 0, capsys.readouterr().err
    assert metrics_of(run) == before
    assert read_json(run / "gate_verdict.json")["verdict"] == "pass"


def test_helpers_can_fail(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        assert_one_line("Traceback\nSOM-X: a", "SOM-X")
    with pytest.raises(AssertionError):
        assert_one_line("SOM-X: a", "SOM-X", "b")
    assert read_jsonl is not None


# ============================================================================ H02 example ids

BAD_IDS = [
    ("double-colon", "en::0001", "'::'"),
    ("bracket", "en[0002]", "en[0002]"),
    ("newline", "en-1\n", "en-1\\n"),
    ("only-spaces", "   ", "blank"),
    ("control", "en\x01", "en\\x01"),
    ("empty", "", "empty"),
]
BAD_ID_CASES = [case[1:] for case in BAD_IDS]
BAD_ID_NAMES = [case[0] for case in BAD_IDS]


@pytest.mark.parametrize(("value", "fragment"), BAD_ID_CASES, ids=BAD_ID_NAMES)
@pytest.mark.parametrize("field", ["example_id", "source_example_id"])
def test_H02_ids_that_break_node_ids_are_refused_by_the_split_loader(
    tmp_path: Path, field: str, value: str, fragment: str
) -> None:
    from suite_factory import default_rows, write_split

    from pytest_sommelier.data.split.load import load_split
    from pytest_sommelier.errors import InputError

    rows = default_rows()
    rows[3][field] = value  # he-0: example_id, or the root it names
    path = write_split(tmp_path / "test.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_split(path, ["en", "he"])
    text = str(info.value)
    assert info.value.code == "SOM-SPLIT-FIELD" and "\n" not in text
    assert f"test.jsonl:4: field '{field}'" in text and fragment in text, text


@pytest.mark.parametrize(("value", "fragment"), BAD_ID_CASES, ids=BAD_ID_NAMES)
def test_H02_ids_that_break_node_ids_are_refused_by_format_and_importers(
    tmp_path: Path, value: str, fragment: str
) -> None:
    from pytest_sommelier.data.prepare.formatting import read_prepared
    from pytest_sommelier.data.prepare.importers.common import ImportOptions
    from pytest_sommelier.data.prepare.importers.driver import import_file
    from pytest_sommelier.errors import InputError

    tool = {"name": "noop", "parameters": {"type": "object", "properties": {}}}
    row = {"example_id": value, "language": "en", "source_example_id": None, "query": "q",
           "tools": [tool], "gold_call": {"name": "noop", "arguments": {}}}
    prepared = tmp_path / "p.jsonl"
    prepared.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_prepared(prepared)
    assert info.value.code == "SOM-PREPARED-FIELD", str(info.value)
    assert "p.jsonl:1: field 'example_id'" in str(info.value) and fragment in str(info.value)
    chat = {"uid": value, "tools": [tool], "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "noop", "arguments": "{}"}}]}]}
    source = tmp_path / "chat.jsonl"
    source.write_text(json.dumps(chat) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        import_file("openai-chat", source, tmp_path / "o.jsonl", ImportOptions(id_field="uid"))
    text = str(info.value)  # a blank id is the importer's own refusal of the id field
    assert ("field 'example_id'" in text and fragment in text) or "field 'uid'" in text, text
    assert not (tmp_path / "o.jsonl").exists()
    if value.strip():  # BFCL's record id becomes the example id
        from pytest_sommelier.data.prepare.bfcl import _jsonl

        with pytest.raises(InputError) as info:
            list(_jsonl(json.dumps({"id": value}) + "\n", "q.json"))
        assert "SOM-BFCL-FIELD" in str(info.value) and "q.json:1: field 'id'" in str(info.value)


def test_H02_every_id_the_rule_allows_selects_and_reruns_its_own_item(
    pytester: pytest.Pytester,
) -> None:
    """Ids using every character the rule allows (``.``, ``:``, ``_``, ``-``) select exactly
    their item by node id, and ``--lf`` reruns every failure of a strict run."""
    from plugin_helpers import SOURCES, rows
    from suite_factory import write_split

    suite = hostile_suite(pytester, gates=None)
    renamed = {"en-0": "en.0:a", "en-1": "en_1-b:c", "en-2": "en:2", "en-3": "3.x"}
    split_rows = rows()
    for row in split_rows:
        row["example_id"] = renamed.get(row["example_id"], row["example_id"])
        if row["source_example_id"]:
            row["source_example_id"] = renamed[SOURCES[row["example_id"]]]
    write_split(suite.parent / "data" / "test.jsonl", split_rows)
    (suite.parent / "script.json").write_text(json.dumps({"__hostile__": {}}))
    node = "suite/sommelier.toml::adapter::en::en_1-b:c"
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "o1", node)
    assert result.parseoutcomes().get("missed", result.parseoutcomes().get("passed")) == 1
    result = pytester.runpytest("--sommelier-out", "o2", "--sommelier-strict")
    assert result.parseoutcomes()["failed"] == 14
    result = pytester.runpytest("--sommelier-out", "o3", "--sommelier-strict", "--lf")
    assert result.parseoutcomes()["failed"] == 14


def test_H02_names_and_patterns_refuse_a_trailing_newline(tmp_path: Path) -> None:
    """Anchored patterns end at ``\\Z`` (Python's ``$`` also matches before a final newline):
    arm and slice names (from a suite or a stored run), hub ids, languages, split names."""
    from suite_factory import write_suite

    from pytest_sommelier.data.prepare.formatting import check_split_name
    from pytest_sommelier.data.references import is_hub_id
    from pytest_sommelier.data.suite.load import load_suite, valid_name
    from pytest_sommelier.errors import InputError

    assert valid_name("base") and not valid_name("base\n")
    assert is_hub_id("org/name") and not is_hub_id("org/name\n")
    with pytest.raises(InputError):
        check_split_name("test\n")
    suite = write_suite(tmp_path / "s", suite={"slices": ["en", "he\n"]})
    with pytest.raises(InputError) as info:
        load_suite(suite)
    assert info.value.code == "SOM-SUITE-BAD-NAME", str(info.value)


# ============================================================================ H03 exception text


def test_H03_a_model_error_whose_str_raises_is_one_line(pytester: pytest.Pytester) -> None:
    hostile_suite(pytester, {"adapter": "unprintable"})
    result, text = session(pytester)
    assert result.ret == 1
    assert result.parseoutcomes().get("errors") == 7
    line = assert_one_line(text, "SOM-MODEL-ERROR", "arm 'adapter'", "Unprintable")
    assert "could not be read" in line
    assert len(text.splitlines()) < 200, "one line per item, not a traceback"
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "incomplete"


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


class _Loud(Exception):
    def __str__(self) -> str:
        return "\n\n  first line  \nsecond line\n" + "x" * 500 + "\ud800"


def test_H03_exception_text_never_raises_and_is_one_printable_line() -> None:
    from pytest_sommelier.errors import exception_text

    assert exception_text(ValueError("boom")) == "ValueError: boom"
    assert exception_text(ValueError()) == "ValueError"
    unreadable = exception_text(_Unprintable())
    assert unreadable.startswith("_Unprintable") and "could not be read" in unreadable
    loud = exception_text(_Loud(), limit=40)
    assert loud.startswith("_Loud: first line") and "\n" not in loud and len(loud) <= 60
    loud.encode("utf-8")  # a lone surrogate is escaped, so the line can be printed


@pytest.mark.parametrize("where", ["factory", "generate"])
def test_H03_every_place_an_exception_becomes_a_line_uses_the_safe_text(where: str) -> None:
    """The runner's load and generate errors, for any exception a user's code raises."""
    from pytest_sommelier.errors import EvaluationError
    from pytest_sommelier.plugin.runner import Runner

    class Generator:
        def __init__(self) -> None:
            self.model_identity = {"m": 1}
            self.adapter_identity = None

        def generate(self, prompts: list[str], decoding: dict) -> list[str]:
            raise _Unprintable()

    def factory(arm: str) -> Generator:
        if where == "factory":
            raise _Unprintable()
        return Generator()

    runner = Runner()
    with pytest.raises(EvaluationError) as info:
        generator = runner.generator("s", "base", None, factory)
        runner._call(generator, "base", ["p"], {"batch_size": 1})
    assert "_Unprintable" in str(info.value) and "could not be read" in str(info.value)


# ============================================================================ H04 identities


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_H04_an_adapter_arm_without_an_adapter_identity_is_refused(
    pytester: pytest.Pytester, cache: bool
) -> None:
    """The arm is configured with an adapter, its generator says it has none (what
    ``ADAPTERS.get(arm)`` gives for a missing name): with the cache, every record was served
    from the base arm's entries; without it, the arm was recorded as ``model_kind: base``."""
    hostile_suite(pytester, {"adapter": "no-adapter-identity"})
    args = ["--sommelier-cache-dir", str(pytester.path / "gencache")] if cache else []
    result, text = session(pytester, *args)
    assert result.ret == 1
    assert result.parseoutcomes().get("errors") == 7
    assert_one_line(text, "SOM-MODEL-CONTRACT", "arm 'adapter'", "adapter_identity", "arms.adapter")
    calls = read_jsonl(pytester.path / "suite" / "calls.jsonl")
    assert {call["arm"] for call in calls} == {"base"}
    out = pytester.path / "out"
    assert read_json(out / "gate_verdict.json")["verdict"] == "incomplete"
    assert not (out / "eval" / "adapter" / "generations.en.jsonl").exists() or not read_jsonl(
        out / "eval" / "adapter" / "generations.en.jsonl"
    )


def test_H04_a_base_arm_reporting_an_adapter_identity_is_refused(
    pytester: pytest.Pytester,
) -> None:
    hostile_suite(pytester, {"base": "adapter-identity"})
    result, text = session(pytester)
    assert result.ret == 1
    assert result.parseoutcomes().get("errors") == 7
    assert_one_line(text, "SOM-MODEL-CONTRACT", "arm 'base'", "adapter_identity")
    report = pytester.path / "out" / "eval" / "base" / "evaluation_report.json"
    assert not report.exists() or read_json(report)["model_kind"] == "base"


# ============================================================================ H05 statistics

BAD_STATISTICS = [
    ("resamples-huge", {"resamples": 1_000_000_000}, "resamples", "100000"),
    ("resamples-one", {"resamples": 1}, "resamples", "200"),
    ("level-tiny", {"confidence_level": 1e-300}, "confidence_level", "0.5"),
    ("level-high", {"confidence_level": 0.99999}, "confidence_level", "0.99"),
    ("seed-huge", {"seed": 2**70}, "seed", "2**64"),
]


@pytest.mark.parametrize(
    ("statistics", "key", "fragment"),
    [case[1:] for case in BAD_STATISTICS],
    ids=[case[0] for case in BAD_STATISTICS],
)
def test_H05_statistics_settings_are_bounded_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statistics: dict, key: str, fragment: str
) -> None:
    from suite_factory import write_suite

    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.errors import InputError

    suite = write_suite(tmp_path / "s", statistics=statistics)
    with pytest.raises(InputError) as info:
        load_suite(suite)
    text = str(info.value)
    assert info.value.code == "SOM-SUITE-INVALID-VALUE", text
    assert f"[statistics]: key '{key}'" in text and fragment in text, text


def test_H05_a_resolved_suite_with_unbounded_statistics_is_not_rescored(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_suite(pytester)
    session(pytester)
    run = pytester.path / "out"
    resolved = read_json(run / "suite.resolved.json")
    resolved["statistics"]["resamples"] = 1_000_000_000
    (run / "suite.resolved.json").write_text(json.dumps(resolved), encoding="utf-8")
    capsys.readouterr()
    assert main(["rescore", str(run), "--out", str(pytester.path / "again")]) == 2
    err = capsys.readouterr().err
    assert_one_line(err, "SOM-STORED-FIELD", "suite.resolved.json", "resamples")
    assert not (pytester.path / "again").exists()


def test_H05_any_error_at_session_finish_is_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error that is not a SommelierError at session finish (numpy's MemoryError, a bug)
    is one line in the summary, no traceback, no verdict, exit 1."""
    from pytest_sommelier.plugin import session as session_module

    hostile_suite(pytester)
    first, _ = session(pytester)
    assert first.ret == 0

    def exhausted(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("Unable to allocate 149. GiB for an array")

    monkeypatch.setattr(session_module, "evaluate_run", exhausted)
    result, text = session(pytester)
    assert result.ret == 1
    assert_one_line(text, "SOM-SESSION-FINISH", "MemoryError", "Unable to allocate")
    assert "INTERNALERROR" not in text and "no verdict was written" in text
    assert not (pytester.path / "out" / "gate_verdict.json").exists(), "no stale verdict"


# ============================================================================ H06 output folder


def test_H06_a_read_only_output_folder_holding_a_passing_run(pytester: pytest.Pytester) -> None:
    """Tests run as root, which ignores permissions: the read-only file system is simulated
    (``os.access`` says no, removals raise ``EROFS``) for paths under the output folder."""
    import errno
    import os

    hostile_suite(pytester)
    first, _ = session(pytester)
    out = pytester.path / "out"
    assert first.ret == 0 and read_json(out / "gate_verdict.json")["verdict"] == "pass"
    calls = pytester.path / "suite" / "calls.jsonl"
    calls.unlink()
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_access = os.access

    def read_only_access(path: Any, mode: int, **kwargs: Any) -> bool:
        if str(path).startswith(str(out)) and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    with pytest.MonkeyPatch.context() as patch:  # not monkeypatch.undo(): pytester's chdir
        patch.setattr(os, "access", read_only_access)
        result, text = session(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    line = assert_one_line(text, "SOM-OUT-UNWRITABLE", str(out), "not writable")
    assert "nothing was run" in line and not calls.exists(), "refused before any model call"
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before

    # the folder turns read-only after collection: the finish cannot clear it
    real_unlink = Path.unlink

    def read_only_unlink(self: Path, missing_ok: bool = False) -> None:
        if str(self).startswith(str(out)):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_unlink(self, missing_ok=missing_ok)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Path, "unlink", read_only_unlink)
        result, text = session(pytester)
    assert result.ret == 1
    line = assert_one_line(text, "SOM-OUT-UNWRITABLE", "gate_verdict.json", "Read-only")
    assert "earlier gate_verdict.json is still there" in line
    assert "no verdict was written" in text and "verdict: PASS" not in text


def test_H06_a_reused_folder_keeps_nothing_of_the_earlier_run(pytester: pytest.Pytester) -> None:
    """A suite with fewer arms into the folder of one with more, after an interrupted write
    (SIGTERM) left temporary files: only this run's files remain."""
    hostile_suite(pytester)
    session(pytester)
    out = pytester.path / "out"
    for leftover in (out / ".gate_verdict.json.abc.tmp", out / "eval" / "base" / ".x.tmp"):
        leftover.write_text("{", encoding="utf-8")
    hostile_suite(pytester, arms={"adapter": {"adapter": "adapter"}}, comparisons=None)
    result, _ = session(pytester)
    assert result.ret == 0
    assert sorted(p.name for p in (out / "eval").iterdir()) == ["adapter"]
    assert not list(out.rglob("*.tmp"))
    assert list(read_json(out / "suite.resolved.json")["arms"]) == ["adapter"]


# ============================================================================ H07 concurrency

SLOW_WRITES = """

import os
import time

from pytest_sommelier.data.store import artifacts

_write = artifacts.write_atomic


_DELAYS = {"first": float(os.environ.get("SLOW_FIRST", "0"))}


def _slow_write(path, chunks):  # the writers interleave: one starts late, the other ends late
    time.sleep(_DELAYS.pop("first", 0.0))
    if pathlib.Path(path).name == "gate_verdict.json":
        time.sleep(float(os.environ.get("SLOW_VERDICT", "0")))
    _write(path, chunks)


artifacts.write_atomic = _slow_write


@pytest.hookimpl(tryfirst=True)  # before the plugin's finish: both finishes start together
def pytest_sessionfinish(session):
    import os

    barrier = pathlib.Path(os.environ["BARRIER"])
    (barrier / str(os.getpid())).write_text("")
    deadline = time.monotonic() + 30
    while len(list(barrier.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
"""


@pytest.mark.slow
def test_H07_two_sessions_writing_one_output_folder(tmp_path: Path) -> None:
    """Two sessions at once into one ``--sommelier-out``: one passing (exact calls), one
    failing (prose). The folder ends up holding exactly one session's run, verdict and
    generations alike; the other session says the folder is in use and writes nothing."""
    import subprocess
    import sys
    from types import SimpleNamespace

    out = tmp_path / "shared"
    roots = {}
    delays = {"passing": {"SLOW_FIRST": "0.5"}, "failing": {"SLOW_VERDICT": "1.5"}}
    for name, adapter in (("passing", EXACT), ("failing", {})):
        root = tmp_path / name
        suite = write_scripted_suite(
            SimpleNamespace(path=root),  # type: ignore[arg-type]
            {"adapter": adapter, "base": {}, "__hostile__": {}},
            gates=GATES,
        )
        (suite.parent / "conftest.py").write_text(FAKE_CONFTEST + SLOW_WRITES)
        roots[name] = root
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--sommelier-out"]
    command.append(str(out))
    import os

    for attempt in range(3):
        barrier = tmp_path / f"barrier-{attempt}"
        barrier.mkdir()
        procs = {
            name: subprocess.Popen(
                command,
                cwd=root,
                env={**os.environ, "BARRIER": str(barrier), **delays[name]},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for name, root in roots.items()
        }
        texts = {name: proc.communicate(timeout=300)[0] for name, proc in procs.items()}
        refused = [name for name, text in texts.items() if "SOM-OUT-IN-USE" in text]
        assert len(refused) == 1, texts  # the finishes overlap (barrier): one is refused
        verdict = read_json(out / "gate_verdict.json")["verdict"]
        writer = "passing" if verdict == "pass" else "failing"
        assert verdict in ("pass", "fail") and writer not in refused, texts
        raw = read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")[0]["raw_text"]
        assert (raw == EXACT["en-0"]) == (writer == "passing"), "verdict and generations differ"
        for name in refused:
            assert procs[name].returncode == 1 and "Traceback" not in texts[name]
        assert not list(out.rglob("*.tmp"))


# ============================================================================ H09 rescore


def _edit_record(path: Path, index: int, **changes: Any) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    record = json.loads(lines[index])
    record.update(changes)
    lines[index] = json.dumps(record)
    path.write_text("\n".join(lines), encoding="utf-8")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_H09_rescore_rederives_every_derived_field(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record's ``parse_status`` edited to ``ok`` (its ``raw_text`` prose): rescore parses
    ``raw_text`` again and writes records whose every derived field agrees with it."""
    hostile_suite(pytester)
    session(pytester)
    run = pytester.path / "out"
    generations = run / "eval" / "base" / "generations.en.jsonl"
    _edit_record(generations, 0, parse_status="ok", model_kind="adapter")
    capsys.readouterr()
    again = pytester.path / "again"
    status = main(["rescore", str(run), "--out", str(again)])
    err = capsys.readouterr().err
    assert status == 0 and "Traceback" not in err, err
    record = read_jsonl(again / "eval" / "base" / "generations.en.jsonl")[0]
    assert record["parse_status"] == "no_json" and record["parsed_call"] is None
    assert record["miss_category"] == "parse_no_json" and record["model_kind"] == "base"
    assert read_json(again / "gate_verdict.json")["verdict"] == "pass"
    assert "en-0" in (again / "report.html").read_text(encoding="utf-8")


def test_H09_a_refused_rescore_writes_nothing_anywhere(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """A check that fails late (the page, after the reports are derived) still leaves ``--out``
    absent and an in-place run byte-identical: everything is checked before anything is
    written."""
    hostile_suite(pytester)
    session(pytester)
    run = pytester.path / "out"
    telemetry = run / "eval" / "base" / "inference_telemetry.json"
    telemetry.write_text("{broken", encoding="utf-8")  # read only by the page
    before = _snapshot(run)
    capsys.readouterr()
    again = pytester.path / "again"
    status = main(["rescore", str(run), "--out", str(again)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert_one_line(err, "SOM-STORED-BROKEN", "inference_telemetry.json")
    assert "rescore" not in err.split("hint:")[-1], "the hint is not the command just run"
    assert not again.exists()
    assert main(["rescore", str(run)]) == 2
    assert _snapshot(run) == before, "a refused in-place rescore leaves the run byte-identical"


def test_H09_a_rescore_refused_by_its_last_check_writes_nothing(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page is rendered last; when it refuses (any check of the page), neither ``--out``
    nor the run in place has been written to."""
    from pytest_sommelier.errors import InputError

    hostile_suite(pytester)
    session(pytester)
    # the module the command will run (sys.modules'), imported after the session: pytester
    # drops the modules a session imported first
    rescore = importlib.import_module("pytest_sommelier.commands.rescore")

    run = pytester.path / "out"
    before = _snapshot(run)

    def refusing(run_dir: Path, out: Path | None = None) -> Path:
        raise InputError("SOM-STORED-FIELD", "a record the page refuses", "fix the record")

    monkeypatch.setattr(rescore, "write_report", refusing)
    capsys.readouterr()
    again = pytester.path / "again"
    assert main(["rescore", str(run), "--out", str(again)]) == 2
    assert not again.exists(), "nothing written to --out"
    assert main(["rescore", str(run)]) == 2
    assert _snapshot(run) == before, "the run in place is byte-identical"


# ============================================================================ H10, H11 format

WEATHER_TOOL = {
    "name": "get_weather",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    },
}


def _prepared(tmp_path: Path, tools: list[dict], query: str = "Weather?") -> Path:
    row = {"example_id": "en-1", "language": "en", "source_example_id": None, "query": query,
           "tools": tools, "gold_call": {"name": "get_weather",
                                         "arguments": {"city": "Paris", "days": 2}}}
    path = tmp_path / "prepared.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


BROKEN_REFS = [
    ("remote", {"$ref": "https://example.invalid/schema.json"}, "not in the tool"),
    ("missing-def", {"$ref": "#/$defs/x"}, "#/$defs/x"),
    ("relative-file", {"$ref": "other.json#/a"}, "not in the tool"),
]


@pytest.mark.parametrize("called", [True, False], ids=["gold-tool", "other-tool"])
@pytest.mark.parametrize(
    ("ref", "fragment"), [c[1:] for c in BROKEN_REFS], ids=[c[0] for c in BROKEN_REFS]
)
def test_H10_an_unresolvable_ref_is_one_line_naming_the_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, called: bool, ref: dict, fragment: str
) -> None:
    import urllib.request

    from pytest_sommelier.data.prepare.formatting import read_prepared
    from pytest_sommelier.errors import InputError

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a $ref was fetched over the network")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    broken = {"name": "broken" if not called else "get_weather", "parameters": {
        "type": "object", "properties": {"city": ref, "days": {"type": "integer"}}}}
    tools = [broken] if called else [WEATHER_TOOL, broken]
    with pytest.raises(InputError) as info:
        read_prepared(_prepared(tmp_path, tools))
    text = str(info.value)
    assert info.value.code == "SOM-PREPARED-FIELD" and "\n" not in text, text
    index = 0 if called else 1
    assert f"prepared.jsonl:1: field 'tools[{index}].parameters'" in text and fragment in text


def test_H10_a_local_ref_that_resolves_is_accepted(tmp_path: Path) -> None:
    from pytest_sommelier.data.prepare.formatting import read_prepared

    tool = {"name": "get_weather", "parameters": {
        "type": "object", "$defs": {"city": {"type": "string"}},
        "properties": {"city": {"$ref": "#/$defs/city"}, "days": {"type": "integer"}}}}
    (example,) = read_prepared(_prepared(tmp_path, [tool]))
    assert example.gold_call["arguments"]["city"] == "Paris"


@pytest.mark.parametrize("field", ["query", "tools", "gold_call"])
def test_H11_a_lone_surrogate_in_a_prepared_row_is_one_line(tmp_path: Path, field: str) -> None:
    from pytest_sommelier.data.prepare.formatting import read_prepared
    from pytest_sommelier.errors import InputError

    path = _prepared(tmp_path, [WEATHER_TOOL])
    row = json.loads(path.read_text(encoding="utf-8"))
    if field == "query":
        row["query"] = "Weather \ud800?"
    elif field == "tools":
        row["tools"][0]["description"] = "bad \udc00"
    else:
        row["gold_call"]["arguments"]["city"] = "Paris\ud800"
        row["tools"][0]["parameters"]["properties"]["city"] = {"type": "string"}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")  # json writes it as \\ud800
    with pytest.raises(InputError) as info:
        read_prepared(path)
    text = str(info.value)
    assert info.value.code == "SOM-PREPARED-ENCODING", text
    assert "prepared.jsonl:1" in text and field in text and "surrogate" in text


def test_H11_a_lone_surrogate_in_an_import_is_one_line(tmp_path: Path) -> None:
    from pytest_sommelier.data.prepare.importers.common import ImportOptions
    from pytest_sommelier.data.prepare.importers.driver import import_file
    from pytest_sommelier.errors import InputError

    chat = {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Weather \ud800?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": '{"city": "Paris"}'}}]}]}
    for suffix, text in ((".jsonl", json.dumps(chat) + "\n"), (".json", json.dumps([chat]))):
        source = tmp_path / f"chat{suffix}"
        source.write_text(text, encoding="utf-8")
        with pytest.raises(InputError) as info:
            import_file("openai-chat", source, tmp_path / "o.jsonl", ImportOptions())
        assert info.value.code == "SOM-IMPORT-ENCODING", str(info.value)
        assert source.name in str(info.value) and "surrogate" in str(info.value)
    assert not (tmp_path / "o.jsonl").exists()


def test_W_a_tool_schema_is_checked_under_the_draft_its_schema_names(tmp_path: Path) -> None:
    """``$schema`` was ignored (every schema checked as 2020-12): a draft-04 schema is checked
    as draft 4, one naming no known draft is refused naming the drafts and the default."""
    from pytest_sommelier.data.prepare.formatting import read_prepared
    from pytest_sommelier.errors import InputError

    days = {"type": "integer", "minimum": 1, "exclusiveMinimum": True}  # draft-04 spelling
    tool = {"name": "get_weather", "parameters": {
        "$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
        "properties": {"city": {"type": "string"}, "days": days}}}
    assert read_prepared(_prepared(tmp_path, [tool]))
    del tool["parameters"]["$schema"]
    with pytest.raises(InputError, match=r"exclusiveMinimum|True is not of type"):
        read_prepared(_prepared(tmp_path, [tool]))
    tool["parameters"]["$schema"] = "https://example.invalid/my-draft"
    with pytest.raises(InputError) as info:
        read_prepared(_prepared(tmp_path, [tool]))
    assert "names no known JSON Schema draft" in str(info.value) and "2020-12" in str(info.value)


# ============================================================================ weak items


def test_W_a_byte_order_mark_in_the_suite_file_is_accepted(tmp_path: Path) -> None:
    from suite_factory import write_suite

    from pytest_sommelier.data.suite.load import load_suite

    suite = write_suite(tmp_path / "s")
    plain = load_suite(suite)
    suite.write_bytes(b"\xef\xbb\xbf" + suite.read_bytes())
    assert load_suite(suite) == plain


def test_W_rows_of_a_language_that_is_no_slice_are_counted_and_said(
    pytester: pytest.Pytester,
) -> None:
    from plugin_helpers import rows
    from suite_factory import make_row, write_split

    suite = hostile_suite(pytester)
    extra = [make_row("fr-0", "fr"), make_row("fr-1", "fr"), make_row("He-0", "He")]
    write_split(suite.parent / "data" / "test.jsonl", [*rows(), *extra])
    result, text = session(pytester)
    assert result.ret == 0
    line = next(x for x in text.splitlines() if "not evaluated" in x)
    assert "3 row(s)" in line and "'fr' 2" in line and "'He' 1" in line and "en, he" in line


@pytest.mark.parametrize(
    ("identity", "fragment"),
    [
        ({"weights": float("nan")}, "model_identity['weights'] is nan"),
        ({"sha": b"\x00"}, "model_identity['sha'] is a bytes"),
        ({1: "x"}, "model_identity has the key 1 (int)"),
        ({"a": [{"b": float("inf")}]}, "model_identity['a'][0]['b'] is inf"),
        ({"a": "\ud800"}, "model_identity['a'] is a str that is not valid Unicode"),
    ],
    ids=["nan", "bytes", "int-key", "nested-inf", "surrogate"],
)
def test_W_an_identity_that_is_not_json_names_the_key(identity: dict, fragment: str) -> None:
    from pytest_sommelier.errors import EvaluationError
    from pytest_sommelier.plugin.runner import check_generator

    class Generator:
        def __init__(self) -> None:
            self.model_identity = identity
            self.adapter_identity = None

        def generate(self, prompts: list[str], decoding: dict) -> list[str]:
            return []

    with pytest.raises(EvaluationError) as info:
        check_generator(Generator(), "base")
    assert info.value.code == "SOM-MODEL-CONTRACT" and fragment in str(info.value)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("verdict", "reserved"), ("Verdict", "reserved"), ("a::b", "'::'"), ("a\nb", "control")],
)
def test_W_a_gate_name_that_collides_with_the_verdict_is_refused(
    tmp_path: Path, name: str, fragment: str
) -> None:
    from suite_factory import write_suite

    from pytest_sommelier.data.suite.load import load_suite
    from pytest_sommelier.errors import InputError

    gates = [{"name": name, "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]
    with pytest.raises(InputError) as info:
        load_suite(write_suite(tmp_path / "s", gates=gates))
    assert info.value.code == "SOM-SUITE-BAD-NAME" and fragment in str(info.value)
    assert "[[gates]] #1" in str(info.value)


def test_W_a_gate_on_acceptable_call_match_without_acceptable_values_is_refused_at_load(
    pytester: pytest.Pytester,
) -> None:
    gates = [{"name": "bfcl", "arm": "adapter", "metric": "acceptable_call_match", "min": 0.5}]
    hostile_suite(pytester, gates=gates)
    result, text = session(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_one_line(text, "SOM-SUITE-UNKNOWN-METRIC", "acceptable_arguments", "('bfcl')")
    assert not (pytester.path / "suite" / "calls.jsonl").exists(), "refused before any model call"


@pytest.mark.parametrize(
    "target", ["suite.resolved.json", "gate_verdict.json", "eval/base/evaluation_report.json",
               "inputs/test_split.jsonl", "."],
)
def test_W_report_out_never_overwrites_a_file_of_the_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    hostile_suite(pytester)
    session(pytester)
    run = pytester.path / "out"
    before = _snapshot(run)
    capsys.readouterr()
    assert main(["report", str(run), "--out", str(run / target)]) == 2
    assert_one_line(capsys.readouterr().err, "SOM-REPORT-OUT", "one of the run's own files")
    assert _snapshot(run) == before
    assert main(["report", str(run), "--out", str(run / "page-copy.html")]) == 0


def test_W_an_unknown_field_in_a_stored_generation_record_is_refused(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_suite(pytester)
    session(pytester)
    run = pytester.path / "out"
    _edit_record(run / "eval" / "base" / "generations.en.jsonl", 1, verdict="pass")
    capsys.readouterr()
    assert main(["rescore", str(run), "--out", str(pytester.path / "again")]) == 2
    assert_one_line(
        capsys.readouterr().err, "SOM-STORED-FIELD", "generations.en.jsonl:2", "'verdict'"
    )
    assert not (pytester.path / "again").exists()


def test_W_identity_refusals_name_what_differs_underneath(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile_suite(pytester)
    session(pytester, out="full")
    session(pytester, "-k", "not en-3", out="subset")
    hostile_suite(pytester, decoding={"max_new_tokens": 9})
    session(pytester, out="other")
    capsys.readouterr()
    assert main(["compare", "other/eval/adapter", "full/eval/adapter"]) == 4
    line = assert_one_line(capsys.readouterr().err, "SOM-COMPARE-IDENTITY", "config_sha256")
    assert "underneath: decoding.max_new_tokens: 9 vs 64" in line
    assert main(["compare", "subset/eval/adapter", "full/eval/adapter"]) == 4
    line = assert_one_line(capsys.readouterr().err, "SOM-COMPARE-IDENTITY")
    assert "the candidate scored 3 of the 4 examples of slice 'en'" in line and "subset" in line


def test_W_an_import_with_every_row_skipped_names_the_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prose = {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Sunny."}]}
    source = tmp_path / "chat.jsonl"
    source.write_text((json.dumps(prose) + "\n") * 3, encoding="utf-8")
    status = main(["import", "openai-chat", str(source), "--out", str(tmp_path / "o.jsonl")])
    err = capsys.readouterr().err
    assert status == 2
    line = assert_one_line(err, "SOM-IMPORT-EMPTY", "3 skipped (no_call 3)")
    assert "first: openai-chat-1 (no_call)" in line and "chat.jsonl:1" in line
    assert not (tmp_path / "o.jsonl").exists()


# ============================================================================ drill-down

DRILL_GATES = [
    {"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5},
    {"name": "he-gap", "arm": "adapter", "gap": "he", "metric": "full_call_exact_match",
     "delta_at_least": -0.2},
    {"name": "beats", "candidate": "adapter", "reference": "base",
     "metric": "full_call_exact_match", "delta_at_least": 0.1},
]


def test_D01_a_selection_prints_no_pass_or_fail_for_what_it_did_not_run(
    pytester: pytest.Pytester,
) -> None:
    """``-k he`` leaves the English roots out: the gap gate says so instead of "denominator is
    0", and no gate over a subject that was not fully run reads PASS or FAIL."""
    hostile_suite(pytester, gates=DRILL_GATES)
    result, text = session(pytester, "-k", "he")
    assert result.ret == 1 and "verdict: INCOMPLETE" in text
    gate_lines = [x for x in text.splitlines() if x.split(" ", 1)[0] in ("PASS", "FAIL")]
    assert gate_lines == [], gate_lines
    line = assert_one_line(text, "NOT RUN he-gap")
    assert "the gap he - en needs its en roots, which this selection left out" in line
    assert "denominator is 0" not in line
    assert "NOT RUN exact" in text and "NOT RUN beats" in text
    result, text = session(pytester, "-k", "adapter")
    line = assert_one_line(text, "adapter-vs-base: REFUSED")
    assert "not run in this selection: base" in line
    # the adapter arm ran whole: its own gate is a result; the comparison's is not
    assert "NOT RUN beats" in text and "PASS exact" in text


def test_D01_a_complete_run_still_prints_pass_and_fail(pytester: pytest.Pytester) -> None:
    hostile_suite(pytester, gates=DRILL_GATES)
    result, text = session(pytester)
    assert result.ret == 0
    assert "PASS exact" in text and "PASS he-gap" in text and "PASS beats" in text
    assert "NOT RUN" not in text


def test_D02_strict_for_the_arms_that_must_pass(pytester: pytest.Pytester) -> None:
    """``--sommelier-strict`` failed every base example too: ``=ARM[,ARM]`` (and its ini twin)
    makes only those arms' misses failures."""
    suite = hostile_suite(pytester)
    adapter = {**EXACT, "en-1": "prose"}
    (suite.parent / "script.json").write_text(json.dumps({**SCRIPT, "adapter": adapter}))
    result, _ = session(pytester, "--sommelier-strict=adapter")
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and outcomes["missed"] == 7, outcomes
    pytester.makeini("[pytest]\nsommelier_strict = adapter\n")
    assert session(pytester)[0].parseoutcomes()["failed"] == 1
    pytester.makeini("[pytest]\nsommelier_strict = true\n")
    assert session(pytester)[0].parseoutcomes()["failed"] == 8
    (pytester.path / "tox.ini").unlink()
    assert session(pytester, "--sommelier-strict")[0].parseoutcomes()["failed"] == 8
    result, text = session(pytester, "--sommelier-strict=adaptr")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_one_line(text, "SOM-OPTION-VALUE", "'adaptr'", "its arms: base, adapter")
    result = pytester.runpytest("--sommelier-out", "o", "--sommelier-strict", "suite/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "put paths first" in result.stderr.str()


def test_D03_the_generation_cache_keys_an_adapter_by_its_content_not_its_arm_name(
    pytester: pytest.Pytester,
) -> None:
    """The same adapter files under a new arm name (``adapter`` renamed ``v2``) are served from
    the cache: no generate call for the renamed arm; another adapter content is not."""
    cache = ["--sommelier-cache-dir", str(pytester.path / "gencache")]
    hostile_suite(pytester, {"identity": "engine"})
    assert session(pytester, *cache)[0].ret == 0
    calls = pytester.path / "suite" / "calls.jsonl"
    calls.unlink()
    renamed = {"v2": {"adapter": "adapter"}, "base": {}}
    suite = hostile_suite(
        pytester, {"identity": "engine"}, arms=renamed,
        comparisons=[{"candidate": "v2", "reference": "base"}],
        gates=[{"name": "exact", "arm": "v2", "metric": "full_call_exact_match", "min": 0.5}],
    )
    result, _ = session(pytester, *cache, out="renamed")
    assert result.ret == 0, "v2 gets the adapter's cached outputs (exact calls)"
    assert not calls.exists(), "nothing generated: every record came from the cache"
    records = read_jsonl(pytester.path / "renamed" / "eval" / "v2" / "generations.en.jsonl")
    assert all(record["cached"] for record in records)
    assert suite.exists()


def test_D03_the_cache_key_drops_only_the_arm_name() -> None:
    from pytest_sommelier.inference.gencache import adapter_content

    assert adapter_content({"name": "v2", "sha256": "a"}) == {"sha256": "a"}
    assert adapter_content({"name": "v2", "hub_id": "o/x", "revision": "r"}) == {
        "hub_id": "o/x", "revision": "r"
    }
    assert adapter_content(None) is None
    assert adapter_content({"served_name": "lora", "sha256": "a"}) == {
        "served_name": "lora", "sha256": "a"
    }

