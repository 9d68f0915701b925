"""Extensions in real pytest sessions (pytester): a ``conftest.py`` hook adds
a scorer to the suites below it, and the scorer then behaves as a metric after the five
everywhere (reports, slices, gaps, intervals, gates, terminal, Markdown, page, JUnit, the miss
drilldown); a broken scorer is one line and no verdict; the event hooks see the run; a
``conftest.py`` engine is chosen by ``[engine] name`` like a built-in.

Expected numbers are worked out by hand from the scripted outputs of ``test_plugin_scripted``:
``lenient_call`` counts a call whose name is the gold's and whose arguments equal the gold's
once numeric strings are read as numbers. The adapter misses en-2 (wrong name) and he-1 (does
not parse) and, unlike the strict metric, hits en-3 (``"4"`` for ``4``): 5 of 7 (en 3 of 4, he
2 of 3); the base hits en-0 only: 1 of 7.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from plugin_helpers import SCORER_HOOK, read_json, read_jsonl, write_scripted_suite
from test_scripted_sessions import GATES, SCRIPT, assert_outcomes, run

from pytest_sommelier.core.metrics import METRIC_NAMES, metric_order

LENIENT_GATES = [
    *GATES,
    {"name": "lenient", "arm": "adapter", "metric": "lenient_call", "min": 0.7},
    {
        "name": "lenient-uplift",
        "candidate": "adapter",
        "reference": "base",
        "metric": "lenient_call",
        "ci_lower_at_least": -1.0,
    },
    {
        "name": "lenient-gap",
        "arm": "adapter",
        "gap": "he",
        "metric": "lenient_call",
        "delta_at_least": -0.5,
    },
]


def lenient_suite(pytester: pytest.Pytester, hook: str = SCORER_HOOK, **overrides: object) -> None:
    overrides.setdefault("gates", LENIENT_GATES)
    suite = write_scripted_suite(pytester, SCRIPT, suite={"scorers": ["lenient_call"]}, **overrides)
    with (suite.parent / "conftest.py").open("a", encoding="utf-8") as conftest:
        conftest.write(hook)


def counts(block: dict, metric: str) -> tuple[int, int]:
    return block[metric]["numerator"], block[metric]["denominator"]


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_a_conftest_scorer_is_a_metric_after_the_five(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    lenient_suite(pytester)
    result = run(
        pytester, "--junitxml=junit.xml", *(["-n", "2"] if xdist else []), subprocess=xdist
    )
    assert_outcomes(result, passed=5, missed=9)
    assert result.ret == 0, result.stdout.str()
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert metric_order(adapter["metrics"]) == [*METRIC_NAMES, "lenient_call"]
    assert counts(adapter["metrics"], "lenient_call") == (5, 7)
    assert counts(adapter["slices"]["en"]["metrics"], "lenient_call") == (3, 4)
    assert counts(adapter["slices"]["he"]["metrics"], "lenient_call") == (2, 3)
    assert counts(base["metrics"], "lenient_call") == (1, 7)
    assert adapter["scorers"] == [{"name": "lenient_call", "version": "2", "kind": "rate"}]
    # the matched language gap: he-0, he-1, he-3 against their roots en-0, en-1, en-3
    paired = adapter["paired_slices"]["he"]
    assert counts(paired["target_metrics"], "lenient_call") == (2, 3)
    assert counts(paired["reference_metrics"], "lenient_call") == (3, 3)
    assert paired["gaps"]["lenient_call"] == pytest.approx(2 / 3 - 1)
    assert "lenient_call" in paired["intervals"]["intervals"]
    assert adapter["language_gaps"]["he"]["gaps"]["lenient_call"] == pytest.approx(2 / 3 - 3 / 4)
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert comparison["deltas"]["lenient_call"] == pytest.approx(4 / 7)
    entry = comparison["intervals"]["intervals"]["lenient_call"]
    assert (
        entry["method"] == comparison["intervals"]["intervals"]["full_call_exact_match"]["method"]
    )  # a rate: the same interval selection as the built-in rates
    generations = read_jsonl(out / "eval" / "adapter" / "generations.en.jsonl")
    assert [g["scores"]["lenient_call"] for g in generations] == [[1, 1], [1, 1], [0, 1], [1, 1]]
    assert read_json(out / "suite.resolved.json")["scorers"] == ["lenient_call"]
    verdict = read_json(out / "gate_verdict.json")
    gates = {g["name"]: g for g in verdict["gates"]}
    assert gates["lenient"]["passed"] and gates["lenient"]["observed"] == pytest.approx(5 / 7)
    assert gates["lenient-uplift"]["passed"]
    assert gates["lenient-gap"]["passed"]  # the matched gap: 2 of 3 minus 3 of 3
    assert gates["lenient-gap"]["observed"] == pytest.approx(2 / 3 - 1)
    source = "the xdist workers' hooks" if xdist else "hook pytest_sommelier_add_scorers"
    assert f"sommelier extensions: scorer lenient_call 2 (from {source}" in result.stdout.str()
    result.stdout.fnmatch_lines([
        "scorer lenient_call:", "*adapter*overall*0.714*5/7*",
        "*scorer lenient_call: overall +0.571*", "*PASS lenient: adapter lenient_call*",
        "*scorers: lenient_call 1/1*",
    ])  # fmt: skip
    markdown = (out / "report" / "adapter-vs-base.md").read_text(encoding="utf-8")
    assert "## scorer lenient_call" in markdown
    assert "`lenient_call`: an extension scorer" in markdown
    assert "lenient_call" in (out / "report.html").read_text(encoding="utf-8")
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    assert cases["lenient"].find("failure") is None


def test_the_conftest_hook_adds_the_scorer_to_its_suite_only(pytester: pytest.Pytester) -> None:
    lenient_suite(pytester)
    other = pytester.path / "other"
    shutil.copytree(pytester.path / "suite", other)
    conftest = (other / "conftest.py").read_text(encoding="utf-8")
    (other / "conftest.py").write_text(conftest.replace(SCORER_HOOK, ""), encoding="utf-8")
    result = run(pytester, "other")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*SOM-SCORER-UNKNOWN*other*scorer 'lenient_call' is not known*"])
    assert run(pytester, "suite").ret == 0


BROKEN = {
    "raises": ("raise ValueError('bad input')", "SOM-SCORER-RAISED"),
    "floats": ("return (0.5, 1.0)", "SOM-SCORER-TYPE"),
    "above": ("return (2, 1)", "SOM-SCORER-RANGE"),
}


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_broken_scorer_is_one_line_and_the_run_has_no_verdict(
    pytester: pytest.Pytester, how: str
) -> None:
    body, code = BROKEN[how]
    hook = (
        "\n\nfrom pytest_sommelier import Scorer\n\n\ndef broken(parsed, gold, example):\n"
        f"    {body}\n\n\ndef pytest_sommelier_add_scorers(config):\n"
        "    return [Scorer('lenient_call', '1', 'ratio', broken)]\n"
    )
    lenient_suite(pytester, hook)
    result = run(pytester)
    assert result.ret == 1
    lines = [line for line in result.stdout.lines if code in line]
    assert len(lines) == 1, result.stdout.str()
    assert "scorer 'lenient_call' 1" in lines[0] and "example en-0" in lines[0]
    assert not (pytester.path / "out" / "gate_verdict.json").exists()
    result.stdout.fnmatch_lines(["*no verdict was written for this suite*"])


EVENTS = """

import json


def pytest_sommelier_run_written(config, run_dir):
    with (run_dir.parent / "events.jsonl").open("a") as log:
        written = (run_dir / "gate_verdict.json").exists()
        log.write(json.dumps({"event": "run_written", "verdict": written}) + "\\n")


def pytest_sommelier_verdict(config, verdict, run_dir):
    with (run_dir.parent / "events.jsonl").open("a") as log:
        log.write(json.dumps({"event": "verdict", "verdict": verdict["verdict"],
                              "written": (run_dir / "gate_verdict.json").exists()}) + "\\n")


def pytest_sommelier_model_identity(config, arm, identity):
    identity["tracked_by"] = "events"  # the same for every arm: the identity gate compares it
"""


def test_the_event_hooks_see_the_run_the_verdict_and_the_identities(
    pytester: pytest.Pytester,
) -> None:
    lenient_suite(pytester, SCORER_HOOK + EVENTS)
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()
    events = read_jsonl(pytester.path / "events.jsonl")
    assert events == [
        {"event": "run_written", "verdict": False},
        {"event": "verdict", "verdict": "pass", "written": True},
    ]
    adapter = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    assert adapter["model_identity"] == {"fake": "model-1", "tracked_by": "events"}


def test_an_identity_hook_that_removes_a_field_is_refused(pytester: pytest.Pytester) -> None:
    hook = (
        "\n\ndef pytest_sommelier_model_identity(config, arm, identity):\n"
        "    identity.pop('fake')\n"
    )
    lenient_suite(pytester, SCORER_HOOK + hook)
    result = run(pytester)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*SOM-PLUGIN-IDENTITY*removed or changed 'fake'*"])
    assert not (pytester.path / "out" / "gate_verdict.json").exists()


ENGINE_HOOK = '''
import json
import pathlib

HERE = pathlib.Path(__file__).parent


class Echo:
    """Answers every prompt with the gold call of en-0 (a hit there, a miss elsewhere)."""

    def __init__(self, arm):
        self.model_identity = {"engine": {"name": "echo", "version": "1"}}
        self.adapter_identity = None

    def generate(self, prompts, decoding):
        return ['{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}'
                for _ in prompts]


def load_echo(engine, model, arms, *, suite_dir, worker_index=0):
    (HERE / "loaded.json").write_text(json.dumps({"engine": engine.name, "arms": list(arms)}))
    return {name: Echo(name) for name in arms}


def pytest_sommelier_add_engines(config):
    return {"echo": load_echo}
'''


def test_a_conftest_engine_is_chosen_by_name_like_a_built_in(pytester: pytest.Pytester) -> None:
    from suite_factory import write_suite

    suite = write_suite(
        pytester.path / "suite",
        arms={"base": {}},
        comparisons=None,
        engine={"name": "echo"},
        model={"base": "fake-org/fake-model"},
    )
    (suite.parent / "conftest.py").write_text(ENGINE_HOOK)
    result = run(pytester)
    assert result.ret == 0, result.stdout.str()
    assert read_json(suite.parent / "loaded.json") == {"engine": "echo", "arms": ["base"]}
    report = read_json(pytester.path / "out" / "eval" / "base" / "evaluation_report.json")
    assert report["model_identity"]["engine"] == {"name": "echo", "version": "1"}
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 2  # en-0 and he-0
    hook = "pytest_sommelier_add_engines of *conftest.py)"
    result.stdout.fnmatch_lines([f"sommelier extensions: engine echo (from hook {hook}*"])


@pytest.mark.parametrize(
    ("args", "ini"),
    [(("--sommelier-engine", "echo"), None), ((), "[pytest]\nsommelier_engine = echo\n")],
    ids=["flag", "ini"],
)
def test_a_conftest_engine_is_chosen_by_flag_and_ini_like_by_the_suite_key(
    pytester: pytest.Pytester, args: tuple[str, ...], ini: str | None
) -> None:
    """The engine a ``conftest.py`` beside the suite registers is not known when the options
    are read (that conftest is loaded at collection): ``--sommelier-engine echo`` and the ini
    key ``sommelier_engine = echo`` choose it like ``[engine] name = "echo"`` does, over a
    suite whose own ``[engine]`` names a built-in."""
    from suite_factory import write_suite

    suite = write_suite(
        pytester.path / "suite",
        arms={"base": {}},
        comparisons=None,
        engine={"name": "vllm"},
        model={"base": "fake-org/fake-model"},
    )
    (suite.parent / "conftest.py").write_text(ENGINE_HOOK)
    if ini is not None:
        (pytester.path / "pytest.ini").write_text(ini)
    result = run(pytester, *args)
    assert result.ret == 0, result.stdout.str()
    assert read_json(suite.parent / "loaded.json") == {"engine": "echo", "arms": ["base"]}
    report = read_json(pytester.path / "out" / "eval" / "base" / "evaluation_report.json")
    assert report["model_identity"]["engine"] == {"name": "echo", "version": "1"}
    result.stdout.fnmatch_lines(["sommelier extensions: engine echo (from hook *"])


def test_a_flag_engine_nobody_registers_is_one_line_naming_the_flag(
    pytester: pytest.Pytester,
) -> None:
    from suite_factory import write_suite

    write_suite(
        pytester.path / "suite", arms={"base": {}}, comparisons=None,
        model={"base": "fake-org/fake-model"},
    )  # fmt: skip
    result = run(pytester, "--sommelier-engine", "tgi")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # refused at collection, before any item
    result.stdout.fnmatch_lines([
        "*SOM-ENGINE-NAME*--sommelier-engine / ini sommelier_engine: engine 'tgi' is not known*"
    ])  # fmt: skip
    assert not (pytester.path / "out" / "gate_verdict.json").exists()


def test_an_engine_name_nobody_registers_is_one_line(pytester: pytest.Pytester) -> None:
    from suite_factory import write_suite

    write_suite(
        pytester.path / "suite",
        arms={"base": {}},
        comparisons=None,
        engine={"name": "nobody"},
        model={"base": "fake-org/fake-model"},
    )
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # refused at collection, before any item
    result.stdout.fnmatch_lines(["*SOM-ENGINE-NAME*engine 'nobody' is not known*"])


def test_a_scorer_run_compares_with_its_stored_run(pytester: pytest.Pytester) -> None:
    """A stored run is read back without its scorers (the store compares on the built-in
    metrics), so comparing a scorer run with it works and says so in its file."""
    lenient_suite(pytester)
    first = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "one",
                               "--sommelier-autosave")  # fmt: skip
    assert first.ret == 0, first.stdout.str()
    second = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "two",
                                "--sommelier-compare", "last")  # fmt: skip
    assert second.ret == 0, second.stdout.str()
    compared = read_json(pytester.path / "two" / "report" / "compare-0001.json")
    assert compared["arms"], compared


def test_a_stored_run_of_another_scorer_version_is_not_compared(
    pytester: pytest.Pytester,
) -> None:
    lenient_suite(pytester)
    first = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "one",
                               "--sommelier-autosave")  # fmt: skip
    assert first.ret == 0, first.stdout.str()
    conftest = pytester.path / "suite" / "conftest.py"
    text = conftest.read_text(encoding="utf-8")
    conftest.write_text(text.replace('Scorer("lenient_call", "2"', 'Scorer("lenient_call", "3"'))
    # same size, maybe the same second: a cached bytecode file would still say version 2
    shutil.rmtree(conftest.parent / "__pycache__", ignore_errors=True)
    second = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "two",
                                "--sommelier-compare", "last")  # fmt: skip
    second.stdout.fnmatch_lines([
        "adapter: REFUSED: SOM-COMPARE-IDENTITY: scorers.lenient_call.version: * 3*, * 2*",
    ])  # fmt: skip


def example_properties(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Each evaluated example's ``<property>`` list (name, value) in document order, by its
    test case's ``classname`` and ``name`` (the gate cases carry no ``sommelier_outcome``)."""
    out = {}
    for case in ET.parse(path).iter("testcase"):
        props = [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        if props and props[0][0] == "sommelier_outcome":
            out[f"{case.get('classname')}::{case.get('name')}"] = props
    return out


@pytest.mark.parametrize(
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_junit_gives_each_example_its_scorer_components_after_the_outcome(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    lenient_suite(pytester)
    result = run(
        pytester, "--junitxml=junit.xml", *(["-n", "2"] if xdist else []), subprocess=xdist
    )
    assert result.ret == 0, result.stdout.str()
    cases = example_properties(pytester.path / "junit.xml")
    assert len(cases) == 14  # two arms, seven examples
    for props in cases.values():
        names = [name for name, _ in props]
        hit = props[0][1] == "hit"
        expected = ["sommelier_outcome", *([] if hit else ["sommelier_miss"])]
        assert names == [*expected, "sommelier_score_lenient_call"], props
    # classname suite.sommelier.toml.<arm>.<slice>, name the example id
    adapter = {key.rsplit("::", 1)[-1]: dict(props) for key, props in cases.items()
               if key.split("::")[0].split(".")[-2] == "adapter"}  # fmt: skip
    score = {example: props["sommelier_score_lenient_call"] for example, props in adapter.items()}
    assert score == {"en-0": "1/1", "en-1": "1/1", "en-2": "0/1", "en-3": "1/1",
                     "he-0": "1/1", "he-1": "0/1", "he-3": "1/1"}  # fmt: skip
    # the per-example components add up to the report's
    report = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    hits = sum(int(value.split("/")[0]) for value in score.values())
    assert (hits, len(score)) == counts(report["metrics"], "lenient_call")


def test_junit_without_scorers_has_no_score_property(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result = run(pytester, "--junitxml=junit.xml")
    assert result.ret == 0, result.stdout.str()
    cases = example_properties(pytester.path / "junit.xml")
    assert len(cases) == 14
    names = {name for props in cases.values() for name, _ in props}
    assert names == {"sommelier_outcome", "sommelier_miss"}
