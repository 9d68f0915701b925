"""The one guarded model call (``inference.model_call.ModelCall``): the fixture path
(``plugin.runner``) and ``sommelier parity`` check what a model returns the same way and end in
the same ``SOM-GEN-*`` line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples
from suite_factory import default_rows, write_split

from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.types import Completion
from pytest_sommelier.data.split import load_split
from pytest_sommelier.errors import EvaluationError, InvariantError
from pytest_sommelier.inference import parity
from pytest_sommelier.inference.model_call import ModelCall
from pytest_sommelier.plugin.runner import Runner

DECODING = {"temperature": 0.0, "do_sample": False, "max_new_tokens": 8, "batch_size": 5}


class Scripted:
    """A generator whose ``generate`` returns ``outputs`` whatever the prompts."""

    adapter_identity = None

    def __init__(self, outputs: Any) -> None:
        self.outputs = outputs
        self.model_identity = {"name": "scripted"}

    def generate(self, prompts: list[str], decoding: dict) -> Any:
        if isinstance(self.outputs, BaseException):
            raise self.outputs
        return self.outputs


def parity_error(tmp_path: Path, outputs: Any) -> Exception | None:
    """What ``sommelier parity``'s generation of one arm raises for ``outputs`` (None: fine)."""
    split = load_split(write_split(tmp_path / "split.jsonl", default_rows()), ["en", "he"])
    by_id = {
        e.example_id: {"prompt_sha256": sha256_text(e.prompt_text), "raw_text": "x",
                       "parse_status": "no_json", "parsed_call": None}
        for e in split.examples
    }  # fmt: skip
    chosen = set(by_id)
    try:
        parity._arm_parity("base", Scripted(outputs), split, by_id, chosen, DECODING, 5,
                           "arguments")  # fmt: skip
    except (InvariantError, EvaluationError) as error:
        return error
    return None


def session_error(outputs: Any, prompts: int) -> Exception | None:
    """What the fixture path's call raises for the same outputs."""
    try:
        Runner()._call(Scripted(outputs), "base", ["p"] * prompts, dict(DECODING))
    except (InvariantError, EvaluationError) as error:
        return error
    return None


@pytest.mark.parametrize(
    ("outputs", "code"),
    [
        (["a", "b"], "SOM-GEN-COUNT"),  # too few for the three English prompts
        (None, "SOM-GEN-COUNT"),
        ([None, "b", "c"], "SOM-GEN-TYPE"),
        ([Completion("a", "sideways", 1), "b", "c"], "SOM-GEN-TYPE"),
        (["\ud800", "b", "c"], "SOM-GEN-TYPE"),
        (RuntimeError("CUDA out of memory"), "SOM-MODEL-ERROR"),
    ],
)
def test_parity_ends_in_the_same_line_as_a_session(
    tmp_path: Path, outputs: Any, code: str
) -> None:
    from_parity = parity_error(tmp_path, outputs)
    from_session = session_error(outputs, prompts=3)  # the first slice: en-0, en-1, en-2
    assert from_parity is not None and from_parity.code == code  # type: ignore[attr-defined]
    assert str(from_parity) == str(from_session)


def test_parity_counts_a_good_model_as_before(tmp_path: Path) -> None:
    split = load_split(write_split(tmp_path / "split.jsonl", default_rows()), ["en", "he"])
    by_id = {
        e.example_id: {"prompt_sha256": sha256_text(e.prompt_text), "raw_text": "same",
                       "parse_status": "no_json", "parsed_call": None}
        for e in split.examples
    }  # fmt: skip

    class Echo(Scripted):
        def generate(self, prompts: list[str], decoding: dict) -> Any:
            return ["same"] * len(prompts)

    row = parity._arm_parity("base", Echo(None), split, by_id, set(by_id), DECODING, 5,
                             "arguments")  # fmt: skip
    assert row["examples"] == 5 and row["identical_outputs"] == 5 and row["differing"] == []


OUTPUT = st.one_of(
    st.text(max_size=5),
    st.none(),
    st.integers(),
    st.builds(Completion, st.text(max_size=5), st.sampled_from(["stop", "length", "unknown",
                                                                 "odd"]),
              st.one_of(st.none(), st.integers(-2, 5))),
)  # fmt: skip


@settings(max_examples=examples(150), deadline=None)
@given(outputs=st.one_of(st.lists(OUTPUT, max_size=5), OUTPUT), prompts=st.integers(0, 4))
def test_every_output_is_a_completion_per_prompt_or_one_gen_line(
    outputs: Any, prompts: int
) -> None:
    call = ModelCall()
    try:
        completions = call(Scripted(outputs), "base", ["p"] * prompts, dict(DECODING))
    except InvariantError as error:
        assert error.code in {"SOM-GEN-COUNT", "SOM-GEN-TYPE"}
        assert "\n" not in str(error) and str(error) == str(session_error(outputs, prompts))
        return
    assert isinstance(outputs, list) and len(completions) == prompts == len(outputs)
    for output, completion in zip(outputs, completions, strict=True):
        assert isinstance(completion, Completion) and isinstance(completion.text, str)
        assert completion.text == (output if isinstance(output, str) else output.text)
        assert completion.finish_reason in {"stop", "length", "unknown"}


@pytest.mark.parametrize(
    ("completion", "ok"),
    [
        (Completion("{", "length", 3), False),  # 3 of 8 is no truncation
        (Completion("{", "stop", 10**9), False),  # more than max_new_tokens
        (Completion("{", "length", 8), True),
        (Completion("{", "stop", 3), True),
        (Completion("{", "length", None), True),  # no count: nothing to check
    ],
)
def test_a_finish_reason_must_fit_the_token_count(completion: Completion, ok: bool) -> None:
    """R52: finish_reason "length" with 3 generated tokens of max_new_tokens counted as
    truncated; "stop" with 1e9 tokens was recorded."""
    call = ModelCall()
    if ok:
        assert call(Scripted([completion]), "base", ["p"], dict(DECODING)) == [completion]
        return
    with pytest.raises(InvariantError) as caught:
        call(Scripted([completion]), "base", ["p"], dict(DECODING))
    assert caught.value.code == "SOM-GEN-TYPE"
    assert f"after {completion.generated_tokens} generated tokens" in str(caught.value)
    assert "max_new_tokens is 8" in str(caught.value)
