"""The chat template's time bound (``data.split.template_render``): an expiry that the stopped
code loses or turns into another error still ends the rendering as the one bound line, and the
timer and handler are put back afterwards."""

from __future__ import annotations

import signal
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
