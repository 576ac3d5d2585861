"""NVIDIA in process: CUPTI's range profiler in the counting unit's own worker (``cupti_api``).

Why beside Nsight Compute, and the default where it loads: ncu counts a process it starts, so a
counting unit under it paid ~4 s to start Python, CUDA and the module under the tool, per metric
group, and ~90 ms per profiled launch (kernel replay); on an H100 the pass cost 216% of the sweep it
accompanied. Here the counting unit is an ordinary sweep worker: one for the whole pass, its counters
read by CUPTI around each counted launch (a user range pushed before the launch and popped after it,
so the flush kernels, which run between the ranges, are never counted), one hardware pass, nothing
replayed. nvbench counts the same way (``nvbench/cupti_profiler.cu``: user ranges, user replay).

The metrics (``CUPTI_METRICS``): DRAM bytes read and written (the cold fraction) and the L2's lookup
hits and misses (the hit rate as their ratio, rather than ncu's ``lts__t_sector_hit_rate.pct``). If
the chip needs a second hardware pass for the L2 pair, the unit counts in two rounds (``rounds``):
each configuration's warm-up and timed launches run once per group of metrics, the DRAM pair in the
first and the L2's lookups in the second, and each launch's values are joined by its place in the
sequence (the sequence is the same each time: its random leads are seeded).

What the worker counted travels in the counting unit's manifest (each entry's ``values``, one dict
per counted launch, in launch order): ``parse`` reads it back, so a recorded pass folder parses
again without the GPU or the library.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .backends import MANIFEST, CounterError, Launch, base_name, reports

#: what is counted: the DRAM pair and the L2's lookups. A launch is never replayed (a second hardware
#: pass over it would see the cache state the first pass left), so where the four need two passes
#: (an H100: GH100, CUPTI 2025.3.1) they are counted in two rounds over the same warm-up and timed
#: launches, one pass each: the DRAM pair, then the first of ``L2_SETS`` that fits one pass.
DRAM_ONLY = ("dram__bytes_read.sum", "dram__bytes_write.sum")
L2_SETS = (("lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"), ("lts__t_sector_hit_rate.pct",),
           ("lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum"))
CUPTI_METRICS = (*DRAM_ONLY, *L2_SETS[0])
#: the L2 hit rate from whichever pair (hits, misses) or percentage was counted
_HIT_PAIRS = (("lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"),
              ("lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum"))


def launch_of(reported: str, entry: str) -> bool:
    """Whether CUPTI's range name ``reported`` (a kernel's name, plain, demangled or mangled:
    ``_Z5triadPfPKfS1_f``) is a launch of ``entry``."""
    base = base_name(entry)
    return reports(reported, entry) or reported.startswith(f"_Z{len(base)}{base}")  # the length prefix: no other name


class CuptiRanges:
    """The counting unit's marker (``counters.phase``): the range profiler started when the timed
    path opens its range, a user range around each counted launch, the values read when it closes.
    HIPEXPLORE_CUPTI_RANGES=auto: no user ranges; CUPTI makes one per kernel launch (the flush
    kernels' too) and the configuration's own launches are picked by the kernel's name (``entry``)."""

    name = "cupti-range"

    def __init__(self, counting: Any) -> None:
        from ... import settings

        self.mode = str(settings.CUPTI_RANGES.get() or "user")
        self.entry = ""  # the configuration's kernel (``prepare``): what auto ranges are picked by
        self.metrics = tuple(counting.metrics or CUPTI_METRICS)
        self.device_index = int(counting.device_index)
        self.samples = int(counting.count)
        self.launches = 0  # at most how many launches the next range holds (``prepare``); 0: not told
        self.session: Any = None
        self.status = ""
        self.values: list[dict[str, float]] = []
        self._open = False
        self.round = 0  # which group of metrics the next range counts (``select``)
        self._last: int | None = None  # the group of the last range closed on this session

    @property
    def rounds(self) -> int:
        """How many times each configuration's launches run: once per one-pass group of metrics."""
        return len(self.session.groups) if self.session is not None else 1

    @property
    def first(self) -> bool:
        """Whether the next range counts another group than the last range closed on this session
        (or is the session's first): the profiler is set up again for it, and its first launch
        finds the L2 that left (``Marker.first``). Ranges of the same group in a row did not."""
        return self._last != self.round

    def select(self, index: int) -> None:
        self.round = int(index)
        if self.session is not None:
            self.session.use(self.round)

    def drop_rounds(self, why: str) -> None:
        """A later round failed: the DRAM pair's group alone from now on, the L2 hit rate said missing."""
        if self.session is not None:
            self.session.keep_first_group()
        self.round, self._last = 0, None  # the profiler is set up again for the DRAM pair: its next range is dropped
        self.status = f"the L2 hit rate is not counted: {why}"

    def _session(self) -> Any:
        from .cupti_api import RangeSession

        if self.metrics != CUPTI_METRICS:  # the caller's own metrics: one pass, or refused
            return RangeSession(self.metrics, device_index=self.device_index, mode=self.mode)
        try:
            return RangeSession(self.metrics, device_index=self.device_index, mode=self.mode)
        except CounterError as exc:
            if "hardware passes" not in str(exc):
                raise
        session = RangeSession(DRAM_ONLY, device_index=self.device_index, mode=self.mode)
        for l2 in L2_SETS:
            try:
                session.add_group(l2)
            except CounterError as exc:
                if "hardware passes" in str(exc):
                    continue
                # the DRAM pair (what the cold fraction needs) still counts; the hit rate is said missing
                self.status = f"the L2's counters could not be set up on {session.chip} ({exc}): the L2 hit rate is not counted"
                return session
            self.status = (f"counted in two rounds on {session.chip} (its DRAM and L2 counters need two hardware passes): "
                           f"the DRAM bytes, then {' and '.join(l2)}, over the same warm-up and launches")
            return session
        self.status = (f"the L2's counters need a second hardware pass on {session.chip} and none fits one: the L2 hit "
                       f"rate is not counted (DRAM bytes are)")
        return session

    def prepare(self, entry: str, launches: int = 0) -> None:
        """The configuration's kernel and its launch bound noted (``launches``: what sizes the
        counter-data image: a record too small for the ranges drops them, and a rotation over
        hundreds of sets makes hundreds), and the profiler set up before its warm-up, so the warm-up
        brings the sequence's own cache state back after it. That alone is not enough: the
        session's first range still read its first launch from DRAM on an H100 (the probe's 1 MiB
        add on one set: 2.0 MiB, then 0 B; data/counters/h100-cupti/), which ``first`` hands to the
        phase (one range run and dropped)."""
        self.entry, self.launches = entry, max(int(launches), 0)
        if self.session is None:
            self.session = self._session()
        self.select(0)

    def start(self) -> None:
        if self.session is None:  # started without ``prepare`` (a caller of the timed path alone)
            self.session = self._session()
        self.values, self._open = [], False
        self.session.use(self.round)
        self.session.begin(self.ranges())

    def ranges(self) -> int:
        """Room for the next range's launches: one range each with user ranges; with auto ranges
        one per kernel, the flush's and (a pipeline workload) several of the workload's. Without
        a bound from ``prepare``, as if every timed launch came with a lead and a trail."""
        launches = self.launches or 3 * max(self.samples, 1)
        return (1 if self.mode == "user" else 8) * launches + 64

    def launch_begins(self, index: int) -> None:
        if self.mode == "user":
            self.session.push(str(index))
            self._open = True

    def launch_ends(self) -> None:
        if self._open:
            self.session.pop()
            self._open = False

    def stop(self) -> None:
        if self._open:
            self.launch_ends()
        ranges, dropped = self.session.end()
        self._last = self.round
        if dropped:
            raise CounterError(f"CUPTI dropped {dropped} range(s) of {len(ranges) + dropped}: the counter-data image was "
                               f"too small")
        if self.mode == "auto":
            ranges = [r for r in ranges if launch_of(r.name, self.entry)]
            self.values = [r.values for r in ranges]
            return
        names = [r.name for r in ranges]
        if names != [str(i) for i in range(len(ranges))]:
            raise CounterError(f"CUPTI returned ranges {names[:8]}{'...' if len(names) > 8 else ''}; expected 0..{len(ranges) - 1}")
        self.values = [r.values for r in ranges]

    def take(self) -> list[dict[str, float]]:
        """The last range's values per launch (then forgotten)."""
        out, self.values = self.values, []
        return out


class CuptiBackend:
    """CUPTI's range profiler in the counting unit's worker (module docstring)."""

    name = "cupti"
    marker = "cupti-range"
    captures_warmup = False
    #: one counting unit for the whole pass (no tool to start per group)
    one_unit = True

    def __init__(self, library: str | None = None, metrics: tuple[str, ...] | None = None) -> None:
        self.library = library
        self.metrics = tuple(metrics) if metrics else CUPTI_METRICS

    def path(self) -> str | None:
        from .cupti_api import find_cupti

        return find_cupti(self.library)

    def available(self, device: Any) -> str | None:
        if device.kind != "cuda":
            return f"CUPTI counts NVIDIA GPUs; the device is {device.kind}:{device.index}"
        from .cupti_api import locate

        path, why = locate(self.library)
        if path is None:
            return (f"CUPTI not usable ({why}): set HIPEXPLORE_CUPTI_LIBRARY, install the CUDA toolkit's CUPTI "
                    "(extras/CUPTI/lib64) or `pip install nvidia-cuda-cupti`")
        return None

    def groups(self, device: Any) -> list[tuple[str, ...]]:
        return [self.metrics]

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]:
        return []  # the worker counts itself

    def parse(self, out_dir: Path) -> tuple[list[Launch], str]:
        path = Path(out_dir) / MANIFEST
        try:
            entries = json.loads(path.read_text())["entries"]
        except (OSError, ValueError, KeyError) as exc:
            raise CounterError(f"no counting unit manifest at {path}: {exc}") from exc
        launches = [Launch(str(e["entry"]), {k: float(v) for k, v in values.items()})
                    for e in entries for values in e.get("values", [])]
        return launches, ""

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        rate = min(values.get("lts__t_sector_hit_rate.pct", math.nan) / 100.0, 1.0)
        for hit_name, miss_name in _HIT_PAIRS:
            if hit_name in values:
                hit, miss = values[hit_name], values.get(miss_name, math.nan)
                rate = hit / (hit + miss) if hit + miss > 0 else math.nan
                break
        return {"dram_read_bytes": values.get("dram__bytes_read.sum", math.nan),
                "dram_write_bytes": values.get("dram__bytes_write.sum", math.nan), "l2_hit_rate": rate,
                "duration_s": math.nan}

    def describe(self) -> dict[str, Any]:
        path = self.path()
        label = f"CUPTI range profiler ({Path(path).resolve().name})" if path else "CUPTI range profiler"
        return {"name": self.name, "label": label, "metrics": list(self.metrics), "path": path or ""}


__all__ = ["CUPTI_METRICS", "CuptiBackend", "CuptiRanges", "DRAM_ONLY", "L2_SETS", "launch_of"]
