"""The one guarded way to call a model: what the fixture path (``plugin.runner``) and
``sommelier parity`` (``inference.parity``) both call a generator through.

Invariants kept: a generator is called through ``generate_completions`` when it has one, else
``generate`` (``protocol.completions_of``), under an optional per-call timeout (a hung call marks
its generator as hung for good: later calls refuse at once); an exception it raises is one
``SOM-MODEL-ERROR`` line; it must return exactly one output per prompt, in order
(``SOM-GEN-COUNT``), each a ``str`` or a ``Completion`` with str text that is valid Unicode, a
finish reason of ``FINISH_REASONS`` and a non-negative token count or None (``SOM-GEN-TYPE``);
a plain string is a completion of unknown finish. ``check_generator`` (the identities, JSON-safe)
and ``check_arm_kind`` (the adapter identity fits the arm) are the checks before any call.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from pytest_sommelier.core.types import FINISH_LENGTH, FINISH_REASONS, Completion, model_kind_of
from pytest_sommelier.errors import (
    EXTENSION_ERRORS,
    EvaluationError,
    InvariantError,
    SommelierError,
    exception_text,
)
from pytest_sommelier.inference.protocol import completions_of


def check_generator(generator: Any, arm: str) -> None:
    """Refuse a generator that breaks the contract: ``generate``, a JSON-safe dict
    ``model_identity`` and a JSON-safe dict (or None) ``adapter_identity``."""
    for attribute in ("generate", "model_identity", "adapter_identity"):
        if not hasattr(generator, attribute):
            raise EvaluationError(
                "SOM-MODEL-CONTRACT",
                f"arm '{arm}': the generator has no '{attribute}'",
                "a generator needs model_identity, adapter_identity and generate()",
            )
    for attribute in ("model_identity", "adapter_identity"):
        value = getattr(generator, attribute)
        if value is None and attribute == "adapter_identity":
            continue
        problem = (
            json_value_problem(value, attribute)
            if isinstance(value, dict)
            else f"{attribute} is a {type(value).__name__}, not a dict"
        )
        if problem is not None:
            raise EvaluationError(
                "SOM-MODEL-CONTRACT",
                f"arm '{arm}': the generator's identity is not JSON-safe: {problem}",
                "identities are written to the reports: use dicts with string keys of str, "
                "finite numbers, bools, None, lists and dicts",
            )


def json_value_problem(value: Any, path: str) -> str | None:
    """Why ``value`` would not be written as itself in JSON, naming where (``path['key'][0]``):
    a key that is not a string (``{1: "x"}`` would silently become ``{"1": "x"}``), a NaN or
    infinite number, a string that is not valid Unicode, or any other type; None when it is
    JSON as it is."""
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value!r}, not a finite number"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path} is a str that is not valid Unicode text"
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            problem = json_value_problem(item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r} ({type(key).__name__}), not a string"
            problem = json_value_problem(item, f"{path}[{key!r}]")
            if problem is not None:
                return problem
        return None
    return f"{path} is a {type(value).__name__}"


def check_arm_kind(generator: Any, arm: str, suite: Any) -> None:
    """The generator's ``adapter_identity`` must fit how the suite configures the arm: present
    for an arm with ``adapter``, None for a base arm (``model_kind_of`` of each agrees).
    Otherwise an adapter arm's records would be keyed, cached and recorded as the base's (and
    a base arm's as an adapter's): borrowed evidence, refused before anything is generated."""
    config = getattr(suite, "arms", {}).get(arm)
    if config is None:  # no suite config to hold it to (a unit test's bare runner)
        return
    configured = model_kind_of(config.adapter)
    if model_kind_of(generator.adapter_identity) == configured:
        return
    if configured == "adapter":
        problem = (
            f"is configured with an adapter (arms.{arm}.adapter) but its generator reports "
            "adapter_identity None"
        )
        hint = "report the adapter the generator loaded (a missing name in a lookup gives None)"
    else:
        problem = "has no adapter in the suite but its generator reports an adapter_identity"
        hint = "a base arm's generator reports adapter_identity None; or add arms.<arm>.adapter"
    raise EvaluationError("SOM-MODEL-CONTRACT", f"arm '{arm}' {problem}", hint)


class ModelCall:
    """Calls generators with the output checks (see the module docstring); ``timeout`` is the
    per-call limit in seconds (None: no limit)."""

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = timeout
        self.timed_out: set[int] = set()  # ids of generators whose call did not return

    def __call__(
        self,
        generator: Any,
        arm: str,
        prompts: list[str],
        decoding: dict,
        *,
        check_limit: bool = True,
    ) -> list[Completion]:
        """Call ``generate_completions`` or ``generate`` (under the per-batch timeout, if any)
        and enforce the contract (one ``str`` or ``Completion`` per prompt, in order); a plain
        string becomes a completion of unknown finish. ``check_limit=False`` leaves out the
        token counts' check against ``max_new_tokens`` (the runner's warm-up, whose output is
        discarded, asks for one token, which a generator may not honour)."""
        if id(generator) in self.timed_out:
            raise EvaluationError(
                "SOM-MODEL-TIMEOUT",
                f"arm '{arm}': an earlier generate() call of this process timed out",
                "the arm's remaining examples are not generated; fix the hang and re-run",
            )
        try:
            outputs = self.generate_with_timeout(generator, arm, prompts, decoding)
        except SommelierError:
            raise
        except EXTENSION_ERRORS as exc:  # sys.exit() in generate too: the arm's line
            raise EvaluationError(
                "SOM-MODEL-ERROR",
                f"arm '{arm}': generate() raised {exception_text(exc)}",
                "the model failed; its message is above",
            ) from exc
        if not isinstance(outputs, list | tuple) or len(outputs) != len(prompts):
            count = len(outputs) if isinstance(outputs, list | tuple) else type(outputs).__name__
            raise InvariantError(
                "SOM-GEN-COUNT",
                f"arm '{arm}': generate() returned {count} outputs for {len(prompts)} prompts",
                "a generator must return exactly one completion per prompt, in order",
            )
        limit = decoding.get("max_new_tokens")
        limit = limit if type(limit) is int and check_limit else None
        return [completion_of(output, arm, max_new_tokens=limit) for output in outputs]

    def generate_with_timeout(
        self, generator: Any, arm: str, prompts: list[str], decoding: dict
    ) -> Any:
        """``generator.generate`` in this thread, or in a daemon thread joined for at most
        ``--sommelier-timeout`` seconds; a timeout marks the generator as hung for good."""
        if not self.timeout:
            return completions_of(generator, list(prompts), dict(decoding))
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["outputs"] = completions_of(generator, list(prompts), dict(decoding))
            except BaseException as exc:  # re-raised in the calling thread
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"sommelier-generate-{arm}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            self.timed_out.add(id(generator))
            raise EvaluationError(
                "SOM-MODEL-TIMEOUT",
                f"arm '{arm}': generate() on {len(prompts)} prompt(s) did not return within "
                f"{self.timeout:g} s",
                "raise --sommelier-timeout, or find why the model hangs",
            )
        if "error" in box:
            raise box["error"]
        return box["outputs"]


def completion_of(output: Any, arm: str, *, max_new_tokens: int | None = None) -> Completion:
    """One returned output as a completion: a ``str`` (finish ``unknown``) or a ``Completion``
    whose text is valid Unicode, finish reason one of ``FINISH_REASONS`` and token count a
    non-negative int or None; with ``max_new_tokens``, a token count is at most that limit and
    a ``length`` finish with a count is exactly at it (``length`` means the limit was reached:
    3 tokens of 64 is no truncation); anything else is an InvariantError."""
    if isinstance(output, str):
        completion = Completion(output)
    elif isinstance(output, Completion):
        completion = output
    else:
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': generate() returned a {type(output).__name__}, not a str",
            "a generator must return completions as strings (or Completion objects from "
            "generate_completions)",
        )
    text, reason, tokens = completion.text, completion.finish_reason, completion.generated_tokens
    reasoning, has_content = completion.reasoning, completion.has_content
    if not (reasoning is None or isinstance(reasoning, str)) or not isinstance(has_content, bool):
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': a Completion has reasoning {type(reasoning).__name__} and "
            f"has_content {has_content!r}",
            "reasoning is the engine's reasoning text or None; has_content a bool",
        )
    if not isinstance(text, str):
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': a Completion's text is a {type(text).__name__}, not a str",
            "give Completion(text, finish_reason, generated_tokens) a str text",
        )
    if reason not in FINISH_REASONS or not (
        tokens is None or (type(tokens) is int and tokens >= 0)
    ):
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': a Completion has finish_reason {reason!r} and generated_tokens "
            f"{tokens!r}",
            f"finish_reason is one of {', '.join(FINISH_REASONS)}; generated_tokens a count "
            "or None",
        )
    if max_new_tokens is not None and tokens is not None and (
        tokens > max_new_tokens or (reason == FINISH_LENGTH and tokens != max_new_tokens)
    ):
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': a Completion has finish_reason {reason!r} after {tokens} generated "
            f"tokens, max_new_tokens is {max_new_tokens}",
            "generated_tokens is at most max_new_tokens, and finish_reason 'length' means it "
            "was reached",
        )
    try:
        text.encode("utf-8")
        (reasoning or "").encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvariantError(
            "SOM-GEN-TYPE",
            f"arm '{arm}': generate() returned a str that is not valid Unicode text "
            f"({exc.reason} at index {exc.start})",
            "decode model outputs to text (e.g. tokenizer.decode) before returning them",
        ) from None
    return Completion(str(text), reason, tokens, reasoning, has_content)


__all__ = [
    "ModelCall",
    "check_arm_kind",
    "check_generator",
    "completion_of",
    "json_value_problem",
]
