"""hipexplore.panel_checks: Run is checked before it starts, by the library's own rule (the buffer
sets against the iterations), and the flush modes offered follow the chosen device (issue 26.11).
On the real host device and sweep, through the panel's controls and buttons.

Any "Exception in callback" log line fails the test it appears in (test_widgets' guard)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from hipexplore.errors import ConfigError
from test_widgets import no_swallowed_callback_errors, small_panel  # noqa: F401 (an autouse fixture)


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
