"""The views a scored run's files are rendered with (``data.store.scored_run.RunViews``): one
bundle, so that the pytest session finish and the training callback write the same text.

Pure: values in, text out; each method is the view function it names, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_sommelier.core.pipeline import RunOutcome
from pytest_sommelier.core.verdict import AgainstStored
from pytest_sommelier.data.store.runread import RunFiles, SummaryInputs
from pytest_sommelier.view.ci_summary import summary_text
from pytest_sommelier.view.compare import against_lines, compare_markdown
from pytest_sommelier.view.html import render_page
from pytest_sommelier.view.markdown import outcome_markdown


class RunText:
    """``data.store.scored_run.RunViews`` rendered by this layer."""

    def outcome_markdown(self, outcome: RunOutcome) -> dict[str, str]:
        """``view.markdown.outcome_markdown``."""
        return outcome_markdown(outcome)

    def page(self, files: RunFiles, title: str) -> str:
        """``view.html.render_page``."""
        return render_page(files, title)

    def summary(self, inputs: SummaryInputs) -> str:
        """``view.ci_summary.summary_text``."""
        return summary_text(inputs)

    def compare_markdown(self, report: Mapping[str, Any]) -> str:
        """``view.compare.compare_markdown``."""
        return compare_markdown(report)

    def against_lines(self, against: AgainstStored) -> list[str]:
        """``view.compare.against_lines``."""
        return against_lines(against)


RUN_VIEWS = RunText()
"""The one bundle both callers pass to ``write_scored_run``."""

__all__ = ["RUN_VIEWS", "RunText"]
