"""Security (issue 7, item 4): one test per row of docs/hardening.md, "Security".

- Weights load from safetensors only: pickle files are never unpickled, even beside
  safetensors, and a pickle-only model or adapter is refused before anything is read.
- Remote code stays off: every ``from_pretrained`` call of a real session is recorded and none
  passes ``trust_remote_code=True``; custom code shipped in a model folder never runs.
- An adapter folder with a symlink leading outside it is refused.
- Relative paths in a suite cannot escape the suite's folder (``../x``, ``a/../../x``,
  ``pkg:`` with ``..``); a symlink inside the folder may point anywhere (a deliberate act, like
  an absolute path), and the content it points to is what the suite's identity digests.
- Names read back from a stored run never become paths outside the run or ``--out`` folder.
- Tokens and other secrets in the environment never reach an artifact or the terminal.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import GOLD, call_text, tiny_suite, write_scripted_suite
from suite_factory import make_row, write_split, write_suite

from pytest_sommelier.cli import main
from pytest_sommelier.data.suite.load import load_suite, suite_identity
from pytest_sommelier.errors import InputError

SCRIPT = {"adapter": {k: call_text(v) for k, v in GOLD.items()}, "base": {}}
SECRETS = {
    "HF_TOKEN": "hf_secret123",
    "HUGGING_FACE_HUB_TOKEN": "hf_hubsecret456",
    "OPENAI_API_KEY": "sk-secret789",
    "AWS_SECRET_ACCESS_KEY": "aws/Secret+012",
}


# ----------------------------------------------------------------------------- tiny model


class Trap:
    """Unpickling this creates ``marker`` (what a malicious checkpoint would do, harmlessly)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (open, (str(self.marker), "w"))


def booby_trap(path: Path, marker: Path) -> None:
    path.write_bytes(pickle.dumps(Trap(marker)))


def session(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--sommelier-out", "out", *args)
    return result, result.stdout.str() + "\n" + result.stderr.str()


@pytest.fixture
def torch_load_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ``torch.load`` call (the pickle entry point of torch) is recorded and refused."""
    import torch

    calls: list[Any] = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        raise AssertionError("torch.load must never be called")

    monkeypatch.setattr(torch, "load", refused)
    return calls


# ============================================================================ safetensors only


@pytest.mark.slow
def test_X01_pickles_beside_safetensors_are_never_unpickled(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], torch_load_calls: list[Any]
) -> None:
    suite = tiny_suite(pytester, tiny)
    marker = pytester.path / "UNPICKLED"
    booby_trap(suite.parent / "model" / "pytorch_model.bin", marker)
    booby_trap(suite.parent / "adapter" / "adapter_model.bin", marker)
    result, text = session(pytester)
    assert result.ret == 0, text
    assert not marker.exists()
    assert torch_load_calls == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("folder", "weights", "code", "fragment"),
    [
        (
            "model",
            "model.safetensors",
            "SOM-BACKEND-NO-SAFETENSORS",
            "found pickle-based pytorch_model.bin); pickle-based checkpoints are refused",
        ),
        (
            "adapter",
            "adapter_model.safetensors",
            "SOM-BACKEND-ADAPTER-PICKLE",
            "found pickle-based adapter_model.bin; pickle-based adapters are refused",
        ),
    ],
    ids=["X02-pickle-only-model", "X03-pickle-only-adapter"],
)
def test_pickle_only_weights_are_refused_unread(
    pytester: pytest.Pytester,
    tiny: tuple[Path, Path],
    torch_load_calls: list[Any],
    folder: str,
    weights: str,
    code: str,
    fragment: str,
) -> None:
    suite = tiny_suite(pytester, tiny)
    marker = pytester.path / "UNPICKLED"
    (suite.parent / folder / weights).unlink()
    name = "pytorch_model.bin" if folder == "model" else "adapter_model.bin"
    booby_trap(suite.parent / folder / name, marker)
    result, text = session(pytester)
    assert result.ret != 0
    line = next(x for x in text.splitlines() if code in x)
    assert fragment in line
    assert "Traceback" not in text
    assert not marker.exists() and torch_load_calls == []
    verdict = json.loads((pytester.path / "out" / "gate_verdict.json").read_text())
    assert verdict["verdict"] == "incomplete"


# ============================================================================ remote code


REMOTE_CODE = """
import pathlib
pathlib.Path(__file__).with_name("REMOTE_CODE_RAN").write_text("ran")
from transformers import LlamaForCausalLM as EvilModel  # noqa: E402
"""


@pytest.mark.slow
def test_X04_remote_code_stays_off(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every from_pretrained of a real session (model, tokenizer, config, adapter) is recorded:
    none enables remote code, and code a model folder asks to run (auto_map) never runs."""
    import peft
    import transformers

    suite = tiny_suite(pytester, tiny)
    model_dir = suite.parent / "model"
    (model_dir / "modeling_evil.py").write_text(REMOTE_CODE)
    config = json.loads((model_dir / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilModel"}
    (model_dir / "config.json").write_text(json.dumps(config))
    recorded: list[tuple[str, dict[str, Any]]] = []
    targets = [
        (transformers.AutoModelForCausalLM, "from_pretrained"),
        (transformers.AutoTokenizer, "from_pretrained"),
        (transformers.AutoConfig, "from_pretrained"),
        (peft.PeftModel, "from_pretrained"),
    ]  # entry points only: a base class's classmethod cannot be wrapped for its subclasses
    for owner, name in targets:
        original = getattr(owner, name)

        def recording(*args: Any, _original: Any = original, _label: str = owner.__name__,
                      **kwargs: Any) -> Any:  # fmt: skip
            recorded.append((_label, dict(kwargs)))
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, recording)
    result, text = session(pytester)
    assert result.ret == 0, text
    labels = {label for label, _ in recorded}
    assert {"AutoModelForCausalLM", "AutoTokenizer", "PeftModel"} <= labels, labels
    assert all(kwargs.get("trust_remote_code") is not True for _, kwargs in recorded), recorded
    assert not (model_dir / "REMOTE_CODE_RAN").exists()


# ============================================================================ adapter symlinks


@pytest.mark.slow
@pytest.mark.parametrize("linked", ["adapter_model.safetensors", "adapter_config.json"])
def test_X05_adapter_symlink_leading_outside_is_refused(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], linked: str
) -> None:
    suite = tiny_suite(pytester, tiny)
    outside = pytester.path / "elsewhere"
    outside.mkdir()
    shutil.move(suite.parent / "adapter" / linked, outside / linked)
    (suite.parent / "adapter" / linked).symlink_to(outside / linked)
    result, text = session(pytester)
    assert result.ret != 0
    line = next(x for x in text.splitlines() if "SOM-BACKEND-ADAPTER" in x)
    assert "symlink" in line and linked in line
    assert "Traceback" not in text


@pytest.mark.slow
def test_X06_adapter_symlink_inside_the_folder_is_allowed(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    suite = tiny_suite(pytester, tiny)
    adapter = suite.parent / "adapter"
    (adapter / "weights").mkdir()
    shutil.move(adapter / "adapter_model.safetensors", adapter / "weights" / "w.safetensors")
    (adapter / "adapter_model.safetensors").symlink_to(Path("weights") / "w.safetensors")
    result, text = session(pytester)
    assert result.ret == 0, text


# ============================================================================ suite paths


@pytest.mark.parametrize(
    "value", ["../x", "a/../../x", "./../x", "adapter/../../x", "../suite/../x"]
)
@pytest.mark.parametrize(
    ("table", "key"),
    [("model", "base"), ("arms", "adapter"), ("suite", "test_split")],
    ids=["model.base", "arms.adapter", "suite.test_split"],
)
def test_X07_relative_paths_leave_the_suite_folder_only_for_models_and_adapters(
    tmp_path: Path, value: str, table: str, key: str
) -> None:
    """A model or adapter path is relative to the suite file and may leave its folder (where
    training put the checkpoint), resolved lexically and identified by digest; the split, the
    suite's own data, may not."""
    (tmp_path / "x").mkdir()
    write_split(tmp_path / "x" / "test.jsonl", [make_row("en-0", "en")])
    overrides: dict[str, Any] = {
        "model": {"model": {"base": value, "revision": None}},
        "arms": {"arms": {"base": {}, "adapter": {"adapter": value}}},
        "suite": {"suite": {"test_split": value}},
    }[table]
    suite = write_suite(tmp_path / "suite", **overrides)
    if table == "suite":
        with pytest.raises(InputError) as info:
            load_suite(suite)
        assert info.value.code == "SOM-SUITE-PATH-ESCAPE"
        assert "leaves the suite folder" in str(info.value)
        return
    loaded = load_suite(suite)
    resolved = loaded.model.base if table == "model" else loaded.arms["adapter"].adapter
    assert resolved == str(tmp_path / "x")
    assert str(tmp_path) not in json.dumps(suite_identity(loaded))


def test_X08_pkg_reference_cannot_leave_its_package(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, model={"base": "pkg:pytest_sommelier/../x", "revision": None})
    with pytest.raises(InputError) as info:
        load_suite(suite)
    assert info.value.code == "SOM-MODELREF-PKG-ESCAPE"


def test_X09_symlink_inside_the_folder_is_followed_and_digested(tmp_path: Path) -> None:
    """Decision: a symlink inside the suite folder may point anywhere (placing it is as
    deliberate as writing an absolute path); what it points to is what the identity digests, so
    swapping the target's content changes the suite's conditions."""
    outside = tmp_path / "shared" / "adapter-v1"
    outside.mkdir(parents=True)
    (outside / "adapter_config.json").write_text('{"r": 4}')
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "v1").symlink_to(outside, target_is_directory=True)
    suite_file = write_suite(folder, arms={"base": {}, "v1": {"adapter": "v1"}}, comparisons=None)
    before = suite_identity(load_suite(suite_file))["arms"]["v1"]["adapter"]
    (outside / "adapter_config.json").write_text('{"r": 8}')
    after = suite_identity(load_suite(suite_file))["arms"]["v1"]["adapter"]
    assert before["kind"] == after["kind"] == "local"
    assert before["sha256"] != after["sha256"]
    assert str(tmp_path) not in json.dumps(after)


# ============================================================================ stored-run names


@pytest.fixture
def stored_run(pytester: pytest.Pytester) -> Path:
    write_scripted_suite(pytester, SCRIPT)
    result, _ = session(pytester)
    assert result.ret == 0
    return pytester.path / "out"


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


def test_X10_compare_never_writes_outside_its_out_folder(
    pytester: pytest.Pytester, stored_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = stored_run / "eval" / "adapter" / "evaluation_report.json"
    data = json.loads(report.read_text())
    data["arm"] = "../../escaped"
    report.write_text(json.dumps(data))
    before = files_under(pytester.path)
    out = pytester.path / "deep" / "er" / "cmp"
    status = main(
        ["compare", str(report.parent), str(stored_run / "eval" / "base"), "--out", str(out)]
    )
    written = files_under(pytester.path) - before
    assert all(out in p.parents for p in written), sorted(map(str, written))
    assert status != 0 and "SOM-" in capsys.readouterr().err


def test_X11_rescore_never_writes_outside_its_folders(
    pytester: pytest.Pytester, stored_run: Path
) -> None:
    """A crafted run (split copy, resolved suite and reports agreeing on a slice whose name
    climbs out of the run folder) is refused before anything is read or written."""
    import hashlib

    run = stored_run
    evil = "x/../../../../escaped"  # from eval/<arm>/generations.x: up to the run's parent
    split = run / "inputs" / "test_split.jsonl"
    rows = [json.loads(line) for line in split.read_text().splitlines()]
    for row in rows:
        row["language"] = evil if row["language"] == "he" else row["language"]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    split.write_text(text)
    resolved = json.loads((run / "suite.resolved.json").read_text())
    resolved["slices"] = ["en", evil]
    resolved["test_split"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (run / "suite.resolved.json").write_text(json.dumps(resolved))
    for arm in ("base", "adapter"):
        report_path = run / "eval" / arm / "evaluation_report.json"
        report = json.loads(report_path.read_text())
        report["slices"][evil] = report["slices"].pop("he")
        report_path.write_text(json.dumps(report))
        (run / "eval" / arm / "generations.x").mkdir()
        records = [json.loads(x) for x in (run / "eval" / arm / "generations.he.jsonl").open()]
        for record in records:
            record["language"] = evil
        target = Path(os.path.normpath(run / "eval" / arm / f"generations.{evil}.jsonl"))
        target.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = pytester.path / "again" / "deeper" / "x"
    before = {p: p.read_bytes() for p in files_under(pytester.path)}
    status = main(["rescore", str(run), "--out", str(out)])
    changed = {p for p in files_under(pytester.path) if before.get(p) != p.read_bytes()}
    assert all(out in p.parents for p in changed), sorted(map(str, changed))
    assert status != 0


# ============================================================================ secrets


def all_text(folder: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()
    )


def assert_no_secrets(*texts: str) -> None:
    for text in texts:
        for name, value in SECRETS.items():
            assert value not in text, f"{name}'s value leaked"
            assert name not in text, f"{name} named in the output"


@pytest.mark.slow
def test_X12_secrets_never_reach_artifacts_or_the_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    write_scripted_suite(
        pytester,
        SCRIPT,
        gates=[{"name": "g", "arm": "adapter", "metric": "argument_f1", "min": 0.5}],
    )
    cache = pytester.path / "gencache"
    serial = pytester.runpytest(
        "-p", "no:cacheprovider", "--sommelier-out", "out", "--sommelier-cache-dir", str(cache),
        "-rA", "-v",
    )  # fmt: skip
    assert serial.ret == 0
    xdist = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--sommelier-out", "par", "-n", "2", "--sommelier-no-cache",
        timeout=180,
    )  # fmt: skip
    assert xdist.ret == 0
    assert main(["rescore", str(pytester.path / "out"), "--out", str(pytester.path / "re")]) == 0
    assert main(["compare", "out/eval/adapter", "out/eval/base", "--out", "cmp"]) == 0
    captured = capsys.readouterr()
    assert_no_secrets(
        serial.stdout.str(), serial.stderr.str(), xdist.stdout.str(), xdist.stderr.str(),
        captured.out, captured.err, all_text(pytester.path),
    )  # fmt: skip
    assert (pytester.path / "out" / "gate_verdict.json").exists() and list(cache.rglob("*.json"))


@pytest.mark.slow
def test_X13_secrets_never_reach_artifacts_through_the_real_backend(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    tiny_suite(pytester, tiny)
    result, text = session(pytester, "-rA")
    assert result.ret == 0, text
    assert_no_secrets(text, all_text(pytester.path / "out"))


def test_secret_check_can_fail() -> None:
    with pytest.raises(AssertionError):
        assert_no_secrets("token=" + SECRETS["HF_TOKEN"])
    with pytest.raises(AssertionError):
        assert_no_secrets("env: OPENAI_API_KEY")
