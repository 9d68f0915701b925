"""Pure layer: typed records, parser, metrics, statistics, reports, gates, the evaluation
pipeline and text rendering. Imports only the standard library, numpy, ``errors`` and ``core``
itself; no I/O.
"""
