"""Clock, temperature and power, read once per timed chunk, so throttling can be ruled out.

Why: a GPU's SM clock ramps up under load (the H200 read 345 MHz idle and 1980 MHz under load) and
drops when it throttles; a sample timed at a lower clock is slower for a reason that has nothing to
do with the kernel. nvbench discards samples whose SM clock is below 75% of the default clock
(``--throttle-threshold``); hipexplore records the clock of every chunk next to its samples, flags
samples below the threshold and leaves them out of the statistics by default (counted).

Sources, chosen by what is present:
  NVIDIA  NVML through ``nvidia-ml-py`` (``pynvml``): current SM clock, max SM clock, temperature,
          power; the NVML device is found by the CUDA device's PCI bus id (indexes can differ).
  AMD     ``amdsmi`` where it is installed (ROCm >= 6): current and max GFX clock, temperature, power.
  host    ``/sys/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq`` (and ``cpuinfo_max_freq``).
Anything missing reads NaN and ``source`` says why; telemetry never fails a measurement.

The host is read too, whatever the device (``HostLoad``, every chunk): how many other tasks were
runnable, the share of CPU time others used and the share stolen by a hypervisor since the last
chunk. Why: on the 2-core review VM a background process keeping one core busy moved the host
kernel's medians by up to 9% between runs, and GPU timings include host-side launch work too; a
verdict over a run whose load changed half-way says so (``verdicts.drift_check``), and the rows show
which chunks ran under load.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

NAN = math.nan
#: nvbench's throttle threshold: a clock below this fraction of the maximum is throttled
THROTTLE_FRACTION = 0.75


@dataclass(frozen=True)
class Reading:
    """One look at the device: MHz, degrees Celsius, watts (NaN when unknown)."""

    clock_mhz: float = NAN
    temp_c: float = NAN
    power_w: float = NAN
    #: other runnable tasks on the host at the reading (``/proc/stat`` procs_running less this one)
    host_load: float = NAN
    #: share of all CPUs' time since the previous reading spent busy by others (not this process)
    host_busy: float = NAN
    #: share of all CPUs' time since the previous reading stolen by the hypervisor
    host_steal: float = NAN


class Telemetry:
    """No telemetry: every reading is NaN. Subclasses read a real source."""

    source = "none"
    max_clock_mhz: float = NAN

    def read(self) -> Reading:
        return Reading()

    @property
    def available(self) -> bool:
        return not math.isnan(self.max_clock_mhz)

    def close(self) -> None:
        return None


class NvmlTelemetry(Telemetry):
    def __init__(self, pci_bus_id: str) -> None:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        self._nv = pynvml
        self._h = pynvml.nvmlDeviceGetHandleByPciBusId(
            pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id
        )
        self.max_clock_mhz = float(pynvml.nvmlDeviceGetMaxClockInfo(self._h, pynvml.NVML_CLOCK_SM))
        self.source = f"NVML (nvidia-ml-py) for PCI {pci_bus_id}: SM clock, max SM clock {self.max_clock_mhz:g} MHz"

    @classmethod
    def by_index(cls, index: int) -> "NvmlTelemetry":
        import pynvml

        pynvml.nvmlInit()
        bus = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).busId
        return cls(bus.decode() if isinstance(bus, bytes) else str(bus))

    def read(self) -> Reading:
        nv, h = self._nv, self._h
        out = []
        for fn in (
            lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
            lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
            lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
        ):
            try:
                out.append(float(fn()))
            except Exception:  # one unsupported query must not hide the others
                out.append(NAN)
        return Reading(*out)

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:
            pass


class AmdSmiTelemetry(Telemetry):
    def __init__(self, index: int) -> None:
        import amdsmi

        amdsmi.amdsmi_init()
        self._smi = amdsmi
        self._h = amdsmi.amdsmi_get_processor_handles()[index]
        info = amdsmi.amdsmi_get_clock_info(self._h, amdsmi.AmdSmiClkType.GFX)
        self.max_clock_mhz = float(info.get("max_clk", NAN))
        self.source = f"amdsmi: GFX clock, max {self.max_clock_mhz:g} MHz"

    def read(self) -> Reading:
        smi, h = self._smi, self._h
        vals = []
        for fn in (
            lambda: smi.amdsmi_get_clock_info(h, smi.AmdSmiClkType.GFX)["clk"],
            lambda: smi.amdsmi_get_temp_metric(h, smi.AmdSmiTemperatureType.EDGE, smi.AmdSmiTemperatureMetric.CURRENT),
            lambda: smi.amdsmi_get_power_info(h)["current_socket_power"],
        ):
            try:
                vals.append(float(fn()))
            except Exception:
                vals.append(NAN)
        return Reading(*vals)

    def close(self) -> None:
        try:
            self._smi.amdsmi_shut_down()
        except Exception:
            pass


class SysfsCpuTelemetry(Telemetry):
    """The host CPU: the current frequency of the CPU this process runs on (kHz in sysfs)."""

    def __init__(self, root: Path = Path("/sys/devices/system/cpu")) -> None:
        self._root = root
        mx = self._khz(0, "cpuinfo_max_freq")
        self.max_clock_mhz = mx / 1000.0 if mx > 0 else NAN
        self.source = (
            f"sysfs cpufreq (max {self.max_clock_mhz:g} MHz)"
            if self.available
            else f"none: no cpufreq under {root} (a virtual machine often has none)"
        )

    def _khz(self, cpu: int, name: str) -> float:
        try:
            return float((self._root / f"cpu{cpu}" / "cpufreq" / name).read_text().strip())
        except (OSError, ValueError):
            return NAN if name != "cpuinfo_max_freq" else -1.0

    def read(self) -> Reading:
        if not self.available:
            return Reading()
        import os

        try:
            cpu = os.sched_getcpu()
        except (AttributeError, OSError):
            cpu = 0
        cur = self._khz(cpu, "scaling_cur_freq")
        return Reading(clock_mhz=cur / 1000.0 if cur == cur else NAN)


class HostLoad:
    """The host's load between two readings, from ``/proc/stat`` and this process's CPU times.

    ``read()`` returns (other runnable tasks now, share of CPU time busy by others, share stolen)
    since the previous call; NaN where ``/proc`` is absent (not Linux) or on the first call's shares.
    """

    def __init__(self, proc: Path = Path("/proc")) -> None:
        self._proc = proc
        self._last: tuple[float, float, float, float] | None = None
        self._tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        self.read()

    def _stat(self) -> tuple[float, float, float, float, float] | None:
        try:
            text = (self._proc / "stat").read_text()
        except OSError:
            return None
        cpu = running = None
        for line in text.splitlines():
            if line.startswith("cpu "):
                cpu = [float(v) for v in line.split()[1:]]
            elif line.startswith("procs_running"):
                running = float(line.split()[1])
        if cpu is None or running is None or len(cpu) < 4:
            return None
        idle = cpu[3] + (cpu[4] if len(cpu) > 4 else 0.0)
        steal = cpu[7] if len(cpu) > 7 else 0.0
        total = sum(cpu[:8])
        own = sum(os.times()[:2]) * self._tick  # this process's user + system time, in ticks
        return total, idle, steal, own, running

    def read(self) -> tuple[float, float, float]:
        now = self._stat()
        if now is None:
            return NAN, NAN, NAN
        total, idle, steal, own, running = now
        last, self._last = self._last, (total, idle, steal, own)
        load = max(0.0, running - 1.0)
        if last is None or total <= last[0]:
            return load, NAN, NAN
        span = total - last[0]
        busy_others = (span - (idle - last[1]) - (steal - last[2]) - (own - last[3])) / span
        return load, min(1.0, max(0.0, busy_others)), min(1.0, max(0.0, (steal - last[2]) / span))


class WithHostLoad(Telemetry):
    """A device's telemetry with the host's load added to every reading (``HostLoad``)."""

    def __init__(self, inner: Telemetry, host: HostLoad | None = None) -> None:
        self.inner = inner
        self.host = host or HostLoad()
        self.max_clock_mhz = inner.max_clock_mhz
        self.source = f"{inner.source}; host load from /proc/stat"

    def read(self) -> Reading:
        r = self.inner.read()
        load, busy, steal = self.host.read()
        return Reading(r.clock_mhz, r.temp_c, r.power_w, load, busy, steal)

    def close(self) -> None:
        self.inner.close()


def for_device(device: Any) -> Telemetry:
    """The best telemetry for ``device`` plus the host's load (``WithHostLoad``)."""
    return WithHostLoad(_device_telemetry(device))


def _device_telemetry(device: Any) -> Telemetry:
    """The best telemetry for ``device`` (a ``Telemetry`` that reads NaN when none is available)."""
    why = ""
    try:
        if device.kind == "cuda":
            try:
                return NvmlTelemetry(device.pci_bus_id)
            except Exception:
                return NvmlTelemetry.by_index(device.index)
        if device.kind == "hip":
            return AmdSmiTelemetry(device.index)
        if device.kind == "host":
            return SysfsCpuTelemetry()
    except Exception as exc:  # a missing package or an unsupported query: no telemetry, said so
        why = f": {type(exc).__name__}: {exc}"
    t = Telemetry()
    t.source = f"none for {device.kind} device{why}"
    return t


def wait_for_stable_clock(
    telemetry: Telemetry,
    work: Callable[[], None],
    *,
    min_s: float,
    max_s: float = 2.0,
    tolerance: float = 0.02,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, str]:
    """Run ``work()`` (a batch of launches, synchronized) until ``min_s`` have passed and the clock
    read twice in a row within ``tolerance`` of each other, not throttled (>= ``THROTTLE_FRACTION``
    of its maximum), or ``max_s``.
    Returns (seconds spent, what happened). MI300 parts need >= 400 ms to ramp (Primbench)."""
    t0 = clock()
    last = NAN
    while True:
        work()
        elapsed = clock() - t0
        if not telemetry.available:
            if elapsed >= min_s:
                return elapsed, "warm-up by time only (no clock telemetry)"
            continue
        now = telemetry.read().clock_mhz
        steady = (
            not math.isnan(now)
            and not math.isnan(last)
            and abs(now - last) <= tolerance * max(now, 1.0)
            and now >= THROTTLE_FRACTION * telemetry.max_clock_mhz
        )
        if elapsed >= min_s and steady:
            return elapsed, f"clock stable at {now:g} MHz after {elapsed:.2f} s"
        if elapsed >= max_s:
            return (
                elapsed,
                f"clock not stable after {elapsed:.2f} s (last {now:g} MHz of max {telemetry.max_clock_mhz:g})",
            )
        last = now
