"""One digest per folder: ``suite.resolved.json`` and the engine's identities agree."""

from __future__ import annotations

from pathlib import Path

import pytest
from plugin_helpers import read_json, tiny_suite

pytestmark = pytest.mark.slow  # a subprocess session on a tiny real model


def test_resolved_suite_and_identities_give_one_sha256_per_folder(
    pytester: pytest.Pytester, tiny: tuple[Path, Path]
) -> None:
    suite = tiny_suite(pytester, tiny)
    # a stray file in the model folder is part of the content in every artifact alike
    (suite.parent / "model" / "README.md").write_text("notes\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--sommelier-out", "out")
    assert result.ret == 0, result.stdout.str()
    out = pytester.path / "out"
    resolved = read_json(out / "suite.resolved.json")
    report = read_json(out / "eval" / "adapter" / "evaluation_report.json")
    model_digest = resolved["model"]["base"]["sha256"]
    adapter_digest = resolved["arms"]["adapter"]["adapter"]["sha256"]
    assert report["model_identity"]["sha256"] == model_digest
    assert report["adapter_identity"]["sha256"] == adapter_digest
    assert model_digest != adapter_digest
    base = read_json(out / "eval" / "base" / "evaluation_report.json")
    assert base["model_identity"]["sha256"] == model_digest
