"""Every option's ini twin does what its flag does (one frozen Settings, built at configure).

Two halves. The settings builder, unit-tested on a parsed config (no session): each flag and its
ini twin build the same ``Settings``, the flag wins over the ini file, and bad values are usage
errors naming both. Since every module reads options only through ``settings_of``, equal
settings mean equal behaviour; what each flag does is then checked once per option in a real
(in-process) session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, settings, write_scripted_suite
from property_budget import examples

from pytest_sommelier.plugin.settings import OPTIONS, Settings, build_settings

SCRIPT = {
    "adapter": {k: call_text(v) for k, v in GOLD.items() if k != "en-1"},
    "base": {"en-0": call_text(GOLD["en-0"])},
}
Check = Callable[[pytest.Pytester, pytest.RunResult], None]


def calls(pytester: pytest.Pytester) -> list[dict]:
    path = pytester.path / "suite" / "calls.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def wrote_out(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "chosen" / "gate_verdict.json").is_file()
    assert not (pytester.path / "runs").exists()


def strict(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 7 and "missed" not in outcomes, outcomes
    assert result.ret == 1


def misses_one(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert "misses (showing 1 of 7" in result.stdout.str()


def misses_none(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert "misses (showing" not in result.stdout.str()
    assert "verdict:" in result.stdout.str()


def gates_off(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "out" / "eval" / "base" / "evaluation_report.json").is_file()
    assert not (pytester.path / "out" / "gate_verdict.json").exists()


def baseline(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    assert {c["arm"] for c in calls(pytester)} == {"adapter"}  # base came from the stored run
    assert (pytester.path / "out" / "report" / "adapter-vs-base.json").is_file()


def timed_out(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert "SOM-MODEL-TIMEOUT" in result.stdout.str()
    assert result.ret != 0


def selfcheck(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    singles = [c for c in calls(pytester) if c["n"] == 1]
    assert len(singles) >= 2 * 2, calls(pytester)  # 2 re-generated per arm (one process)


def cache_dir(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    assert any(p.is_file() for p in (pytester.path / "gencache").rglob("*"))


def no_cache(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    assert result.ret == 0, result.stdout.str()
    assert not (pytester.path / "gencache").exists()


CASES: list[tuple[str, list[str], str, Check, dict]] = [
    ("out", ["--sommelier-out", "chosen"], "sommelier_out = chosen", wrote_out, {}),
    ("strict", ["--sommelier-strict"], "sommelier_strict = true", strict, {}),
    ("misses", ["--sommelier-misses", "1"], "sommelier_misses = 1", misses_one, {}),
    ("misses-0", ["--sommelier-misses", "0"], "sommelier_misses = 0", misses_none, {}),
    ("gates", ["--sommelier-gates", "off"], "sommelier_gates = off", gates_off, {}),
    ("baseline", ["--sommelier-baseline", "stored/eval/base"],
     "sommelier_baseline = stored/eval/base", baseline, {}),
    ("timeout", ["--sommelier-timeout", "0.3"], "sommelier_timeout = 0.3", timed_out,
     {"hang": True}),
    ("selfcheck", ["--sommelier-selfcheck", "2"], "sommelier_selfcheck = 2", selfcheck,
     {"decoding": {"batch_size": 2}}),
    ("cache-dir", ["--sommelier-cache-dir", "gencache"], "sommelier_cache_dir = gencache",
     cache_dir, {}),
    ("no-cache", ["--sommelier-cache-dir", "gencache", "--sommelier-no-cache"],
     "sommelier_cache_dir = gencache\nsommelier_no_cache = true", no_cache, {}),
]


@pytest.mark.parametrize(
    ("flag", "ini", "check", "extra"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_flag_does_its_job_in_a_session(
    pytester: pytest.Pytester, flag: list[str], ini: str, check: Check, extra: dict
) -> None:
    script = dict(SCRIPT)
    if extra.get("hang"):
        script["__special__"] = {"base": "hang"}
    overrides = {k: v for k, v in extra.items() if k != "hang"}
    write_scripted_suite(pytester, script, **overrides)
    if flag[:1] == ["--sommelier-baseline"]:
        stored = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "stored")
        assert stored.ret == 0, stored.stdout.str()
        (pytester.path / "suite" / "calls.jsonl").unlink()
    args = ["-p", "no:cacheprovider"]
    if "sommelier_out" not in ini:
        args += ["--sommelier-out", "out"]
    check(pytester, pytester.runpytest(*args, *flag))


# ------------------------------------------------------------------ the builder, no session


BUILT: list[tuple[str, list[str], str, dict[str, Any]]] = [
    ("out", ["--sommelier-out", "chosen"], "sommelier_out = chosen", {"out": "chosen"}),
    ("strict", ["--sommelier-strict"], "sommelier_strict = true", {"strict": True}),
    ("misses", ["--sommelier-misses", "1"], "sommelier_misses = 1", {"misses": 1}),
    ("misses-0", ["--sommelier-misses", "0"], "sommelier_misses = 0", {"misses": 0}),
    ("gates", ["--sommelier-gates", "off"], "sommelier_gates = off", {"gates": False}),
    ("baseline", ["--sommelier-baseline", "a/eval/base", "--sommelier-baseline", "ref=b"],
     "sommelier_baseline =\n    a/eval/base\n    ref=b", {"baseline": ("a/eval/base", "ref=b")}),
    ("timeout", ["--sommelier-timeout", "0.3"], "sommelier_timeout = 0.3", {"timeout": 0.3}),
    ("selfcheck", ["--sommelier-selfcheck", "2"], "sommelier_selfcheck = 2", {"selfcheck": 2}),
    ("cache-dir", ["--sommelier-cache-dir", "gencache"], "sommelier_cache_dir = gencache",
     {"cache_dir": "gencache"}),
    ("no-cache", ["--sommelier-no-cache"], "sommelier_no_cache = true", {"no_cache": True}),
    ("engine", ["--sommelier-engine", "vllm"], "sommelier_engine = vllm", {"engine": "vllm"}),
    ("storage", ["--sommelier-storage", "store"], "sommelier_storage = store",
     {"storage": "store"}),
    ("autosave", ["--sommelier-autosave"], "sommelier_autosave = true", {"autosave": True}),
    ("autosave-all", ["--sommelier-autosave=all"], "sommelier_autosave = all",
     {"autosave": True, "autosave_all": True}),
    ("autosave-pass", ["--sommelier-autosave=pass"], "sommelier_autosave = pass",
     {"autosave": True, "autosave_pass": True}),
    ("label", ["--sommelier-label=v5"], "sommelier_label = v5", {"label": "v5"}),
    ("compare", ["--sommelier-compare"], "sommelier_compare = last", {"compare": "last"}),
    ("compare-any", ["--sommelier-compare=last-any"], "sommelier_compare = last-any",
     {"compare": "last-any"}),
    ("compare-label", ["--sommelier-compare=label:v5"], "sommelier_compare = label:v5",
     {"compare": "label:v5"}),
    ("compare-num", ["--sommelier-compare=0003"], "sommelier_compare = 0003",
     {"compare": "0003"}),
    ("compare-fail", ["--sommelier-compare-fail", "full_call_exact_match:0.02",
                      "--sommelier-compare-fail=full_call_exact_match:he:0.03",
                      "--sommelier-compare=3"],
     "sommelier_compare = 3\nsommelier_compare_fail =\n    full_call_exact_match:0.02\n"
     "    full_call_exact_match:he:0.03",
     {"compare": "3",
      "compare_fail": ("full_call_exact_match:0.02", "full_call_exact_match:he:0.03")}),
    ("sample", ["--sommelier-sample", "20:7"], "sommelier_sample = 20:7", {"sample": (20, 7)}),
    ("sample-no-seed", ["--sommelier-sample=3"], "sommelier_sample = 3", {"sample": (3, 0)}),
    ("arms", ["--sommelier-arms", "adapter=/", "--sommelier-arms=v2=/tmp/../"],
     "sommelier_arms =\n    adapter=/\n    v2=/tmp/../", {"arms": (("adapter", "/"), ("v2", "/"))}),
]  # fmt: skip


@pytest.mark.parametrize("via", ["flag", "ini"])
@pytest.mark.parametrize(
    ("flag", "ini", "fields"), [c[1:] for c in BUILT], ids=[c[0] for c in BUILT]
)
def test_ini_twin_builds_what_the_flag_builds(
    pytester: pytest.Pytester, via: str, flag: list[str], ini: str, fields: dict[str, Any]
) -> None:
    built = settings(pytester, *flag) if via == "flag" else settings(pytester, ini=ini)
    assert built == replace(Settings(), **fields) != Settings()


def test_every_option_is_covered() -> None:
    covered = {flag[0].split("=")[0] for _, flag, _, _ in BUILT}
    assert covered == {option[0] for option in OPTIONS}


def test_nothing_given_builds_the_defaults(pytester: pytest.Pytester) -> None:
    assert settings(pytester) == Settings()


def test_the_flag_wins_over_the_ini_file(pytester: pytest.Pytester) -> None:
    built = settings(
        pytester,
        "--sommelier-misses", "1", "--sommelier-out", "chosen", "--sommelier-baseline", "cli",
        ini="sommelier_misses = 0\nsommelier_out = ignored\nsommelier_baseline = from-ini",
    )  # fmt: skip
    assert (built.misses, built.out, built.baseline) == (1, "chosen", ("cli",))


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        ([], "sommelier_misses = many", "--sommelier-misses / ini sommelier_misses: 'many'"),
        ([], "sommelier_timeout = -1", "--sommelier-timeout / ini sommelier_timeout: '-1' must be"),
        ([], "sommelier_gates = maybe", "--sommelier-gates / ini sommelier_gates: 'maybe'"),
        # a name of no shape; whether a name is registered is judged at collection (a
        # conftest's hook engine is not known yet: test_extension_session.py)
        ([], "sommelier_engine = my engine", "--sommelier-engine / ini sommelier_engine: "
         "'my engine' is not an engine name"),
        (["--sommelier-engine", "tgi\x00"], None, "SOM-OPTION-VALUE: --sommelier-engine"),
        (["--sommelier-timeout", "nan"], None, "--sommelier-timeout / ini sommelier_timeout"),
        (["--sommelier-selfcheck", "-2"], None, "ini sommelier_selfcheck: '-2' must be 0 or more"),
        ([], "sommelier_autosave = sometimes", "ini sommelier_autosave: 'sometimes' is not true"),
        # a bare flag before a test path takes the path as its value: the hint says so
        (["--sommelier-autosave", "suite"], None,
         "a bare --sommelier-autosave takes the next argument as its value"),
        (["--sommelier-compare", "suite"], None,
         "--sommelier-compare / ini sommelier_compare: 'suite' is not a store number, last, "),
        ([], "sommelier_compare = nowhere", "write --sommelier-compare=last"),
        (["--sommelier-compare", "--sommelier-compare-fail=full_call_exact_match:2%"], None,
         "SOM-HISTORY-FAIL-SPEC: --sommelier-compare-fail / ini sommelier_compare_fail "
         "'full_call_exact_match:2%': margin '2%' is a percentage"),
        (["--sommelier-compare", "--sommelier-compare-fail=Exactness:0.02"], None,
         "metric 'Exactness' is not a metric"),
        (["--sommelier-compare-fail=full_call_exact_match:0.02"], None,
         "--sommelier-compare-fail / ini sommelier_compare_fail: needs a stored run"),
        (["--sommelier-arms", "adapter"], None,
         "--sommelier-arms / ini sommelier_arms: 'adapter' is not ARM=DIR"),
        (["--sommelier-arms", "=/"], None, "'=/' is not ARM=DIR"),
        (["--sommelier-arms", "adapter@30=/"], None, "'adapter@30=/' is not ARM=DIR"),
        (["--sommelier-arms", "adapter=/", "--sommelier-arms", "adapter=/tmp"], None,
         "arm 'adapter' is given twice"),
        (["--sommelier-arms", "adapter=no/such/folder"], None,
         "'adapter=no/such/folder': no such adapter folder"),
        ([], "sommelier_arms = adapter=out/checkpoint-*", "no such adapter folder (relative to"),
    ],
    ids=["ini-misses", "ini-timeout", "ini-gates", "ini-engine", "engine", "nan", "negative",
         "ini-autosave", "autosave-path", "compare-path", "ini-compare", "fail-percent",
         "fail-metric", "fail-alone", "arms-no-dir", "arms-no-name", "arms-sweep-name",
         "arms-twice", "arms-missing", "ini-arms-glob"],
)  # fmt: skip
def test_a_bad_value_is_a_usage_error_naming_flag_and_twin(
    pytester: pytest.Pytester, args: list[str], ini: str | None, message: str
) -> None:
    with pytest.raises(pytest.UsageError) as error:
        settings(pytester, *args, ini=ini)
    assert message in str(error.value)


def test_compare_takes_a_run_folder_relative_to_the_invocation_folder(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "runs" / "r1").mkdir(parents=True)
    (pytester.path / "runs" / "r1" / "suite.resolved.json").write_text("{}")
    built = settings(pytester, "--sommelier-compare=runs/r1")
    assert built.compare == str(pytester.path / "runs" / "r1")


def test_the_store_is_at_the_rootdir_unless_given(pytester: pytest.Pytester) -> None:
    from pytest_sommelier.plugin.settings import SETTINGS_KEY, store_path

    for args, expected in (([], pytester.path / ".sommelier"),
                           (["--sommelier-storage", "s"], pytester.path / "s")):  # fmt: skip
        config = pytester.parseconfig(*args)
        config.stash[SETTINGS_KEY] = build_settings(config)
        assert store_path(config) == expected


def test_a_bad_compare_fail_spec_stops_the_session_at_configure(
    pytester: pytest.Pytester,
) -> None:
    write_scripted_suite(pytester, SCRIPT)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-compare", "--sommelier-compare-fail=Recall:0.1"
    )  # a lower-case name could be a scorer the suite enables: checked at collection
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    (line,) = [x for x in result.stderr.lines if "SOM-HISTORY-FAIL-SPEC" in x]
    assert "'Recall' is not a metric" in line and "Traceback" not in result.stderr.str()
    assert calls(pytester) == []


def test_a_compare_fail_name_neither_metric_nor_scorer_stops_the_session_at_collection(
    pytester: pytest.Pytester,
) -> None:
    """A scorer-shaped name is kept at configure (a suite may enable that scorer) and refused
    at collection, once the suite's scorers are known: one line, no model call."""
    write_scripted_suite(pytester, SCRIPT)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-compare", "--sommelier-compare-fail=recall:0.1"
    )
    assert result.ret != pytest.ExitCode.OK
    text = result.stdout.str() + result.stderr.str()
    assert "'recall' is neither a metric nor a scorer of suite" in text
    assert "Traceback" not in text
    assert calls(pytester) == []


def test_a_bad_value_stops_the_session_at_configure(pytester: pytest.Pytester) -> None:
    # the builder runs at configure: a bad value is pytest's usage error, before any model call
    write_scripted_suite(pytester, SCRIPT)
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "sommelier_misses=many")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--sommelier-misses / ini sommelier_misses: 'many'" in result.stderr.str()
    assert calls(pytester) == []


# --- strict: true/false words vs arm names (R06, R18) ---------------------------------------


def test_strict_on_the_command_line_names_arms_even_no(pytester) -> None:
    """R06: ``--sommelier-strict=no`` for an arm named ``no`` was read as off."""
    for word in ("no", "false", "off", "0", "yes", "true"):
        built = settings(pytester, f"--sommelier-strict={word}")
        assert (built.strict, built.strict_arms) == (True, (word,)), word
    built = settings(pytester, "--sommelier-strict=all")
    assert (built.strict, built.strict_arms) == (True, ())


def test_strict_in_the_ini_file_keeps_its_true_false_words(pytester) -> None:
    assert settings(pytester, ini="sommelier_strict = no").strict is False
    assert settings(pytester, ini="sommelier_strict = yes").strict is True
    assert settings(pytester, ini="sommelier_strict = adapter").strict_arms == ("adapter",)


def test_an_empty_strict_value_is_refused(pytester) -> None:
    """R18: ``--sommelier-strict=`` was silently off."""
    with pytest.raises(pytest.UsageError, match="an empty value names no arm"):
        settings(pytester, "--sommelier-strict=")


def test_a_strict_word_that_is_no_arm_says_values_are_names(pytester) -> None:
    """``--sommelier-strict=false`` on a suite without an arm ``false``: one line saying that
    a command-line value is always arm names (before, it silently turned strict off)."""
    write_scripted_suite(pytester, {"base": {}, "adapter": {}})
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-strict=false")
    assert result.ret != 0
    out = result.stdout.str()
    assert "SOM-OPTION-VALUE" in out and "always arm names" in out, out


class _Options:
    """What ``build_settings`` reads of a config, for one engine value (flag or ini)."""

    def __init__(self, engine: str, *, ini: bool) -> None:
        self.values = {"sommelier_engine": engine}
        self.ini = ini

    def getoption(self, name: str) -> Any:
        return None if self.ini else self.values.get(name)

    def getini(self, name: str) -> Any:
        return self.values.get(name, "") if self.ini else ""


@pytest.mark.parametrize("ini", [False, True], ids=["flag", "ini"])
def test_any_engine_text_is_a_name_or_one_usage_line(ini: bool) -> None:
    """``--sommelier-engine`` / ini ``sommelier_engine`` under hostile text: a name (printable,
    no whitespace) is kept as it is, whether or not an engine of that name is registered yet (a
    conftest's hook engine is known only at collection); anything else is one
    ``SOM-OPTION-VALUE`` line naming the flag and its twin, never a crash."""
    from hypothesis import given
    from hypothesis import strategies as st

    from pytest_sommelier.plugin.settings import _engine

    @hypothesis_settings(max_examples=examples(100))
    @given(text=st.one_of(st.text(max_size=24), st.sampled_from(["echo", "tgi", " vllm ", ""])))
    def check(text: str) -> None:
        config = _Options(text, ini=ini)
        stripped = text.strip()
        try:
            found = _engine(config)  # type: ignore[arg-type]
        except pytest.UsageError as error:
            line = str(error)
            assert line.startswith("SOM-OPTION-VALUE: --sommelier-engine / ini sommelier_engine")
            assert "\n" not in line and "not an engine name" in line
            assert any(c.isspace() or not c.isprintable() for c in stripped) or not stripped
        else:
            if not stripped:
                assert found is None or found == stripped
            else:
                assert found == stripped
                assert not any(c.isspace() or not c.isprintable() for c in found)

    check()


# --- --sommelier-arms ARM=DIR: hostile values -------------------------------------------------

ARMS_ROWS = ["adapter=.", "adapter= ", "adapter=\x00", "a=" + "x" * 5000, "overall=.",
             "adapter=.\nv2=.", "adapter=out/checkpoint-*", "-x=.", "adapter==.",
             "0=~0",  # '~0' names no user: pathlib raised RuntimeError (a traceback)
             "adapter=~no-such-user-here/x"]  # fmt: skip


def _check_arms(build: Callable[[str], Settings], value: str) -> None:
    """Whatever the value: an arm name by the suite's rule and an existing folder, made
    absolute, or a usage error of one line naming the option; never a traceback."""
    from pytest_sommelier.data.suite.names import NAME

    try:
        built = build(value)
    except pytest.UsageError as error:
        text = str(error)
        assert text.startswith("SOM-OPTION-VALUE: --sommelier-arms / ini sommelier_arms: ")
        assert "\n" not in text and len(text) < 400
        return
    ((name, folder),) = built.arms
    assert NAME.match(name) and name != "overall"
    assert os.path.isabs(folder) and os.path.isdir(folder)


def test_any_arms_value_is_an_arm_and_a_folder_or_one_usage_line(
    pytester: pytest.Pytester,
) -> None:
    """Hostile ``--sommelier-arms`` values, drawn: the command line is parsed once (pytest's own
    parser passes ``--opt=VALUE`` through as it is) and each drawn value is the parsed option's
    value, so every example costs the settings rule, not a new pytest config (16-32 ms each);
    the fixed rows go through the real command line below."""
    config = pytester.parseconfig("--sommelier-arms=adapter=.")
    assert config.option.sommelier_arms == ["adapter=."]

    def build(value: str) -> Settings:
        config.option.sommelier_arms = [value]
        return build_settings(config)

    @hypothesis_settings(max_examples=examples(60), deadline=None)
    @given(value=st.one_of(
        st.text(max_size=40),
        st.builds(lambda n, p: f"{n}={p}", st.text(max_size=12), st.text(max_size=300)),
        st.sampled_from(ARMS_ROWS),
    ))  # fmt: skip
    @example(value="0=~0")
    @example(value="adapter=~no-such-user-here/x")
    def check(value: str) -> None:
        _check_arms(build, value)

    check()


@pytest.mark.parametrize("value", ARMS_ROWS)
def test_hostile_arms_rows_on_the_real_command_line(pytester: pytest.Pytester, value: str) -> None:
    """The fixed hostile rows through a real command line, as a user types them."""
    _check_arms(lambda text: settings(pytester, f"--sommelier-arms={text}"), value)
