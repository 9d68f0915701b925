"""The per-process runner: turns an ``EvalItem`` into a generation record.

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
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.metrics import METRIC_NAMES, example_components
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.render import describe_miss
from pytest_sommelier.errors import EvaluationError, InvariantError, SommelierError
from pytest_sommelier.plugin.settings import settings_of

if TYPE_CHECKING:
    from pytest_sommelier.data.split import Example

RUNNER_KEY = pytest.StashKey["Runner"]()
FULL_CALL = METRIC_NAMES.index("full_call_exact_match")


@dataclass
class BatchOutcome:
    """The result of one fixed batch: outputs by example id, or the error every item gets."""

    outputs: dict[str, str] = field(default_factory=dict)
    cached: dict[str, bool] = field(default_factory=dict)
    seconds_per_example: float = 0.0
    selfcheck: dict[str, bool] = field(default_factory=dict)  # example id -> output differs
    error: SommelierError | None = None


def runner_for(config: pytest.Config) -> Runner:
    """The process's runner, created on first use."""
    runner = config.stash.get(RUNNER_KEY, None)
    if runner is None:
        runner = Runner(config)
        runner.cache = generation_cache(config)
        config.stash[RUNNER_KEY] = runner
    return runner


def generation_cache(config: pytest.Config) -> Any:
    """The generation cache chosen by the options: ``--sommelier-no-cache`` turns it off;
    ``--sommelier-cache-dir`` names its folder; else pytest's cache folder when the
    cacheprovider is active; else none."""
    settings = settings_of(config)
    if settings.no_cache:
        return None
    configured = settings.cache_dir
    if configured:
        folder = Path(configured)
        if not folder.is_absolute():
            folder = config.invocation_params.dir / folder
    elif getattr(config, "cache", None) is not None:
        folder = config.cache.mkdir("sommelier-generations")
    else:
        return None
    from pytest_sommelier.inference.gencache import GenerationCache

    return GenerationCache(folder)


def call_factory(factory: Any, arm: str, suite: Any) -> Any:
    """Ask a ``sommelier_model`` factory for an arm's generator (passing ``suite=`` only to
    factories that accept it)."""
    if not callable(factory):
        raise EvaluationError(
            "SOM-MODEL-FIXTURE",
            f"the sommelier_model fixture returned {type(factory).__name__}, not a callable",
            "return a callable arm_name -> generator from your sommelier_model override",
        )
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

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker_id = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self._generators: dict[tuple[str, str], Any] = {}
        self._batches: dict[tuple[str, str, str, int], BatchOutcome] = {}
        self._warmed: set[int] = set()
        self._timed_out: set[int] = set()
        self._checked: dict[int, int] = {}
        self.timeout = settings_of(config).timeout
        self.selfcheck = settings_of(config).selfcheck
        self.cache: Any = None  # a GenerationCache, set by the plugin when caching is on

    # -- generation ---------------------------------------------------------------------------

    def generator(self, item: pytest.Item, factory: Any) -> Any:
        key = (str(item.suite_file.path), item.arm)
        if key not in self._generators:
            try:
                generator = call_factory(factory, item.arm, item.suite)
            except SommelierError:
                raise
            except Exception as exc:
                raise EvaluationError(
                    "SOM-MODEL-LOAD",
                    f"arm '{item.arm}': loading the generator failed: {type(exc).__name__}: {exc}",
                    "check the [model] and [arms] tables, or your sommelier_model override",
                ) from exc
            check_generator(generator, item.arm)
            self._generators[key] = generator
        return self._generators[key]

    def generate_for(self, item: pytest.Item, factory: Any) -> None:
        """Make sure the fixed batch holding ``item`` has been generated in this process."""
        generator = self.generator(item, factory)
        key = (str(item.suite_file.path), item.arm, item.example.language, item.batch_index)
        outcome = self._batches.get(key)
        if outcome is None:
            outcome = self._generate_batch(item, generator)
            self._batches[key] = outcome
        if outcome.error is not None:
            raise outcome.error
        item.sommelier_generator = generator  # type: ignore[attr-defined]
        item.sommelier_batch = outcome  # type: ignore[attr-defined]

    def _batch_examples(self, item: pytest.Item) -> Sequence[Example]:
        size = int(item.suite.decoding["batch_size"])
        examples = item.split.slices[item.example.language]
        return examples[item.batch_index * size : (item.batch_index + 1) * size]

    def _warm_up(self, item: pytest.Item, generator: Any) -> None:
        if id(generator) in self._warmed:
            return
        self._warmed.add(id(generator))
        first = item.split.slices[item.suite.slices[0]][0]
        self._call(generator, item.arm, [first.prompt_text], dict(item.suite.decoding))

    def _generate_batch(self, item: pytest.Item, generator: Any) -> BatchOutcome:
        examples = self._batch_examples(item)
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
        decoding = dict(item.suite.decoding)
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
                self._warm_up(item, generator)
                started = time.perf_counter()
                outputs = self._call(
                    generator, item.arm, [e.prompt_text for e in pending], decoding
                )
                elapsed = time.perf_counter() - started
            except SommelierError as error:
                return BatchOutcome(error=error)
            outcome.seconds_per_example = elapsed / len(pending)
            try:
                outcome.selfcheck = self._selfcheck(generator, item.arm, pending, outputs, decoding)
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

    def score(self, item: pytest.Item) -> None:
        """Parse and score the item's output; record it; a miss is marked (or fails, strict)."""
        generator = item.sommelier_generator  # type: ignore[attr-defined]
        outcome: BatchOutcome = item.sommelier_batch  # type: ignore[attr-defined]
        example = item.example
        raw_text = outcome.outputs[example.example_id]
        parsed_call, status = parse_tool_call(raw_text)
        record = {
            "example_id": example.example_id,
            "arm": item.arm,
            "model_kind": "base" if generator.adapter_identity is None else "adapter",
            "language": example.language,
            "prompt_sha256": sha256_text(example.prompt_text),
            "raw_text": raw_text,
            "parsed_call": parsed_call,
            "parse_status": status,
            "decoding": dict(item.suite.decoding),
            "cached": outcome.cached[example.example_id],
        }
        components = example_components({**record, "gold_call": example.gold_call})
        hit = components[FULL_CALL][0] == 1
        item.sommelier_record = {  # type: ignore[attr-defined]
            "suite": item.suite_file.nodeid,
            "record": record,
            "model_identity": generator.model_identity,
            "adapter_identity": generator.adapter_identity,
            "seconds": 0.0 if record["cached"] else outcome.seconds_per_example,
            "worker": self.worker_id,
            "device": device_of(generator),
            "hit": hit,
            "selfcheck_differs": outcome.selfcheck.get(example.example_id),
        }
        if not hit and settings_of(item.config).strict:
            pytest.fail(describe_miss(record, example.gold_call), pytrace=False)


def device_of(generator: Any) -> dict[str, Any]:
    """The device a generator runs on, from its optional ``device_info()``."""
    info: Callable[[], dict] | None = getattr(generator, "device_info", None)
    if info is None:
        return {"device": "unknown", "device_count": 1}
    data = info()
    return {
        "device": str(data.get("device", "unknown")),
        "device_count": int(data.get("device_count", 1)),
    }
