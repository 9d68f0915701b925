"""The per-process runner: generates fixed batches and turns outputs into typed records.

It knows nothing of pytest: it takes a ``BatchKey``, the batch's examples and the decoding, and
returns a ``BatchOutcome``; ``payload`` turns one output into the ``WorkerPayload`` an item
reports (the record itself is built by the pure ``core.pipeline.generation_record``).

Generation is batched by fixed batches: batch ``k`` of an (arm, slice) is always examples
``[k*B, (k+1)*B)`` of that slice in split order, whatever subset of items was selected, so an
example gets the same output in a full run, a ``-k`` drilldown and under xdist. Invariants kept:
every prompt sent is checked against its recorded ``prompt_sha256`` before it is sent; a
generator must return exactly one ``str`` per prompt, in order, or every item of that batch is
an error; each batch is generated at most once per process; time is measured only around
``generate`` calls (after one untimed warm-up call per generator), never around loading,
parsing or I/O.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.metrics import full_call_hit
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY
from pytest_sommelier.core.pipeline import generation_record
from pytest_sommelier.core.types import BatchKey, Example, WorkerPayload, model_kind_of
from pytest_sommelier.errors import EvaluationError, InvariantError, SommelierError
from pytest_sommelier.inference.device import device_of
from pytest_sommelier.inference.protocol import Generator


@dataclass
class BatchOutcome:
    """The result of one fixed batch: outputs by example id, or the error every item gets."""

    outputs: dict[str, str] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds_per_example: float = 0.0
    selfcheck: dict[str, bool] = field(default_factory=dict)  # example id -> output differs
    error: SommelierError | None = None


def call_factory(factory: Any, arm: str, suite: Any) -> Any:
    """Ask a ``sommelier_model`` factory for an arm's generator (passing ``suite=`` only to
    factories that accept it)."""
    if not callable(factory):
        raise EvaluationError(
            "SOM-MODEL-FIXTURE",
            f"the sommelier_model fixture returned {type(factory).__name__}, not a callable",
            "return a callable arm_name -> generator from your sommelier_model override",
        )
    parameters: Mapping[str, inspect.Parameter]
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        parameters = {}
    accepts_suite = "suite" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )
    return factory(arm, suite=suite) if accepts_suite else factory(arm)


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
        try:
            ok = isinstance(value, dict) and bool(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise EvaluationError(
                "SOM-MODEL-CONTRACT",
                f"arm '{arm}': the generator's {attribute} is not a JSON-safe dict "
                f"({type(value).__name__})",
                "identities are written to the reports: use dicts of str, numbers, bools, "
                "lists and dicts",
            )


class Runner:
    """Per-process state: generators by arm, batch outcomes, warm-ups done."""

    def __init__(
        self,
        *,
        timeout: float | None = None,
        selfcheck: int = 0,
        cache: Any = None,
        worker: str = "main",
        processes: int = 1,
    ) -> None:
        self.worker_id = worker
        # how many processes the run has, whatever share of an arm this one happens to get
        self.processes = processes
        self._generators: dict[tuple[str, str], Generator] = {}
        self._batches: dict[BatchKey, BatchOutcome] = {}
        self._warmed: set[int] = set()
        self._timed_out: set[int] = set()
        self._checked: dict[int, int] = {}
        self.timeout = timeout
        self.selfcheck = selfcheck
        self.cache = cache  # a GenerationCache, or None when caching is off

    # -- generation ---------------------------------------------------------------------------

    def generator(self, suite_key: str, arm: str, suite: Any, factory: Any) -> Generator:
        """The arm's generator, asked of the ``sommelier_model`` factory once per process."""
        key = (suite_key, arm)
        if key not in self._generators:
            try:
                generator = call_factory(factory, arm, suite)
            except SommelierError:
                raise
            except Exception as exc:
                raise EvaluationError(
                    "SOM-MODEL-LOAD",
                    f"arm '{arm}': loading the generator failed: {type(exc).__name__}: {exc}",
                    "check the [model] and [arms] tables, or your sommelier_model override",
                ) from exc
            check_generator(generator, arm)
            self._generators[key] = generator
        return self._generators[key]

    def batch(
        self,
        key: BatchKey,
        examples: Sequence[Example],
        decoding: Mapping[str, Any],
        generator: Any,
        *,
        warmup_prompt: str,
    ) -> BatchOutcome:
        """The outcome of fixed batch ``key`` (its ``examples``), generated at most once per
        process; raises the batch's error for every item of a failed batch."""
        outcome = self._batches.get(key)
        if outcome is None:
            outcome = self._generate_batch(key, examples, decoding, generator, warmup_prompt)
            self._batches[key] = outcome
        if outcome.error is not None:
            raise outcome.error
        return outcome

    def _warm_up(self, arm: str, generator: Any, prompt: str, decoding: Mapping[str, Any]) -> None:
        if id(generator) in self._warmed:
            return
        self._warmed.add(id(generator))
        self._call(generator, arm, [prompt], dict(decoding))

    def _generate_batch(
        self,
        key: BatchKey,
        examples: Sequence[Example],
        decoding_in: Mapping[str, Any],
        generator: Any,
        warmup_prompt: str,
    ) -> BatchOutcome:
        for example in examples:
            if sha256_text(example.prompt_text) != example.prompt_sha256:
                return BatchOutcome(
                    error=InvariantError(
                        "SOM-PROMPT-DIGEST",
                        f"example '{example.example_id}' (line {example.line}): prompt_text does "
                        "not match its prompt_sha256",
                        "re-run `sommelier format`; prompts are replayed, never rebuilt",
                    )
                )
        decoding = dict(decoding_in)
        outcome = BatchOutcome()
        pending = list(examples)
        # with batch_size > 1 the whole fixed batch is one cache unit (its outputs can depend
        # on its padding): all of it comes from the cache, or all of it is generated
        batch_prompts = (
            [e.prompt_sha256 for e in examples] if int(decoding["batch_size"]) > 1 else None
        )
        if self.cache is not None:
            hits = {
                e.example_id: self.cache.get(
                    generator, e.prompt_sha256, decoding, batch_prompts=batch_prompts
                )
                for e in examples
            }
            if all(hit is not None for hit in hits.values()):
                pending = []
                for example_id, hit in hits.items():
                    outcome.outputs[example_id] = hit  # type: ignore[assignment]
                    outcome.cached[example_id] = True
        if pending:
            try:
                self._warm_up(key.arm, generator, warmup_prompt, decoding)
                started = time.perf_counter()
                outputs = self._call(
                    generator, key.arm, [e.prompt_text for e in pending], decoding
                )
                elapsed = time.perf_counter() - started
            except SommelierError as error:
                return BatchOutcome(error=error)
            outcome.seconds_per_example = elapsed / len(pending)
            try:
                outcome.selfcheck = self._selfcheck(generator, key.arm, pending, outputs, decoding)
            except SommelierError as error:
                return BatchOutcome(error=error)
            for example, output in zip(pending, outputs, strict=True):
                outcome.outputs[example.example_id] = output
                outcome.cached[example.example_id] = False
                if self.cache is not None:
                    self.cache.put(
                        generator,
                        example.prompt_sha256,
                        decoding,
                        output,
                        batch_prompts=batch_prompts,
                    )
        return outcome

    def _call(self, generator: Any, arm: str, prompts: list[str], decoding: dict) -> list[str]:
        """Call ``generate`` (under the per-batch timeout, if any) and enforce its contract
        (one ``str`` per prompt, in order)."""
        if id(generator) in self._timed_out:
            raise EvaluationError(
                "SOM-MODEL-TIMEOUT",
                f"arm '{arm}': an earlier generate() call of this process timed out",
                "the arm's remaining examples are not generated; fix the hang and re-run",
            )
        try:
            outputs = self._generate_with_timeout(generator, arm, prompts, decoding)
        except SommelierError:
            raise
        except Exception as exc:
            raise EvaluationError(
                "SOM-MODEL-ERROR",
                f"arm '{arm}': generate() raised {type(exc).__name__}: {exc}",
                "the model failed; its message is above",
            ) from exc
        if not isinstance(outputs, list | tuple) or len(outputs) != len(prompts):
            count = len(outputs) if isinstance(outputs, list | tuple) else type(outputs).__name__
            raise InvariantError(
                "SOM-GEN-COUNT",
                f"arm '{arm}': generate() returned {count} outputs for {len(prompts)} prompts",
                "a generator must return exactly one completion per prompt, in order",
            )
        for output in outputs:
            if not isinstance(output, str):
                raise InvariantError(
                    "SOM-GEN-TYPE",
                    f"arm '{arm}': generate() returned a {type(output).__name__}, not a str",
                    "a generator must return completions as strings",
                )
            try:
                output.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvariantError(
                    "SOM-GEN-TYPE",
                    f"arm '{arm}': generate() returned a str that is not valid Unicode text "
                    f"({exc.reason} at index {exc.start})",
                    "decode model outputs to text (e.g. tokenizer.decode) before returning them",
                ) from None
        return list(outputs)

    def _generate_with_timeout(
        self, generator: Any, arm: str, prompts: list[str], decoding: dict
    ) -> Any:
        """``generator.generate`` in this thread, or in a daemon thread joined for at most
        ``--sommelier-timeout`` seconds; a timeout marks the generator as hung for good."""
        if not self.timeout:
            return generator.generate(list(prompts), dict(decoding))
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["outputs"] = generator.generate(list(prompts), dict(decoding))
            except BaseException as exc:  # re-raised in the calling thread
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"sommelier-generate-{arm}", daemon=True)
        thread.start()
        thread.join(self.timeout)
        if thread.is_alive():
            self._timed_out.add(id(generator))
            raise EvaluationError(
                "SOM-MODEL-TIMEOUT",
                f"arm '{arm}': generate() on {len(prompts)} prompt(s) did not return within "
                f"{self.timeout:g} s",
                "raise --sommelier-timeout, or find why the model hangs",
            )
        if "error" in box:
            raise box["error"]
        return box["outputs"]

    def _selfcheck(
        self,
        generator: Any,
        arm: str,
        pending: Sequence[Example],
        outputs: list[str],
        decoding: dict,
    ) -> dict[str, bool]:
        """Regenerate up to the remaining self-check budget of this generator one prompt at a
        time (batch size 1, untimed); return example id -> whether the output differs."""
        budget = self.selfcheck - self._checked.get(id(generator), 0)
        if budget <= 0 or int(decoding["batch_size"]) == 1:
            return {}
        single = {**decoding, "batch_size": 1}
        result = {}
        for example, output in list(zip(pending, outputs, strict=True))[:budget]:
            (again,) = self._call(generator, arm, [example.prompt_text], single)
            result[example.example_id] = again != output
        self._checked[id(generator)] = self._checked.get(id(generator), 0) + len(result)
        return result

    # -- scoring ------------------------------------------------------------------------------

    def payload(
        self,
        suite_nodeid: str,
        key: BatchKey,
        example: Example,
        decoding: Mapping[str, Any],
        generator: Any,
        outcome: BatchOutcome,
        *,
        arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    ) -> WorkerPayload:
        """Parse (parser v1 with the suite's ``arguments_key``) and score one output of a
        generated batch into the item's payload."""
        record = generation_record(
            example,
            arm=key.arm,
            model_kind=model_kind_of(generator.adapter_identity),
            raw_text=outcome.outputs[example.example_id],
            decoding=decoding,
            cached=outcome.cached[example.example_id],
            arguments_key=arguments_key,
        )
        return {
            "suite": suite_nodeid,
            "record": record,
            "model_identity": generator.model_identity,
            "adapter_identity": generator.adapter_identity,
            "seconds": 0.0 if record["cached"] else outcome.seconds_per_example,
            "worker": self.worker_id,
            "processes": self.processes,
            "device": device_of(generator),
            "hit": full_call_hit(record, example.gold_call),
            "selfcheck_differs": outcome.selfcheck.get(example.example_id),
        }
