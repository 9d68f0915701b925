"""Under ``-n 2`` every fixed batch is generated once, whatever subset is selected (issue 16).

The one fake model (tests/fakes.py) appends every ``generate`` call's example ids, its
process id and whether it is the runner's warm-up call to ``calls.jsonl``. A suite of 12 English
and 8 Hebrew examples at ``batch_size`` 3 (14 batches over two arms) runs under ``-n 2`` with
``-k``, ``--deselect`` and ``--lf``: every example of every batch that holds a selected item
is generated exactly once, on one of the two workers, and both workers generate. The node
ids the run reports are the items' own (no xdist ``@group`` suffix), which is what lets
``--lf`` find them again. The pure rules (group names, scopes) have property tests.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from fakes import FAKE_CONFTEST
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import read_json, read_jsonl
from property_budget import examples
from source_trees import parsed
from suite_factory import make_row, write_suite

from pytest_sommelier.plugin.keys import batch_index_map
from pytest_sommelier.plugin.scheduling import batch_group, mode_scope, scope_of, suite_batches

BATCH_SIZE = 3
EN = [f"en-{i:02d}" for i in range(12)]
HE = [f"he-{i:02d}" for i in range(8)]
ARMS = ("base", "adapter")
SUITE = "suite/sommelier.toml"
LOGGING = {"fake": "logging-1"}

def logging_suite(pytester: pytest.Pytester, hits: list[str]) -> Path:
    """The suite, its logging fake and the examples the fake answers right (``hits``)."""
    rows = [make_row(i, "en", prompt_text=f"<user>q {i}</user>\n") for i in EN]
    rows += [
        make_row(h, "he", e, prompt_text=f"<user>ש {h}</user>\n")
        for h, e in zip(HE, EN, strict=False)  # he-0k translates en-0k
    ]
    suite = write_suite(
        pytester.path / "suite",
        rows=rows,
        model={"base": "fake-org/fake-model"},
        decoding={"batch_size": BATCH_SIZE},
    )
    (suite.parent / "conftest.py").write_text(FAKE_CONFTEST)
    script = {"__hits__": hits, "__prose__": "I am not sure.", "__model_identity__": LOGGING}
    (suite.parent / "script.json").write_text(json.dumps(script))
    return suite


def generations(pytester: pytest.Pytester) -> tuple[collections.Counter[tuple[str, str]], set[int]]:
    """How often each (arm, example) was generated (warm-ups aside), and by which processes."""
    log = pytester.path / "suite" / "calls.jsonl"
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    pids: set[int] = set()
    for call in read_jsonl(log) if log.exists() else []:
        if call["warmup"]:
            continue
        pids.add(call["pid"])
        counts.update((call["arm"], example) for example in call["ids"])
    return counts, pids


def batches_of(selected: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """Every (arm, example) of every fixed batch that holds a selected (arm, example)."""
    wanted: set[tuple[str, str]] = set()
    for ids in (EN, HE):
        batches = [ids[k : k + BATCH_SIZE] for k in range(0, len(ids), BATCH_SIZE)]
        for arm in ARMS:
            for batch in batches:
                if any((arm, example) in selected for example in batch):
                    wanted.update((arm, example) for example in batch)
    return wanted


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    log = pytester.path / "suite" / "calls.jsonl"
    log.unlink(missing_ok=True)
    return pytester.runpytest_subprocess(
        "-n", "2", "--sommelier-no-cache", "--sommelier-out", "out", "-v", *args
    )


def assert_each_batch_generated_once(
    pytester: pytest.Pytester,
    result: pytest.RunResult,
    selected: set[tuple[str, str]],
) -> None:
    counts, pids = generations(pytester)
    assert dict(counts) == dict.fromkeys(batches_of(selected), 1), result.stdout.str()
    assert len(pids) == 2, "both workers generate (the run is really parallel)"
    # reports carry the items' own node ids, in every --dist mode
    reported = [line for line in result.stdout.lines if f"{SUITE}::" in line and "[gw" in line]
    assert len(reported) == len(selected), result.stdout.str()
    assert not any("@" in line for line in reported), reported[:3]
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("missed", 0) + outcomes.get("failed", 0) == len(
        selected
    ), outcomes


ALL = {(arm, example) for arm in ARMS for example in (*EN, *HE)}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "left_out"),
    [
        (["-k", "not en-01"], {("base", "en-01"), ("adapter", "en-01")}),
        (
            ["-k", "adapter and not he-04"],
            {*(("base", e) for e in (*EN, *HE)), ("adapter", "he-04")},
        ),
        (
            ["--deselect", f"{SUITE}::adapter::en::en-04", "--deselect", f"{SUITE}::base::he"],
            {("adapter", "en-04"), *(("base", h) for h in HE)},
        ),
        *(
            (["--dist", mode, "-k", "not en-01"], {("base", "en-01"), ("adapter", "en-01")})
            for mode in ("load", "loadscope", "loadfile", "loadgroup", "worksteal")
        ),
    ],
    ids=[
        "k",
        "k-arm",
        "deselect",
        *(f"explicit-{m}" for m in ("load", "loadscope", "loadfile", "loadgroup", "worksteal")),
    ],
)
def test_every_batch_is_generated_once_under_a_selection(
    pytester: pytest.Pytester, args: list[str], left_out: set[tuple[str, str]]
) -> None:
    logging_suite(pytester, hits=[])
    result = run(pytester, "-p", "no:cacheprovider", "-m", "eval", *args)
    assert result.ret == 1  # a subset: the verdict is incomplete
    assert_each_batch_generated_once(pytester, result, ALL - left_out)
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"


@pytest.mark.slow
def test_last_failed_reruns_each_batch_once(pytester: pytest.Pytester) -> None:
    """A strict run fails every example but en-01 and he-02; ``--lf`` then reruns the rest,
    found again by their own node ids (xdist's ``@group`` suffix would lose them)."""
    logging_suite(pytester, hits=["en-01", "he-02"])
    first = run(pytester, "--sommelier-strict", "-m", "eval")
    assert first.parseoutcomes().get("failed") == len(ALL) - 4, first.stdout.str()
    lastfailed = read_json(pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed")
    assert all("@" not in nodeid for nodeid in lastfailed)
    result = run(pytester, "--sommelier-strict", "-m", "eval", "--lf")
    selected = ALL - {(arm, e) for arm in ARMS for e in ("en-01", "he-02")}
    assert_each_batch_generated_once(pytester, result, selected)


# ------------------------------------------------------------------------------- pure rules

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
identifiers = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,8}", fullmatch=True)  # arms, slices
MODES = ("load", "loadscope", "loadfile", "loadgroup", "worksteal")


@settings(max_examples=examples(100))
@given(
    a=st.tuples(identifiers, identifiers, st.integers(0, 99)),
    b=st.tuples(identifiers, identifiers, st.integers(0, 99)),
)
def test_groups_differ_exactly_when_batches_differ(
    a: tuple[str, str, int], b: tuple[str, str, int]
) -> None:
    assert (batch_group(SUITE, *a) == batch_group(SUITE, *b)) == (a == b)


@settings(max_examples=examples(100))
@given(
    slices=st.dictionaries(identifiers, st.lists(names, unique=True, max_size=30), max_size=4),
    size=st.integers(1, 8),
    dist=st.sampled_from(MODES),
)
def test_a_suite_item_goes_with_exactly_its_batch(
    slices: dict[str, list[str]], size: int, dist: str
) -> None:
    """Two items of one arm share a unit exactly when they share a fixed batch (the slice
    cut by position // batch_size), whatever the --dist mode."""
    index = batch_index_map(slices, size)
    items = [(lang, i, pos) for lang, ids in slices.items() for pos, i in enumerate(ids)]
    scope = {
        (lang, i): scope_of(f"{SUITE}::adapter::{lang}::{i}", lambda _s: index, dist)
        for lang, i, _ in items
    }
    for lang_a, a, pos_a in items:
        for lang_b, b, pos_b in items:
            same_batch = lang_a == lang_b and pos_a // size == pos_b // size
            assert (scope[lang_a, a] == scope[lang_b, b]) == same_batch


@settings(max_examples=examples(100))
@given(example=names, dist=st.sampled_from(MODES))
def test_an_unknown_batch_goes_with_its_whole_slice(example: str, dist: str) -> None:
    # the suite did not load on the controller, or the split does not hold the example
    for batches in ({}, None):
        unit = scope_of(f"{SUITE}::adapter::en::{example}", lambda _s, b=batches: b, dist)
        assert unit == f"{SUITE}::adapter::en"


def test_other_tests_keep_their_modes_unit() -> None:
    def unit(nodeid: str, dist: str) -> str:
        return scope_of(nodeid, lambda _s: None, dist)

    test = "tests/test_a.py::TestX::test_x[a@b]"
    assert unit(test, "load") == unit(test, "worksteal") == test
    assert unit(test, "loadscope") == "tests/test_a.py::TestX"
    assert unit(test, "loadfile") == "tests/test_a.py"
    assert unit(test, "loadgroup") == test  # an "@" inside the parameters is no group
    assert unit("tests/test_a.py::test_x@mine", "loadgroup") == "mine"
    assert mode_scope("load")("x::y") == "x::y"


def test_the_package_writes_no_private_attribute_of_another_object() -> None:
    """No ``obj._name = ...`` (nor ``setattr(obj, "_name", ...)``) on anything but ``self``
    anywhere in the package; on ``self``, only inside the package's own classes that do not
    derive from a pytest or xdist class, or for names the package itself introduces."""
    import ast

    import pytest_sommelier

    root = Path(pytest_sommelier.__file__).parent
    offences: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = parsed(path)
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if (
                        isinstance(sub, ast.Attribute)
                        and sub.attr.startswith("_")
                        and not sub.attr.startswith("__")
                        and not (isinstance(sub.value, ast.Name) and sub.value.id == "self")
                    ):
                        offences.append(f"{path.relative_to(root)}:{sub.lineno}: {sub.attr}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and len(node.args) > 1
                and isinstance(node.args[1], ast.Constant)
                and str(node.args[1].value).startswith("_")
            ):
                offences.append(f"{path.relative_to(root)}:{node.lineno}: setattr")
    assert offences == []


def test_the_controller_reads_each_suites_batches(pytester: pytest.Pytester) -> None:
    """The controller's map is the split's own batches (not the whole-slice fallback): each
    example's index is its position in its slice // batch_size; a suite that does not load
    maps to None."""
    logging_suite(pytester, hits=[])
    config = pytester.parseconfigure()
    batches = suite_batches(config)
    expected = {("en", e): i // BATCH_SIZE for i, e in enumerate(EN)}
    expected |= {("he", h): i // BATCH_SIZE for i, h in enumerate(HE)}
    assert batches(SUITE) == expected
    assert scope_of(f"{SUITE}::adapter::he::he-04", batches) == batch_group(
        SUITE, "adapter", "he", 1
    )
    (pytester.path / "broken").mkdir()
    (pytester.path / "broken" / "sommelier.toml").write_text("not toml [")
    assert batches("broken/sommelier.toml") is None
