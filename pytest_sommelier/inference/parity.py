"""``sommelier parity``: regenerate a seeded sample of a stored run with another engine and report,
per arm, how many outputs are byte-identical, how many parse the same way and how many have the
same full-call outcome, with the examples that differ.

A run folder records digests, not machine paths, so the suite file the run came from is given
too (``--suite``); it must describe the same conditions (split digest, decoding) and the same
models: every arm's ``model_identity`` (the ``engine`` entry aside) and ``adapter_identity``
(a server's ``served_name`` aside) must equal the stored ones, or nothing is generated.

Invariants kept: the sample is a pure function of the split and the seed (the same examples for
every arm and every engine); examples are generated per slice, in split order, in chunks of the
run's ``batch_size`` (with the whole split this is the run's own fixed batches); every prompt is
checked against the stored ``prompt_sha256`` before it is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.canonical import sha256_text
from pytest_sommelier.core.metrics import full_call_hit
from pytest_sommelier.core.parse import parse_tool_call
from pytest_sommelier.core.sampling import sample_positions
from pytest_sommelier.core.types import FormattedSplit, Suite
from pytest_sommelier.data import artifacts, stored
from pytest_sommelier.data.suite import load_suite
from pytest_sommelier.errors import EvaluationError, InputError, InvariantError
from pytest_sommelier.inference import select_engine
from pytest_sommelier.inference.protocol import Generator

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


def without(identity: Mapping[str, Any] | None, key: str) -> dict[str, Any] | None:
    """``identity`` without ``key`` (None stays None)."""
    return None if identity is None else {k: v for k, v in identity.items() if k != key}


def recorded_engine(identity: Mapping[str, Any] | None) -> str:
    """The engine an identity records; runs of 0.1 (no ``engine`` entry) ran on transformers."""
    engine = (identity or {}).get("engine")
    return str(engine.get("name")) if isinstance(engine, Mapping) else "transformers"


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


def _check_identity(arm: str, report: Mapping[str, Any], generator: Generator) -> None:
    """The regenerating arm must be the stored arm's model and adapter (engine aside)."""
    pairs = (
        ("model_identity", without(report.get("model_identity"), "engine"),
         without(generator.model_identity, "engine")),
        ("adapter_identity", without(report.get("adapter_identity"), "served_name"),
         without(generator.adapter_identity, "served_name")),
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


def run_parity(
    run_dir: Path,
    suite_path: Path,
    engine_name: str,
    *,
    sample: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Regenerate the sampled examples of every stored arm on the engine named (configured by
    the suite's ``[engine]`` table, its name replaced); the parity report."""
    run_dir = Path(run_dir)
    resolved, recorded, split = stored.load_run_inputs(run_dir)
    suite = load_suite(suite_path)
    _check_conditions(resolved, suite, run_dir)
    engine = replace(suite.engine, name=engine_name)
    chosen = sample_ids([e.example_id for e in split.examples], sample, seed)
    generators = select_engine.load_generators(
        engine, suite.model, suite.arms, suite_dir=suite.path.parent
    )
    decoding: dict[str, Any] = dict(suite.decoding)
    size = int(decoding.get("batch_size", 1))
    arms: dict[str, Any] = {}
    run_id = None
    for arm in resolved.get("arms", {}):
        if arm not in generators:
            raise InputError(
                "SOM-PARITY-ARM",
                f"the stored run has arm {arm!r}, the suite has not",
                "give the suite file the run was made with",
                where=f"arms.{arm}",
            )
        report, _, records = artifacts.read_arm(runlayout.arm_dir(run_dir, arm))
        run_id = run_id or report.get("run_id")
        _check_identity(arm, report, generators[arm])
        by_id = {r["example_id"]: r for rows in records.values() for r in rows}
        arms[arm] = _arm_parity(
            arm, generators[arm], split, by_id, chosen, decoding, size, recorded.arguments_key
        )
        arms[arm]["stored_engine"] = recorded_engine(report.get("model_identity"))
    return {
        "schema_version": PARITY_SCHEMA,
        "run_id": run_id,
        "engine": engine.name,
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
) -> dict[str, Any]:
    """Generate the arm's sampled examples slice by slice and compare them with the stored
    (outputs parsed with the run's ``arguments_key``)."""
    counts = {"examples": 0, "identical_outputs": 0, "equal_parse_status": 0, "equal_full_call": 0}
    differing: list[dict[str, Any]] = []
    for language, examples in split.slices.items():
        picked = [e for e in examples if e.example_id in chosen]
        for start in range(0, len(picked), size):
            batch = picked[start : start + size]
            for example in batch:
                old = by_id.get(example.example_id)
                if old is None or old.get("prompt_sha256") != sha256_text(example.prompt_text):
                    raise InvariantError(
                        "SOM-PARITY-RECORD",
                        f"arm {arm!r}: example {example.example_id!r} has no stored record with "
                        "its prompt digest",
                        "the run folder is incomplete or was edited",
                        where=f"eval/{arm}",
                    )
            texts = generator.generate([e.prompt_text for e in batch], dict(decoding))
            for example, text in zip(batch, texts, strict=True):
                old = by_id[example.example_id]
                call, status = parse_tool_call(text, arguments_key=arguments_key)
                new = {"parse_status": status, "parsed_call": call}
                same_status = status == old.get("parse_status")
                same_hit = full_call_hit(new, example.gold_call) == full_call_hit(
                    old, example.gold_call
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
                            "parse_status": status,
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
    lines = [
        f"parity of run {result['run_id']} on engine {result['engine']}: "
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
