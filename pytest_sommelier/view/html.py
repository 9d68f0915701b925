"""The HTML report of a stored run: one self-contained page (``<run>/report.html``).

``render_page(files, run_name)`` renders a run's values (``data.store.runread.RunFiles``: the
resolved suite, the split's rows, each arm's evaluation report, telemetry and generation
records, the comparison reports and the verdict) and returns the page. The session finish
builds those values from memory (``runread.run_files_of``); ``render_report(run_dir)`` and
``write_report`` have the store read them from the run's own files (``runread.read_run``) for
``sommelier rescore`` and ``sommelier report``. Both give the same values, so a page looks the
same whoever wrote it. User documentation: ``docs/report.md``.

Invariants kept:

- Every number shown is read from a stored report; per-example outcomes apply the
  ``full_call_exact_match`` rule to the stored parsed call and the split's gold call (checked
  against ``metrics.example_components`` by the tests). Nothing is re-parsed.
- The split copy is used only when its bytes still have the digest the run recorded (those are
  the bytes that were validated when the run was made; ``data.store.runread`` checks it); otherwise
  the page says why the examples are not shown.
- Stored text (model output, prompts, identities) is untrusted: the template autoescapes every
  value, per-example data travels as one JSON blob whose ``<``, ``>`` and ``&`` are escaped
  (so it cannot close its ``<script type="application/json">`` element), the page's script
  only ever sets ``textContent``, and a Content-Security-Policy with the hashes of the page's
  own script and style blocks forbids any other script and every network fetch.
- A missing optional artifact (no verdict, no telemetry, a refused comparison, a run of an
  earlier version) leaves its section out with a sentence saying why; it never stops the page.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.abstention import EXPECT_CALL, expect_of
from pytest_sommelier.core.acceptable import METRIC_LABEL as ACCEPTABLE_LABEL
from pytest_sommelier.core.acceptable import METRIC_NAME as ACCEPTABLE_NAME
from pytest_sommelier.core.gates import gate_text, threshold_text
from pytest_sommelier.core.metrics import (
    call_match,
    flatten_arguments,
    metric_order,
    pair_differences,
)
from pytest_sommelier.core.parse import (
    DEFAULT_ARGUMENTS_KEY,
    STATUS_OK,
    STATUSES,
    call_shape_error,
    recorded_arguments_key,
)
from pytest_sommelier.core.types import Call, ComparisonReport, GenerationRecord, Verdict
from pytest_sommelier.data.split.load import row_gold_call, row_gold_calls
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.data.store.artifacts import StoredArm
from pytest_sommelier.data.store.runread import RunFiles, read_run
from pytest_sommelier.errors import InputError
from pytest_sommelier.view.terminal import (
    familywise_lines,
    no_effect_lines,
    noise_floor_line,
    truncation_lines,
)
from pytest_sommelier.view.text import (
    REASONING_HEADER,
    discordant_text,
    fmt,
    fmt_interval,
    methods_text,
    power_text,
    reasoning_hint,
    reasoning_rows,
    sample_text,
    selected_block,
    selected_interval,
)

REPORT_FILE = runlayout.PAGE
TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "templates"
RAW_LIMIT = 4000
"""Raw outputs longer than this many characters are cut in the page (the stored file keeps
them whole); the cut is said on the page."""

_HEX = re.compile(r"^(sha256:)?[0-9a-f]{16,}\Z")
_RUN_STAMP = re.compile(r"^(\d{8}T\d{6}Z)")


# --- small formatting helpers ------------------------------------------------------------


#: how the page titles a metric that is not one of the five (the terminal and Markdown use the
#: same label, from core.acceptable)
METRIC_LABELS = {ACCEPTABLE_NAME: ACCEPTABLE_LABEL}


def metric_label(name: str) -> str:
    """The column title of a metric: its name, or the label it is reported under."""
    return METRIC_LABELS.get(name, name)


def short(value: Any) -> str:
    """A digest or commit cut to 12 characters (other values as they are)."""
    text = str(value)
    if _HEX.match(text):
        return text.split(":", 1)[-1][:12]
    return text


def identity_items(identity: Any) -> list[tuple[str, str, str]]:
    """``(key, shown, full)`` for each leaf of an identity dict (nested keys dotted)."""
    if identity is None:
        return []
    if not isinstance(identity, Mapping):
        return [("", short(identity), str(identity))]
    items: list[tuple[str, str, str]] = []
    for key, value in sorted(identity.items()):
        if isinstance(value, Mapping):
            items += [(f"{key}.{k}", s, f) for k, s, f in identity_items(value)]
        else:
            full = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            items.append((str(key), short(full), full))
    return items


def seconds(value: float | None) -> str:
    """A duration with three significant digits (``n/a`` for null)."""
    return "n/a" if value is None else f"{value:.3g}"


def run_date(run_id: str | None) -> str | None:
    """The UTC time encoded in a run id (``YYYYmmddTHHMMSSZ-xxxxxx``), or None."""
    match = _RUN_STAMP.match(run_id or "")
    if not match:
        return None
    stamp = datetime.strptime(match.group(1), "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC")


# --- the forest plot ---------------------------------------------------------------------


def _nice_domain(values: Sequence[float]) -> tuple[float, float, float]:
    """``(low, high, tick step)``: covers every value and 0, rounded out to a step that gives
    at most six intervals between ticks."""
    low, high = min([0.0, *values]), max([0.0, *values])
    span = max(high - low, 0.1)
    step = next(s for s in (0.02, 0.05, 0.1, 0.2, 0.25, 0.5) if span / s <= 6)
    low = step * math.floor(low / step + 1e-9)
    high = step * math.ceil(high / step - 1e-9)
    if high - low < step:
        high = low + step
    return low, high, step


def _tick_label(value: float) -> str:
    return "0" if abs(value) < 1e-9 else f"{value:+.2f}"


def forest_plot(report: ComparisonReport) -> dict[str, Any]:
    """Geometry of one comparison's forest plot: one row per (slice, metric), the delta with
    its selected interval (``intervals``; the ``ci95`` bootstrap for a metric or a report
    without one); ``excludes_zero`` marks intervals that do not contain 0."""
    blocks: list[tuple[str, Mapping[str, Any]]] = [
        ("overall", report),
        *(report.get("slices") or {}).items(),
    ]
    rows: list[dict[str, Any]] = []
    for label, block in blocks:
        intervals = ((block.get("ci95") or {}).get("intervals")) or {}
        for metric in metric_order(block.get("deltas") or {}):
            delta = (block.get("deltas") or {}).get(metric)
            interval = selected_interval(block, metric) or intervals.get(metric) or {}
            lower, upper = interval.get("lower"), interval.get("upper")
            rows.append(
                {
                    "slice": label,
                    "metric": metric,
                    "delta": delta,
                    "lower": lower,
                    "upper": upper,
                    "excludes_zero": lower is not None
                    and upper is not None
                    and (lower > 0 or upper < 0),
                    "text": f"{fmt(delta, True)} {fmt_interval(interval or None)}",
                }
            )
    values = [v for r in rows for v in (r["delta"], r["lower"], r["upper"]) if v is not None]
    low, high, step = _nice_domain(values)
    left, width, row_height, top = 250.0, 360.0, 20.0, 28.0

    def x(value: float) -> float:
        return round(left + (value - low) / (high - low) * width, 2)

    previous = None
    for i, row in enumerate(rows):
        row["y"] = top + i * row_height + row_height / 2
        row["group_start"] = row["slice"] != previous
        previous = row["slice"]
        if row["delta"] is not None:
            row["cx"] = x(row["delta"])
        if row["lower"] is not None and row["upper"] is not None:
            row["x1"], row["x2"] = x(row["lower"]), x(row["upper"])
    count = round((high - low) / step)
    ticks = [
        {"x": x(low + k * step), "label": _tick_label(low + k * step)} for k in range(count + 1)
    ]
    height = top + len(rows) * row_height + 10
    return {
        "rows": rows,
        "ticks": ticks,
        "zero": x(0.0),
        "left": left,
        "right": left + width,
        "top": top - 6,
        "bottom": height - 6,
        "width": left + width + 200,
        "height": height,
        "row_height": row_height,
    }


# --- per-example data --------------------------------------------------------------------


def _user_and_system(row: Mapping[str, Any]) -> tuple[str, str | None]:
    """The last user message of a formatted row and its system message(s), as text."""
    messages = row.get("messages") or []

    def text(content: Any) -> str:
        return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)

    user = [text(m.get("content")) for m in messages if m.get("role") == "user"]
    system = [text(m.get("content")) for m in messages if m.get("role") == "system"]
    return (user[-1] if user else row.get("prompt_text", "")), ("\n\n".join(system) or None)


def _diff(gold_pairs: Mapping[str, str], parsed: Call) -> list[list[Any]]:
    """``[path, gold value or None, output value or None]`` for each differing path
    (``metrics.pair_differences``); ``gold_pairs`` is ``dict(flatten_arguments(gold
    arguments))``."""
    predicted = dict(flatten_arguments(parsed["arguments"]))
    return [list(row) for row in pair_differences(gold_pairs, predicted)]


class _Gold:
    """One example's gold call, and its flattened pairs computed once, when the first arm's
    miss needs them."""

    def __init__(self, call: Call) -> None:
        self.call = call
        self._pairs: dict[str, str] | None = None

    @property
    def pairs(self) -> dict[str, str]:
        if self._pairs is None:
            self._pairs = dict(flatten_arguments(self.call["arguments"]))
        return self._pairs


def _decision_outcome(record: GenerationRecord, arm: str) -> list[Any]:
    """:func:`_outcome` of an example without a single gold call (``core.abstention``): a hit
    is a record the run scored without a miss category (the decision rule, applied when the
    run was scored), and the parsed call is shown whenever there is one."""
    _checked_parse(record, arm)
    raw, reasoning = _shown_text(record)
    return [
        int(record.get("miss_category") is None),
        STATUSES.index(str(record.get("parse_status"))),
        raw if len(raw) <= RAW_LIMIT else raw[:RAW_LIMIT],
        record.get("parsed_call"),
        [],
        True,
        record.get("miss_category"),
        bool(record.get("cached")),
        len(raw),
        *_reasoning_slots(record, reasoning),
    ]


def _checked_parse(record: GenerationRecord, arm: str) -> None:
    """Refuse a stored record whose parse status does not fit its parsed call."""
    status, parsed = record.get("parse_status"), record.get("parsed_call")
    if (
        status not in STATUSES
        or (parsed is not None) != (status == STATUS_OK)
        or (parsed is not None and call_shape_error(parsed) is not None)
    ):
        raise InputError(
            "SOM-STORED-FIELD",
            f"{runlayout.generations_artifact(arm, str(record.get('language')))}: example "
            f"{record.get('example_id')!r}: parse_status {status!r} does not fit its parsed_call",
            "the generations file was edited; run sommelier rescore to re-derive it",
        )


def _outcome(record: GenerationRecord, gold: _Gold, arm: str) -> list[Any]:
    """One arm's outcome on one example (the positional list of :func:`examples_blob`).

    A hit is ``full_call_exact_match``'s rule (``metrics.call_match``) applied to the stored
    parse and the split's gold call. Argument paths are flattened only for misses, which
    keeps a 30,000-record page well under a second.
    """
    _checked_parse(record, arm)
    status, parsed = record.get("parse_status"), record.get("parsed_call")
    match = call_match(parsed, gold.call)
    hit = int(match.full_call)
    raw, reasoning = _shown_text(record)
    return [
        hit,
        STATUSES.index(status),
        raw if len(raw) <= RAW_LIMIT else raw[:RAW_LIMIT],
        None if hit or parsed is None else parsed,
        [] if match.arguments or parsed is None else _diff(gold.pairs, parsed),
        match.name,
        record.get("miss_category"),
        bool(record.get("cached")),
        len(raw),
        *_reasoning_slots(record, reasoning),
    ]


def _shown_text(record: GenerationRecord) -> tuple[str, str | None]:
    """The text the drill-down shows as the output and the reasoning folded above it: where a
    reasoning span was separated (``core.reasoning``), the content after it (empty when the span
    never closed) and the span; else the raw text and None."""
    raw = record["raw_text"]
    reasoning = record.get("reasoning_text")
    if not isinstance(reasoning, str):
        return raw, None
    content = record.get("content_text")
    return (content if isinstance(content, str) else ""), reasoning


def _reasoning_slots(record: GenerationRecord, reasoning: str | None) -> list[Any]:
    """The outcome's last two slots: the reasoning text (cut at RAW_LIMIT) or null, and whether
    the span never closed."""
    return [
        None if reasoning is None else reasoning[:RAW_LIMIT],
        reasoning is not None and record.get("content_text", "") is None,
    ]


class _Index:
    """Strings stored once in the blob and referred to by position."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._at: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        if value is None:
            return -1
        if value not in self._at:
            self._at[value] = len(self.items)
            self.items.append(value)
        return self._at[value]


def examples_blob(
    rows: list[dict[str, Any]],
    slices: Sequence[str],
    arms: Mapping[str, StoredArm],
    comparisons: Mapping[str, ComparisonReport],
    arguments_key: str = DEFAULT_ARGUMENTS_KEY,
    *,
    several: bool = False,
) -> dict[str, Any]:
    """The compact per-example data the page's script renders (positional arrays); gold calls
    are read with the run's ``arguments_key`` (``split.row_gold_call``; under parser v2,
    ``several``, ``split.row_gold_calls``, whose first call the page shows as the gold call).

    ``ex[i] = [id, slice, tool, root index or -1, system index or -1, user text, gold call,
    outcomes]``, ``outcomes[a] = [hit (1, 0, or -1: not scored), status index, raw text,
    parsed call (null when it equals the gold call or did not parse), diff rows, name ok,
    miss_category or null, cached, raw length, reasoning text or null, reasoning never
    closed]`` in ``arms`` order; where a reasoning span was separated (``core.reasoning``) the
    raw-text slot holds the content after it (empty when the span never closed).
    """
    arm_names = list(arms)
    by_arm = {
        arm: {r["example_id"]: r for records in data[2].values() for r in records}
        for arm, data in arms.items()
    }
    kept = [row for row in rows if row.get("language") in slices]
    position = {row["example_id"]: i for i, row in enumerate(kept)}
    tools, systems = _Index(), _Index()
    examples = []
    slice_index = {lang: i for i, lang in enumerate(slices)}
    for row in kept:
        expect = expect_of(row)
        gold = (
            _Gold(
                row_gold_calls(row, arguments_key=arguments_key)[0]
                if several
                else row_gold_call(row, arguments_key=arguments_key)
            )
            if expect == EXPECT_CALL
            else None
        )
        user, system = _user_and_system(row)
        outcomes = []
        for arm in arm_names:
            record = by_arm[arm].get(row["example_id"])
            if record is None:
                outcomes.append([-1, -1, "", None, [], False, None, False, 0, None, False])
            elif gold is None:
                outcomes.append(_decision_outcome(record, arm))
            else:
                outcomes.append(_outcome(record, gold, arm))
        source = row.get("source_example_id")
        examples.append(
            [
                row["example_id"],
                slice_index[row["language"]],
                tools(gold.call["name"] if gold is not None else f"({expect})"),
                position.get(source, -1) if source is not None else -1,
                systems(system),
                user,
                gold.call if gold is not None else None,
                outcomes,
            ]
        )
    pairs = [
        [arm_names.index(r["candidate"]), arm_names.index(r["reference"]), name]
        for name, r in comparisons.items()
        if r.get("candidate") in arms and r.get("reference") in arms
    ]
    return {
        "arms": arm_names,
        "slices": list(slices),
        "statuses": list(STATUSES),
        "tools": tools.items,
        "systems": systems.items,
        "pairs": pairs,
        "raw_limit": RAW_LIMIT,
        "ex": examples,
    }


def blob_json(value: Any) -> str:
    """Compact JSON safe to place inside ``<script type="application/json">``: ``<``, ``>``
    and ``&`` are written as ``\\u`` escapes, so no stored text can end the element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return text


# --- the page ----------------------------------------------------------------------------


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


@functools.cache
def _environment() -> jinja2.Environment:
    """The page's Jinja environment, one per process: its compiled templates are kept (a
    template file changed on disk is compiled again, Jinja's ``auto_reload``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.ChainableUndefined,  # a field an older or partial run lacks shows empty
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["signed"] = lambda v: fmt(v, True)
    env.filters["interval"] = lambda v: fmt_interval(v or None)
    env.filters["short"] = short
    env.filters["secs"] = seconds
    # a field a run lacks (every item of an arm errored: no report to read it from) shows empty,
    # as ChainableUndefined shows it elsewhere, never a TypeError at the session finish
    env.filters["j"] = lambda v: (
        "" if isinstance(v, jinja2.Undefined)
        else v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    )  # fmt: skip
    env.filters["threshold"] = threshold_text
    env.filters["metric_label"] = metric_label
    env.filters["gate_text"] = gate_text
    env.filters["discordant"] = discordant_text
    env.globals.update(
        identity_items=identity_items, metric_order=metric_order, methods_text=methods_text,
        power_text=power_text, selected_block=selected_block, selected_interval=selected_interval,
        familywise_lines=familywise_lines,
    )  # fmt: skip
    return env


def _banners(
    verdict: Verdict | None,
    arms: Mapping[str, StoredArm],
    split_counts: Mapping[str, int] | None,
    comparisons: Mapping[str, ComparisonReport],
) -> list[dict[str, str]]:
    """The banners at the top: incomplete, subset, cached, an adapter with no effect, not
    cross-comparable."""
    banners = []
    incomplete = [arm for arm, data in arms.items() if not data[0].get("complete", False)]
    if (verdict is not None and verdict.get("verdict") == "incomplete") or incomplete:
        who = f" (arms: {', '.join(incomplete)})" if incomplete else ""
        banners.append(
            {
                "kind": "incomplete",
                "text": f"Incomplete run{who}: not every example of every slice was scored, "
                "so no passing verdict can be written and the figures describe only what was "
                "scored.",
            }
        )
    if split_counts is not None:
        parts = []
        for arm, (report, _, _) in arms.items():
            for lang, block in (report.get("slices") or {}).items():
                total = split_counts.get(lang, 0)
                if block.get("examples", 0) < total:
                    parts.append(f"{arm}/{lang}: {block.get('examples', 0)} of {total}")
        if parts:
            banners.append(
                {"kind": "subset", "text": "Subset: scored " + "; ".join(parts) + " examples."}
            )
    cached = {
        arm: (telemetry.get("cached_examples") if telemetry else None) or 0
        for arm, (_, telemetry, _) in arms.items()
    }
    if any(cached.values()):
        parts = [f"{arm}: {n}" for arm, n in cached.items() if n]
        banners.append(
            {
                "kind": "cached",
                "text": "Cached: some outputs came from the generation cache and were not timed "
                f"({', '.join(parts)}).",
            }
        )
    reports = {arm: data[0] for arm, data in arms.items()}
    for line in no_effect_lines(comparisons, reports):
        banners.append({"kind": "noeffect", "text": line[0].upper() + line[1:] + "."})
    for line in truncation_lines(reports):
        banners.append({"kind": "finish", "text": line[0].upper() + line[1:] + "."})
    for name, comparison in comparisons.items():
        if "noise_floor" in comparison:
            line = noise_floor_line(comparison["noise_floor"])
            banners.append({"kind": "noise", "text": f"{name}: {line}."})
    for name, comparison in comparisons.items():
        efficiency = comparison.get("efficiency")
        if efficiency and not efficiency.get("cross_comparable"):
            banners.append(
                {
                    "kind": "timing",
                    "text": f"{name}: timings are not cross-comparable: "
                    f"{efficiency.get('reason', '')}.",
                }
            )
    return banners


def _telemetry_rows(
    arms: Mapping[str, StoredArm], comparisons: Mapping[str, ComparisonReport]
) -> list[dict[str, Any]]:
    """Per arm: its telemetry and the efficiency figures a comparison report recorded."""
    rows = []
    for arm, (_, telemetry, _) in arms.items():
        per_success = None
        for report in comparisons.values():
            block = (report.get("efficiency") or {}).get(arm)
            if block and block.get("device_seconds_per_success") is not None:
                per_success = block["device_seconds_per_success"]
                break
        rows.append({"arm": arm, "telemetry": telemetry, "per_success": per_success})
    return rows


def miss_table(arms: Mapping[str, StoredArm]) -> dict[str, Any] | None:
    """Misses by category per arm and slice (``misses`` blocks of newer reports), or None."""
    rows: list[dict[str, Any]] = []
    for arm, (report, _, _) in arms.items():
        blocks: list[tuple[str, object]] = [
            (lang, b.get("misses")) for lang, b in (report.get("slices") or {}).items()
        ]
        blocks.append(("overall", report.get("misses")))
        for lang, block in blocks:
            if isinstance(block, Mapping) and isinstance(block.get("categories"), Mapping):
                rows.append({"arm": arm, "slice": lang, **block})
    if not rows:
        return None
    columns = sorted({name for row in rows for name in row["categories"]})
    extra = sorted({k for row in rows for k in row} - {"arm", "slice", "categories", "misses"})
    return {"rows": rows, "columns": columns, "extra": extra}


def reasoning_table(arms: Mapping[str, StoredArm]) -> dict[str, Any] | None:
    """Each arm's reasoning figures (reports under a declared ``[parser] reasoning``), or None."""
    blocks = {arm: data[0].get("reasoning") for arm, data in arms.items()}
    blocks = {arm: block for arm, block in blocks.items() if isinstance(block, Mapping)}
    if not blocks:
        return None
    return {
        "header": REASONING_HEADER,
        "rows": reasoning_rows(blocks),
        "hint": reasoning_hint(blocks),
    }


def build_context(run_dir: Path) -> dict[str, Any]:
    """Everything the template shows of the stored run in ``run_dir`` (read by
    ``data.store.runread.read_run``; see the module docstring)."""
    return page_context(read_run(Path(run_dir)), Path(run_dir).name)


def page_context(files: RunFiles, run_name: str) -> dict[str, Any]:
    """Everything the template shows, from a run's values (``RunFiles``, read from disk or
    built from memory by ``runread.run_files_of``); ``run_name`` is the run folder's name."""
    resolved, verdict, arms = files.resolved, files.verdict, files.arms
    comparisons, rows, split_notes = files.comparisons, files.rows, files.split_notes
    sampled = sample_text(resolved)
    notes = [*([sampled] if sampled else []), *files.notes, *split_notes]
    slices = list(resolved.get("slices") or [])
    split_counts = None
    blob = None
    if rows is not None:
        split_counts = {lang: sum(r.get("language") == lang for r in rows) for lang in slices}
        key = recorded_arguments_key(resolved) or DEFAULT_ARGUMENTS_KEY
        several = (resolved.get("parser") or {}).get("version") == "v2"
        blob = examples_blob(rows, slices, arms, comparisons, key, several=several)
    first: Mapping[str, Any] = next(iter(arms.values()), (None, None, None))[0] or {}
    metric_names = metric_order(
        name for data in arms.values() for name in (data[0].get("metrics") or {})
    )
    return {
        "run_name": run_name,
        "resolved": resolved,
        "suite": resolved.get("name", run_name),
        "run_id": resolved.get("run_id") or first.get("run_id") or run_name,
        "date": run_date(resolved.get("run_id") or first.get("run_id")),
        "engine": (first.get("model_identity") or {}).get("engine")
        if isinstance(first.get("model_identity"), Mapping)
        else None,
        "first": first,
        "verdict": verdict,
        "arms": arms,
        "comparisons": comparisons,
        "compares": files.stored_comparisons,
        "forests": {name: forest_plot(report) for name, report in comparisons.items()},
        "metric_names": metric_names,
        "slices": slices,
        "banners": _banners(verdict, arms, split_counts, comparisons),
        "notes": notes,
        "telemetry": _telemetry_rows(arms, comparisons),
        "misses": miss_table(arms),
        "reasoning": reasoning_table(arms),
        "blob": blob_json(blob) if blob is not None else None,
        "examples_note": "; ".join(split_notes),
    }


def render_report(run_dir: Path | str) -> str:
    """The self-contained HTML page of the stored run in ``run_dir``."""
    return render_page(read_run(Path(run_dir)), Path(run_dir).name)


def render_page(files: RunFiles, run_name: str) -> str:
    """The self-contained HTML page of a run's values (see :func:`page_context`)."""
    context = page_context(files, run_name)
    script = (TEMPLATES / "report.js").read_text(encoding="utf-8")
    style = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    context["script"] = script
    context["style"] = style
    context["csp"] = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    return _environment().get_template("report.html.j2").render(**context)


def write_report(run_dir: Path | str, out: Path | str | None = None) -> Path:
    """Render the page of ``run_dir`` and write it atomically to ``out`` (default
    ``<run_dir>/report.html``); returns the path written."""
    run_dir = Path(run_dir)
    target = Path(out) if out is not None else runlayout.page(run_dir)
    if out is not None and runlayout.is_run_file(run_dir.resolve(), target.resolve()):
        raise InputError(
            "SOM-REPORT-OUT",
            f"--out {out} is one of the run's own files (or folders); the page would "
            "overwrite it",
            "write the page elsewhere, or leave --out out (RUN_DIR/report.html)",
        )
    artifacts.atomic_write_text(target, render_report(run_dir))
    return target


__all__ = [
    "REPORT_FILE",
    "build_context",
    "examples_blob",
    "page_context",
    "render_page",
    "render_report",
    "write_report",
]
