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
"""
from __future__ import annotations

import math
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
        self._h = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id)
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
        for fn in (lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                   lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
                   lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0):
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
        for fn in (lambda: smi.amdsmi_get_clock_info(h, smi.AmdSmiClkType.GFX)["clk"],
                   lambda: smi.amdsmi_get_temp_metric(h, smi.AmdSmiTemperatureType.EDGE, smi.AmdSmiTemperatureMetric.CURRENT),
                   lambda: smi.amdsmi_get_power_info(h)["current_socket_power"]):
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
        self.source = (f"sysfs cpufreq (max {self.max_clock_mhz:g} MHz)" if self.available
                       else f"none: no cpufreq under {root} (a virtual machine often has none)")

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


def for_device(device: Any) -> Telemetry:
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


def wait_for_stable_clock(telemetry: Telemetry, work: Callable[[], None], *, min_s: float, max_s: float = 2.0,
                          tolerance: float = 0.02, clock: Callable[[], float] = time.perf_counter) -> tuple[float, str]:
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
        steady = (not math.isnan(now) and not math.isnan(last) and abs(now - last) <= tolerance * max(now, 1.0)
                  and now >= THROTTLE_FRACTION * telemetry.max_clock_mhz)
        if elapsed >= min_s and steady:
            return elapsed, f"clock stable at {now:g} MHz after {elapsed:.2f} s"
        if elapsed >= max_s:
            return elapsed, f"clock not stable after {elapsed:.2f} s (last {now:g} MHz of max {telemetry.max_clock_mhz:g})"
        last = now
