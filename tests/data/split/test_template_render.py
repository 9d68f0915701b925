"""The chat template's time bound (``data.split.template_render``): an expiry that the stopped
code loses or turns into another error still ends the rendering as the one bound line, a lost
expiry is silent, the collector is paused while the template runs, and the timer, the handler,
the unraisable hook and the collector's state are put back afterwards."""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_sommelier.data.split import template_render
from pytest_sommelier.data.split.template_render import TemplateBoundError, render_chat

SECONDS = 0.05
WATCHDOG = 10.0  # the test fails instead of hanging


@pytest.fixture
def watchdog() -> Iterator[None]:
    """Fail the test (SIGUSR1 in the main thread, raising pytest's own failure, which no
    ``except Exception`` catches) if a rendering outlives the bound by far."""

    def overdue(signum: int, frame: Any) -> None:
        pytest.fail(f"the rendering ran on past {WATCHDOG:g} s: the bound did not hold")

    before = signal.signal(signal.SIGUSR1, overdue)
    main = threading.main_thread().ident
    assert main is not None
    timer = threading.Timer(WATCHDOG, signal.pthread_kill, (main, signal.SIGUSR1))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, before)


def _spin(seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


class Swallowing:
    """A template whose code loses the first expiry (as a finalizer would: Python ignores an
    exception raised there), then keeps running."""

    chat_template = None

    def __init__(self) -> None:
        self.lost = 0

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        try:
            _spin()
        except Exception:
            self.lost += 1
        _spin()
        return "never"


class Converting:
    """A template whose code turns the expiry into an error of its own."""

    chat_template = None

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        try:
            _spin()
        except Exception as error:
            raise ValueError("a syntax error, says the library") from error
        return "never"


class InAFinalizer:
    """A template whose first expiry lands in a finalizer (Python ignores it there: "Exception
    ignored in ..."), which also notes whether the collector runs while the template does."""

    chat_template = None

    def __init__(self) -> None:
        self.collecting: list[bool] = []

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        self.collecting.append(gc.isenabled())
        Spinning()  # dropped at once: its finalizer spins until the alarm
        _spin()
        return "never"


class Spinning:
    def __del__(self) -> None:
        _spin()


class LoudFinalizer:
    """A template whose finalizer fails on its own: Python ignores that error too, and it must
    still reach the unraisable hook."""

    chat_template = None

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        Loud()
        return "rendered"


class Loud:
    def __del__(self) -> None:
        raise ValueError("a finalizer's own error")


class Failing:
    """A template that fails on its own, well inside the bound."""

    chat_template = None

    def apply_chat_template(self, *args: Any, **kwargs: Any) -> str:
        raise ValueError("undefined variable")


def render(tokenizer: Any) -> str:
    return render_chat(tokenizer, [{"role": "user", "content": "hi"}],
                       add_generation_prompt=True, example_id="en-1", seconds=SECONDS)  # fmt: skip


def test_a_lost_expiry_is_followed_by_another_until_the_rendering_stops(watchdog: None) -> None:
    tokenizer = Swallowing()
    started = time.monotonic()
    with pytest.raises(TemplateBoundError, match=r"en-1.*ran for more than 0\.05 s"):
        render(tokenizer)
    assert tokenizer.lost == 1
    assert time.monotonic() - started < SECONDS + 5 * template_render.REPEAT_SECONDS + 2


def test_an_expiry_turned_into_another_error_is_still_the_bound(watchdog: None) -> None:
    with pytest.raises(TemplateBoundError, match="ran for more than"):
        render(Converting())


def test_an_error_of_the_template_itself_passes_on_unchanged() -> None:
    with pytest.raises(ValueError, match="undefined variable"):
        render(Failing())


@pytest.mark.parametrize("tokenizer", [Swallowing, Converting, Failing])
def test_the_timer_and_the_handler_are_put_back(watchdog: None, tokenizer: type) -> None:
    def mine(signum: int, frame: Any) -> None:
        raise AssertionError("the earlier handler must not run during the rendering")

    before = signal.signal(signal.SIGALRM, mine)
    try:
        with pytest.raises((TemplateBoundError, ValueError)):
            render(tokenizer())
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is mine
        time.sleep(3 * template_render.REPEAT_SECONDS)  # no late alarm reaches anyone
    finally:
        signal.signal(signal.SIGALRM, before)


@contextlib.contextmanager
def unraisable() -> Iterator[list[sys.UnraisableHookArgs]]:
    """What reaches ``sys.unraisablehook`` while the block runs (the hook that was there, pytest's
    own on any version, is put back after), and whether the rendering put the hook back. Set in
    the test's body, not a fixture: pytest before 8.4 installs its own hook for each phase."""
    seen: list[sys.UnraisableHookArgs] = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
        assert sys.unraisablehook == seen.append, "the rendering must put the hook back"
    finally:
        sys.unraisablehook = before


def test_an_expiry_lost_in_a_finalizer_is_silent_and_the_collector_is_paused(
    watchdog: None,
) -> None:
    tokenizer = InAFinalizer()
    assert gc.isenabled()
    with unraisable() as seen:
        with pytest.raises(TemplateBoundError, match="ran for more than"):
            render(tokenizer)
    assert seen == []  # V40: the lost expiry reached nobody
    assert tokenizer.collecting == [False]  # no collector run at a template's depth
    assert gc.isenabled()  # and it runs again afterwards


def test_another_error_a_finalizer_loses_still_reaches_the_hook() -> None:
    with unraisable() as seen:
        assert render(LoudFinalizer()) == "rendered"
    assert [type(args.exc_value) for args in seen] == [ValueError]


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        with unraisable() as seen:
            assert render(LoudFinalizer()) == "rendered"
        assert not gc.isenabled()
        assert [type(args.exc_value) for args in seen] == [ValueError]
    finally:
        gc.enable()
