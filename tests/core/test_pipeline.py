"""core.pipeline: re-scoring leaves its input alone; the run's generation records carry the
miss fields (the one place a record learns its category)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.core import canonical
from pytest_sommelier.core.metrics import full_call_hit
from pytest_sommelier.core.misses import LANGUAGE_FLAG
from pytest_sommelier.core.pipeline import ArmRun, evaluate_run, generation_record, rescored
from pytest_sommelier.core.types import (
    ArmConfig,
    Example,
    FormattedSplit,
    ModelConfig,
    StatisticsConfig,
    Suite,
    model_kind_of,
)

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 64, "batch_size": 1}
GOLD = {"name": "lookup", "arguments": {"q": "Paris", "n": 2}}


def example(example_id: str, language: str, source: str | None = None) -> Example:
    prompt = f"prompt of {example_id}"
    return Example(
        example_id=example_id,
        language=language,
        source_example_id=source,
        prompt_text=prompt,
        prompt_sha256=canonical.sha256_text(prompt),
        gold_call=GOLD,
        line=0,
    )


EN = tuple(example(f"en-{i}", "en") for i in range(3))
HE = tuple(example(f"he-{i}", "he", f"en-{i}") for i in range(3))
SLICES = {"en": EN, "he": HE}
SPLIT = FormattedSplit(
    path=Path("split.jsonl"),
    sha256="f" * 64,
    split="test",
    examples=EN + HE,
    slices=SLICES,
    prompt_set_sha256={lang: canonical.prompt_set_sha256(rows) for lang, rows in SLICES.items()},
    pairs={"he": tuple((e.source_example_id or "", e.example_id) for e in HE)},
    pair_set_sha256={},
)
SUITE = Suite(
    path=Path("sommelier.toml"),
    name="pipeline",
    test_split=Path("split.jsonl"),
    slices=("en", "he"),
    model=ModelConfig(base="org/model", revision="r", dtype=None, device=None),
    decoding=DECODING,
    arms={"base": ArmConfig(name="base", adapter=None, adapter_revision=None)},
    comparisons=(),
    statistics=StatisticsConfig(seed=1, resamples=50, confidence_level=0.95),
    gates=(),
)

OUTPUTS = [
    json.dumps([GOLD]),
    json.dumps({"name": "lookup", "arguments": {"q": "פריז", "n": 2}}),
    json.dumps({"name": "lookup", "arguments": {"q": "Paris", "n": "2"}}),
    json.dumps({"name": "other", "arguments": {}}),
    "I would look that up for you.",
    '[{"name": "lookup"',
]
STALE = st.fixed_dictionaries(
    {},
    optional={
        "miss_category": st.sampled_from([None, "wrong_value", "made-up"]),
        LANGUAGE_FLAG: st.booleans(),
    },
)


def records_of(texts: list[str], stale: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Generation records of the split's examples, with stale fields a stored file may hold."""
    out = []
    for ex, text, extra in zip(SPLIT.examples, texts, stale, strict=False):
        record = generation_record(
            ex, arm="base", model_kind="base", raw_text=text, decoding=DECODING, cached=False
        )
        out.append({**record, **extra})
    return out


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.sampled_from(OUTPUTS), min_size=6, max_size=6),
    st.lists(STALE, min_size=6, max_size=6),
)
def test_rescored_leaves_its_input_unchanged(texts: list[str], stale: list[dict]) -> None:
    records = records_of(texts, stale)
    before = copy.deepcopy(records)
    generations, scoring = rescored(records, SPLIT)
    assert records == before
    assert len(generations) == len(scoring) == len(records)
    for given_record, kept, scored in zip(records, generations, scoring, strict=True):
        assert kept is not given_record and scored is not given_record
        translated = given_record["language"] != "en"
        hit = full_call_hit(given_record, GOLD)
        # the generation record: as given, with its miss fields derived again
        expected = {k: v for k, v in given_record.items() if k != LANGUAGE_FLAG}
        expected["miss_category"] = kept["miss_category"]
        if translated:
            expected[LANGUAGE_FLAG] = kept[LANGUAGE_FLAG]
        assert kept == expected
        assert (kept["miss_category"] is None) == hit
        assert (LANGUAGE_FLAG in kept) == translated
        assert scored["gold_call"] == GOLD
        assert {k: v for k, v in scored.items() if k != "gold_call"} == kept


def test_evaluate_run_returns_the_generation_records_and_keeps_the_arms_records() -> None:
    records = records_of(OUTPUTS, [{}] * 6)
    by_slice = {
        "en": [r for r in records if r["language"] == "en"],
        "he": [r for r in records if r["language"] == "he"],
    }
    before = copy.deepcopy(by_slice)
    arm = ArmRun(
        name="base",
        model_kind=model_kind_of(None),
        model_identity={"fake": 1},
        adapter_identity=None,
        records=by_slice,
    )
    outcome = evaluate_run(SUITE, SPLIT, {"base": arm}, run_id="r", model={"id": "org/model"})
    assert arm.records == before
    written = outcome.generations["base"]
    assert [r["miss_category"] for r in written["en"]] == [None, "wrong_value", "wrong_type"]
    assert [r["miss_category"] for r in written["he"]] == [
        "wrong_function",
        "parse_no_json",
        "parse_invalid_json",
    ]
    assert all(LANGUAGE_FLAG not in r for r in written["en"])
    assert [r[LANGUAGE_FLAG] for r in written["he"]] == [False, False, False]
    assert outcome.arm_reports["base"]["misses"]["misses"] == 5


def test_model_kind_rule() -> None:
    assert model_kind_of(None) == "base"
    assert model_kind_of("adapter-folder") == model_kind_of({"sha256": "x"}) == "adapter"
