"""What the terminal, Markdown and HTML views share: metric short names, number and interval
formatting (``core.text``, re-exported), plain and Markdown tables. Pure: values in, text out.

Invariant kept: a value is written the same way in every view (three decimals, ``n/a`` for
none, signed bounds for intervals).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pytest_sommelier.core.abstention import ABSTENTION_ACCURACY, DECISION_ACCURACY
from pytest_sommelier.core.abstention import LABELS as ABSTENTION_LABELS
from pytest_sommelier.core.acceptable import METRIC_LABEL as ACCEPTABLE_LABEL
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE
from pytest_sommelier.core.call_sets import LABELS as CALL_SET_LABELS
from pytest_sommelier.core.intervals import SIZE_WEIGHTED_CLUSTER_WARN
from pytest_sommelier.core.metrics import (
    ARGUMENT_EXACT_MATCH,
    ARGUMENT_F1,
    FULL_CALL_EXACT_MATCH,
    FUNCTION_NAME_ACCURACY,
    METRIC_NAMES,
    VALID_JSON_RATE,
    metric_order,
)
from pytest_sommelier.core.scorers import NAME as SCORER_NAME
from pytest_sommelier.core.text import fmt as fmt
from pytest_sommelier.core.text import fmt_interval as fmt_interval
from pytest_sommelier.core.text import selected_block as selected_block
from pytest_sommelier.core.text import selected_interval as selected_interval


def extra_metrics(names: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, label)`` of every metric in ``names`` other than the five, in ``metric_order``:
    ``acceptable_call_match`` (labelled as BFCL's rules), parser v2's added metrics
    (``core.call_sets.LABELS``), the abstention metrics (labelled by
    what they count, ``core.abstention.LABELS``) and extension scorers (``scorer <name>``),
    which the views show apart from the five, after them."""
    return [
        (
            name,
            ACCEPTABLE_LABEL
            if name == ACCEPTABLE
            else {**CALL_SET_LABELS, **ABSTENTION_LABELS}.get(name, f"scorer {name}"),
        )
        for name in metric_order(names)
        if name not in METRIC_NAMES
    ]


def scorer_metrics(names: Iterable[str]) -> list[str]:
    """The extension scorers' metrics among ``names`` (every metric other than the five and
    ``acceptable_call_match``), in ``metric_order``: the columns the run-store views
    (``sommelier history``, the comparison with a stored run, the Markdown summary) add after
    the five. Empty for a run without scorers, so its tables are exactly the five's. A name
    that is not a scorer's name (``core.scorers.NAME``: a key of a stored file read back) is
    never a column, so no stored key reaches a table header."""
    return [
        name
        for name, _ in extra_metrics(n for n in names if isinstance(n, str))
        if name != ACCEPTABLE and SCORER_NAME.fullmatch(name)
    ]


def union_scorer_metrics(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`scorer_metrics` of the keys of every block in ``blocks`` together: one column per
    scorer any of them has (a block without it gets an empty cell in that column)."""
    return scorer_metrics({name for block in blocks for name in block})


SHORT = {
    VALID_JSON_RATE: "valid_json",
    FUNCTION_NAME_ACCURACY: "name_acc",
    ARGUMENT_EXACT_MATCH: "args_exact",
    ARGUMENT_F1: "args_f1",
    FULL_CALL_EXACT_MATCH: "full_call",
    ABSTENTION_ACCURACY: "abstain",
    DECISION_ACCURACY: "decision",
}


def table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """Left-aligned columns as wide as their widest cell, two spaces apart."""
    table = list(rows)
    widths = [max(len(str(c)) for c in column) for column in zip(header, *table, strict=True)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    out = [line.rstrip()]
    for row in table:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return out


def md_table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out.extend("| " + " | ".join(row) + " |" for row in rows)
    return out


POWER_METRIC = FULL_CALL_EXACT_MATCH
"""The metric whose design effect and minimum detectable effect the views show per block."""


def methods_text(block: Mapping[str, Any]) -> str:
    """``rates bonett_price_adjusted_wald, args_f1 jackknife_t_pseudo_paired``: the rate metrics'
    method, then any other metric's whose method differs."""
    entries = selected_block(block).get("intervals") or {}
    rate = (entries.get(POWER_METRIC) or {}).get("method")
    if rate is None:
        return str(selected_block(block).get("method") or "n/a")
    others = [
        f"{SHORT.get(name, name)} {entry['method']}"
        for name, entry in entries.items()
        if entry and entry.get("method") != rate and name != POWER_METRIC
    ]
    return ", ".join([f"rates {rate}", *others])


def _one_sided(summary: Mapping[str, Any]) -> str:
    """``one-sided 2.5%``: the level of a claim on one bound of the summary's two-sided level."""
    return f"one-sided {(1.0 - summary['confidence_level']) * 50:.3g}%"


def _detectable(summary: Mapping[str, Any]) -> tuple[str, str]:
    """``(where, value)``: at which discordance, and the minimum detectable difference (or why
    there is none) of a power summary with pairs."""
    pairs, mde = summary["pairs"], summary.get("minimum_detectable_effect")
    psi = summary.get("discordant_proportion")
    where = f", at the observed discordance {psi:.3f}" if psi is not None else ""
    if summary.get("discordance_floored"):
        return "", f"none measurable (no discordant pair in {pairs} pairs)"
    if mde is None:
        return where, f"none with {pairs} pairs (too few; {_DESIGN_ONLY})"
    if not summary.get("attainable", True):
        return where, (f"none with {pairs} pairs (a run this size would need {mde:.2f}, more "
                       f"than the discordance; {_DESIGN_ONLY})")  # fmt: skip
    return where, f"{mde:.2f} with {pairs} pairs"


_DESIGN_ONLY = "a figure of the design, not of this run's difference, which the gates judge"


def power_text(block: Mapping[str, Any], metric: str = POWER_METRIC) -> str | None:
    """``minimum detectable difference in full_call_exact_match at 80% power (one-sided 2.5%),
    at the observed discordance 0.488: 0.24 with 84 pairs (48 clusters, design effect 1.30)``,
    then, when the suite declares ``[statistics] effect``, the design's power for it (None
    without a power summary). A planning figure: what a run of this size would detect at this
    discordance, not a verdict on this run's estimate (its gates test that)."""
    summary = (block.get("power") or {}).get(metric)
    if not summary:
        return None
    power, pairs = summary["power"], summary["pairs"]
    head = f"minimum detectable difference in {metric} at {power:.0%} power ({_one_sided(summary)})"
    if not pairs:
        return f"{head}: none (no pairs)"
    where, value = _detectable(summary)
    text = f"{head}{where}: {value}"
    if summary.get("clusters") is not None and summary["clusters"] < pairs:
        text += f" ({summary['clusters']} clusters, design effect {summary['design_effect']:.2f})"
    if "effect" in summary:
        at = summary.get("power_at_effect")
        shown = "n/a (beyond the discordance)" if at is None else f"{at:.0%}"
        text += f"; the design's power for a difference of {summary['effect']:.3g}: {shown}"
    warning = cluster_warning(block, metric)
    return text if warning is None else f"{text}; {warning}"


FEW_CLUSTERS = 30
LARGEST_CLUSTER_SHARE = 0.1


def cluster_warning(block: Mapping[str, Any], metric: str = POWER_METRIC) -> str | None:
    """``few informative clusters: 4 of 12 hold a discordant pair (under 30); the largest holds
    20 of 40 pairs (over 10%)``: a clustered block's intervals rest on few independent units.
    Also when the pairs' size-weighted cluster size (``size_weighted_cluster``) reaches
    ``core.intervals.SIZE_WEIGHTED_CLUSTER_WARN``: there clustered margin gates were measured
    above their level (docs/statistics.md).
    It counts the clusters that hold a discordant pair of ``metric`` (its entry's
    ``informative_clusters``: a cluster where the arms agree on every pair carries no spread,
    and the interval's degrees of freedom never exceed these minus one), or every cluster for
    an entry written before 0.5 (``few clusters: 12``); None when the block is not clustered or
    has enough of them and none dominant."""
    selected = selected_block(block)
    if not selected.get("clustered"):
        return None
    clusters, pairs = selected.get("clusters") or 0, selected.get("pairs") or 0
    largest = selected.get("largest_cluster")
    entry = (selected.get("intervals") or {}).get(metric) or {}
    informative = entry.get("informative_clusters") if isinstance(entry, Mapping) else None
    parts, head = [], "few clusters: "
    if isinstance(informative, int) and not isinstance(informative, bool):
        if informative < FEW_CLUSTERS:
            head = "few informative clusters: "
            parts.append(f"{informative} of {clusters} hold a discordant pair (under "
                         f"{FEW_CLUSTERS})")  # fmt: skip
    elif clusters < FEW_CLUSTERS:
        parts.append(f"{clusters} (under {FEW_CLUSTERS})")
    if isinstance(largest, int) and pairs and largest > LARGEST_CLUSTER_SHARE * pairs:
        parts.append(f"the largest holds {largest} of {pairs} pairs (over 10%)")
    weighted = selected.get("size_weighted_cluster")
    if isinstance(weighted, int | float) and weighted >= SIZE_WEIGHTED_CLUSTER_WARN:
        parts.append(
            f"pairs per cluster, weighted by size, {weighted:.1f} (from "
            f"{SIZE_WEIGHTED_CLUSTER_WARN:g}, a margin gate may pass falsely above its level)"
        )
    if not parts:
        return None
    return head + "; ".join(parts) + ": the intervals rest on few independent units"


def power_cell(block: Mapping[str, Any], metric: str = POWER_METRIC) -> str:
    """The minimum detectable difference as a table cell: ``0.24 (80% power, one-sided 2.5%)``
    (``none ...`` with the reason; empty without a power summary)."""
    summary = (block.get("power") or {}).get(metric)
    if not summary:
        return ""
    level = f"({summary['power']:.0%} power, {_one_sided(summary)})"
    if not summary["pairs"]:
        return f"none (no pairs) {level}"
    return f"{_detectable(summary)[1]} {level}"


def discordant_text(entry: Mapping[str, Any] | None) -> str:
    """``12/3``: candidate-only / reference-only pairs of an interval entry (``n/a`` without)."""
    counts = (entry or {}).get("discordant")
    if not counts:
        return "n/a"
    return f"{counts['candidate_only']}/{counts['reference_only']}"


def cell(value: Any, limit: int) -> str:
    """A stored text as one table cell: characters that are not printable (control, line and
    paragraph separators) each shown as ``?``, cut to ``limit`` characters (ending ``...``);
    ``-`` for none. Escaping is the template's (autoescape), never this function's."""
    if value is None or value == "":
        return "-"
    text = "".join(c if c.isprintable() else "?" for c in str(value))
    return text if len(text) <= limit else text[: max(limit - 3, 1)] + "..."


def sample_text(resolved: Mapping[str, Any]) -> str | None:
    """What every view says of a sampled run (``data.split.sample``: the resolved suite's
    ``test_split.sample``), or None for a run of the whole split: one line, whatever a stored
    sample holds (each value a bounded printable :func:`cell`)."""
    sample = (resolved.get("test_split") or {}).get("sample")
    if not isinstance(sample, Mapping):
        return None
    return (
        f"sample: {cell(sample.get('roots'), 12)} of {cell(sample.get('of_roots'), 12)} roots "
        f"with their translations (seed {cell(sample.get('seed'), 24)}); the verdict is the "
        "sample's, and this run never compares as the full suite"
    )


def reasoning_rows(blocks: Mapping[str, Any]) -> list[list[str]]:
    """Per arm (``blocks``: arm -> its ``reasoning`` figures, ``core.reasoning``): outputs that
    reasoned, the median and 95th-percentile reasoning length in tokens, and how many hit
    ``max_new_tokens`` inside the reasoning (rows of a table with :data:`REASONING_HEADER`)."""
    rows = []
    for arm, block in blocks.items():
        if not isinstance(block, Mapping):
            continue
        rows.append(
            [
                arm,
                f"{block.get('reasoned', 0)} of {block.get('outputs', 0)}",
                fmt_tokens(block.get("median_tokens")),
                fmt_tokens(block.get("p95_tokens")),
                str(block.get("unterminated", 0)),
                str(block.get("truncated_in_reasoning", 0)),
            ]
        )
    return rows


REASONING_HEADER = [
    "arm", "reasoned", "median tokens", "p95 tokens", "never closed", "hit max_new_tokens",
]  # fmt: skip
REASONING_HINT = (
    "{count} output(s) hit max_new_tokens inside the reasoning and left no answer: raise "
    "[decoding] max_new_tokens (reasoning outputs are longer), or turn thinking off with "
    "[format] template_kwargs"
)


def reasoning_hint(blocks: Mapping[str, Any]) -> str | None:
    """The hint to raise ``max_new_tokens`` when some output hit it inside the reasoning."""
    count = sum(
        int(block.get("truncated_in_reasoning", 0))
        for block in blocks.values()
        if isinstance(block, Mapping)
    )
    return REASONING_HINT.format(count=count) if count else None


def fmt_tokens(value: Any) -> str:
    """A token count or median (one decimal when it is not whole), ``n/a`` for none."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "n/a"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
