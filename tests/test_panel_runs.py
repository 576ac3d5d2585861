"""hipexplore.panel_runs: how the sweep panel runs a sweep (a worker thread, Stop, results kept as
they arrive, a failure shown, kept and re-raised), its handlers called directly (ipywidgets would
swallow their exceptions), on the real host device and sweep.

Any "Exception in callback" log line fails the test it appears in (test_widgets' guard)."""

from __future__ import annotations

import threading
import time

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from hipexplore.errors import DeviceUnavailable, HipexploreError
from hipexplore.panel_runs import split_result
from test_widgets import no_swallowed_callback_errors, small_panel  # noqa: F401 (an autouse fixture)


def test_split_result_accepts_the_shapes_a_sweep_hands_over():
    s = pd.DataFrame({"a": [1]})
    assert split_result((s, s))[0] is s
    samples, summary = split_result({"samples": s, "summary": {"x": 1}})
    assert samples is s and summary.loc[0, "x"] == 1

    class R:
        samples = s
        summary = pd.Series({"x": 2})

    assert split_result(R())[1].iloc[0]["x"] == 2


def test_a_bug_in_the_runner_is_shown_kept_and_reraised():
    def broken(**kw):
        kw["on_result"]((pd.DataFrame(), None))
        raise ZeroDivisionError("bug in the sweep")

    panel = small_panel(runner=broken)
    panel.run_button.click()
    with pytest.raises(ZeroDivisionError, match="bug in the sweep"):
        panel.wait(timeout=30)
    assert isinstance(panel.error, ZeroDivisionError)
    assert "ZeroDivisionError" in panel.errors.value and "traceback" in panel.errors.value
    assert panel.progress.bar_style == "danger"
    assert not panel.run_button.disabled and panel.stop_button.disabled


def test_an_unexpected_error_in_the_click_handler_is_not_swallowed(monkeypatch):
    panel = small_panel()
    monkeypatch.setattr(panel, "params", lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):  # the handler itself (Button.click's dispatcher would log it instead)
        panel._on_run_clicked(None)
    assert "ZeroDivisionError" in panel.errors.value


def test_an_absent_device_is_reported_in_the_panel():
    from conftest import NOT_REQUIRED, need

    panel = small_panel(device="hip")
    try:
        from hipexplore.devices import get_device

        get_device("hip").close()
    except DeviceUnavailable:
        pass
    else:
        need(
            "a machine without a HIP device",
            "an AMD GPU is here: the absent-device error cannot be produced",
            flag=NOT_REQUIRED,
        )
    panel.run_button.click()
    with pytest.raises(HipexploreError):
        panel.wait(timeout=60)
    assert "DeviceUnavailable" in panel.errors.value


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
    panel.run_button.click()
    assert first.wait(120)
    assert panel.running and not panel.stop_button.disabled
    panel.stop_button.click()
    panel.wait(timeout=300)
    done = panel.summary
    # the first configuration, then the reference its samples were taken against (kept on stop)
    assert list(done["flush"]) == ["none", "cold-reference"]
    assert panel.status.value.startswith("stopped") and panel.progress.bar_style == "warning"
    assert panel.progress.value == 2 and panel.progress.max == 13
