"""Files in and out: suite and split loading, formatting, atomic writes, file digests,
references, run folders, stored runs. Imports ``core`` plus jsonschema/tomllib/jinja2; never an
engine or pytest.
"""
