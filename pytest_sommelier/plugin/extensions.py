"""Extensions in a pytest session: the registries with the ``pytest_sommelier_add_*`` hook
results, a suite's scorers and engines, the line naming what was loaded, and the events.

Each registry (``pytest_sommelier.registry``) is built once per process and suite file, from
the built-ins, the installed entry points and the hook results of that suite's path-aware hook
proxy (a ``conftest.py`` hook adds to the suites below it only); each hook implementation is
its own source, named by its plugin. Built at collection (``SuiteFile``) or at the session
finish (the xdist controller collects nothing), never when the plugin loads.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.errors import EXTENSION_ERRORS, InputError, exception_text

if TYPE_CHECKING:
    from pytest_sommelier.core.scorers import Scorer
    from pytest_sommelier.core.types import Suite
    from pytest_sommelier.registry import Registry, Source

HOOKS = {
    "scorers": "pytest_sommelier_add_scorers",
    "engines": "pytest_sommelier_add_engines",
    "importers": "pytest_sommelier_add_importers",
}
"""The registration hook of each kind."""

REGISTRIES_KEY = pytest.StashKey[dict[tuple[str, str], "Registry"]]()
USED_KEY = pytest.StashKey[dict[str, str]]()
"""``kind name`` -> source of every extension a suite of this session uses."""
SHOWN_KEY = pytest.StashKey[bool]()
"""Whether the loaded-extensions line was shown after collection (an xdist controller collects
nothing: it shows the line in its summary instead)."""


def hook_proxy(config: pytest.Config, path: Path, session: pytest.Session | None) -> Any:
    """The hook relay for ``path``: the session's path-aware proxy (conftest hooks of the
    folders above ``path`` only), or the config's when there is no session."""
    return config.hook if session is None else session.gethookproxy(path)


def hook_sources(config: pytest.Config, kind: str, relay: Any) -> list[Source]:
    """One source per implementation of ``kind``'s registration hook, named by its plugin; a
    result that is not of the hook's shape is ``SOM-PLUGIN-HOOK`` naming the plugin."""
    name = HOOKS[kind]
    sources: list[Source] = []
    for impl in getattr(relay, name).get_hookimpls():
        source = f"hook {name} of {impl.plugin_name}"
        try:
            value = impl.function(config=config)
        except EXTENSION_ERRORS as exc:  # an extension's bug (sys.exit too): one line
            raise InputError(
                "SOM-PLUGIN-HOOK",
                f"{source} raised {exception_text(exc)}",
                "fix or remove the plugin",
            ) from None
        if value is None:
            continue
        if kind == "scorers":
            if isinstance(value, Mapping) or not isinstance(value, list | tuple):
                raise InputError(
                    "SOM-PLUGIN-HOOK",
                    f"{source} returned a {type(value).__name__}, not a list of scorers",
                    "return a list of pytest_sommelier.Scorer",
                )
            from pytest_sommelier.core.scorers import Scorer

            wrong = [s for s in value if not isinstance(s, Scorer)]
            if wrong:
                from pytest_sommelier.core.scorers import exception_safe

                raise InputError(
                    "SOM-SCORER-CONTRACT",
                    f"{source} returned {exception_safe(wrong[0])} in its list, not a Scorer",
                    "return a list of pytest_sommelier.Scorer(name, version, kind, score) "
                    "(docs/extending.md)",
                )
            sources.append((source, {s.name: s for s in value}))
            if len(sources[-1][1]) != len(value):
                raise InputError(
                    "SOM-PLUGIN-DUPLICATE",
                    f"{source} returns two scorers of one name",
                    "a name is defined once",
                )
        elif isinstance(value, Mapping):
            sources.append((source, dict(value)))
        else:
            raise InputError(
                "SOM-PLUGIN-HOOK",
                f"{source} returned a {type(value).__name__}, not {{name: {kind[:-1]}}}",
                f"return a dict of name -> {kind[:-1]}",
            )
    return sources


def registry_for(
    config: pytest.Config, kind: str, path: Path, session: pytest.Session | None = None
) -> Registry:
    """``kind``'s registry for the suite at ``path``, built once per process and path."""
    from pytest_sommelier.registry import registry

    cache = config.stash.setdefault(REGISTRIES_KEY, {})
    key = (kind, str(Path(path).resolve()))
    if key not in cache:
        relay = hook_proxy(config, Path(path), session)
        cache[key] = registry(kind, hook_sources(config, kind, relay))
    return cache[key]


def pytest_registry(kind: str, folder: Path, plugins: tuple[str, ...] = ()) -> Registry:
    """``kind``'s registry as a pytest session started in ``folder`` would see it, for the
    commands that run outside pytest (``sommelier import hook``, ``sommelier plugins
    --pytest``): pytest's own configuration (``pytest.Config.fromdictargs``: the rootdir and
    ini file, the installed pytest plugins, the plugins ``plugins`` names as ``-p`` does, the
    ``conftest.py`` files of ``folder`` and the folders above it up to the rootdir), then the
    built-ins, the entry points and every ``pytest_sommelier_add_*`` implementation that
    configuration holds. Nothing is collected and no session starts (no ``pytest_configure``
    runs). A conftest or plugin that cannot be loaded is one ``SOM-PLUGIN-PYTEST`` line."""
    from pytest_sommelier.errors import SommelierEnvironmentError
    from pytest_sommelier.registry import registry

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(
            "SOM-PLUGIN-PYTEST",
            f"{folder} is not a folder",
            "name the folder whose conftest.py files pytest would load (default: this one)",
        )
    try:
        config = _configured(str(folder.resolve()), tuple(plugins))
    except EXTENSION_ERRORS as exc:  # a conftest.py that raises or exits, a -p not there
        raise SommelierEnvironmentError(
            "SOM-PLUGIN-PYTEST",
            f"pytest could not load the plugins and conftest.py files of {folder}: "
            f"{exception_text(exc)}",
            "fix the conftest.py or the plugin, or run from the folder pytest runs in",
        ) from None
    return registry(kind, hook_sources(config, kind, config.hook))


@functools.lru_cache(maxsize=4)
def _configured(folder: str, plugins: tuple[str, ...]) -> pytest.Config:
    """pytest's configuration of ``folder`` with ``-p`` ``plugins``, built once per process
    (``sommelier plugins`` asks it for each kind); a failure is not kept. ``--assert=plain``:
    nothing is asserted here, so no assertion-rewriting import hook joins ``sys.meta_path``
    (the ``conftest.py`` folders join ``sys.path``, as in a session)."""
    args = [arg for name in plugins for arg in ("-p", name)]
    return pytest.Config.fromdictargs({}, ["--assert=plain", *args, folder])


def suite_scorers(
    config: pytest.Config, suite: Suite, session: pytest.Session | None = None
) -> tuple[Scorer, ...]:
    """The scorers ``[suite] scorers`` names, loaded and checked against the contract
    (``SOM-SCORER-UNKNOWN`` for a name no registry entry has)."""
    if not suite.scorers:
        return ()
    from pytest_sommelier.core.scorers import resolve_scorers
    from pytest_sommelier.data.suite.gates import GATE_METRICS

    found = registry_for(config, "scorers", suite.path, session)
    scorers = resolve_scorers(
        suite.scorers, found, where=f"{suite.path}: [suite] scorers", reserved=GATE_METRICS
    )
    for scorer in scorers:
        source = found.entries[scorer.name].source
        config.stash.setdefault(USED_KEY, {})[f"scorer {scorer.name} {scorer.version}"] = source
    return scorers


def worker_scores(
    config: pytest.Config, session: pytest.Session, suite: Suite, example: Any, payload: Any
) -> None:
    """On an xdist worker, the suite's scores of one item into its payload (its record's
    ``scores`` and the payload's ``scorers`` identities): the controller, which never loads a
    ``conftest.py`` below the rootdir, evaluates with them when it cannot resolve a scorer
    itself (``controller_scorers``). A broken scorer errors the item with its one line."""
    from pytest_sommelier.core.scorers import record_scores, scorer_identity

    scorers = suite_scorers(config, suite, session)
    record = payload["record"]
    record["scores"] = record_scores(scorers, record["parsed_call"], example)
    payload["scorers"] = scorer_identity(scorers)


JUNIT_SCORE = "sommelier_score_"
"""The prefix of an evaluated example's ``--junitxml`` property per enabled scorer:
``sommelier_score_<name>`` = ``numerator/denominator`` (docs/plugin.md, "JUnit")."""


def junit_scores(
    config: pytest.Config, session: pytest.Session, suite: Suite, example: Any, payload: Any
) -> list[tuple[str, str]]:
    """Each enabled scorer's ``(sommelier_score_<name>, "numerator/denominator")`` of one
    evaluated example, in name order (the order of every report, after the five): an xdist
    worker's are the scores it put into the payload (:func:`worker_scores`); a serial session
    scores the example here for the property alone (the session finish scores every record
    again, so a scorer that fails is still its one line there, and here the property is
    left out)."""
    from pytest_sommelier.core.scorers import record_scores
    from pytest_sommelier.errors import SommelierError

    scores = payload["record"].get("scores")
    if scores is None:
        try:
            scorers = suite_scorers(config, suite, session)
            scores = record_scores(scorers, payload["record"]["parsed_call"], example)
        except SommelierError:
            return []
    return [(f"{JUNIT_SCORE}{name}", f"{n}/{d}") for name, (n, d) in sorted(scores.items())]


def controller_scorers(
    config: pytest.Config, suite: Suite, session: pytest.Session | None, payloads: Any
) -> tuple[Scorer, ...]:
    """The scorers the session finish evaluates with: the suite's own when this process can
    resolve them, else (an xdist controller without the suite's ``conftest.py``) the ones the
    workers recorded, known by their identities, whose scores are the workers'."""
    try:
        return suite_scorers(config, suite, session)
    except InputError as error:
        if error.code != "SOM-SCORER-UNKNOWN":
            raise
        identities = {
            entry["name"]: entry for payload in payloads for entry in payload.get("scorers") or ()
        }
        if any(name not in identities for name in suite.scorers):
            raise
    from pytest_sommelier.core.scorers import recorded_scorer

    scorers = tuple(recorded_scorer(identities[name]) for name in suite.scorers)
    for scorer in scorers:
        config.stash.setdefault(USED_KEY, {})[f"scorer {scorer.name} {scorer.version}"] = (
            "the xdist workers' hooks"
        )
    return scorers


def suite_engines(
    config: pytest.Config, suite: Suite, engine: str, session: pytest.Session | None = None
) -> Registry:
    """The engine registry of ``suite``; an extension engine it chooses is named in the
    loaded-extensions line."""
    found = registry_for(config, "engines", suite.path, session)
    entry = found.entries.get(engine)
    if entry is not None and entry.source != "built-in":
        config.stash.setdefault(USED_KEY, {})[f"engine {engine}"] = entry.source
    return found


def loaded_line(config: pytest.Config) -> str | None:
    """``sommelier extensions: scorer semantic_args 1 (from ...)``: what the suites use, or
    None when no extension is used."""
    used = config.stash.get(USED_KEY, {})
    if not used:
        return None
    return "sommelier extensions: " + "; ".join(
        f"{what} (from {source})" for what, source in sorted(used.items())
    )


def with_identity_hook(config: pytest.Config, arm: str, identity: Any) -> Any:
    """``identity`` after every ``pytest_sommelier_model_identity`` implementation saw it: they
    may add fields; removing or changing one is ``SOM-PLUGIN-IDENTITY``. None stays None."""
    if not isinstance(identity, dict):
        return identity
    before = copy.deepcopy(identity)
    after = copy.deepcopy(identity)
    call_event(config, "pytest_sommelier_model_identity", arm=arm, identity=after)
    changed = [key for key in before if key not in after or after[key] != before[key]]
    if changed:
        raise InputError(
            "SOM-PLUGIN-IDENTITY",
            f"a pytest_sommelier_model_identity hook removed or changed {changed[0]!r} of arm "
            f"{arm!r}'s model identity",
            "an identity hook may add fields, never remove or change one",
        )
    return after


def call_event(config: pytest.Config, name: str, **kwargs: Any) -> None:
    """Call event hook ``name`` (``plugin.hookspec``) with ``kwargs``: an implementation that
    raises, or calls ``sys.exit()``, is one ``SOM-PLUGIN-HOOK`` line naming the hook (the
    session finish then fails with it: exit 1, never a traceback and never exit 0)."""
    try:
        getattr(config.hook, name)(config=config, **kwargs)
    except EXTENSION_ERRORS as exc:
        raise InputError(
            "SOM-PLUGIN-HOOK",
            f"a {name} hook raised {exception_text(exc)}",
            "fix or remove the plugin (its hook implementations are listed by pytest "
            "--trace-config)",
        ) from None


__all__ = [
    "JUNIT_SCORE",
    "call_event",
    "hook_sources",
    "junit_scores",
    "loaded_line",
    "pytest_registry",
    "registry_for",
    "suite_engines",
    "suite_scorers",
    "with_identity_hook",
]
