"""The one example-id rule, applied by ``sommelier format``, every importer (through
``formatting.validate_prepared_row``), ``sommelier import bfcl`` and the split loader.

An example id becomes the last part of a pytest node id (``sommelier.toml::arm::en::<id>``),
which ``-k``, ``--deselect``, ``--lf`` and node-id arguments read back: it must survive that
round trip. Invariant: an id :func:`example_id_problem` accepts is a non-empty string of ASCII
letters, digits, ``_``, ``.``, ``:`` and ``-`` starting with a letter or digit, without ``::``
(the node-id separator); so no ``[`` (read as a parametrization), no white space, no control
character and no newline.
"""

from __future__ import annotations

import re

EXAMPLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
EXAMPLE_ID_TEXT = "a letter or digit, then letters, digits, '_', '.', ':' or '-' (no '::')"
"""The rule in words, for messages and docs."""


def example_id_problem(value: object) -> str | None:
    """Why ``value`` cannot be an example id (a phrase completing "field 'example_id' ..."),
    or None when it can."""
    if not isinstance(value, str):
        return "must be a string"
    if not value.strip():
        return "is blank (empty or only white space)"
    if "::" in value:
        return f"{value!r} holds '::', which separates the parts of a pytest node id"
    if not EXAMPLE_ID.fullmatch(value):
        return f"{value!r} is not {EXAMPLE_ID_TEXT}"
    return None
