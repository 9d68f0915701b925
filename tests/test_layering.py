"""The package's layers import one way, with no cycles (lazy and TYPE_CHECKING imports included).

core <- data <- view / inference <- plugin (``view`` and ``inference`` are siblings: neither
imports the other); ``errors``, ``version``, ``registry`` and ``numbers`` are dependency-free
leaves any layer may import (all count as the ``errors`` leaf below); ``cli``, the
subcommands (``commands/``), ``moved`` and the package ``__init__`` facade sit on top. Inside
``data`` the jobs import one way too: the leaves (``atomic``, ``digests``, ``references``) <-
``split`` <- ``suite`` and ``prepare``; ``store`` imports ``split`` and ``suite``. Each layer may
also import a fixed set of third-party packages (docs/architecture.md, "The dependency rule");
only ``plugin`` imports pytest.
Every import statement anywhere in a module counts, at any depth (function bodies included).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from source_trees import parsed

PACKAGE = "pytest_sommelier"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

LAYERS = ("core", "data", "view", "inference", "plugin", "training")
THIRD_PARTY: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "core": frozenset({"numpy"}),
    "data": frozenset({"numpy", "jsonschema", "jinja2", "pyarrow"}),
    "view": frozenset({"numpy", "jsonschema", "jinja2", "pyarrow"}),
    "inference": frozenset(
        {"numpy", "jsonschema", "jinja2", "pyarrow", "torch", "transformers", "peft", "gguf",
         "safetensors", "huggingface_hub", "vllm"}
    ),
    "plugin": frozenset(
        {"numpy", "jsonschema", "jinja2", "pyarrow", "torch", "transformers", "peft", "gguf",
         "safetensors", "huggingface_hub", "vllm", "pytest", "_pytest", "xdist"}
    ),
    # beside plugin: what inference may import (the trainer's libraries), never pytest
    "training": frozenset(
        {"numpy", "jsonschema", "jinja2", "pyarrow", "torch", "transformers", "peft", "gguf",
         "safetensors", "huggingface_hub", "vllm"}
    ),
}
INTERNAL: dict[str, frozenset[str]] = {
    "errors": frozenset({"errors"}),
    "core": frozenset({"errors", "core"}),
    "data": frozenset({"errors", "core", "data"}),
    "view": frozenset({"errors", "core", "data", "view"}),
    "inference": frozenset({"errors", "core", "data", "inference"}),
    "plugin": frozenset({"errors", "core", "data", "view", "inference", "plugin"}),
    # plugin only for its pytest-free runner (TRAINING_FROM_PLUGIN, checked below)
    "training": frozenset({"errors", "core", "data", "view", "inference", "plugin", "training"}),
}
TRAINING_FROM_PLUGIN = frozenset({"pytest_sommelier.plugin.runner"})
"""What ``training`` may import of ``plugin``: the runner, which imports no pytest."""
# the jobs inside ``data``: what each may import of the others (``leaf``: a module directly in
# ``data/``, shared by every job)
DATA_JOBS: dict[str, frozenset[str]] = {
    "leaf": frozenset({"leaf"}),
    "split": frozenset({"leaf", "split"}),
    "suite": frozenset({"leaf", "split", "suite"}),
    "prepare": frozenset({"leaf", "split", "prepare"}),
    "store": frozenset({"leaf", "split", "suite", "store"}),
}


def module_name(root: Path, path: Path) -> str:
    """Dotted module name of ``path`` inside the package at ``root`` (``__init__`` -> package)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    """``errors``, one of LAYERS, or ``top`` (the facade, ``cli`` and anything else on top)."""
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in ("version", "registry", "numbers"):
        return "errors"
    if len(parts) >= 2 and parts[1] in (*LAYERS, "errors"):
        return parts[1]
    return "top"


def data_job_of(module: str) -> str | None:
    """The job of a ``data`` module (``leaf`` for one directly in ``data/``); None outside."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "data":
        return None
    return parts[2] if len(parts) > 3 or parts[2] in DATA_JOBS else "leaf"


def imports_of(root: Path, path: Path, modules: set[str]) -> list[tuple[int, str]]:
    """Every module ``path`` imports, anywhere in its body, as (line, absolute dotted name).

    ``from pkg import name`` counts as importing ``pkg.name`` when that is a module of the
    package, else ``pkg``; relative imports are resolved against the module's package.
    """
    name = module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*base_parts, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((node.lineno, candidate if candidate in modules else base))
    return found


def violations(root: Path) -> list[str]:
    """One line per forbidden import and per import cycle among the package's modules."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, path) for path in files}
    graph: dict[str, set[str]] = {}
    problems: list[str] = []
    stdlib = sys.stdlib_module_names
    for path in files:
        name = module_name(root, path)
        layer = layer_of(name)
        edges = graph.setdefault(name, set())
        for line, imported in imports_of(root, path, modules):
            top = imported.split(".")[0]
            where = f"{path.relative_to(root.parent)}:{line}"
            if top == root.name:
                if imported in modules:
                    edges.add(imported)
                if layer == "top":
                    continue
                target = layer_of(imported)
                if target not in INTERNAL[layer]:
                    problems.append(f"{where}: {layer} must not import {imported} ({target})")
                job, target_job = data_job_of(name), data_job_of(imported)
                if job and target_job and target_job not in DATA_JOBS.get(job, frozenset()):
                    problems.append(
                        f"{where}: data/{job} must not import {imported} (data/{target_job})"
                    )
                if layer == "training" and target == "plugin" and (
                    imported not in TRAINING_FROM_PLUGIN
                ):
                    problems.append(f"{where}: training may import only the runner of plugin, "
                                    f"not {imported}")
            elif top in stdlib or top == "__future__":
                continue
            elif layer != "top" and top not in THIRD_PARTY[layer]:
                problems.append(f"{where}: {layer} must not import third-party {top!r}")
    problems.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph))
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first search (one representative per back edge)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def engine_import_violations(root: Path, engines: set[str]) -> list[str]:
    """One line per import of an engine module by any module of the package: engines are reached
    only through the registry, by module path, so no engine imports another and no shared
    module (the base, the caches, parity, the plugin) depends on one."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(root, path) for path in files}
    return [
        f"{path.relative_to(root.parent)}:{line}: imports the engine module {imported}"
        for path in files
        for line, imported in imports_of(root, path, modules)
        if imported in engines
    ]


def registered_engine_modules() -> set[str]:
    """The modules the engine registry names (``inference/select_engine.ENGINES``)."""
    from pytest_sommelier.inference.select_engine import ENGINES

    return {spec.partition(":")[0] for spec in ENGINES.values()}


def test_package_layers_import_one_way_without_cycles() -> None:
    assert violations(ROOT) == []


def test_every_module_is_in_a_layer_or_on_top() -> None:
    tops = sorted(
        module_name(ROOT, path) for path in ROOT.rglob("*.py")
        if layer_of(module_name(ROOT, path)) == "top"
    )
    assert [t for t in tops if not t.startswith("pytest_sommelier.commands")] == [
        "pytest_sommelier", "pytest_sommelier.cli", "pytest_sommelier.hookspec",
        "pytest_sommelier.moved",
    ]


def test_every_module_is_described_in_the_architecture_doc() -> None:
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    modules = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.py"))
    assert [m for m in modules if f"`{m}`" not in text] == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / PACKAGE
    for rel, text in {"__init__.py": "", "core/__init__.py": "", "data/__init__.py": "",
                      "plugin/__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"core/a.py": "def f():\n    from pytest_sommelier.data import b\n",
          "data/b.py": ""}, "core/a.py:2: core must not import pytest_sommelier.data.b (data)"),
        ({"data/b.py": "import pytest\n"},
         "data/b.py:1: data must not import third-party 'pytest'"),
        ({"core/a.py": "import torch\n"}, "core/a.py:1: core must not import third-party 'torch'"),
        ({"errors.py": "from pytest_sommelier.core import a\n", "core/a.py": ""},
         "errors.py:1: errors must not import pytest_sommelier.core.a (core)"),
        ({"plugin/x.py": "from . import y\n", "plugin/y.py":
          "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .x import Z\n"},
         "import cycle: pytest_sommelier.plugin.x -> pytest_sommelier.plugin.y -> "
         "pytest_sommelier.plugin.x"),
    ],
)
def test_a_forbidden_import_or_a_cycle_is_reported(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    root = _tree(tmp_path, files)
    found = violations(root)
    assert any(line.endswith(expected) for line in found), found


def test_the_top_may_import_anything_and_layers_may_import_down(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "cli.py": "import pytest\nfrom pytest_sommelier.plugin import p\n",
        "plugin/p.py": "import pytest\nfrom pytest_sommelier.data import d\n",
        "data/d.py": "import jsonschema\nfrom pytest_sommelier.core import c\n",
        "core/c.py": "import json\nimport numpy\nfrom pytest_sommelier import errors\n",
        "errors.py": "import dataclasses\n",
    })
    assert violations(root) == []


def test_no_module_imports_an_engine_module() -> None:
    engines = registered_engine_modules()
    assert len(engines) == 3
    assert engine_import_violations(ROOT, engines) == []


def test_an_engine_importing_another_engine_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "inference/__init__.py": "",
        "inference/base.py": "",
        "inference/one_engine.py": "from pytest_sommelier.inference import base\n",
        "inference/two_engine.py":
            "def f():\n    from pytest_sommelier.inference import one_engine\n",
    })
    engines = {"pytest_sommelier.inference.one_engine", "pytest_sommelier.inference.two_engine"}
    assert [line.split(": ", 1)[1] for line in engine_import_violations(root, engines)] == [
        "imports the engine module pytest_sommelier.inference.one_engine"
    ]


ARCHITECTURE = ROOT.parent / "docs" / "architecture.md"
ROW = re.compile(r"^\| `([^`]+\.py)` \| (.*) \|$")
DOTTED = r"(?:core|data|view|inference|plugin|commands)(?:\.\w+)+"


def module_rows(text: str) -> list[tuple[str, str]]:
    """The (module path, job) rows of the architecture doc's modules table."""
    return [
        (match.group(1), match.group(2))
        for line in text.splitlines()
        if (match := ROW.match(line))
    ]


def defined_names(root: Path) -> set[str]:
    """Every name the package defines anywhere (functions, classes, methods, assignments,
    arguments, import aliases) and every identifier-shaped string literal (a field or key)."""
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name | ast.arg):
                names.add(node.id if isinstance(node, ast.Name) else node.arg)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[-1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))
    return names


def top_level_names(path: Path) -> set[str]:
    """The names a module defines or imports at its top level."""
    names: set[str] = set()
    for node in parsed(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def unknown_names(root: Path, rows: list[tuple[str, str]]) -> list[str]:
    """One line per name a row gives that the package lacks: ``name(...)`` and bare
    ``snake_case`` identifiers anywhere in the package, ``layer.module.name`` in that module."""
    known = defined_names(root)
    modules = {module_name(root, path): path for path in root.rglob("*.py")}
    problems = []
    for module, job in rows:
        for token in re.findall(r"`([^`]+)`", job):
            dotted = re.fullmatch(DOTTED, token)
            if dotted:
                parts = f"{root.name}.{token}".split(".")
                cut = max(i for i in range(2, len(parts) + 1) if ".".join(parts[:i]) in modules)
                rest = parts[cut:]
                if len(rest) > 1 or (
                    rest and rest[0] not in top_level_names(modules[".".join(parts[:cut])])
                ):
                    problems.append(f"{module}: {token}")
                continue
            call = re.fullmatch(r"([A-Za-z_]\w*)\(.*", token)
            bare = re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", token)
            name = call.group(1) if call else token if bare else None
            if name is not None and name not in known:
                problems.append(f"{module}: {token}")
    return problems


def test_every_module_is_one_row_of_the_architecture_doc() -> None:
    rows = module_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    listed = [module for module, _ in rows]
    modules = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.py"))
    assert sorted(listed) == modules  # each module once, no module that does not exist


def test_the_architecture_doc_names_only_what_exists() -> None:
    rows = module_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    assert unknown_names(ROOT, rows) == []


def test_a_duplicate_row_or_a_missing_function_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"core/a.py": "def real(x):\n    return x\n"})
    text = (
        "| `core/a.py` | `real(x)`, `core.a.real` |\n"
        "| `core/a.py` | `rescore_run`, `core.a.gone`, `invented(y)` |\n"
    )
    rows = module_rows(text)
    assert [module for module, _ in rows].count("core/a.py") == 2
    assert unknown_names(root, rows) == [
        "core/a.py: rescore_run", "core/a.py: core.a.gone", "core/a.py: invented(y)"
    ]


def test_a_data_job_importing_another_against_the_rule_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "data/split/__init__.py": "",
        "data/split/load.py": "from pytest_sommelier.data.store import artifacts\n",
        "data/store/__init__.py": "",
        "data/store/artifacts.py": "from pytest_sommelier.data.split import load\n",
        "data/atomic.py": "from pytest_sommelier.data.suite import names\n",
        "data/suite/__init__.py": "",
        "data/suite/names.py": "",
    })
    found = violations(root)
    assert any(line.endswith("data/split must not import pytest_sommelier.data.store.artifacts "
                             "(data/store)") for line in found), found
    assert any(line.endswith("data/leaf must not import pytest_sommelier.data.suite.names "
                             "(data/suite)") for line in found), found
    assert not any("data/store must not" in line for line in found), found


def test_training_may_import_only_the_runner_of_plugin(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "training/__init__.py": "",
        "training/a.py": "from pytest_sommelier.plugin import runner\n"
                         "from pytest_sommelier.plugin import session\n",
        "plugin/runner.py": "", "plugin/session.py": "",
    })
    found = violations(root)
    assert any(line.endswith("training may import only the runner of plugin, not "
                             "pytest_sommelier.plugin.session") for line in found), found
    assert not any("plugin.runner" in line for line in found), found


# What a view may take from the store: value types and the page's file name, never a reader.
# (view.html keeps ``render_report`` / ``write_report`` over a stored run, the 0.3 entry points
# the docs give, through the store's one reader ``runread.read_run``.)
VIEW_STORE_NAMES = {
    "pytest_sommelier.data.store.runread": {"SummaryInputs", "RunFiles"},
    "pytest_sommelier.data.store.history": {"PAGE"},
    "pytest_sommelier.data.store.artifacts": {"StoredArm", "stored_form"},  # a value, no file
    "pytest_sommelier.data.store.history_record": {"adapter_text"},  # a value's text, no file
}
VIEW_READER_EXCEPTIONS = {("html", "pytest_sommelier.data.store.runread", "read_run")}


def view_store_imports(root: Path) -> list[str]:
    """Every name a view imports from the store beyond ``VIEW_STORE_NAMES`` (and the module
    ``artifacts`` itself: a view renders, the caller reads and writes)."""
    found = []
    for path in sorted((root / "view").glob("*.py")):
        tree = parsed(path)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if not node.module.startswith(f"{PACKAGE}.data.store"):
                continue
            for alias in node.names:
                allowed = VIEW_STORE_NAMES.get(node.module, set())
                if alias.name in allowed or (path.stem, node.module, alias.name) in (
                    VIEW_READER_EXCEPTIONS
                ):
                    continue
                if path.stem == "html" and node.module == f"{PACKAGE}.data.store" and (
                    alias.name == "artifacts"
                ):
                    continue  # write_report's atomic write (the 0.3 entry point)
                found.append(f"view/{path.name}:{node.lineno}: {node.module}.{alias.name}")
    return found


def test_views_render_values_and_read_nothing_from_the_store() -> None:
    assert view_store_imports(ROOT) == []


# What ``data`` may take from the core's statistics and gates: types and constants (a record's
# shape, a schema name, a threshold key), never a function that computes an interval, a test,
# a report block or a verdict (issue 34: the store only stores; every gate is judged in core).
STATISTICS_AND_GATES = frozenset({
    "pytest_sommelier.core.stats", "pytest_sommelier.core.intervals",
    "pytest_sommelier.core.proportions", "pytest_sommelier.core.ratio_intervals",
    "pytest_sommelier.core.power", "pytest_sommelier.core.multiplicity",
    "pytest_sommelier.core.distributions", "pytest_sommelier.core.clusters",
    "pytest_sommelier.core.noise", "pytest_sommelier.core.gates",
    "pytest_sommelier.core.selection", "pytest_sommelier.core.report_blocks",
    "pytest_sommelier.core.report_comparison", "pytest_sommelier.core.stored_comparison",
    "pytest_sommelier.core.compare_fail", "pytest_sommelier.core.verdict",
})  # fmt: skip
PIPELINE_FUNCTIONS = frozenset({
    "evaluate_run", "build_arm_reports", "build_comparisons", "gate_intervals", "rescored",
    "derive_side", "compare_arm_sides", "telemetry_for", "selection_block",
})  # fmt: skip
"""The functions of ``core.pipeline`` that evaluate (its record checks, ``order_records``, and
its types stay importable: the store checks what it reads with them)."""


def data_statistics_imports(root: Path) -> list[str]:
    """One line per name a module under ``data/`` imports from the core's statistics and gate
    modules, or from the pipeline's evaluation, that is a function (a lower-case name), and per
    such module imported whole."""
    found = []
    for path in sorted((root / "data").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            where = f"{path.relative_to(root.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where}: {alias.name}" for alias in node.names
                          if alias.name in STATISTICS_AND_GATES]  # fmt: skip
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if dotted in STATISTICS_AND_GATES:
                    found.append(f"{where}: {dotted}")
                elif node.module in STATISTICS_AND_GATES and alias.name[:1].islower():
                    found.append(f"{where}: {dotted}")
                elif node.module == f"{PACKAGE}.core.pipeline" and alias.name in (
                    PIPELINE_FUNCTIONS
                ):
                    found.append(f"{where}: {dotted}")
    return found


def test_the_store_computes_no_interval_test_or_gate() -> None:
    assert data_statistics_imports(ROOT) == []


@pytest.mark.parametrize(
    "source",
    [
        "from pytest_sommelier.core.gates import evaluate_gates\n",
        "def f():\n    from pytest_sommelier.core.stats import paired_bootstrap\n",
        "from pytest_sommelier.core import stats\n",
        "import pytest_sommelier.core.verdict\n",
        "from pytest_sommelier.core.pipeline import evaluate_run\n",
        "from pytest_sommelier.core.stored_comparison import compare_runs\n",
    ],
    ids=["gate", "lazy-statistic", "module", "import", "pipeline", "comparison"],
)
def test_a_data_module_importing_a_statistic_or_a_gate_is_reported(
    tmp_path: Path, source: str
) -> None:
    root = _tree(tmp_path, {"data/store/__init__.py": "", "data/store/x.py": source,
                            "data/store/ok.py": "from pytest_sommelier.core.gates import "
                            "SELECTION_KIND\nfrom pytest_sommelier.core.pipeline import "
                            "ArmRun, order_records\n"})  # fmt: skip
    found = data_statistics_imports(root)
    assert len(found) == 1 and found[0].startswith("pytest_sommelier/data/store/x.py:"), found


def test_training_reads_statistics_from_core_only() -> None:
    """The callback and its stop rule take their intervals from ``core`` (the store's modules
    hold none to take); the stop rule imports nothing but ``core`` and the errors."""
    imported = {
        path.name: [
            node.module
            for node in ast.walk(parsed(path))
            if isinstance(node, ast.ImportFrom) and node.module
            and node.module.startswith(f"{PACKAGE}.")
        ]
        for path in sorted((ROOT / "training").glob("*.py"))
    }  # fmt: skip
    assert [module for module in imported["stop_rule.py"]
            if not module.startswith((f"{PACKAGE}.core.", f"{PACKAGE}.errors"))] == []  # fmt: skip
    assert "pytest_sommelier.core.stored_comparison" in imported["stop_rule.py"]
    assert [
        (name, module) for name, modules in imported.items() for module in modules
        if module.startswith(f"{PACKAGE}.data.") and module.split(".")[-1] in (
            "history_compare", "history_gate"
        )
    ] == []  # fmt: skip


# The records docs/architecture.md sketches are the real types, written from them.
SKETCHED = ("ModelConfig", "ArmConfig", "EngineConfig", "ComparisonConfig", "StatisticsConfig",
            "GateConfig", "SelectionConfig", "Suite", "Example", "FormattedSplit")  # fmt: skip


def record_sketch() -> str:
    """The fenced block of docs/architecture.md, "Suite and split objects": every field of each
    record of ``SKETCHED`` (``core.types``) with its annotation and default, in order."""
    import dataclasses

    from pytest_sommelier.core import types

    lines = ["```python"]
    for name in SKETCHED:
        record = getattr(types, name)
        lines.append(f"class {name}:  # frozen dataclass, core.types")
        for item in dataclasses.fields(record):
            if item.default is not dataclasses.MISSING:
                default = f" = {item.default!r}"
            elif item.default_factory is not dataclasses.MISSING:
                default = f" = {item.default_factory.__name__}()"
            else:
                default = ""
            lines.append(f"    {item.name}: {item.type}{default}")
    return "\n".join([*lines, "```"])


def test_the_record_sketch_is_the_real_types() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    expected = record_sketch()
    assert expected in text, (
        "docs/architecture.md's record sketch is not core.types; replace its block with:\n"
        + expected
    )
