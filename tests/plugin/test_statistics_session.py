"""Real pytest sessions (pytester, scripted fake model) for the statistics settings: the interval
method, clusters, margins both ways, familywise adjustment, the gate lines, and ``sommelier plan``
on the stored run.

Every expected number is worked out here from the published formulas (Bonett & Price 2012, the
Rao-Scott design effect, Connor 1987, Holm 1979), not by the project's code. The script: the
adapter hits en-0, en-1, en-3, he-0, he-1, he-3 (misses en-2); the base hits en-0 and he-0. So
overall full_call_exact_match has 7 pairs, 4 only-adapter, 0 only-base; English 4 pairs, 2/0;
the adapter's Hebrew gap 3 pairs, none discordant.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from statistics import NormalDist

import pytest
from plugin_helpers import GOLD, call_text, read_json, write_scripted_suite

from pytest_sommelier import cli
from pytest_sommelier.core import proportions
from pytest_sommelier.core.power import design_effect_upper_limit

ADAPTER = {key: call_text(GOLD[key]) for key in ("en-0", "en-1", "en-3", "he-0", "he-1", "he-3")}
ADAPTER["en-2"] = call_text({"name": "nope", "arguments": {}})
BASE = {"en-0": call_text(GOLD["en-0"]), "he-0": call_text(GOLD["he-0"])}
SCRIPT = {"adapter": ADAPTER, "base": BASE}
METRIC = "full_call_exact_match"
EXAMPLE = {"cluster": "example"}
BOOTSTRAP = {"interval": "bootstrap", "cluster": "example"}


def z_of(level: float) -> float:
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def bonett_price(b: float, c: float, n: float, level: float = 0.95) -> tuple[float, float, float]:
    """(centre, lower, upper): one pseudo-pair added to each discordant cell, truncated."""
    p12, p21 = (b + 1) / (n + 2), (c + 1) / (n + 2)
    se = math.sqrt((p12 + p21 - (p12 - p21) ** 2) / (n + 2))
    centre = p12 - p21
    half = z_of(level) * se
    return centre, max(-1.0, centre - half), min(1.0, centre + half)


def tango(b: float, c: float, n: float, level: float = 0.95,
          continuity: float = 0.0) -> tuple[float, float]:  # fmt: skip
    """Tango's score interval: what a gate with a non-zero margin reads (checked against the
    published examples in tests/core/test_intervals.py); an equivalence gate reads it with a
    continuity correction of half a unit."""
    lower, upper = proportions.tango_interval(b, c, n, level, continuity)
    return float(lower), float(upper)


def tango_p(b: float, c: float, n: float, null: float, continuity: float = 0.0) -> float:
    return float(proportions.tango_p_value(b, c, n, null, continuity))


CC = 0.5  # an equivalence gate's continuity correction


def bonett_price_p(b: float, c: float, n: float, null: float) -> float:
    p12, p21 = (b + 1) / (n + 2), (c + 1) / (n + 2)
    se = math.sqrt((p12 + p21 - (p12 - p21) ** 2) / (n + 2))
    return 2 * (1 - NormalDist().cdf(abs((p12 - p21 - null) / se)))


# the overall design effect with roots as clusters: differences (adapter - base) per example
DIFFERENCES = {"en-0": 0, "en-1": 1, "en-2": 0, "en-3": 1, "he-0": 0, "he-1": 1, "he-3": 1}
ROOT_OF = {"he-0": "en-0", "he-1": "en-1", "he-3": "en-3"}


def root_clusters() -> tuple[list[int], list[float]]:
    """Cluster sizes and residual sums of the differences, roots as clusters."""
    mean = sum(DIFFERENCES.values()) / 7
    sums: dict[str, float] = {}
    sizes: dict[str, int] = {}
    for key, d in DIFFERENCES.items():
        root = ROOT_OF.get(key, key)
        sums[root] = sums.get(root, 0.0) + d - mean
        sizes[root] = sizes.get(root, 0) + 1
    return list(sizes.values()), [sums[k] for k in sizes]


def t_sized(pairs: int, z_pairs: float) -> bool:
    """A plan's size is the z formula's re-read at the main run's t quantile (issue 38): at
    least the z size, and within what t on that many units less one adds."""
    return math.ceil(z_pairs - 1e-9) <= pairs <= math.ceil(1.3 * z_pairs) + 2


def root_design_effect() -> float:
    """The CR2 design effect (Bell & McCaffrey 2002) of the mean difference, by hand: each
    cluster's squared residual sum over 1 - its leverage m/n, against the pairs' variance."""
    sizes, sums = root_clusters()
    n = 7
    mean = sum(DIFFERENCES.values()) / n
    square = sum((d - mean) ** 2 for d in DIFFERENCES.values())
    cr2 = sum(s * s / (1 - m / n) for s, m in zip(sums, sizes, strict=True))
    return (n - 1) / n * cr2 / square


def root_df() -> float:
    """Bell & McCaffrey's Satterthwaite degrees of freedom from the eigenvalues of G'G."""
    import numpy as np

    sizes, _ = root_clusters()
    n = sum(sizes)
    columns = []
    start = 0
    for m in sizes:
        u = np.zeros(n)
        u[start:start + m] = 1.0
        start += m
        columns.append((u - m / n) / math.sqrt(1 - m / n))
    eigen = np.linalg.eigvalsh(np.array(columns) @ np.array(columns).T)
    return float(eigen.sum() ** 2 / (eigen**2).sum())


def t_level(level: float, df: float) -> float:
    """The normal confidence level with the t(df) critical value (scipy, independently)."""
    from scipy import stats as scipy_stats

    t = scipy_stats.t.ppf(1 - (1 - level) / 2, df)
    return float(1 - 2 * scipy_stats.norm.cdf(-t))


def gate(name: str, **fields: object) -> dict:
    where = {"arm": "adapter", "gap": "he"} if "gap" in fields else {"candidate": "adapter",
                                                                      "reference": "base"}
    return {"name": name, "metric": METRIC, **where, **fields}  # fmt: skip


SUPERIORITY = gate("superiority", ci_lower_above=-0.01)
NON_INFERIORITY = gate("non-inferiority", slice="en", ci_lower_at_least=-0.3)
EQUIVALENCE = gate("equivalence", gap="he", ci_lower_at_least=-0.72, ci_upper_at_most=0.72)


def session(pytester: pytest.Pytester, gates: list[dict], *args: str, **statistics: object):
    write_scripted_suite(pytester, SCRIPT, gates=gates, statistics=statistics)
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    out = pytester.path / "out"
    return result, out


def by_name(verdict: dict) -> dict[str, dict]:
    return {g["name"]: g for g in verdict["gates"]}


# --- interval = auto (the default), cluster = root (the default) ---------------------------


def test_auto_intervals_clustered_by_root_by_default(pytester: pytest.Pytester) -> None:
    result, out = session(pytester, [SUPERIORITY, EQUIVALENCE])
    report = read_json(out / "report" / "adapter-vs-base.json")
    block = report["intervals"]
    assert (block["interval"], block["pairs"], block["clusters"]) == ("auto", 7, 4)
    entry = block["intervals"][METRIC]
    # Bell & McCaffrey's 2.88, but the 4 discordant pairs sit in 2 roots: at most 2 - 1 = 1
    # degree of freedom (the informative clusters, issue 38)
    deff, df = root_design_effect(), min(root_df(), 1.0)  # 2.133, 1
    assert entry["informative_clusters"] == 2
    assert entry["design_effect"] == pytest.approx(deff)
    assert entry["df"] == pytest.approx(df)
    # t(1) at 95% is 12.7, beyond 8 normal deviates: the interval is all of [-1, 1]
    assert t_level(0.95, df) > 1.0 - 1e-15
    assert (entry["lower"], entry["upper"]) == (-1.0, 1.0)
    assert entry["method"] == "bonett_price_adjusted_wald_cr2_bm"
    assert entry["discordant"] == {"candidate_only": 4, "reference_only": 0}
    assert report["ci95"]["method"] == "paired_bootstrap_percentile"  # the seed's, kept
    # within one slice every root is alone
    assert report["slices"]["en"]["intervals"]["clustered"] is False
    # a gap with no discordant pair: the seed's bootstrap is [0, 0], the selected one is not
    base_gap = read_json(out / "eval" / "base" / "evaluation_report.json")["paired_slices"]["he"]
    assert base_gap["ci95"]["intervals"][METRIC] == {"lower": 0.0, "upper": 0.0}
    selected = base_gap["intervals"]["intervals"][METRIC]
    half = z_of(0.95) * math.sqrt(0.4 / 5)
    assert (selected["lower"], selected["upper"]) == (pytest.approx(-half), pytest.approx(half))
    assert selected["discordant"] == {"candidate_only": 0, "reference_only": 0}
    verdict = by_name(read_json(out / "gate_verdict.json"))
    # a margin of -0.01: judged on Tango's score interval over the same adjusted counts
    margin_lower, margin_upper = -1.0, 1.0  # one degree of freedom: [-1, 1] (issue 38)
    assert verdict["superiority"]["passed"] is False  # lower -1 <= -0.01
    assert verdict["superiority"]["observed"] == pytest.approx(margin_lower)
    assert verdict["superiority"]["interval"]["method"] == (
        "tango_asymptotic_score_cr2_bm")
    assert "underpowered" not in verdict["superiority"]  # no post-hoc power
    he_lower, he_upper = tango(0, 0, 3, continuity=CC)
    assert verdict["equivalence"]["interval"]["lower"] == pytest.approx(he_lower)
    assert verdict["equivalence"]["interval"]["method"] == "tango_asymptotic_score_cc"
    assert verdict["equivalence"]["passed"] is (he_lower >= -0.72 and he_upper <= 0.72)
    result.stdout.fnmatch_lines([
        "*adapter-vs-base (candidate - reference, 95% intervals, interval = auto)*",
        "*overall: rates bonett_price_adjusted_wald_cr2_bm, args_f1 jackknife_t_pseudo_cluster;"
        " minimum detectable difference in full_call_exact_match at 80% power (one-sided 2.5%),"
        " at the observed discordance 0.571: none with 7 pairs (too few; a figure of the design,"
        " not of this run's difference, which the gates judge) (4 clusters, design"
        " effect 2.13); few informative clusters: 2 of 4 hold a discordant pair (under 30); the"
        " largest holds 2 of 7 pairs (over 10%):"
        " the intervals rest on few independent units*",
        "*McNemar (full_call): candidate-only 4, reference-only 0, exact p = 0.125, "
        "mid-p = 0.0625*",
        f"FAIL superiority: adapter-vs-base full_call_exact_match [overall] delta +0.571 "
        f"[{margin_lower:+.3f}, {margin_upper:+.3f}]: lower bound {margin_lower:+.3f} <= -0.01 "
        "(95% tango_asymptotic_score_cr2_bm); only 4 discordant pairs (fewer than 10)",
        f"PASS equivalence: adapter full_call_exact_match [he] gap +0.000 [{he_lower:+.3f}, "
        f"{he_upper:+.3f}]: lower bound {he_lower:+.3f} >= -0.72; upper bound {he_upper:+.3f} <= "
        "0.72 (95% tango_asymptotic_score_cc); only 0 discordant pairs (fewer than 10)",
        "familywise: none: 2 interval gates, each at 95% with no adjustment*",
    ])  # fmt: skip
    result.stdout.re_match_lines([
        r"\s+base\s+he - en\s+3\s+0\.75\s+\+0\.000\s+\[-0\.554, \+0\.554\]\s+0/0\s+"
        r"bonett_price_adjusted_wald\s+none measurable \(no discordant pair in 3 pairs\) "
        r"\(80% power, one-sided 2\.5%\)",
    ])  # fmt: skip
    assert "[+0.000, +0.000]" not in result.stdout.str()


def test_cluster_example_treats_every_pair_alone(pytester: pytest.Pytester) -> None:
    strict = gate("strict", ci_lower_above=0.0)
    _, out = session(pytester, [SUPERIORITY, strict], **EXAMPLE)
    block = read_json(out / "report" / "adapter-vs-base.json")["intervals"]
    assert (block["clusters"], block["clustered"]) == (7, False)
    entry = block["intervals"][METRIC]
    _, lower, upper = bonett_price(4, 0, 7)
    assert (entry["lower"], entry["upper"]) == (pytest.approx(lower), pytest.approx(upper))
    assert (entry["method"], entry["design_effect"]) == ("bonett_price_adjusted_wald", 1.0)
    # the margin gate that fails over root clusters passes over independent pairs (Tango's
    # lower bound +0.015 > -0.01); the gate at 0 reads the Bonett-Price interval and fails
    result, failed = read_json(out / "gate_verdict.json")["gates"]
    margin_lower, _ = tango(4, 0, 7)
    assert result["passed"] is True and result["observed"] == pytest.approx(margin_lower)
    assert result["interval"]["method"] == "tango_asymptotic_score"
    assert failed["interval"]["method"] == "bonett_price_adjusted_wald"
    assert failed["observed"] == pytest.approx(lower)
    # the minimum detectable effect is recorded, never turned into a post-hoc verdict
    s2, z_a, z_b = 7.0, z_of(0.95), NormalDist().inv_cdf(0.8)
    mde = math.sqrt(4 / 7) * (math.sqrt(s2) * z_a + z_b * math.sqrt(s2 - z_a**2 + z_b**2)) / (
        s2 + z_b**2
    )
    assert failed["passed"] is False and "underpowered" not in failed
    assert failed["interval"]["minimum_detectable_effect"] == pytest.approx(mde)
    assert "underpowered" not in failed["reason"]


def test_interval_bootstrap_is_the_seed_method_everywhere(pytester: pytest.Pytester) -> None:
    result, out = session(pytester, [SUPERIORITY], **BOOTSTRAP)
    report = read_json(out / "report" / "adapter-vs-base.json")
    for block in (report, *report["slices"].values()):
        for metric, bounds in block["ci95"]["intervals"].items():
            entry = block["intervals"]["intervals"][metric]
            assert (entry["lower"], entry["upper"]) == (bounds["lower"], bounds["upper"])
            assert entry["method"] == "paired_bootstrap_percentile"
    (gate_result,) = read_json(out / "gate_verdict.json")["gates"]
    # a gate with a margin (-0.01) reads Tango's interval whatever the interval setting
    assert gate_result["observed"] == pytest.approx(tango(4, 0, 7)[0])
    assert gate_result["interval"]["method"] == "tango_asymptotic_score"
    at_zero = gate("at-zero", ci_lower_above=0.0)
    _, out = session(pytester, [at_zero], **BOOTSTRAP)
    (gate_result,) = read_json(out / "gate_verdict.json")["gates"]
    report = read_json(out / "report" / "adapter-vs-base.json")
    assert gate_result["observed"] == report["ci95"]["intervals"][METRIC]["lower"]
    assert gate_result["interval"]["method"] == "paired_bootstrap_percentile"
    result.stdout.fnmatch_lines(["*95% intervals, interval = bootstrap*"])


def test_declared_cluster_ids_group_rows(pytester: pytest.Pytester) -> None:
    write_scripted_suite(pytester, SCRIPT, statistics={})
    split = pytester.path / "suite" / "data" / "test.jsonl"
    rows = [json.loads(line) for line in split.read_text().splitlines()]
    for row in rows:
        if row["example_id"] in ("en-2", "en-3"):
            row["cluster_id"] = "doc-7"  # two English rows sharing one function document
    split.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    report = read_json(pytester.path / "out" / "report" / "adapter-vs-base.json")
    # overall: {en-0, he-0}, {en-1, he-1}, {en-2, en-3, he-3 (inherits its root's id)}
    assert report["intervals"]["clusters"] == 3
    assert report["slices"]["en"]["intervals"]["clusters"] == 3
    assert report["slices"]["en"]["intervals"]["clustered"] is True
    assert report["slices"]["he"]["intervals"]["clusters"] == 3


# --- margins both ways ------------------------------------------------------------------------


def test_non_inferiority_and_equivalence_are_one_gate_each(pytester: pytest.Pytester) -> None:
    gates = [
        NON_INFERIORITY,
        gate("non-inferiority-tight", slice="en", ci_lower_at_least=-0.2),
        EQUIVALENCE,
        gate("equivalence-tight", gap="he", ci_lower_at_least=-0.5, ci_upper_at_most=0.5),
        gate("no-big-gain", slice="en", ci_upper_below=0.95),
    ]
    result, out = session(pytester, gates, "--junitxml=junit.xml")
    verdict = by_name(read_json(out / "gate_verdict.json"))
    en_lower, en_upper = tango(2, 0, 4)  # [-0.235, +0.850]: margin gates read Tango's interval
    assert verdict["non-inferiority"]["observed"] == pytest.approx(en_lower)
    assert verdict["non-inferiority"]["interval"]["method"] == "tango_asymptotic_score"
    assert verdict["non-inferiority"]["passed"] is True
    assert verdict["non-inferiority-tight"]["passed"] is False
    assert verdict["equivalence"]["passed"] is True
    assert verdict["equivalence-tight"]["passed"] is False  # +-0.690 is not inside +-0.5
    assert verdict["no-big-gain"]["passed"] is True and verdict["no-big-gain"]["interval"][
        "upper"] == pytest.approx(en_upper)  # fmt: skip
    assert verdict["equivalence"]["threshold"] == {"ci_lower_at_least": -0.72,
                                                   "ci_upper_at_most": 0.72}  # fmt: skip
    assert result.ret == 1
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    message = cases["equivalence-tight"].find("failure").get("message")
    assert "gap +0.000 [-0.690, +0.690]: lower bound -0.690 < -0.5; upper bound +0.690 > 0.5" in (
        message
    )
    assert "(observed -0.690" in message  # then the observed bound at full precision


# --- familywise -------------------------------------------------------------------------------

FAMILY = [SUPERIORITY, NON_INFERIORITY, EQUIVALENCE]


def test_bonferroni_reads_every_member_at_the_adjusted_level(pytester: pytest.Pytester) -> None:
    result, out = session(pytester, FAMILY, familywise="bonferroni", **EXAMPLE)
    verdict = read_json(out / "gate_verdict.json")
    level = 1 - 0.05 / 3
    family = verdict["familywise"]
    assert (family["method"], family["size"]) == ("bonferroni", 3)
    assert family["family"] == ["superiority", "non-inferiority", "equivalence"]
    assert family["adjusted_confidence_level"] == {name: pytest.approx(level)
                                                   for name in family["family"]}  # fmt: skip
    gates = by_name(verdict)
    for name, (b, c, n) in {"superiority": (4, 0, 7), "non-inferiority": (2, 0, 4),
                            "equivalence": (0, 0, 3)}.items():  # fmt: skip
        continuity = CC if name == "equivalence" else 0.0
        lower, upper = tango(b, c, n, level, continuity)  # every member has a margin
        interval = gates[name]["interval"]
        assert interval["confidence_level"] == pytest.approx(level)
        assert (interval["lower"], interval["upper"]) == (pytest.approx(lower),
                                                          pytest.approx(upper))  # fmt: skip
        assert gates[name]["passed"] is False  # all three pass unadjusted
    result.stdout.fnmatch_lines([
        "*FAIL equivalence:*(98.3% tango_asymptotic_score_cc)*",
        "familywise: bonferroni over 3 interval gates: each interval at 98.3%",
    ])  # fmt: skip


def test_holm_steps_down_the_members_p_values(pytester: pytest.Pytester) -> None:
    _, unadjusted = session(pytester, FAMILY, **EXAMPLE)
    assert all(g["passed"] for g in read_json(unadjusted / "gate_verdict.json")["gates"])
    result, out = session(pytester, FAMILY, familywise="holm", **EXAMPLE)
    verdict = read_json(out / "gate_verdict.json")
    raw = {
        "superiority": tango_p(4, 0, 7, -0.01),
        "non-inferiority": tango_p(2, 0, 4, -0.3),
        "equivalence": max(tango_p(0, 0, 3, -0.72, CC), tango_p(0, 0, 3, 0.72, CC)),
    }
    order = sorted(raw, key=raw.get)
    adjusted, running = {}, 0.0
    for rank, name in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * raw[name]))
        adjusted[name] = running
    assert verdict["familywise"]["adjusted_p_value"] == pytest.approx(adjusted)
    gates = by_name(verdict)
    for name in raw:
        assert gates[name]["interval"]["p_value"] == pytest.approx(raw[name])
        assert gates[name]["passed"] is (adjusted[name] <= 0.05)
    assert not any(g["passed"] for g in verdict["gates"])  # each about 0.10 after stepping down
    result.stdout.fnmatch_lines([
        f"FAIL non-inferiority:*; Holm-adjusted p {adjusted['non-inferiority']:.4g} > 0.05",
        "familywise: holm over 3 interval gates: p-values stepped down at 0.05",
    ])  # fmt: skip


# --- sommelier plan on the stored run --------------------------------------------------------


def wilson_upper(discordant: int, pairs: int, deff: float) -> float:
    """Wilson's one-sided 80% upper limit of the discordance on n / deff pairs, by hand."""
    n, p, z = pairs / deff, discordant / pairs, NormalDist().inv_cdf(0.8)
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)  # fmt: skip


def connor(effect: float, psi: float, power: float = 0.8) -> float:
    z_a, z_b = z_of(0.95), NormalDist().inv_cdf(power)
    return (z_a * math.sqrt(psi) + z_b * math.sqrt(psi - effect**2)) ** 2 / effect**2


@pytest.mark.parametrize("cluster", ["example", "root"])
def test_plan_from_the_stored_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], cluster: str
) -> None:
    session(pytester, [], cluster=cluster)
    capsys.readouterr()
    code = cli.main(["plan", str(pytester.path / "out"), "--effect", "0.3", "--json"])
    assert code == 0
    rows = {row["slice"]: row for row in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"overall", "en", "he"}
    deff = root_design_effect() if cluster == "root" else 1.0
    overall = rows["overall"]
    # sized on the upper 80% Wilson limit of the discordance, on the pilot's effective pairs
    assert overall["sized_on"] == "upper 80% limit of the discordance"
    # over clusters on the upper 80% limit of the design effect at the pilot's df (1: two roots
    # hold the discordant pairs), and every size re-read at the main run's t (issue 38)
    planned = deff if cluster != "root" else design_effect_upper_limit(deff, 1.0)
    assert t_sized(overall["pairs_needed"], planned * connor(0.3, wilson_upper(4, 7, deff)))
    assert overall["pilot_clusters"] == (4 if cluster == "root" else 7)
    assert overall["clusters_needed"] == math.ceil(
        overall["pairs_needed"] / (7 / overall["pilot_clusters"])
    )
    assert t_sized(rows["en"]["pairs_needed"], connor(0.3, wilson_upper(2, 4, 1.0)))
    # Hebrew: 2 only-adapter pairs of 3 (he-1, he-3): far too few to size on, and it says so
    assert t_sized(rows["he"]["pairs_needed"], connor(0.3, wilson_upper(2, 3, 1.0)))
    assert rows["he"]["pilot_too_small"] is True
    assert cli.main(["plan", str(pytester.path / "out"), "--effect", "0.9"]) == 0
    text = capsys.readouterr().out
    assert "not detectable" in text  # 0.9 exceeds every slice's discordant proportion
    assert cli.main(["plan", str(pytester.path / "out"), "--comparison", "x-vs-y"]) == 2
    assert "SOM-PLAN-COMPARISON" in capsys.readouterr().err
