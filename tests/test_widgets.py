"""hipexplore.widgets: the sweep panel built, its handlers called directly (ipywidgets would
swallow their exceptions) and its live plots, on the real host device and sweep. (The checks before
Run: test_panel_checks.py; running a sweep: test_panel_runs.py; the fields: test_panel_fields.py.)

Any "Exception in callback" log line fails the test it appears in.
"""

from __future__ import annotations

import logging

import matplotlib

matplotlib.use("Agg")

import pytest

from hipexplore.widgets import SweepPanel


@pytest.fixture(autouse=True)
def no_swallowed_callback_errors(caplog):
    """ipywidgets logs "Exception in callback" instead of raising: treat that line as a failure."""
    caplog.set_level(logging.WARNING)
    yield
    bad = [r.getMessage() for r in caplog.records if "Exception in callback" in r.getMessage()]
    assert not bad, f"a widget callback raised: {bad}"


def small_panel(**kw) -> SweepPanel:
    args = dict(device="host", kernel="triad", sizes="64KiB", rotating="1, 2", flush=("none", "l2-read"), iterations=8)
    args.update(kw)
    return SweepPanel(**args)


def test_controls_offer_devices_streaming_kernels_and_flush_modes():
    panel = small_panel()
    assert {"auto", "host"} <= set(panel.device.options)
    assert "triad" in panel.kernel.options and "spin" not in panel.kernel.options
    assert "l2-read" in panel.flush.options
    assert panel.params() == {
        "device": "host",
        "kernels": "triad",
        "sizes": [64 << 10],
        "rotating": [1, 2],
        "flush": ["none", "l2-read"],
        "iterations": 8,
    }


def test_bad_input_is_shown_in_the_panel_and_nothing_runs():
    calls = []
    panel = small_panel(runner=lambda **kw: calls.append(kw))
    panel.rotating.value = "1, zero"
    panel.run_button.click()  # a user error: shown, not raised
    assert "ConfigError" in panel.errors.value and "zero" in panel.errors.value
    assert calls == [] and not panel.running
    panel.rotating.value = "1"
    panel.flush.value = ()
    panel.run_button.click()
    assert "no flush mode selected" in panel.errors.value


def test_clicking_the_real_button_with_bad_input_logs_no_callback_exception():
    panel = small_panel(runner=lambda **kw: None)
    panel.sizes.value = "lots"
    panel.run_button.click()  # through ipywidgets' own dispatcher
    assert "ConfigError" in panel.errors.value and "'lots'" in panel.errors.value


def test_the_swallowed_exception_guard_sees_what_ipywidgets_logs(caplog):
    """The autouse guard relies on this log line; check ipywidgets still writes it."""
    panel = small_panel()
    panel.params = lambda: 1 / 0  # a bug in the click path
    panel.run_button.click()
    assert any("Exception in callback" in r.getMessage() for r in caplog.records)
    assert "ZeroDivisionError" in panel.errors.value  # shown in the panel as well
    caplog.clear()


def test_run_on_the_host_fills_progress_plots_and_frames():
    panel = small_panel()
    panel.run_button.click()
    panel.wait(timeout=300)
    assert panel.error is None, panel.errors.value
    summary, samples = panel.summary, panel.samples
    assert set(summary["flush"]) >= {"none", "l2-read"}
    assert set(summary.loc[summary["flush"] != "cold-reference", "rotating"]) == {1, 2}
    assert (samples["device"] == "host:0").all() and len(samples) >= 4 * 8
    # 4 settings + the cold reference, each in its 3 units: the bar counts (configuration, unit)s
    assert panel.progress.value == panel.progress.max == 5 * 3
    assert panel.progress.bar_style == "success" and panel.status.value.startswith("done")
    assert bytes(panel.noise_image.value).startswith(b"\x89PNG") and bytes(panel.detail_image.value).startswith(
        b"\x89PNG"
    )
    assert panel.errors.value == ""
    # the host's load beside the noise (issue 49): judged against this host's cores, from the samples' own readings
    import os

    from hipexplore.bench.hostload import load_summary

    found = load_summary(samples, os.cpu_count(), kernel="triad")
    assert found is not None and found.chunks > 0
    assert 'class="hx-load"' in panel.load_info.value and found.answer().split(":")[0] == "Host load"
    assert f"all {os.cpu_count()} cores" in panel.load_info.value, panel.load_info.value


def test_the_resolution_field_reaches_the_sweep_and_a_bad_value_is_named():
    """The panel's resolution field is ``--resolution``: a real host sweep given an unreachable
    precision takes extra units (more than the 3 planned) and records what it asked and why it
    stopped; a bad value is one line in the panel naming it, and nothing runs."""
    panel = small_panel(rotating="1", flush=("none",), iterations=12, resolution="0.01%")
    assert panel.params()["resolution"] == pytest.approx(0.0001)
    panel.run(blocking=True)
    assert panel.error is None, panel.errors.value
    samples = panel.samples
    assert samples.loc[samples["flush"] == "none", "pass_index"].nunique() > 3
    calls = []
    bad = small_panel(runner=lambda **kw: calls.append(kw), resolution="60%")
    bad.run_button.click()
    assert "resolution must be 0 (off) or a half-width below 50%" in bad.errors.value and "'60%'" in bad.errors.value
    assert calls == []
    assert "resolution" not in small_panel().params()


def test_live_plots_are_redrawn_at_most_every_gap_and_in_full_at_the_end(monkeypatch):
    """Two PNGs per result cost more than a small configuration measures: while a run goes on, the
    plots are redrawn at most every ``REDRAW_GAP_S`` (the first drawable result at once), and the
    end of the run redraws them with every row. With the gap longer than any run: one live drawing,
    then the final one."""
    from hipexplore import widgets
    from hipexplore.bench.sweep import sweep

    monkeypatch.setattr(widgets, "REDRAW_GAP_S", 1e9)
    seen = []

    def runner(**kw):
        forward = kw.pop("on_result")

        def on_result(row):
            forward(row)
            seen.append((bytes(panel.noise_image.value), bytes(panel.detail_image.value)))

        return sweep(**kw, on_result=on_result, progress=False)

    panel = small_panel(runner=runner)
    panel.run(blocking=True)
    assert panel.error is None, panel.errors.value
    drawn = [images for images in seen if any(images)]
    assert len(seen) == 15 and drawn and len(set(drawn)) == 1, f"{len(seen)} results, {len(set(drawn))} live drawings"
    final = (bytes(panel.noise_image.value), bytes(panel.detail_image.value))
    assert all(image.startswith(b"\x89PNG") for image in final) and final != drawn[0]


def test_the_names_users_import_from_widgets_are_the_panel_modules_own():
    """``from hipexplore.widgets import SweepPanel, parse_sizes, ...`` (the notebooks, the docs) keeps
    working: each re-exported name is the object its module defines."""
    from hipexplore import panel_fields, panel_runs, widgets

    for name in ("parse_rotating", "parse_size", "parse_sizes"):
        assert getattr(widgets, name) is getattr(panel_fields, name), name
    assert widgets.split_result is panel_runs.split_result
    assert set(widgets.__all__) == {"SweepPanel", "parse_rotating", "parse_size", "parse_sizes", "split_result"}
    assert issubclass(widgets.SweepPanel, (panel_runs.PanelRuns,)) and widgets.SweepPanel.__module__ == widgets.__name__
