"""Suite loading: the TOML file (``toml``), its arms (``arms``), gates (``gates``), names
(``names``), statistics bounds (``statistics_bounds``) and identity (``identity``), composed by
``load``. The package re-exports the names its 0.3 module gave (``load_suite``, ``suite_identity``,
``valid_name``, ``GATE_METRICS``, ``OVERALL``)."""

from pytest_sommelier.data.suite.load import GATE_METRICS as GATE_METRICS
from pytest_sommelier.data.suite.load import OVERALL as OVERALL
from pytest_sommelier.data.suite.load import load_suite as load_suite
from pytest_sommelier.data.suite.load import suite_identity as suite_identity
from pytest_sommelier.data.suite.load import valid_name as valid_name
