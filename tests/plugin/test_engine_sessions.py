"""Engines through real pytest sessions (pytester): the openai engine against the fault server,
bad ``[engine]`` input, the identity gate across engines, and identity before load (a fully
cached rerun loads no model). Rows E of docs/hardening.md."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes import NO_LOAD_CONFTEST
from plugin_helpers import read_json, tiny_suite
from suite_factory import to_toml

from pytest_sommelier.inference.transformers_engine import torch_build_without_gpu

sys.path.insert(0, str(Path(__file__).parents[1]))
from fault_server import FaultServer

pytestmark = pytest.mark.slow  # subprocess sessions on a tiny real model

pytest_plugins = ["pytester"]
# appended to a rerun's conftest: whether the session imported torch, written at its end
TORCH_RECORDER = (
    "import pathlib, sys\n"
    "def pytest_sessionfinish(session):\n"
    "    imported = str('torch' in sys.modules)\n"
    "    (pathlib.Path(__file__).parent / 'torch.txt').write_text(imported, encoding='utf-8')\n"
)
SECRET = "sk-test-0123456789-secret"


def openai_suite(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], url: str, **engine: Any
) -> Path:
    """The tiny two-arm suite with an ``[engine]`` table for ``url`` and served names."""
    return add_openai_engine(tiny_suite(pytester, tiny), url, **engine)


def add_openai_engine(suite: Path, url: str, **engine: Any) -> Path:
    """Give an existing suite file an openai ``[engine]`` table and served names."""
    table = {"name": "openai", "base_url": url, "max_retries": 1, "concurrency": 2, **engine}
    text = suite.read_text(encoding="utf-8")
    text = text.replace(
        "[model]\n", to_toml({"engine": table}) + '\n[model]\nserved_name = "smol"\n', 1
    )
    text = text.replace(
        '[arms.adapter]\nadapter = "adapter"\n',
        '[arms.adapter]\nadapter = "adapter"\nserved_name = "smol-lora"\n',
    )
    suite.write_text(text, encoding="utf-8")
    return suite


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-m", "eval", "-p", "no:cacheprovider", "--sommelier-out", "out", *args
    )


def artifacts_text(root: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8", errors="replace") for p in root.rglob("*") if p.is_file()
    )


def test_e01_openai_engine_session_records_the_server(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    with FaultServer(version="7.7") as server:
        openai_suite(pytester, tiny, server.url)
        result = run(pytester)
    assert result.ret == 0, result.stdout.str()[-3000:]
    out = pytester.path / "out"
    adapter = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    engine = adapter["model_identity"]["engine"]
    assert engine["name"] == "openai" and engine["server_version"] == "7.7"
    assert engine["served_models"] == ["smol", "smol-lora"]
    assert adapter["adapter_identity"]["served_name"] == "smol-lora"
    assert read_json(out / "report" / "adapter-vs-base.json")["identical_outputs"] == 0
    assert {b["model"] for b in server.completions()} == {"smol", "smol-lora"}
    assert server.url not in artifacts_text(out)


@pytest.mark.parametrize(
    ("faults", "code"),
    [
        (["500"] * 40, "SOM-OPENAI-RETRIES"),
        (["drop"] * 40, "SOM-OPENAI-RETRIES"),
        (["slow:5"] * 4, "SOM-OPENAI-TIMEOUT"),
        (["wrong-model"] * 40, "SOM-OPENAI-WRONG-MODEL"),
        (["garbage"] * 40, "SOM-OPENAI-RESPONSE"),
    ],
    ids=["500s", "dropped", "hung", "wrong-model", "garbage"],
)
def test_e02_server_faults_never_pass(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], faults: list[str], code: str
) -> None:
    with FaultServer(faults=faults) as server:
        openai_suite(pytester, tiny, server.url, request_timeout_s=0.5)
        result = run(pytester)
    text = result.stdout.str()
    assert result.ret != 0 and code in text and "Traceback" not in text
    assert "verdict: PASS" not in text
    verdict = pytester.path / "out" / "gate_verdict.json"
    assert not verdict.exists() or read_json(verdict)["verdict"] != "pass"


def test_e03_a_missing_served_name_is_one_clear_line(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    with FaultServer(models=["smol"]) as server:
        openai_suite(pytester, tiny, server.url)
        result = run(pytester)
    text = result.stdout.str()
    assert result.ret != 0 and "Traceback" not in text
    assert "SOM-OPENAI-MODEL-MISSING" in text and "'smol-lora' (arms.adapter.served_name)" in text
    assert server.completions() == []


def test_e04_the_api_key_never_reaches_output_or_artifacts(
    pytester: pytest.Pytester, tiny: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOMMELIER_E04_KEY", SECRET)
    with FaultServer(api_key=SECRET, faults=["echo-auth"] * 3) as server:
        openai_suite(pytester, tiny, server.url, api_key_env="SOMMELIER_E04_KEY", max_retries=3)
        result = run(pytester, "-rA", "-v")
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert SECRET not in result.stdout.str() + result.stderr.str()
    assert SECRET not in artifacts_text(pytester.path / "out")


@pytest.mark.parametrize(
    ("engine", "code", "where"),
    [
        ({"name": "tgi"}, "SOM-ENGINE-NAME", "[engine] name"),
        ({"name": "openai", "concurrency": 0}, "SOM-SUITE", "[engine]: key 'concurrency'"),
        ({"name": "openai", "api_key_env": "sk-abc def"}, "SOM-SUITE", "'api_key_env'"),
        ({"name": "openai", "colour": "red"}, "SOM-SUITE", "'colour'"),
        ({"name": "vllm", "options": {"model": "x"}}, "SOM-VLLM-OPTION", "engine.options.model"),
        ({"name": "openai"}, "SOM-OPENAI-URL", "engine.base_url"),
    ],
    ids=["name", "concurrency", "key-env", "unknown-key", "owned-option", "no-url"],
)
def test_e05_bad_engine_tables_are_one_clear_line(
    pytester: pytest.Pytester,
    tiny: tuple[Path, Path],
    engine: dict[str, Any],
    code: str,
    where: str,
) -> None:
    suite = tiny_suite(pytester, tiny)
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace("[model]\n", to_toml({"engine": engine}) + "\n[model]\n", 1))
    result = run(pytester)
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and code in out and where in out and "Traceback" not in out
    assert "verdict: PASS" not in out


def test_e07_arms_from_different_engines_are_not_compared(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    suite = tiny_suite(pytester, tiny)
    first = run(pytester)
    assert first.ret == 0, first.stdout.str()[-2000:]
    stored_base = pytester.path / "out" / "eval" / "base"
    (pytester.path / "stored").mkdir()
    stored = pytester.path / "stored" / "base"
    stored_base.rename(stored)
    with FaultServer() as server:
        add_openai_engine(suite, server.url)
        result = pytester.runpytest_subprocess(
            "-m", "eval", "-p", "no:cacheprovider", "--sommelier-out", "out2",
            "--sommelier-baseline", f"base={stored}", str(suite.parent),
        )  # fmt: skip
    text = result.stdout.str()
    assert "adapter-vs-base: REFUSED: SOM-COMPARE-IDENTITY: model_identity.engine" in text
    assert not (pytester.path / "out2" / "report" / "adapter-vs-base.json").exists()


def test_e08_a_fully_cached_rerun_loads_no_model(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    tiny_suite(pytester, tiny)
    cache = ["--sommelier-cache-dir", str(pytester.path / "gen-cache")]
    first = run(pytester, *cache)
    assert first.ret == 0, first.stdout.str()[-2000:]
    (pytester.path / "suite" / "conftest.py").write_text(
        NO_LOAD_CONFTEST + TORCH_RECORDER, encoding="utf-8"
    )
    second = pytester.runpytest_subprocess(
        "-m", "eval", "-p", "no:cacheprovider", "--sommelier-out", "out2", *cache
    )  # fmt: skip
    assert second.ret == 0, second.stdout.str()[-3000:]
    # nor import torch, where its build has no GPU backend (the device is then known without it)
    imported = (pytester.path / "suite" / "torch.txt").read_text(encoding="utf-8")
    assert imported == str(not torch_build_without_gpu())
    records = [
        json.loads(line)
        for path in (pytester.path / "out2" / "eval").rglob("generations.*.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert records and all(r["cached"] for r in records)
