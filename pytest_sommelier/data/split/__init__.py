"""The formatted split: its JSON Schema (``schema``), the example-id rule (``example_ids``), the
native-tools template policy (``native_policy``) and the loader (``load``). The package
re-exports the names its 0.3 module gave (``load_split``, ``row_gold_call``)."""

from pytest_sommelier.data.split.load import load_split as load_split
from pytest_sommelier.data.split.load import row_gold_call as row_gold_call
