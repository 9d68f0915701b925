"""``sommelier plan`` sizes the claims a suite's gates make, as each is judged: a gate at 0 by
Connor (1987), a margin gate by Nam's (1997) score-test formula (checked here against the
constrained maximum likelihood solved numerically with scipy, and against the exact power of
the score test over every discordance table), on a comparison, a language gap or a comparison
with a stored run; a per-gate ``effect`` is checked at load and gives the design's power for
that gate's claim in the verdict."""

from __future__ import annotations

import json
import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from history_helpers import V1, script
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import GOLD, call_text, write_scripted_suite
from property_budget import examples
from scipy import optimize, stats

from pytest_sommelier import cli
from pytest_sommelier.core import power as power_module
from pytest_sommelier.core import proportions

METRIC = "full_call_exact_match"
ADAPTER = {key: call_text(GOLD[key]) for key in ("en-0", "en-1", "en-3", "he-0", "he-1", "he-3")}
ADAPTER["en-2"] = call_text({"name": "nope", "arguments": {}})
BASE = {"en-0": call_text(GOLD["en-0"]), "he-0": call_text(GOLD["he-0"])}
SCRIPT = {"adapter": ADAPTER, "base": BASE}
NI = {"name": "kept", "candidate": "adapter", "reference": "base", "metric": METRIC,
      "ci_lower_at_least": -0.1}  # fmt: skip
UPLIFT = {"name": "uplift", "candidate": "adapter", "reference": "base", "metric": METRIC,
          "ci_lower_above": 0.0, "effect": 0.3}  # fmt: skip
GAP = {"name": "he-gap", "arm": "adapter", "gap": "he", "metric": METRIC,
       "ci_lower_at_least": -0.5}  # fmt: skip
EQUIVALENT = {"name": "same", "candidate": "adapter", "reference": "base", "metric": METRIC,
              "ci_lower_at_least": -0.4, "ci_upper_at_most": 0.9}  # fmt: skip
Z = NormalDist().inv_cdf(0.975)
Z_BETA = NormalDist().inv_cdf(0.8)


def wilson_upper(discordant: int, pairs: int, level: float = 0.8) -> float:
    z = NormalDist().inv_cdf(level)
    p = discordant / pairs
    centre = p + z * z / (2 * pairs)
    half = z * math.sqrt(p * (1 - p) / pairs + z * z / (4 * pairs * pairs))
    return (centre + half) / (1 + z * z / pairs)


def null_variance_numerically(delta: float, psi: float, margin: float) -> float:
    """The score test's null variance at the constrained ML estimate, found by maximising the
    expected multinomial log-likelihood under ``p12 - p21 = margin`` with scipy (Nam 1997 sec.
    2: the restricted MLE of the nuisance parameter)."""
    p12, p21 = (psi + delta) / 2, (psi - delta) / 2

    def minus_loglik(q21: float) -> float:
        q12 = q21 + margin
        rest = 1 - q12 - q21
        if q12 <= 0 or q21 <= 0 or rest <= 0:
            return math.inf
        return -(p12 * math.log(q12) + p21 * math.log(q21) + (1 - psi) * math.log(rest))

    low = max(1e-12, -margin + 1e-12)
    found = optimize.minimize_scalar(minus_loglik, bounds=(low, (1 - margin) / 2 - 1e-12),
                                     method="bounded", options={"xatol": 1e-13})  # fmt: skip
    q21 = float(found.x)
    return 2 * q21 + margin - margin**2


def nam_pairs(margin: float, psi: float, delta: float = 0.0, power: float = 0.8) -> float:
    z_beta = NormalDist().inv_cdf(power)
    sigma0 = math.sqrt(null_variance_numerically(delta, psi, margin))
    return (Z * sigma0 + z_beta * math.sqrt(psi - delta**2)) ** 2 / (delta - margin) ** 2


@settings(max_examples=examples(60), deadline=None)
@given(st.floats(0.05, 0.9), st.floats(0.01, 0.3), st.floats(-0.5, 0.5))
def test_nams_size_matches_the_constrained_likelihood(psi: float, margin: float,
                                                      shift: float) -> None:  # fmt: skip
    delta = shift * psi / 2  # inside the discordance, above the (negative) margin
    if delta <= -margin:
        return
    ours = power_module.margin_pairs(-margin, psi, difference=delta)
    assert ours == pytest.approx(nam_pairs(-margin, psi, delta), rel=1e-6)
    # an upper margin is the mirror image
    mirrored = power_module.margin_pairs(margin, psi, difference=-delta, side="upper")
    assert mirrored == pytest.approx(ours, rel=1e-9)


def test_at_a_zero_margin_nam_is_connor() -> None:
    assert power_module.margin_pairs(0.0, 0.2, difference=0.1) == pytest.approx(
        power_module.connor_pairs(0.1, 0.2), rel=1e-12)  # fmt: skip


@pytest.mark.parametrize("psi,margin", [(0.2, 0.05), (0.4, 0.1), (0.1, 0.05)])
def test_the_score_test_at_nams_size_has_the_promised_power(psi: float, margin: float) -> None:
    """Exact power of the one-sided 2.5% score test (Tango's lower bound >= -margin) at the
    true difference 0, summed over every discordance table of Nam's n pairs."""
    n = math.ceil(power_module.margin_pairs(-margin, psi))
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    b, c = b[keep].astype(float), c[keep].astype(float)
    probability = stats.multinomial.pmf(np.stack([b, c, n - b - c], axis=1), n,
                                        [psi / 2, psi / 2, 1 - psi])  # fmt: skip
    statistic = proportions._tango_statistic(np.full_like(b, -margin), b, c, np.full_like(b, n))
    exact = float(probability[statistic >= Z].sum())
    assert 0.78 <= exact <= 0.84, (n, exact)


def run_pilot(pytester: pytest.Pytester, gates: list[dict], *args: str,
              **statistics: Any) -> None:  # fmt: skip
    write_scripted_suite(pytester, SCRIPT, gates=gates, statistics=statistics)
    pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    assert (pytester.path / "out" / "suite.resolved.json").is_file()


def plan_json(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], *args: str) -> list:
    capsys.readouterr()
    assert cli.main(["plan", str(pytester.path / "out"), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def t_sized(pairs: int, z_pairs: float) -> bool:
    """A plan's size is the z formula's, re-read at the main run's t quantile (issue 38): at
    least the z size, and within what t on that many pairs less one adds."""
    return math.ceil(z_pairs - 1e-9) <= pairs <= math.ceil(1.3 * z_pairs) + 2


def test_plan_sizes_each_gate_as_it_is_judged(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    run_pilot(pytester, [NI, UPLIFT, GAP, EQUIVALENT], cluster="example")
    rows = plan_json(pytester, capsys, "--effect", "0.3")
    gates = {row["gate"]: row for row in rows if "gate" in row}
    assert set(gates) == {"kept", "uplift", "he-gap", "same"}
    psi = wilson_upper(4, 7)  # overall: 4 only-adapter pairs of 7
    kept = gates["kept"]
    assert (kept["design"], kept["formula"]) == ("non-inferiority", "nam_1997_score")
    assert kept["difference"] == 0.0 and kept["limits"] == [["lower", -0.1]]
    assert t_sized(kept["pairs_needed"], nam_pairs(-0.1, psi))
    uplift = gates["uplift"]
    assert (uplift["design"], uplift["formula"]) == ("superiority", "connor_1987")
    connor = (Z * math.sqrt(psi) + Z_BETA * math.sqrt(psi - 0.09)) ** 2 / 0.09
    assert t_sized(uplift["pairs_needed"], connor)
    same = gates["same"]  # both one-sided sizes at power 0.9, the larger
    assert same["formula"] == "nam_1997_score_tost"
    assert t_sized(same["pairs_needed"], max(nam_pairs(-0.4, psi, power=0.9),
                                             nam_pairs(-0.9, psi, power=0.9)))  # fmt: skip
    gap = gates["he-gap"]  # the adapter's Hebrew gap: 3 pairs, none discordant (floored)
    assert gap["comparison"] == "adapter gap he" and gap["slice"] == "he"
    assert gap["pilot_pairs"] == 3 and gap["pilot_too_small"] is True
    # no discordant pair: the discordance is floored at 1/3, above the upper limit 0.191
    assert gap["planning_discordance"] == pytest.approx(1 / 3)
    assert t_sized(gap["pairs_needed"], nam_pairs(-0.5, 1 / 3))
    # the text: each gate's claim, its formula, the small pilot marked and named
    assert cli.main(["plan", str(pytester.path / "out"), "--effect", "0.3"]) == 0
    text = capsys.readouterr().out
    assert "non-inferiority at -0.1, true difference +0.000" in text
    assert "Nam 1997 score test" in text and "superiority, Connor 1987" in text
    assert f"{gap['pairs_needed']}*" in text
    assert "* pilot too small to estimate the discordance in kept, uplift, he-gap, same" in text


def test_plan_sizes_a_comparison_with_a_stored_run(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    write_scripted_suite(pytester, script(V1))
    pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "one", "--sommelier-autosave")
    stored = {"name": "held", "arm": "adapter", "stored": "last", "metric": METRIC,
              "ci_lower_at_least": -0.2}  # fmt: skip
    run_pilot(pytester, [stored])
    store = ["--store", str(pytester.path / ".sommelier")]
    rows = plan_json(pytester, capsys, "--comparison", "adapter-vs-adapter@last", *store)
    assert {row["comparison"] for row in rows} == {"adapter-vs-adapter@last"}
    plain = {row["slice"]: row for row in rows if "gate" not in row}
    assert set(plain) == {"overall", "en", "he"}
    assert plain["overall"]["pilot_pairs"] == 7 and plain["overall"]["formula"] == "connor_1987"
    held = next(row for row in rows if row.get("gate") == "held")
    assert held["design"] == "non-inferiority" and held["pairs_needed"] is not None
    # a stored run that does not exist is one line naming the option
    code = cli.main(["plan", str(pytester.path / "out"), "--comparison",
                     "adapter-vs-adapter@9", *store])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "SOM-PLAN-COMPARISON" in err and len(err.strip().splitlines()) == 1


def test_a_gates_effect_gives_the_designs_power_in_the_verdict(pytester: pytest.Pytester) -> None:
    run_pilot(pytester, [UPLIFT, {**NI, "effect": 0.05}], cluster="example")
    verdict = json.loads((pytester.path / "out" / "gate_verdict.json").read_text())
    gates = {g["name"]: g for g in verdict["gates"]}
    uplift = gates["uplift"]["interval"]
    # Connor's power at 7 pairs, discordance 4/7, for a difference of 0.3
    psi = 4 / 7
    expected = NormalDist().cdf((math.sqrt(7) * 0.3 - Z * math.sqrt(psi)) / math.sqrt(psi - 0.09))
    assert uplift["effect"] == 0.3 and uplift["power_at_effect"] == pytest.approx(expected)
    kept = gates["kept"]["interval"]  # Nam's power at a true difference of +0.05
    sigma0 = math.sqrt(null_variance_numerically(0.05, psi, -0.1))
    expected = NormalDist().cdf((math.sqrt(7) * 0.15 - Z * sigma0) / math.sqrt(psi - 0.0025))
    assert kept["power_at_effect"] == pytest.approx(expected, rel=1e-6)
    result_text = (pytester.path / "out" / "report.html").read_text(encoding="utf-8")
    assert "the design&#39;s power for this claim at a difference of 0.3" in result_text or (
        "the design's power for this claim at a difference of 0.3" in result_text)


@pytest.mark.parametrize(
    "gate,message",
    [
        ({**NI, "effect": float("nan")}, "key 'gates.effect' = nan is not a finite number"),
        ({**NI, "effect": 2.0}, "key 'gates.effect' = 2.0 is outside [0.0001, 1]"),
        ({"name": "a", "arm": "adapter", "metric": METRIC, "min": 0.1, "effect": 0.1},
         "key 'gates.effect' is for a gate on an interval bound of a rate metric"),
        ({**NI, "metric": "argument_f1", "effect": 0.1},
         "key 'gates.effect' is for a gate on an interval bound of a rate metric"),
    ],
)
def test_a_bad_gate_effect_is_one_line_naming_the_key(
    pytester: pytest.Pytester, gate: dict, message: str
) -> None:
    write_scripted_suite(pytester, SCRIPT, gates=[gate])
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret != 0
    text = result.stdout.str() + result.stderr.str()
    lines = [line for line in text.splitlines() if "SOM-SUITE-INVALID-VALUE" in line]
    assert lines and message in lines[0] and "[[gates]] #1" in lines[0], text
    assert "Traceback" not in text
    assert not (pytester.path / "out" / "eval").exists()


# --- hostile inputs for the new surfaces ------------------------------------------------------

HOSTILE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.text(max_size=6),
)


@settings(max_examples=examples(120), deadline=None)
@given(HOSTILE)
def test_a_gate_effect_is_a_finite_size_or_one_line_naming_the_key(value: object) -> None:
    import tempfile
    from pathlib import Path

    from suite_factory import write_suite

    from pytest_sommelier.data.suite import load_suite
    from pytest_sommelier.errors import InputError

    ok = (isinstance(value, int | float) and not isinstance(value, bool)
          and math.isfinite(value) and 1e-4 <= abs(value) <= 1)  # fmt: skip
    gate = {"name": "kept", "candidate": "adapter", "reference": "base", "metric": METRIC,
            "ci_lower_at_least": -0.1, "effect": value}  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = write_suite(Path(folder) / "suite", gates=[gate])
        try:
            suite = load_suite(path)
        except InputError as error:
            assert not ok, error
            text = str(error)
            assert "\n" not in text and "effect" in text and "[[gates]] #1" in text
        else:
            assert ok
            assert suite.gates[0].effect == pytest.approx(abs(float(value)))  # type: ignore[arg-type]


@settings(max_examples=examples(150), deadline=None)
@given(st.text(max_size=30))
def test_a_plan_comparison_name_is_a_stored_run_or_not_one(text: str) -> None:
    """``--comparison`` with any text: not ``ARM-vs-ARM@SPEC`` is left to the comparison check;
    a stored-run name against a store that lacks it is one ``SOM-PLAN-COMPARISON`` line."""
    import tempfile
    from pathlib import Path
    from types import SimpleNamespace

    from pytest_sommelier.commands.plan import STORED_COMPARISON, _stored_comparisons
    from pytest_sommelier.errors import InputError

    with tempfile.TemporaryDirectory() as folder:
        suite = SimpleNamespace(name="s")
        try:
            found = _stored_comparisons(Path(folder), suite, text, Path(folder) / "store")
        except InputError as error:
            assert STORED_COMPARISON.match(text) is not None
            assert error.code == "SOM-PLAN-COMPARISON" and "\n" not in str(error).strip("\n")
        else:
            assert found == {} and STORED_COMPARISON.match(text) is None


@settings(max_examples=examples(80), deadline=None)
@given(HOSTILE)
def test_a_resolved_gates_effect_is_checked_when_read_back(value: object) -> None:
    """A run's ``suite.resolved.json`` edited to hold any ``effect``: read back as recorded
    when it is a size in bounds, else one ``SOM-STORED-FIELD`` line naming the gate's key."""
    from pathlib import Path

    from pytest_sommelier.data.store.stored import suite_from_resolved
    from pytest_sommelier.errors import InputError

    resolved = {"name": "s", "slices": ["en"], "arms": {"base": {}, "adapter": {}},
                "comparisons": [{"candidate": "adapter", "reference": "base"}],
                "statistics": {"seed": 1, "resamples": 200, "confidence_level": 0.95},
                "decoding": {}, "gates": [{**NI, "kind": "comparison", "slice": "overall",
                                           "arm": None, "gap": None, "min": None, "max": None,
                                           "ci_lower_above": None, "delta_at_least": None,
                                           "effect": value}]}  # fmt: skip
    ok = (isinstance(value, int | float) and not isinstance(value, bool)
          and math.isfinite(value) and 1e-4 <= abs(value) <= 1)  # fmt: skip
    try:
        suite = suite_from_resolved(resolved, Path("run"))
    except InputError as error:
        assert not ok
        assert error.code == "SOM-STORED-FIELD" and "gates[0].effect" in str(error)
        assert "\n" not in str(error)
    else:
        assert ok and suite.gates[0].effect == value


@settings(max_examples=examples(200), deadline=None)
@given(st.floats(0.05, 0.9), st.floats(0.01, 0.3), st.floats(0.5, 0.99), st.floats(1.0, 3.0))
def test_nams_power_inverts_its_size(psi: float, margin: float, power: float,
                                     deff: float) -> None:  # fmt: skip
    """At Nam's size the power is the power asked for; more pairs never lose power; the plan
    of an equivalence gate needs at least what either of its sides needs."""
    pairs = power_module.margin_pairs(-margin, psi, power=power)
    assert pairs is not None
    at = power_module.margin_power(-margin, pairs * deff, psi, design_effect=deff)
    assert at == pytest.approx(power, abs=1e-9)
    more = power_module.margin_power(-margin, pairs * deff * 1.5, psi, design_effect=deff)
    assert more is not None and more >= at - 1e-12
    plan = power_module.plan(0.03, int(psi * 200) // 2, int(psi * 200) // 2, 200,
                             limits=(("lower", -margin), ("upper", margin)))  # fmt: skip
    one = power_module.plan(0.03, int(psi * 200) // 2, int(psi * 200) // 2, 200,
                            limits=(("lower", -margin),))  # fmt: skip
    if plan["pairs_needed"] is not None and one["pairs_needed"] is not None:
        assert plan["pairs_needed"] >= one["pairs_needed"]
