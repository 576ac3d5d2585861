"""hipexplore.plots: every figure and helper the notebooks, docs and users call as ``plots.<name>``
is the one its family module draws, the families' refusals reach through it, and the dashboard puts
three of them side by side. (Each family's figures: test_bench_plots.py, test_cache_plots.py,
test_plot_parts.py.)
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # unit tests only; notebooks keep the inline backend

import pytest

from hipexplore import bench_plots, cache_plots, plot_parts, plots, schema
from hipexplore.errors import ConfigError
from test_bench_plots import MiB, samples_frame, summary_frame
from test_cache_plots import host_replay  # noqa: F401 (a fixture: the dashboard draws its real replay)


def test_every_public_name_is_its_family_modules_own():
    """``plots`` defines no figure of its own but the dashboard: each name in ``__all__`` (and
    ``saving_text``, which the notebooks' tests call) is the very object of the module that draws it."""
    homes = {
        **{n: bench_plots for n in bench_plots.__all__},
        **{n: cache_plots for n in cache_plots.__all__},
        **{n: plot_parts for n in plot_parts.__all__},
        "HIT_OUTCOMES": schema,
    }
    own = {"dashboard_figure", "figure_png"}
    assert set(plots.__all__) == (set(homes) - {"saving_text"}) | own
    for name, home in homes.items():
        assert getattr(plots, name) is getattr(home, name), name
    for name in own:
        assert getattr(plots, name).__module__ == "hipexplore.plots", name


def test_missing_columns_and_empty_frames_are_named():
    with pytest.raises(ConfigError, match=r"missing columns \['iqr_rel'\]"):
        plots.plot_iqr_vs_rotating(summary_frame().drop(columns=["iqr_rel"]), size_bytes=MiB)
    with pytest.raises(ConfigError, match="no rows"):
        plots.plot_noise_ecdf(samples_frame().iloc[:0])
    with pytest.raises(ConfigError, match="DataFrame"):
        plots.plot_cache_hits([1, 2, 3])


def test_dashboard_has_three_panels_side_by_side(host_replay):
    fig = plots.dashboard_figure(
        summary_frame(), host_replay.events, baseline=host_replay.baseline, size_bytes=MiB, title="t"
    )
    titles = [ax.get_title() for ax in fig.axes]
    assert len(fig.axes) == 3
    assert titles[0].startswith("Noise") and titles[1] == "Compile time saved" and titles[2].startswith("Cache hits")
    xs = [ax.get_position().x0 for ax in fig.axes]
    assert xs == sorted(xs)  # left to right
    assert plots.figure_png(fig).startswith(b"\x89PNG")
