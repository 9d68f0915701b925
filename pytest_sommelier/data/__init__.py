"""Files in and out, cut by job: ``suite/`` (suite loading), ``split/`` (the formatted split),
``prepare/`` (formatting and the importers, BFCL) and ``store/`` (the run store and its history),
over the leaves every job shares (``atomic``, ``digests``, ``references``). Imports ``core`` plus
jsonschema/tomllib/jinja2/pyarrow; never a view, an engine or pytest.
"""
