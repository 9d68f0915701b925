"""Everything that imports pytest: hooks (the ``pytest11`` entry point), settings, collection, the
runner, the session aggregator, the fixture, xdist scheduling, JUnit cases, baselines.
"""
