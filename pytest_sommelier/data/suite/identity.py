"""The resolved suite as recorded in a run (``suite.resolved.json``): content digests, no paths.

Invariant kept: :func:`suite_identity` is JSON-safe and holds no absolute path of this machine;
two suites that load the same files from different folders have the same identity.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from pytest_sommelier.core.reasoning import rule_identity
from pytest_sommelier.core.types import Suite, model_kind_of
from pytest_sommelier.data.digests import sha256_path
from pytest_sommelier.data.references import reference_kind, resolve_pkg_path

SUITE_IDENTITY_VERSION = "sommelier.suite_resolved.v1"


def suite_identity(suite: Suite) -> dict[str, Any]:
    """The resolved suite as JSON-safe data with content digests instead of machine paths.

    Written as ``suite.resolved.json``. Local model/adapter files and directories appear as
    ``{"kind": "local", "sha256": ...}``, package references as ``{"kind": "pkg", "ref": ...,
    "sha256": ...}``, hub ids as ``{"kind": "hub", "id": ..., "revision": ...}``; the split as
    its file name and digest; ``arguments_key`` is the parser's argument key (a run written
    before it was recorded has none, and read ``arguments``); ``split_tokenizer: "any"`` when
    the suite accepts a split formatted with another tokenizer than the base's. No absolute
    path of this machine appears anywhere.
    """
    identity: dict[str, Any] = {
        "schema_version": SUITE_IDENTITY_VERSION,
        "name": suite.name,
        "test_split": {"file": suite.test_split.name, "sha256": sha256_path(suite.test_split)},
        "slices": list(suite.slices),
        "reference_slice": suite.reference_slice,
        "arguments_key": suite.arguments_key,
        "model": {
            "base": reference_identity(suite.model.base, suite.model.revision),
            "dtype": suite.model.dtype,
            "device": suite.model.device,
        },
        "decoding": dict(suite.decoding),
        "arms": {
            name: {
                "model_kind": model_kind_of(arm.adapter),
                "adapter": None
                if arm.adapter is None
                else reference_identity(arm.adapter, arm.adapter_revision),
            }
            for name, arm in suite.arms.items()
        },
        "comparisons": [
            {"name": c.name, "candidate": c.candidate, "reference": c.reference}
            for c in suite.comparisons
        ],
        "statistics": asdict(suite.statistics),
        "gates": [_gate_identity(gate) for gate in suite.gates],
    }
    if suite.split_tokenizer != "base":
        identity["split_tokenizer"] = suite.split_tokenizer
    if suite.selection is not None:  # [selection] (core.selection), so rescore can re-select
        identity["selection"] = {
            "metric": suite.selection.metric,
            "among": suite.selection.among,
            "reference": suite.selection.reference,
            "slice": suite.selection.slice,
            "candidates": list(suite.selection.candidates),
        }
    if suite.scorers:  # [suite] scorers (their versions are in each arm's report)
        identity["scorers"] = list(suite.scorers)
    if suite.reasoning is not None:  # [parser] reasoning, so rescore splits by the same rule
        identity["reasoning"] = rule_identity(suite.reasoning)
    if suite.template_kwargs:  # [format] template_kwargs
        identity["template_kwargs"] = dict(suite.template_kwargs)
    if suite.parser_version != "v1":  # [parser] version/order, so rescore reads call sets
        identity["parser"] = {"version": suite.parser_version, "order": suite.parser_order}
    return identity


def reference_identity(value: str, revision: str | None) -> dict[str, Any]:
    """Identity of one loaded model/adapter reference (see :func:`suite_identity`)."""
    kind = reference_kind(value)
    if kind == "hub":
        return {"kind": "hub", "id": value, "revision": revision}
    if kind == "pkg":
        return {"kind": "pkg", "ref": value, "sha256": sha256_path(resolve_pkg_path(value))}
    return {"kind": "local", "sha256": sha256_path(value)}


def _gate_identity(gate: Any) -> dict[str, Any]:
    """A gate as the resolved suite records it: ``effect`` only when the gate declares one (a
    suite without it resolves as it did before the key existed)."""
    fields = asdict(gate)
    if fields.get("effect") is None:
        fields.pop("effect", None)
    fields.pop("candidates", None)  # set when a selection gate is resolved, never configured
    if not fields.get("selected"):
        fields.pop("selected", None)
    return fields
