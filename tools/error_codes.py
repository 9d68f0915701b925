"""List every error code raised in pytest_sommelier (code, class, module, hint) from the AST.

Used to write the table in docs/errors.md (``python tools/error_codes.py > table.md``) and by
tests/test_docs.py, which checks that every code raised in the package is documented there.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_sommelier"
EXIT = {
    "InputError": ("input", 2),
    "SommelierEnvironmentError": ("environment", 3),
    "EvaluationError": ("evaluation", 4),
    "InvariantError": ("invariant", 5),
}


def _text(node: ast.AST | None) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    return ""


def codes() -> dict[str, tuple[str, str, str]]:
    """code -> (class name, module, hint) for every ``XError("SOM-...", ...)`` call."""
    found: dict[str, tuple[str, str, str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in EXIT or not node.args:
                continue
            code = _text(node.args[0])
            if not code.startswith("SOM-"):
                continue
            hint = _text(node.args[2]) if len(node.args) > 2 else ""
            for keyword in node.keywords:
                if keyword.arg == "hint":
                    hint = _text(keyword.value)
            module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
            found.setdefault(code, (node.func.id, module, hint))
    return dict(sorted(found.items()))


def main() -> int:
    print("| code | kind (exit) | raised in | hint |")
    print("|---|---|---|---|")
    for code, (cls, module, hint) in codes().items():
        kind, status = EXIT[cls]
        print(f"| `{code}` | {kind} ({status}) | `{module}` | {hint.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
