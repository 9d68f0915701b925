"""acceptable_arguments through format, split, reports, gates, rendering and real pytest sessions
(scripted fake model; expected numbers worked out by hand from the script below)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FAKE_CONFTEST
from plugin_helpers import read_json, read_jsonl
from suite_factory import make_row, write_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.prepare.formatting import (
    format_examples,
    formatted_line,
    read_prepared,
)
from pytest_sommelier.data.split.load import load_split
from pytest_sommelier.errors import InputError
from pytest_sommelier.view.markdown import comparison_markdown

WEATHER = {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
WEATHER_OK = {
    "language": "python",
    "required": ["city"],
    "arguments": {
        "city": {"type": "string", "values": ["Paris", "Paris, France"]},
        "days": {"type": "integer", "values": [2]},
        "unit": {"type": "string", "values": ["", "celsius"]},
    },
}
SEARCH = {"name": "search", "arguments": {"q": "tea"}}
SEARCH_OK = {
    "language": "python",
    "required": ["q"],
    "arguments": {
        "q": {"type": "string", "values": ["tea"]},
        "limit": {"type": "integer", "values": ["", 10]},
    },
}
NOOP = {"name": "noop", "arguments": {}}
NOOP_OK = {"language": "python", "required": [], "arguments": {}}
BOOK = {"name": "book", "arguments": {"room": 4, "late": True}}
BOOK_OK = {
    "language": "python",
    "required": ["room"],
    "arguments": {
        "room": {"type": "integer", "values": [4]},
        "late": {"type": "boolean", "values": [True]},
    },
}
SCALE = {"name": "scale", "arguments": {"x": 2.0}}
SCALE_OK = {
    "language": "python",
    "required": ["x"],
    "arguments": {"x": {"type": "float", "values": [2.0]}},
}

EXAMPLES: dict[str, tuple[dict, dict, str | None]] = {
    "en-0": (WEATHER, WEATHER_OK, None),
    "en-1": (SEARCH, SEARCH_OK, None),
    "en-2": (NOOP, NOOP_OK, None),
    "en-3": (BOOK, BOOK_OK, None),
    "en-4": (SCALE, SCALE_OK, None),
    "en-5": (WEATHER, WEATHER_OK, None),
    "en-6": (SEARCH, SEARCH_OK, None),
    "he-0": (WEATHER, WEATHER_OK, "en-0"),
}


def text(call: dict[str, Any]) -> str:
    return json.dumps([call], ensure_ascii=False)


ADAPTER = {
    "en-0": text({"name": "get_weather", "arguments": {"city": "PARIS", "days": 2}}),
    "en-1": text({"name": "search", "arguments": {"q": "tea", "limit": 10}}),
    "en-2": text({"name": "nope", "arguments": {}}),
    "en-3": text({"name": "book", "arguments": {"room": "4", "late": True}}),
    "en-4": text({"name": "scale", "arguments": {"x": 2}}),
    "en-5": text(WEATHER),
    # en-6: prose (the fake's default answer)
    "he-0": text({"name": "get_weather", "arguments": {"city": "פריז", "days": 2}}),
}
BASE = {"en-5": text(WEATHER)}
# adapter: acceptable hits en-0 (case), en-1 (optional given), en-4 (int for float), en-5 -> 4/8
# strict full-call hits: en-5 only -> 1/8; misses: en-0 wrong_value, en-1 unexpected_argument,
# en-2 wrong_function, en-3 wrong_type ("4"), en-4 wrong_type (2 for 2.0), en-6 parse_no_json,
# he-0 wrong_value with value_language_mismatch. base: 1/8 both; 7 misses, all parse_no_json.


def rows() -> list[dict[str, Any]]:
    return [
        make_row(
            example_id,
            example_id[:2],
            source,
            gold,
            prompt_text=f"<user>prompt {example_id}</user>\n",
            acceptable_arguments=acceptable,
        )
        for example_id, (gold, acceptable, source) in EXAMPLES.items()
    ]


def write(pytester: pytest.Pytester, gates: list[dict[str, Any]] | None = None) -> Path:
    suite = write_suite(
        pytester.path / "suite",
        rows=rows(),
        model={"base": "fake-org/fake-model"},
        gates=gates
        or [
            {
                "name": "bfcl-uplift",
                "candidate": "adapter",
                "reference": "base",
                "metric": "acceptable_call_match",
                "ci_lower_at_least": -1.0,
            },
            {"name": "bfcl-min", "arm": "adapter", "metric": "acceptable_call_match", "min": 0.5},
        ],
    )
    (suite.parent / "conftest.py").write_text(FAKE_CONFTEST)
    (suite.parent / "script.json").write_text(json.dumps({"adapter": ADAPTER, "base": BASE}))
    return suite


@pytest.mark.slow
@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_session_reports_sixth_metric_and_miss_categories(pytester: pytest.Pytester, xdist):
    write(pytester)
    args = ["-p", "no:cacheprovider", "--sommelier-out", "out", "-m", "eval"]
    result = pytester.runpytest_subprocess(*args, *(["-n", "2"] if xdist else []))
    assert result.ret == 0, result.stdout.str()
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    metric = adapter["metrics"]["acceptable_call_match"]
    assert (metric["numerator"], metric["denominator"]) == (4, 8)
    assert adapter["metrics"]["full_call_exact_match"]["numerator"] == 1
    assert adapter["slices"]["he"]["metrics"]["acceptable_call_match"]["numerator"] == 0
    assert base["metrics"]["acceptable_call_match"]["numerator"] == 1
    assert adapter["misses"]["misses"] == 7
    assert {k: v for k, v in adapter["misses"]["categories"].items() if v} == {
        "parse_no_json": 1,
        "wrong_function": 1,
        "unexpected_argument": 1,
        "wrong_type": 2,
        "wrong_value": 2,
    }
    assert adapter["slices"]["he"]["misses"]["value_language_mismatch"] == 1
    assert adapter["misses"]["value_language_mismatch"] == 1
    assert base["misses"]["categories"]["parse_no_json"] == 7
    generations = {
        r["example_id"]: r for r in read_jsonl(out / "eval/adapter/generations.en.jsonl")
    }
    assert generations["en-3"]["miss_category"] == "wrong_type"
    assert generations["en-5"]["miss_category"] is None
    (hebrew,) = read_jsonl(out / "eval/adapter/generations.he.jsonl")
    assert hebrew["miss_category"] == "wrong_value" and hebrew["value_language_mismatch"] is True
    comparison = read_json(out / "report" / "adapter-vs-base.json")
    assert comparison["deltas"]["acceptable_call_match"] == pytest.approx(3 / 8)
    interval = comparison["ci95"]["intervals"]["acceptable_call_match"]
    assert interval["lower"] <= 3 / 8 <= interval["upper"]
    markdown = (out / "report" / "adapter-vs-base.md").read_text()
    assert "## acceptable-values match (BFCL rules)" in markdown
    assert "## Misses by category" in markdown and "wrong_type 2" in markdown
    verdict = read_json(out / "gate_verdict.json")
    assert verdict["verdict"] == "pass"
    assert {g["name"]: g["passed"] for g in verdict["gates"]} == {
        "bfcl-uplift": True,
        "bfcl-min": True,
    }
    stdout = result.stdout.str()
    assert "acceptable-values match (BFCL rules):" in stdout
    assert "misses by category:" in stdout
    assert "category: wrong_value (value_language_mismatch)" in stdout


@pytest.mark.slow
def test_sixth_metric_intervals_leave_the_five_unchanged(pytester: pytest.Pytester):
    """The same resampled pairs: the five intervals equal those of a split without the field."""
    write(pytester)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "with", "-m", "eval")
    # the same suite without acceptable values: a gate on the sixth metric is refused at load
    # there (hardening H16), so this run gates another metric (and gates are off anyway)
    other = {"name": "json", "arm": "adapter", "metric": "valid_json_rate", "min": 0}
    write(pytester, gates=[other])
    split = pytester.path / "suite" / "data" / "test.jsonl"
    plain = [
        {k: v for k, v in json.loads(line).items() if k != "acceptable_arguments"}
        for line in split.read_text().splitlines()
    ]
    split.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in plain))
    pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--sommelier-out",
        "without",
        "-m",
        "eval",
        "--sommelier-gates=off",
    )
    with_ = read_json(pytester.path / "with" / "report" / "adapter-vs-base.json")
    without = read_json(pytester.path / "without" / "report" / "adapter-vs-base.json")
    assert "acceptable_call_match" not in without["ci95"]["intervals"]
    assert "acceptable_call_match" not in without["deltas"]
    five = {k: v for k, v in with_["ci95"]["intervals"].items() if k != "acceptable_call_match"}
    assert five == without["ci95"]["intervals"]
    report = read_json(pytester.path / "without" / "eval" / "adapter" / "evaluation_report.json")
    assert "acceptable_call_match" not in report["metrics"]


@pytest.mark.slow
def test_gate_on_sixth_metric_fails_and_says_so(pytester: pytest.Pytester):
    write(
        pytester,
        gates=[{"name": "strict", "arm": "adapter", "metric": "acceptable_call_match", "min": 0.9}],
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "out", "-m", "eval"
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*FAIL strict*acceptable_call_match*0.500*"])


# ---------------------------------------------------------------- format and split


class Template:
    chat_template = "x"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt=False):
        body = "".join(f"<{m['role']}>{m['content']}\n" for m in messages)
        return body + ("<assistant>" if add_generation_prompt else "")


PREPARED = {
    "example_id": "ex-1",
    "language": "en",
    "source_example_id": None,
    "query": "weather in Paris for two days",
    "tools": [
        {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer"},
                    "unit": {"type": "string"},
                },
                "required": ["city"],
            },
        }
    ],
    "gold_call": WEATHER,
    "acceptable_arguments": WEATHER_OK,
}


def _prepared(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "prepared.jsonl"
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


def test_format_carries_acceptable_arguments_and_split_reads_them(tmp_path):
    plain = {k: v for k, v in PREPARED.items() if k != "acceptable_arguments"}
    examples = read_prepared(_prepared(tmp_path, PREPARED, {**plain, "example_id": "ex-2"}))
    rows = format_examples(
        examples, Template(), split="test", tokenizer_id="t", tokenizer_revision="r"
    )
    assert rows[0]["acceptable_arguments"] == WEATHER_OK
    assert "acceptable_arguments" not in rows[1]  # a row without it is unchanged
    lines = [formatted_line(row) for row in rows]
    assert list(json.loads(lines[0]))[-1] == "acceptable_arguments"
    assert "acceptable_arguments" not in lines[1]
    split = tmp_path / "split.jsonl"
    split.write_text("".join(line + "\n" for line in lines))
    loaded = load_split(split, ["en"])
    assert loaded.examples[0].acceptable_arguments == WEATHER_OK
    assert loaded.examples[1].acceptable_arguments is None


@pytest.mark.parametrize(
    ("acceptable", "message"),
    [
        ({**WEATHER_OK, "language": "cobol"}, "language must be one of"),
        (
            {**WEATHER_OK, "arguments": {"city": {"type": "str", "values": ["Paris"]}}},
            "is not a BFCL type name",
        ),
        (
            {
                **WEATHER_OK,
                "arguments": {
                    **WEATHER_OK["arguments"],
                    "days": {"type": "integer", "values": [3]},
                },
            },
            "does not accept the gold call itself",
        ),
    ],
)
def test_prepared_acceptable_arguments_checked(tmp_path, acceptable, message):
    with pytest.raises(InputError) as info:
        read_prepared(_prepared(tmp_path, {**PREPARED, "acceptable_arguments": acceptable}))
    assert "prepared.jsonl:1" in str(info.value) and "acceptable_arguments" in str(info.value)
    assert message in str(info.value)


def test_split_refuses_malformed_acceptable_arguments(tmp_path):
    row = make_row("en-0", "en", gold_call=WEATHER, acceptable_arguments={"language": "python"})
    split = tmp_path / "split.jsonl"
    split.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError) as info:
        load_split(split, ["en"])
    assert "split.jsonl:1" in str(info.value) and "acceptable_arguments" in str(info.value)


def test_translation_must_repeat_its_roots_acceptable_arguments(tmp_path):
    other = {
        **WEATHER_OK,
        "arguments": {**WEATHER_OK["arguments"], "city": {"type": "string", "values": ["Paris"]}},
    }
    translated = {
        **PREPARED,
        "example_id": "ex-he",
        "language": "he",
        "source_example_id": "ex-1",
        "acceptable_arguments": other,
    }
    with pytest.raises(InputError) as info:
        read_prepared(_prepared(tmp_path, PREPARED, translated))
    assert info.value.code == "SOM-PREPARED-PAIR-MISMATCH"
    assert "acceptable_arguments" in str(info.value)


def test_markdown_without_the_field_has_no_sixth_section():
    report = {
        "candidate": "a",
        "reference": "b",
        "ci95": {
            "method": "m",
            "resamples": 1,
            "confidence_level": 0.95,
            "seed": 1,
            "intervals": {},
        },
        "deltas": {},
        "slices": {},
    }
    assert "acceptable-values" not in comparison_markdown(report)


# ---------------------------------------------------------------- the command


def test_import_command_end_to_end(tmp_path, capsys):
    folder = tmp_path / "data"
    (folder / "possible_answer").mkdir(parents=True)
    question = {
        "id": "simple_python_0",
        "question": [[{"role": "user", "content": "Weather in Paris?"}]],
        "function": [
            {
                "name": "get_weather",
                "description": "d",
                "parameters": {
                    "type": "dict",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
    }
    answer = {"id": "simple_python_0", "ground_truth": [{"get_weather": {"city": ["Paris"]}}]}
    (folder / "BFCL_v4_simple_python.json").write_text(json.dumps(question) + "\n")
    (folder / "possible_answer" / "BFCL_v4_simple_python.json").write_text(json.dumps(answer))
    out = tmp_path / "prepared.jsonl"
    code = main(
        [
            "import",
            "bfcl",
            "--category",
            "simple_python",
            "--source",
            str(folder),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert "simple_python: 1 converted, 0 skipped" in capsys.readouterr().out
    assert read_prepared(out)[0].acceptable_arguments["arguments"]["city"]["values"] == ["Paris"]
    code = main(
        [
            "import",
            "bfcl",
            "--category",
            "parallel",
            "--source",
            str(folder),
            "--out",
            str(tmp_path / "other.jsonl"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "SOM-BFCL-PARALLEL" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "other.jsonl").exists()
