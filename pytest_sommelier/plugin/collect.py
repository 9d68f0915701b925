"""Collection: a ``sommelier.toml`` becomes a tree of pytest nodes.

``SuiteFile`` (the file) -> ``ArmNode`` (one per arm) -> ``SliceNode`` (one per slice) ->
``EvalItem`` (one per example), so node ids read
``eval_suites/demo/sommelier.toml::adapter::he::he-0042`` and ``-k``, ``--lf``, ``--deselect``
and node-id arguments select the obvious things. Invariant: items are yielded in configured
arm order, configured slice order, then split order, and every item carries the ``eval``
marker; a bad suite is a collection error with the error's code and hint, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.errors import SommelierError

if TYPE_CHECKING:
    from pytest_sommelier.data.split import Example, FormattedSplit
    from pytest_sommelier.data.suite import Suite

SUITE_FILENAME = "sommelier.toml"
SUITES_KEY = pytest.StashKey[dict[str, "tuple[Suite, FormattedSplit]"]]()


def load_suite_once(config: pytest.Config, path: Path) -> tuple[Suite, FormattedSplit]:
    """A suite file and its split, loaded once per process and session (kept in
    ``config.stash``): collection and the session finish share them. A load error is raised
    each time and never kept."""
    from pytest_sommelier.data.split import load_split
    from pytest_sommelier.data.suite import load_suite

    loaded = config.stash.setdefault(SUITES_KEY, {})
    key = str(Path(path).resolve())
    if key not in loaded:
        suite = load_suite(path)
        loaded[key] = (suite, load_split(suite.test_split, suite.slices))
    return loaded[key]


class SuiteFile(pytest.Module):
    """A suite file. Subclasses ``pytest.Module`` (like pytest's own doctest text files) so
    that module- and class-scoped fixtures from conftests resolve for its items; it never
    imports anything."""

    obj = None

    def collect(self) -> Iterator[ArmNode]:
        try:
            suite, split = load_suite_once(self.config, self.path)
        except SommelierError as error:
            raise self.CollectError(str(error)) from None
        self.suite: Suite = suite
        self.split: FormattedSplit = split
        self._fixtureinfo_shared: Any = None
        # marked once here, inherited by every item (cheaper than 2 marks on each item)
        self.add_marker(pytest.mark.eval)
        self.add_marker(pytest.mark.usefixtures("sommelier_model"))
        from pytest_sommelier.plugin.baseline import baseline_map

        stored = baseline_map(self.config)
        for arm in suite.arms:
            if arm in stored:
                continue  # comes from an earlier run (--sommelier-baseline)
            yield ArmNode.from_parent(self, name=arm)

    def _getobj(self) -> Any:  # pragma: no cover - never imported
        return None


class ArmNode(pytest.Collector):
    """All examples of one arm of a suite."""

    def collect(self) -> Iterator[SliceNode]:
        suite_file = self.parent
        assert isinstance(suite_file, SuiteFile)
        for language in suite_file.suite.slices:
            yield SliceNode.from_parent(self, name=language)


class SliceNode(pytest.Collector):
    """All examples of one slice (language) of one arm."""

    def collect(self) -> Iterator[EvalItem]:
        arm_node = self.parent
        assert isinstance(arm_node, ArmNode)
        suite_file = arm_node.parent
        assert isinstance(suite_file, SuiteFile)
        batch_size = int(suite_file.suite.decoding["batch_size"])
        for position, example in enumerate(suite_file.split.slices[self.name]):
            yield EvalItem.from_parent(
                self,
                name=example.example_id,
                suite_file=suite_file,
                arm=arm_node.name,
                example=example,
                batch_index=position // batch_size,
            )


class EvalItem(pytest.Item):
    """One (arm, example): generation happens in ``setup`` (so model errors and invariant
    violations are errors, ``E``), parsing and scoring in ``runtest``."""

    def __init__(
        self,
        *,
        suite_file: SuiteFile,
        arm: str,
        example: Example,
        batch_index: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.suite_file = suite_file
        self.arm = arm
        self.example = example
        self.batch_index = batch_index
        # Fixture support, as pytest's own DoctestItem does it. Every item of a suite file has
        # the same node chain above it, so the fixture closure is computed once per file.
        from _pytest.fixtures import TopRequest

        self.obj = None
        if suite_file._fixtureinfo_shared is None:
            fixture_manager = self.session._fixturemanager
            suite_file._fixtureinfo_shared = fixture_manager.getfixtureinfo(
                node=self, func=None, cls=None
            )
        self._fixtureinfo = suite_file._fixtureinfo_shared
        self.fixturenames = self._fixtureinfo.names_closure
        self.funcargs: dict[str, object] = {}
        self._request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type]

    @property
    def suite(self) -> Suite:
        return self.suite_file.suite

    @property
    def split(self) -> FormattedSplit:
        return self.suite_file.split

    def setup(self) -> None:
        from pytest_sommelier.plugin.runner import runner_for

        self._request._fillfixtures()
        factory = self.funcargs["sommelier_model"]
        runner_for(self.config).generate_for(self, factory)

    def runtest(self) -> None:
        from pytest_sommelier.plugin.runner import runner_for

        runner_for(self.config).score(self)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, SommelierError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def _repr_failure_py(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:
        # pytest renders setup errors through this method: a SommelierError is one line there
        # too (model errors, invariant violations), never a traceback
        if isinstance(excinfo.value, SommelierError) and not self.config.getoption("fulltrace"):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.suite_file.path, None, f"{self.arm}::{self.example.language}::{self.name}"
