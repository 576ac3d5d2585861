"""hipexplore.widgets: the sweep panel's handlers, called directly (ipywidgets would swallow
their exceptions), on the real host device and sweep.

Any "Exception in callback" log line fails the test it appears in.
"""
from __future__ import annotations

import logging
import threading
import time

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from hipexplore.errors import ConfigError, DeviceUnavailable, HipexploreError
from hipexplore.widgets import SweepPanel, parse_rotating, parse_size, parse_sizes, split_result


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
    assert panel.params() == {"device": "host", "kernels": "triad", "sizes": [64 << 10], "rotating": [1, 2],
                              "flush": ["none", "l2-read"], "iterations": 8}


def test_parsers_accept_units_lists_and_auto():
    assert parse_size("16MiB") == 16 << 20
    assert parse_size("512k") == 512 << 10
    assert parse_size(4096) == 4096
    assert parse_sizes("256KiB, 1 MiB") == [256 << 10, 1 << 20]
    assert parse_rotating("1, 2 4,auto") == [1, 2, 4, "auto"]
    for bad, match in (("0", "positive integer or 'auto'"), ("two", "'two'"), ("", "empty")):
        with pytest.raises(ConfigError, match=match):
            parse_rotating(bad)
    with pytest.raises(ConfigError, match="'12 parsecs'"):
        parse_sizes("12 parsecs")


def test_split_result_accepts_the_shapes_a_sweep_hands_over():
    s = pd.DataFrame({"a": [1]})
    assert split_result((s, s))[0] is s
    samples, summary = split_result({"samples": s, "summary": {"x": 1}})
    assert samples is s and summary.loc[0, "x"] == 1

    class R:
        samples = s
        summary = pd.Series({"x": 2})

    assert split_result(R())[1].iloc[0]["x"] == 2


def test_bad_input_is_shown_in_the_panel_and_nothing_runs():
    calls = []
    panel = small_panel(runner=lambda **kw: calls.append(kw))
    panel.rotating.value = "1, zero"
    panel._on_run_clicked(panel.run_button)  # a user error: shown, not raised
    assert "ConfigError" in panel.errors.value and "zero" in panel.errors.value
    assert calls == [] and not panel.running
    panel.rotating.value = "1"
    panel.flush.value = ()
    panel._on_run_clicked(None)
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


def test_a_bug_in_the_runner_is_shown_kept_and_reraised():
    def broken(**kw):
        kw["on_result"]((pd.DataFrame(), None))
        raise ZeroDivisionError("bug in the sweep")

    panel = small_panel(runner=broken)
    panel._on_run_clicked(None)
    with pytest.raises(ZeroDivisionError, match="bug in the sweep"):
        panel.wait(timeout=30)
    assert isinstance(panel.error, ZeroDivisionError)
    assert "ZeroDivisionError" in panel.errors.value and "traceback" in panel.errors.value
    assert panel.progress.bar_style == "danger"
    assert not panel.run_button.disabled and panel.stop_button.disabled


def test_an_unexpected_error_in_the_click_handler_is_not_swallowed(monkeypatch):
    panel = small_panel()
    monkeypatch.setattr(panel, "params", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        panel._on_run_clicked(None)
    assert "ZeroDivisionError" in panel.errors.value


def test_an_absent_device_is_reported_in_the_panel():
    panel = small_panel(device="hip")
    try:
        from hipexplore.devices import get_device

        get_device("hip").close()
        pytest.skip("this machine has a HIP device")
    except DeviceUnavailable:
        pass
    panel._on_run_clicked(None)
    with pytest.raises(HipexploreError):
        panel.wait(timeout=60)
    assert "DeviceUnavailable" in panel.errors.value


def test_run_on_the_host_fills_progress_plots_and_frames():
    panel = small_panel()
    panel._on_run_clicked(panel.run_button)
    panel.wait(timeout=300)
    assert panel.error is None, panel.errors.value
    summary, samples = panel.summary, panel.samples
    assert set(summary["flush"]) >= {"none", "l2-read"}
    assert set(summary.loc[summary["flush"] != "cold-reference", "rotating"]) == {1, 2}
    assert (samples["device"] == "host:0").all() and len(samples) >= 4 * 8
    assert panel.progress.value == panel.progress.max == 5  # 4 settings + the cold reference
    assert panel.progress.bar_style == "success" and panel.status.value.startswith("done")
    assert bytes(panel.noise_image.value).startswith(b"\x89PNG") and bytes(panel.detail_image.value).startswith(b"\x89PNG")
    assert panel.errors.value == ""


def test_stop_ends_the_sweep_early_and_keeps_what_arrived():
    """The first measured setting holds the sweep until Stop is pressed, so the stop is
    deterministic: exactly the cold reference and that one setting arrive."""
    from hipexplore.bench.sweep import sweep

    first = threading.Event()

    def runner(**kw):
        forward, should_stop = kw.pop("on_result"), kw["should_stop"]

        def on_result(row):
            forward(row)
            if row["flush"] != "cold-reference" and not first.is_set():
                first.set()
                deadline = time.monotonic() + 60
                while not should_stop() and time.monotonic() < deadline:
                    time.sleep(0.01)

        return sweep(**kw, on_result=on_result, progress=False)

    panel = small_panel(runner=runner, rotating="1, 2, 4, 8", flush=("none", "l2-write", "l2-read"), iterations=16)
    panel._on_run_clicked(None)
    assert first.wait(120)
    assert panel.running and not panel.stop_button.disabled
    panel._on_stop_clicked(panel.stop_button)
    panel.wait(timeout=300)
    done = panel.summary
    # the first configuration, then the reference its samples were taken against (kept on stop)
    assert list(done["flush"]) == ["none", "cold-reference"]
    assert panel.status.value.startswith("stopped") and panel.progress.bar_style == "warning"
    assert panel.progress.value == 2 and panel.progress.max == 13
