"""The per-process runner: generates fixed batches and turns outputs into typed records.

It knows nothing of pytest: it takes a ``BatchKey``, the batch's examples and the decoding, and
returns a ``BatchOutcome``; ``payload`` turns one output into the ``WorkerPayload`` an item
reports (the record itself is built by the pure ``core.pipeline.generation_record``).

Generation is batched by fixed batches: batch ``k`` of an (arm, slice) is always examples
``[k*B, (k+1)*B)`` of that slice in split order, whatever subset of items was selected, so an
example gets the same output in a full run, a ``-k`` drilldown and under xdist. Invariants kept:
every prompt sent is checked against its recorded ``prompt_sha256`` before it is sent; a
generator must return exactly one ``str`` (from ``generate``) or
:class:`~pytest_sommelier.core.types.Completion` (from the optional ``generate_completions``)
per prompt, in order, or every item of that batch is an error; a plain string is a completion
whose finish reason is ``unknown``; each batch is generated at most once per process; time is
measured only around ``generate`` calls (after one untimed warm-up call per generator, of one
new token), never
around loading, parsing, I/O or the noise floor's re-batched generations (``core.noise``:
the batch's sampled examples of a reference arm, one at a time in reverse order, never read
from or written to the generation cache).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_sommelier.core.abstention import scoring_fields
from pytest_sommelier.core.canonical import prompt_digest
from pytest_sommelier.core.metrics import record_hit
from pytest_sommelier.core.noise import rebatch_order
from pytest_sommelier.core.parse import DEFAULT_ARGUMENTS_KEY
from pytest_sommelier.core.pipeline import ArmRun, generation_record, order_records
from pytest_sommelier.core.reasoning import ReasoningRule
from pytest_sommelier.core.types import (
    BatchKey,
    Completion,
    Example,
    FormattedSplit,
    RebatchedOutput,
    Suite,
    WorkerPayload,
    model_kind_of,
)
from pytest_sommelier.data.store.artifacts import dumps
from pytest_sommelier.errors import (
    EXTENSION_ERRORS,
    EvaluationError,
    InvariantError,
    SommelierError,
    exception_text,
)
from pytest_sommelier.inference.device import device_of
from pytest_sommelier.inference.model_call import ModelCall as ModelCall
from pytest_sommelier.inference.model_call import check_arm_kind as check_arm_kind
from pytest_sommelier.inference.model_call import check_generator as check_generator
from pytest_sommelier.inference.model_call import json_value_problem as json_value_problem
from pytest_sommelier.inference.protocol import Generator, token_count_of

WARMUP_NEW_TOKENS = 1
"""``max_new_tokens`` of the untimed warm-up call (its output is discarded)."""


@dataclass
class BatchOutcome:
    """The result of one fixed batch: outputs by example id, or the error every item gets."""

    outputs: dict[str, Completion] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds_per_example: float = 0.0
    selfcheck: dict[str, bool] = field(default_factory=dict)  # example id -> output differs
    rebatched: dict[str, Completion] = field(default_factory=dict)  # the noise floor's
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
        self._model_call = ModelCall(timeout)
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
            except EXTENSION_ERRORS as exc:  # a sommelier_model override's sys.exit() too
                raise EvaluationError(
                    "SOM-MODEL-LOAD",
                    f"arm '{arm}': loading the generator failed: {exception_text(exc)}",
                    "check the [model] and [arms] tables, or your sommelier_model override",
                ) from exc
            check_generator(generator, arm)
            check_arm_kind(generator, arm, suite)
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
        rebatch: Sequence[str] = (),
    ) -> BatchOutcome:
        """The outcome of fixed batch ``key`` (its ``examples``), generated at most once per
        process, with the examples named in ``rebatch`` (the noise floor's sample) generated
        again one at a time; raises the batch's error for every item of a failed batch."""
        outcome = self._batches.get(key)
        if outcome is None:
            outcome = self._generate_batch(key, examples, decoding, generator, warmup_prompt)
            if outcome.error is None and rebatch:
                outcome = self._rebatch(key.arm, generator, examples, rebatch, decoding, outcome)
            self._batches[key] = outcome
        if outcome.error is not None:
            raise outcome.error
        return outcome

    def _warm_up(self, arm: str, generator: Any, prompt: str, decoding: Mapping[str, Any]) -> None:
        if id(generator) in self._warmed:
            return
        self._warmed.add(id(generator))
        # one new token is enough to pay the first call's one-time costs (lazy initialisation,
        # allocations, the first kernels); the whole max_new_tokens of prose cost a session as
        # much as a batch of real examples, per generator and process (issue 40)
        # (a generator that ignores the limit is not refused for it here: the output is dropped)
        warm = {**decoding, "max_new_tokens": WARMUP_NEW_TOKENS}
        self._model_call(generator, arm, [prompt], warm, check_limit=False)

    def _generate_batch(
        self,
        key: BatchKey,
        examples: Sequence[Example],
        decoding_in: Mapping[str, Any],
        generator: Any,
        warmup_prompt: str,
    ) -> BatchOutcome:
        for example in examples:
            if prompt_digest(example.prompt_text, example.template_kwargs) != example.prompt_sha256:
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
                e.example_id: self.cache.get_completion(
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
                outputs = self._call(generator, key.arm, [e.prompt_text for e in pending], decoding)
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
                        output.text,
                        batch_prompts=batch_prompts,
                        finish_reason=output.finish_reason,
                        generated_tokens=output.generated_tokens,
                        reasoning=output.reasoning,
                        has_content=output.has_content,
                    )
        return outcome

    def _rebatch(
        self,
        arm: str,
        generator: Any,
        examples: Sequence[Example],
        chosen: Sequence[str],
        decoding: Mapping[str, Any],
        outcome: BatchOutcome,
    ) -> BatchOutcome:
        """The noise floor's part of one batch: each chosen example generated again alone
        (batch size 1, reverse batch order, same generator and decoding), untimed and past
        the cache; a failure is the batch's error, as any generation failure is."""
        by_id = {example.example_id: example for example in examples}
        wanted = [example_id for example_id in by_id if example_id in set(chosen)]
        single = {**decoding, "batch_size": 1}
        try:
            for example_id in rebatch_order(wanted):
                (again,) = self._call(generator, arm, [by_id[example_id].prompt_text], single)
                outcome.rebatched[example_id] = again
        except SommelierError as error:
            return BatchOutcome(error=error)
        return outcome

    def _call(
        self, generator: Any, arm: str, prompts: list[str], decoding: dict
    ) -> list[Completion]:
        """The one guarded model call (``inference.model_call.ModelCall``), under this
        process's per-batch timeout."""
        return self._model_call(generator, arm, prompts, decoding)

    def _selfcheck(
        self,
        generator: Any,
        arm: str,
        pending: Sequence[Example],
        outputs: list[Completion],
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
            result[example.example_id] = again.text != output.text
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
        reasoning: ReasoningRule = None,
    ) -> WorkerPayload:
        """Split (the suite's ``reasoning`` rule, ``core.reasoning``), parse (parser v1 with the
        suite's ``arguments_key``) and score one output of a generated batch into the item's
        payload; a separated reasoning span is counted in tokens by the generator's tokenizer
        where it has one (``inference.protocol.token_count_of``)."""
        output = outcome.outputs[example.example_id]
        record = generation_record(
            example,
            arm=key.arm,
            model_kind=model_kind_of(generator.adapter_identity),
            raw_text=output.text,
            decoding=decoding,
            cached=outcome.cached[example.example_id],
            finish_reason=output.finish_reason,
            generated_tokens=output.generated_tokens,
            arguments_key=arguments_key,
            reasoning=reasoning,
            engine_reasoning=output.reasoning,
            engine_content=output.has_content,
            count_tokens=lambda text: token_count_of(generator, text),
        )
        again = outcome.rebatched.get(example.example_id)
        rebatched: RebatchedOutput | None = (
            None
            if again is None
            else {
                "raw_text": again.text,
                "finish_reason": again.finish_reason,
                "generated_tokens": again.generated_tokens,
            }
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
            "hit": record_hit(
                {**record, "gold_call": example.gold_call, **scoring_fields(example)}
            ),
            "selfcheck_differs": outcome.selfcheck.get(example.example_id),
            "rebatched": rebatched,
        }


def arm_runs(
    suite: Suite, split: FormattedSplit, payloads: Sequence[Mapping[str, Any]]
) -> dict[str, ArmRun]:
    """Each arm's ``ArmRun`` from its items' payloads (``Runner.payload``), in the suite's arm
    order: records checked and ordered by ``core.pipeline.order_records``, one timing per
    payload; an arm whose payloads name more than one model or adapter identity stops the run
    (``SOM-IDENTITY-MIXED``). The session's finish and ``training.SommelierCallback`` both
    build a run's arms here."""
    by_arm: dict[str, list[Mapping[str, Any]]] = {}
    for payload in payloads:
        by_arm.setdefault(payload["record"]["arm"], []).append(payload)
    arms: dict[str, ArmRun] = {}
    for name in suite.arms:
        rows = by_arm.get(name)
        if not rows:
            continue
        identities = {dumps(p["model_identity"]) for p in rows}
        adapters = {dumps(p["adapter_identity"]) for p in rows}
        if len(identities) > 1 or len(adapters) > 1:
            raise InvariantError(
                "SOM-IDENTITY-MIXED",
                f"arm '{name}': generations came from more than one model or adapter identity",
                "every process must load the same model files for an arm",
            )
        first = rows[0]
        arms[name] = ArmRun(
            name=name,
            model_kind=first["record"]["model_kind"],
            model_identity=first["model_identity"],
            adapter_identity=first["adapter_identity"],
            records=order_records(suite, split, name, (p["record"] for p in rows)),
            timings=[
                {
                    "language": p["record"]["language"],
                    "cached": p["record"]["cached"],
                    "seconds": p["seconds"],
                    "worker": p["worker"],
                    "processes": p["processes"],
                    "device": p["device"],
                    "selfcheck_differs": p.get("selfcheck_differs"),
                }
                for p in rows
            ],
            rebatched={
                p["record"]["example_id"]: p["rebatched"] for p in rows if p.get("rebatched")
            },
        )
    return arms
