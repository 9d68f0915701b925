"""The views a scored run's files are rendered with (``data.store.scored_run.RunViews``): one
bundle, so that the pytest session finish, the training callback and ``sommelier rescore``
write the same text.

Pure: values in, text out. Each view is given the record it renders in its stored form
(``data.store.artifacts.stored_form``, the value the run's file holds): the page and the
summary their records (``data.store.runread``: built in that form from memory or from the
files), and the Markdown of a comparison report or of a comparison with a stored run the
report as its file holds it, so the text rendered at the finish is the text rendered from the
files (``tests/plugin/test_views_memory_disk.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.types import ComparisonReport
from pytest_sommelier.core.verdict import AgainstStored
from pytest_sommelier.data.store.artifacts import stored_form
from pytest_sommelier.data.store.runread import RunFiles, SummaryInputs
from pytest_sommelier.view.ci_summary import summary_text
from pytest_sommelier.view.compare import against_lines, compare_markdown
from pytest_sommelier.view.html import render_page
from pytest_sommelier.view.markdown import comparison_markdown


class RunText:
    """``data.store.scored_run.RunViews`` rendered by this layer."""

    def outcome_markdown(self, outcome: RunOutcome) -> dict[str, str]:
        """Each comparison report as Markdown (``view.markdown.comparison_markdown``), by
        comparison name, rendered from the report in its stored form."""
        return {
            name: comparison_markdown(cast(ComparisonReport, stored_form(report)))
            for name, report in outcome.comparison_reports.items()
        }

    def page(self, files: RunFiles, title: str) -> str:
        """``view.html.render_page``."""
        return render_page(files, title)

    def summary(self, inputs: SummaryInputs) -> str:
        """``view.ci_summary.summary_text``."""
        return summary_text(inputs)

    def compare_markdown(self, report: Mapping[str, Any]) -> str:
        """``view.compare.compare_markdown`` of the report in its stored form."""
        return compare_markdown(cast(Mapping[str, Any], stored_form(report)))

    def against_lines(self, against: AgainstStored) -> list[str]:
        """``view.compare.against_lines``."""
        return against_lines(against)


RUN_VIEWS = RunText()
"""The one bundle the session finish, the training callback and ``sommelier rescore`` render
a run's files with."""

__all__ = ["RUN_VIEWS", "RunText"]
