"""Template policy ``sommelier.native-tools.v1``: the chat template's own tool calling.

An adapter fine-tuned with ``tokenizer.apply_chat_template(..., tools=...)`` (TRL's
``SFTTrainer`` and most recipes) learned the template's own tool block and its own tool-call
wrapper. This policy renders a prepared example the same way:

- ``messages`` = ``[system?, user]`` (the prepared ``system`` field, when given, then the query);
- the tools go to the template as ``tools=``, in the function-spec shape HF templates take:
  ``{"type": "function", "function": {"name", "description"?, "parameters"}}`` (:func:`tool_specs`);
- the gold call is one assistant message ``{"role": "assistant", "tool_calls": [{"type":
  "function", "function": {"name", "arguments": {...}}}]}`` (the shape HF templates render);
- ``prompt_text`` renders the messages with the generation prompt, ``full_text`` the messages
  and the assistant turn; ``target_text`` is ``full_text`` after ``prompt_text``, trailing
  whitespace removed: the assistant part up to and including the template's end of turn
  (e.g. ``<tool_call>\\n{...}\\n</tool_call><|im_end|>``).

Invariants kept by a returned :class:`NativeRendering` (each broken one is an InputError naming
the example and what was seen):

- the template renders ``tools=`` (with and without them the prompt differs);
- the template renders ``tool_calls`` (it neither raises nor renders the same text as an empty
  assistant turn);
- ``prompt_text`` is a prefix of ``full_text``;
- parser v1, run over ``target_text`` with the given ``arguments_key``, returns status ``ok``
  and exactly the gold call (canonical JSON equal), so every row the split holds is scorable;
  for a split read by parser v2 (``calls`` given), parser v2 returns exactly the gold calls,
  in order (the assistant message holds every one of them as ``tool_calls``).

This module never imports ``formatting`` or ``split`` (both import it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_sommelier.core.abstention import usable_markers
from pytest_sommelier.core.canonical import canonical_json_text, sha256_text
from pytest_sommelier.core.parse import (
    ARGUMENTS_KEYS,
    DEFAULT_ARGUMENTS_KEY,
    PARSER_VERSION,
    STATUS_OK,
    parse_tool_call,
)
from pytest_sommelier.core.parse_v2 import PARSER_V2_VERSION, parse_tool_calls
from pytest_sommelier.core.types import Call
from pytest_sommelier.data.split.template_render import TemplateBoundError, render_chat
from pytest_sommelier.errors import InputError, exception_text

POLICY_NATIVE_TOOLS_V1 = "sommelier.native-tools.v1"

_EXCERPT = 80


class NativeExample(Protocol):
    """What the policy reads of a prepared example (``formatting.PreparedExample`` has it)."""

    @property
    def example_id(self) -> str: ...
    @property
    def query(self) -> str: ...
    @property
    def tools(self) -> tuple[dict[str, Any], ...]: ...
    @property
    def gold_call(self) -> Call | None: ...
    @property
    def system(self) -> str | None: ...


@dataclass(frozen=True)
class NativeRendering:
    """One example rendered under the policy (the module docstring lists what holds)."""

    messages: list[dict[str, str]]
    tools: list[dict[str, Any]]
    prompt_text: str
    full_text: str
    target_text: str
    call_markers: tuple[str, ...] = ()  # the wrapper around a call (no-call rows only)


def tool_specs(tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prepared tools -> HF function specs ``{"type": "function", "function": {...}}`` (order and
    keys kept; ``description`` only when the tool has one)."""
    specs = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool["name"]}
        if "description" in tool:
            function["description"] = tool["description"]
        function["parameters"] = tool["parameters"]
        specs.append({"type": "function", "function": function})
    return specs


def native_messages(example: NativeExample) -> list[dict[str, str]]:
    """The prompt messages: ``[system?, user]``."""
    system = getattr(example, "system", None)
    head = [{"role": "system", "content": system}] if system is not None else []
    return [*head, {"role": "user", "content": example.query}]


def gold_message(gold_call: Call, call_id: str | None = None) -> dict[str, Any]:
    """The gold call as the assistant message HF templates render (no ``content`` key), with
    the tool call's ``id`` when one is given (:func:`tool_call_id`)."""
    return calls_message((gold_call,), None if call_id is None else (call_id,))


def calls_message(calls: Sequence[Call], call_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """The gold calls, in order, as one assistant message's ``tool_calls`` (each with its id
    when ``call_ids`` are given)."""
    tool_calls: list[dict[str, Any]] = []
    for index, gold_call in enumerate(calls):
        function = {"name": gold_call["name"], "arguments": gold_call["arguments"]}
        call: dict[str, Any] = {"type": "function", "function": function}
        if call_ids is not None:
            call["id"] = call_ids[index]
        tool_calls.append(call)
    return {"role": "assistant", "tool_calls": tool_calls}


def call_ids(example_id: str, count: int) -> tuple[str, ...]:
    """The ids of an example's ``count`` gold calls: :func:`tool_call_id` of the example for
    the first (as for one call), of ``<example_id>:<index>`` for the others."""
    return tuple(
        tool_call_id(example_id if index == 0 else f"{example_id}:{index}")
        for index in range(count)
    )


TOOL_CALL_ID_LENGTH = 9
"""The length of the gold call's id where a template requires one (Mistral-Nemo's template:
"Tool call IDs should be alphanumeric strings with length 9!")."""


def tool_call_id(example_id: str) -> str:
    """The gold call's id for a template that requires one: the first 9 hex digits of
    ``sha256("sommelier.tool-call-id:" + example_id)``, so the same example always gets the
    same id (the id is in ``full_text`` and ``target_text``, which every arm shares)."""
    return sha256_text("sommelier.tool-call-id:" + example_id)[:TOOL_CALL_ID_LENGTH]


def native_target_text(prompt_text: str, full_text: str) -> str:
    """The assistant part: ``full_text`` after ``prompt_text``, trailing whitespace removed."""
    return full_text[len(prompt_text) :].rstrip()


def check_arguments_key(arguments_key: str) -> str:
    """``arguments_key`` if parser v1 knows it; InputError naming --arguments-key otherwise."""
    if arguments_key not in ARGUMENTS_KEYS:
        raise InputError(
            "SOM-FORMAT-ARGUMENTS-KEY",
            f"unknown arguments key {arguments_key!r}",
            f"use one of: {', '.join(ARGUMENTS_KEYS)}",
            where="--arguments-key",
        )
    return arguments_key


def read_gold_call(
    target_text: str, arguments_key: str = DEFAULT_ARGUMENTS_KEY
) -> tuple[Call | None, str]:
    """The gold call of a native row: parser v1 over ``target_text`` (the one reading rule for
    format-time checks and split loading); ``(call, "ok")`` or ``(None, status)``."""
    return parse_tool_call(target_text, arguments_key=arguments_key)


def _excerpt(text: str) -> str:
    return repr(text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "...")


def _refuse(example: NativeExample, code: str, seen: str, hint: str) -> InputError:
    return InputError(
        code,
        f"example {example.example_id!r}: {seen}",
        hint,
        where=f"example_id={example.example_id}",
    )


def _render(
    tokenizer: Any,
    example: NativeExample,
    messages: list[dict[str, Any]],
    tools: Any,
    prompt: bool,
    kwargs: Mapping[str, Any] | None = None,
) -> str:
    return render_chat(
        tokenizer,
        messages,
        tools=tools,
        add_generation_prompt=prompt,
        example_id=example.example_id,
        template_kwargs=kwargs,
    )


def _render_or_none(
    tokenizer: Any,
    example: NativeExample,
    messages: list[dict[str, Any]],
    tools: Any,
    prompt: bool,
    kwargs: Mapping[str, Any] | None = None,
) -> str | None:
    """A comparison rendering; None when the template raises (then it compares unequal). A
    template past its bounds (``TemplateBoundError``) is no comparison: it is raised."""
    try:
        return _render(tokenizer, example, messages, tools, prompt, kwargs)
    except TemplateBoundError:
        raise
    except Exception:
        return None


def _first_line(exc: BaseException) -> str:
    return exception_text(exc, 160)


_TOOLS_IN_SYSTEM_HINT = "or format with --policy sommelier.tools-in-system.v1"


def render_native(
    example: NativeExample,
    tokenizer: Any,
    *,
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    template_kwargs: Mapping[str, Any] | None = None,
    calls: Sequence[Call] | None = None,
) -> NativeRendering:
    """Render ``example`` under ``sommelier.native-tools.v1`` (every rendering with the
    ``template_kwargs``) and check every invariant. ``calls``: the example's gold calls for a
    split read by parser v2 (rendered together, read back by parser v2); None: parser v1's
    one gold call."""
    kw = template_kwargs
    messages = native_messages(example)
    specs = tool_specs(example.tools)
    try:
        prompt = _render(tokenizer, example, messages, specs, True, kw)
    except TemplateBoundError:
        raise
    except Exception as exc:  # a template's raise_exception, or a type error inside it
        raise _refuse(
            example,
            "SOM-FORMAT-TEMPLATE-RENDER",
            f"the chat template raised rendering the prompt with tools=: {_first_line(exc)}",
            f"use a chat template that renders [system?, user] with tools, "
            f"{_TOOLS_IN_SYSTEM_HINT}",
        ) from exc
    if prompt == _render_or_none(tokenizer, example, messages, None, True, kw):
        raise _refuse(
            example,
            "SOM-FORMAT-TEMPLATE-IGNORES-TOOLS",
            "the chat template renders the same prompt with and without tools=, so the model "
            "would never see the tools",
            f"use a tokenizer whose chat template renders tools, {_TOOLS_IN_SYSTEM_HINT}",
        )
    gold = example.gold_call if example.gold_call is not None else probe_call(example)
    golds = tuple(calls) if calls and example.gold_call is not None else (gold,)
    try:
        full = _render(tokenizer, example, [*messages, calls_message(golds)], specs, False, kw)
    except TemplateBoundError:
        raise
    except Exception as exc:  # a template's raise_exception, or a type error inside it
        # a template that requires a tool-call id (Mistral-Nemo's) gets the deterministic one
        with_id = calls_message(golds, call_ids(example.example_id, len(golds)))
        found = _render_or_none(tokenizer, example, [*messages, with_id], specs, False, kw)
        if found is not None:
            full = found
        else:
            raise _refuse(
                example,
                "SOM-FORMAT-TEMPLATE-NO-TOOL-CALLS",
                f"the chat template raised rendering the gold call as assistant tool_calls "
                f"(with and without a tool-call id): {_first_line(exc)}",
                f"the template has no tool-call support: use one that renders tool_calls, "
                f"{_TOOLS_IN_SYSTEM_HINT}",
            ) from exc
    empty = _render_or_none(
        tokenizer, example, [*messages, {"role": "assistant", "content": ""}], specs, False, kw
    )
    if full == empty:
        raise _refuse(
            example,
            "SOM-FORMAT-TEMPLATE-NO-TOOL-CALLS",
            "the chat template drops the assistant's tool_calls (it renders the same text as "
            "an empty assistant turn)",
            f"the template has no tool-call support: use one that renders tool_calls, "
            f"{_TOOLS_IN_SYSTEM_HINT}",
        )
    if not full.startswith(prompt):
        raise _refuse(
            example,
            "SOM-FORMAT-TEMPLATE-PREFIX",
            "the chat template's prompt_text is not a prefix of its full_text, so a generated "
            "continuation could never reproduce the target",
            "use a tokenizer whose chat template renders the generation prompt as a prefix of "
            "the conversation with the assistant turn",
        )
    target = native_target_text(prompt, full)
    if calls is not None and example.gold_call is not None:
        _check_calls_target(example, target, arguments_key, golds)
    else:
        _check_target(example, target, arguments_key, gold)
    if example.gold_call is not None:
        return NativeRendering(messages, specs, prompt, full, target)
    # an abstention row: the target is the gold text answer; the call markers are the wrapper
    # the template puts around the probe call, which the empty turn does not have
    answer = getattr(example, "answer", None) or ""
    answered = _render(
        tokenizer, example, [*messages, {"role": "assistant", "content": answer}], specs, False
    )
    if not answered.startswith(prompt):
        raise _refuse(
            example,
            "SOM-FORMAT-TEMPLATE-PREFIX",
            "the chat template's prompt_text is not a prefix of the rendering with the "
            "assistant's answer",
            "use a tokenizer whose chat template renders the generation prompt as a prefix of "
            "the conversation with the assistant turn",
        )
    markers = wrapper_markers(target, _after_common_prefix(prompt, empty or ""))
    return NativeRendering(
        messages, specs, prompt, answered, native_target_text(prompt, answered), markers
    )


def _after_common_prefix(prompt: str, text: str) -> str:
    """``text`` after what it shares with ``prompt`` at the start, trailing whitespace removed:
    an empty assistant turn's own part even where the template renders it without the
    generation prompt's newline (``<|im_start|>assistant<|im_end|>``)."""
    return text[_shared_length(prompt, text) :].rstrip()


def _shared_length(left: str, right: str) -> int:
    """How many characters ``left`` and ``right`` share at the start."""
    return next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )


def probe_call(example: NativeExample) -> Call:
    """The call rendered to find the template's call wrapper for a row without a gold call:
    its first offered tool with no arguments."""
    name = example.tools[0]["name"] if example.tools else "tool"
    return {"name": name, "arguments": {}}


def _boundary(text: str, length: int) -> int:
    """``length`` backed off to just after the last whitespace in ``text[:length]`` (0 if none),
    so a common prefix never cuts a tag in two (``<`` of ``<tool_call>`` and ``<|im_end|>``)."""
    cut = max((i + 1 for i in range(length) if text[i].isspace()), default=0)
    return cut if cut < length else length


def wrapper_markers(call_target: str, empty_target: str) -> tuple[str, ...]:
    """The call markers of a template: the text its rendering of a call puts before and after
    the call's JSON span (``<tool_call>`` and ``</tool_call>`` for Hermes and Qwen), without
    what an empty assistant turn renders too (a leading ``<think>\n\n</think>`` block, the end
    of turn). ``call_target`` must hold a call parser v1 reads (the first ``{``/``[`` opens it);
    a template without a wrapper (Llama 3.x's bare JSON) has none. Whitespace-stripped, empty
    ones dropped (``core.abstention.usable_markers``)."""
    brace, bracket = call_target.find("{"), call_target.find("[")
    starts = [i for i in (brace, bracket) if i >= 0]
    if not starts:
        return ()
    start = min(starts)
    try:
        _, end = json.JSONDecoder().raw_decode(call_target, start)
    except ValueError:
        return ()
    lead, trail = call_target[:start], call_target[end:].rstrip()
    common = _shared_length(lead, empty_target)
    lead = lead[_boundary(lead, common) if common < len(lead) else common :]
    chunks = empty_target.split()
    end_of_turn = chunks[-1] if chunks else ""
    if end_of_turn and trail.endswith(end_of_turn):
        trail = trail[: -len(end_of_turn)]
    return usable_markers([lead, trail])


def _check_target(
    example: NativeExample, target: str, arguments_key: str, gold_call: Call
) -> None:
    """Parser v1 over ``target`` must give ``ok`` and exactly ``gold_call`` (the gold call, or
    an abstention row's probe call)."""
    call, status = read_gold_call(target, arguments_key)
    gold = {"name": gold_call["name"], "arguments": gold_call["arguments"]}
    if status == STATUS_OK and canonical_json_text(call) == canonical_json_text(gold):
        return
    parser = f"parser {PARSER_VERSION} (arguments_key {arguments_key!r})"
    if status == STATUS_OK:
        seen = (
            f"{parser} reads the template's target_text {_excerpt(target)} as "
            f"{canonical_json_text(call)[:120]}, not the gold call"
        )
        hint = "use a chat template that writes the call's JSON verbatim"
    else:
        seen = f"{parser} reads the template's target_text {_excerpt(target)} as {status}"
        hint = (
            "parser v1 reads the first JSON value of an output and cannot score this "
            f"template's tool-call wrapper: {_TOOLS_IN_SYSTEM_HINT[3:]}"
        )
    for other in ARGUMENTS_KEYS:
        if other != arguments_key and read_gold_call(target, other)[1] == STATUS_OK:
            hint = f"the template writes {other!r}: format with --arguments-key {other}"
    raise _refuse(example, "SOM-FORMAT-TEMPLATE-UNPARSEABLE", seen, hint)


def _check_calls_target(
    example: NativeExample, target: str, arguments_key: str, golds: Sequence[Call]
) -> None:
    """Parser v2 over ``target`` must give ``ok`` and exactly the gold calls, in order."""
    found, status = parse_tool_calls(target, arguments_key=arguments_key)
    want = [{"name": call["name"], "arguments": call["arguments"]} for call in golds]
    if status == STATUS_OK and canonical_json_text(found) == canonical_json_text(want):
        return
    parser = f"parser {PARSER_V2_VERSION} (arguments_key {arguments_key!r})"
    if status == STATUS_OK:
        seen = (
            f"{parser} reads the template's target_text {_excerpt(target)} as "
            f"{canonical_json_text(found)[:120]}, not the {len(want)} gold calls"
        )
    else:
        seen = f"{parser} reads the template's target_text {_excerpt(target)} as {status}"
    raise _refuse(
        example,
        "SOM-FORMAT-TEMPLATE-UNPARSEABLE",
        seen,
        "use a chat template that writes each call's JSON verbatim, or format with --policy "
        "sommelier.tools-in-system.v2 --parser v2",
    )
