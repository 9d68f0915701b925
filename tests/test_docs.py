"""Docs stay true to the code: every raised error code is documented, every option too."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from error_codes import codes  # noqa: E402

from pytest_sommelier.plugin.settings import OPTIONS  # noqa: E402


def test_every_error_code_is_in_the_error_reference() -> None:
    documented = set(re.findall(r"`(SOM-[A-Z0-9-]+)`", (ROOT / "docs" / "errors.md").read_text()))
    raised = set(codes())
    assert raised, "the code scan found nothing: tools/error_codes.py is broken"
    assert sorted(raised - documented) == []


def test_every_option_is_in_the_plugin_docs() -> None:
    text = (ROOT / "docs" / "plugin.md").read_text()
    missing = [flag for flag, *_ in OPTIONS if f"`{flag}" not in text]
    assert missing == []
