"""The run store: atomic writes of a run and reading stored runs back, at the paths of the
run layout (``core.runlayout``).

Invariants kept: every file is written to a temporary file in its destination folder, flushed,
fsynced and renamed, so it exists whole or not at all; a run is written in dependency order
(inputs, generations, telemetry, arm reports, comparison reports, verdict last), so a crash
midway never leaves a verdict beside missing reports; JSON is UTF-8 with sorted keys.
"""

from __future__ import annotations

import errno
import fcntl
import json
import numbers
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.types import (
    ComparisonReport,
    EvaluationReport,
    FormattedSplit,
    GenerationRecord,
    RebatchedOutput,
    Telemetry,
    Verdict,
)
from pytest_sommelier.data.atomic import CannotCreateError, write_atomic
from pytest_sommelier.data.split.load import json_lines
from pytest_sommelier.data.store.validate import check_stored
from pytest_sommelier.data.suite.names import valid_name
from pytest_sommelier.errors import InputError, SommelierEnvironmentError

if TYPE_CHECKING:
    from pytest_sommelier.core.pipeline import RunOutcome

StoredArm = tuple[EvaluationReport, Telemetry | None, dict[str, list[GenerationRecord]]]
"""A stored arm folder as :func:`read_arm` returns it: (report, telemetry or None, records per
slice)."""


RECORD_FIELDS = frozenset(GenerationRecord.__required_keys__ | GenerationRecord.__optional_keys__)
"""The fields a stored generation record may have: a record with any other is refused, so
rescore never copies a field nothing derived."""


def _reasoning_fields_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a record's reasoning fields (``core.reasoning``), or None:
    ``reasoning_text`` and ``content_text`` are strings or null, ``reasoning_tokens`` a count
    or null (each may be absent: records written before 0.5)."""
    for key in ("reasoning_text", "content_text"):
        if record.get(key) is not None and not isinstance(record[key], str):
            return f"{key!r} is not a string or null"
    tokens = record.get("reasoning_tokens")
    if tokens is not None and (type(tokens) is not int or tokens < 0):
        return "'reasoning_tokens' is not a count or null"
    return None


def new_run_id() -> str:
    """``YYYYmmddTHHMMSSZ-<6 hex>``: sortable by time, unique across parallel runs."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


JsonValue = dict[str, "JsonValue"] | list["JsonValue"] | str | int | float | bool | None
"""A value in its stored form (:func:`stored_form`)."""

_ATOMS = frozenset({str, int, float, bool, type(None)})


def _stored_key(key: object) -> str:
    """A mapping key as JSON writes it (``json.dumps``' rule: strings as they are, booleans
    ``true``/``false``, None ``null``, numbers as their JSON text); else a TypeError."""
    if isinstance(key, str):
        return str.__str__(key)
    if key is None or isinstance(key, bool | numbers.Real):
        return json.dumps(_stored_atom(key), allow_nan=False)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _stored_atom(value: object) -> JsonValue:
    """A scalar in its stored form: a Python ``bool``, ``int``, ``float``, ``str`` or None
    (numpy scalars, and subclasses such as ``IntEnum``, as the plain value JSON writes)."""
    if value is None or isinstance(value, bool):
        return value  # type: ignore[return-value]
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    item = getattr(value, "item", None)  # a numpy bool_ or 0-d array: its Python value
    if getattr(value, "shape", None) == () and callable(item):
        return _stored_atom(item())
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def stored_form(value: Any) -> JsonValue:
    """``value`` as the run store holds it: every mapping a ``dict`` with string keys in sorted
    order, every list or tuple a ``list``, every number a Python ``int`` or ``float`` (numpy
    scalars included), strings, booleans and None as they are. Reads nothing, writes no text.

    It is what :func:`dumps` and :func:`jsonl` write, so reading a written file back gives
    exactly this value (keys in the same order, ``-0.0``, large integers and every float's
    digits included): the record a view renders from memory (``data.store.runread``) and the
    record read back from the files are built from the same stored form. A non-finite float is
    kept here and refused when written (``allow_nan=False``)."""
    kind = type(value)
    if kind in _ATOMS:
        return value  # type: ignore[no-any-return]
    if kind is dict and all(type(key) is str for key in value):
        return {
            key: item if type(item := value[key]) in _ATOMS else stored_form(item)
            for key in sorted(value)
        }
    if isinstance(value, Mapping):
        pairs = sorted(((_stored_key(key), item) for key, item in value.items()),
                       key=lambda pair: pair[0])  # fmt: skip
        return {key: stored_form(item) for key, item in pairs}
    if isinstance(value, list | tuple):
        return [item if type(item) in _ATOMS else stored_form(item) for item in value]
    return _stored_atom(value)


def dumps(value: Any) -> str:
    """The one JSON rendering used for artifacts: :func:`stored_form` (sorted keys, lists,
    plain numbers) as 2-space indented UTF-8 JSON."""
    return json.dumps(stored_form(value), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_text(path: Path, text: str | bytes) -> None:
    """Write one artifact through the one atomic writer (``data.atomic.write_atomic``), with
    the file mode the umask gives; an ``OSError`` becomes an error naming the folder."""
    try:
        write_atomic(path, text)
    except CannotCreateError as exc:
        raise SommelierEnvironmentError(
            "SOM-OUT-UNWRITABLE",
            f"cannot write to {path.parent}: {exc.strerror or exc}",
            "choose a writable folder with --sommelier-out",
        ) from exc
    except OSError as exc:
        raise SommelierEnvironmentError(
            "SOM-OUT-WRITE-FAILED",
            f"writing {path} failed: {exc.strerror or exc}",
            "check free space and permissions of the output folder",
        ) from exc


def copy_input(path: Path, data: bytes) -> None:
    """Write the bytes of an input (the split, a staged file) into a run folder as they are: a
    byte copy, never text re-encoded. A file already holding exactly these bytes is left
    untouched."""
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    atomic_write_text(path, data)


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, dumps(value))


def jsonl(records: Sequence[Mapping[str, Any]]) -> str:
    """One compact JSON object per line, in the given order, each in its stored form
    (:func:`stored_form`: sorted keys)."""
    return "".join(
        json.dumps(stored_form(r), ensure_ascii=False, allow_nan=False) + "\n" for r in records
    )


def stored_resolved(resolved: Mapping[str, Any], split: FormattedSplit) -> dict[str, Any]:
    """``suite.resolved.json`` as :func:`write_run` writes it, in its stored form
    (:func:`stored_form`): ``resolved`` with the digest of the split bytes the run loaded."""
    recorded = {**resolved.get("test_split", {}), "sha256": split.sha256}
    if split.sample is not None:  # a seeded sample (data.split.sample): the identity says so
        recorded["sample"] = dict(split.sample)
    return cast(dict[str, Any], stored_form({**resolved, "test_split": recorded}))


def write_verdict(run_dir: Path, verdict: Verdict) -> None:
    """Write ``gate_verdict.json`` atomically: the last file of a run, written only when
    everything before it was written."""
    atomic_write_json(runlayout.verdict(run_dir), verdict)


STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def append_regular(path: str, data: bytes) -> None:
    """Append ``data`` to ``path`` when it is a regular file (created when absent). The file is
    opened without blocking and checked before anything is written, so a FIFO with no reader
    or a device node is an ``OSError``, never a hang or a write into it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)")
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_run(
    run_dir: Path,
    *,
    resolved: dict[str, Any],
    split: FormattedSplit,
    generations: dict[str, dict[str, list[GenerationRecord]]],
    telemetry: dict[str, Telemetry],
    arm_reports: dict[str, EvaluationReport],
    comparison_reports: dict[str, ComparisonReport],
    comparison_markdown: dict[str, str],
    verdict: Verdict | None,
    rebatched: dict[str, dict[str, RebatchedOutput]] | None = None,
) -> None:
    """Write a whole run directory in dependency order, verdict last (an arm's re-batched
    outputs, where the noise floor made some, beside its generations).

    The split copy is ``split.raw``, the bytes the run loaded (never the file re-read, which
    may have changed since, nor re-encoded text), and ``resolved`` records their digest."""
    resolved = stored_resolved(resolved, split)
    atomic_write_json(runlayout.resolved(run_dir), resolved)
    copy_input(runlayout.split_copy(run_dir), split.raw)
    for arm, by_slice in generations.items():
        arm_dir = runlayout.arm_dir(run_dir, arm)
        for language, records in by_slice.items():
            atomic_write_text(runlayout.generations(arm_dir, language), jsonl(records))
        atomic_write_json(runlayout.telemetry(arm_dir), telemetry[arm])
    for arm, outputs in (rebatched or {}).items():
        if outputs:
            rows = [{"example_id": key, **value} for key, value in outputs.items()]
            atomic_write_text(runlayout.rebatched(runlayout.arm_dir(run_dir, arm)), jsonl(rows))
    for arm, arm_report in arm_reports.items():
        atomic_write_json(runlayout.arm_report(runlayout.arm_dir(run_dir, arm)), arm_report)
    for name, comparison in comparison_reports.items():
        write_comparison(runlayout.report_dir(run_dir), name, comparison, comparison_markdown[name])
    if verdict is not None:
        atomic_write_json(runlayout.verdict(run_dir), verdict)


def write_comparison(folder: Path, name: str, report: Any, markdown: str) -> tuple[Path, Path]:
    """Write one comparison report as ``<folder>/<name>.json`` and ``.md`` (the JSON first);
    returns both paths."""
    json_path, md_path = runlayout.report_files(folder, name)
    atomic_write_json(json_path, report)
    atomic_write_text(md_path, markdown)
    return json_path, md_path


def write_outcome(
    run_dir: Path,
    outcome: RunOutcome,
    *,
    resolved: dict[str, Any],
    split: FormattedSplit,
    comparison_markdown: Mapping[str, str],
) -> None:
    """Write a :class:`pipeline.RunOutcome` with :func:`write_run`: its generation records
    (with their miss fields) and reports, and each comparison report's Markdown twin as the
    view rendered it (``comparison_markdown``, by comparison name: the store imports no view)."""
    write_run(
        run_dir,
        resolved=resolved,
        split=split,
        generations=outcome.generations,
        telemetry=outcome.telemetry,
        arm_reports=outcome.arm_reports,
        comparison_reports=outcome.comparison_reports,
        comparison_markdown=dict(comparison_markdown),
        verdict=outcome.verdict,
        rebatched=outcome.rebatched,
    )
    if outcome.selection is not None:
        atomic_write_json(runlayout.selection(run_dir), outcome.selection)


def remove_stale(run_dir: Path, *, keep_generations: bool = True) -> None:
    """Remove what an earlier write to ``run_dir`` left, the verdict first, so nothing of a
    previous attempt can pass for this one's: verdict, HTML page, comparison reports, arm
    reports, the rescore record and leftover temporary files of an interrupted atomic write
    (``.*.tmp``); with
    ``keep_generations=False`` (a new run into a reused folder) also the resolved suite, the
    split copy, parity reports and every arm folder (an arm of the earlier run this one
    lacks included).
    Raises ``OSError`` as the file system does (see :func:`claim_run`)."""
    doomed = [
        runlayout.verdict(run_dir),
        runlayout.page(run_dir),
        runlayout.rescored(run_dir),
        runlayout.report_dir(run_dir),
    ]
    if keep_generations:
        doomed += sorted(runlayout.eval_dir(run_dir).glob(f"*/{runlayout.ARM_REPORT}"))
        doomed += sorted(runlayout.eval_dir(run_dir).glob("*/.*.tmp"))
    else:
        doomed += [
            runlayout.eval_dir(run_dir),
            runlayout.split_copy(run_dir).parent,
            run_dir / runlayout.PARITY,
            runlayout.resolved(run_dir),
        ]
    doomed += sorted(run_dir.glob(".*.tmp"))
    for path in doomed:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def check_writable(folder: Path) -> None:
    """Refuse (``SOM-OUT-UNWRITABLE``) a run folder that could not be written, before anything
    runs: its nearest existing ancestor (itself, if it exists) is not a folder, or is one this
    process may not write (a read-only file system, permissions; ``os.access``). Writes
    nothing."""
    probe = Path(os.path.abspath(folder))
    try:
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        usable = probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)
    except OSError:
        usable = False
    if not usable:
        why = "not a folder" if probe.exists() and not probe.is_dir() else "not writable"
        raise SommelierEnvironmentError(
            "SOM-OUT-UNWRITABLE",
            f"cannot write to {folder}: {probe} is {why}; nothing was run and an earlier "
            "run's files there are left as they were",
            "choose a writable folder with --sommelier-out",
        )


@contextmanager
def claim_run(run_dir: Path, *, keep_generations: bool = False) -> Iterator[None]:
    """Hold ``run_dir`` for one writer for the block, after removing what an earlier write left
    (:func:`remove_stale`; the verdict first).

    The claim is an exclusive ``flock`` on the folder itself (no lock file is written): a
    second writer (another session given the same ``--sommelier-out``, a rescore) is refused
    with ``SOM-OUT-IN-USE`` and touches nothing, so a folder never mixes two runs' files. A
    folder that cannot be created or cleared is ``SOM-OUT-UNWRITABLE``, one line."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_dir, os.O_RDONLY)
    except OSError as exc:
        raise SommelierEnvironmentError(
            "SOM-OUT-UNWRITABLE",
            f"cannot write to {run_dir}: {exc.strerror or exc}",
            "choose a writable folder with --sommelier-out",
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SommelierEnvironmentError(
                "SOM-OUT-IN-USE",
                f"{run_dir} is being written by another session or rescore right now; "
                "nothing of this run was written there",
                "give each concurrent session its own --sommelier-out",
            ) from None
        try:
            remove_stale(run_dir, keep_generations=keep_generations)
        except OSError as exc:
            left = (
                " (its earlier gate_verdict.json is still there)"
                if runlayout.verdict(run_dir).exists()
                else ""
            )
            raise SommelierEnvironmentError(
                "SOM-OUT-UNWRITABLE",
                f"cannot replace the earlier run in {run_dir}: removing "
                f"{exc.filename or 'a file'} failed: {exc.strerror or exc}{left}",
                "choose a writable folder with --sommelier-out",
            ) from None
        yield
    finally:
        os.close(fd)  # releases the flock


def install_run(stage: Path, target: Path) -> None:
    """Copy every file of a run written whole in ``stage`` into ``target`` (claimed), as bytes
    through the atomic writer, in dependency order: everything else, then the verdict, then
    the page. A file already holding the same bytes is left untouched."""
    last = [runlayout.verdict(stage), runlayout.page(stage)]
    files = [p for p in sorted(stage.rglob("*")) if p.is_file() and p not in last]
    for path in [*files, *(p for p in last if p.is_file())]:
        copy_input(target / path.relative_to(stage), path.read_bytes())


def arm_order(configured: Sequence[str], names: Iterable[str]) -> list[str]:
    """The order a run's arms are read and shown in: ``configured`` (the resolved suite's
    order), then every other of ``names`` by name."""
    return [*configured, *sorted(set(names) - set(configured))]


def arm_names(run_dir: Path, configured: list[str]) -> list[str]:
    """The arms of a stored run to read (:func:`arm_order`): ``configured``, then any other
    folder under ``eval/`` by name (a folder there need not hold a report)."""
    folders = (p.name for p in runlayout.eval_dir(run_dir).glob("*") if p.is_dir())
    return arm_order(configured, folders)


def read_json(path: Path, *, expect: str | None = None) -> Any:
    """Read a stored JSON artifact, validated by ``data.store.validate.check_stored`` (against
    the schema its ``schema_version`` names, or ``expect``); a missing, broken or non-fitting
    file is an InputError naming it (and the field)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(
            "SOM-STORED-MISSING",
            f"{path}: not found",
            "point at a run or arm folder written by pytest-sommelier",
        ) from None
    except OSError as exc:
        raise InputError(
            "SOM-STORED-UNREADABLE", f"{path}: {exc.strerror or exc}", "check permissions"
        ) from None
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        line = f":{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
        raise InputError(
            "SOM-STORED-BROKEN",
            f"{path}{line}: not valid JSON ({reason})",
            "the artifact was edited or truncated; regenerate it",
        ) from None
    return check_stored(path, value, expect=expect)


def read_resolved(run_dir: Path) -> dict[str, Any]:
    """A run's ``suite.resolved.json``; an InputError when it is not a JSON object."""
    resolved = read_json(runlayout.resolved(run_dir))
    if not isinstance(resolved, dict):
        raise InputError(
            "SOM-STORED-FIELD",
            f"{runlayout.resolved(run_dir)}: not a JSON object",
            "point at a run folder written by pytest-sommelier",
        )
    return resolved


def read_jsonl(path: Path) -> list[GenerationRecord]:
    """Read a generations file; each broken line is an InputError naming ``file:line``.

    Lines end at ``\n`` only (``split.json_lines``): a model's text may hold a raw U+2028 or
    U+0085, which JSON writes unescaped and ``str.splitlines`` would split at."""
    try:
        lines = json_lines(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise InputError(
            "SOM-STORED-MISSING",
            f"{path}: not found",
            "the arm folder is missing a generations file",
        ) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            "SOM-STORED-BROKEN",
            f"{path}: not valid UTF-8 (byte {exc.start})",
            "the generations file was edited; regenerate this arm",
        ) from None
    except OSError as exc:
        raise InputError(
            "SOM-STORED-UNREADABLE", f"{path}: {exc.strerror or exc}", "check permissions"
        ) from None
    records: list[GenerationRecord] = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                "SOM-STORED-BROKEN",
                f"{path}:{number}: not valid JSON ({exc.msg})",
                "the generations file was edited or truncated; regenerate this arm",
            ) from None
        if not isinstance(record, dict):
            raise InputError(
                "SOM-STORED-BROKEN", f"{path}:{number}: not a JSON object", "regenerate this arm"
            )
        unknown = sorted(set(record) - RECORD_FIELDS)
        if unknown:
            raise InputError(
                "SOM-STORED-FIELD",
                f"{path}:{number}: unknown field {unknown[0]!r} in a generation record",
                "the generations file was edited; a record has exactly the documented fields "
                "(docs/artifacts.md)",
            )
        for key in ("example_id", "raw_text", "prompt_sha256", "language", "decoding"):
            if key not in record:
                raise InputError(
                    "SOM-STORED-FIELD",
                    f"{path}:{number}: generation record has no '{key}'",
                    "the generations file was edited; regenerate this arm",
                )
        if not isinstance(record["raw_text"], str):
            raise InputError(
                "SOM-STORED-FIELD",
                f"{path}:{number}: 'raw_text' is not a string",
                "regenerate this arm",
            )
        problem = _reasoning_fields_problem(record)
        if problem is not None:
            raise InputError(
                "SOM-STORED-FIELD",
                f"{path}:{number}: {problem}",
                "the generations file was edited; run sommelier rescore on an unedited copy",
            )
        try:
            # the text decoded as UTF-8, so a lone surrogate can only come from a \ud8xx-\udfxx
            # escape: lines without one need no check (a quarter of reading a 30k-record run)
            if "\\ud" in line or "\\uD" in line:
                json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                "SOM-STORED-FIELD",
                f"{path}:{number}: a string is not valid Unicode text (lone surrogate)",
                "the generations file was edited; regenerate this arm",
            ) from None
        records.append(cast(GenerationRecord, record))
    return records


def read_rebatched(arm_dir: Path) -> dict[str, RebatchedOutput]:
    """An arm folder's ``rebatched.jsonl`` by example id ({} when it has none); a line that is
    not a re-batched output is an InputError naming ``file:line``."""
    path = runlayout.rebatched(arm_dir)
    if not path.is_file():
        return {}
    outputs: dict[str, RebatchedOutput] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            row = json.loads(line)
            key, text = row["example_id"], row["raw_text"]
            valid = isinstance(key, str) and isinstance(text, str)
        except (json.JSONDecodeError, KeyError, TypeError):
            valid = False
        if not valid:
            raise InputError(
                "SOM-STORED-BROKEN",
                f"{path}:{number}: not a re-batched output (example_id, raw_text)",
                "the file was edited or truncated; remove it (the noise floor is then not "
                "measured) or regenerate the run",
            )
        outputs[key] = {
            "raw_text": text,
            "finish_reason": str(row.get("finish_reason", "unknown")),
            "generated_tokens": row.get("generated_tokens"),
        }
    return outputs


def read_arm(arm_dir: Path) -> StoredArm:
    """A stored arm folder ``eval/<arm>/``: (evaluation report, telemetry or None, records per
    slice as listed by the report's ``generation_artifact`` fields).

    The report is checked to name its arm and slices; the records carry the fields
    :func:`read_jsonl` checks (``core.pipeline.order_records`` checks the rest against the
    split before anything is scored)."""
    if not arm_dir.is_dir():
        raise InputError(
            "SOM-STORED-MISSING",
            f"{arm_dir}: not a folder",
            "give a stored arm folder such as runs/<run_id>/eval/<arm>",
        )
    from pytest_sommelier.core.report_blocks import EVALUATION_SCHEMA  # the report builders

    report_path = runlayout.arm_report(arm_dir)
    report = read_json(report_path, expect=EVALUATION_SCHEMA)
    if not isinstance(report, dict) or "slices" not in report or "arm" not in report:
        raise InputError(
            "SOM-STORED-FIELD",
            f"{report_path}: not an evaluation report",
            "give a stored arm folder such as runs/<run_id>/eval/<arm>",
        )
    names = [report["arm"], *report["slices"]] if isinstance(report["slices"], dict) else [None]
    bad = next((name for name in names if not valid_name(name)), "") if names else ""
    if bad != "":
        raise InputError(
            "SOM-STORED-FIELD",
            f"{report_path}: {bad!r} is not a valid arm or slice name",
            "names are letters, digits, '_' and '-'; the report was edited",
        )
    telemetry_path = runlayout.telemetry(arm_dir)
    telemetry = read_json(telemetry_path) if telemetry_path.exists() else None
    records = {
        language: read_jsonl(runlayout.generations(arm_dir, language))
        for language in report["slices"]
    }
    return cast(EvaluationReport, report), telemetry, records
