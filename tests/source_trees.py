"""One parse of each source file per test process, for the tests that read the package's code
(layering, declared imports, write paths, private attributes, system exits).

``parsed(path)`` is ``ast.parse`` of the file's UTF-8 text, remembered by path: the trees are
read, never changed, by the tests that share them (a visitor that rewrote one would change it
for the others)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The module ``path`` holds, parsed once per process."""
    return ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
