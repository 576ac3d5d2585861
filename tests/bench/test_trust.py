"""The trust rules' arithmetic and texts (``hipexplore.bench.trust``): the physical floor, the launch
floor, faster-than-the-cold-reference, the flag lines in a warning, the host's bandwidth figure.
The rules themselves against real hostile kernels: tests/hostile/test_hostile_kernels.py (host) and
tests/gpu/test_gpu_hostile.py (GPU)."""

from __future__ import annotations

import math

import pytest

from hipexplore.bench import trust
from hipexplore.bench.trust import (
    FLAG,
    FLOOR_MARGIN,
    flag,
    flags_of,
    floor_flags,
    host_bandwidth,
    is_flagged,
    reference_flag,
    with_flags,
)

MIB = 1 << 20
#: an H200's peak from its memory clock and bus width (3201 MHz x 6144 bits x 2)
H200 = (2 * 3201e6 * 6144 / 8 / 1e9, "memory clock 3201000 kHz x 6144-bit bus x 2 (DDR)")


def _row(
    median_us: float,
    *,
    p5_us: float | None = None,
    floor_us: float = math.nan,
    flush: str = "l2-read",
    rotating: str = "1",
    timer: str = "events",
) -> dict:
    return {
        "median_s": median_us * 1e-6,
        "p5_s": (p5_us if p5_us is not None else median_us) * 1e-6,
        "floor_s": floor_us * 1e-6,
        "flush": flush,
        "rotating_requested": rotating,
        "timer": timer,
    }


def test_the_physical_floor_is_input_bytes_over_the_peak_net_of_the_launch_floor():
    inputs = 32 * MIB  # a 16 MiB triad's two inputs
    least = inputs / (H200[0] * 1e9)
    assert least == pytest.approx(6.82e-6, rel=0.01)
    # an honest cold launch: 88% of the peak (the H200's 256 MiB l2-read triad), plus a 2.8 us launch floor
    honest = _row(least / 0.88 * 1e6 + 2.8, floor_us=2.8)
    assert floor_flags(honest, inputs, H200) == []
    # a launch that read nothing: the floor plus a third of a microsecond
    cheat = floor_flags(_row(3.1, floor_us=2.8), inputs, H200)
    assert len(cheat) == 1 and cheat[0].startswith(
        f"{FLAG}: below the physical floor: median 0.3 us net of the launch floor"
    )
    assert (
        "reading its 32 MiB of inputs from memory at the peak 4,917 GB/s" in cheat[0]
        and "takes at least 6.82 us" in cheat[0]
    )
    assert "asked cold (flush l2-read)" in cheat[0]
    # just above the margin is not flagged, just below is
    edge = least * FLOOR_MARGIN * 1e6
    assert floor_flags(_row(2.8 + edge * 1.01, floor_us=2.8), inputs, H200) == []
    assert floor_flags(_row(2.8 + edge * 0.99, floor_us=2.8), inputs, H200) != []


def test_a_fifth_of_the_launches_below_the_floor_is_flagged_by_the_5th_percentile():
    inputs = 32 * MIB
    got = floor_flags(_row(12.0, p5_us=3.0, floor_us=2.8), inputs, H200)
    assert len(got) == 1 and "5th percentile 0.2 us" in got[0]


@pytest.mark.parametrize("flush, rotating", [("none", "1"), ("none", "5"), ("icache", "1")])
def test_no_physical_floor_without_a_cold_promise(flush, rotating):
    """Warm data may be read at the L2's speed: only a cold promise bounds the time by memory."""
    assert floor_flags(_row(3.0, floor_us=2.8, flush=flush, rotating=rotating), 32 * MIB, H200) == []


def test_rotating_auto_is_a_cold_promise_too():
    assert floor_flags(_row(3.0, floor_us=2.8, flush="none", rotating="auto"), 32 * MIB, H200) != []


def test_a_floor_shorter_than_a_microsecond_is_not_checked():
    """1 MiB of inputs at 4.9 TB/s is 0.21 us: a few event ticks, so the rule would read noise."""
    assert floor_flags(_row(2.81, floor_us=2.8), MIB, H200) == []


def test_no_floor_without_a_peak_or_without_inputs():
    assert floor_flags(_row(0.1), 32 * MIB, (math.nan, "unknown")) == []
    assert floor_flags(_row(0.1), 0, H200) == []


def test_the_in_kernel_timer_is_compared_whole():
    """In-kernel rows exclude the launch: no floor is subtracted, and the launch-floor rule does not apply."""
    row = _row(6.5, timer="in-kernel")
    assert floor_flags(row, 32 * MIB, H200) == [] and floor_flags(_row(3.0, timer="in-kernel"), 32 * MIB, H200) != []


def test_below_half_the_launch_floor_means_nothing_ran_on_the_timed_stream():
    got = floor_flags(_row(0.06, floor_us=2.7, flush="none"), 0, H200)
    assert got == [
        f"{FLAG}: below the launch floor: median 0.06 us, while an empty kernel's launch takes 2.7 us: the work "
        f"did not run on the timed stream"
    ]
    assert floor_flags(_row(1.5, floor_us=2.7, flush="none"), 0, H200) == []  # a fast honest kernel: above half


def _biased(bias: float, lo: float, hi: float, **kw) -> dict:
    return {
        "bias": bias,
        "bias_ci_low": lo,
        "bias_ci_high": hi,
        "flush": kw.get("flush", "none"),
        "rotating_requested": kw.get("rotating", "auto"),
    }


def test_faster_than_the_cold_reference_under_a_cold_promise_is_flagged():
    got = reference_flag(_biased(-0.18, -0.2, -0.16))
    assert got == [
        f"{FLAG}: faster than its cold reference: -18.0% [-20.0%, -16.0%] against the same kernel after an l2-read "
        f"flush, though asked cold (rotating auto): its inputs did not all come from memory"
    ]
    # within the margin, or an interval that reaches it, or no cold promise: nothing
    assert reference_flag(_biased(-0.04, -0.045, -0.035)) == []
    assert reference_flag(_biased(-0.08, -0.12, -0.04)) == []
    assert reference_flag(_biased(-0.3, -0.32, -0.28, rotating="4")) == []
    assert reference_flag(_biased(math.nan, math.nan, math.nan)) == []
    assert reference_flag({**_biased(-0.3, -0.32, -0.28), "flush": "cold-reference"}) == []


def test_flag_lines_are_one_part_of_a_warning_each():
    line = flag("the check failed: out[3] = nan; 4 of 8 elements differ;\nsee above")
    assert line == f"{FLAG}: the check failed: out[3] = nan, 4 of 8 elements differ, see above"
    row = {"warning": with_flags("noisy: IQR/median 12% > 10%", [line, line, flag("second")])}
    assert row["warning"] == f"noisy: IQR/median 12% > 10%; {line}; {FLAG}: second"
    assert flags_of(row["warning"]) == [line, f"{FLAG}: second"]
    assert is_flagged(row) and not is_flagged({"warning": "noisy"})
    assert is_flagged({"warning": "", "cold_promise": "broken"}) and not is_flagged(
        {"warning": None, "cold_promise": "kept"}
    )


def test_the_hosts_declared_bandwidth_is_used_as_given(monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_HOST_BANDWIDTH", str(200 * 10**9))
    assert host_bandwidth() == (200.0, "declared: HIPEXPLORE_HOST_BANDWIDTH")


def test_the_hosts_measured_bandwidth_is_a_loose_bound(monkeypatch):
    monkeypatch.delenv("HIPEXPLORE_HOST_BANDWIDTH", raising=False)
    monkeypatch.setattr(trust, "_HOST_BW", {})
    assert host_bandwidth(measure=False) == (math.nan, "not measured")
    gbs, source = host_bandwidth()
    assert gbs > 0 and source.startswith("measured: one thread copied ") and f"times {trust.HOST_MARGIN}" in source
    assert host_bandwidth() == (gbs, source)  # once per process


def test_an_overridden_host_llc_has_no_floor(monkeypatch):
    from hipexplore.devices.host import HostDevice

    monkeypatch.delenv("HIPEXPLORE_HOST_BANDWIDTH", raising=False)
    gbs, why = trust.floor_bandwidth(HostDevice(llc_bytes=MIB))
    assert math.isnan(gbs) and "overridden" in why


def test_a_callable_is_held_to_the_traffic_it_declares_with_a_wider_margin(monkeypatch):
    """A callable's buffers are opaque, so its physical floor is its declared ``bytes_per_launch``
    (a launcher that runs its work on a stream of its own reads as ~0 net of the launch floor once
    that work slows the events past half the floor: KernelBench #106), with the wider
    ``DECLARED_FLOOR_MARGIN`` (a pipeline's declared traffic may count workspace that stays in the L2)."""
    import numpy as np

    from hipexplore.bench.callable import callable_kernel
    from hipexplore.devices import get_device

    monkeypatch.setenv("HIPEXPLORE_HOST_BANDWIDTH", str(100 * 10**9))
    dev = get_device("host")
    n = 16 * MIB  # 192 MiB declared: 2.01 ms at 100 GB/s
    spec = callable_kernel(
        lambda x, out: None,
        lambda n, i: (np.zeros(4, np.float32), np.zeros(4, np.float32)),
        bytes_per_launch="12*n",
        name="declared_floor",
        register_it=False,
    )
    least_us = 12 * n / 100e9 * 1e6
    skipped = trust.row_floor_flags(_row(3.0, floor_us=2.8), spec, n, dev)
    assert len(skipped) == 1 and "moving the 192 MiB a launch declares (bytes_per_launch)" in skipped[0]
    # the margin is the declared one: just above a quarter of the floor passes, just below is flagged
    edge = least_us * trust.DECLARED_FLOOR_MARGIN
    assert trust.row_floor_flags(_row(2.8 + edge * 1.01, floor_us=2.8), spec, n, dev) == []
    assert trust.row_floor_flags(_row(2.8 + edge * 0.99, floor_us=2.8), spec, n, dev) != []
    # an honest launch at half the peak, and no cold promise: nothing
    assert trust.row_floor_flags(_row(2.8 + least_us * 2, floor_us=2.8), spec, n, dev) == []
    assert trust.row_floor_flags(_row(3.0, floor_us=2.8, flush="none", rotating="1"), spec, n, dev) == []


class _Persisting:
    """The one driver call the guard makes, as the CUDA device answers it: what is set now, cleared
    when asked (``reset_l2_persistence``); ``set`` is what another process or the kernel left."""

    def __init__(self) -> None:
        self.set = ""

    def reset_l2_persistence(self, clear: bool = True) -> str:
        got = self.set
        if clear:
            self.set = ""
        return got


def test_the_guard_flags_what_was_set_during_the_timed_launches_not_before_them():
    """A set-aside left by another process (ncu's replay) or a launcher's untimed first call is
    cleared before the run's first chunk without a flag; one set between chunks is flagged."""
    dev = _Persisting()
    guard = trust.L2Guard(dev)
    dev.set = "a persisting-L2 set-aside of 9600 KiB"
    guard.before_chunk(0, 0)
    assert dev.set == "" and guard.take() == [] and guard.before == ["a persisting-L2 set-aside of 9600 KiB"]
    guard.before_chunk(1, 10)
    assert guard.take() == []
    dev.set = "a persisting access-policy window of 4096 KiB on the timed stream"  # set by the timed launches
    guard.before_chunk(2, 20)
    got = guard.take()
    assert (
        len(got) == 1 and "persisting L2 was set during the timed launches (a persisting access-policy window" in got[0]
    )
    dev.set = "a persisting-L2 set-aside of 1 KiB"  # during the last chunk: the run's end finds it
    guard.after_run(3, 30)
    assert "set-aside of 1 KiB" in guard.take()[0]
    # read-only (HIPEXPLORE_L2_RESET=0): what was there before stays through the launches, so it is flagged
    ro = trust.L2Guard(dev, clear=False)
    dev.set = "a persisting-L2 set-aside of 9600 KiB"
    ro.before_chunk(0, 0)
    assert "not cleared (HIPEXPLORE_L2_RESET=0)" in ro.take()[0]
