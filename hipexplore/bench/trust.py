"""Trust checks: whether a configuration's timing can be believed, without trusting the kernel.

Why: a verdict goes into a code review, and benchmark harnesses for GPU kernels are gamed in public
(a persisting-L2 window that survives the flush, karpathy/llm.c #851 and gpu-mode pygpubench #49;
an output cache or a result replay, flashinfer-bench-starter-kit #21, gpu-mode reference-kernels
#162, tensara #238; work on a side stream, KernelBench #106). A cold claim that rests on an average
over launches of a kernel that behaves once is not a claim. So every timed configuration is checked
by rules that need nothing from the kernel but its declared roles, and a rule that fires adds one
line starting ``untrusted timing:`` to the row's ``warning`` (which the report's headline counts):

- ``L2Guard``: before every timed chunk the persisting-L2 state is cleared (``Device.
  reset_l2_persistence``: the set-aside, the timed stream's access-policy window, persisting lines),
  and what was found set is a flag: lines marked persisting survive any flush.
- the sampled output check (``bench.sampled``): launches sampled across the run, on fresh inputs
  with poisoned outputs, compared with the reference.
- ``floor_flags``: under a cold promise (``counters.record.asks_cold``: a flush that evicts, or
  rotating ``auto``) a launch must read its inputs from memory, so it cannot take less than
  input bytes / peak bandwidth (the device's own figure: memory clock x bus width on a GPU; on the
  host a declared or measured one, ``host_bandwidth``); and an events time below half an empty
  kernel's launch (``floor_s``) means nothing ran on the timed stream.
- ``reference_flag``: under a cold promise a configuration cannot be faster than the same kernel
  timed after an l2-read flush (the cold reference) by more than ``REFERENCE_MARGIN``, with its 95%
  interval.
- the counter pass (``counters.record``): a launch that read less than its inputs from DRAM under a
  cold promise breaks the promise (``cold_promise`` = ``broken``), per launch, not only on average.

What none of them catches is said in docs/guide/harness.md ("Hostile kernels").
"""

from __future__ import annotations

import math
import os
import time
from typing import Any, Mapping

from ..devices.base import Device
from ..errors import BenchmarkError
from ..schema import Configuration, Timer

#: how every flag starts (what ``is_flagged`` and the headline look for)
FLAG = "untrusted timing"
#: a time below this fraction of its physical floor is flagged (the floor is the theoretical peak:
#: honest kernels reach at most ~0.93 of it, so 0.8 leaves room for a peak figure a little low)
FLOOR_MARGIN = 0.8
#: the margin for a callable's declared traffic (``bytes_per_launch``): it may count intermediates
#: that stay in the L2 (a pipeline's workspace), so only a launch 4x faster than moving it at the
#: peak is flagged -- a launcher whose work ran elsewhere reads as ~0 net of the launch floor
DECLARED_FLOOR_MARGIN = 0.25
#: a floor shorter than this is not checked (a few event ticks: the rule would read noise)
FLOOR_RESOLVABLE_S = 1e-6
#: an events median below this fraction of the empty kernel's launch floor: nothing ran on the stream
LAUNCH_FLOOR_FRACTION = 0.5
#: a cold-promised configuration whose 95% interval lies this much below the cold reference is flagged
REFERENCE_MARGIN = 0.05


class StatefulKernel(BenchmarkError):
    """The output check before timing saw a kernel change its behaviour between its first and second
    launch (its role-check launch wrote every output, the reference check's left some unwritten): it
    keeps state between launches. The unit flags its rows instead of failing (``SweepRun.check``)."""


def flag(text: str) -> str:
    """One flag line: ``untrusted timing: <why>``, with no ``; `` inside (a warning's parts are
    joined by ``; ``, so a flag stays one part: ``flags_of`` finds it whole)."""
    return f"{FLAG}: " + " ".join(str(text).split()).replace("; ", ", ")


def flags_of(warning: Any) -> list[str]:
    """The flag lines of a row's ``warning`` (its parts, joined by ``; ``, that are flags), in order."""
    return [part.strip() for part in str(warning or "").split("; ") if part.strip().startswith(FLAG + ":")]


def is_flagged(row: Mapping[str, Any]) -> bool:
    """Whether a summary row's timing is flagged: a flag line in its warning, or a broken cold promise."""
    return bool(flags_of(row.get("warning"))) or str(row.get("cold_promise") or "") == "broken"


def with_flags(warning: Any, lines: list[str]) -> str:
    """``warning`` (a result's) with ``lines`` joined into it, each once."""
    warning = str(warning or "")
    for line in lines:
        if line and line not in warning:
            warning = "; ".join(filter(None, [warning, line]))
    return warning


def asks_cold(row: Mapping[str, Any]) -> str:
    """Why ``row`` promises cold inputs ("flush l2-read", "rotating auto"), or "" (``counters.record``)."""
    from .counters.record import asks_cold as why

    return why(row.get("rotating_requested", ""), str(row.get("flush", "")))


class L2Guard:
    """The persisting-L2 reset before every timed chunk (a ``TimingOptions`` hook, so the trials,
    the cold reference and the launch floor all run under it); ``take()`` hands over the flag of
    what it found set since the last ``take`` ("" when nothing). ``clear=False`` only reads.

    The reset before a run's first chunk is silent (what it finds is kept in ``before``, not
    flagged): that state was set before the run's timed launches -- by another process on the same
    GPU (a set-aside of 9600 KiB found so flagged 3 of 174 honest rows on an H100, 2026-12-07), or by a
    launcher's untimed first call -- and is cleared before they begin, so it cannot touch them;
    anything set during them is found by the next chunk's reset or the run's end. Read-only
    (``clear=False``) flags it: nothing clears it then."""

    def __init__(self, device: Device, clear: bool = True) -> None:
        self.device, self.clear = device, clear
        self.found: list[str] = []
        self.before: list[str] = []

    def _look(self) -> None:
        got = self.device.reset_l2_persistence(self.clear)
        if got and got not in self.found:
            self.found.append(got)

    def before_chunk(self, chunk: int, launched: int) -> None:
        if chunk == 0 and self.clear:
            got = self.device.reset_l2_persistence(True)
            if got and got not in self.before:
                self.before.append(got)
            return
        self._look()

    def after_run(self, chunks: int, launched: int) -> None:
        self._look()

    def take(self) -> list[str]:
        if not self.found:
            return []
        what = "; ".join(self.found)
        self.found = []
        done = "cleared before every chunk" if self.clear else "not cleared (HIPEXPLORE_L2_RESET=0)"
        return [
            flag(
                f"persisting L2 was set during the timed launches ({what}): lines marked persisting survive "
                f"the flush, so the inputs may not have come from memory; {done}"
            )
        ]


def guard_for(device: Device) -> L2Guard | None:
    """The unit's ``L2Guard`` (None on a device without persisting-L2 control: the host)."""
    from .. import settings

    if device.kind == "host":
        return None
    return L2Guard(device, clear=bool(settings.L2_RESET.get()))


# -- the physical floors -----------------------------------------------------------------------

_HOST_BW: dict[str, tuple[float, str]] = {}
#: the measured host bound is this many times one thread's copy bandwidth times the CPU count: a
#: shared, loaded host measures low, and a floor must never flag an honest kernel
HOST_MARGIN = 4


def host_bandwidth(measure: bool = True) -> tuple[float, str]:
    """(GB/s, where it came from) for the host's floor: ``HIPEXPLORE_HOST_BANDWIDTH`` (bytes per
    second) when set, else measured once per process: the best of two one-thread copies of 256 MiB
    (bytes read + written / time) times the CPU count times ``HOST_MARGIN``, a loose bound (it
    catches a launch that skipped its work at large sizes, never an honest one). NaN when not
    measured (``measure=False``)."""
    from .. import settings

    declared = settings.HOST_BANDWIDTH.get()
    if declared:
        return float(declared) / 1e9, "declared: HIPEXPLORE_HOST_BANDWIDTH"
    if "measured" in _HOST_BW or not measure:
        return _HOST_BW.get("measured", (math.nan, "not measured"))
    import numpy as np

    n = 256 << 20
    src = np.ones(n, dtype=np.uint8)
    dst = np.zeros_like(src)
    best = math.inf
    for _ in range(2):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - t0)
    cpus = os.cpu_count() or 1
    one = 2 * n / best / 1e9
    _HOST_BW["measured"] = (
        one * cpus * HOST_MARGIN,
        f"measured: one thread copied {one:.1f} GB/s, times {cpus} CPUs, times {HOST_MARGIN}",
    )
    return _HOST_BW["measured"]


def floor_bandwidth(device: Device) -> tuple[float, str]:
    """(GB/s, source) the physical floor divides by: a GPU's peak from its own figures (memory
    clock x bus width, ``DeviceProperties.peak_bandwidth_gbs``), the host's ``host_bandwidth`` (none
    measured when the host's LLC is overridden: its flush then evicts less than the real cache, so
    the cold promise does not hold and a floor would read a cache's speed as a cheat)."""
    if device.kind == "host":
        from .. import settings

        if device.llc_override is not None and not settings.HOST_BANDWIDTH.get():
            return math.nan, "none: the host's LLC is overridden (its flush does not make it cold)"
        return host_bandwidth()
    gbs = float(device.peak_bandwidth_gbs)
    source = ""
    try:
        source = str(device.properties.peak_bandwidth_source)
    except Exception:  # noqa: BLE001 - a device that cannot describe itself still has its figure
        pass
    return gbs, source


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} us"


def floor_flags(row: Mapping[str, Any], inputs: int, bandwidth: tuple[float, str], declared: bool = False) -> list[str]:
    """The floor flags of one summary row (``floor_s``, ``median_s``, ``p5_s``, ``timer``): below the
    launch floor (an events median under half an empty kernel's), and, under a cold promise, below
    the physical floor ``inputs`` / peak bandwidth (net of the launch floor where the row has one),
    for the median or for 5% of the launches (``p5_s``). ``declared``: ``inputs`` is the traffic a
    callable's author declared (``bytes_per_launch``: its buffers are opaque to the harness), named so."""
    out = []
    median, floor_s = float(row.get("median_s", math.nan)), float(row.get("floor_s", math.nan))
    if (
        Timer.of_cell(row.get("timer")).launch_floor
        and math.isfinite(floor_s)
        and median < LAUNCH_FLOOR_FRACTION * floor_s
    ):
        out.append(
            flag(
                f"below the launch floor: median {_us(median)}, while an empty kernel's launch takes "
                f"{_us(floor_s)}: the work did not run on the timed stream"
            )
        )
    why = asks_cold(row)
    gbs, source = bandwidth
    if not why or inputs <= 0 or not (gbs > 0 and math.isfinite(gbs)):
        return out
    least = inputs / (gbs * 1e9)
    if least < FLOOR_RESOLVABLE_S:
        return out
    base = floor_s if math.isfinite(floor_s) else 0.0
    from ..readable import format_bytes

    for label, value in (("median", median), ("5th percentile", float(row.get("p5_s", math.nan)))):
        net = value - base
        if math.isfinite(net) and net < (DECLARED_FLOOR_MARGIN if declared else FLOOR_MARGIN) * least:
            net_of = " net of the launch floor" if base else ""
            moving = (
                f"moving the {format_bytes(inputs)} a launch declares (bytes_per_launch)"
                if declared
                else f"reading its {format_bytes(inputs)} of inputs"
            )
            out.append(
                flag(
                    f"below the physical floor: {label} {_us(net)}{net_of}, but {moving} from memory at the peak "
                    f"{gbs:,.0f} GB/s ({source}) takes at least {_us(least)}, and it was asked cold ({why})"
                )
            )
            break
    return out


def row_floor_flags(row: Mapping[str, Any], kspec: Any, n: int, device: Device) -> list[str]:
    """``floor_flags`` of a unit's summary row of ``kspec`` at ``n`` elements on ``device`` (the
    bandwidth asked for only when the row is under a cold promise and has inputs). A callable's
    buffers are opaque: its floor is the traffic it declares (``bytes_per_launch``), if it declares
    one -- so a launcher that runs its work on a stream of its own (KernelBench #106), which the
    launch floor misses once that work slows the timed stream's events, is still below it."""
    from .counters.record import input_bytes

    declared = kspec.call is not None
    inputs = (
        input_bytes(kspec, n) if not declared else (kspec.footprint(n) if kspec.bytes_per_launch is not None else 0)
    )
    bandwidth = floor_bandwidth(device) if inputs and asks_cold(row) else (math.nan, "")
    return floor_flags(row, inputs, bandwidth, declared=declared)


def reference_flag(row: Mapping[str, Any], device: Device | None = None) -> list[str]:
    """A cold-promised row whose bias interval lies wholly ``REFERENCE_MARGIN`` or more below the cold
    reference (the same kernel after an l2-read flush): its inputs were not read from memory. None
    on a host whose LLC is overridden (its flushes then evict less than its cache: nothing is cold)."""
    if device is not None and device.kind == "host" and device.llc_override is not None:
        return []
    why = asks_cold(row)
    hi = float(row.get("bias_ci_high", math.nan))
    if not why or Configuration.marks_reference(row) or not (math.isfinite(hi) and hi < -REFERENCE_MARGIN):
        return []
    b, lo = float(row.get("bias", math.nan)), float(row.get("bias_ci_low", math.nan))
    return [
        flag(
            f"faster than its cold reference: {100 * b:+.1f}% [{100 * lo:+.1f}%, {100 * hi:+.1f}%] against the same "
            f"kernel after an l2-read flush, though asked cold ({why}): its inputs did not all come from memory"
        )
    ]


__all__ = [
    "FLAG",
    "StatefulKernel",
    "FLOOR_MARGIN",
    "HOST_MARGIN",
    "FLOOR_RESOLVABLE_S",
    "L2Guard",
    "LAUNCH_FLOOR_FRACTION",
    "REFERENCE_MARGIN",
    "asks_cold",
    "flag",
    "flags_of",
    "floor_bandwidth",
    "floor_flags",
    "guard_for",
    "host_bandwidth",
    "is_flagged",
    "reference_flag",
    "row_floor_flags",
    "with_flags",
]
