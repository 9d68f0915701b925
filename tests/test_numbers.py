"""The one parser of numbers, run numbers and true/false words (``pytest_sommelier.numbers``)
and where it is used: ``sommelier`` arguments, ``--sommelier-*`` options, compare-fail margins,
``stored`` in suite files. ASCII digits only, finite, in range; a true/false word is never read
where a name is meant. Hardening rows R01, R06, R12, R18-R20 (docs/hardening.md).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plugin_helpers import settings as built_settings
from plugin_helpers import write_scripted_suite
from property_budget import examples

from pytest_sommelier.cli import main
from pytest_sommelier.data.store.history_gate import parse_fail_spec
from pytest_sommelier.errors import InputError
from pytest_sommelier.numbers import bool_word, decimal_number, run_number, whole_number

EXAMPLES = 300  # max_examples of each generated property below (docs/hardening.md)

LOOKALIKES = ["²", "٢", "１", "1_0", "۳", "߃", "³", "Ⅻ", "0x1", "1e3", " ", "", "+", "-",
              "1.0", "nan", "inf", "1,5"]  # fmt: skip
"""Strings ``str.isdigit``, ``int()`` or ``float()`` accept (or nearly) that are no number."""


@settings(max_examples=examples(EXAMPLES))
@given(st.text(max_size=8))
def test_a_whole_number_is_ascii_digits_and_nothing_else(text: str) -> None:
    value = whole_number(text)
    stripped = text.strip()
    ascii_digits = stripped.lstrip("+-")
    expected = (
        bool(ascii_digits)
        and all("0" <= c <= "9" for c in ascii_digits)
        and len(stripped) - len(ascii_digits) <= 1
    )
    assert (value is not None) == expected, text
    if value is not None:
        assert value == int(stripped)


@settings(max_examples=examples(EXAMPLES))
@given(st.text(max_size=10))
def test_a_decimal_is_finite_ascii_or_none(text: str) -> None:
    value = decimal_number(text)
    if value is not None:
        assert math.isfinite(value)
        assert all(c.isascii() for c in text.strip())
        assert value == float(text.strip())


@settings(max_examples=examples(EXAMPLES))
@given(st.text(max_size=8))
def test_a_run_number_is_one_to_eight_ascii_digits(text: str) -> None:
    value = run_number(text)
    if value is not None:
        assert 1 <= value <= 99_999_999 and text.strip().isascii()


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_no_numbers(text: str) -> None:
    assert run_number(text) is None
    assert whole_number(text) is None or text in ("1e3",)
    if text not in ("1.0", "1e3"):
        assert decimal_number(text) is None


def test_true_false_words() -> None:
    assert [bool_word(w) for w in ("yes", " ON ", "0", "off")] == [True, True, False, False]
    assert bool_word("adapter") is None and bool_word(1) is None


# --- the broken row R01, as reported ------------------------------------------------------


@pytest.mark.parametrize("text", ["²", "٢", "１", "1_0"])
def test_sommelier_compare_refuses_a_lookalike_run_number(tmp_path, capsys, text: str) -> None:
    """R01: ``sommelier compare ² 1`` was a ValueError traceback, ``٢`` resolved run 0002."""
    (tmp_path / ".sommelier").mkdir()
    assert main(["compare", text, "1", "--store", str(tmp_path / ".sommelier")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "SOM-HISTORY-UNKNOWN" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("text", ["²", "٢", "１"])
def test_the_compare_option_refuses_a_lookalike_run_number(pytester, text: str) -> None:
    """R01: ``--sommelier-compare=²`` was accepted, then ``SOM-SESSION-FINISH``."""
    with pytest.raises(pytest.UsageError, match="SOM-OPTION-VALUE: --sommelier-compare"):
        built_settings(pytester, f"--sommelier-compare={text}")


@pytest.mark.parametrize("text", ["²", "٢", "１", "1_0", "0"])
def test_a_stored_gate_refuses_a_lookalike_run_number(pytester, text: str) -> None:
    """R01: ``stored = "²"`` was a traceback at collection; ``"٢"`` resolved run 0002."""
    gate = {"name": "kept", "arm": "adapter", "metric": "full_call_exact_match",
            "stored": text, "delta_at_least": -0.05}  # fmt: skip
    write_scripted_suite(pytester, {"base": {}, "adapter": {}}, gates=[gate])
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-no-cache")
    assert result.ret != 0
    out = result.stdout.str()
    assert "SOM-SUITE-GATE-STORED" in out and "Traceback" not in out, out


@pytest.mark.parametrize("option", ["--sommelier-misses", "--sommelier-selfcheck",
                                    "--sommelier-timeout"])  # fmt: skip
@pytest.mark.parametrize("text", ["１", "²", "1_0", "nan"])
def test_number_options_take_ascii_digits_only(pytester, option: str, text: str) -> None:
    with pytest.raises(pytest.UsageError, match=f"SOM-OPTION-VALUE: {option}"):
        built_settings(pytester, f"{option}={text}")


# --- compare-fail margins (R12) -------------------------------------------------------------


@pytest.mark.parametrize("margin", ["2", "70", "1", "1_0", "１", "0x1", "-0.1", "nan"])
def test_a_margin_that_could_never_fail_or_is_no_number_is_refused(margin: str) -> None:
    """R12: margins 2, 70, 1_0 (read as 10) and a full-width 1 made gates that never fail."""
    with pytest.raises(InputError, match="SOM-HISTORY-FAIL-SPEC"):
        parse_fail_spec(f"full_call_exact_match:{margin}")


@settings(max_examples=examples(EXAMPLES))
@given(st.text(max_size=6))
def test_any_margin_text_is_a_margin_below_one_or_one_line(text: str) -> None:
    try:
        spec = parse_fail_spec(f"full_call_exact_match:{text}")
    except InputError as error:
        assert "\n" not in str(error) and str(error).startswith("SOM-HISTORY-FAIL-SPEC")
        return
    assert 0 <= spec.margin < 1 and math.isfinite(spec.margin)
