"""The identity gate (pure): two arms' evaluation reports may be compared only when they agree
on every identity field; the first disagreement refuses, naming the field and both values.

Invariant kept: a comparison report exists only after :func:`check_identity` accepted both
arms (``core.report_comparison`` calls it first).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_sommelier.core.canonical import sha256_json
from pytest_sommelier.core.metrics import (
    metric_order,
)
from pytest_sommelier.core.parse import recorded_arguments_key
from pytest_sommelier.core.reasoning import recorded_reasoning
from pytest_sommelier.core.report_blocks import (
    MISSING,
    same_json,
    short_text,
)
from pytest_sommelier.core.types import (
    EvaluationReport,
    SharedBlock,
)
from pytest_sommelier.errors import EvaluationError

ADAPTER_NAME_KEY = "name"
"""The entry the engines add to an adapter identity for the arm's name
(``inference.engines.adapter_refs``): no part of the adapter's content."""

PREFLIGHT_KEY = "preflight"
"""The key under which a session records an adapter arm's preflight (its mapped-module counts
and warnings, ``inference.preflight``) in the generator's ``adapter_identity``. It is derived
from the adapter's files and the base, which the identity already pins, so it is no part of
the adapter's content (the generation cache's key, the history's "adapter changed")."""


def adapter_content(adapter_identity: Any) -> Any:
    """The adapter identity as its content: without the arm's name, so the same adapter files
    under another arm name (a rename, "v2 of the same checkpoint") are the same adapter, and
    without the preflight's record (:data:`PREFLIGHT_KEY`: derived from the files the identity
    already pins); a content digest, hub id and revision, served name or any other entry stays.
    The generation cache keys by it (``inference.gencache``) and the history says "adapter
    changed" only when it differs (``data.store.history_runs``)."""
    if isinstance(adapter_identity, Mapping):
        return {
            k: v
            for k, v in adapter_identity.items()
            if k not in (ADAPTER_NAME_KEY, PREFLIGHT_KEY)
        }
    return adapter_identity


def adapter_differs(before: Any, after: Any) -> bool:
    """Whether two adapter identities name different adapter content (:func:`adapter_content`:
    the digest, or hub id and revision, differs; the arm's name and the preflight's record do
    not count): what "adapter changed" means in ``sommelier compare`` and ``sommelier
    history``."""
    return sha256_json(adapter_content(before)) != sha256_json(adapter_content(after))


def _field(report: Mapping[str, Any], *path: str) -> Any:
    """``report[path[0]][path[1]]...`` or ``MISSING`` when any step is absent."""
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return MISSING
        value = value[key]
    return value


def _parser_version(report: Mapping[str, Any]) -> Any:
    """The report's parser version for the identity gate: the ``parser`` block's ``version``
    (0.5), else the 0.4 field ``parser_version``; a report that carries both with different
    values gets a value naming both, which equals no consistent report's (so it is refused)."""
    block, flat = _field(report, "parser", "version"), _field(report, "parser_version")
    if block is MISSING or block == flat:
        return flat
    if flat is MISSING:
        return block
    return f"{block} (parser.version) / {flat} (parser_version)"


def _identity_fields(report: EvaluationReport) -> list[tuple[str, Any]]:
    """The identity fields of a report, in the order the gate checks them.

    Per-slice fields follow the report's own ``slice_order``; after the slice-set check both
    reports have the same one, so the lists line up.
    """
    order = _field(report, "slice_order")
    langs = list(order) if isinstance(order, list) else []
    metrics = _field(report, "metrics")
    fields: list[tuple[str, Any]] = [
        (name, _field(report, name))
        for name in ("model_identity", "config_sha256", "split", "test_split_sha256")
    ]
    fields.append(("slices", order))
    fields += [
        (f"slices.{lang}.prompt_set_sha256", _field(report, "slices", lang, "prompt_set_sha256"))
        for lang in langs
    ]
    fields += [
        (
            f"paired_slices.{lang}.pair_set_sha256",
            _field(report, "paired_slices", lang, "pair_set_sha256"),
        )
        for lang in langs[1:]
    ]
    fields.append(("parser.version", _parser_version(report)))
    key = recorded_arguments_key(report) or _field(report, "arguments_key")  # unknown: as is
    fields.append(("arguments_key", key))
    # [parser] reasoning and [format] template_kwargs: absent (written before them) = none
    fields.append(("parser.reasoning", recorded_reasoning(report)))
    fields.append(("template_kwargs", report.get("template_kwargs") or {}))
    fields.append(("decoding", _field(report, "decoding")))
    scorers = {  # core.scorers: by name, so a refusal names the scorer and its version
        str(entry.get("name")): {k: v for k, v in entry.items() if k != "name"}
        for entry in report.get("scorers", [])
        if isinstance(entry, Mapping)
    }
    fields.append(("scorers", scorers))
    names = metric_order(metrics) if isinstance(metrics, Mapping) else MISSING
    fields.append(("metric_names", names))
    return fields


def _first_difference(path: str, left: Any, right: Any) -> tuple[str, Any, Any] | None:
    """The first (sorted-key, depth-first) sub-path where two JSON values differ, or None."""
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        for key in sorted(set(left) | set(right), key=str):
            found = _first_difference(
                f"{path}.{key}", left.get(key, MISSING), right.get(key, MISSING)
            )
            if found:
                return found
        return None
    if left is MISSING or right is MISSING or not same_json(left, right):
        return path, left, right
    return None


def _underneath(candidate: EvaluationReport, reference: EvaluationReport) -> str:
    """What differs underneath ``config_sha256`` (a digest of the split, slices, base model,
    decoding, parser and statistics settings): the first later identity field that differs,
    else the parts only the digest holds."""
    later = zip(_identity_fields(candidate), _identity_fields(reference), strict=False)
    for (name, cand_value), (_, ref_value) in later:
        if name in ("model_identity", "config_sha256"):
            continue
        diff = _first_difference(name, cand_value, ref_value)
        if diff:
            return f"{diff[0]}: {short_text(diff[1])} vs {short_text(diff[2])}"
    return "a setting only the digest holds: the base model reference or [statistics]"


def _subset_note(candidate: EvaluationReport, reference: EvaluationReport, path: str) -> str | None:
    """For a prompt- or pair-set difference: which arm scored fewer examples (pairs) of the
    slice (a ``-k`` / ``--deselect`` subset run), or None when both scored as many."""
    parts = path.split(".")
    if len(parts) != 3 or parts[2] not in ("prompt_set_sha256", "pair_set_sha256"):
        return None
    block, lang = parts[0], parts[1]
    unit = "examples" if block == "slices" else "pairs"
    counts = [_field(report, block, lang, unit) for report in (candidate, reference)]
    if not all(isinstance(count, int) for count in counts) or counts[0] == counts[1]:
        return None
    which = "candidate" if counts[0] < counts[1] else "reference"
    fewer, more = sorted(counts)
    return (
        f"the {which} scored {fewer} of the {more} {unit} of slice {lang!r} the other scored "
        "(a subset run: -k, --deselect or a crash)"
    )


def _refuse_identity(
    candidate: EvaluationReport, reference: EvaluationReport, diff: tuple[str, Any, Any]
) -> EvaluationError:
    """The identity-gate refusal naming the field and both (shortened) values; for
    ``config_sha256`` also what differs underneath it, for a prompt set the subset run."""
    path, cand_value, ref_value = diff
    cand_arm, ref_arm = candidate.get("arm", "candidate"), reference.get("arm", "reference")
    subset = _subset_note(candidate, reference, path)
    if subset is not None:
        return EvaluationError(
            "SOM-COMPARE-IDENTITY",
            f"arms disagree on {path}: {subset}; refusing to compare",
            "compare arms of complete runs, every example scored in both",
            where=path,
        )
    detail = ""
    if path == "config_sha256":
        detail = f" (underneath: {_underneath(candidate, reference)})"
    return EvaluationError(
        "SOM-COMPARE-IDENTITY",
        f"arms disagree on {path}: candidate {cand_arm!r} has {short_text(cand_value)}, "
        f"reference {ref_arm!r} has {short_text(ref_value)}{detail}; refusing to compare",
        "evaluate both arms under the same model, split, slices, prompts, parser and decoding "
        "(batch size included), with every example scored in both",
        where=path,
    )


def check_identity(
    candidate_report: EvaluationReport, reference_report: EvaluationReport
) -> SharedBlock:
    """The identity gate: return the ``shared`` block both reports agree on, or refuse.

    Fields are checked in this order and the FIRST disagreement (or absence) raises
    ``EvaluationError("SOM-COMPARE-IDENTITY")`` naming the field path and both values:
    model_identity, config_sha256, split, test_split_sha256, slices (the slice set, in
    configured order), slices.<lang>.prompt_set_sha256, paired_slices.<lang>.pair_set_sha256,
    parser.version (``sommelier.parser.v1`` or ``v2``: the ``parser`` block's ``version``, else
    ``parser_version``), arguments_key, parser.reasoning (the declared reasoning rule),
    template_kwargs, decoding (batch_size included), metric_names.

    A report without ``arguments_key`` (written before the key was recorded, when parser v1
    read only ``arguments``) counts as ``arguments``, and one without a parser block or
    template options as having no reasoning rule and no options, so stored runs stay
    comparable.
    """
    cand_fields = _identity_fields(candidate_report)
    ref_fields = _identity_fields(reference_report)
    for (name, cand_value), (_, ref_value) in zip(cand_fields, ref_fields, strict=False):
        diff = _first_difference(name, cand_value, ref_value)
        if diff:
            raise _refuse_identity(candidate_report, reference_report, diff)
    values = dict(cand_fields)
    langs = values["slices"]
    return {
        "model_identity": values["model_identity"],
        "config_sha256": values["config_sha256"],
        "split": values["split"],
        "test_split_sha256": values["test_split_sha256"],
        "parser_version": values["parser.version"],
        "arguments_key": values["arguments_key"],
        "parser": {"version": values["parser.version"], "reasoning": values["parser.reasoning"]},
        "template_kwargs": values["template_kwargs"],
        "decoding": values["decoding"],
        "slices": list(langs),
        "prompt_set_sha256": {lang: values[f"slices.{lang}.prompt_set_sha256"] for lang in langs},
        "pair_set_sha256": {
            lang: values[f"paired_slices.{lang}.pair_set_sha256"] for lang in langs[1:]
        },
        "metric_names": values["metric_names"],
    }


CONFIG_PARTS = (
    "decoding", "statistics", "slices", "model", "test_split", "arguments_key", "reasoning",
)  # fmt: skip
"""The parts of ``suite.resolved.json`` that ``config_sha256`` covers (besides the parser
version), in the order a change is named (``arguments_key`` absent = ``arguments``)."""


def _config_part(resolved: Mapping[str, Any], part: str) -> Any:
    """One part of a resolved suite as ``config_sha256`` sees it (an absent key: arguments)."""
    if part == "arguments_key":
        return recorded_arguments_key(resolved) or resolved.get(part)
    return resolved.get(part)


def config_difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """``decoding.max_new_tokens: 64 -> 9``: the first part of two resolved suites (an older
    and a newer run) covered by ``config_sha256`` that differs, or None. It explains the
    identity gate's ``config_sha256`` refusal; it is never a gate itself."""
    for part in CONFIG_PARTS:
        before, after = _config_part(old, part), _config_part(new, part)
        if sha256_json(before) == sha256_json(after):
            continue
        if isinstance(before, Mapping) and isinstance(after, Mapping):
            for key in sorted(set(before) | set(after)):
                if sha256_json(before.get(key)) != sha256_json(after.get(key)):
                    was, now = json.dumps(before.get(key)), json.dumps(after.get(key))
                    return f"{part}.{key}: {was} -> {now}"
        return f"{part}: {json.dumps(before)} -> {json.dumps(after)}"
    return None
