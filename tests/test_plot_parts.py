"""hipexplore.plot_parts: what every figure is drawn with (its axes, the one configuration a
noise figure compares settings on, flush colours, time units, sizes, literal text)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # unit tests only; notebooks keep the inline backend

import pandas as pd
import pytest

from hipexplore import plot_parts
from hipexplore.errors import ConfigError

MiB = 1 << 20


def test_time_unit_and_format_bytes():
    assert plot_parts.time_unit([5e-6, 6e-6]) == (1e6, "µs")
    assert plot_parts.time_unit([0.2]) == (1e3, "ms")
    assert plot_parts.format_bytes(16 * MiB) == "16 MiB"
    assert plot_parts.format_bytes(1536) == "1.5 KiB"


def test_a_figure_drawn_without_axes_is_not_registered_with_pyplot():
    """Notebooks show a returned figure once; one registered with pyplot would show twice and leak."""
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig, ax = plot_parts._axes(None)
    assert ax.figure is fig and plt.get_fignums() == before
    given = plt.figure().add_subplot()
    try:
        assert plot_parts._axes(given) == (given.figure, given)
    finally:
        plt.close(given.figure)


def test_one_configuration_selects_it_or_names_the_choices():
    frame = pd.DataFrame(
        {"kernel": ["a", "a", "b"], "size_bytes": [MiB, 2 * MiB, MiB], "device_name": ["cpu"] * 3, "x": [1, 2, 3]}
    )
    assert list(plot_parts.one_configuration(frame, "a", MiB, "t")["x"]) == [1]
    assert list(plot_parts.one_configuration(frame, "b")["x"]) == [3]  # one size left: no size= needed
    with pytest.raises(ConfigError, match=r"t holds several kernel values \['a', 'b'\]; pass kernel="):
        plot_parts.one_configuration(frame, what="t")
    with pytest.raises(ConfigError, match=r"no rows with kernel='c'; it holds \['a', 'b'\]"):
        plot_parts.one_configuration(frame, "c")
    with pytest.raises(ConfigError, match="different device kinds"):
        plot_parts.one_configuration(pd.concat([frame, frame.iloc[[0]].assign(device_name="gpu")]), "a", MiB)


def test_flush_colours_are_stable_and_the_cold_reference_grey():
    colours = plot_parts.flush_colors(["none", "cold-reference", "l2-read", "none"])
    assert colours == plot_parts.flush_colors(["l2-read", "none", "cold-reference"])  # not by order of arrival
    assert colours["cold-reference"] == "#7f7f7f"
    assert colours["l2-read"] != colours["none"] and "#7f7f7f" not in (colours["l2-read"], colours["none"])


def test_text_from_run_files_is_drawn_literally():
    assert plot_parts.plain_text("k$\\foo$") == "k\\$\\foo\\$" and plot_parts.plain_text(3) == "3"
