"""Every path the package writes goes through the one output-path rule
(``data.store.outputs.check_output``), environment variables included (docs/hardening.md, row
V01 and the ``report --out /proc/self/fd/1`` row).

V01: ``$GITHUB_STEP_SUMMARY`` set to ``<store>/index.json`` made the session append its summary
to the index and print ``verdict: PASS`` (``sommelier history`` then failed ``SOM-HISTORY-INDEX``);
set to a stored run's ``report/summary.md`` it appended a section to a stored file. Now it is
refused at collection, before any model runs (and again before the append).

The enumeration: :data:`WRITES` lists every call in the package that writes, creates, moves or
removes a file or folder (found by walking the source), with where its path comes from. A new
write fails :func:`test_every_write_the_package_makes_is_listed` until it is listed; a write
whose path a user names lists the function that sends it through the rule, and the test checks
that function calls it.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from history_helpers import V1, session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from property_budget import examples
from source_trees import parsed
from test_output_paths import IN_STORE, NOT_REGULAR, PLACES, _place, fresh, pristine, snapshot

from pytest_sommelier.cli import main
from pytest_sommelier.data.store.outputs import check_output, check_step_summary, write_summary
from pytest_sommelier.errors import InputError

PACKAGE = Path(__file__).resolve().parents[3] / "pytest_sommelier"
RULE = ("check_output", "check_step_summary")

__all__ = ["pristine"]  # the module-scoped fixture, imported for the property below

WRITERS = {
    "write_atomic", "atomic_write_text", "atomic_write_json", "copy_input", "write_verdict",
    "write_comparison", "append_regular", "write_prepared", "write_text", "write_bytes",
    "copytree", "copy2", "copyfile", "move", "rename", "mkdir", "save_pretrained", "mkfifo",
    "unlink", "rmtree", "fdopen", "install_run", "save_run", "write_report", "write_summary",
    "write_run", "write_outcome", "write_run_summary", "mkstemp", "TemporaryDirectory",
    "mkdtemp", "symlink_to",
    "touch", "rmdir", "write_compare", "write_jsonl_atomic",
}  # fmt: skip
"""What writes: the atomic writer and its wrappers, and every file-system call that changes
something (``open`` / ``os.open`` in a writing mode, ``os.replace`` and ``shutil.copy`` are
matched by their receivers below)."""

# (module, function, writer) -> where the path comes from. "rule: F" means F (module:function)
# sends the user's path through the rule; "inside: ..." names the folder the path is built in,
# itself checked (or owned) as said.
WRITES: dict[tuple[str, str, str], str] = {
    ("cli", "_silence_stdout", "open"): "inside: os.devnull (standard output's descriptor)",
    ("commands.compare", "_compare_arm_folders", "write_comparison"): "rule: commands.compare:run",
    ("commands.compare", "_compare_runs", "write_compare"): "rule: commands.compare:run",
    ("data.prepare.formatting", "format_file", "write_jsonl_atomic"): "rule: commands.format:run",
    ("data.store.history_verdict", "write_compared", "write_compare"): "inside: a run folder",
    ("commands.history", "write_page", "atomic_write_text"): "rule: commands.history:run",
    ("commands.parity", "run", "atomic_write_json"): "rule: commands.parity:run",
    ("commands.report", "run", "write_report"): "rule: commands.report:run",
    ("commands.rescore", "rescore", "TemporaryDirectory"): "inside: the system's temporary folder",
    ("commands.rescore", "rescore", "atomic_write_json"): "inside: the staging folder",
    ("commands.rescore", "rescore", "install_run"): "rule: commands.rescore:run",
    ("commands.rescore", "rescore", "write_outcome"): "inside: the staging folder",
    ("commands.rescore", "rescore", "write_report"): "inside: the staging folder",
    ("commands.rescore", "rescore", "write_summary"): "rule: data.store.outputs:write_summary",
    ("commands.rescore", "rescore", "write_verdict"): "inside: the staging folder",
    ("commands.rescore", "write_summary", "write_run_summary"): (
        "rule: data.store.outputs:write_summary"
    ),
    ("data.atomic", "write_atomic", "fdopen"): "inside: the writer itself (its caller's path)",
    ("data.atomic", "write_atomic", "mkdir"): "inside: the writer itself (its caller's path)",
    ("data.atomic", "write_atomic", "mkstemp"): "inside: the writer itself (its caller's path)",
    ("data.atomic", "write_atomic", "replace"): "inside: the writer itself (its caller's path)",
    ("data.atomic", "write_atomic", "unlink"): "inside: the writer itself (its temporary file)",
    ("data.prepare.bfcl", "import_bfcl", "write_prepared"): (
        "rule: commands.imports:cmd_import_bfcl"
    ),
    ("data.prepare.formatting", "write_jsonl_atomic", "write_atomic"): (
        "rule: commands.format:run"
    ),
    ("data.prepare.importers.common", "write_prepared", "write_atomic"): (
        "rule: commands.imports:_import_file"
    ),
    ("data.prepare.importers.driver", "import_file", "write_prepared"): (
        "rule: commands.imports:_import_file"
    ),
    ("data.store.artifacts", "append_regular", "open"): "rule: data.store.outputs:write_summary",
    ("data.store.artifacts", "atomic_write_json", "atomic_write_text"): "inside: its caller's path",
    ("data.store.artifacts", "atomic_write_text", "write_atomic"): "inside: its caller's path",
    ("data.store.artifacts", "claim_run", "mkdir"): "inside: a run folder (--sommelier-out, --out)",
    ("data.store.artifacts", "claim_run", "open"): "inside: a run folder (--sommelier-out, --out)",
    ("data.store.artifacts", "copy_input", "atomic_write_text"): "inside: a run folder",
    ("data.store.artifacts", "install_run", "copy_input"): "inside: a run folder",
    ("data.store.artifacts", "remove_stale", "rmtree"): "inside: a claimed run folder",
    ("data.store.artifacts", "remove_stale", "unlink"): "inside: a claimed run folder",
    ("data.store.artifacts", "write_comparison", "atomic_write_json"): "inside: a run folder",
    ("data.store.artifacts", "write_comparison", "atomic_write_text"): "inside: a run folder",
    ("data.store.artifacts", "write_outcome", "atomic_write_json"): "inside: a run folder",
    ("data.store.artifacts", "write_outcome", "write_run"): "inside: a run folder",
    ("data.store.artifacts", "write_run", "atomic_write_json"): "inside: a run folder",
    ("data.store.artifacts", "write_run", "atomic_write_text"): "inside: a run folder",
    ("data.store.artifacts", "write_run", "copy_input"): "inside: a run folder",
    ("data.store.artifacts", "write_run", "write_comparison"): "inside: a run folder",
    ("data.store.outputs", "write_summary", "append_regular"): (
        "rule: data.store.outputs:write_summary"
    ),
    ("data.store.outputs", "write_summary", "atomic_write_text"): "inside: a run folder",
    ("data.store.artifacts", "write_verdict", "atomic_write_json"): "inside: a run folder",
    ("data.store.history", "_write_index", "atomic_write_text"): "inside: the run store",
    ("data.store.history", "save_run", "atomic_write_json"): "inside: the run store",
    ("data.store.history", "save_run", "copytree"): "inside: the run store",
    ("data.store.history", "save_run", "mkdir"): "inside: the run store",
    ("data.store.history", "save_run", "rename"): "inside: the run store",
    ("data.store.history", "save_run", "rmtree"): "inside: the run store",
    ("data.store.history", "store_lock", "mkdir"): "inside: the run store",
    ("data.store.history", "store_lock", "open"): "inside: the run store",
    ("data.store.history_compare", "write_compare", "write_comparison"): "inside: a run folder",
    ("data.store.scored_run", "store_run", "save_run"): "inside: the run store",
    ("data.store.scored_run", "write_scored_run", "atomic_write_text"): "inside: a run folder",
    ("data.store.scored_run", "write_scored_run", "write_outcome"): "inside: a run folder",
    ("data.store.scored_run", "write_scored_run", "write_summary"): (
        "rule: data.store.outputs:write_summary"
    ),
    ("data.store.scored_run", "write_scored_run", "write_verdict"): "inside: a run folder",
    ("inference.gencache", "GenerationCache._remove", "unlink"): (
        "rule: inference.gencache:GenerationCache.__init__"
    ),
    ("inference.gencache", "GenerationCache.put", "write_atomic"): (
        "rule: inference.gencache:GenerationCache.__init__"
    ),
    ("inference.modelcache", "_build_lock", "mkdir"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "_build_lock", "open"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "_publish", "mkdtemp"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "_publish", "rename"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "_publish", "replace"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "_publish", "rmtree"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "build_cache_entry", "mkdir"): "rule: inference.modelcache:cache_root",
    ("inference.modelcache", "build_cache_entry", "mkdtemp"): (
        "rule: inference.modelcache:cache_root"
    ),
    ("inference.modelcache", "build_cache_entry", "rmtree"): (
        "rule: inference.modelcache:cache_root"
    ),
    ("inference.modelcache", "build_cache_entry", "write_text"): (
        "rule: inference.modelcache:cache_root"
    ),
    ("inference.modelcache", "save_plain_copy", "save_pretrained"): (
        "rule: inference.modelcache:cache_root"
    ),
    ("plugin.collect", "generation_cache", "mkdir"): "inside: pytest's cache folder (its own)",
    ("training.callback", "SommelierCallback._adapter_folder", "save_pretrained"): (
        "rule: training.callback:SommelierCallback._check_paths"
    ),
    ("view.html", "write_report", "atomic_write_text"): "rule: commands.report:run",
}


class _Writes(ast.NodeVisitor):
    """The writing calls of one module: (module, enclosing function, writer)."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.stack: list[str] = []
        self.found: set[tuple[str, str, str]] = set()

    def visit_FunctionDef(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> None:
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func
        name = getattr(function, "attr", getattr(function, "id", None))
        owner = getattr(getattr(function, "value", None), "id", None)
        writing = name in WRITERS
        if name == "open":
            modes = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "mode")]
            writing = owner == "os" or any(
                isinstance(m, ast.Constant) and isinstance(m.value, str)
                and any(c in m.value for c in "wax+") for m in modes
            )  # fmt: skip
        if name in ("replace", "copy"):
            writing = owner in ("os", "shutil")
        if writing:
            self.found.add((self.module, ".".join(self.stack) or "<module>", str(name)))
        self.generic_visit(node)


def _writes() -> set[tuple[str, str, str]]:
    """Every writing call in the package: (module, enclosing function, writer)."""
    found: set[tuple[str, str, str]] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        visitor = _Writes(".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        visitor.visit(parsed(path))
        found |= visitor.found
    return found


def _calls_the_rule(where: str) -> bool:
    module, _, qualname = where.partition(":")
    tree = parsed((PACKAGE / Path(*module.split("."))).with_suffix(".py"))
    node: ast.AST = tree
    for part in qualname.split("."):
        node = next(
            n for n in ast.iter_child_nodes(node)
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        )  # fmt: skip
    return any(
        isinstance(n, ast.Call) and getattr(n.func, "id", getattr(n.func, "attr", None)) in RULE
        for n in ast.walk(node)
    )


def test_every_write_the_package_makes_is_listed_and_user_paths_go_through_the_rule() -> None:
    found = _writes()
    assert found - set(WRITES) == set(), "a new write: list it in WRITES, with its path's origin"
    assert set(WRITES) - found == set(), "a listed write is gone: remove it from WRITES"
    for site, origin in WRITES.items():
        assert origin.startswith(("rule: ", "inside: ")), site
        if origin.startswith("rule: "):
            assert _calls_the_rule(origin[len("rule: ") :]), (site, origin)


# -- $GITHUB_STEP_SUMMARY ------------------------------------------------------------------


def test_a_step_summary_in_the_store_is_refused_before_any_model_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """V01, through a real session: the index and a stored run's summary are refused at
    collection, one line; the store byte-identical; ``sommelier history`` still reads it."""
    first = session(pytester, "one", V1, "--sommelier-autosave")
    store = pytester.path / ".sommelier"
    stored = next(p for p in store.iterdir() if p.is_dir())
    before = snapshot(store)
    for target in (store / "index.json", stored / "report" / "summary.md", first / "x.md"):
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(target))
        result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache",
                                    "--sommelier-out", "one", "--sommelier-autosave")  # fmt: skip
        text = result.stdout.str()
        assert result.ret != 0 and "SOM-OUTPUT-PATH" in text and "$GITHUB_STEP_SUMMARY" in text
        assert "verdict: PASS" not in text and "Traceback" not in text
        assert snapshot(store) == before
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    assert main(["history", str(store)]) == 0


def test_the_append_itself_checks_the_rule(tmp_path: Path) -> None:
    """The run being written and a store are protected at the append too (a variable set
    between collection and the finish, and ``sommelier rescore``)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for target in (run_dir / "gate_verdict.json", tmp_path / "store" / "index.json"):
        with pytest.raises(InputError, match=r"SOM-OUTPUT-PATH.*GITHUB_STEP_SUMMARY"):
            write_summary(run_dir, "text", environ={"GITHUB_STEP_SUMMARY": str(target)},
                          stores=[tmp_path / "store"])  # fmt: skip
    assert not (run_dir / "gate_verdict.json").exists()
    assert check_step_summary({}) is None
    assert check_step_summary({"GITHUB_STEP_SUMMARY": ""}) is None


@pytest.fixture(scope="module")
def places(pristine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("step") / "w"
    fresh(pristine, folder)
    (folder / "train-link.jsonl").symlink_to(folder / "train.jsonl")
    os.mkfifo(folder / "pipe")
    (folder / "a-folder").mkdir()
    return folder


@settings(max_examples=examples(32), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(place=st.sampled_from(PLACES))
def test_a_step_summary_at_any_place_is_refused_exactly_where_the_rule_says(
    places: Path, place: str
) -> None:
    """Hypothesis over the 16 places of the output property (R31): the variable is refused
    inside the store or a stored run, at a folder, a FIFO or a device, and accepted elsewhere
    (appended to in place, so an existing regular file is fine); nothing in the store changes."""
    target = _place(places, place)
    before = snapshot(places / ".sommelier")
    environ = {"GITHUB_STEP_SUMMARY": str(target)}
    refused = place in IN_STORE or place in NOT_REGULAR or place in {"folder", "run-one",
                                                                     "fresh-dir"}  # fmt: skip
    if place == "fresh-dir":
        refused = False  # a path that is not there yet: the append creates a file
    try:
        check_step_summary(environ)
    except InputError as error:
        assert refused, (place, str(error))
        assert error.code == "SOM-OUTPUT-PATH" and "\n" not in str(error)
    else:
        assert not refused, place
    assert snapshot(places / ".sommelier") == before


def test_report_out_proc_self_fd_1_names_the_real_reason(tmp_path: Path) -> None:
    """Weak: ``sommelier report RUN --out /proc/self/fd/1`` (standard output redirected to a
    file) said the folder does not exist; now: a folder of the kernel's, which takes no new
    file (an output is written as a new file beside its path)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("no /proc")
    with pytest.raises(InputError) as caught:
        check_output("/proc/self/fd/1", where="--out")
    assert caught.value.code == "SOM-OUTPUT-PATH" and "a folder of the kernel's" in str(
        caught.value
    )
    run = tmp_path / "run"
    run.mkdir()
    code = ("import sys; from pytest_sommelier.cli import main; "
            f"sys.exit(main(['report', {str(run)!r}, '--out', '/proc/self/fd/1']))")  # fmt: skip
    with open(tmp_path / "stdout.txt", "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", code], stdout=stdout, stderr=subprocess.PIPE, text=True,
            timeout=120,
        )
    assert done.returncode == 2 and "SOM-OUTPUT-PATH" in done.stderr, done.stderr
    assert "kernel" in done.stderr and "does not exist" not in done.stderr
