"""The ``glaive`` importer: Glaive function-calling v2 rows -> prepared examples (README)."""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_sommelier import Candidate, Importer, Skip
from pytest_sommelier.data.prepare.importers.common import (
    call_from_spec,
    malformed,
    tool_from_spec,
)

_TURN = re.compile(r"(USER|ASSISTANT|FUNCTION RESPONSE):\s*")
_CALL = re.compile(r"^<functioncall>\s*(.*?)\s*(?:<\|endoftext\|>.*)?$", re.DOTALL)
_QUOTED = re.compile(
    r'^\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*\'(.*)\'\s*\}$', re.DOTALL
)


def _functions(system: str, where: str) -> list[dict[str, Any]]:
    """The JSON objects that follow the system preamble, one tool each."""
    decoder = json.JSONDecoder()
    tools = []
    position = system.find("{")
    while position != -1:
        try:
            spec, end = decoder.raw_decode(system, position)
        except json.JSONDecodeError as exc:
            raise malformed(where, "system", f"a function is not JSON ({exc.msg})") from None
        tools.append(tool_from_spec(spec, where, f"system function {len(tools)}"))
        position = system.find("{", end)
    return tools


def _call(text: str, where: str) -> dict[str, Any]:
    """The call of a ``<functioncall>`` turn: JSON, or Glaive's single-quoted arguments."""
    quoted = _QUOTED.match(text)
    if quoted is not None:
        spec = {"name": json.loads(quoted.group(1)), "arguments": quoted.group(2)}
    else:
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise malformed(where, "chat", f"the function call is not JSON ({exc.msg})") from None
    return call_from_spec(spec, where, "chat <functioncall>")


def convert(record: dict[str, Any], where: str) -> Candidate | Skip:
    """One Glaive row -> Candidate, or the Skip that says why the method cannot score it."""
    system, chat = record.get("system"), record.get("chat")
    if not isinstance(system, str):
        raise malformed(where, "system", "missing or not a string")
    if not isinstance(chat, str):
        raise malformed(where, "chat", "missing or not a string")
    tools = _functions(system, where)
    if not tools:
        return Skip("no_tools", "no function after the system preamble")
    parts = _TURN.split(chat)
    turns = [(parts[i], parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    if len(turns) < 2 or turns[0][0] != "USER" or turns[1][0] != "ASSISTANT":
        return Skip("no_call", "no USER turn answered by an ASSISTANT turn")
    answer = _CALL.match(turns[1][1])
    if answer is None:
        return Skip("no_call", "the first reply is not a <functioncall>")
    return Candidate(query=turns[0][1], tools=tools, gold_call=_call(answer.group(1), where))


IMPORTER = Importer(
    "Glaive function-calling v2 rows {system, chat}: functions after the system preamble, "
    "the answer a <functioncall>",
    convert,
)
