"""Small rules of ``inference.engines`` every engine shares: the stop-id list and the model
under a peft wrapper (the rest of the module is tested through the engines)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.inference.engines import stop_id_list, underlying_model


@settings(max_examples=examples(100))
@given(eos=st.none() | st.integers(0, 10**6) | st.lists(st.integers(0, 10**6), max_size=4))
def test_an_eos_token_id_is_a_list_of_ints_in_order(eos: Any) -> None:
    expected = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
    assert stop_id_list(eos) == expected
    assert stop_id_list(tuple(eos) if isinstance(eos, list) else eos) == expected


def test_the_model_under_a_peft_wrapper_else_the_model() -> None:
    class Inner:
        pass

    class Wrapper:
        def __init__(self, inner: Inner) -> None:
            self.inner = inner

        def get_base_model(self) -> Inner:
            return self.inner

    inner = Inner()
    assert underlying_model(Wrapper(inner)) is inner
    assert underlying_model(inner) is inner
