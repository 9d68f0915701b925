"""The selected intervals, clusters, power and mid-p inside the reports (core.reports), and the
cluster rule (core.clusters.example_clusters)."""

from __future__ import annotations

import dataclasses
import math

import pytest
from test_reports import ADAPTER, BASE, STATS, arm_records, example, make_split, report

from pytest_sommelier.core.clusters import example_clusters
from pytest_sommelier.core.metrics import METRIC_NAMES
from pytest_sommelier.core.reports import build_comparison_report
from pytest_sommelier.core.stats import derive_seed, paired_bootstrap
from pytest_sommelier.errors import InputError

RATES = [name for name in METRIC_NAMES if name != "argument_f1"]


def comparison(statistics=STATS, clusters=None) -> dict:
    split = make_split()
    adapter, base = arm_records(split, ADAPTER), arm_records(split, BASE, arm="base")
    return build_comparison_report(
        report(split, adapter, statistics=statistics),
        report(split, base, arm="base", statistics=statistics),
        adapter, base, statistics, clusters=clusters,
    )  # fmt: skip


def test_ci95_is_still_the_seed_bootstrap_and_intervals_sit_beside_it() -> None:
    split = make_split()
    built = comparison()
    adapter, base = arm_records(split, ADAPTER), arm_records(split, BASE, arm="base")
    flat = lambda records: [r for lang in ("en", "he") for r in records[lang]]  # noqa: E731
    seed = derive_seed(STATS.seed, "adapter-vs-base")
    assert built["ci95"] == paired_bootstrap(flat(base), flat(adapter), seed=seed, resamples=300)
    block = built["intervals"]
    assert block["interval"] == "auto" and block["seed"] == seed
    for name in RATES:
        entry = block["intervals"][name]
        assert entry["method"] == "bonett_price_adjusted_wald"
        assert entry["lower"] < entry["upper"]
    assert block["intervals"]["argument_f1"]["method"] == "jackknife_t_pseudo_paired"
    he = built["slices"]["he"]["intervals"]["intervals"]["full_call_exact_match"]
    assert {"lower", "upper", "method", "discordant", "degenerate", "p_value"} <= set(he)


def test_bootstrap_selection_over_examples_gives_the_ci95_bounds() -> None:
    stats = dataclasses.replace(STATS, interval="bootstrap", cluster="example")
    built = comparison(stats)
    for block in (built, *built["slices"].values()):
        for name, bounds in block["ci95"]["intervals"].items():
            entry = block["intervals"]["intervals"][name]
            assert (entry["lower"], entry["upper"]) == (bounds["lower"], bounds["upper"])
            assert entry["method"] == "paired_bootstrap_percentile"


def test_mcnemar_has_the_mid_p_beside_the_exact_p() -> None:
    mcnemar = comparison()["mcnemar"]
    b, c = mcnemar["candidate_only"], mcnemar["reference_only"]
    n = b + c
    by_hand = 2 * sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    by_hand -= math.comb(n, b) / 2**n
    assert mcnemar["mid_p_value"] == pytest.approx(by_hand)
    assert mcnemar["mid_p_value"] < mcnemar["p_value"]


def test_roots_and_translations_are_one_cluster_in_the_overall_interval() -> None:
    split = make_split()
    clusters = example_clusters(split.examples, "root")
    built = comparison(clusters=clusters)
    # 6 English roots; he-0..he-3 join en-0..en-3; he-9's root is not in the split
    assert built["intervals"]["clusters"] == 7 and built["intervals"]["pairs"] == 11
    assert built["intervals"]["clustered"] is True
    assert built["intervals"]["intervals"]["full_call_exact_match"]["method"].endswith("_cr2_bm")
    assert built["power"]["full_call_exact_match"]["clusters"] == 7
    # within one slice each root is alone: nothing is clustered
    assert built["slices"]["en"]["intervals"]["clustered"] is False
    unclustered = comparison()
    assert unclustered["intervals"]["clusters"] == 11


def test_cluster_rule() -> None:
    rows = [example("en-0", "en"), example("he-0", "he", "en-0"), example("en-1", "en"),
            dataclasses.replace(example("en-2", "en"), cluster_id="doc"),
            dataclasses.replace(example("en-3", "en"), cluster_id="doc"),
            example("he-2", "he", "en-2"),
            dataclasses.replace(example("he-1", "he", "en-1"), cluster_id="en-0")]  # fmt: skip
    keys = example_clusters(rows, "root")
    assert keys["en-0"] == keys["he-0"] != keys["en-1"]
    assert keys["en-2"] == keys["en-3"] == keys["he-2"]  # a translation inherits its root's id
    assert keys["he-1"] not in (keys["en-0"], keys["en-1"])  # a declared id never meets a root id
    assert example_clusters(rows, "example") is None
    with pytest.raises(InputError, match=r"statistics\.cluster"):
        example_clusters(rows, "conversation")


def test_every_report_interval_of_a_rate_has_width() -> None:
    built = comparison()
    blocks = [built, *built["slices"].values()]
    for block in blocks:
        for name in RATES:
            entry = block["intervals"]["intervals"][name]
            assert entry["upper"] - entry["lower"] > 0, (name, entry)


def test_language_gaps_carry_the_selected_interval_and_power() -> None:
    split = make_split()
    arm = report(split, arm_records(split, ADAPTER))
    gap = arm["paired_slices"]["he"]
    assert gap["ci95"]["method"] == "paired_bootstrap_percentile"
    entry = gap["intervals"]["intervals"]["full_call_exact_match"]
    assert entry["method"] == "bonett_price_adjusted_wald"
    assert gap["intervals"]["pairs"] == gap["pairs"] == 4
    assert gap["power"]["full_call_exact_match"]["pairs"] == 4


def test_a_rate_leaves_out_the_pairs_it_does_not_count() -> None:
    import numpy as np

    from pytest_sommelier.core.stats import paired_intervals_arrays

    # acceptable_call_match: 6 examples carry acceptable values (b = 3, c = 1), 4 do not (0/0)
    ref = np.array([[1], [0], [0], [0], [1], [1], [0], [0], [0], [0]])
    cand = np.array([[1], [1], [1], [1], [0], [1], [0], [0], [0], [0]])
    den = np.array([[1]] * 6 + [[0]] * 4)
    block = paired_intervals_arrays(ref, den, cand, den, seed=3, resamples=200,
                                    metric_names=("acceptable_call_match",))  # fmt: skip
    entry = block["intervals"]["acceptable_call_match"]
    assert entry["discordant"] == {"candidate_only": 3, "reference_only": 1}
    # Bonett-Price on n = 6 by hand: p12 = 4/8, p21 = 2/8
    p12, p21, z = 0.5, 0.25, 1.959963984540054
    half = z * math.sqrt((p12 + p21 - (p12 - p21) ** 2) / 8)
    assert entry["lower"] == pytest.approx(p12 - p21 - half)
    assert entry["upper"] == pytest.approx(p12 - p21 + half)
    assert entry["estimate"] == pytest.approx(2 / 6)


def test_config_digest_keeps_old_suites_and_tells_new_settings_apart(tmp_path) -> None:
    from suite_factory import write_suite

    from pytest_sommelier.core.pipeline import config_sha256
    from pytest_sommelier.data.split.load import load_split
    from pytest_sommelier.data.suite.load import load_suite

    suite = load_suite(write_suite(tmp_path))
    split = load_split(suite.test_split, suite.slices)
    model = {"kind": "hub", "id": "m", "revision": "r"}
    default = config_sha256(suite, split, model)
    explicit = dataclasses.replace(suite, statistics=dataclasses.replace(
        suite.statistics, interval="auto", cluster="root", familywise="none", power=0.8))
    assert config_sha256(explicit, split, model) == default  # defaults written out: same
    digests = {default}
    for key, value in (("interval", "bootstrap"), ("cluster", "example"),
                       ("familywise", "holm"), ("power", 0.9)):  # fmt: skip
        changed = dataclasses.replace(
            suite, statistics=dataclasses.replace(suite.statistics, **{key: value})
        )
        digests.add(config_sha256(changed, split, model))
    assert len(digests) == 5
