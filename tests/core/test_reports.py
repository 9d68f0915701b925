"""Tests for core.reports: evaluation reports, gaps, the identity gate, comparisons."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from pytest_sommelier.core import canonical
from pytest_sommelier.core.metrics import METRIC_NAMES, compute_metrics
from pytest_sommelier.core.reports import (
    build_comparison_report,
    build_evaluation_report,
    check_identity,
    efficiency_block,
)
from pytest_sommelier.core.stats import derive_seed, paired_bootstrap
from pytest_sommelier.data.split.load import Example, FormattedSplit
from pytest_sommelier.data.suite.load import StatisticsConfig
from pytest_sommelier.errors import EvaluationError, InvariantError

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 64, "batch_size": 1}
STATS = StatisticsConfig(seed=41, resamples=300, confidence_level=0.95)
GOLD = {"name": "lookup", "arguments": {"q": "x", "n": 2}}


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


def make_split() -> FormattedSplit:
    """en-0..en-5 (reference); he-0..he-3 pair with en-0..en-3; he-9 pairs with en-9, which
    is not in the split (built by hand: load_split refuses such a row; reports must not crash).
    """
    en = tuple(example(f"en-{i}", "en") for i in range(6))
    he = tuple(example(f"he-{i}", "he", f"en-{i}") for i in (0, 1, 2, 3, 9))
    slices = {"en": en, "he": he}
    pairs = {"he": tuple((e.source_example_id, e.example_id) for e in he)}
    return FormattedSplit(
        path=Path("split.jsonl"),
        sha256="f" * 64,
        split="test",
        examples=en + he,
        slices=slices,
        prompt_set_sha256={k: canonical.prompt_set_sha256(v) for k, v in slices.items()},
        pairs=pairs,
        pair_set_sha256={},
    )


def scoring_record(ex: Example, outcome: str, arm: str = "adapter") -> dict:
    """A scoring record of ``ex``: outcome 'exact', 'half' (one argument wrong) or 'fail'."""
    base = {
        "example_id": ex.example_id,
        "arm": arm,
        "model_kind": "adapter",
        "language": ex.language,
        "prompt_sha256": ex.prompt_sha256,
        "raw_text": "...",
        "decoding": dict(DECODING),
        "gold_call": ex.gold_call,
    }
    if outcome == "fail":
        return {**base, "parse_status": "no_json", "parsed_call": None}
    arguments = {"q": "x", "n": 2 if outcome == "exact" else 3}
    return {**base, "parse_status": "ok", "parsed_call": {"name": "lookup", "arguments": arguments}}


def arm_records(split, outcomes: dict[str, str], arm: str = "adapter") -> dict[str, list[dict]]:
    """Records per slice in split order for every example id listed in ``outcomes``."""
    return {
        lang: [
            scoring_record(ex, outcomes[ex.example_id], arm)
            for ex in examples
            if ex.example_id in outcomes
        ]
        for lang, examples in split.slices.items()
    }


ADAPTER = {
    "en-0": "exact",
    "en-1": "exact",
    "en-2": "half",
    "en-3": "exact",
    "en-4": "fail",
    "en-5": "exact",
    "he-0": "exact",
    "he-1": "fail",
    "he-2": "half",
    "he-3": "half",
    "he-9": "exact",
}
BASE = {**{k: "fail" for k in ADAPTER}, "en-0": "exact", "he-0": "half"}


def report(split, records_by_slice, arm: str = "adapter", complete: bool = True, **over) -> dict:
    kwargs = dict(
        run_id="20240101T000000Z-abcdef",
        arm=arm,
        model_kind="adapter" if arm != "base" else "base",
        model_identity={"base": "tiny", "tokenizer": {"id": "tok", "sha": "1" * 64}},
        adapter_identity=None,
        config_sha256="c" * 64,
        split=split,
        slices=("en", "he"),
        parser_version="sommelier.parser.v1",
        decoding=DECODING,
        records_by_slice=records_by_slice,
        statistics=STATS,
        generation_artifacts={
            "en": f"eval/{arm}/generations.en.jsonl",
            "he": f"eval/{arm}/generations.he.jsonl",
        },
        complete=complete,
    )
    kwargs.update(over)
    return build_evaluation_report(**kwargs)


@pytest.fixture
def split() -> FormattedSplit:
    return make_split()


# --- evaluation report ---------------------------------------------------------------------


def test_evaluation_report_fields_and_metrics(split) -> None:
    records = arm_records(split, ADAPTER)
    result = report(split, records)
    assert set(result) == {
        "schema_version",
        "run_id",
        "plugin_version",
        "arm",
        "model_kind",
        "model_identity",
        "adapter_identity",
        "config_sha256",
        "split",
        "test_split_sha256",
        "parser_version",
        "arguments_key",
        "decoding",
        "slice_order",
        "slices",
        "paired_slices",
        "language_gaps",
        "metrics",
        "misses",
        "complete",
        "parser",
    }
    assert result["parser"] == {"version": "sommelier.parser.v1", "reasoning": None}
    assert result["schema_version"] == "sommelier.evaluation_report.v1"
    assert (result["split"], result["test_split_sha256"]) == ("test", "f" * 64)
    assert result["complete"] is True
    assert result["slice_order"] == ["en", "he"]
    en = result["slices"]["en"]
    assert en["examples"] == 6
    assert en["metrics"]["full_call_exact_match"] == {
        "value": 4 / 6,
        "numerator": 4,
        "denominator": 6,
    }
    assert en["generation_artifact"] == "eval/adapter/generations.en.jsonl"
    for lang in ("en", "he"):
        assert result["slices"][lang]["prompt_set_sha256"] == split.prompt_set_sha256[lang]
    assert result["metrics"] == compute_metrics(records["en"] + records["he"])


def test_records_out_of_order_are_scored_in_split_order(split) -> None:
    records = arm_records(split, ADAPTER)
    shuffled = {lang: list(reversed(recs)) for lang, recs in records.items()}
    assert report(split, shuffled) == report(split, records)


def test_missing_example_makes_report_incomplete(split) -> None:
    partial = {k: v for k, v in ADAPTER.items() if k != "en-5"}
    result = report(split, arm_records(split, partial), complete=True)
    assert result["complete"] is False
    assert result["slices"]["en"]["examples"] == 5
    assert result["slices"]["en"]["prompt_set_sha256"] != split.prompt_set_sha256["en"]
    assert report(split, arm_records(split, ADAPTER), complete=False)["complete"] is False


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda r: r["en"].append(dict(r["en"][0])), "SOM-REPORT-DUPLICATE-EXAMPLE"),
        (lambda r: r["en"][1].update(example_id="en-77"), "SOM-REPORT-UNKNOWN-EXAMPLE"),
        (lambda r: r["en"].append(dict(r["he"][0])), "SOM-REPORT-UNKNOWN-EXAMPLE"),
        (lambda r: r["he"][1].update(language="en"), "SOM-REPORT-LANGUAGE"),
        (lambda r: r["en"][2].update(prompt_sha256="0" * 64), "SOM-REPORT-PROMPT-DIGEST"),
        (lambda r: r["en"][3]["decoding"].update(batch_size=4), "SOM-REPORT-DECODING-MIX"),
        (lambda r: r.update(fr=[]), "SOM-REPORT-UNKNOWN-SLICE"),
    ],
)
def test_inconsistent_records_are_invariant_errors(split, mutate, code) -> None:
    records = arm_records(split, ADAPTER)
    mutate(records)
    with pytest.raises(InvariantError) as info:
        report(split, records)
    assert info.value.code == code


def test_matched_cohort_skips_dangling_and_unscored_pairs(split) -> None:
    # he-9's root en-9 is not in the split (dangling); he-3 is not scored.
    outcomes = {k: v for k, v in ADAPTER.items() if k != "he-3"}
    records = arm_records(split, outcomes)
    block = report(split, records)["paired_slices"]["he"]
    roots = [r for r in records["en"] if r["example_id"] in {"en-0", "en-1", "en-2"}]
    targets = [r for r in records["he"] if r["example_id"] in {"he-0", "he-1", "he-2"}]
    assert block["reference_slice"] == "en"
    assert block["pairs"] == 3
    assert block["coverage"] == 3 / 6
    assert block["pair_set_sha256"] == canonical.pair_set_sha256(
        (r["example_id"], r["prompt_sha256"], t["example_id"], t["prompt_sha256"])
        for r, t in zip(roots, targets, strict=True)
    )
    assert block["reference_metrics"] == compute_metrics(roots)
    assert block["target_metrics"] == compute_metrics(targets)
    # roots: exact, exact, half -> 2/3; targets: exact, fail, half -> 1/3
    assert block["gaps"]["full_call_exact_match"] == pytest.approx(-1 / 3)
    assert block["gaps"]["valid_json_rate"] == pytest.approx(2 / 3 - 1.0)
    seed = derive_seed(41, "gap:adapter:he")
    fake_roots = [dict(t, example_id=r["example_id"]) for r, t in zip(roots, targets, strict=True)]
    assert block["ci95"] == paired_bootstrap(roots, fake_roots, seed=seed, resamples=300)
    assert block["ci95"]["seed"] == seed


def test_marginal_gap_uses_full_slices(split) -> None:
    result = report(split, arm_records(split, ADAPTER))
    gap = result["language_gaps"]["he"]
    assert gap["cohort"] == "marginal_full_slices"
    assert (gap["reference_examples"], gap["target_examples"]) == (6, 5)
    assert "ci95" not in gap
    # en 4/6 exact; he: he-0, he-9 exact -> 2/5
    assert gap["gaps"]["full_call_exact_match"] == pytest.approx(2 / 5 - 4 / 6)


def test_exact_gap_rounding(split) -> None:
    # 7/10 - 6/10 must be the float 0.1, not 0.09999999999999998
    from pytest_sommelier.core.reports import metric_difference

    a = {"value": 0.7, "numerator": 7, "denominator": 10}
    b = {"value": 0.6, "numerator": 6, "denominator": 10}
    assert metric_difference(a, b) == 0.1
    assert metric_difference(a, {"value": None, "numerator": 0, "denominator": 0}) is None


# --- identity gate -------------------------------------------------------------------------


@pytest.fixture
def two_reports(split) -> tuple[dict, dict]:
    return (
        report(split, arm_records(split, ADAPTER)),
        report(split, arm_records(split, BASE, "base"), arm="base"),
    )


def _set(path: list[str], value):
    def mutate(rep: dict) -> None:
        target = rep
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


IDENTITY_CASES = [
    ("model_identity.base", _set(["model_identity", "base"], "other")),
    ("model_identity.tokenizer.sha", _set(["model_identity", "tokenizer", "sha"], "2" * 64)),
    ("config_sha256", _set(["config_sha256"], "d" * 64)),
    ("split", _set(["split"], "validation")),
    ("test_split_sha256", _set(["test_split_sha256"], "e" * 64)),
    ("slices", _set(["slice_order"], ["he", "en"])),
    ("slices.en.prompt_set_sha256", _set(["slices", "en", "prompt_set_sha256"], "0" * 64)),
    ("slices.he.prompt_set_sha256", _set(["slices", "he", "prompt_set_sha256"], "0" * 64)),
    (
        "paired_slices.he.pair_set_sha256",
        _set(["paired_slices", "he", "pair_set_sha256"], "0" * 64),
    ),
    # a 0.4 report (no parser block) is read by its parser_version
    ("parser.version", lambda rep: (rep.pop("parser", None),
                                    _set(["parser_version"], "sommelier.parser.v2")(rep))),
    ("parser.version", _set(["parser"], {"version": "sommelier.parser.v2"})),
    ("arguments_key", _set(["arguments_key"], "parameters")),
    ("decoding.batch_size", _set(["decoding", "batch_size"], 8)),
    ("decoding.max_new_tokens", _set(["decoding", "max_new_tokens"], 512)),
    ("metric_names", lambda rep: rep["metrics"].pop("argument_f1")),
    ("model_identity", lambda rep: rep.pop("model_identity")),
]


@pytest.mark.parametrize(("field", "mutate"), IDENTITY_CASES, ids=[c[0] for c in IDENTITY_CASES])
def test_identity_gate_refuses_each_field(two_reports, field, mutate) -> None:
    candidate, reference = two_reports
    check_identity(candidate, reference)  # the unmutated pair passes
    reference = copy.deepcopy(reference)
    mutate(reference)
    with pytest.raises(EvaluationError) as info:
        check_identity(candidate, reference)
    assert info.value.code == "SOM-COMPARE-IDENTITY"
    assert info.value.where == field
    assert f"disagree on {field}:" in str(info.value)
    assert "'adapter'" in str(info.value) and "'base'" in str(info.value)


def test_identity_gate_reads_parser_version_as_the_parser_blocks_version(two_reports) -> None:
    """parser.version is the ``parser`` block's version, else the 0.4 field ``parser_version``:
    a report with the block compares with a stored one without it, and v1 never with v2."""
    candidate, reference = copy.deepcopy(two_reports)
    del reference["parser_version"]
    reference["parser"] = {"version": "sommelier.parser.v1"}
    assert check_identity(candidate, reference)["parser_version"] == "sommelier.parser.v1"
    candidate["parser"] = {"version": "sommelier.parser.v2"}
    with pytest.raises(EvaluationError) as info:
        check_identity(candidate, reference)
    assert info.value.where == "parser.version"
    assert "sommelier.parser.v2" in str(info.value) and "sommelier.parser.v1" in str(info.value)


def test_identity_gate_reads_a_report_without_arguments_key_as_arguments(two_reports) -> None:
    """Reports written before the key was recorded read only ``arguments``: they compare with
    an ``arguments`` report and are refused against a ``parameters`` one."""
    candidate, reference = copy.deepcopy(two_reports)
    assert candidate["arguments_key"] == "arguments"
    del reference["arguments_key"]
    assert check_identity(candidate, reference)["arguments_key"] == "arguments"
    candidate["arguments_key"] = "parameters"
    with pytest.raises(EvaluationError) as info:
        check_identity(candidate, reference)
    assert info.value.where == "arguments_key"
    assert "candidate 'adapter' has parameters, reference 'base' has arguments" in str(
        info.value
    )


def test_identity_gate_names_the_first_mismatch(two_reports) -> None:
    candidate, reference = copy.deepcopy(two_reports)
    reference["decoding"]["batch_size"] = 2
    reference["split"] = "dev"
    with pytest.raises(EvaluationError) as info:
        check_identity(candidate, reference)
    assert info.value.where == "split"


def test_identity_gate_is_type_strict(two_reports) -> None:
    candidate, reference = copy.deepcopy(two_reports)
    reference["decoding"]["batch_size"] = 1.0
    with pytest.raises(EvaluationError, match=r"decoding\.batch_size"):
        check_identity(candidate, reference)


def test_incomplete_arm_never_matches_complete_one(split) -> None:
    partial = {k: v for k, v in BASE.items() if k != "he-2"}
    complete = report(split, arm_records(split, ADAPTER))
    incomplete = report(split, arm_records(split, partial, "base"), arm="base")
    with pytest.raises(EvaluationError) as info:
        check_identity(complete, incomplete)
    assert info.value.where == "slices.he.prompt_set_sha256"


def test_shared_block(two_reports, split) -> None:
    shared = check_identity(*two_reports)
    assert shared["slices"] == ["en", "he"]
    assert shared["prompt_set_sha256"] == split.prompt_set_sha256
    assert list(shared["pair_set_sha256"]) == ["he"]
    assert shared["metric_names"] == list(METRIC_NAMES)
    assert shared["decoding"] == DECODING
    assert shared["config_sha256"] == "c" * 64
    assert (shared["parser_version"], shared["arguments_key"]) == (
        "sommelier.parser.v1",
        "arguments",
    )


# --- comparison report ---------------------------------------------------------------------


def test_comparison_report(split, two_reports) -> None:
    cand_records = arm_records(split, ADAPTER)
    ref_records = arm_records(split, BASE, "base")
    candidate, reference = two_reports
    result = build_comparison_report(candidate, reference, cand_records, ref_records, STATS)
    assert result["name"] == "adapter-vs-base"
    assert result["schema_version"] == "sommelier.comparison_report.v1"
    assert result["shared"] == check_identity(candidate, reference)
    # adapter exact: en-0,1,3,5, he-0,9 = 6/11; base exact: en-0 = 1/11
    assert result["deltas"]["full_call_exact_match"] == pytest.approx(5 / 11)
    ref_all = ref_records["en"] + ref_records["he"]
    cand_all = cand_records["en"] + cand_records["he"]
    assert result["ci95"] == paired_bootstrap(
        ref_all, cand_all, seed=derive_seed(41, "adapter-vs-base"), resamples=300
    )
    assert result["slices"]["he"]["ci95"]["seed"] == derive_seed(41, "adapter-vs-base:he")
    assert result["slices"]["en"]["deltas"]["full_call_exact_match"] == pytest.approx(3 / 6)
    assert result["mcnemar"]["candidate_only"] == 5
    assert result["mcnemar"]["reference_only"] == 0
    assert result["paired_language_gaps"] == {
        "adapter": candidate["paired_slices"],
        "base": reference["paired_slices"],
    }
    assert result["language_gaps"]["cohort"] == "marginal_full_slices"
    assert result["language_gaps"]["arms"]["base"] == reference["language_gaps"]
    assert result["efficiency"]["cross_comparable"] is False


def test_comparison_refuses_before_reading_records(split, two_reports) -> None:
    candidate, reference = copy.deepcopy(two_reports)
    reference["parser_version"] = "x"
    reference["parser"] = {**reference["parser"], "version": "x"}
    with pytest.raises(EvaluationError, match=r"parser\.version"):
        build_comparison_report(candidate, reference, {}, {}, STATS)


def test_comparison_records_must_match_reports(split, two_reports) -> None:
    cand_records = arm_records(split, ADAPTER)
    ref_records = arm_records(split, BASE, "base")
    ref_records["en"] = list(reversed(ref_records["en"]))
    with pytest.raises(InvariantError) as info:
        build_comparison_report(*two_reports, cand_records, ref_records, STATS)
    assert info.value.code == "SOM-COMPARE-RECORDS"
    assert info.value.where == "base/en"


def telemetry(**over) -> dict:
    base = {
        "schema_version": "sommelier.inference_telemetry.v1",
        "boundary": "generate_call",
        "batch_size": 1,
        "concurrency": 1,
        "device": "cpu",
        "device_count": 1,
        "total_seconds": 12.0,
        "examples": 11,
        "timed_examples": 11,
        "cached_examples": 0,
        "seconds_per_example": 12.0 / 11,
    }
    return {**base, **over}


def test_efficiency_comparable_and_per_success(two_reports) -> None:
    candidate, reference = two_reports
    block = efficiency_block(
        candidate,
        reference,
        {"adapter": telemetry(device_count=2), "base": telemetry(device_count=2)},
    )
    assert block["cross_comparable"] is True
    assert block["adapter"]["device_seconds_per_success"] == pytest.approx(12.0 * 2 / 6)
    assert block["base"]["device_seconds_per_success"] == pytest.approx(24.0)
    assert block["adapter"]["seconds_per_example"] == pytest.approx(12.0 / 11)


@pytest.mark.parametrize(
    ("cand_tel", "ref_tel", "needle"),
    [
        (telemetry(device="cuda"), telemetry(), "device differs"),
        (telemetry(batch_size=4), telemetry(), "batch_size differs"),
        (telemetry(concurrency=2), telemetry(), "concurrency differs"),
        (telemetry(boundary="model_forward"), telemetry(), "boundary differs"),
        (telemetry(cached_examples=3, timed_examples=8), telemetry(), "cached"),
        (None, telemetry(), "no telemetry for arm 'adapter'"),
    ],
)
def test_efficiency_not_comparable_says_why(two_reports, cand_tel, ref_tel, needle) -> None:
    tel = {"base": ref_tel} if cand_tel is None else {"adapter": cand_tel, "base": ref_tel}
    block = efficiency_block(*two_reports, tel)
    assert block["cross_comparable"] is False
    assert needle in block["reason"]


def test_efficiency_nulls(split, two_reports) -> None:
    candidate, _ = two_reports
    none_right = report(split, arm_records(split, {k: "fail" for k in ADAPTER}, "base"), arm="base")
    block = efficiency_block(
        candidate,
        none_right,
        {"adapter": telemetry(cached_examples=1, timed_examples=10), "base": telemetry()},
    )
    assert block["base"]["device_seconds_per_success"] is None  # zero successes
    assert block["adapter"]["device_seconds_per_success"] is None  # not every example timed
    assert efficiency_block(candidate, none_right, None)["adapter"] == {
        "seconds_per_example": None,
        "device_seconds_per_success": None,
        "device_count": None,
    }


def test_concurrency_is_the_runs_process_count_not_the_workers_an_arm_got() -> None:
    from pytest_sommelier.core.pipeline import concurrency_of

    one_worker_took_all = [
        {"language": "en", "cached": False, "seconds": 0.1, "worker": "gw1", "processes": 2,
         "device": {"device": "cpu", "device_count": 1}, "selfcheck_differs": None}
    ] * 3
    assert concurrency_of(one_worker_took_all) == 2
    assert concurrency_of([]) == 1
