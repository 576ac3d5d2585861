"""The host's load, read per chunk (``devices.telemetry.HostLoad``), against a real busy process."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from hipexplore.devices.telemetry import HostLoad, Reading, Telemetry, WithHostLoad

if not os.path.exists("/proc/stat"):
    from conftest import need

    need("Linux /proc/stat", "the host load is read from it (devices.telemetry.HostLoad)")


def test_a_busy_process_shows_as_others_load() -> None:
    host = HostLoad()
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start spinning
        host.read()
        loads, shares = [], []
        for _ in range(5):
            time.sleep(0.2)
            load, share, steal = host.read()
            loads.append(load)
            shares.append(share)
            assert 0.0 <= steal <= 1.0
    finally:
        busy.kill()
        busy.wait()
    ncpu = os.cpu_count() or 1
    # one spinning process is 1/ncpu of all CPU time; this (sleeping) process's own time is not counted
    assert max(shares) >= 0.8 / ncpu, shares
    assert max(loads) >= 1.0, loads


def test_readings_carry_the_host_load_beside_the_device_clock() -> None:
    class Fixed(Telemetry):
        max_clock_mhz = 1000.0

        def read(self) -> Reading:
            return Reading(clock_mhz=990.0, temp_c=50.0, power_w=100.0)

    t = WithHostLoad(Fixed())
    r = t.read()
    assert (r.clock_mhz, r.temp_c, r.power_w) == (990.0, 50.0, 100.0)
    assert r.host_load >= 0 and t.available
