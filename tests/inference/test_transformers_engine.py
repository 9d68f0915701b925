"""The transformers engine's device choice without torch (issue 40): a CPU-only torch build is
read from its ``version.py``, so a rerun the generation cache answers never imports torch.

The engine's generation on real (tiny) models is tests/inference/test_backend.py (slow)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from pytest_sommelier.inference import transformers_engine as engine

CPU_BUILD = (
    "from typing import Optional\n\n"
    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
    "__version__ = '2.13.0+cpu'\ndebug = False\ncuda: Optional[str] = None\n"
    "git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'\nhip: Optional[str] = None\n"
    "rocm: Optional[str] = None\nxpu: Optional[str] = None\n"
)


def test_a_cpu_build_s_version_file_says_no_gpu() -> None:
    assert engine.version_file_without_gpu(CPU_BUILD)
    assert engine.version_file_without_gpu("cuda = None\nhip = None\n")


@pytest.mark.parametrize(
    "text",
    [
        CPU_BUILD.replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.4'"),
        CPU_BUILD.replace("hip: Optional[str] = None", "hip: Optional[str] = '6.2.4'"),
        CPU_BUILD.replace("cuda: Optional[str] = None", ""),  # name missing
        CPU_BUILD.replace("cuda: Optional[str] = None", "cuda: Optional[str]"),  # no value
        CPU_BUILD + "if debug:\n    cuda = '12.4'\n",  # bound again in a block
        CPU_BUILD + "cuda = detect()\n",  # computed
        CPU_BUILD + "from elsewhere import hip\n",  # bound by an import
        CPU_BUILD + "cuda, other = None, None\n",  # unpacked
        "cuda = None\nhip = (\n",  # not Python
        "",
    ],
)
def test_anything_else_is_unsure(text: str) -> None:
    assert not engine.version_file_without_gpu(text)


VALUES = st.one_of(
    st.none(),
    st.text(max_size=8).map(repr),
    st.sampled_from(["None", "'12.4'", "detect()", "'None'", "0", "False"]),
)


@settings(max_examples=examples(100))
@given(cuda=VALUES, hip=VALUES)
def test_no_gpu_exactly_when_both_are_the_constant_none(cuda: str | None, hip: str | None) -> None:
    lines = [
        f"cuda = {cuda}" if cuda is not None else "",
        f"hip = {hip}" if hip is not None else "",
    ]
    expected = cuda == "None" and hip == "None"
    assert engine.version_file_without_gpu("\n".join(lines) + "\n") is expected


@settings(max_examples=examples(100))
@given(st.text(max_size=200))
def test_hostile_text_is_an_answer_never_an_error(text: str) -> None:
    assert engine.version_file_without_gpu(text) in (True, False)


def test_the_installed_torch_is_read_as_torch_itself_says() -> None:
    torch = pytest.importorskip("torch")
    expected = torch.version.cuda is None and getattr(torch.version, "hip", None) is None
    assert engine.torch_build_without_gpu() is expected


def test_cpu_is_chosen_and_described_without_importing_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With ``sys.modules["torch"] = None`` an ``import torch`` raises: nothing here imports."""
    if not engine.torch_build_without_gpu():
        pytest.skip("the installed torch has a GPU backend: torch decides")
    monkeypatch.setitem(sys.modules, "torch", None)
    assert engine.choose_device(None, 3) == "cpu"
    assert engine.choose_device("cpu", 0) == "cpu"
    assert engine.device_info("cpu") == {"device": "cpu", "device_count": 1}
    with pytest.raises(ImportError):  # anything else still asks torch
        engine.choose_device("cuda", 0)
