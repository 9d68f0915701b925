"""Collection: a ``sommelier.toml`` becomes a tree of pytest nodes.

``SuiteFile`` (the file) -> ``ArmNode`` (one per arm) -> ``SliceNode`` (one per slice) ->
``EvalItem`` (one per example), so node ids read
``eval_suites/demo/sommelier.toml::adapter::he::he-0042`` and ``-k``, ``--lf``, ``--deselect``
and node-id arguments select the obvious things. Invariant: items are yielded in configured
arm order, configured slice order, then split order; every item carries the ``eval`` marker (its
fixed batch is derived from its node id by the xdist controller, ``plugin.scheduling``); a bad
suite is a collection error with the error's code and hint, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.core.types import BatchKey
from pytest_sommelier.errors import InputError, SommelierError
from pytest_sommelier.numbers import bool_word
from pytest_sommelier.plugin.keys import RESULT_KEY, batch_index_map
from pytest_sommelier.plugin.role import role_of
from pytest_sommelier.plugin.settings import settings_of

JUNIT_OUTCOME = "sommelier_outcome"
"""The ``--junitxml`` property of every evaluated example: ``hit`` or ``miss``."""
JUNIT_MISS = "sommelier_miss"
"""The ``--junitxml`` property of a missed example: what was missed, on one line."""

if TYPE_CHECKING:
    from pytest_sommelier.core.types import Example, FormattedSplit, Suite
    from pytest_sommelier.plugin.runner import BatchOutcome, Runner

SUITES_KEY = pytest.StashKey[dict[str, "tuple[Suite, FormattedSplit]"]]()
RUNNER_KEY = pytest.StashKey["Runner"]()
BATCH_KEY = pytest.StashKey[tuple[Any, "BatchOutcome"]]()
"""An item's generator and its batch's outcome, set in ``setup``."""
REASONING_WARNED_KEY = pytest.StashKey[set[str]]()
"""The suites whose reasoning preflight was written (once per session)."""
FIXTUREINFO_KEY = pytest.StashKey[Any]()
"""A suite file's fixture closure, shared by its items (set by the first)."""
NOISE_KEY = pytest.StashKey[dict[str, frozenset[str]]]()
"""A suite file's noise-floor plan (``SuiteFile.noise``), set by its first item's setup."""


def load_suite_once(config: pytest.Config, path: Path) -> tuple[Suite, FormattedSplit]:
    """A suite file and its split, loaded once per process and session (kept in
    ``config.stash``): collection and the session finish share them. The split's native-policy
    targets are read with the suite's ``arguments_key``, and the split must have been formatted
    with the base's tokenizer (``inference.split_check``); with ``--sommelier-arms`` the arms
    it names are evaluated from the folders it gives (``data.suite.globs.with_arms``); with
    ``--sommelier-sample`` the split is its seeded sample (``data.split.sample``). A load
    error is raised each time and never kept."""
    from pytest_sommelier.inference.split_check import load_checked_suite

    loaded = config.stash.setdefault(SUITES_KEY, {})
    key = str(Path(path).resolve())
    if key not in loaded:
        suite, split = load_checked_suite(path, arms=dict(settings_of(config).arms))
        sample = settings_of(config).sample
        if sample is not None:  # --sommelier-sample: the sample is the run's split
            from pytest_sommelier.data.split.sample import sample_split

            split = sample_split(split, *sample)
        loaded[key] = (suite, split)
    return loaded[key]


def runner_for(config: pytest.Config) -> Runner:
    """The process's runner, created on first use."""
    runner = config.stash.get(RUNNER_KEY, None)
    if runner is None:
        from pytest_sommelier.plugin.runner import Runner

        settings = settings_of(config)
        role = role_of(config)
        runner = Runner(
            timeout=settings.timeout,
            selfcheck=settings.selfcheck,
            cache=generation_cache(config),
            worker=role.worker_id,
            processes=role.processes,
        )
        config.stash[RUNNER_KEY] = runner
    return runner


def generation_cache(config: pytest.Config) -> Any:
    """The generation cache chosen by the options: ``--sommelier-no-cache`` turns it off;
    ``--sommelier-cache-dir`` names its folder; else pytest's cache folder when the
    cacheprovider is active; else none."""
    settings = settings_of(config)
    if settings.no_cache:
        return None
    configured = settings.cache_dir
    if configured:
        folder = Path(configured)
        if not folder.is_absolute():
            folder = config.invocation_params.dir / folder
    elif getattr(config, "cache", None) is not None:
        folder = config.cache.mkdir("sommelier-generations")
    else:
        return None
    from pytest_sommelier.inference.gencache import GenerationCache

    where = "--sommelier-cache-dir" if configured else "the generation cache (pytest's cache)"
    return GenerationCache(folder, where=where)


def refuse_unwritable_out(config: pytest.Config) -> None:
    """Refuse, at collection and before any model runs, an output folder that could not be
    written (``artifacts.check_writable``): an earlier run there is then left as it was, never
    beside a run that could not replace it."""
    from pytest_sommelier.data.store.artifacts import check_writable
    from pytest_sommelier.data.store.outputs import FOLDER_KIND, check_output
    from pytest_sommelier.plugin.settings import store_path

    settings = settings_of(config)
    out = settings.out
    base = Path(out) if out else Path("runs")
    base = base if base.is_absolute() else config.invocation_params.dir / base
    compare = settings.compare
    reference = Path(compare) if compare is not None and Path(compare).is_absolute() else None
    if base.exists() and not base.is_dir():
        check_writable(base)  # its own line: SOM-OUT-UNWRITABLE, "not a folder"
    check_output(
        base,
        kind=FOLDER_KIND,
        inputs=[reference],  # a run folder given to --sommelier-compare is read, never replaced
        stores=[store_path(config)],
        where="--sommelier-out",
    )
    if reference is not None and reference.resolve().is_relative_to(base.resolve()):
        raise InputError(
            "SOM-OUTPUT-PATH",
            f"{base}: holds {reference}, the run --sommelier-compare names; this run would "
            "replace the run it is compared with",
            "give --sommelier-out another folder, or store the reference first "
            "(--sommelier-autosave) and compare by number",
            where="--sommelier-out",
        )
    check_writable(base)
    from pytest_sommelier.data.store.outputs import check_step_summary

    # the job summary the finish appends to, through the same rule (never the store's index,
    # a stored run's file or this run's own), before any model runs
    check_step_summary(run_dir=base, stores=[store_path(config)])


def refuse_unknown_engine(
    config: pytest.Config, suite: Suite, session: pytest.Session | None
) -> None:
    """The engine the suite's items would load (``--sommelier-engine`` / ini
    ``sommelier_engine``, else ``[engine] name``) must be registered (a built-in, an installed
    extension or a ``conftest.py`` hook of the suite): an unknown name is one
    ``SOM-ENGINE-NAME`` line at collection naming where the name was given, never an error on
    every item. A built-in name reads no entry point."""
    from pytest_sommelier.inference.select_engine import ENGINES

    chosen = settings_of(config).engine
    name = chosen or suite.engine.name
    if name in ENGINES:
        return
    from pytest_sommelier.plugin.extensions import suite_engines

    where = (
        f"{suite.path}: --sommelier-engine / ini sommelier_engine"
        if chosen
        else f"{suite.path}: [engine] name"
    )
    suite_engines(config, suite, name, session).entry(name, where=where, code="SOM-ENGINE-NAME")


def warn_reasoning(config: pytest.Config, suite: Suite, split: FormattedSplit) -> None:
    """The session's reasoning preflight (``split_check.reasoning_warnings``), written once per
    suite at collection, before any model loads (controller or serial process only)."""
    if role_of(config).is_worker:
        return
    from pytest_sommelier.inference.split_check import reasoning_warnings

    warned = config.stash.setdefault(REASONING_WARNED_KEY, set())
    if str(suite.path) in warned:
        return
    warned.add(str(suite.path))
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    for line in reasoning_warnings(suite, split, settings_of(config).engine):
        if reporter is not None:
            reporter.write_line(f"sommelier: {suite.name}: warning: {line}", yellow=True)


def refuse_unknown_strict_arms(config: pytest.Config, suite: Suite) -> None:
    """``--sommelier-strict=ARM[,ARM]`` must name arms of the suite (a typo would silently
    make nothing must-pass)."""
    unknown = [arm for arm in settings_of(config).strict_arms if arm not in suite.arms]
    if unknown:
        raise InputError(
            "SOM-OPTION-VALUE",
            f"--sommelier-strict names arm(s) {', '.join(map(repr, unknown))}, which the suite "
            f"{suite.name!r} does not have",
            f"its arms: {', '.join(suite.arms)}"
            + (
                "; on the command line a value is always arm names (a bare --sommelier-strict "
                "or =all is every arm; leave the flag out for none)"
                if any(bool_word(arm) is not None for arm in unknown)
                else ""
            ),
            where="--sommelier-strict / ini sommelier_strict",
        )


def refuse_unmeetable_compare_fail(
    config: pytest.Config, suite: Suite, split: FormattedSplit
) -> None:
    """Each ``--sommelier-compare-fail`` spec must name a slice of the suite (or ``overall``),
    and ``acceptable_call_match`` needs examples with acceptable values in that slice: refused
    here, at collection, instead of after every item has run (one line naming the spec)."""
    texts = settings_of(config).compare_fail
    if not texts:
        return
    from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE
    from pytest_sommelier.data.store.history_gate import parse_fail_specs
    from pytest_sommelier.data.suite.names import OVERALL

    where = "--sommelier-compare-fail / ini sommelier_compare_fail"
    from pytest_sommelier.data.suite.load import GATE_METRICS

    for spec in parse_fail_specs(texts):
        if spec.metric not in GATE_METRICS and spec.metric not in suite.scorers:
            raise InputError(
                "SOM-HISTORY-FAIL-SPEC",
                f"{spec.text!r}: {spec.metric!r} is neither a metric nor a scorer of suite "
                f"{suite.name!r}",
                "one of: " + ", ".join((*GATE_METRICS, *suite.scorers)),
                where=where,
            )
        if spec.slice != OVERALL and spec.slice not in suite.slices:
            raise InputError(
                "SOM-HISTORY-FAIL-SPEC",
                f"{spec.text!r}: slice {spec.slice!r} is not a slice of suite {suite.name!r}",
                f"its slices: {', '.join(suite.slices)}, or overall",
                where=where,
            )
        if spec.metric != ACCEPTABLE:
            continue
        wanted = list(suite.slices) if spec.slice == OVERALL else [spec.slice]
        if not any(
            e.acceptable_arguments is not None
            for name in wanted
            for e in split.slices.get(name, ())
        ):
            raise InputError(
                "SOM-HISTORY-FAIL-SPEC",
                f"{spec.text!r}: {ACCEPTABLE} needs examples with acceptable_arguments, and "
                f"the split has none in {spec.slice}",
                "write the split with sommelier import bfcl and sommelier format, or gate "
                "another metric",
                where=where,
            )


class SuiteFile(pytest.Module):
    """A suite file. Subclasses ``pytest.Module`` (like pytest's own doctest text files) so
    that module- and class-scoped fixtures from conftests resolve for its items; it never
    imports anything."""

    obj = None

    def collect(self) -> Iterator[ArmNode]:
        try:
            suite, split = load_suite_once(self.config, self.path)
            refuse_unwritable_out(self.config)
            refuse_unknown_strict_arms(self.config, suite)
            from pytest_sommelier.plugin.extensions import suite_scorers

            suite_scorers(self.config, suite, self.session)  # a bad scorer stops collection
            refuse_unknown_engine(self.config, suite, self.session)
            refuse_unmeetable_compare_fail(self.config, suite, split)
        except SommelierError as error:
            raise self.CollectError(str(error)) from None
        warn_reasoning(self.config, suite, split)
        self.suite: Suite = suite
        self.split: FormattedSplit = split
        # marked once here, inherited by every item (cheaper than 2 marks on each item)
        self.add_marker(pytest.mark.eval)
        self.add_marker(pytest.mark.usefixtures("sommelier_model"))
        from pytest_sommelier.plugin.baseline import baseline_map

        stored = baseline_map(self.config)
        for arm in suite.arms:
            if arm in stored:
                continue  # comes from an earlier run (--sommelier-baseline)
            yield ArmNode.from_parent(self, name=arm)

    @property
    def noise(self) -> dict[str, frozenset[str]]:
        """arm -> the example ids its noise floor re-batches (``core.pipeline.noise_plan``),
        computed when the file's first item is set up and kept on the node: collection alone
        never imports the evaluation pipeline."""
        noise = self.stash.get(NOISE_KEY, None)
        if noise is None:
            from pytest_sommelier.core.pipeline import noise_plan

            noise = self.stash[NOISE_KEY] = noise_plan(self.suite, self.split)
        return noise

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
        examples = suite_file.split.slices[self.name]
        batch_size = int(suite_file.suite.decoding["batch_size"])
        # the one batch rule, shared with the xdist controller's scheduler
        batches = batch_index_map({self.name: [e.example_id for e in examples]}, batch_size)
        for example in examples:
            yield EvalItem.from_parent(
                self,
                name=example.example_id,
                suite_file=suite_file,
                arm=arm_node.name,
                example=example,
                batch_index=batches[self.name, example.example_id],
            )


def evaluated_example(sommelier_model: Any) -> None:
    """The callable behind every ``EvalItem`` (never called: ``EvalItem.runtest`` scores the
    item's output). Its one argument is how pytest's own fixture machinery learns that a
    suite item needs the ``sommelier_model`` fixture."""


class EvalItem(pytest.Function):
    """One (arm, example): generation happens in ``setup`` (so model errors and invariant
    violations are errors, ``E``), parsing and scoring in ``runtest``. A ``pytest.Function``
    built with pytest's public constructor arguments (``callobj``, ``fixtureinfo``), so
    fixtures, ``usefixtures`` and conftest overrides of ``sommelier_model`` resolve as for any
    test, and nothing of pytest's own state is written by hand."""

    def __init__(
        self,
        *,
        suite_file: SuiteFile,
        arm: str,
        example: Example,
        batch_index: int,
        **kwargs: Any,
    ) -> None:
        # every item of a suite file has the same node chain above it, so the fixture closure
        # is computed for the file's first item and passed to the rest
        shared = suite_file.stash.get(FIXTUREINFO_KEY, None)
        super().__init__(callobj=evaluated_example, fixtureinfo=shared, **kwargs)
        if shared is None:
            suite_file.stash[FIXTUREINFO_KEY] = self._fixtureinfo
        self.suite_file = suite_file
        self.arm = arm
        self.example = example
        self.batch_index = batch_index

    @property
    def suite(self) -> Suite:
        return self.suite_file.suite

    @property
    def split(self) -> FormattedSplit:
        return self.suite_file.split

    @property
    def batch_key(self) -> BatchKey:
        """This item's fixed batch: ``batch_index`` of (suite file, arm, slice)."""
        path = str(self.suite_file.path)
        return BatchKey(path, self.arm, self.example.language, self.batch_index)

    def setup(self) -> None:
        """Generate this item's fixed batch (once per process); model errors are errors here."""
        super().setup()  # pytest fills the item's fixtures
        factory = self.funcargs["sommelier_model"]
        runner = runner_for(self.config)
        suite, split = self.suite, self.split
        generator = runner.generator(str(self.suite_file.path), self.arm, suite, factory)
        size = int(suite.decoding["batch_size"])
        examples = split.slices[self.example.language]
        batch = examples[self.batch_index * size : (self.batch_index + 1) * size]
        sample = self.suite_file.noise.get(self.arm, frozenset())
        outcome = runner.batch(
            self.batch_key,
            batch,
            suite.decoding,
            generator,
            warmup_prompt=split.slices[suite.reference_slice][0].prompt_text,
            rebatch=[e.example_id for e in batch if e.example_id in sample],
        )
        self.stash[BATCH_KEY] = (generator, outcome)

    def runtest(self) -> None:
        """Score this item's output; a miss is reported as such (or fails, strict)."""
        generator, outcome = self.stash[BATCH_KEY]
        payload = runner_for(self.config).payload(
            self.suite_file.nodeid,
            self.batch_key,
            self.example,
            self.suite.decoding,
            generator,
            outcome,
            arguments_key=self.suite.arguments_key,
            reasoning=self.suite.reasoning,
        )
        if self.suite.scorers and role_of(self.config).is_worker:
            from pytest_sommelier.plugin.extensions import worker_scores

            worker_scores(self.config, self.session, self.suite, self.example, payload)
        self.stash[RESULT_KEY] = payload
        settings = settings_of(self.config)
        arms = settings.strict_arms
        must_pass = settings.strict and (not arms or self.arm in arms)
        # the outcome in --junitxml: a miss is a passing test case there (not strict), so each
        # case says which it was (docs/plugin.md, "JUnit")
        self.user_properties.append((JUNIT_OUTCOME, "hit" if payload["hit"] else "miss"))
        text = None
        if not payload["hit"]:
            from pytest_sommelier.view.terminal import describe_miss

            text = describe_miss(payload["record"], self.example.gold_call, self.example.expect)
            self.user_properties.append((JUNIT_MISS, " ".join(text.split())))
        if self.suite.scorers:  # each enabled scorer after the built-ins, in name order
            from pytest_sommelier.plugin.extensions import junit_scores

            scored = junit_scores(self.config, self.session, self.suite, self.example, payload)
            self.user_properties.extend(scored)
        if text is not None and must_pass:
            pytest.fail(text, pytrace=False)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SommelierError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

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
