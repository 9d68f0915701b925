"""The one validating reader of the run store (``data.store.validate`` over
``data/schemas/run_store.v1.schema.json``): every file read back (the index, ``stored_run.json``,
evaluation and comparison reports, the verdict) is checked against its schema by every command
and the session, and anything that does not fit is one line naming the file and the field.

The store is two real runs of the scripted suite (``history_helpers``), made once per module in
a subprocess; each example works on a fresh copy. Hardening rows R02, R03 (docs/hardening.md).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from history_helpers import V1
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.data.store import validate
from pytest_sommelier.data.store.history import stored_runs
from pytest_sommelier.data.store.validate import problem

EXAMPLES = 15  # max_examples of the generated property below (reported in docs/hardening.md)


@pytest.fixture(scope="module")
def pristine(two_run_store: Path) -> Path:
    """``.sommelier`` with runs 0001 and 0002 of the scripted suite (the session's store)."""
    return two_run_store / ".sommelier"


def copy_store(pristine: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(pristine, target)
    return target


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def one_line(capsys: pytest.CaptureFixture[str], *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "SOM-" in err, err
    for name in names:
        assert name in err, err
    return err


def run_folder(store: Path, number: int) -> Path:
    return next(run.path for run in stored_runs(store) if run.number == number)


# --- the broken rows, as reported ---------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("git", "abc", "runs[0].git"),
        ("git", {"commit": 12345}, "runs[0].git"),
        ("verdict", {"a": 1}, "runs[0].verdict"),
        ("saved_at", 12, "runs[0].saved_at"),
        ("run_id", ["x"], "runs[0].run_id"),
    ],
    ids=["git-string", "git-commit-number", "verdict-object", "saved-at-number", "run-id-list"],
)
def test_an_index_entry_that_does_not_fit_is_one_line_naming_the_field(
    pristine: Path, tmp_path: Path, capsys, field: str, value: Any, named: str
) -> None:
    """R02: was a traceback in history/compare, or the value printed as it was."""
    store = copy_store(pristine, tmp_path / "store")
    edit_json(store / "index.json", lambda data: data["runs"][0].__setitem__(field, value))
    before = (store / "index.json").read_bytes()
    assert main(["history", str(store)]) == 2
    one_line(capsys, "SOM-HISTORY-INDEX", "index.json", named)
    assert main(["compare", "2", "1", "--store", str(store)]) == 2
    one_line(capsys, "SOM-HISTORY-INDEX", named)
    assert (store / "index.json").read_bytes() == before
    assert not (store / "history.html").exists()


def test_a_stored_run_record_whose_git_is_a_string_is_one_line(
    pristine: Path, tmp_path: Path, capsys
) -> None:
    """R02: ``stored_run.json`` with ``git = "abc"`` crashed a baseline session's finish."""
    store = copy_store(pristine, tmp_path / "store")
    record = run_folder(store, 1) / "stored_run.json"
    edit_json(record, lambda data: data.__setitem__("git", "abc"))
    assert main(["history", str(store)]) == 2
    one_line(capsys, "SOM-STORED-FIELD", "stored_run.json", "git")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["intervals"]["adapter"]["en"]["full_call_exact_match"].__setitem__(
            "value", "0.5"), "intervals.adapter.en.full_call_exact_match.value"),
        (lambda d: d["intervals"]["adapter"]["en"]["full_call_exact_match"].__setitem__(
            "lower", "x"), "intervals.adapter.en.full_call_exact_match.lower"),
        (lambda d: d["intervals"]["adapter"]["en"]["full_call_exact_match"].__setitem__(
            "value", 7.5), "intervals.adapter.en.full_call_exact_match.value"),
        (lambda d: d.__setitem__("intervals", []), "intervals"),
        (lambda d: d["intervals"].__setitem__("adapter", [1, 2]), "intervals.adapter"),
    ],
    ids=["value-string", "bound-string", "value-off-the-chart", "intervals-list", "arm-list"],
)  # fmt: skip
def test_stored_values_that_do_not_fit_are_one_line(
    pristine: Path, tmp_path: Path, capsys, change: Callable[[Any], None], named: str
) -> None:
    """R03: a string metric value or bound, or lists for intervals, crashed ``history``; 7.5
    was drawn off the chart."""
    store = copy_store(pristine, tmp_path / "store")
    edit_json(run_folder(store, 2) / "stored_run.json", change)
    assert main(["history", str(store)]) == 2
    one_line(capsys, "SOM-STORED-FIELD", "stored_run.json", named)
    assert not (store / "history.html").exists()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.__setitem__("slices", ["en"]), "slices"),
        (lambda d: d["metrics"]["full_call_exact_match"].__setitem__("value", "high"),
         "metrics.full_call_exact_match.value"),
        (lambda d: d["slices"]["en"]["metrics"]["argument_f1"].__setitem__("value", 7.5),
         "slices.en.metrics.argument_f1.value"),
        (lambda d: d.__setitem__("schema_version", "something.else"), "schema_version"),
    ],
    ids=["slices-list", "metric-string", "slice-metric-off-the-chart", "schema"],
)  # fmt: skip
def test_a_stored_report_that_does_not_fit_is_one_line(
    pristine: Path, tmp_path: Path, capsys, change: Callable[[Any], None], named: str
) -> None:
    """R03: the arm reports are read through the same reader, by history and compare."""
    store = copy_store(pristine, tmp_path / "store")
    report = run_folder(store, 2) / "eval" / "adapter" / "evaluation_report.json"
    edit_json(report, change)
    assert main(["history", str(store)]) == 2
    one_line(capsys, "SOM-STORED-", "evaluation_report.json", named)
    # compare refuses that arm (its line names the file) and its regression gate fails
    assert main(["compare", "2", "1", "--store", str(store), "--fail",
                 "full_call_exact_match:0.02"]) == 1  # fmt: skip
    out = capsys.readouterr().out
    refused = [line for line in out.splitlines() if line.startswith("adapter: REFUSED")]
    assert len(refused) == 1 and "evaluation_report.json" in refused[0], out
    assert "FAIL compare-fail:adapter" in out and "Traceback" not in out


# --- hostile stored files, generated --------------------------------------------------------

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
"""Values a hand-edited or foreign file may hold where the store wrote something else."""


def document_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document (objects and arrays, depth first)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += document_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += document_paths(item, (*prefix, index))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        document = document[part]
    document[path[-1]] = value


TARGETS = {
    "index": ("index.json", "index"),
    "record": ("0002/stored_run.json", "stored_run"),
    "report": ("0002/eval/adapter/evaluation_report.json", "evaluation_report"),
    "comparison": ("0002/report/adapter-vs-base.json", "comparison_report"),
    "verdict": ("0002/gate_verdict.json", "gate_verdict"),
}


def stored_file(store: Path, relative: str) -> Path:
    """A file of the two-run store by its place (``0002/...``: inside the second run's folder,
    whatever its name)."""
    if relative.startswith("0002/"):
        return run_folder(store, 2) / relative.removeprefix("0002/")
    return store / relative


def _target(store: Path, name: str) -> Path:
    return stored_file(store, TARGETS[name][0])


@settings(
    max_examples=examples(EXAMPLES),
    deadline=None,
    derandomize=True,  # the same examples in CI: a slow property, sized to the fast tier
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(target=st.sampled_from(sorted(TARGETS)), pick=st.integers(min_value=0), value=HOSTILE)
def test_a_hostile_value_in_any_stored_file_is_one_line_or_harmless(
    pristine: Path, tmp_path: Path, capsys, target: str, pick: int, value: Any
) -> None:
    """Any field of any stored file replaced by a hostile value: ``history`` and ``compare``
    either read it (when it fits the schema) or stop with one ``SOM-`` line naming the file;
    never a traceback, never a changed store, and a compare-fail gate over a refused file
    never passes."""
    store = copy_store(pristine, tmp_path / "store")
    path = _target(store, target)
    second = run_folder(store, 2)
    document = json.loads(path.read_text(encoding="utf-8"))
    paths = document_paths(document)
    where = paths[pick % len(paths)]
    _set(document, where, value)
    path.write_text(json.dumps(document), encoding="utf-8")
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    fits = problem(TARGETS[target][1], document) is None
    capsys.readouterr()
    page = str(tmp_path / "page.html")
    readers = {  # the commands that read this file
        "index": [["history", str(store), "--out", page]],
        "record": [["history", str(store), "--out", page]],
        "report": [["history", str(store), "--out", page],
                   ["report", str(second), "--out", page]],
        "comparison": [["report", str(second), "--out", page]],
        "verdict": [["report", str(second), "--out", page]],
    }[target]  # fmt: skip
    for command in readers:
        status = main(command)
        if status != 0:
            err = one_line(capsys)
            assert "SOM-HISTORY-" in err or "SOM-STORED-" in err, err
        if not fits:
            assert status == 2, (command[0], where, value)
    if target in ("index", "report"):
        compare = main(["compare", "2", "1", "--store", str(store), "--fail",
                        "full_call_exact_match:0.5"])  # fmt: skip
        if compare == 2:
            one_line(capsys)
        if not fits:
            assert compare != 0, (where, value)  # a refused file never passes a gate
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    assert after == before


def _tuple_twins(value: Any) -> Iterator[Any]:
    """``value`` with one of its lists made a tuple, for each list: the same JSON text, not the
    same value for the schema where it asks for an array (a tuple is not a JSON array)."""
    if isinstance(value, list):
        yield tuple(value)
        for i, item in enumerate(value):
            for twin in _tuple_twins(item):
                yield [*value[:i], twin, *value[i + 1 :]]
    elif isinstance(value, dict):
        for key, item in value.items():
            for twin in _tuple_twins(item):
                yield {**value, key: twin}


def test_a_remembered_answer_is_the_schemas_answer(pristine: Path) -> None:
    """``problem`` remembers its answer by the document's JSON text: asked again it answers what
    the schema check alone answers, and a twin with the same text that is not JSON's own types
    (a tuple for a list) is checked, never given the remembered answer."""
    refused = 0
    for target, (_, kind) in sorted(TARGETS.items()):
        document = json.loads(_target(pristine, target).read_text(encoding="utf-8"))
        assert problem(kind, document) is None and problem(kind, document) is None
        for twin in _tuple_twins(document):
            assert json.dumps(twin) == json.dumps(document)
            expected = validate._problem(kind, twin)
            assert problem(kind, twin) == expected, (target, expected)
            refused += expected is not None
        broken = {**document, "schema_version": 7}
        assert problem(kind, broken) == validate._problem(kind, broken) is not None
        assert problem(kind, broken) == validate._problem(kind, broken)
    assert refused, "no list of any stored document is checked as an array"


def damaged_session_folder(pristine: Path, folder: Path) -> list[str]:
    """``folder``: the store with run 1's record and report damaged, and the scripted suite;
    returns the session's arguments (compare with run 1, a compare-fail gate)."""
    folder.mkdir()
    copy_store(pristine, folder / ".sommelier")
    record = run_folder(folder / ".sommelier", 1) / "stored_run.json"
    edit_json(record, lambda data: data.__setitem__("git", "abc"))
    edit_json(
        run_folder(folder / ".sommelier", 1) / "eval" / "adapter" / "evaluation_report.json",
        lambda data: data.__setitem__("slices", ["en"]),
    )
    write_scripted_suite_at(folder)
    return ["-p", "no:cacheprovider", "-q", "--sommelier-no-cache", str(folder / "suite"),
            "--sommelier-out", "three", "--sommelier-compare=1",
            "--sommelier-compare-fail=full_call_exact_match:0.02"]  # fmt: skip


def assert_refused_by_the_reader(folder: Path, status: int, out: str, err: str) -> None:
    assert status != 0
    assert "Traceback" not in out + err
    assert "evaluation_report.json" in out and "SOM-STORED-" in out
    verdict = folder / "three" / "gate_verdict.json"
    assert not verdict.exists() or json.loads(verdict.read_text())["verdict"] != "pass"


def test_the_reader_is_used_by_the_session(
    pristine: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session comparing with a damaged stored run (``--sommelier-compare=1``) fails with
    one line naming the file, and writes no passing verdict (in-process; the same session in a
    subprocess is the slow twin below)."""
    folder = pytester.path / "session"
    args = damaged_session_folder(pristine, folder)
    monkeypatch.chdir(folder)
    result = pytester.runpytest(*args)
    assert_refused_by_the_reader(folder, result.ret, result.stdout.str(), result.stderr.str())


@pytest.mark.slow
def test_the_reader_is_used_by_the_session_in_a_subprocess(pristine: Path, tmp_path: Path) -> None:
    folder = tmp_path / "session"
    args = damaged_session_folder(pristine, folder)
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=folder,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert_refused_by_the_reader(folder, done.returncode, done.stdout, done.stderr)


def write_scripted_suite_at(folder: Path) -> None:
    from types import SimpleNamespace

    from history_helpers import script
    from plugin_helpers import write_scripted_suite

    write_scripted_suite(SimpleNamespace(path=folder), script(V1))  # type: ignore[arg-type]


def test_a_stored_run_folder_that_is_a_link_out_of_the_store_is_refused(
    pristine: Path, tmp_path: Path, capsys
) -> None:
    """R14: a stored run folder replaced by a symlink to a folder outside the store was read
    silently."""
    store = copy_store(pristine, tmp_path / "store")
    one = run_folder(store, 1)
    outside = tmp_path / "elsewhere"
    shutil.move(str(one), outside)
    one.symlink_to(outside, target_is_directory=True)
    assert main(["history", str(store)]) == 2
    one_line(capsys, "SOM-HISTORY-FOREIGN", one.name, "is a link")
