"""A comparison with a stored run as the store keeps it: writing ``report/compare-NNNN.json`` and
its Markdown (:func:`write_compare`), and the checks that read a stored arm folder's files
before it is used: ``sommelier compare A A`` refused (:func:`refuse_same_arm_folder`), and a
stored arm standing in for a configured arm judged by the borrowed-evidence rule
(:func:`refuse_borrowed_stand_in`, ``core.borrowed``). The comparison itself is built from
values in ``core.stored_comparison``; nothing here computes an interval, a test or a gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_sommelier.core import runlayout
from pytest_sommelier.core.borrowed import arm_origin, refuse_borrowed
from pytest_sommelier.core.stored_comparison import COMPARE_SCHEMA as COMPARE_SCHEMA
from pytest_sommelier.core.stored_comparison import DEFAULT_FLIPS as DEFAULT_FLIPS
from pytest_sommelier.data.store import artifacts
from pytest_sommelier.errors import InputError


def refuse_same_arm_folder(candidate: Path, reference: Path) -> None:
    """Refuse ``sommelier compare A A`` for arm folders: the same folder, or the same arm of
    the same run (a stored copy). ``InputError`` ``SOM-HISTORY-SAME``."""
    same = candidate.resolve() == reference.resolve()
    if not same:
        reports = []
        for arm_dir in (candidate, reference):
            path = runlayout.arm_report(arm_dir)
            report = artifacts.read_json(path) if path.is_file() else {}
            reports.append(
                (report.get("run_id"), report.get("arm")) if isinstance(report, dict) else None
            )
        same = reports[0] is not None and reports[0] == reports[1] and reports[0][0] is not None
    if same:
        raise InputError(
            "SOM-HISTORY-SAME",
            f"{candidate} and {reference} are the same arm of the same run; it would be "
            "compared with itself",
            "compare two different arms or runs",
        )


def refuse_borrowed_stand_in(configured: Mapping[str, Any], name: str, arm_dir: Path) -> None:
    """Refuse a stored arm folder (``runs/<id>/eval/<arm>``) standing in for arm ``name`` of
    the configured suite (``configured`` is its ``suite_identity``, the shape of
    ``suite.resolved.json``): the rule of :func:`refuse_borrowed` with ``stand_in``, for
    ``--sommelier-baseline`` and ``stored = "last"`` gates. For a folder outside a run (no
    ``suite.resolved.json`` two levels up) the adapter cannot be checked, so an adapter arm
    is refused and a base arm judged by its report's kind."""
    arm_dir = Path(arm_dir)
    report_path = runlayout.arm_report(arm_dir)
    report = artifacts.read_json(report_path) if report_path.is_file() else {}
    report = report if isinstance(report, dict) else {}
    resolved_path = runlayout.resolved(runlayout.run_of_arm(arm_dir))
    stored_resolved = artifacts.read_json(resolved_path) if resolved_path.is_file() else {}
    stored_resolved = stored_resolved if isinstance(stored_resolved, dict) else {}
    arm_field = report.get("arm")
    stored_name = arm_field if isinstance(arm_field, str) else arm_dir.name
    stored = arm_origin(stored_resolved, report, stored_name)
    if not stored_resolved:
        stored = {**stored, "suite": configured.get("name"), "adapter": None}
    refuse_borrowed(
        name,
        arm_origin(configured, None, name),
        stored,
        stored_label=f"stored arm {arm_dir}",
        stand_in=True,
    )


def write_compare(folder: Path, report: Mapping[str, Any], markdown: str) -> tuple[Path, Path]:
    """Write ``<folder>/compare-<NNNN>.json`` and its Markdown (``view.compare.compare_markdown``)
    atomically (a run's ``report/`` folder, or any folder); returns both paths."""
    return artifacts.write_comparison(Path(folder), report["name"], report, markdown)


__all__ = [
    "COMPARE_SCHEMA",
    "DEFAULT_FLIPS",
    "refuse_borrowed_stand_in",
    "refuse_same_arm_folder",
    "write_compare",
]
