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
the chip needs a second hardware pass for the L2 pair, the unit counts the DRAM pair alone and says so.

The worker summarises each configuration itself (``counters.phase``: its ``CounterSummary``, sent
beside the entry), so nothing is parsed after the unit; what it counted also travels in the unit's
manifest (each entry's ``values``, one dict per counted launch, in launch order), the evidence kept
beside the result: ``parse`` reads it back, so a recorded pass folder parses again without the GPU
or the library.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .backends import MANIFEST, CounterError, Launch, base_name, reports

#: what is counted: the DRAM pair and the L2's lookups. One hardware pass only (a second would replay
#: launches whose cache state the first changed), so the sets are tried in order (``METRIC_SETS``)
#: and the first that fits one pass on the chip is counted; on an H100 (GH100, CUPTI 2025.3.1) the
#: four below need two passes.
DRAM_ONLY = ("dram__bytes_read.sum", "dram__bytes_write.sum")
CUPTI_METRICS = (*DRAM_ONLY, "lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum")
METRIC_SETS = (
    CUPTI_METRICS,
    (*DRAM_ONLY, "lts__t_sector_hit_rate.pct"),
    (*DRAM_ONLY, "lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum"),
    DRAM_ONLY,
)
#: the L2 hit rate from whichever pair (hits, misses) or percentage was counted
_HIT_PAIRS = (
    ("lts__t_sectors_lookup_hit.sum", "lts__t_sectors_lookup_miss.sum"),
    ("lts__t_sectors_srcunit_tex_lookup_hit.sum", "lts__t_sectors_srcunit_tex_lookup_miss.sum"),
)


def launch_of(reported: str, entry: str) -> bool:
    """Whether CUPTI's range name ``reported`` (a kernel's name, plain, demangled or mangled:
    ``_Z5triadPfPKfS1_f``) is a launch of ``entry``."""
    base = base_name(entry)
    return reports(reported, entry) or reported.startswith(f"_Z{len(base)}{base}")  # the length prefix: no other name


def per_launch(values: dict[str, float]) -> dict[str, float]:
    """One launch's CUPTI values as DRAM bytes read and written and the L2 hit rate (from whichever
    pair of lookups, or percentage, was counted: ``METRIC_SETS``)."""
    rate = min(values.get("lts__t_sector_hit_rate.pct", math.nan) / 100.0, 1.0)
    for hit_name, miss_name in _HIT_PAIRS:
        if hit_name in values:
            hit, miss = values[hit_name], values.get(miss_name, math.nan)
            rate = hit / (hit + miss) if hit + miss > 0 else math.nan
            break
    return {
        "dram_read_bytes": values.get("dram__bytes_read.sum", math.nan),
        "dram_write_bytes": values.get("dram__bytes_write.sum", math.nan),
        "l2_hit_rate": rate,
        "duration_s": math.nan,
    }


class CuptiRanges:
    """The counting unit's marker (``counters.phase``): the range profiler started when the timed
    path opens its range, a user range around each counted launch, the values read when it closes.
    HIPEXPLORE_CUPTI_RANGES=auto: no user ranges; CUPTI makes one per kernel launch (the flush
    kernels' too) and the configuration's own launches are picked by the kernel's name (``entry``)."""

    name = "cupti-range"
    #: it counts in the counting unit's worker: the phase summarises each configuration there (``counters.phase``)
    counts_here = True

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
        self.first = True  # no range has closed on this session yet (``Marker.first``)

    def _session(self) -> Any:
        from .cupti_api import RangeSession

        tries = list(METRIC_SETS) if self.metrics == CUPTI_METRICS else [self.metrics]
        for i, metrics in enumerate(tries):
            try:
                session = RangeSession(metrics, device_index=self.device_index, mode=self.mode)
            except CounterError as exc:
                if i + 1 < len(tries) and "hardware passes" in str(exc):
                    continue
                raise
            if metrics == DRAM_ONLY and self.metrics != DRAM_ONLY:
                self.status = (
                    f"the L2's counters need a second hardware pass on {session.chip}: "
                    f"the L2 hit rate is not counted (DRAM bytes are)"
                )
            elif metrics != self.metrics:
                self.status = f"the L2 hit rate counted as {metrics[2]} (one hardware pass on {session.chip})"
            return session
        raise CounterError("no metric set counts in one pass")  # pragma: no cover - the loop returns or raises

    def prepare(self, entry: str, launches: int = 0) -> None:
        """The configuration's kernel and its launch bound noted (``launches``: what sizes the
        counter-data image: a record too small for the ranges drops them, and a rotation over
        hundreds of sets makes hundreds), and the profiler set up before its warm-up, so the warm-up
        brings the sequence's own cache state back after it. That alone is not enough:
        the session's first range still read its first launch from DRAM on an H100 (the probe's
        1 MiB add on one set: 2.0 MiB, then 0 B; data/counters/h100-cupti/), which ``first`` hands
        to the phase (one range run and dropped)."""
        self.entry, self.launches = entry, max(int(launches), 0)
        if self.session is None:
            self.session = self._session()

    def start(self) -> None:
        if self.session is None:  # started without ``prepare`` (a caller of the timed path alone)
            self.session = self._session()
        self.values, self._open = [], False
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
        self.first = False
        if dropped:
            raise CounterError(
                f"CUPTI dropped {dropped} range(s) of {len(ranges) + dropped}: the counter-data image was too small"
            )
        if self.mode == "auto":
            ranges = [r for r in ranges if launch_of(r.name, self.entry)]
            self.values = [r.values for r in ranges]
            return
        names = [r.name for r in ranges]
        if names != [str(i) for i in range(len(ranges))]:
            raise CounterError(
                f"CUPTI returned ranges {names[:8]}{'...' if len(names) > 8 else ''}; expected 0..{len(ranges) - 1}"
            )
        self.values = [r.values for r in ranges]

    def take(self) -> list[dict[str, float]]:
        """The last range's values per launch (then forgotten)."""
        out, self.values = self.values, []
        return out

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        return per_launch(values)


class CuptiBackend:
    """CUPTI's range profiler in the counting unit's worker (module docstring)."""

    name = "cupti"
    marker = "cupti-range"
    captures_warmup = False
    #: it counts in the counting unit's worker, which sends each configuration's summary (``counters.phase``); one
    #: counting unit counts the whole pass (no tool to start per group)
    counts_in_worker = True

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
            return (
                f"CUPTI not usable ({why}): set HIPEXPLORE_CUPTI_LIBRARY, install the CUDA toolkit's CUPTI "
                "(extras/CUPTI/lib64) or `pip install nvidia-cuda-cupti`"
            )
        return None

    def groups(self, device: Any) -> list[tuple[str, ...]]:
        return [self.metrics]

    def prefix(self, group: tuple[str, ...], out_dir: Path, entries: list[str]) -> list[str]:
        return []  # the worker counts itself

    def parse(self, out_dir: Path, entries: list[dict[str, Any]] | None = None) -> tuple[list[Launch], str]:
        """The launches the unit's worker counted: its manifest ``entries`` (None: read from ``out_dir``)."""
        from .manifest import read_manifest

        if entries is None:  # bounded and checked: the counting unit ran a user's kernel, which could write this file
            entries = read_manifest(Path(out_dir) / MANIFEST, ("entry",), "counting unit manifest")["entries"]
        launches = [Launch(str(e["entry"]), dict(values)) for e in entries for values in e.get("values", [])]
        return launches, ""

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        return per_launch(values)

    def describe(self) -> dict[str, Any]:
        path = self.path()
        label = f"CUPTI range profiler ({Path(path).resolve().name})" if path else "CUPTI range profiler"
        return {"name": self.name, "label": label, "metrics": list(self.metrics), "path": path or ""}


__all__ = ["CUPTI_METRICS", "CuptiBackend", "CuptiRanges", "DRAM_ONLY", "METRIC_SETS", "launch_of", "per_launch"]
