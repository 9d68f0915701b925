"""The one output-path rule (``data.store.outputs.check_output``) on every ``--out`` and on the
session's ``--sommelier-out`` and ``$GITHUB_STEP_SUMMARY``: an input of the command, anything
inside the run store or a stored run (the store's own ``history.html`` aside), a folder where a
file is meant, or anything but a regular file is refused with one line before any work, and
nothing is overwritten. Hardening rows R04, R15-R17 (docs/hardening.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.data.store.history import stored_runs
from pytest_sommelier.data.store.outputs import check_output, write_summary
from pytest_sommelier.errors import InputError

EXAMPLES = 40  # max_examples of the generated property below (reported in docs/hardening.md)


@pytest.fixture(scope="module")
def pristine(two_run_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``.sommelier`` with runs 0001 and 0002 (a copy of the session's store),
    and ``train.jsonl``."""
    folder = tmp_path_factory.mktemp("outputs") / "w"
    shutil.copytree(two_run_store, folder, symlinks=True)
    (folder / "train.jsonl").write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8"
    )
    return folder


def fresh(pristine: Path, target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(pristine, target, symlinks=True)
    return target


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def one_line(capsys: pytest.CaptureFixture[str], *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


def stored(folder: Path, number: int) -> Path:
    return next(r.path for r in stored_runs(folder / ".sommelier") if r.number == number)


# --- the broken rows, as reported -----------------------------------------------------------


@pytest.mark.parametrize(
    "target",
    ["index.json", "gate_verdict", "x.html", "store-itself"],
)
def test_history_out_never_writes_into_the_store(
    pristine: Path, tmp_path: Path, capsys, target: str
) -> None:
    """R04: ``history --out store/index.json`` (or a stored run's verdict) replaced it with
    HTML; ``--out store/x.html`` made every later command refuse the store."""
    folder = fresh(pristine, tmp_path / "w")
    store = folder / ".sommelier"
    out = {
        "index.json": store / "index.json",
        "gate_verdict": stored(folder, 1) / "gate_verdict.json",
        "x.html": store / "x.html",
        "store-itself": store,
    }[target]
    before = snapshot(store)
    assert main(["history", str(store), "--out", str(out)]) == 2
    one_line(capsys, "SOM-OUTPUT-PATH")
    assert snapshot(store) == before
    assert main(["history", str(store)]) == 0  # the default page, the store's own file
    capsys.readouterr()
    assert main(["history", str(store), "--out", str(store / "history.html")]) == 0


def test_compare_out_never_writes_into_the_store_or_a_stored_run(
    pristine: Path, tmp_path: Path, capsys
) -> None:
    """R04: ``compare --out store`` made the store unreadable; ``--out`` a stored run's folder
    changed that stored run."""
    folder = fresh(pristine, tmp_path / "w")
    store = folder / ".sommelier"
    before = snapshot(store)
    for out in (store, stored(folder, 1), stored(folder, 1) / "report"):
        assert main(["compare", "2", "1", "--store", str(store), "--out", str(out)]) == 2
        one_line(capsys, "SOM-OUTPUT-PATH", "input" if out == store else "stored run")
    arm = stored(folder, 2) / "eval" / "adapter"
    ref = stored(folder, 1) / "eval" / "adapter"
    assert main(["compare", str(arm), str(ref), "--out", str(stored(folder, 2))]) == 2
    one_line(capsys, "SOM-OUTPUT-PATH")
    assert snapshot(store) == before
    assert main(["compare", "2", "1", "--store", str(store), "--out", str(tmp_path / "o")]) == 0


@pytest.mark.parametrize("kind", ["input", "folder", "fifo", "device"])
def test_import_out_never_replaces_its_input_a_folder_or_a_special_file(
    pristine: Path, tmp_path: Path, capsys, kind: str
) -> None:
    """R04: ``import --out`` equal to the input replaced the training data, an existing folder
    was an IsADirectoryError traceback, a FIFO or device node was replaced by a file."""
    folder = fresh(pristine, tmp_path / "w")
    source = folder / "train.jsonl"
    out = {
        "input": source,
        "folder": folder / "runs-folder",
        "fifo": folder / "pipe",
        "device": Path("/dev/null"),
    }[kind]
    if kind == "folder":
        out.mkdir()
    if kind == "fifo":
        os.mkfifo(out)
    before = source.read_bytes()
    assert main(["import", "openai-chat", str(source), "--out", str(out)]) == 2
    one_line(capsys, "SOM-OUTPUT-PATH")
    assert source.read_bytes() == before
    if kind == "fifo":
        assert out.is_fifo()
    if kind == "folder":
        assert out.is_dir() and not any(out.iterdir())


def test_an_input_reached_through_a_link_is_still_an_input(tmp_path: Path) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("{}\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(data)
    with pytest.raises(InputError, match=r"SOM-OUTPUT-PATH.*is an input"):
        check_output(link, inputs=[data])
    hard = tmp_path / "hard.jsonl"
    os.link(data, hard)
    with pytest.raises(InputError, match=r"SOM-OUTPUT-PATH.*is an input"):
        check_output(hard, inputs=[data])


def test_the_session_out_is_never_the_run_it_compares_with(
    pristine: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R15: ``--sommelier-compare=PATH`` equal to ``--sommelier-out`` deleted the reference the
    run was asked to compare with. In-process sessions (the refusal is the plugin's, at the
    session's start; a subprocess twin runs the same arguments in the slow tier)."""
    folder = fresh(pristine, pytester.path / "w")
    monkeypatch.chdir(folder)
    before = snapshot(folder / "one")
    for args in out_is_the_reference(folder):
        result = pytester.runpytest("-p", "no:cacheprovider", "-q", "--sommelier-no-cache",
                                    str(folder / "suite"), *args)  # fmt: skip
        text = result.stdout.str() + result.stderr.str()
        assert result.ret != 0 and "SOM-OUTPUT-PATH" in text, text
        assert "Traceback" not in text
        assert snapshot(folder / "one") == before


def out_is_the_reference(folder: Path) -> list[list[str]]:
    """The session's out equal to (or holding) the run it compares with, or a stored run."""
    return [["--sommelier-out", "one", "--sommelier-compare=one"],
            ["--sommelier-out", ".", "--sommelier-compare=one"],
            ["--sommelier-out", str(stored(folder, 1))]]  # fmt: skip


@pytest.mark.slow
def test_the_session_out_is_never_the_run_it_compares_with_in_a_subprocess(
    pristine: Path, tmp_path: Path
) -> None:
    """R15 as a user meets it: the same refusals from ``python -m pytest`` in a subprocess."""
    import sys

    folder = fresh(pristine, tmp_path / "w")
    before = snapshot(folder / "one")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               "--sommelier-no-cache", str(folder / "suite")]  # fmt: skip
    for args in out_is_the_reference(folder):
        done = subprocess.run(command + args, cwd=folder, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        text = done.stdout + done.stderr
        assert done.returncode != 0 and "SOM-OUTPUT-PATH" in text, text
        assert "Traceback" not in text
        assert snapshot(folder / "one") == before


def test_a_step_summary_that_is_a_fifo_or_a_folder_is_one_line_never_a_hang(
    tmp_path: Path,
) -> None:
    """R17: ``GITHUB_STEP_SUMMARY`` naming a FIFO with no reader hung the session at finish;
    since V01 the one output-path rule refuses it (and a folder) before the append."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, tmp_path):
        with pytest.raises(InputError, match="SOM-OUTPUT-PATH"):
            write_summary(run_dir, "text", environ={"GITHUB_STEP_SUMMARY": str(target)})
    regular = tmp_path / "summary.md"
    write_summary(run_dir, "one", environ={"GITHUB_STEP_SUMMARY": str(regular)})
    write_summary(run_dir, "two", environ={"GITHUB_STEP_SUMMARY": str(regular)})
    assert regular.read_text() == "one\ntwo\n"


# --- generated output paths ----------------------------------------------------------------

PLACES = [
    "store", "index", "lock", "page", "stored-run", "stored-verdict", "stored-report-dir",
    "stored-arm-report", "train", "train-link", "fifo", "folder", "fresh-file", "fresh-dir",
    "run-one", "dev-null",
]  # fmt: skip


def _place(folder: Path, name: str) -> Path:
    store = folder / ".sommelier"
    one = stored(folder, 1)
    return {
        "store": store,
        "index": store / "index.json",
        "lock": store / ".lock",
        "page": store / "history.html",
        "stored-run": one,
        "stored-verdict": one / "gate_verdict.json",
        "stored-report-dir": one / "report",
        "stored-arm-report": one / "eval" / "adapter" / "evaluation_report.json",
        "train": folder / "train.jsonl",
        "train-link": folder / "train-link.jsonl",
        "fifo": folder / "pipe",
        "folder": folder / "a-folder",
        "fresh-file": folder / "new" / "out.jsonl",
        "fresh-dir": folder / "new-dir",
        "run-one": folder / "one",
        "dev-null": Path("/dev/null"),
    }[name]


COMMANDS = {
    "history": lambda f, out: ["history", str(f / ".sommelier"), "--out", str(out)],
    "compare": lambda f, out: ["compare", "2", "1", "--store", str(f / ".sommelier"),
                               "--out", str(out)],
    "import": lambda f, out: ["import", "openai-chat", str(f / "train.jsonl"), "--out", str(out)],
    "report": lambda f, out: ["report", str(f / "one"), "--out", str(out)],
}  # fmt: skip


IN_STORE = {"store", "index", "lock", "page", "stored-run", "stored-verdict",
            "stored-report-dir", "stored-arm-report"}  # fmt: skip
FOLDERS = {"store", "stored-run", "stored-report-dir", "folder", "run-one"}
NOT_REGULAR = {"fifo", "dev-null"}
INPUTS = {"import": {"train", "train-link"}, "report": {"run-one"}, "history": {"store"},
          "compare": {"store"}}  # fmt: skip


def _protected(command: str, place: str) -> bool:
    """Whether the rule refuses ``command --out place``: the store's places (the page aside
    for ``history``, its own file), the command's inputs, special files, and a folder where a
    file is meant (``compare --out`` is a folder: any existing non-folder there)."""
    if command == "history" and place == "page":
        return False
    if place in IN_STORE or place in NOT_REGULAR or place in INPUTS[command]:
        return True
    if command == "compare":
        return place not in FOLDERS | {"fresh-file", "fresh-dir"}
    return place in FOLDERS


@pytest.fixture(scope="module")
def workspace(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("space") / "w"
    fresh(pristine, folder)
    (folder / "train-link.jsonl").symlink_to(folder / "train.jsonl")
    os.mkfifo(folder / "pipe")
    (folder / "a-folder").mkdir()
    return folder


@settings(
    max_examples=examples(EXAMPLES),
    deadline=None,
    derandomize=True,  # the same examples in CI: a slow property, sized to the fast tier
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(command=st.sampled_from(sorted(COMMANDS)), place=st.sampled_from(PLACES))
def test_no_output_lands_on_a_protected_path(
    workspace: Path, capsys, command: str, place: str
) -> None:
    """Any command's ``--out`` at any protected place is one ``SOM-OUTPUT-PATH`` line and the
    store, the inputs and the special files are unchanged; an allowed place is written."""
    out = _place(workspace, place)
    store_before = snapshot(workspace / ".sommelier")
    train_before = (workspace / "train.jsonl").read_bytes()
    capsys.readouterr()
    status = main(COMMANDS[command](workspace, out))
    err = capsys.readouterr().err
    protected = _protected(command, place)
    if protected:
        assert status == 2, (command, place, err)
        # (report's own run files keep their older, narrower code SOM-REPORT-OUT)
        code = "SOM-OUTPUT-PATH" in err or (command == "report" and "SOM-REPORT-OUT" in err)
        assert len(err.strip().splitlines()) == 1 and code, err
    assert "Traceback" not in err
    if place != "page" or command != "history":
        assert snapshot(workspace / ".sommelier") == store_before
    if command == "import" or place not in ("train", "train-link"):
        assert (workspace / "train.jsonl").read_bytes() == train_before
    else:  # not an input of this command: written, and put back for the next example
        (workspace / "train.jsonl").write_bytes(train_before)
        link = workspace / "train-link.jsonl"
        if not link.is_symlink():  # an atomic write replaces the link itself, not its target
            link.unlink()
            link.symlink_to(workspace / "train.jsonl")
    assert (workspace / "pipe").is_fifo()
