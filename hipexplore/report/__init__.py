"""The notebook-facing report: run the review notebooks and export one HTML file, load recorded
data, and assemble what the dashboard shows.

Why a package: these were five jobs in one 790-line module. ``notebooks`` finds, parameterises,
executes and exports notebooks; ``recorded`` loads parquet files by the schema tag their writers
stored (with a marked fallback for the untagged legacy files under ``data/``) and builds the
provenance table; ``replay`` and ``dashboard`` turn live runs or recorded frames into the tables
and configurations the notebooks show; ``headline`` writes the sentences each report opens with
(noise and what it resolves, the cache's saving, the verdict). Every public name stays importable
from ``hipexplore.report``.
"""

from __future__ import annotations

from .dashboard import (
    SUMMARY_VIEW,
    BenchData,
    bench_configuration,
    benchmark_data,
    dashboard_configuration,
    styled_summary,
    provenance_for,
    summary_table,
)
from .notebooks import (
    KERNEL_NAME,
    NOTEBOOKS,
    ReportError,
    ReportResult,
    build_report,
    check_parameters,
    execute_notebook,
    export_html,
    external_references,
    load_params,
    notebook_parameters,
    notebook_path,
    notebooks_dir,
)
from .recorded import (
    PROVENANCE_ORDER,
    Recorded,
    collect_provenance,
    full_width,
    load_recorded,
    parquet_provenance,
    provenance_table,
)
from .replay import PRIMARY_SCENARIOS, ReplayData, cache_demo, one_pass, replay_data, scenario_table, split_replay

__all__ = [
    "BenchData",
    "KERNEL_NAME",
    "ReplayData",
    "bench_configuration",
    "benchmark_data",
    "cache_demo",
    "dashboard_configuration",
    "summary_table",
    "styled_summary",
    "collect_provenance",
    "full_width",
    "provenance_for",
    "replay_data",
    "scenario_table",
    "split_replay",
    "NOTEBOOKS",
    "Recorded",
    "ReportError",
    "ReportResult",
    "build_report",
    "check_parameters",
    "execute_notebook",
    "export_html",
    "external_references",
    "load_params",
    "load_recorded",
    "notebook_parameters",
    "notebook_path",
    "notebooks_dir",
    "parquet_provenance",
    "provenance_table",
    "PROVENANCE_ORDER",
    "PRIMARY_SCENARIOS",
    "SUMMARY_VIEW",
    "one_pass",
]
