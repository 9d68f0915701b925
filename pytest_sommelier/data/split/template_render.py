"""The one call of a tokenizer's chat template: bounded in time and in output, dated once.

Every rendering ``sommelier format`` makes (both template policies, the native policy's
comparison renderings too) goes through ``render_chat``. The template runs in transformers'
Jinja2 sandbox, which blocks every escape with a ``SecurityError`` (kept: the caller words it as
its one line) but lets a template loop for as long as it likes (two nested ``range(100000)``
loops) or write as much as it likes. Here:

- a rendering that runs longer than ``RENDER_SECONDS`` is stopped (a ``SIGALRM`` timer, the
  standard way to interrupt Python code; it is armed only in the main thread, where ``sommelier
  format`` runs, and any timer already armed is restored afterwards). The timer fires again
  every ``REPEAT_SECONDS`` until the rendering stops, since Python ignores an exception raised
  inside a finalizer, and an expiry the template's library turns into an error of its own is
  still the bound. An expiry Python ignores that way is silent (it never reaches
  ``sys.unraisablehook``'s earlier owner, pytest's warning included), and the cyclic garbage
  collector is paused while the template runs, so no collector callback or finalizer of
  unrelated objects runs at the depth of a runaway recursive macro, where it would fail;
- a rendering longer than ``RENDER_CHARS`` characters is refused, and so is a template longer
  than ``TEMPLATE_CHARS``;
- ``strftime_now`` (Llama 3.1's template calls it for "Today Date") gives ``TEMPLATE_DATE``,
  not the clock, so a prompt never depends on the day ``format`` ran; the date is part of the
  rendered ``prompt_text``, hence of its ``prompt_sha256`` and of the split's digest. transformers
  hands a template only plain data, so the date is pinned in the template's text
  (``pinned_template``): each ``strftime_now("<literal format>")`` becomes the literal it gives on
  ``TEMPLATE_DATE`` and ``strftime_now is defined`` becomes ``true``; a template that still
  names ``strftime_now`` after that (a format that is not a literal) is refused.

Invariant kept: a template that never ends or writes without bound is one
``SOM-FORMAT-TEMPLATE-BOUND`` line naming the example, raised as ``TemplateBoundError`` (which
callers that turn other template errors into their own lines must let through).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime
from types import FrameType
from typing import Any

from pytest_sommelier.data.json_input import FIELD_DEPTH_LIMIT, depth_problem
from pytest_sommelier.errors import InputError

RENDER_SECONDS = 10.0
"""The longest one rendering may run (a real chat template takes milliseconds)."""
RENDER_CHARS = 4 * 1024 * 1024
"""The longest rendering taken, in characters (far above any model's context)."""
TEMPLATE_CHARS = 1024 * 1024
"""The longest chat template taken, in characters (real ones are a few thousand)."""
TEMPLATE_DATE = datetime(2024, 7, 26)
"""The date ``strftime_now`` gives a template (Llama 3.1's own fallback, ``26 Jul 2024``)."""


class TemplateBoundError(InputError):
    """A chat template that ran past ``RENDER_SECONDS`` or wrote more than ``RENDER_CHARS``."""


class _Expired(Exception):
    """Raised by the timer inside the template's code; turned into TemplateBoundError."""


REPEAT_SECONDS = 0.1
"""After the first expiry, the timer fires again this often until the rendering stops."""


@dataclasses.dataclass
class _Clock:
    """One rendering's timer: ``expired`` once it fired; ``armed`` while it may raise."""

    expired: bool = False
    armed: bool = True


_CALL = re.compile(r"""strftime_now\s*\(\s*(?:"([^"\\]*)"|'([^'\\]*)')\s*\)""")
_DEFINED = re.compile(r"strftime_now\s+is\s+(not\s+)?defined")


def pinned_template(template: str) -> str | None:
    """``template`` with ``strftime_now`` pinned to ``TEMPLATE_DATE`` (module docstring);
    the text unchanged when it does not name it; None when a use is left that cannot be
    pinned (a call whose format is not a string literal)."""
    if "strftime_now" not in template:
        return template

    def literal(match: re.Match[str]) -> str:
        written = TEMPLATE_DATE.strftime(match.group(1) or match.group(2) or "")
        return json.dumps(written)  # a JSON string literal is a Jinja string literal

    pinned = _DEFINED.sub(lambda m: "false" if m.group(1) else "true", template)
    pinned = _CALL.sub(literal, pinned)
    return None if "strftime_now" in pinned else pinned


def render_chat(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    *,
    add_generation_prompt: bool,
    example_id: str,
    tools: Any = None,
    seconds: float | None = None,
    chars: int | None = None,
    template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """``tokenizer.apply_chat_template(messages, tools=..., tokenize=False,
    **template_kwargs)`` under the bounds of the module docstring (``seconds`` and ``chars``,
    default ``RENDER_SECONDS`` and ``RENDER_CHARS`` as they are at the call);
    TemplateBoundError naming ``example_id`` past them. ``template_kwargs`` (``[format]
    template_kwargs``, checked by :func:`template_kwargs_problem`) reach the template as
    variables, e.g. ``enable_thinking``."""
    seconds = RENDER_SECONDS if seconds is None else seconds
    chars = RENDER_CHARS if chars is None else chars
    kwargs: dict[str, Any] = dict(template_kwargs or {})
    if tools is not None:
        kwargs["tools"] = tools
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str) and len(template) > TEMPLATE_CHARS:
        raise _bound(example_id, f"is {len(template)} characters long, more than {TEMPLATE_CHARS},")
    if isinstance(template, str) and "strftime_now" in template:
        pinned = pinned_template(template)
        if pinned is None:
            raise InputError(
                "SOM-FORMAT-TEMPLATE-DATE",
                f"example {example_id!r}: the chat template calls strftime_now with a format "
                "that is not a string literal, so its prompts would depend on the day format ran",
                "write the date into the template, or call strftime_now with a literal format "
                f"(sommelier pins it to {TEMPLATE_DATE:%Y-%m-%d})",
                where=f"example_id={example_id}",
            )
        kwargs["chat_template"] = pinned
    clock = _Clock(armed=False)
    try:
        with _deadline(seconds) as clock:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs
            )
    except _Expired:
        raise _bound(example_id, f"ran for more than {seconds:g} s") from None
    except Exception:
        if clock.expired:  # the expiry, turned into another error by the code it stopped
            raise _bound(example_id, f"ran for more than {seconds:g} s") from None
        raise
    if isinstance(text, str) and len(text) > chars:
        raise _bound(example_id, f"wrote {len(text)} characters, more than {chars}")
    return str(text)


RESERVED_KWARGS = frozenset(
    {
        "messages", "conversation", "tools", "documents", "chat_template", "tokenize",
        "add_generation_prompt", "continue_final_message", "return_tensors", "return_dict",
        "return_assistant_tokens_mask", "padding", "truncation", "max_length",
        "tokenizer_kwargs", "bos_token", "eos_token",
        # the tokenizer's other special tokens (transformers passes special_tokens_map)
        "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
        "additional_special_tokens",
        # the template's own globals: transformers' and jinja2.defaults.DEFAULT_NAMESPACE
        # (an option of that name would replace the function a template calls)
        "raise_exception", "strftime_now", "range", "dict", "lipsum", "cycler", "joiner",
        "namespace",
    }
)  # fmt: skip
"""Names ``apply_chat_template`` (or the template's own context) already uses: never a template
option (``add_generation_prompt`` is the format's own, prompt or conversation; ``namespace`` or
``raise_exception`` would replace the function Qwen's or Llama's template calls)."""
KWARGS_CHARS = 4096
"""Longest canonical JSON of the template options taken (real ones are a few flags)."""
_KWARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


def template_kwargs_problem(value: Any) -> str | None:
    """Why ``value`` cannot be the template options (a phrase), or None: a table of at most
    a few names (Python identifiers, none of :data:`RESERVED_KWARGS`) to JSON values (no date
    or time, no NaN or infinity, nested at most ``FIELD_DEPTH_LIMIT`` levels, as a call's
    arguments: a template walks them), at most :data:`KWARGS_CHARS` characters as canonical
    JSON."""
    if not isinstance(value, Mapping):
        return f"must be a table of option names to values, got {type(value).__name__}"
    for name in value:
        if not isinstance(name, str) or not _KWARG_NAME.match(name):
            return f"option name {str(name)[:40]!r} is not a Python identifier"
        if name in RESERVED_KWARGS:
            return f"option name {name!r} is one sommelier or transformers passes itself"
    try:
        text = json.dumps(dict(value), allow_nan=False, sort_keys=True, separators=(",", ":"))
        json.dumps(dict(value), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "holds a string with a lone surrogate (not UTF-8)"
    except (TypeError, ValueError) as exc:
        return f"holds a value that is not JSON ({str(exc)[:60]})"
    except RecursionError:
        return "is nested too deeply"
    deep = depth_problem(dict(value), FIELD_DEPTH_LIMIT)
    if deep is not None:
        return deep
    if len(text) > KWARGS_CHARS:
        return f"is longer than {KWARGS_CHARS} characters as JSON"
    return None


def _bound(example_id: str, what: str) -> TemplateBoundError:
    return TemplateBoundError(
        "SOM-FORMAT-TEMPLATE-BOUND",
        f"example {example_id!r}: the chat template {what} rendering one example",
        "use a chat template that renders a conversation in one pass (no unbounded loops or "
        "repetition)",
        where=f"example_id={example_id}",
    )


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[_Clock]:
    """Raise ``_Expired`` in the code running after ``seconds``, and again every
    ``REPEAT_SECONDS`` until the block ends (main thread only; elsewhere no timer is armed):
    Python ignores an exception raised where it cannot pass one on (a finalizer, a weakref
    callback; "Exception ignored in ..."), so one alarm alone could be lost and leave a
    runaway template running. The yielded clock says whether the time ran out, for code that
    turned ``_Expired`` into an error of its own. The previous SIGALRM handler and timer are put
    back; an alarm arriving while they are put back does nothing (the clock is disarmed first,
    at two levels). While the block runs (main thread only): an ``_Expired`` that Python
    ignores is dropped before ``sys.unraisablehook`` (every other ignored exception reaches the
    hook that was there), and the cyclic garbage collector is paused (a collector callback or a
    finalizer of other objects run at the depth of a recursive template would fail there).
    The hook and the collector's state are put back afterwards, whatever happened."""
    clock = _Clock()
    if threading.current_thread() is not threading.main_thread():
        clock.armed = False
        yield clock
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        if clock.armed:
            clock.expired = True
            raise _Expired

    earlier_hook = sys.unraisablehook

    def unraisable(args: sys.UnraisableHookArgs) -> None:
        if not isinstance(args.exc_value, _Expired):
            earlier_hook(args)

    collecting = gc.isenabled()
    gc.disable()
    sys.unraisablehook = unraisable
    try:
        previous = signal.signal(signal.SIGALRM, expire)
        started = time.monotonic()
        earlier, interval = signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_SECONDS)
        try:
            try:
                yield clock
            finally:
                clock.armed = False
        finally:
            clock.armed = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if earlier:
                left = earlier - (time.monotonic() - started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)
    finally:
        sys.unraisablehook = earlier_hook
        if collecting:
            gc.enable()


__all__ = [
    "KWARGS_CHARS",
    "RENDER_CHARS",
    "RENDER_SECONDS",
    "REPEAT_SECONDS",
    "RESERVED_KWARGS",
    "TEMPLATE_CHARS",
    "TEMPLATE_DATE",
    "TemplateBoundError",
    "pinned_template",
    "render_chat",
    "template_kwargs_problem",
]
