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
    assert panel.params() == {
        "device": "host",
        "kernels": "triad",
        "sizes": [64 << 10],
        "rotating": [1, 2],
        "flush": ["none", "l2-read"],
        "iterations": 8,
    }


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


# -- Run is checked before it starts; flush modes follow the device (issue 26.11) ---------------------
def _recording_panel(**kw):
    calls = []
    panel = small_panel(runner=lambda **args: calls.append(args), **kw)
    return panel, calls


def test_run_is_disabled_and_starts_nothing_while_iterations_are_fewer_than_buffer_sets():
    panel, calls = _recording_panel(rotating="1, 8", iterations=4)
    assert panel.run_button.disabled and "iterations (4) &lt; 8 buffer sets" in panel.sets_hint.value
    assert "Run is disabled" in panel.sets_hint.value and panel.fix_button.layout.display == ""
    panel.run_button.click()  # a click anyway (a disabled button still dispatches here): refused before starting
    assert calls == [] and not panel.running and panel._thread is None
    # the library's own message, the one the sweep would have raised after starting
    assert "ConfigError" in panel.errors.value
    assert (
        "iterations (4) must be greater than or equal to the number of rotating buffer sets (8)" in panel.errors.value
    )
    panel.fix_button.click()
    assert panel.iterations.value == 8 and not panel.run_button.disabled and panel.fix_button.layout.display == "none"
    panel.iterations.value = 7  # typing a smaller count disables it again
    assert panel.run_button.disabled
    panel.iterations.value = 9
    panel.run_button.click()
    panel.wait(timeout=60)
    assert len(calls) == 1 and calls[0]["iterations"] == 9 and calls[0]["rotating"] == [1, 8]
    assert not panel.run_button.disabled  # enabled again after the run


def test_the_panel_blocks_exactly_what_the_sweep_refuses(monkeypatch):
    """The panel's rule is the library's: ``auto`` against the host's LLC, and a count capped by
    free memory (a 1 MiB triad set, 16 sets wanted, memory for 4) needs only the capped count."""
    from hipexplore.bench import rotating as rot
    from hipexplore.bench.sweep import sweep
    from hipexplore.devices.host import HostDevice
    from hipexplore.kernels import catalog

    spec = catalog.get("triad")
    set_bytes = spec.set_bytes(spec.elements(1 << 20))
    free = int(4.5 * set_bytes / rot.DEFAULT_MEM_FRACTION)  # the cap fits 4 sets
    monkeypatch.setattr(HostDevice, "memory_info", lambda self: (free, 2 * free))
    auto = rot.auto_count(HostDevice().llc_bytes, spec.footprint(spec.elements(64 << 10)))
    cases = [("64KiB", "auto", auto - 1), ("64KiB", "auto", auto), ("1MiB", "16", 3), ("1MiB", "16", 4)]
    for size, rotating, iterations in cases:
        panel, calls = _recording_panel(sizes=size, rotating=rotating, iterations=iterations, flush=("none",))
        try:
            sweep(
                "triad",
                [size],
                [rotating],
                ["none"],
                device="host",
                iterations=iterations,
                reference=False,
                progress=False,
                warmup_s=0,
            )
            refused = ""
        except ConfigError as exc:
            refused = str(exc)
        assert panel.run_button.disabled == bool(refused), (size, rotating, iterations, refused, panel.sets_hint.value)
        if refused:
            assert "iterations" in refused
            panel.run_button.click()
            assert calls == [] and refused in panel.errors.value
    capped = _recording_panel(sizes="1MiB", rotating="16", iterations=4)[0]
    assert "capped to 4" in capped.sets_hint.value


class _AmdLikeHost:
    """Stands in for an AMD GPU in the device list: the real host device claiming the AMD-only
    instruction-cache flushes (``instruction_cache_flush``: what the flush modes ask of a device)."""

    def __new__(cls, *args, **kwargs):
        from hipexplore.devices.host import HostDevice

        class Claims(HostDevice):
            kind = "hip"
            instruction_cache_flush = True

        return Claims()


def test_only_the_flush_modes_of_the_chosen_device_are_offered(monkeypatch):
    import hipexplore.devices as devices
    from hipexplore.bench.flush import FLUSH_MODES, flush_mode
    from hipexplore.devices.host import HostDevice

    host = HostDevice()
    on_host = tuple(m for m in FLUSH_MODES if flush_mode(m).supported_by(host))
    assert "icache" not in on_host and "inline-icache" not in on_host
    panel = small_panel(flush=("none", "icache", "l2-read"))
    assert tuple(panel.flush.options) == on_host
    assert panel.flush.value == ("none", "l2-read")  # the AMD-only mode asked for is not selected...
    assert "icache, inline-icache" in panel.flush_hint.value and "host" in panel.flush_hint.value  # ...and says why
    real = devices.get_device
    monkeypatch.setattr(
        devices, "get_device", lambda name="auto", *a, **k: _AmdLikeHost() if name == "hip" else real(name, *a, **k)
    )
    panel.device.value = "hip"
    assert set(panel.flush.options) == set(FLUSH_MODES) and panel.flush_hint.value == ""
    panel.flush.value = ("none", "icache")
    panel.device.value = "host"  # back to the host: the AMD-only mode leaves the options and the selection
    assert tuple(panel.flush.options) == on_host and panel.flush.value == ("none",)
    assert panel.params()["flush"] == ["none"]


def test_sweep_panel_hint_fix_and_images(tmp_path):
    from hipexplore.bench.rotating import auto_count
    from hipexplore.devices import get_device
    from hipexplore.widgets import SweepPanel

    panel = SweepPanel(device="host", kernel="triad", sizes="256KiB", rotating="1, auto", flush=("none",), iterations=6)
    dev = get_device("host")
    sets = auto_count(dev.llc_bytes, 3 * 256 * 1024)
    dev.close()
    assert f"auto = 256 KiB: {sets} buffer sets" in panel.sets_hint.value
    assert f"iterations (6) &lt; {sets} buffer sets" in panel.sets_hint.value
    assert panel.fix_button.layout.display == "" and panel.fix_button.description == f"set iterations to {sets}"
    assert panel.noise_image.layout.display == "none" and panel.detail_image.layout.display == "none"  # no broken icons
    panel.sizes.value = "64KiB, 128KiB"  # the hint follows the inputs
    assert "64 KiB: " in panel.sets_hint.value and "128 KiB: " in panel.sets_hint.value
    panel.fix_button.click()
    assert panel.iterations.value == auto_count(get_device("host").llc_bytes, 3 * 64 * 1024)
    assert panel.fix_button.layout.display == "none" and "&lt;" not in panel.sets_hint.value
    panel.rotating.value, panel.iterations.value = "1, 2", 8
    panel.run(blocking=True)
    assert sorted(panel.summary["size_bytes"].unique()) == [64 << 10, 128 << 10]
    assert panel.noise_image.layout.display == "" and panel.noise_image.value[:4] == b"\x89PNG"
    assert panel.placeholder.layout.display == "none"


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
