"""Every option's ini twin does what its flag does (one frozen Settings, built at configure)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from plugin_helpers import GOLD, call_text, write_scripted_suite

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


@pytest.mark.parametrize("via", ["flag", "ini"])
@pytest.mark.parametrize(
    ("flag", "ini", "check", "extra"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_ini_twin_does_what_the_flag_does(
    pytester: pytest.Pytester, via: str, flag: list[str], ini: str, check: Check, extra: dict
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
    if via == "flag":
        result = pytester.runpytest(*args, *flag)
    else:
        pytester.makeini("[pytest]\n" + ini + "\n")
        result = pytester.runpytest(*args)
    check(pytester, result)


def test_the_flag_wins_over_the_ini_file(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT)
    pytester.makeini("[pytest]\nsommelier_misses = 0\nsommelier_out = ignored\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-misses", "1",
                                "--sommelier-out", "chosen")
    misses_one(pytester, result)
    wrote_out(pytester, result)
    assert not Path(pytester.path / "ignored").exists()


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ("sommelier_misses = many", "--sommelier-misses / ini sommelier_misses: 'many'"),
        ("sommelier_timeout = -1", "--sommelier-timeout / ini sommelier_timeout: '-1' must be"),
        ("sommelier_gates = maybe", "--sommelier-gates / ini sommelier_gates: 'maybe'"),
    ],
)
def test_a_bad_ini_value_is_a_usage_error(
    pytester: pytest.Pytester, ini: str, message: str
) -> None:
    write_scripted_suite(pytester, SCRIPT)
    pytester.makeini("[pytest]\n" + ini + "\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
