"""Rendering reports as terminal lines (the session summary, ``sommelier rescore``/
``compare``). Pure: reports in, text out.

Invariant kept: every number shown is read from a report dict (nothing recomputed here), and
matched-pair language gaps are never shown in the same table as marginal full-slice gaps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

from pytest_sommelier.core.abstention import (
    EXPECT_ANY_CALL,
    EXPECT_CALL,
    EXPECT_NO_CALL,
    EXPECTS,
    expect_of,
)
from pytest_sommelier.core.gates import gate_text
from pytest_sommelier.core.metrics import (
    FULL_CALL_EXACT_MATCH,
    METRIC_NAMES,
    VALID_JSON_RATE,
    argument_diff_paths,
    canonical_json,
    record_hit,
)
from pytest_sommelier.core.misses import LANGUAGE_FLAG
from pytest_sommelier.core.parse import STATUS_OK
from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.report_comparison import adapter_had_no_effect
from pytest_sommelier.core.types import (
    Call,
    ComparisonReport,
    EvaluationReport,
    GateResult,
    GenerationRecord,
    NoiseFloor,
    Verdict,
)
from pytest_sommelier.view.text import (
    SHORT,
    discordant_text,
    extra_metrics,
    fmt,
    fmt_interval,
    methods_text,
    power_cell,
    power_text,
    reasoning_hint,
    reasoning_rows,
    selected_block,
    selected_interval,
    table,
)


def metrics_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """One row per arm and slice (and overall): the five metrics and the example count; with
    abstention examples (``core.abstention``) the count is of call examples, and two more
    columns say how many no-call and any-call examples the row holds (the five count the call
    examples only)."""
    counted = any(
        "expects" in block for report in arm_reports.values() for block in report["slices"].values()
    )
    tail = ["calls", "no_call", "any_call"] if counted else ["n"]
    header = ["arm", "slice", *[SHORT[m] for m in METRIC_NAMES], *tail]
    rows = []
    for arm, report in arm_reports.items():
        blocks = [(lang, block["metrics"]) for lang, block in report["slices"].items()]
        blocks.append(("overall", report["metrics"]))
        expects = [block.get("expects") or {} for block in report["slices"].values()]
        totals = {key: sum(e.get(key, 0) for e in expects) for key in EXPECTS}
        for index, (name, metrics) in enumerate(blocks):
            n = metrics[VALID_JSON_RATE]["denominator"]
            counts = expects[index] if index < len(expects) else totals
            cells = [str(n)]
            if counted:
                cells += [str(counts.get(EXPECT_NO_CALL, 0)), str(counts.get(EXPECT_ANY_CALL, 0))]
            rows.append([arm, name, *[fmt(metrics[m]["value"]) for m in METRIC_NAMES], *cells])
    return table(header, rows)


def acceptable_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """Each metric beyond the five (``acceptable_call_match``, then extension scorers; none
    when no arm reports one) per arm and slice, apart from the five: value and
    numerator/denominator."""
    names = {name for report in arm_reports.values() for name in report["metrics"]}
    lines: list[str] = []
    for metric_name, label in extra_metrics(names):
        rows = []
        for arm, report in arm_reports.items():
            if metric_name not in report["metrics"]:
                continue
            blocks = [(lang, block["metrics"]) for lang, block in report["slices"].items()]
            for name, metrics in [*blocks, ("overall", report["metrics"])]:
                metric = metrics[metric_name]
                count = f"{metric['numerator']}/{metric['denominator']}"
                rows.append([arm, name, fmt(metric["value"]), count])
        lines += [
            f"{label}:",
            *("  " + line for line in table(["arm", "slice", "value", "hits/n"], rows)),
        ]
    return lines


def noise_floor_line(block: NoiseFloor) -> str:
    """The terminal's line for a noise floor: ``noise floor: 0 of 32 base outputs differ when
    re-batched``; when some do, the full-call flips and the candidate's discordance beside."""
    text = (
        f"noise floor: {block['outputs_differ']} of {block['examples']} {block['arm']} outputs "
        "differ when re-batched"
    )
    if block["examples"] < block["requested"]:
        text += f" (of {block['requested']} sampled, {block['examples']} were run)"
    if block["outputs_differ"]:
        text += (
            f", {block['full_call_flips']} full-call outcome(s) flip; the candidate differs "
            f"from it on {block['candidate_outputs_differ']} outputs, "
            f"{block['candidate_discordant']} full-call outcomes"
        )
    return text


def truncation_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """How many outputs of each arm hit ``max_new_tokens`` (its report's ``finish_reasons``),
    and how many ended for a reason the generator did not say."""
    cells = []
    for arm, report in arm_reports.items():
        counts = report.get("finish_reasons")
        if not counts:
            continue
        total = sum(counts.values())
        cell = f"{arm} {counts.get('length', 0)} of {total}"
        if counts.get("unknown"):
            cell += f" ({counts['unknown']} finish reason unknown)"
        cells.append(cell)
    return [f"outputs that hit max_new_tokens: {', '.join(cells)}"] if cells else []


def reasoning_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[Line]:
    """The reasoning figures of each arm under a declared ``[parser] reasoning`` rule (none
    without one), with the hint to raise ``max_new_tokens`` (in yellow) where an output hit
    it inside the reasoning."""
    blocks = {arm: r["reasoning"] for arm, r in arm_reports.items() if r.get("reasoning")}
    if not blocks:
        return []
    rule = (next(iter(arm_reports.values())).get("parser") or {}).get("reasoning")
    shown = (
        f"{rule.get('start')}...{rule.get('end')}" if isinstance(rule, Mapping) else str(rule)
    )
    lines: list[Line] = [(f"reasoning ({shown}, separated before parser v1):", {})]
    cells = [
        f"{row[0]} {row[1]} reasoned, median {row[2]} / p95 {row[3]} tokens, {row[4]} never "
        f"closed ({row[5]} at max_new_tokens)"
        for row in reasoning_rows(blocks)
    ]
    lines += [("  " + cell, {}) for cell in cells]
    hint = reasoning_hint(blocks)
    if hint:
        lines.append(("  " + hint, {"yellow": True}))
    return lines


def preflight_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[Line]:
    """Each adapter arm's preflight (the counts its ``adapter_identity`` records) and, once
    each, its warnings (in yellow)."""
    lines: list[Line] = []
    for arm, report in arm_reports.items():
        record = (report.get("adapter_identity") or {}).get("preflight")
        if not isinstance(record, Mapping):
            continue
        lines.append(
            (
                f"preflight: {arm}: {record.get('lora_tensors')} LoRA tensors map onto "
                f"{record.get('mapped_modules')} modules of the base (rank {record.get('rank')})",
                {},
            )
        )
        for warning in dict.fromkeys(record.get("warnings") or []):
            lines.append((f"preflight: {arm}: warning: {warning}", {"yellow": True}))
    return lines


def miss_category_lines(arm_reports: Mapping[str, EvaluationReport]) -> list[str]:
    """The misses of each arm and slice by category (core.misses), nonzero categories only."""
    rows = []
    for arm, report in arm_reports.items():
        slices = [(lang, block.get("misses")) for lang, block in report["slices"].items()]
        for name, block in [*slices, ("overall", report.get("misses"))]:
            if not block:
                continue
            counts = [f"{k} {v}" for k, v in block["categories"].items() if v]
            if block.get(LANGUAGE_FLAG):
                counts.append(f"({LANGUAGE_FLAG} {block[LANGUAGE_FLAG]})")
            rows.append([arm, name, str(block["misses"]), ", ".join(counts) or "-"])
    if not rows:
        return []
    return [
        "misses by category:",
        *("  " + line for line in table(["arm", "slice", "misses", "categories"], rows)),
    ]


def comparison_lines(
    comparison_reports: Mapping[str, ComparisonReport], errors: Mapping[str, str]
) -> list[str]:
    """Deltas with the selected intervals, overall and per slice, for each comparison; then per
    block the method, the clusters and design effect, and what the pairs can detect."""
    lines: list[str] = []
    for name, report in comparison_reports.items():
        selected = selected_block(report)
        level = selected.get("confidence_level", 0.95)
        kind = selected.get("interval", "bootstrap")
        lines.append(f"{name} (candidate - reference, {level:.0%} intervals, interval = {kind})")
        header = ["slice", *[SHORT[m] for m in METRIC_NAMES]]
        rows = [["overall", *[_delta_cell(report, None, m) for m in METRIC_NAMES]]]
        for lang in report.get("slices", {}):
            rows.append([lang, *[_delta_cell(report, lang, m) for m in METRIC_NAMES]])
        lines.extend("  " + line for line in table(header, rows))
        for metric_name, label in extra_metrics(report["deltas"]):
            cells = [f"overall {_delta_cell(report, None, metric_name)}"]
            cells += [
                f"{lang} {_delta_cell(report, lang, metric_name)}" for lang in report["slices"]
            ]
            lines.append(f"  {label}: {'; '.join(cells)}")
        for lang, block in [("overall", report), *report.get("slices", {}).items()]:
            detail = power_text(block)
            lines.append(f"  {lang}: {methods_text(block)}" + (f"; {detail}" if detail else ""))
        mcnemar = report.get("mcnemar")
        if mcnemar:
            mid = mcnemar.get("mid_p_value")
            lines.append(
                f"  McNemar (full_call): candidate-only {mcnemar['candidate_only']}, "
                f"reference-only {mcnemar['reference_only']}, exact p = {mcnemar['p_value']:.4g}"
                + (f", mid-p = {mid:.4g}" if mid is not None else "")
            )
        if report.get("compared_examples"):
            lines.append(
                f"  identical outputs (byte for byte): {report['identical_outputs']} of "
                f"{report['compared_examples']}"
            )
        if "noise_floor" in report:
            lines.append(f"  {noise_floor_line(report['noise_floor'])}")
    for name, message in errors.items():
        lines.append(f"{name}: REFUSED: {message}")
    return lines


def no_effect_lines(
    comparison_reports: Mapping[str, ComparisonReport],
    arm_reports: Mapping[str, EvaluationReport],
) -> list[str]:
    """One prominent line per adapter-vs-base comparison whose outputs are (almost) all
    byte-identical to the base's (``report_comparison.adapter_had_no_effect``)."""
    lines = []
    for name, report in comparison_reports.items():
        sides = (arm_reports.get(report["candidate"]), arm_reports.get(report["reference"]))
        kinds = [arm["model_kind"] if arm else None for arm in sides]
        if adapter_had_no_effect(report, *kinds):
            lines.append(
                f"adapter had no effect on {report['identical_outputs']} of "
                f"{report['compared_examples']} outputs: was it loaded? ({name}: candidate "
                "outputs byte-identical to the reference's)"
            )
    return lines


def _delta_cell(report: ComparisonReport, lang: str | None, metric: str) -> str:
    """A delta with its interval, overall (``lang`` None) or in one slice."""
    block: Mapping[str, Any] = report if lang is None else report["slices"][lang]
    delta = block["deltas"].get(metric)
    interval = selected_interval(block, metric)
    degenerate = " degenerate" if interval and interval.get("degenerate") else ""
    return f"{fmt(delta, True)} {fmt_interval(interval)}{degenerate}"


def gap_lines(
    arm_reports: Mapping[str, EvaluationReport], metric: str = FULL_CALL_EXACT_MATCH
) -> list[str]:
    """Matched-pair language gaps (target - reference) with the selected intervals, one row per
    arm/slice: the discordant pairs (target-only/root-only), the method and what the pairs can
    detect."""
    rows = []
    for arm, report in arm_reports.items():
        for lang, block in (report.get("paired_slices") or {}).items():
            entry = selected_interval(block, metric)
            rows.append(
                [
                    arm,
                    f"{lang} - {block['reference_slice']}",
                    str(_counted_pairs(block, metric)),
                    f"{block['coverage']:.2f}",
                    fmt(block["gaps"].get(metric), True),
                    fmt_interval(entry),
                    discordant_text(entry),
                    str((entry or {}).get("method") or selected_block(block).get("method")),
                    power_cell(block, metric),
                ]
            )
    if not rows:
        return []
    header = ["arm", "gap", "pairs", "coverage", SHORT[metric], "interval", "discordant",
              "method", "minimum detectable"]  # fmt: skip
    return table(header, rows)


def _counted_pairs(block: Mapping[str, Any], metric: str) -> int:
    """The pairs ``metric``'s gap counts: its power summary's (a rate over call examples leaves
    out abstention pairs), else every pair of the cohort."""
    summary = (block.get("power") or {}).get(metric) or {}
    return int(summary.get("pairs", block["pairs"]))


def gate_lines(verdict: Verdict | None, not_run: Mapping[str, str] | None = None) -> list[str]:
    """Each gate with its observed value and threshold, then the verdict. A gate named in
    ``not_run`` (:func:`not_run_reasons`) reads ``NOT RUN`` with the reason, never PASS or
    FAIL: its subject was not fully run, so its line is no result."""
    if verdict is None:
        return ["gates: off (--sommelier-gates=off)"]
    family = familywise_lines(verdict)
    skipped = not_run or {}
    results = [
        f"NOT RUN {gate['name']}: {gate.get('subject', '')} {gate['metric']} [{gate['slice']}]: "
        f"{skipped[gate['name']]}"
        if gate["name"] in skipped
        else gate_result_lines([gate])[0]
        for gate in verdict["gates"]
    ]
    return [*results, *per_candidate_lines(verdict), *family, verdict_text(verdict)]


def per_candidate_lines(verdict: Verdict) -> list[str]:
    """One line per gate of a sweep with a ``[selection]`` whose per-checkpoint copies were
    reported (``per_candidate``, ``core.gates.selected_copies``): each checkpoint's PASS or
    FAIL at its own level; the selected checkpoint's copy is the gate's line above."""
    groups: dict[str, list[str]] = {}
    for gate in verdict.get("per_candidate") or []:
        name, _, step = gate["name"].rpartition("@")
        groups.setdefault(name, []).append(f"@{step} {'pass' if gate['passed'] else 'fail'}")
    return [
        f"per checkpoint, reported (the selected one's decides): {name}: {', '.join(steps)}"
        for name, steps in groups.items()
    ]


NO_GATES = "NO GATES"


def verdict_text(verdict: Verdict) -> str:
    """``verdict: PASS`` / ``FAIL`` / ``INCOMPLETE``, or ``verdict: NO GATES (...)`` for a
    passing verdict over no gate at all: nothing was judged, so it is never a bare PASS (the
    exit status stays 0, as for any verdict that is not a failure)."""
    if verdict["verdict"] == "pass" and not verdict["gates"]:
        return f"verdict: {NO_GATES} (nothing was gated: the suite has no [[gates]])"
    return f"verdict: {verdict['verdict'].upper()}"


REASON_LIMIT = 120
"""The most characters of a reason a one-line console summary (the training callback's line
per checkpoint) shows; the whole reason is in the run's files."""


def bounded_reason(reason: str, where: str | PathLike[str], limit: int = REASON_LIMIT) -> str:
    """``reason`` for a line that must stay short: its whitespace (newlines included) folded
    to single spaces, and when longer than ``limit`` cut there, ending ``... (whole reason:
    WHERE)``: the file that holds it (a refused stored gate's: the run's
    ``gate_verdict.json``)."""
    text = " ".join(str(reason).split())
    if len(text) <= limit:
        return text
    return f"{text[: max(limit - 3, 1)].rstrip()}... (whole reason: {where})"


def not_run_reasons(outcome: RunOutcome) -> dict[str, str]:
    """Gate name -> why the gate's subject was not fully run (an arm gate's or gap gate's arm,
    a comparison gate's two arms), for a run that is incomplete; empty for a complete run. A
    gap gate whose arm scored none of the reference slice (``-k he``) says that the gap needs
    its roots."""
    if outcome.complete or outcome.verdict is None:
        return {}
    reasons: dict[str, str] = {}
    for gate in outcome.verdict["gates"]:
        subject = gate.get("subject", "")
        if gate["kind"] == "comparison":
            report = outcome.comparison_reports.get(subject)
            if report is None:
                error = outcome.comparison_errors.get(subject, "was not built")
                reasons[gate["name"]] = f"comparison {subject!r}: {error}"
                continue
            arms = [report["candidate"], report["reference"]]
        elif gate["kind"] == "selection":  # the selected candidate (and this run's reference)
            chosen: Mapping[str, Any] = gate.get("selection") or {}
            reference = None if chosen.get("stored") else chosen.get("reference")
            named = [chosen.get("selected"), reference]
            arms = [arm for arm in named if arm]
            if not arms:
                reasons[gate["name"]] = "no candidate of [selection] was run in this selection"
                continue
        else:
            arms = [subject]
        for arm in arms:
            arm_report = outcome.arm_reports.get(arm)
            if arm_report is None:
                reasons[gate["name"]] = f"arm {arm!r} was not run in this selection"
                break
            if arm_report.get("complete"):
                continue
            order = arm_report.get("slice_order") or []
            root = order[0] if order else ""
            root_block = arm_report["slices"].get(root) if "slices" in arm_report else None
            roots = root_block["examples"] if root_block else None
            if gate["kind"] == "gap" and roots == 0:
                reasons[gate["name"]] = (
                    f"the gap {gate['slice']} - {root} needs its {root} roots, which this "
                    "selection left out"
                )
            else:
                missing = outcome.missing.get(arm, 0)
                reasons[gate["name"]] = (
                    f"arm {arm!r} was not fully run ({missing} example(s) not scored in this "
                    "selection)"
                )
            break
    return reasons


def familywise_lines(verdict: Verdict) -> list[str]:
    """The family of interval gates when it has more than one member: its size and how (or
    that nothing) adjusts for it."""
    family = verdict.get("familywise")
    if not family or family["size"] <= 1:
        return []
    size, method, level = family["size"], family["method"], family["confidence_level"]
    if method == "bonferroni":
        adjusted = next(iter(family["adjusted_confidence_level"].values()), level)
        return [f"familywise: bonferroni over {size} interval gates: each interval at "
                f"{adjusted * 100:.3g}%"]  # fmt: skip
    if method == "holm":
        return [f"familywise: holm over {size} interval gates: p-values stepped down at "
                f"{1 - level:.3g}"]  # fmt: skip
    return [f"familywise: none: {size} interval gates, each at {level:.0%} with no adjustment "
            "(set [statistics] familywise to bonferroni or holm)"]  # fmt: skip


def gate_result_lines(gates: Iterable[GateResult]) -> list[str]:
    """One line per gate: PASS/FAIL, then what it compared (``core.gates.gate_text``: the
    estimate, the interval, the bound tested, rounded as displayed); a failed compare-fail gate
    also its ``evidence`` (the paired interval and the flips against the stored run)."""
    return [f"{'PASS' if gate['passed'] else 'FAIL'} {gate['name']}: {gate_text(gate)}"
            + (f"; {gate['evidence']}" if not gate["passed"] and gate.get("evidence") else "")
            for gate in gates]  # fmt: skip


EXPECTED_TEXT = {
    EXPECT_NO_CALL: "no call (an abstention example: no offered tool fits)",
    EXPECT_ANY_CALL: "any valid call of an offered tool",
}
"""What a miss's ``gold:`` line says for an example without a single gold call."""


def describe_miss(
    record: GenerationRecord, gold_call: Call | None, expect: str = EXPECT_CALL
) -> str:
    """A few lines explaining a miss: the gold call (or what an abstention example expects),
    the parsed call (or the raw text when it did not parse), the argument paths that differ,
    and (with extension scorers) each scorer's numerator/denominator of the example."""
    lines = [f"{record['arm']}::{record['language']}::{record['example_id']}"]
    if record.get("miss_category"):
        flag = " (value_language_mismatch)" if record.get(LANGUAGE_FLAG) else ""
        lines.append(f"  category: {record['miss_category']}{flag}")
    parsed = record["parsed_call"]
    if gold_call is None or expect != EXPECT_CALL:
        lines.append(f"  gold:   {EXPECTED_TEXT.get(expect, expect)}")
        raw = record["raw_text"]
        shown = raw if len(raw) <= 240 else raw[:240] + f"... ({len(raw)} chars)"
        lines.append(f"  {record['parse_status']}: {shown!r}")
        return "\n".join(lines)
    lines.append(f"  gold:   {canonical_json(gold_call)}")
    if record["parse_status"] == STATUS_OK and parsed is not None:
        lines.append(f"  parsed: {canonical_json(parsed)}")
        if parsed["name"] != gold_call["name"]:
            lines.append(f"  name differs: {parsed['name']!r} != {gold_call['name']!r}")
        paths = argument_diff_paths(gold_call["arguments"], parsed["arguments"])
        if paths:
            lines.append(f"  argument paths that differ: {', '.join(paths)}")
    else:
        raw = record["raw_text"]
        shown = raw if len(raw) <= 240 else raw[:240] + f"... ({len(raw)} chars)"
        lines.append(f"  {record['parse_status']}: {shown!r}")
    scores = record.get("scores") or {}
    if scores:  # extension scorers (core.scorers): numerator/denominator of this example
        lines.append(
            "  scorers: " + ", ".join(f"{name} {n}/{d}" for name, (n, d) in sorted(scores.items()))
        )
    return "\n".join(lines)


Line = tuple[str, dict[str, bool]]
"""A terminal line and its markup (``{"red": True}``, ``{"bold": True, "green": True}``...)."""


def left_out_line(left_out: Mapping[str, int], slices: Iterable[str]) -> str | None:
    """The notice for split rows that were not evaluated because their language is not a
    configured slice (a ``fr`` row, a ``He`` typo), or None when every row was a slice's."""
    if not left_out:
        return None
    counts = ", ".join(f"{language!r} {n}" for language, n in sorted(left_out.items()))
    rows = sum(left_out.values())
    return (
        f"split: {rows} row(s) not evaluated, their language is not in suite.slices "
        f"({', '.join(slices)}): {counts}"
    )


def selection_lines(block: Mapping[str, Any]) -> list[str]:
    """The ``[selection]`` block as text: the selected candidate, its familywise comparison
    with the reference, and the winner's curse."""
    interval = block.get("interval") or {}
    family = block.get("familywise") or {}
    return [
        f"selection by {block.get('metric')}"
        + ("" if block.get("slice", "overall") == "overall" else f" [{block.get('slice')}]")
        + f" among {block.get('among')} "
        f"({family.get('candidates')} candidates): {block.get('selected')} "
        f"{fmt(block.get('selected_value'))} vs {block.get('reference')} "
        f"{fmt(block.get('reference_value'))}: delta {fmt(interval.get('estimate'), True)} "
        f"{fmt_interval(interval)} at {family.get('confidence_level', 0):.4f} "
        f"({family.get('method')} over all candidates)",
        f"  {block.get('winners_curse')}",
    ]


def run_summary_lines(
    outcome: RunOutcome,
    run_dir: str | PathLike[str] | None,
    errored_items: int,
    misses_wanted: int,
    *,
    origins: Sequence[str] = (),
    stored: Sequence[str] = (),
    no_verdict: str | None = None,
) -> list[Line]:
    """Every line of one suite's terminal summary after its run was evaluated (a
    ``pipeline.RunOutcome``): run folder, where each arm came from (``origins``),
    completeness, metrics, comparisons, language gaps, the comparison with stored runs
    (``stored``, already rendered), gates and verdict (coloured), and the first
    ``misses_wanted`` misses. With ``no_verdict`` (why the finish wrote no
    ``gate_verdict.json``) the verdict line is that one line instead."""
    lines: list[Line] = [(f"run directory: {run_dir}", {})]
    lines += [(line, {}) for line in origins]
    if not outcome.complete:
        missing = ", ".join(f"{a}: {n}" for a, n in outcome.missing.items() if n)
        detail = f"not scored: {missing}; " if missing else ""
        lines.append(
            (
                f"INCOMPLETE: {detail}{errored_items} item(s) errored; "
                "no passing verdict can be written",
                {"yellow": True},
            )
        )
    lines += preflight_lines(outcome.arm_reports)
    lines.append(("", {}))
    lines += [(line, {}) for line in metrics_lines(outcome.arm_reports)]
    lines += [(line, {}) for line in acceptable_lines(outcome.arm_reports)]
    lines += [(line, {}) for line in truncation_lines(outcome.arm_reports)]
    lines += reasoning_lines(outcome.arm_reports)
    comparisons = comparison_lines(outcome.comparison_reports, outcome.comparison_errors)
    if comparisons:
        lines.append(("", {}))
        lines += [(line, {}) for line in comparisons]
    if outcome.selection is not None:
        lines.append(("", {}))
        lines += [(line, {}) for line in selection_lines(outcome.selection)]
    no_effect = no_effect_lines(outcome.comparison_reports, outcome.arm_reports)
    lines += [(line, {"yellow": True, "bold": True}) for line in no_effect]
    gaps = gap_lines(outcome.arm_reports)
    if gaps:
        lines.append(("", {}))
        lines.append(("language gaps, matched pairs (full_call_exact_match):", {}))
        lines += [("  " + line, {}) for line in gaps]
    categories = miss_category_lines(outcome.arm_reports)
    if categories:
        lines.append(("", {}))
        lines += [(line, {}) for line in categories]
    if stored:
        lines.append(("", {}))
        lines += [(line, {}) for line in stored]
    lines.append(("", {}))
    for line in gate_lines(outcome.verdict, not_run_reasons(outcome)):
        colour = {"PASS": "green", "FAIL": "red", "NOT": "yellow"}.get(line.split(" ", 1)[0])
        verdict_line = line.startswith("verdict:")
        passed = verdict_line and line.endswith("PASS")
        markup = {"green": True} if (colour == "green" or passed) else {}
        if colour == "yellow":
            markup = {"yellow": True}
        if colour == "red" or (verdict_line and not passed):
            markup = {"red": True}
        if verdict_line:
            markup = {**markup, "bold": True}
            if no_verdict is not None:
                line, markup = NO_VERDICT.format(why=no_verdict), {"red": True, "bold": True}
        lines.append((line, markup))
    lines += [(line, {}) for line in miss_lines(outcome, misses_wanted)]
    return lines


NO_VERDICT = "no verdict was written for this suite: {why}"
"""The one line that says a finish wrote no ``gate_verdict.json``, and why."""


def miss_lines(outcome: RunOutcome, wanted: int) -> list[str]:
    """The miss drilldown: adapter arms first (a drilldown is usually about what the candidate
    got wrong), then the first ``wanted`` non-exact records, each with gold, parse and paths."""
    arms = sorted(
        outcome.records,
        key=lambda arm: outcome.arm_reports[arm].get("model_kind") != "adapter",
    )
    misses = [
        record
        for arm in arms
        for records in outcome.records[arm].values()
        for record in records
        if not record_hit(record)
    ]
    if not misses or wanted <= 0:
        return []
    lines = [
        "",
        f"misses (showing {min(wanted, len(misses))} of {len(misses)}; --sommelier-misses=N):",
    ]
    for record in misses[:wanted]:
        text = describe_miss(record, record["gold_call"], expect_of(record))
        lines += ["  " + line for line in text.splitlines()]
    return lines
