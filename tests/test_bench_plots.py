"""hipexplore.bench_plots: the noise, bias and bandwidth figures show the numbers in the frames,
and a frame they cannot draw fails loudly. Small hand-made frames pin exact values (a line's y
data, a violin's median)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # unit tests only; notebooks keep the inline backend

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from hipexplore import bench_plots, plot_parts, plots
from hipexplore.errors import ConfigError
from frames import summary_rows

MiB = 1 << 20


def summary_frame() -> pd.DataFrame:
    rows = []
    for size in (MiB, 16 * MiB):
        for flush, iqr0 in (("none", 0.30), ("l2-read", 0.12)):
            for i, rot in enumerate((1, 2, 4)):
                median = size * 3 / 1e12 * (1 + 0.1 * i)
                rows.append(
                    dict(
                        kernel="triad",
                        device_name="cpu",
                        size_bytes=size,
                        rotating=rot,
                        rotating_requested=str(rot),
                        flush=flush,
                        median_s=median,
                        iqr_rel=iqr0 / (i + 1),
                        bias=0.05 * i - 0.02,
                        reference_median_s=size * 3 / 1e12,
                        bandwidth_gbs=size * 3 / median / 1e9,
                        peak_bandwidth_gbs=float("nan"),
                    )
                )
        rows.append(
            dict(
                kernel="triad",
                device_name="cpu",
                size_bytes=size,
                rotating=1,
                rotating_requested="1",
                flush="cold-reference",
                median_s=size * 3 / 1e12,
                iqr_rel=0.0,
                bias=0.0,
                reference_median_s=size * 3 / 1e12,
                bandwidth_gbs=1.0,
                peak_bandwidth_gbs=float("nan"),
            )
        )
    return pd.DataFrame(rows)


def samples_frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)  # seeded noise: the figures' inputs, not a measurement
    rows = []
    for flush in ("none", "l2-read"):
        for rot in (1, 4):
            for i, t in enumerate(1e-5 * (1 + rng.gamma(2.0, 0.05, 25))):
                rows.append(
                    dict(
                        kernel="triad",
                        device_name="cpu",
                        size_bytes=MiB,
                        rotating=rot,
                        flush=flush,
                        iteration=i,
                        time_s=t,
                    )
                )
    return pd.DataFrame(rows)


def test_iqr_plot_draws_each_flush_mode_and_the_warning_levels():
    fig = bench_plots.plot_iqr_vs_rotating(summary_frame(), size_bytes=MiB)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) >= {"none", "l2-read"}
    assert "cold-reference" not in lines
    np.testing.assert_allclose(lines["none"].get_ydata(), [30.0, 15.0, 10.0])
    np.testing.assert_allclose(lines["none"].get_xdata(), [1, 2, 4])
    levels = sorted(
        float(ln.get_ydata()[0])
        for ln in ax.get_lines()
        if ln.get_label().startswith("_") and len(set(ln.get_ydata())) == 1
    )
    assert 10.0 in levels and 25.0 in levels
    assert "1 MiB" in ax.get_title()


def test_noise_plots_need_one_configuration():
    s = summary_frame()
    with pytest.raises(ConfigError, match="several size_bytes"):
        bench_plots.plot_iqr_vs_rotating(s)
    with pytest.raises(ConfigError, match="size_bytes=123"):
        bench_plots.plot_iqr_vs_rotating(s, size_bytes=123)


def test_ecdf_has_one_step_per_setting_ending_at_one():
    fig = bench_plots.plot_noise_ecdf(samples_frame())
    lines = fig.axes[0].get_lines()
    assert len(lines) == 4
    for ln in lines:
        y = ln.get_ydata()
        assert y[-1] == pytest.approx(1.0) and np.all(np.diff(y) >= 0)
    assert "µs" in fig.axes[0].get_xlabel()


def test_violins_one_body_per_setting():
    fig = bench_plots.plot_noise_violins(samples_frame())
    bodies = [c for c in fig.axes[0].collections if isinstance(c, PolyCollection)]
    assert len(bodies) == 4


def test_the_bias_title_names_each_sizes_own_cold_time():
    """Issue 49: the sweep panel draws every size (``size_bytes="all"``) and its title named the first
    size's cold reference for all of them; each size has its own."""
    summary = summary_frame()
    both = bench_plots.plot_bias(summary, size_bytes="all").axes[0].get_title()
    scale, unit = plot_parts.time_unit(summary["reference_median_s"])
    cold = {s: summary.loc[summary["size_bytes"] == s, "reference_median_s"].iloc[0] * scale for s in (MiB, 16 * MiB)}
    assert both.endswith(f"(cold {cold[MiB]:.3g} {unit} at 1 MiB, {cold[16 * MiB]:.3g} {unit} at 16 MiB)"), both
    one = bench_plots.plot_bias(summary, size_bytes=16 * MiB).axes[0].get_title()
    one_scale, one_unit = plot_parts.time_unit(summary.loc[summary["size_bytes"] == 16 * MiB, "reference_median_s"])
    assert one.endswith(f"(cold {summary['reference_median_s'].max() * one_scale:.3g} {one_unit})"), one
    many = pd.concat([summary_frame().assign(size_bytes=summary["size_bytes"] * k) for k in (1, 2)], ignore_index=True)
    assert (
        bench_plots.plot_bias(many, size_bytes="all")
        .axes[0]
        .get_title()
        .endswith("(cold reference: one per size, in the table)")
    )


def test_bias_in_percent_without_cold_reference_rows():
    fig = bench_plots.plot_bias(summary_frame(), size_bytes=16 * MiB)
    lines = {ln.get_label(): ln for ln in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["l2-read"].get_ydata(), [-2.0, 3.0, 8.0])
    assert "cold-reference" not in lines


def test_bandwidth_uses_the_largest_rotating_count_and_says_peak_unknown():
    s = summary_frame()
    fig = bench_plots.plot_bandwidth(s)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    rows = s[(s.flush == "none") & (s.rotating == 4)].sort_values("size_bytes")
    np.testing.assert_allclose(lines["none"].get_ydata(), rows["bandwidth_gbs"])
    assert any("peak unknown" in t.get_text() for t in ax.texts)
    s["peak_bandwidth_gbs"] = 4800.0
    ax2 = bench_plots.plot_bandwidth(s, rotating=2).axes[0]
    assert any(ln.get_ydata()[0] == 4800.0 for ln in ax2.get_lines() if len(set(ln.get_ydata())) == 1)
    with pytest.raises(ConfigError, match="rotating='auto'"):
        bench_plots.plot_bandwidth(s, rotating="auto")


def test_ecdf_lines_are_the_sorted_samples_of_their_setting():
    x = samples_frame(seed=3)
    lines = {ln.get_label(): ln for ln in bench_plots.plot_noise_ecdf(x).axes[0].get_lines()}
    assert set(lines) == {f"{f}, rotating {r}" for f in ("none", "l2-read") for r in (1, 4)}
    for (flush, rot), grp in x.groupby(["flush", "rotating"]):
        ln = lines[f"{flush}, rotating {rot}"]
        np.testing.assert_allclose(ln.get_xdata(), np.sort(grp.time_s.to_numpy()) * 1e6)  # µs
        np.testing.assert_allclose(ln.get_ydata(), np.arange(1, len(grp) + 1) / len(grp))
        assert ln.get_drawstyle() == "steps-post"


def test_violin_medians_are_the_medians_of_their_setting():
    from matplotlib.collections import LineCollection

    x = samples_frame(seed=4)
    ax = bench_plots.plot_noise_violins(x).axes[0]
    medians = sorted(
        float(seg[0][1]) for c in ax.collections if isinstance(c, LineCollection) for seg in c.get_segments()
    )
    want = sorted(float(np.median(g.time_s)) * 1e6 for _, g in x.groupby(["flush", "rotating"]))
    np.testing.assert_allclose(medians, want)


def test_names_from_a_run_file_are_drawn_literally_not_as_mathtext():
    """A kernel, device or flush name from a recorded run holding ``$...$`` must not be parsed as
    mathtext (``$\\foo$`` made drawing raise, and the whole report with it): it is drawn as written."""
    hostile = r"k$\foo$"
    summary = summary_frame().assign(kernel=hostile, device_name="cpu$\\bar$")
    summary.loc[summary["flush"] == "none", "flush"] = "x$\\baz$"
    samples = samples_frame().assign(kernel=hostile, device_name="cpu$\\bar$")
    figs = [
        bench_plots.plot_iqr_vs_rotating(summary, size_bytes=MiB),
        bench_plots.plot_bias(summary, size_bytes=MiB),
        bench_plots.plot_bandwidth(summary),
        bench_plots.plot_noise_ecdf(samples),
        bench_plots.plot_noise_violins(samples),
    ]
    for fig in figs:
        assert plots.figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"  # drawn without a mathtext error
    assert (
        plot_parts.plain_text(hostile) == r"k\$\foo\$" and plot_parts.plain_text(hostile) in figs[0].axes[0].get_title()
    )


def test_rotating_axis_says_auto_and_log2():
    fig = bench_plots.plot_iqr_vs_rotating(summary_rows(sizes=(1 << 16,)), size_bytes=1 << 16)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "rotating buffer sets (log2 scale)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "auto (342)"]
    lin = bench_plots.plot_bias(summary_rows(sizes=(1 << 16,), rotating=(1, 2, 4)), size_bytes=1 << 16).axes[0]
    assert lin.get_xlabel() == "rotating buffer sets"


def test_all_sizes_stay_on_the_live_plots():
    fig = bench_plots.plot_iqr_vs_rotating(summary_rows(), size_bytes="all")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["l2-read, 64 KiB", "l2-read, 256 KiB", "none, 64 KiB", "none, 256 KiB"]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def noise_samples_frame(n_rot=6, flushes=("none", "l2-write"), outliers=3) -> pd.DataFrame:
    import numpy as np

    rng = np.random.default_rng(1)
    rows = []
    for f in flushes:
        for r in range(1, n_rot + 1):
            t = rng.normal(1e-5 * r, 1e-7, 60)
            rows += [
                dict(kernel="triad", size_bytes=1 << 20, rotating=r, flush=f, time_s=float(v), iteration=i)
                for i, v in enumerate(t)
            ]
    for i in range(outliers):
        rows.append(dict(kernel="triad", size_bytes=1 << 20, rotating=1, flush="none", time_s=1e-2, iteration=100 + i))
    return pd.DataFrame(rows)


def test_ecdf_legend_does_not_cover_the_curves():
    fig = bench_plots.plot_noise_ecdf(noise_samples_frame())
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert len(legend.get_texts()) == 12
    assert not _overlap(legend.get_window_extent(), ax.get_window_extent())


def test_violin_off_scale_note_is_not_under_the_legend():
    fig = bench_plots.plot_noise_violins(noise_samples_frame(n_rot=3))
    fig.canvas.draw()
    ax = fig.axes[0]
    note = next(t for t in ax.texts if "off scale" in t.get_text())
    assert not _overlap(note.get_window_extent(), ax.get_legend().get_window_extent())
