"""``sommelier import openai-chat``: OpenAI / HF chat rows ``{"messages": [...], "tools": [...]}``.

A row converts when its messages are ``[system?, user, assistant]`` and the assistant turn holds
exactly one ``tool_calls`` entry (one or more under ``--parser v2``) (``{"type": "function",
"function": {"name", "arguments"}}``,
arguments a JSON string as OpenAI writes them or an object as HF datasets do). ``tools`` is a
list of OpenAI function specs (or a JSON string holding one, as Parquet datasets store it).

Rules (each skip reason is counted, see ``common``):

- roles: ``developer`` counts as ``system``; a message's content is a string or a list of text
  parts; text the assistant writes beside its call is not part of the gold call (the method
  scores the call);
- ``no_call``: the conversation has no assistant turn after ``[system?, user]``, or the
  assistant turn has no tool call; ``several_calls``: more than one (kept under ``--parser
  v2``, each ``tool_calls`` entry a gold call, in order); ``multi_turn``: anything
  else before the call (earlier assistant turns, tool results, a second user turn) or after it;
- then the shared checks (``common.check_candidate``).
"""

from __future__ import annotations

from typing import Any

from pytest_sommelier.data.prepare.importers.common import (
    LEGACY_FUNCTIONS,
    Candidate,
    Importer,
    Skip,
    call_from_spec,
    decode_text,
    malformed,
    need,
    several_calls,
    text_content,
    tool_from_spec,
    unreadable_gold,
    wrong_type,
)
from pytest_sommelier.errors import InputError

SYSTEM_ROLES = frozenset({"system", "developer"})


def read_tools(record: dict[str, Any], where: str, name: str = "tools") -> list[dict[str, Any]]:
    """The row's tools in prepared shape (a list, or a JSON string holding one)."""
    value = need(record, name, where, (list, str))
    if isinstance(value, str):
        value = decode_text(value, where, name)
        if not isinstance(value, list):
            raise malformed(where, name, "must hold a JSON array of tools")
    return [tool_from_spec(spec, where, f"{name}[{index}]") for index, spec in enumerate(value)]


def conversation_shape(roles: list[str]) -> Skip | None:
    """``None`` when ``roles`` are ``[system?, user, assistant]``, else the skip reason."""
    head = roles[1:] if roles[:1] == ["system"] else roles
    if head == ["user", "assistant"]:
        return None
    if head == ["user"]:
        return Skip("no_call", "the conversation ends before the assistant replies")
    return Skip("multi_turn", f"turns {roles}: the method scores [system?, user] -> one call")


def legacy_format(record: dict[str, Any], messages: list[Any]) -> Skip | None:
    """``legacy_functions`` for a row in OpenAI's old format (``functions`` instead of
    ``tools``, or an assistant ``function_call`` instead of ``tool_calls``), else None."""
    old_call = any(isinstance(m, dict) and "function_call" in m for m in messages)
    if ("functions" in record and "tools" not in record) or old_call:
        return Skip(
            LEGACY_FUNCTIONS,
            "the row is in OpenAI's legacy format (functions / function_call); write it as "
            "tools / tool_calls (each function as {\"type\": \"function\", \"function\": ...})",
        )
    return None


def convert(record: dict[str, Any], where: str) -> Candidate | Skip:
    """One chat row -> Candidate, or the Skip that says why the method cannot score it."""
    messages = need(record, "messages", where, list)
    if not messages:
        raise malformed(where, "messages", "must be a non-empty list")
    legacy = legacy_format(record, messages)
    if legacy is not None:
        return legacy
    roles = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            raise wrong_type(where, f"messages[{index}]", message, "an object")
        role = message.get("role")
        if not isinstance(role, str):
            raise wrong_type(where, f"messages[{index}].role", role, "a string")
        roles.append("system" if role in SYSTEM_ROLES else role)
    tools = read_tools(record, where)
    shape = conversation_shape(roles)
    if shape is not None:
        return shape
    last = len(messages) - 1
    calls = messages[last].get("tool_calls")
    if calls is None or calls == []:
        return _answered(messages, roles, where, tools)
    if not isinstance(calls, list):
        raise malformed(where, f"messages[{last}].tool_calls", "must be a list")

    def read() -> Candidate | Skip:
        try:
            golds = [
                call_from_spec(call, where, f"messages[{last}].tool_calls[{index}]")
                for index, call in enumerate(calls)
            ]
        except InputError as error:  # one unreadable call skips its row, never the file
            return unreadable_gold(error)
        user = last - 1
        query = text_content(messages[user].get("content"), where, f"messages[{user}].content")
        system = None
        if roles[0] == "system":
            system = text_content(messages[0].get("content"), where, "messages[0].content")
        several = golds if len(golds) > 1 else None
        return Candidate(query, tools, golds[0], system=system or None, gold_calls=several)

    if len(calls) > 1:
        return several_calls(f"the assistant turn makes {len(calls)} calls", read)
    return read()


def _answered(
    messages: list[Any], roles: list[str], where: str, tools: list[dict[str, Any]]
) -> Candidate:
    """A conversation whose assistant answers in text, without a call, while tools are
    offered: an abstention candidate (kept with ``--abstention keep``, else skipped)."""
    last = len(messages) - 1
    content = messages[last].get("content")
    answer = "" if content is None else text_content(content, where, f"messages[{last}].content")
    query = text_content(messages[last - 1].get("content"), where, f"messages[{last - 1}].content")
    system = None
    if roles[0] == "system":
        system = text_content(messages[0].get("content"), where, "messages[0].content")
    return Candidate(query, tools, None, system or None, expect="no_call", answer=answer or None)


IMPORTER = Importer(
    "OpenAI / HF chat rows {messages, tools}: [system?, user, assistant with one "
    "tool_calls entry]",
    convert,
)
"""This format's entry in the importer registry (``pytest_sommelier.registry``)."""
