"""The plugin's command-line and ini options, read once into a frozen :class:`Settings`.

Invariants kept: every ``--sommelier-*`` option has an ini twin of the same name
(``sommelier_out``, ...); the command line wins over the ini file; :func:`build_settings`
reads and validates them all once at configure time (a bad value is a usage error naming the
option and its ini twin) and keeps the result in ``config.stash``; every other module reads
options only through :func:`settings_of`, never ``getoption``/``getini``. Building them imports
nothing beyond pytest and the standard library unless an option that needs more is given (the
entry point builds them in every pytest run).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_sommelier.numbers import (
    FALSE_WORDS,
    LABEL_PREFIX,
    LAST,
    LAST_ANY,
    TRUE_WORDS,
    bool_word,
    decimal_number,
    run_number,
    whole_number,
)

DEFAULT_MISSES = 10
_TRUE = TRUE_WORDS
_FALSE = FALSE_WORDS
_VALUE_HINT = (
    "a bare {flag} takes the next argument as its value: write {flag}={form}, or put the flag "
    "after the test paths"
)


@dataclass(frozen=True)
class Settings:
    """Every sommelier option, command line over ini, validated and typed."""

    out: str | None = None
    strict: bool = False
    strict_arms: tuple[str, ...] = ()  # with strict: only these arms' misses fail (empty: all)
    misses: int = DEFAULT_MISSES
    gates: bool = True
    baseline: tuple[str, ...] = ()
    timeout: float | None = None
    selfcheck: int = 0
    cache_dir: str | None = None
    no_cache: bool = False
    engine: str | None = None
    storage: str | None = None  # the run store; None: <rootdir>/.sommelier
    autosave: bool = False
    autosave_all: bool = False  # keep incomplete runs too (marked incomplete)
    autosave_pass: bool = False  # store only runs whose verdict is pass
    label: str | None = None  # the label the stored run carries (--sommelier-label)
    compare: str | None = None  # NUM, "last", "last-any", "label:NAME" or a run folder
    compare_fail: tuple[str, ...] = ()  # METRIC[:SLICE]:MARGIN, each checked at configure
    sample: tuple[int, int] | None = None  # (roots, seed): a seeded sample of every split
    arms: tuple[tuple[str, str], ...] = ()  # (arm, absolute adapter folder): --sommelier-arms


SETTINGS_KEY = pytest.StashKey[Settings]()

OPTIONS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "--sommelier-out",
        {"dest": "sommelier_out", "metavar": "DIR", "default": None},
        "run directory for artifacts (default: runs/<run_id>)",
        "string",
    ),
    (
        "--sommelier-strict",
        {
            "dest": "sommelier_strict",
            "nargs": "?",
            "const": "all",
            "metavar": "ARM[,ARM]",
            "default": None,
        },
        "make every non-exact example a failure (must-pass suites, --lf drilldown); "
        "--sommelier-strict=ARM[,ARM] for those arms only (on the command line a value is "
        "always arm names, all = every arm; ini: true/false, all, or the arms)",
        "string",
    ),
    (
        "--sommelier-misses",
        {"dest": "sommelier_misses", "metavar": "N", "default": None},
        "how many misses the terminal drilldown shows (default 10; 0 for none)",
        "string",
    ),
    (
        "--sommelier-gates",
        {"dest": "sommelier_gates", "choices": ["on", "off"], "default": None},
        "evaluate gates and write the verdict (on, default) or not (off: drilldown runs)",
        "string",
    ),
    (
        "--sommelier-baseline",
        {"dest": "sommelier_baseline", "metavar": "[ARM=]DIR", "action": "append", "default": None},
        "use a stored arm folder of an earlier run (runs/<id>/eval/<arm>) instead of "
        "generating that arm; repeatable (ini: one per line)",
        "linelist",
    ),
    (
        "--sommelier-timeout",
        {"dest": "sommelier_timeout", "metavar": "SECONDS", "default": None},
        "per-batch generation timeout; a batch that does not return in time is an error "
        "for its items and the arm's later batches (default: none)",
        "string",
    ),
    (
        "--sommelier-selfcheck",
        {"dest": "sommelier_selfcheck", "metavar": "N", "default": None},
        "determinism self-check: regenerate the first N examples of each arm (per process) "
        "at batch size 1 and record how many outputs differ in the telemetry (default 0)",
        "string",
    ),
    (
        "--sommelier-cache-dir",
        {"dest": "sommelier_cache_dir", "metavar": "DIR", "default": None},
        "generation cache folder (default: .pytest_cache/d/sommelier-generations)",
        "string",
    ),
    (
        "--sommelier-no-cache",
        {"dest": "sommelier_no_cache", "action": "store_true", "default": None},
        "do not read or write the generation cache",
        "bool",
    ),
    (
        "--sommelier-engine",
        {"dest": "sommelier_engine", "metavar": "NAME", "default": None},
        "engine for every suite: transformers, vllm or openai (overrides [engine] name; "
        "docs/engines.md)",
        "string",
    ),
    (
        "--sommelier-storage",
        {"dest": "sommelier_storage", "metavar": "DIR", "default": None},
        "the run store that --sommelier-autosave writes and --sommelier-compare reads "
        "(default: .sommelier at the rootdir)",
        "string",
    ),
    (
        "--sommelier-autosave",
        {
            "dest": "sommelier_autosave",
            "metavar": "all|pass",
            "nargs": "?",
            "const": "true",
            "default": None,
        },
        "after the session, copy each complete suite run into the run store as its next "
        "numbered run; =pass stores only runs whose verdict is pass; =all keeps incomplete "
        "runs too, marked incomplete (ini: true, pass or all)",
        "string",
    ),
    (
        "--sommelier-label",
        {"dest": "sommelier_label", "metavar": "NAME", "default": None},
        "a label the stored run carries (with --sommelier-autosave), e.g. v5; compare with "
        "it later by --sommelier-compare=label:v5 or `sommelier compare X label:v5`",
        "string",
    ),
    (
        "--sommelier-compare",
        {
            "dest": "sommelier_compare",
            "metavar": "NUM|last|last-any|label:NAME|PATH",
            "nargs": "?",
            "const": LAST,
            "default": None,
        },
        "compare every arm with the same-named arm of a stored run: a store number, last "
        "(the default: the newest complete run of the suite whose verdict was pass), last-any "
        "(the newest complete run, whatever its verdict), label:NAME or a run folder",
        "string",
    ),
    (
        "--sommelier-compare-fail",
        {
            "dest": "sommelier_compare_fail",
            "metavar": "METRIC[:SLICE]:MARGIN",
            "action": "append",
            "default": None,
        },
        "fail when this run's METRIC (in SLICE, default overall) minus the stored run's, "
        "paired by example, is below -MARGIN, e.g. full_call_exact_match:0.02; repeatable "
        "(ini: one per line); needs --sommelier-compare",
        "linelist",
    ),
    (
        "--sommelier-arms",
        {"dest": "sommelier_arms", "metavar": "ARM=DIR", "action": "append", "default": None},
        "evaluate the suite's adapter arm ARM from the adapter folder DIR (relative to the "
        "invocation folder) instead of what the suite file writes; a checkpoint sweep's glob "
        "arm becomes one arm named ARM (its [selection] left out): the shipped adapter or the "
        "chosen checkpoint from the sweep's own suite file; repeatable (ini: one per line)",
        "linelist",
    ),
    (
        "--sommelier-sample",
        {"dest": "sommelier_sample", "metavar": "N[:SEED]", "default": None},
        "evaluate a seeded sample of N roots with their translations (seed 0 unless given), "
        "with a complete verdict on the sample; the run says it is a sample and never "
        "compares as the full suite",
        "string",
    ),
]


def add_options(parser: pytest.Parser) -> None:
    """Register every option in one ``sommelier`` group of ``pytest --help``."""
    group = parser.getgroup("sommelier", "pytest-sommelier (tool-call adapter evaluation)")
    for flag, kwargs, help_text, ini_type in OPTIONS:
        group.addoption(flag, help=help_text, **kwargs)
        if ini_type:
            parser.addini(kwargs["dest"], help=help_text, type=ini_type, default=None)  # type: ignore[arg-type]


def _raw(config: pytest.Config, name: str) -> Any:
    """One option's raw value: the command line wins, then the ini file (None when unset)."""
    value = config.getoption(name)
    if value is None or value == []:
        value = config.getini(name)
    return None if value == "" or value == [] else value


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')} / ini {name}"


def _number(config: pytest.Config, name: str, kind: type, *, positive: bool) -> Any:
    """An option's number by the one number rule (``pytest_sommelier.numbers``: ASCII digits,
    finite), bounded below by 0 (``positive``: above 0)."""
    value = _raw(config, name)
    if value is None:
        return None
    text = str(value)
    number = whole_number(text) if kind is int else decimal_number(text)
    if number is None:
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag(name)}: {value!r} is not a finite "
            f"{'number' if kind is float else 'whole number'} (ASCII digits, e.g. "
            f"{'2.5' if kind is float else '10'})"
        )
    if (positive and number <= 0) or number < 0:
        bound = "greater than 0" if positive else "0 or more"
        raise pytest.UsageError(f"SOM-OPTION-VALUE: {_flag(name)}: {value!r} must be {bound}")
    return number


def _bool(config: pytest.Config, name: str) -> bool:
    value = _raw(config, name)
    if isinstance(value, str):  # an ini value pytest did not convert
        word = bool_word(value)
        if word is None:
            raise pytest.UsageError(
                f"SOM-OPTION-VALUE: {_flag(name)}: {value!r} is not true or false"
            )
        return word
    return bool(value)


def _strict(config: pytest.Config) -> tuple[bool, tuple[str, ...]]:
    """``--sommelier-strict`` / ini ``sommelier_strict``: off, every arm (a bare flag, ``all``,
    ini ``true``) or the arms named (``--sommelier-strict=adapter,v2``); arm names follow the
    suite's name rule, so a path a bare flag swallowed (``--sommelier-strict tests/``) is a
    usage error. On the command line a value is always arm names (``all`` aside), so an arm
    named ``no`` is never read as a boolean; true/false words are the ini file's."""
    on_command_line = config.getoption("sommelier_strict") is not None
    value = _raw(config, "sommelier_strict")
    if on_command_line and str(config.getoption("sommelier_strict")).strip() == "":
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_strict')}: an empty value names no arm "
            "(write a bare --sommelier-strict or =all for every arm, or =ARM[,ARM])"
        )
    if value is None or isinstance(value, bool):
        return bool(value), ()
    text = str(value).strip()
    if text.lower() == "all":
        return True, ()
    word = None if on_command_line else bool_word(text)
    if word is not None:
        return word, ()
    arms = tuple(part.strip() for part in text.split(","))
    bad = next((a for a in arms if not a or not all(c.isalnum() or c in "_-" for c in a)), None)
    if bad is not None:
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_strict')}: {text!r} is not ARM[,ARM] "
            "(write --sommelier-strict=ARM; a path right after a bare --sommelier-strict is "
            "read as its value: put paths first)"
        )
    return True, arms


def _autosave(config: pytest.Config) -> tuple[bool, bool, bool]:
    """``(autosave, keep incomplete, passing only)`` from ``--sommelier-autosave[=all|pass]``
    or its ini twin."""
    value = _raw(config, "sommelier_autosave")
    if value is None:
        return False, False, False
    text = str(value).strip().lower()
    if text == "all":
        return True, True, False
    if text == "pass":
        return True, False, True
    word = bool_word(text)
    if word is not None:
        return word, False, False
    raise pytest.UsageError(
        f"SOM-OPTION-VALUE: {_flag('sommelier_autosave')}: {value!r} is not true, false, pass "
        "or all "
        f"(hint: {_VALUE_HINT.format(flag='--sommelier-autosave', form='all')})"
    )


def _compare(config: pytest.Config) -> str | None:
    """The stored run to compare with: ``last``, ``last-any``, a store number (ASCII digits,
    ``pytest_sommelier.numbers.run_number``), ``label:NAME``, or a run folder (one that holds
    ``suite.resolved.json``; relative to the invocation folder)."""
    value = _raw(config, "sommelier_compare")
    if value is None:
        return None
    text = str(value).strip()
    if text in (LAST, LAST_ANY) or run_number(text) is not None:
        return text
    if text.startswith(LABEL_PREFIX):
        return _label_text(text.removeprefix(LABEL_PREFIX), "sommelier_compare", value)
    folder = Path(text)
    if not folder.is_absolute():
        folder = config.invocation_params.dir / folder
    if not (folder / "suite.resolved.json").is_file():
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_compare')}: {value!r} is not a store number, "
            "last, last-any, label:NAME or a run folder (a folder holding suite.resolved.json) "
            "(hint: "
            f"{_VALUE_HINT.format(flag='--sommelier-compare', form='last')})"
        )
    return str(folder)


def _label_text(label: str, name: str, value: Any) -> str:
    """A run label, checked by the arm/slice name rule (letters, digits, '_', '-')."""
    if (
        not label
        or len(label) > 64
        or not all(c.isascii() and (c.isalnum() or c in "_-") for c in label)
    ):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag(name)}: {shown}: a label is 1 to 64 ASCII letters, "
            "digits, '_' or '-' (e.g. v5)"
        )
    if run_number(label) is not None or label in (LAST, LAST_ANY):
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag(name)}: {value!r}: a label cannot be a number, last or "
            "last-any (it would read as one)"
        )
    return (LABEL_PREFIX + label) if name == "sommelier_compare" else label


def _compare_fail(config: pytest.Config, compare: str | None) -> tuple[str, ...]:
    """Every ``METRIC[:SLICE]:MARGIN``, parsed once here so a bad one stops the session before
    any model loads (``data.store.history_gate`` is imported only when the option is given)."""
    values = _raw(config, "sommelier_compare_fail") or []
    if not values:
        return ()
    from pytest_sommelier.data.store.history_gate import parse_fail_spec
    from pytest_sommelier.errors import SommelierError

    texts = []
    for value in values:
        try:
            texts.append(parse_fail_spec(str(value), option=_flag("sommelier_compare_fail")).text)
        except SommelierError as error:
            raise pytest.UsageError(str(error)) from None
    if compare is None:
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_compare_fail')}: needs a stored run to compare "
            f"with (hint: add --sommelier-compare=last, or a store number; ini sommelier_compare)"
        )
    return tuple(texts)


def _sample(config: pytest.Config) -> tuple[int, int] | None:
    """``--sommelier-sample N[:SEED]`` as ``(roots, seed)`` (``data.split.sample`` is imported
    only when the option is given)."""
    value = _raw(config, "sommelier_sample")
    if value is None:
        return None
    from pytest_sommelier.data.split.sample import parse_sample
    from pytest_sommelier.errors import SommelierError

    try:
        return parse_sample(str(value).strip(), _flag("sommelier_sample"))
    except SommelierError as error:
        raise pytest.UsageError(str(error)) from None


def _arms(config: pytest.Config) -> tuple[tuple[str, str], ...]:
    """Every ``--sommelier-arms ARM=DIR`` / ini ``sommelier_arms`` line as ``(arm, absolute
    folder)``: ARM by the suite's arm-name rule, each once; DIR an existing folder, relative to
    the invocation folder. Whether the suite has such an adapter arm is judged per suite at
    collection (``data.suite.globs.with_arms``)."""
    values = _raw(config, "sommelier_arms") or []
    if not values:
        return ()
    from pytest_sommelier.data.suite.names import NAME  # only when the option is given

    found: dict[str, str] = {}
    for value in values:
        text = str(value).strip()
        name, equals, where = text.partition("=")
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        if not equals or not NAME.match(name) or name == "overall" or not where.strip():
            raise pytest.UsageError(
                f"SOM-OPTION-VALUE: {_flag('sommelier_arms')}: {shown} is not ARM=DIR (an arm "
                "name of the suite: letters, digits, '_' or '-'; then the adapter's folder), "
                "e.g. --sommelier-arms=adapter=out/checkpoint-30"
            )
        if name in found:
            raise pytest.UsageError(
                f"SOM-OPTION-VALUE: {_flag('sommelier_arms')}: arm {name!r} is given twice"
            )
        try:
            folder = Path(where.strip()).expanduser()
            if not folder.is_absolute():
                folder = config.invocation_params.dir / folder
            is_folder = folder.is_dir()
        except (OSError, ValueError):  # a name the file system refuses (too long, NUL)
            is_folder = False
        except RuntimeError:  # '~name' of no such user: pathlib cannot expand it
            is_folder = False
        if not is_folder:
            raise pytest.UsageError(
                f"SOM-OPTION-VALUE: {_flag('sommelier_arms')}: {shown}: no such adapter "
                "folder (relative to the invocation folder; one folder, not a glob: a sweep "
                "is the suite file's adapter glob)"
            )
        found[name] = os.path.normpath(folder)
    return tuple(found.items())


def _engine(config: pytest.Config) -> str | None:
    """``--sommelier-engine NAME`` / ini ``sommelier_engine``: a name, checked for its shape
    only. Whether an engine of that name is registered (a built-in, an installed entry point,
    or a ``pytest_sommelier_add_engines`` hook of a ``conftest.py`` beside a suite, which is
    not loaded yet at configure time) is judged per suite at collection
    (``plugin.collect.refuse_unknown_engine``: ``SOM-ENGINE-NAME``), with that suite's hooks."""
    value = _raw(config, "sommelier_engine")
    if value is None:
        return None
    text = str(value).strip()
    if not text or any(c.isspace() or not c.isprintable() for c in text):
        from pytest_sommelier.registry import BUILTIN  # only for the line (the idle cost)

        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_engine')}: {value!r} is not an engine name "
            f"(a built-in: {', '.join(BUILTIN['engines'])}, or the name an extension registers)"
        )
    return text


def build_settings(config: pytest.Config) -> Settings:
    """Read and validate every option once (a usage error naming the option, never a crash
    halfway through a session); the result is what :func:`settings_of` returns."""
    gates = _raw(config, "sommelier_gates")
    if gates is not None and str(gates).lower() not in ("on", "off"):
        raise pytest.UsageError(
            f"SOM-OPTION-VALUE: {_flag('sommelier_gates')}: {gates!r} is not on or off"
        )
    engine = _engine(config)
    strict, strict_arms = _strict(config)
    misses = _number(config, "sommelier_misses", int, positive=False)
    selfcheck = _number(config, "sommelier_selfcheck", int, positive=False)
    baseline = _raw(config, "sommelier_baseline") or []
    out = _raw(config, "sommelier_out")
    cache_dir = _raw(config, "sommelier_cache_dir")
    storage = _raw(config, "sommelier_storage")
    autosave, autosave_all, autosave_pass = _autosave(config)
    compare = _compare(config)
    label = _raw(config, "sommelier_label")
    if label is None and config.getoption("sommelier_label") is not None:
        label = ""  # --sommelier-label= (empty): refused below, never a run without its label
    return Settings(
        out=None if out is None else str(out),
        strict=strict,
        strict_arms=strict_arms,
        misses=DEFAULT_MISSES if misses is None else misses,
        gates=gates is None or str(gates).lower() == "on",
        baseline=tuple(str(value) for value in baseline),
        timeout=_number(config, "sommelier_timeout", float, positive=True),
        selfcheck=selfcheck or 0,
        cache_dir=None if cache_dir is None else str(cache_dir),
        no_cache=_bool(config, "sommelier_no_cache"),
        engine=engine,
        storage=None if storage is None else str(storage),
        autosave=autosave,
        autosave_all=autosave_all,
        autosave_pass=autosave_pass,
        label=None if label is None else _label_text(str(label).strip(), "sommelier_label", label),
        compare=compare,
        compare_fail=_compare_fail(config, compare),
        sample=_sample(config),
        arms=_arms(config),
    )


def configure_settings(config: pytest.Config) -> Settings:
    """Build the settings and keep them in ``config.stash`` (called once, at configure)."""
    settings = build_settings(config)
    config.stash[SETTINGS_KEY] = settings
    return settings


def settings_of(config: pytest.Config) -> Settings:
    """The session's settings (built at configure time)."""
    return config.stash[SETTINGS_KEY]


def store_path(config: pytest.Config) -> Path:
    """The run store's folder: ``--sommelier-storage`` (relative to the invocation folder,
    like every path option), else ``.sommelier`` at the rootdir."""
    from pytest_sommelier.data.store.layout import DEFAULT_STORE  # the store's names only

    storage = settings_of(config).storage
    if storage is None:
        return config.rootpath / DEFAULT_STORE
    path = Path(storage)
    return path if path.is_absolute() else config.invocation_params.dir / path
