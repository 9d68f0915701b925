"""The engine registry and the generator protocol: every registered engine has a loader of the
one signature, importing the registry imports no engine, and the optional generator members
are read through one helper each."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier import Generator as PublicGenerator
from pytest_sommelier import registry as reg
from pytest_sommelier.core.types import ENGINE_NAMES, ArmConfig, EngineConfig, ModelConfig
from pytest_sommelier.errors import InputError
from pytest_sommelier.inference import protocol, select_engine
from pytest_sommelier.inference.protocol import (
    Generator,
    cache_identity_of,
    close_generator,
    device_info_of,
)

LOADER_PARAMETERS = [
    (name, parameter.kind, parameter.default)
    for name, parameter in inspect.signature(protocol.EngineLoader.__call__).parameters.items()
    if name != "self"
]


def test_the_registry_names_every_engine_the_suite_accepts() -> None:
    assert list(select_engine.ENGINES) == list(ENGINE_NAMES)


def test_the_suite_accepts_any_registered_engine_name() -> None:
    """The suite schema no longer lists the engines (an extension registers its own, through
    the ``sommelier.engines`` entry points or the ``pytest_sommelier_add_engines`` hook): it
    checks the name's shape, and the registry refuses an unknown name when the engine loads
    (``SOM-ENGINE-NAME``, test below)."""
    import json

    from pytest_sommelier.data.split.schema import SCHEMAS

    schema = json.loads((SCHEMAS / "suite.schema.json").read_text(encoding="utf-8"))
    name = schema["properties"]["engine"]["properties"]["name"]
    assert "enum" not in name and name["type"] == "string"
    assert list(select_engine.ENGINES) == list(reg.BUILTIN["engines"])


def test_an_unknown_engine_is_an_input_error_listing_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        select_engine.load_generators(
            EngineConfig(name="tgi"),
            ModelConfig("m", None, None, None),
            {"base": ArmConfig("base", None, None)},
            suite_dir=tmp_path,
        )
    assert caught.value.code == "SOM-ENGINE-NAME" and caught.value.where == "engine.name"
    assert all(name in caught.value.hint for name in select_engine.ENGINES)


@pytest.mark.slow
def test_importing_the_registry_and_the_protocol_imports_no_engine() -> None:
    code = (
        "import sys\n"
        "import pytest_sommelier.inference.select_engine, pytest_sommelier.inference.protocol\n"
        "heavy = {'torch', 'transformers', 'peft', 'vllm'} & set(sys.modules)\n"
        "names = [m for m in sys.modules if m.endswith(('_engine', '.engines'))]\n"
        "print(sorted(heavy), sorted(names))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] ['pytest_sommelier.inference.select_engine']"


# --------------------------------------------------------------------------- the protocol


class Minimal:
    """A user-written generator: the three required members only."""

    def __init__(self) -> None:
        self.model_identity: dict[str, Any] = {"fake": "minimal"}
        self.adapter_identity: dict[str, Any] | None = None

    def generate(self, prompts: list[str], decoding: dict[str, Any]) -> list[str]:
        return ["" for _ in prompts]


class Full(Minimal):
    """A generator with every optional member."""

    def __init__(self) -> None:
        super().__init__()
        self.cache_identity = {"server": "v2"}
        self.closed = 0

    def device_info(self) -> dict[str, Any]:
        return {"device": "cuda", "device_count": 2}

    def close(self) -> None:
        self.closed += 1


def test_a_generator_needs_only_the_three_required_members() -> None:
    assert isinstance(Minimal(), Generator) and PublicGenerator is Generator
    assert not isinstance(object(), Generator)
    assert device_info_of(Minimal()) is None
    assert cache_identity_of(Minimal()) is None
    close_generator(Minimal())  # nothing to close: no error


def test_the_optional_members_are_read_when_present() -> None:
    full = Full()
    assert device_info_of(full) == {"device": "cuda", "device_count": 2}
    assert cache_identity_of(full) == {"server": "v2"}
    close_generator(full)
    assert full.closed == 1


def test_a_non_callable_optional_method_is_absent() -> None:
    odd = Minimal()
    odd.device_info = None  # type: ignore[attr-defined]
    odd.close = "no"  # type: ignore[attr-defined]
    assert device_info_of(odd) is None
    close_generator(odd)


ANSWERS = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.sampled_from(["base", "adapter"]), max_size=3),
    st.dictionaries(
        st.one_of(st.sampled_from(["base", "adapter", "other", ""]), st.integers(0, 3)),
        st.sampled_from(["g1", "g2"]),
        max_size=4,
    ),
)
"""What an engine's loader may return: the arms' generators, or any other value."""


@settings(max_examples=examples(100))
@given(ANSWERS)
def test_a_loaders_answer_is_exactly_the_arms_or_one_contract_line(answer: Any) -> None:
    """``select_engine.checked_generators``, the one check of every engine's loader answer
    (built-in or extension): a mapping whose keys are exactly the arms, in the arms' order, or
    one ``SOM-ENGINE-CONTRACT`` line naming the engine."""
    arms = {"base": None, "adapter": None}
    try:
        got = select_engine.checked_generators("mine", answer, arms)
    except InputError as error:
        assert error.code == "SOM-ENGINE-CONTRACT" and "engine 'mine'" in str(error)
        assert "\n" not in str(error)
        assert not (isinstance(answer, dict) and set(answer) == set(arms))
    else:
        assert isinstance(answer, dict) and set(answer) == set(arms)
        assert list(got) == list(arms) and all(got[a] is answer[a] for a in arms)
