"""``sommelier parity``: regenerate a seeded sample of a stored run with another engine and report,
per arm, how many outputs are byte-identical, how many parse the same way and how many have the
same full-call outcome, with the examples that differ. ``--rebatch`` regenerates on the run's
own engine instead, one example at a time (batch size 1) in reverse order: the noise floor of
a stored run (``core.noise``), the engine's full identity then required to be the stored one.

A run folder records digests, not machine paths, so the suite file the run came from is given
too (``--suite``); it must describe the same conditions (split digest, decoding) and the same
models: every arm's ``model_identity`` (the ``engine`` entry aside) and ``adapter_identity``
(a server's ``served_name`` aside) must equal the stored ones, or nothing is generated.

Invariants kept: the sample is a pure function of the split and the seed (the same examples for
every arm and every engine); examples are generated per slice, in split order, in chunks of the
run's ``batch_size`` (with the whole split this is the run's own fixed batches); every prompt is
checked against the stored ``prompt_sha256`` before it is sent; every adapter arm passes the
adapter preflight first (``inference.preflight``), as in a session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.abstention import scoring_fields
from pytest_sommelier.core.canonical import prompt_digest
from pytest_sommelier.core.metrics import record_hit
from pytest_sommelier.core.noise import rebatch_order
from pytest_sommelier.core.reasoning import ReasoningRule, parse_fields, split_output
from pytest_sommelier.core.sampling import sample_positions
from pytest_sommelier.core.types import FormattedSplit, Suite
from pytest_sommelier.data.store import artifacts, stored
from pytest_sommelier.data.suite.load import load_suite
from pytest_sommelier.errors import EvaluationError, InputError, InvariantError
from pytest_sommelier.inference import preflight, select_engine
from pytest_sommelier.inference.model_call import ModelCall
from pytest_sommelier.inference.protocol import PREFLIGHT_KEY, Generator
from pytest_sommelier.registry import DEFAULT_ENGINE

PARITY_SCHEMA = "sommelier.parity.v1"
SNIPPET = 160


def sample_ids(example_ids: list[str], sample: int | None, seed: int) -> set[str]:
    """A seeded sample of ``sample`` ids (all of them when None or larger than the split): the
    one ``--sample`` draw (``core.sampling``) over the ids in sorted order."""
    if sample is None or sample >= len(example_ids):
        return set(example_ids)
    if sample <= 0:
        raise InputError(
            "SOM-PARITY-SAMPLE",
            f"--sample must be positive, got {sample}",
            "give the number of examples to regenerate, or leave it out for all",
            where="--sample",
        )
    ordered = sorted(example_ids)
    return {ordered[index] for index in sample_positions(len(ordered), sample, seed)}


def without(identity: Mapping[str, Any] | None, *keys: str) -> dict[str, Any] | None:
    """``identity`` without ``keys`` (None stays None)."""
    return None if identity is None else {k: v for k, v in identity.items() if k not in keys}


def recorded_engine(identity: Mapping[str, Any] | None) -> str:
    """The engine an identity records; runs of 0.1 (no ``engine`` entry) ran on transformers."""
    engine = (identity or {}).get("engine")
    return str(engine.get("name")) if isinstance(engine, Mapping) else DEFAULT_ENGINE


def _check_conditions(resolved: Mapping[str, Any], suite: Suite, run_dir: Path) -> None:
    """The live suite must describe the stored run's split and decoding."""
    from pytest_sommelier.data.digests import sha256_path

    recorded = (resolved.get("test_split") or {}).get("sha256")
    if sha256_path(suite.test_split) != recorded:
        raise InputError(
            "SOM-PARITY-SUITE",
            f"the suite's test_split is not the split of {run_dir} (digest differs)",
            "give the suite file the run was made with",
            where="test_split",
        )
    recorded_decoding = dict(resolved.get("decoding") or {})
    if dict(suite.decoding) != recorded_decoding:
        raise InputError(
            "SOM-PARITY-SUITE",
            f"the suite's [decoding] differs from the run's ({recorded_decoding})",
            "give the suite file the run was made with",
            where="decoding",
        )


def _check_identity(
    arm: str, report: Mapping[str, Any], generator: Generator, *, same_engine: bool = False
) -> None:
    """The regenerating arm must be the stored arm's model and adapter (the engine aside,
    unless ``same_engine``; the preflight's derived record aside: runs before 0.3 have none)."""
    engine = () if same_engine else ("engine",)
    pairs = (
        ("model_identity", without(report.get("model_identity"), *engine),
         without(generator.model_identity, *engine)),
        ("adapter_identity", without(report.get("adapter_identity"), "served_name", PREFLIGHT_KEY),
         without(generator.adapter_identity, "served_name", PREFLIGHT_KEY)),
    )  # fmt: skip
    for field, old, new in pairs:
        if old != new:
            raise EvaluationError(
                "SOM-PARITY-IDENTITY",
                f"arm {arm!r}: the suite's {field} is not the stored run's "
                f"(stored {old}, now {new})",
                "parity compares engines on the same model and adapter: give the run's suite",
                where=f"{arm}.{field}",
            )


def stored_engine(run_dir: Path, resolved: Mapping[str, Any]) -> str:
    """The engine the stored run's first arm was generated on (``recorded_engine``)."""
    for arm in resolved.get("arms", {}):
        path = runlayout.arm_report(runlayout.arm_dir(run_dir, arm))
        if path.is_file():
            return recorded_engine(artifacts.read_json(path).get("model_identity"))
    return DEFAULT_ENGINE


def run_parity(
    run_dir: Path,
    suite_path: Path,
    engine_name: str | None,
    *,
    sample: int | None = None,
    seed: int = 0,
    rebatch: bool = False,
) -> dict[str, Any]:
    """Regenerate the sampled examples of every stored arm on the engine named (configured by
    the suite's ``[engine]`` table, its name replaced; with ``rebatch``, default the run's own
    engine, one example at a time in reverse order); the parity report."""
    run_dir = Path(run_dir)
    resolved, recorded, split = stored.load_run_inputs(run_dir)
    suite = load_suite(suite_path)
    _check_conditions(resolved, suite, run_dir)
    if engine_name is None:
        if not rebatch:
            raise InputError(
                "SOM-PARITY-ENGINE",
                "sommelier parity needs --engine (or --rebatch, which uses the run's own)",
                "give --engine transformers|vllm|openai, or --rebatch",
                where="--engine",
            )
        engine_name = stored_engine(run_dir, resolved)
    engine = replace(suite.engine, name=engine_name)
    chosen = sample_ids([e.example_id for e in split.examples], sample, seed)
    outcomes = preflight.session_preflight(suite, engine.name)
    generators = select_engine.load_generators(
        engine, suite.model, suite.arms, suite_dir=suite.path.parent
    )
    failed = preflight.with_preflight(generators, outcomes)
    if failed:
        raise next(iter(failed.values()))
    decoding: dict[str, Any] = dict(suite.decoding)
    size = int(decoding.get("batch_size", 1))
    if rebatch:
        decoding["batch_size"], size = 1, 1
    arms: dict[str, Any] = {}
    run_id = None
    for arm in resolved.get("arms", {}):
        if arm not in generators:
            raise InputError(
                "SOM-PARITY-SUITE",
                f"the stored run has arm {arm!r}, the suite has not",
                "give the suite file the run was made with",
                where=f"arms.{arm}",
            )
        report, _, records = artifacts.read_arm(runlayout.arm_dir(run_dir, arm))
        run_id = run_id or report.get("run_id")
        _check_identity(arm, report, generators[arm], same_engine=rebatch)
        by_id = {r["example_id"]: r for rows in records.values() for r in rows}
        arms[arm] = _arm_parity(
            arm,
            generators[arm],
            split,
            by_id,
            chosen,
            decoding,
            size,
            recorded.arguments_key,
            reverse=rebatch,
            reasoning=recorded.reasoning,
        )
        arms[arm]["stored_engine"] = recorded_engine(report.get("model_identity"))
    return {
        "schema_version": PARITY_SCHEMA,
        "run_id": run_id,
        "engine": engine.name,
        "rebatch": rebatch,
        "sample": {"seed": seed, "examples": len(chosen), "of": len(split.examples)},
        "arms": arms,
    }


def _arm_parity(
    arm: str,
    generator: Generator,
    split: FormattedSplit,
    by_id: Mapping[str, Mapping[str, Any]],
    chosen: set[str],
    decoding: dict[str, Any],
    size: int,
    arguments_key: str,
    *,
    reverse: bool = False,
    reasoning: ReasoningRule = None,
) -> dict[str, Any]:
    """Generate the arm's sampled examples slice by slice (in reverse order with ``reverse``,
    ``core.noise.rebatch_order``) and compare them with the stored (outputs parsed with the
    run's reasoning rule and ``arguments_key``)."""
    counts = {"examples": 0, "identical_outputs": 0, "equal_parse_status": 0, "equal_full_call": 0}
    model_call = ModelCall()  # the fixture path's checks (SOM-GEN-COUNT, SOM-GEN-TYPE, ...)
    differing: list[dict[str, Any]] = []
    for language, examples in split.slices.items():
        picked = [e for e in examples if e.example_id in chosen]
        if reverse:
            ordered = {e.example_id: e for e in picked}
            picked = [ordered[key] for key in rebatch_order(list(ordered))]
        for start in range(0, len(picked), size):
            batch = picked[start : start + size]
            for example in batch:
                old = by_id.get(example.example_id)
                digest = prompt_digest(example.prompt_text, example.template_kwargs)
                if old is None or old.get("prompt_sha256") != digest:
                    raise InvariantError(
                        "SOM-PARITY-RECORD",
                        f"arm {arm!r}: example {example.example_id!r} has no stored record with "
                        "its prompt digest",
                        "the run folder is incomplete or was edited",
                        where=f"eval/{arm}",
                    )
            prompts = [e.prompt_text for e in batch]
            completions = model_call(generator, arm, prompts, dict(decoding))
            for example, completion in zip(batch, completions, strict=True):
                text = completion.text
                old = by_id[example.example_id]
                parts = split_output(
                    text,
                    reasoning,
                    engine_reasoning=completion.reasoning,
                    engine_content=completion.has_content,
                )
                new = parse_fields(parts, arguments_key, example.parser_version)
                same_status = new["parse_status"] == old.get("parse_status")
                fields = {"gold_call": example.gold_call, **scoring_fields(example)}
                same_hit = record_hit({**new, "raw_text": text, **fields}) == record_hit(
                    {**old, **fields}
                )
                counts["examples"] += 1
                counts["identical_outputs"] += int(text == old.get("raw_text"))
                counts["equal_parse_status"] += int(same_status)
                counts["equal_full_call"] += int(same_hit)
                if text != old.get("raw_text"):
                    differing.append(
                        {
                            "example_id": example.example_id,
                            "language": language,
                            "stored_parse_status": old.get("parse_status"),
                            "parse_status": new["parse_status"],
                            "same_full_call_outcome": same_hit,
                            "stored_text": str(old.get("raw_text"))[:SNIPPET],
                            "text": text[:SNIPPET],
                        }
                    )
    return {**counts, "differing": differing}


def check_min_identical(result: Mapping[str, Any], fraction: float) -> None:
    """EvaluationError naming the first arm whose identical fraction is below ``fraction``."""
    for arm, row in result["arms"].items():
        if row["examples"] and row["identical_outputs"] / row["examples"] < fraction:
            raise EvaluationError(
                "SOM-PARITY-BELOW",
                f"arm {arm!r}: {row['identical_outputs']} of {row['examples']} outputs identical "
                f"on {result['engine']}, below --min-identical {fraction:g}",
                "see the differing examples above and in the parity report",
                where=f"{arm}",
            )


def render_parity(result: Mapping[str, Any]) -> str:
    """The parity report as terminal lines (one per arm, then the differing examples)."""
    sample = result["sample"]
    how = (
        f"re-batched (batch size 1, reverse order) on its own engine {result['engine']}"
        if result.get("rebatch")
        else f"on engine {result['engine']}"
    )
    lines = [
        f"parity of run {result['run_id']} {how}: "
        f"{sample['examples']} of {sample['of']} examples (seed {sample['seed']})"
    ]
    for arm, row in result["arms"].items():
        n = row["examples"]
        lines.append(
            f"  {arm} (stored on {row['stored_engine']}): identical {row['identical_outputs']}/{n}"
            f", parse status equal {row['equal_parse_status']}/{n}"
            f", full-call outcome equal {row['equal_full_call']}/{n}"
        )
        for diff in row["differing"][:10]:
            lines.append(
                f"    {diff['example_id']} ({diff['language']}): {diff['stored_parse_status']} -> "
                f"{diff['parse_status']}, full call "
                f"{'same' if diff['same_full_call_outcome'] else 'differs'}: "
                f"{diff['stored_text'][:60]!r} vs {diff['text'][:60]!r}"
            )
    return "\n".join(lines)
