"""The run store's names (``data.store.history``; docs/artifacts.md, "The run store"): its
default folder, the index, lock, record and page file names and the stored-run folder pattern
``NNNN_<short commit>[-dirty]_<UTC time>``.

Kept apart from the store so that the one output-path rule (``data.store.outputs``), which
collection runs before any model loads, tells a store and a stored run apart without importing
the store and what it imports (the report builders, the statistics). Imports the standard
library only.
"""

from __future__ import annotations

import re

DEFAULT_STORE = ".sommelier"
INDEX = "index.json"
LOCK = ".lock"
RECORD = "stored_run.json"
PAGE = "history.html"
FOLDER = re.compile(
    r"^(?P<number>\d{4,})_(?P<commit>[0-9a-f]{7,40}|unversioned)(?P<dirty>-dirty)?"
    r"_(?P<time>\d{8}T\d{6}Z)$"
)

__all__ = ["DEFAULT_STORE", "FOLDER", "INDEX", "LOCK", "PAGE", "RECORD"]
