"""``sommelier import hermes``: NousResearch hermes-function-calling rows (ShareGPT style).

A row is ``{"conversations": [{"from": ..., "value": ...}, ...]}``: a ``system`` turn holding
the tools inside ``<tools>...</tools>``, a ``human`` turn, and a ``gpt`` turn holding the call
inside ``<tool_call>...</tool_call>``. ``from`` is read as ``system``, ``human``/``user``,
``gpt``/``assistant``; any other value (``tool``, ...) is a turn of its own.

Rules (each skip reason is counted, see ``common``):

- the tools block holds a JSON array, one JSON object per line, or the same written as Python
  literals (Hermes rows often use single quotes; read with ``ast.literal_eval``, which runs no
  code); each tool an OpenAI function spec or a bare ``{name, description, parameters}``;
- the call is JSON or a Python literal ``{"name", "arguments"}``; text beside it is not part of
  the gold call;
- the system turn is Hermes' own tool prompt (its instruction and the ``<tools>`` block): it
  is not kept as the prepared ``system``, since the chat template writes its own tool block
  under the native policy and tools-in-system writes its own system turn;
- ``no_tools``: no ``<tools>`` block; ``no_call``: no ``<tool_call>`` in the reply, or no reply;
  ``several_calls``: more than one (kept, one gold call per block, under ``--parser v2``);
  ``multi_turn``: anything but ``[system?, human, gpt]``;
- then the shared checks (``common.check_candidate``).
"""

from __future__ import annotations

import re
from typing import Any

from pytest_sommelier.data.prepare.importers.common import (
    PYTHON_LITERAL_GOLD,
    Candidate,
    Importer,
    Skip,
    call_from_spec,
    decode_text,
    is_python_literal,
    malformed,
    need,
    several_calls,
    tool_from_spec,
    unreadable_gold,
    wrong_type,
)
from pytest_sommelier.data.prepare.importers.openai_chat import conversation_shape
from pytest_sommelier.errors import InputError

ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
}
_TOOLS = re.compile(r"<tools>(.*?)</tools>", re.DOTALL)
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _tool_list(text: str, where: str, name: str) -> list[Any]:
    """The tools of one ``<tools>`` block: an array, one object, or one object per line."""
    text = text.strip()
    if not text:
        return []
    try:
        value = decode_text(text, where, name, literal=True)
    except InputError:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) < 2:
            raise
        value = [decode_text(line, where, name, literal=True) for line in lines]
    return value if isinstance(value, list) else [value]


def convert(record: dict[str, Any], where: str) -> Candidate | Skip:
    """One Hermes row -> Candidate, or the Skip that says why the method cannot score it."""
    turns = need(record, "conversations", where, list)
    if not turns:
        raise malformed(where, "conversations", "must be a non-empty list")
    roles, values = [], []
    for index, turn in enumerate(turns):
        field = f"conversations[{index}]"
        if not isinstance(turn, dict):
            raise wrong_type(where, field, turn, "an object")
        speaker = turn.get("from")
        if not isinstance(speaker, str):
            raise wrong_type(where, f"{field}.from", speaker, "a string")
        value = turn.get("value")
        if not isinstance(value, str):
            raise wrong_type(where, f"{field}.value", value, "a string")
        roles.append(ROLES.get(speaker, speaker))
        values.append(value)
    blocks = _TOOLS.findall(values[0]) if roles[0] == "system" else []
    if not blocks:
        return Skip("no_tools", "no <tools> block in a system turn")
    specs = [spec for block in blocks for spec in _tool_list(block, where, "conversations[0]")]
    tools = [
        tool_from_spec(spec, where, f"conversations[0] <tools>[{index}]")
        for index, spec in enumerate(specs)
    ]
    shape = conversation_shape(roles)
    if shape is not None:
        return shape
    calls = _CALL.findall(values[-1])
    if not calls and "<tool_call>" in values[-1]:
        return Skip("no_call", "the reply holds an unclosed <tool_call>")
    if not calls:  # a text answer while tools are offered: an abstention candidate
        answer = values[-1].strip() or None
        return Candidate(values[-2], tools, None, expect="no_call", answer=answer)
    field = f"conversations[{len(turns) - 1}] <tool_call>"

    def read() -> Candidate | Skip:
        golds = []
        for index, block in enumerate(calls):
            text = block.strip()
            name = field if len(calls) == 1 else f"{field}[{index}]"
            try:
                golds.append(call_from_spec(decode_text(text, where, name, literal=True), where,
                                            name, literal=True))  # fmt: skip
            except InputError as error:  # one unreadable call skips its row, never the file
                return unreadable_gold(error, text)
        note = None
        if any(is_python_literal(block.strip()) for block in calls):
            note = (
                PYTHON_LITERAL_GOLD,
                "the gold call is a Python literal, converted to JSON; a model trained on this "
                "form writes it, which parser v1 reads as invalid_json",
            )
        several = golds if len(golds) > 1 else None
        return Candidate(values[-2], tools, golds[0], note=note, gold_calls=several)

    if len(calls) > 1:
        return several_calls(f"the reply holds {len(calls)} <tool_call> blocks", read)
    return read()


IMPORTER = Importer(
    "NousResearch hermes-function-calling rows {conversations}: <tools> in the "
    "system turn, the answer inside <tool_call>",
    convert,
)
"""This format's entry in the importer registry (``pytest_sommelier.registry``)."""
