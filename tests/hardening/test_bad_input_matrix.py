"""Bad-input matrix (issue 7, item 1): one test per row of docs/hardening.md, "Bad input".

Every row feeds one bad input (a suite file, a formatted split, an adapter folder, a stored run
given to ``sommelier rescore`` / ``sommelier compare`` / ``--sommelier-baseline``, a command-line
or ini option) and checks the same four things:

- the error is one line carrying a stable code and naming the problem (file, line, key, field);
- no Python traceback is printed for an input error;
- no artifact that looks complete is left behind (no evaluation report with ``complete: true``
  and no verdict other than ``incomplete``/``fail`` for the bad run);
- never a passing verdict, never exit status 0.

Rows already covered by tests/data/suite/test_suite_bad_input.py and
tests/data/split/test_split.py are not repeated here; docs/hardening.md lists them beside these.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from plugin_helpers import GOLD, call_text, read_json, read_jsonl, tiny_suite, write_scripted_suite
from suite_factory import default_rows, make_row, write_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import (
    EvaluationError,
    InputError,
    InvariantError,
    SommelierEnvironmentError,
    SommelierError,
)

SCRIPT = {"adapter": {k: call_text(v) for k, v in GOLD.items()}, "base": {}}
GATES = [{"name": "exact", "arm": "adapter", "metric": "full_call_exact_match", "min": 0.5}]


# ----------------------------------------------------------------------------- helpers


def expect(call: Callable[[], Any], cls: type[SommelierError], code: str, *fragments: str) -> str:
    """``call()`` raises exactly ``cls`` with ``code``; its one-line text holds every fragment."""
    with pytest.raises(SommelierError) as info:
        call()
    error = info.value
    text = str(error)
    assert type(error) is cls, f"{type(error).__name__}: {text}"
    assert error.code == code, text
    assert "\n" not in text and error.hint
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    return text


def output_of(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


def assert_clean_error(text: str, code: str, *fragments: str) -> None:
    """``code`` appears on one output line holding every fragment; no traceback anywhere."""
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if code in line]
    assert lines, f"{code} not in output:\n{text}"
    assert any(all(f in line for f in fragments) for line in lines), (fragments, lines)


def assert_nothing_passing(out: Path, *damaged: str) -> None:
    """No verdict other than incomplete/fail, and no evaluation report of a damaged arm (of
    any arm when none is named) claiming completeness."""
    verdict = out / "gate_verdict.json"
    if verdict.exists():
        assert read_json(verdict)["verdict"] in ("incomplete", "fail")
    for report in out.glob("eval/*/evaluation_report.json"):
        if not damaged or report.parent.name in damaged:
            assert read_json(report)["complete"] is False, report


def session(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    return result, output_of(result)


# ============================================================================ suite files

SUITE_TEXT_ROWS: list[tuple[str, Callable[[str], str], type[SommelierError], str, str]] = [
    ("S01-empty-file", lambda t: "", InputError, "SOM-SUITE-MISSING-KEY", "'suite'"),
    (
        "S04-slices-not-an-array",
        lambda t: t.replace('slices = ["en", "he"]', 'slices = "en"'),
        InputError,
        "SOM-SUITE-TYPE",
        "key 'slices' must be an array, got a string",
    ),
    (
        "S05-reserved-slice-name",
        lambda t: t.replace('slices = ["en", "he"]', 'slices = ["en", "overall"]'),
        InputError,
        "SOM-SUITE-BAD-NAME",
        "'overall'",
    ),
    (
        "S14-temperature-nan",
        lambda t: t.replace("temperature = 0.0", "temperature = nan"),
        EvaluationError,
        "SOM-DECODING-TEMPERATURE",
        "decoding.temperature",
    ),
    (
        "S15-confidence-level-1",
        lambda t: t.replace("confidence_level = 0.95", "confidence_level = 1.0"),
        InputError,
        "SOM-SUITE-INVALID-VALUE",
        "[statistics]: key 'confidence_level'",
    ),
    (
        "S16-resamples-0",
        lambda t: t.replace("resamples = 200", "resamples = 0"),
        InputError,
        "SOM-SUITE-INVALID-VALUE",
        "[statistics]: key 'resamples'",
    ),
    (
        "S17-integer-over-4300-digits",
        lambda t: t.replace("seed = 41", "seed = " + "9" * 5000),
        InputError,
        "SOM-SUITE-TOML",
        "4300 digits",
    ),
    (
        "S18-arrays-nested-100k-deep",
        lambda t: t + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n",
        InputError,
        "SOM-SUITE-TOML",
        "nested too deeply",
    ),
    (
        "S23-datetime-as-name",
        lambda t: t.replace('name = "factory"', "name = 1979-05-27T07:32:00Z"),
        InputError,
        "SOM-SUITE-TYPE",
        "[suite]: key 'name' must be a string, got a datetime",
    ),
    (
        "S25-unknown-dtype",
        lambda t: t.replace("[model]", '[model]\ndtype = "int8"'),
        InputError,
        "SOM-SUITE-INVALID-VALUE",
        "[model]: key 'dtype'",
    ),
    (
        "S27-table-defined-twice",
        lambda t: t + "\n[decoding]\nbatch_size = 2\n",
        InputError,
        "SOM-SUITE-TOML",
        "TOML syntax error",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "cls", "code", "fragment"),
    [row[1:] for row in SUITE_TEXT_ROWS],
    ids=[row[0] for row in SUITE_TEXT_ROWS],
)
def test_suite_text_row(
    tmp_path: Path, mutate: Callable[[str], str], cls: type, code: str, fragment: str
) -> None:
    suite = write_suite(tmp_path)
    suite.write_text(mutate(suite.read_text(encoding="utf-8")), encoding="utf-8")
    text = expect(lambda: load_suite(suite), cls, code, fragment)
    assert str(suite) in text


SUITE_TABLE_ROWS: list[tuple[str, dict[str, Any], str, str]] = [
    ("S06-no-arms", {"arms": {}, "comparisons": None}, "SOM-SUITE-INVALID-VALUE", "[arms]"),
    (
        "S07-comparison-with-itself",
        {"comparisons": [{"candidate": "base", "reference": "base"}]},
        "SOM-SUITE-COMPARISON-SELF",
        "[[comparisons]] #1",
    ),
    (
        "S08-duplicate-comparison",
        {"comparisons": [{"candidate": "adapter", "reference": "base"}] * 2},
        "SOM-SUITE-DUPLICATE-COMPARISON",
        "[[comparisons]] #2",
    ),
    (
        "S09-duplicate-gate-name",
        {"gates": [GATES[0], GATES[0]]},
        "SOM-SUITE-DUPLICATE-GATE",
        "[[gates]] #2 ('exact')",
    ),
    (
        "S10-threshold-as-percent",
        {"gates": [{**GATES[0], "min": 70}]},
        "SOM-SUITE-GATE-THRESHOLD",
        "gates.min = 70 is outside [0, 1]",
    ),
    (
        "S11-min-above-max",
        {"gates": [{**GATES[0], "min": 0.8, "max": 0.2}]},
        "SOM-SUITE-GATE-THRESHOLD",
        "gates.min 0.8 is above gates.max 0.2",
    ),
    (
        "S12-comparison-gate-without-comparison",
        {
            "comparisons": None,
            "gates": [
                {
                    "name": "u",
                    "candidate": "adapter",
                    "reference": "base",
                    "metric": "argument_f1",
                    "ci_lower_above": 0.0,
                }
            ],
        },
        "SOM-SUITE-GATE-COMPARISON",
        "no [[comparisons]] entry compares 'adapter' with 'base'",
    ),
    (
        "S13-gate-kind-ambiguous",
        {"gates": [{**GATES[0], "candidate": "adapter"}]},
        "SOM-SUITE-GATE-KIND",
        "cannot tell the gate's kind",
    ),
    (
        "S19-model-path-too-long",
        {"model": {"base": "m" * 5000, "revision": None}},
        "SOM-SUITE-PATH-MISSING",
        "model.base",
    ),
    (
        "S20-split-path-too-long",
        {"suite": {"test_split": "d" * 5000}},
        "SOM-SUITE-PATH-MISSING",
        "suite.test_split",
    ),
    (
        "S21-adapter-dot-dot-inside-path",
        {"arms": {"base": {}, "adapter": {"adapter": "adapter/../../x"}}},
        "SOM-SUITE-PATH-MISSING",
        "arms.adapter.adapter 'adapter/../../x': no such file or directory",
    ),
    (
        "S22-nul-in-model-path",
        {"model": {"base": "mo\x00del", "revision": None}},
        "SOM-SUITE-PATH-MISSING",
        "model.base",
    ),
    (
        "S26-pkg-path-too-long",
        {"model": {"base": "pkg:pytest_sommelier/" + "p" * 5000, "revision": None}},
        "SOM-SUITE-PATH-MISSING",
        "model.base",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "code", "fragment"),
    [row[1:] for row in SUITE_TABLE_ROWS],
    ids=[row[0] for row in SUITE_TABLE_ROWS],
)
def test_suite_table_row(
    tmp_path: Path, overrides: dict[str, Any], code: str, fragment: str
) -> None:
    suite = write_suite(tmp_path, **overrides)
    text = expect(lambda: load_suite(suite), InputError, code, fragment)
    assert len(text) < 600, "a one-line message, not the whole value"


def test_S02_suite_not_utf8_names_the_line(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    suite.write_bytes(suite.read_bytes().replace(b'"factory"', b'"fac\xfftory"'))
    expect(lambda: load_suite(suite), InputError, "SOM-SUITE-ENCODING", f"{suite}:2:")


def test_S03_suite_path_is_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "sommelier.toml"
    folder.mkdir()  # a folder is a suite folder (R43): its own sommelier.toml is missing
    inside = str(folder / "sommelier.toml")
    expect(lambda: load_suite(folder), InputError, "SOM-SUITE-MISSING", inside)


PLUGIN_SUITE_ROWS: list[tuple[str, dict[str, Any], str, str]] = [
    ("P01-unknown-key", {"evaluation": {"x": 1}}, "SOM-SUITE-UNKNOWN-KEY", "'evaluation'"),
    ("P02-sampling", {"decoding": {"do_sample": True}}, "SOM-DECODING-DO-SAMPLE", "do_sample"),
    (
        "P03-missing-split",
        {"suite": {"test_split": "data/none.jsonl"}},
        "SOM-SUITE-SPLIT-MISSING",
        "none.jsonl",
    ),
    ("P04-unknown-top-level-array", {"x": [[1]]}, "SOM-SUITE-UNKNOWN-KEY", "'x'"),
]


@pytest.mark.parametrize(
    ("overrides", "code", "fragment"),
    [row[1:] for row in PLUGIN_SUITE_ROWS],
    ids=[row[0] for row in PLUGIN_SUITE_ROWS],
)
def test_bad_suite_in_a_session_is_a_collection_error(
    pytester: pytest.Pytester, overrides: dict[str, Any], code: str, fragment: str
) -> None:
    write_scripted_suite(pytester, SCRIPT, **overrides)
    result, text = session(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_clean_error(text, code, fragment, "sommelier.toml")
    assert not (pytester.path / "out").exists()
    assert not (pytester.path / "suite" / "calls.jsonl").exists(), "no model was called"


def test_P05_toml_syntax_error_in_a_session(pytester: pytest.Pytester) -> None:
    suite = write_scripted_suite(pytester, SCRIPT)
    suite.write_text(suite.read_text() + "\n[model\n", encoding="utf-8")
    result, text = session(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_clean_error(text, "SOM-SUITE-TOML", "sommelier.toml:")
    assert not (pytester.path / "out").exists()


# ============================================================================ formatted splits


def split_of(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "split.jsonl"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def good_lines() -> list[str]:
    return [json.dumps(row, ensure_ascii=False) for row in default_rows()]


SPLIT_ROWS: list[tuple[str, Callable[[], str | bytes], type[SommelierError], str, str]] = [
    ("T01-empty-file", lambda: "", InputError, "SOM-SPLIT-EMPTY-SLICE", "'en' has no rows"),
    (
        "T02-only-blank-lines",
        lambda: "\n\n  \n",
        InputError,
        "SOM-SPLIT-EMPTY-SLICE",
        "'en' has no rows",
    ),
    (
        "T03-byte-order-mark",
        lambda: "\ufeff" + "\n".join(good_lines()) + "\n",
        InputError,
        "SOM-SPLIT-JSON",
        ":1:",
    ),
    (
        "T04-nan-literal",
        lambda: "\n".join(good_lines()).replace('"split": "test"', '"split": NaN', 1),
        InputError,
        "SOM-SPLIT-JSON",
        "NaN is not JSON",
    ),
    (
        "T05-line-nested-100k-deep",
        lambda: "\n".join(good_lines()) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n",
        InputError,
        "SOM-SPLIT-JSON",
        ":6: line is not valid JSON: nested too deeply",
    ),
    (
        "T06-target-nested-100k-deep",
        lambda: json.dumps(make_row("en-0", "en", target_text="[" * 100_000 + "]" * 100_000)),
        InputError,
        "SOM-SPLIT-GOLD-CALL",
        "nested too deeply",
    ),
    (
        "T07-example-id-not-a-string",
        lambda: json.dumps({**make_row("en-0", "en"), "example_id": 7}),
        InputError,
        "SOM-SPLIT-FIELD",
        "field 'example_id'",
    ),
    (
        "T08-root-paired-twice",
        lambda: "\n".join(
            json.dumps(r)
            for r in [
                make_row("en-0", "en"),
                make_row("he-0", "he", "en-0"),
                make_row("he-1", "he", "en-0"),
            ]
        ),
        InputError,
        "SOM-SPLIT-DUPLICATE-PAIR",
        ":3:",
    ),
    (
        "T09-truncated-last-line",
        lambda: "\n".join(good_lines())[:-40],
        InputError,
        "SOM-SPLIT-JSON",
        ":5: line is not valid JSON",
    ),
    (
        "T10-lone-surrogate-in-prompt",
        lambda: json.dumps(make_row("en-0", "en", prompt_text="SURR hi")).replace(
            "SURR", "\\ud800"
        ),
        InputError,
        "SOM-SPLIT-ENCODING",
        "lone UTF-16 surrogate",
    ),
    (
        "T11-lone-surrogate-in-gold-call",
        lambda: json.dumps(
            make_row("en-0", "en", target_text='[{"name": "a\\udc00", "arguments": {}}]')
        ),
        InputError,
        "SOM-SPLIT-GOLD-CALL",
        "lone UTF-16 surrogate",
    ),
    (
        "T12-integer-over-4300-digits",
        lambda: json.dumps(make_row("en-0", "en"))[:-1] + ', "n": ' + "7" * 5000 + "}",
        InputError,
        "SOM-SPLIT-JSON",
        "4300 digits",
    ),
]


@pytest.mark.parametrize(
    ("content", "cls", "code", "fragment"),
    [row[1:] for row in SPLIT_ROWS],
    ids=[row[0] for row in SPLIT_ROWS],
)
def test_split_row(
    tmp_path: Path, content: Callable[[], str | bytes], cls: type, code: str, fragment: str
) -> None:
    path = split_of(tmp_path, content())
    text = expect(lambda: load_split(path, ("en", "he")), cls, code, fragment)
    assert str(path) in text and len(text) < 600


def test_T13_split_path_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "split.jsonl").mkdir()
    expect(
        lambda: load_split(tmp_path / "split.jsonl", ("en",)),
        InputError,
        "SOM-SPLIT-MISSING",
        "cannot be read",
    )


def test_T14_bad_split_line_in_a_session(pytester: pytest.Pytester) -> None:
    suite = write_scripted_suite(pytester, SCRIPT)
    split = suite.parent / "data" / "test.jsonl"
    lines = split.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][:-5]
    split.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result, text = session(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert_clean_error(text, "SOM-SPLIT-JSON", "test.jsonl:4:")
    assert not (pytester.path / "out").exists()


# ============================================================================ adapters


def _no_weights(folder: Path) -> None:
    (folder / "adapter_model.safetensors").unlink()


def _pickle_only(folder: Path) -> None:
    (folder / "adapter_model.safetensors").rename(folder / "adapter_model.bin")


def _broken_config(folder: Path) -> None:
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA", "r": ', encoding="utf-8")


def _no_config(folder: Path) -> None:
    (folder / "adapter_config.json").unlink()


def _truncated_weights(folder: Path) -> None:
    weights = folder / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:50])


ADAPTER_ROWS: list[tuple[str, Callable[[Path], None], str, str]] = [
    (
        "A01-no-safetensors",
        _no_weights,
        "SOM-BACKEND-ADAPTER-PICKLE",
        "has no adapter_model.safetensors",
    ),
    (
        "A02-pickle-only",
        _pickle_only,
        "SOM-BACKEND-ADAPTER-PICKLE",
        "found pickle-based adapter_model.bin; pickle-based adapters are refused",
    ),
    (  # 0.3: the preflight at session start finds it, before any weights load
        "A03-broken-config-json",
        _broken_config,
        "SOM-ADAPTER-CONFIG-FIELD",
        "arms.adapter.adapter: adapter folder 'adapter': adapter_config.json is not readable JSON",
    ),
    ("A04-no-config", _no_config, "SOM-BACKEND-ADAPTER-CONFIG", "has no adapter_config.json"),
    (  # 0.3: the preflight reads the header and finds it cut
        "A05-truncated-safetensors",
        _truncated_weights,
        "SOM-ADAPTER-HEADER",
        "adapter_model.safetensors is not a readable safetensors file: header length",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "code", "fragment"),
    [row[1:] for row in ADAPTER_ROWS],
    ids=[row[0] for row in ADAPTER_ROWS],
)
def test_adapter_row(
    pytester: pytest.Pytester,
    tiny: tuple[Path, Path],
    damage: Callable[[Path], None],
    code: str,
    fragment: str,
) -> None:
    suite = tiny_suite(pytester, tiny)
    damage(suite.parent / "adapter")
    result, text = session(pytester)
    assert result.ret != 0
    assert_clean_error(text, code, fragment)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", 0) >= 2 and "passed" not in outcomes, outcomes
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"
    # the adapter is attached on first use (identity before load): the base arm may complete
    assert_nothing_passing(pytester.path / "out", "adapter")


# ============================================================================ stored runs


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One complete, passing run of the scripted two-arm suite (made once, copied per test)."""
    root = tmp_path_factory.mktemp("stored")
    write_scripted_suite(SimpleNamespace(path=root), SCRIPT, gates=GATES)  # type: ignore[arg-type]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--sommelier-out", "run"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert read_json(root / "run" / "gate_verdict.json")["verdict"] == "pass"
    return root / "run"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def edit_line(path: Path, index: int, change: Callable[[dict], Any]) -> None:
    """Apply ``change`` (in place) to the record on line ``index`` of a JSONL file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[index])
    change(record)
    lines[index] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def replace_line(path: Path, index: int, text: str) -> None:
    """Replace line ``index`` of a text file with ``text``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[index] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    replaced = change(data)
    path.write_text(json.dumps(data if replaced is None else replaced), encoding="utf-8")


BASE_EN = "eval/base/generations.en.jsonl"


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-30])


RESCORE_ERROR_ROWS: list[tuple[str, Callable[[Path], None], int, str, str]] = [
    (
        "R02-folder-that-is-not-a-run",
        lambda run: [p.unlink() for p in run.glob("*.json")],
        2,
        "SOM-STORED-MISSING",
        "suite.resolved.json: not found",
    ),
    (
        "R03-resolved-suite-truncated",
        lambda run: _truncate(run / "suite.resolved.json"),
        2,
        "SOM-STORED-BROKEN",
        "suite.resolved.json:",
    ),
    (
        "R04-resolved-suite-not-an-object",
        lambda run: (run / "suite.resolved.json").write_text("[1, 2]"),
        2,
        "SOM-STORED-FIELD",
        "suite.resolved.json: not a JSON object",
    ),
    (
        "R05-resolved-suite-missing-field",
        lambda run: edit_json(run / "suite.resolved.json", lambda d: d.pop("statistics") and None),
        2,
        "SOM-STORED-FIELD",
        "'statistics'",
    ),
    (
        "R06-split-copy-missing",
        lambda run: (run / "inputs" / "test_split.jsonl").unlink(),
        2,
        "SOM-STORED-MISSING",
        "test_split.jsonl: not found",
    ),
    (
        "R07-split-copy-edited",
        lambda run: edit_line(
            run / "inputs" / "test_split.jsonl", 0, lambda r: r.update(tokenizer_revision="x")
        ),
        5,
        "SOM-STORED-SPLIT-DIGEST",
        "test_split.jsonl",
    ),
    (
        "R08-generations-file-missing",
        lambda run: (run / BASE_EN).unlink(),
        2,
        "SOM-STORED-MISSING",
        "generations.en.jsonl: not found",
    ),
    (
        "R09-generations-truncated",
        lambda run: _truncate(run / BASE_EN),
        2,
        "SOM-STORED-BROKEN",
        "generations.en.jsonl:4: not valid JSON",
    ),
    (
        "R10-generation-line-not-an-object",
        lambda run: replace_line(run / BASE_EN, 1, "[1, 2, 3]"),
        2,
        "SOM-STORED-BROKEN",
        "generations.en.jsonl:2: not a JSON object",
    ),
    (
        "R11-generation-missing-field",
        lambda run: edit_line(run / BASE_EN, 2, lambda r: r.pop("raw_text")),
        2,
        "SOM-STORED-FIELD",
        "generations.en.jsonl:3: generation record has no 'raw_text'",
    ),
    (
        "R12-raw-text-not-a-string",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r.update(raw_text=["x"])),
        2,
        "SOM-STORED-FIELD",
        "'raw_text' is not a string",
    ),
    (
        "R13-generation-for-unknown-example",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r.update(example_id="en-99")),
        5,
        "SOM-REPORT-UNKNOWN-EXAMPLE",
        "arm base",
    ),
    (
        "R14-duplicate-generation",
        lambda run: edit_line(run / BASE_EN, 1, lambda r: r.update(example_id="en-0")),
        5,
        "SOM-REPORT-DUPLICATE-EXAMPLE",
        "en-0",
    ),
    (
        "R15-decoding-edited",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r["decoding"].update(max_new_tokens=7)),
        5,
        "SOM-REPORT-DECODING-MIX",
        "arm base",
    ),
    (
        "R16-language-edited",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r.update(language="he")),
        5,
        "SOM-REPORT",
        "en-0",
    ),
    (
        "R17-example-id-not-a-string",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r.update(example_id=["en-0"])),
        5,
        "SOM-REPORT-UNKNOWN-EXAMPLE",
        "arm base",
    ),
    (
        "R18-arm-report-missing",
        lambda run: (run / "eval" / "base" / "evaluation_report.json").unlink(),
        2,
        "SOM-STORED-MISSING",
        "evaluation_report.json: not found",
    ),
    (
        "R19-prompt-digest-edited",
        lambda run: edit_line(run / BASE_EN, 1, lambda r: r.update(prompt_sha256="0" * 64)),
        5,
        "PROMPT-DIGEST",
        "en-1",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "status", "code", "fragment"),
    [row[1:] for row in RESCORE_ERROR_ROWS],
    ids=[row[0] for row in RESCORE_ERROR_ROWS],
)
def test_rescore_refuses(
    stored_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
    status: int,
    code: str,
    fragment: str,
) -> None:
    run = shutil.copytree(stored_run, tmp_path / "run")
    damage(run)
    before = snapshot(run)
    assert main(["rescore", str(run), "--out", str(tmp_path / "again")]) == status
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert_clean_error(err, code, fragment)
    assert not (tmp_path / "again").exists(), "nothing is written when a check fails"
    assert main(["rescore", str(run)]) == status
    assert snapshot(run) == before, "a refused in-place rescore leaves the run untouched"


@pytest.mark.slow
def test_R23_lone_surrogate_in_stored_raw_text(
    stored_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = shutil.copytree(stored_run, tmp_path / "run")
    edit_line(run / BASE_EN, 0, lambda r: r.update(raw_text="bad \ud800"))
    again = tmp_path / "again"
    try:
        status = main(["rescore", str(run), "--out", str(again)])
    except UnicodeError:
        status = -1
    assert status == 2
    assert_clean_error(capsys.readouterr().err, "SOM-STORED", "generations.en.jsonl:1")
    assert not again.exists() or not [p for p in again.rglob("*") if p.is_file()]


def test_R01_rescore_of_a_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["rescore", str(tmp_path / "nowhere")]) == 2
    assert_clean_error(capsys.readouterr().err, "SOM-STORED-MISSING", "nowhere")
    assert not (tmp_path / "nowhere").exists()


RESCORE_INCOMPLETE_ROWS: list[tuple[str, Callable[[Path], None]]] = [
    (
        "R20-generation-line-deleted",
        lambda run: (run / BASE_EN).write_text(
            "".join((run / BASE_EN).read_text().splitlines(keepends=True)[1:])
        ),
    ),
    ("R21-generations-file-empty", lambda run: (run / BASE_EN).write_text("")),
    (
        "R22-arm-folder-replaced-by-a-file",
        lambda run: (shutil.rmtree(run / "eval" / "base"), (run / "eval" / "base").write_text("")),
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage",
    [row[1] for row in RESCORE_INCOMPLETE_ROWS],
    ids=[r[0] for r in RESCORE_INCOMPLETE_ROWS],
)
def test_rescore_of_a_partial_run_is_incomplete(
    stored_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture, damage: Callable[[Path], None]
) -> None:
    run = shutil.copytree(stored_run, tmp_path / "run")
    damage(run)
    assert main(["rescore", str(run), "--out", str(tmp_path / "again")]) == 1
    out = capsys.readouterr().out
    assert "Traceback" not in out and "verdict: INCOMPLETE" in out
    assert read_json(tmp_path / "again" / "gate_verdict.json")["verdict"] == "incomplete"
    assert_nothing_passing(tmp_path / "again", "base")


COMPARE_ROWS: list[tuple[str, Callable[[Path], Path], int, str, str]] = [
    (
        "C01-candidate-folder-missing",
        lambda run: run / "eval" / "v9",
        2,
        "SOM-STORED-MISSING",
        "v9: not a folder",
    ),
    (
        "C02-arm-folder-outside-any-run",
        lambda run: shutil.copytree(
            run / "eval" / "adapter", run.parent / "loose" / "x" / "adapter"
        ),
        2,
        "SOM-STORED-MISSING",
        "suite.resolved.json: not found",
    ),
    (
        "C03-report-truncated",
        lambda run: (
            (_truncate(run / "eval" / "adapter" / "evaluation_report.json"), run)[1]
            / "eval"
            / "adapter"
        ),
        2,
        "SOM-STORED-BROKEN",
        "evaluation_report.json:",
    ),
    (
        "C04-report-not-a-report",
        lambda run: (
            (run / "eval" / "adapter" / "evaluation_report.json").write_text('{"a": 1}'),
            run / "eval" / "adapter",
        )[1],
        2,
        "SOM-STORED-FIELD",
        "eval/adapter/",  # the one reader's line names the file (a long path is elided)
    ),
    (
        "C05-generations-edited",
        lambda run: (
            edit_line(
                run / "eval" / "adapter" / "generations.he.jsonl",
                0,
                lambda r: r.update(prompt_sha256="f" * 64),
            ),
            run / "eval" / "adapter",
        )[1],
        5,
        "PROMPT-DIGEST",
        "he-0",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("candidate", "status", "code", "fragment"),
    [row[1:] for row in COMPARE_ROWS],
    ids=[row[0] for row in COMPARE_ROWS],
)
def test_compare_refuses(
    stored_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    candidate: Callable[[Path], Path],
    status: int,
    code: str,
    fragment: str,
) -> None:
    run = shutil.copytree(stored_run, tmp_path / "run")
    cand = candidate(run)
    cmp = tmp_path / "cmp"
    assert main(["compare", str(cand), str(run / "eval" / "base"), "--out", str(cmp)]) == status
    assert_clean_error(capsys.readouterr().err, code, fragment)
    assert not cmp.exists(), "no comparison report is written"


# -- --sommelier-baseline ----------------------------------------------------------------------


def baseline_session(
    pytester: pytest.Pytester, stored_run: Path, damage: Callable[[Path], Any], arg: str
) -> tuple[pytest.RunResult, str]:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    released = shutil.copytree(stored_run, pytester.path / "released")
    damage(released)
    return session(pytester, "--sommelier-baseline", arg)


BASELINE_ROWS: list[tuple[str, Callable[[Path], Any], str, str, str]] = [
    (
        "B02-missing-folder-named-arm",
        lambda run: shutil.rmtree(run / "eval" / "base"),
        "released/eval/base",
        "SOM-STORED-MISSING",
        "base: not a folder",
    ),
    (
        "B03-run-folder-instead-of-arm-folder",
        lambda run: None,
        "base=released",
        "SOM-STORED-MISSING",
        "evaluation_report.json: not found",
    ),
    (
        "B04-generations-truncated",
        lambda run: _truncate(run / BASE_EN),
        "released/eval/base",
        "SOM-STORED-BROKEN",
        "generations.en.jsonl:4",
    ),
    (
        "B05-prompt-digest-edited",
        lambda run: edit_line(run / BASE_EN, 2, lambda r: r.update(prompt_sha256="1" * 64)),
        "released/eval/base",
        "PROMPT-DIGEST",
        "en-2",
    ),
    (
        "B06-generation-missing-field",
        lambda run: edit_line(run / BASE_EN, 0, lambda r: r.pop("decoding")),
        "released/eval/base",
        "SOM-STORED-FIELD",
        "'decoding'",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "arg", "code", "fragment"),
    [row[1:] for row in BASELINE_ROWS],
    ids=[row[0] for row in BASELINE_ROWS],
)
def test_baseline_refuses(
    pytester: pytest.Pytester,
    stored_run: Path,
    damage: Callable[[Path], Any],
    arg: str,
    code: str,
    fragment: str,
) -> None:
    result, text = baseline_session(pytester, stored_run, damage, arg)
    assert result.ret != 0
    assert_clean_error(text, code, fragment)
    assert not (pytester.path / "out" / "gate_verdict.json").exists()
    assert_nothing_passing(pytester.path / "out")


@pytest.mark.slow
def test_B07_baseline_from_an_incomplete_run_is_incomplete(
    pytester: pytest.Pytester, stored_run: Path
) -> None:
    def drop_first(run: Path) -> None:
        (run / BASE_EN).write_text("".join((run / BASE_EN).read_text().splitlines(True)[1:]))

    result, text = baseline_session(pytester, stored_run, drop_first, "released/eval/base")
    assert result.ret == 1 and "Traceback" not in text
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"


@pytest.mark.slow
def test_B08_baseline_whose_report_disagrees_with_its_generations(
    pytester: pytest.Pytester, stored_run: Path
) -> None:
    """The adapter arm of the released run is replaced by prose in its generations while its
    report still claims 7/7 exact: the gate must see 0/7 (or refuse), never pass."""

    def prose(run: Path) -> None:
        for lang in ("en", "he"):
            path = run / "eval" / "adapter" / f"generations.{lang}.jsonl"
            records = read_jsonl(path)
            for record in records:
                record["raw_text"] = "no call today"
            path.write_text("".join(json.dumps(r) + "\n" for r in records))

    result, _ = baseline_session(pytester, stored_run, prose, "released/eval/adapter")
    assert result.ret == 1
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "fail"
    report = read_json(pytester.path / "out" / "eval" / "adapter" / "evaluation_report.json")
    assert report["metrics"]["full_call_exact_match"]["numerator"] == 0


# ============================================================================ options


@pytest.mark.parametrize(
    ("option", "fragment"),
    [
        ("--sommelier-gates=maybe", "invalid choice: 'maybe'"),
        ("--sommelier-misses=abc", "'abc' is not a finite whole number"),
        ("--sommelier-timeout=soon", "'soon' is not a finite number"),
        ("--sommelier-selfcheck=all", "'all' is not a finite whole number"),
    ],
    ids=["O01-gates", "O02-misses", "O03-timeout", "O04-selfcheck"],
)
def test_bad_option_value_is_a_usage_error(
    pytester: pytest.Pytester, option: str, fragment: str
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result, text = session(pytester, option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert fragment in text and option.split("=")[0] in text
    assert "Traceback" not in text
    assert not (pytester.path / "out").exists()
    assert not (pytester.path / "suite" / "calls.jsonl").exists()


def test_O05_baseline_to_a_missing_folder(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result, text = session(pytester, "--sommelier-baseline", "nowhere/eval/base")
    assert result.ret == 1
    assert_clean_error(text, "SOM-STORED-MISSING", "nowhere/eval/base: not a folder")
    assert "no verdict was written" in text
    assert_nothing_passing(pytester.path / "out")


BAD_OPTION_VALUES = [
    pytest.param(["-o", "sommelier_misses=lots"], "sommelier_misses", id="O06-ini-misses-not-int"),
    pytest.param(["-o", "sommelier_gates=of"], "sommelier_gates", id="O07-ini-gates-typo"),
    pytest.param(["-o", "sommelier_timeout=soon"], "sommelier_timeout", id="O08-ini-timeout"),
    pytest.param(["-o", "sommelier_selfcheck=x"], "sommelier_selfcheck", id="O09-ini-selfcheck"),
    pytest.param(["--sommelier-timeout=-1"], "sommelier-timeout", id="O10-negative-timeout"),
    pytest.param(["--sommelier-timeout=nan"], "sommelier-timeout", id="O11-nan-timeout"),
    pytest.param(["--sommelier-misses=-3"], "sommelier-misses", id="O12-negative-misses"),
    pytest.param(["--sommelier-selfcheck=-2"], "sommelier-selfcheck", id="O13-negative-selfcheck"),
]


@pytest.mark.parametrize(("args", "name"), BAD_OPTION_VALUES)
def test_option_value_is_checked_at_configure(
    pytester: pytest.Pytester, args: list[str], name: str
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=GATES)
    result, text = session(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert name in text and "Traceback" not in text
    assert not (pytester.path / "suite" / "calls.jsonl").exists(), "refused before any model call"


# -- sanity: the matrix's helpers can fail ------------------------------------------------------


def test_helpers_reject_what_they_should(tmp_path: Path) -> None:
    with pytest.raises(AssertionError):
        assert_clean_error("Traceback (most recent call last):\nSOM-X: y", "SOM-X")
    with pytest.raises(AssertionError):
        assert_clean_error("SOM-X: y", "SOM-Y")
    (tmp_path / "gate_verdict.json").write_text('{"verdict": "pass"}')
    with pytest.raises(AssertionError):
        assert_nothing_passing(tmp_path)

    def raise_(error: SommelierError) -> Callable[[], None]:
        def call() -> None:
            raise error

        return call

    with pytest.raises(AssertionError):  # wrong class
        expect(raise_(SommelierEnvironmentError("SOM-X", "m", "h")), InputError, "SOM-X")
    with pytest.raises(AssertionError):  # wrong code
        expect(raise_(InvariantError("SOM-X", "m", "h")), InvariantError, "SOM-Y")
    with pytest.raises(AssertionError):  # missing fragment
        expect(raise_(InputError("SOM-X", "m", "h")), InputError, "SOM-X", "absent")
    with pytest.raises(pytest.fail.Exception):  # nothing raised
        expect(lambda: None, InputError, "SOM-X")
