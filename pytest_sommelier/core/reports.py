"""The 0.3 home of the reports, kept importable: 0.4 split it by job into
``core.report_blocks`` (the blocks every report is built of, and an arm's evaluation report),
``core.report_identity`` (the identity gate) and ``core.report_comparison`` (comparison
reports). Every public name of 0.3's ``core.reports`` is re-exported here, the same object.
"""

from __future__ import annotations

from pytest_sommelier.core.report_blocks import (
    EVALUATION_SCHEMA,
    MARGINAL_COHORT,
    Clusters,
    Matrices,
    Records,
    Row,
    build_evaluation_report,
    comparison_arrays,
    comparison_interval_block,
    gap_cohort,
    gap_interval_block,
    gap_label,
    interval_block,
    metric_difference,
    metric_gaps,
    order_slice_records,
    power_block,
    record_clusters,
)
from pytest_sommelier.core.report_comparison import (
    COMPARISON_SCHEMA,
    IDENTICAL_WARN_FRACTION,
    SUCCESS_METRIC,
    TELEMETRY_MATCH_FIELDS,
    adapter_had_no_effect,
    build_comparison_report,
    efficiency_block,
    identical_outputs,
    mcnemar_block,
)
from pytest_sommelier.core.report_identity import check_identity

__all__ = [
    "COMPARISON_SCHEMA",
    "EVALUATION_SCHEMA",
    "IDENTICAL_WARN_FRACTION",
    "MARGINAL_COHORT",
    "SUCCESS_METRIC",
    "TELEMETRY_MATCH_FIELDS",
    "Clusters",
    "Matrices",
    "Records",
    "Row",
    "adapter_had_no_effect",
    "build_comparison_report",
    "build_evaluation_report",
    "check_identity",
    "comparison_arrays",
    "comparison_interval_block",
    "efficiency_block",
    "gap_cohort",
    "gap_interval_block",
    "gap_label",
    "identical_outputs",
    "interval_block",
    "mcnemar_block",
    "metric_difference",
    "metric_gaps",
    "order_slice_records",
    "power_block",
    "record_clusters",
]
