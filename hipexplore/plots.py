"""Matplotlib figures for the two review questions: how noisy is a benchmark under each rotating /
flush setting, and how much compile time does the cache save in a tuning flow.

Every function takes the tidy frames of docs/ARCHITECTURE.md (benchmark samples and summary,
cache events or the tuning-replay frame), draws on ``ax`` when given (else on a new ``Figure``
that is not registered with pyplot, so notebooks show it once and nothing leaks), and returns the
``Figure``. A frame without the needed columns, or with nothing to draw, raises ``ConfigError``
naming what is missing: an empty plot would look like evidence.

The figures live by family: a benchmark run's noise, bias and bandwidth in ``bench_plots``, the
compile cache's in ``cache_plots``, what they share in ``plot_parts``; this module puts them side by
side (``dashboard_figure``) and holds every name the notebooks, the docs and users call as
``plots.<name>`` (the re-exports below).
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

# Re-exported: the notebooks (``plots.plot_noise_ecdf(...)``), the docs' examples, the report and
# users reach every figure and helper as ``hipexplore.plots.<name>``, where they were defined
# before the module was split by figure family.
from .bench_plots import (
    IQR_WARN_LEVELS,
    plot_bandwidth,
    plot_bias,
    plot_iqr_vs_rotating,
    plot_noise_ecdf,
    plot_noise_violins,
)
from .cache_plots import (
    OUTCOME_COLORS,
    OUTCOME_ORDER,
    compile_time_curves,
    hit_rate,
    outcome_counts,
    plot_cache_hits,
    plot_compile_time_saved,
    plot_outcome_counts,
    plot_replay_scenarios,
    saving_text,  # noqa: F401
)
from .plot_parts import _axes, flush_colors, format_bytes, one_configuration, plain_text, time_unit  # noqa: F401
from .schema import HIT_OUTCOMES

# ----------------------------------------------------------------------------------------------
# the review dashboard


def dashboard_figure(
    summary: pd.DataFrame,
    events: pd.DataFrame,
    baseline: pd.DataFrame | None = None,
    kernel: str | None = None,
    size_bytes: int | None = None,
    title: str | None = None,
    ideal_s: float | None = None,
) -> Figure:
    """Noise | compile time saved (with the ideal floor when ``ideal_s`` is given) | cache hits,
    side by side for one configuration."""
    fig = Figure(figsize=(16, 4.8), layout="constrained")
    ax_noise, ax_saved, ax_hits = fig.subplots(1, 3)
    plot_iqr_vs_rotating(summary, ax=ax_noise, kernel=kernel, size_bytes=size_bytes)
    plot_compile_time_saved(events, ax=ax_saved, baseline=baseline, ideal_s=ideal_s)
    plot_cache_hits(events, ax=ax_hits)
    if title:
        fig.suptitle(plain_text(title))
    return fig


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """The figure as PNG bytes (for image widgets and files), drawn with the Agg canvas."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


__all__ = [
    "HIT_OUTCOMES",
    "IQR_WARN_LEVELS",
    "OUTCOME_COLORS",
    "OUTCOME_ORDER",
    "compile_time_curves",
    "dashboard_figure",
    "figure_png",
    "flush_colors",
    "format_bytes",
    "hit_rate",
    "one_configuration",
    "outcome_counts",
    "plain_text",
    "plot_bandwidth",
    "plot_bias",
    "plot_cache_hits",
    "plot_compile_time_saved",
    "plot_iqr_vs_rotating",
    "plot_noise_ecdf",
    "plot_noise_violins",
    "plot_outcome_counts",
    "plot_replay_scenarios",
    "time_unit",
]
