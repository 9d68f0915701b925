"""Runs over time at session finish (controller only): the session's settings as the run
store's plain values.

The sequence itself (the comparisons with stored runs and their gates in the one verdict, the
page, the summary, the autosave, the verdict last) is ``data.store.scored_run``'s, which the
training callback calls too; this module only says what the pytest options ask of it:
``--sommelier-compare`` / ``--sommelier-compare-fail``, ``--sommelier-misses`` (the flipped
examples listed), ``--sommelier-autosave[=all|pass]``, ``--sommelier-label``, the store's
folder and the rootdir git is asked in.

Invariant kept: nothing here runs on an xdist worker (the session calls it on the controller
only).
"""

from __future__ import annotations

import pytest

from pytest_sommelier.data.store.scored_run import OverTime, StoreOptions
from pytest_sommelier.plugin.settings import settings_of, store_path


def store_options(config: pytest.Config) -> StoreOptions:
    """The session's ``StoreOptions``, from its settings (read once, ``settings_of``)."""
    settings = settings_of(config)
    return StoreOptions(
        store=store_path(config),
        compare=settings.compare,
        compare_fail=tuple(settings.compare_fail),
        flips=settings.misses,
        autosave=settings.autosave,
        keep_incomplete=settings.autosave_all,
        only_passing=settings.autosave_pass,
        label=settings.label,
        rootdir=config.rootpath,
    )


__all__ = ["OverTime", "store_options"]
