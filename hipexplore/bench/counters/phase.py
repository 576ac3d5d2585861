"""The counter phase: a counting unit's replay of each configuration through the trials' own path,
inside the profiler's range (the worker's side of the counter pass; the parent's is
``counters.counting``).

What a counting unit is (``bench.phases``): a ``SweepRun`` of one (kernel, size) group, in a sweep
worker started under the profiler's command, that takes the timed units' set-up (``initialize``:
the same flushers, then the rotating plans and buffer sets in the same order; ``warm_up``: the clock
warm-up) and then, per configuration, only this phase: ``LaunchSequence.timed`` runs
``bench.timing.time_launches`` (its own warm-up, then chunks with their random leads, events,
flushes and trails, exactly as the trials did) for ``Counting.samples(sets)`` timed launches, with
the profiler's range opened after that warm-up and closed after the last chunk. The times are
thrown away; no timed sample is ever taken under a profiler.

Why the timed path and not a replay of "flush, kernel on set i": on the H200 such a replay did not
reproduce the timed run's cache state (data/counters/h200-probe/: in the replay the first 3-5
launches after each wrap to set 0 hit the L2 and the rest read DRAM; under ncu over the timed
process set 0 read 1.00 at the wrap and 5 sets read 0.01-0.95 per launch). The leads and trails
re-launch a set just used, the warm-up runs for a time rather than a count: the state depends on them.

One difference is deliberate: no stream hold (``TimingOptions.hold=False``). A profiler that
serialises launches (Nsight Compute) makes the first counted launch of a chunk wait for the spin
kernel holding the stream, which waits for the host: the probe's run over the timed process timed
the hold out 6 times in a row and stopped. The spin kernel polls a host-mapped flag and moves no
device memory, so leaving it out changes nothing the counters see.

Every launch of the kernel in the unit passes the ``tap`` (``bench.timing.Workload.tap``): the
manifest entry of a configuration says how many launches came before its range (``warmup``:
what a backend that reports every launch, rocprofv3 or ncu without a range, drops by order) and
each launch inside it (``launches``: [buffer set, chunk position], position -1 for a chunk's untimed
lead and trail): the parent attributes the profiler's rows by that order.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from ...schema import Configuration
from .backends import CounterError
from .record import input_bytes, make_record
from .summary import CounterSummary

#: the key of a counting unit's entry under which a backend that counts in the worker hands its
#: ``CounterSummary`` over (taken out before the entry goes to the channel: it is not in the manifest)
SUMMARY = "summary"

#: timed launches a counting unit replays per configuration, at least (and at least one rotation)
DEFAULT_COUNT = 12


@dataclass(frozen=True)
class Counting:
    """What makes a unit a counting unit (sent to its worker): how the profiler's range is marked
    (``marker``: ``cuda-profiler``, ``cupti-range`` or ``none``), how many timed launches to replay
    (``count``; at least one whole rotation over the sets, so every set is counted), and for a
    marker that counts in the worker itself (``cupti-range``) the ``metrics``, the device's index and
    the backend's ``label`` (what its summaries name as their ``counter_backend``). ``prefix``: the
    command the unit's worker is started under (the profiler's, ``Backend.prefix``; none for a
    backend that counts in the worker itself): the executor reads it. ``report``: the folder that
    command writes its report into ("" where there is none): a cluster unit moves it to a folder of
    its own worker's (``moved``) and sends the files back (``bench.dask_worker``)."""

    marker: str = "none"
    count: int = DEFAULT_COUNT
    metrics: tuple[str, ...] = ()
    device_index: int = 0
    label: str = ""
    prefix: tuple[str, ...] = ()
    report: str = ""

    def moved(self, folder: str) -> "Counting":
        """The same counting with its report written below ``folder`` instead: every argument of the
        prefix that is the report folder or a path below it names ``folder`` there."""
        if not self.report:
            return self
        old = self.report.rstrip("/")

        def move(arg: str) -> str:
            return folder + arg[len(old) :] if arg == old or arg.startswith(old + "/") else arg

        return replace(self, prefix=tuple(move(a) for a in self.prefix), report=folder)

    def samples(self, sets: int) -> int:
        """Timed launches for ``sets`` buffer sets: ``count``, or one rotation if that is more
        (``time_launches`` refuses fewer samples than sets)."""
        return max(int(self.count), int(sets))


class Replayed(Protocol):
    """What the phase replays (``bench.phases.LaunchSequence``, which builds this phase: named by
    what it offers rather than imported, which made an import circle)."""

    sets: int
    n: int
    kspec: Any

    def launch_bound(self, samples: int) -> int: ...

    def timed(self, samples: int, **overrides: Any) -> Any: ...


class Marker(Protocol):
    """Where the counted launches start and stop, for a profiler that counts only between them.
    A profiler in this process (``counters.cupti``) also hears ``prepare(entry, launches)`` before
    the configuration's warm-up (its kernel, and at most how many launches the range will hold),
    ``launch_begins`` / ``launch_ends`` around each counted launch (a range of its own), and hands
    over what it counted (``take``: one dict per counted launch; None for a profiler whose output
    is read from its own files). ``first``: the next range is the profiler's first since it was set
    up, whose first counted launch finds the L2 the set-up left rather than the warm-up's (CUPTI on
    an H100: 2.0 MiB read from DRAM by a 1 MiB add that reads 0 B from its second range on,
    data/counters/h100-cupti/cupti_probe.json), so the phase runs one range first and drops it."""

    name: str
    status: str
    first: bool
    #: whether it counts in this process (its ``take`` hands the values over, and ``per_launch`` reads them)
    counts_here: bool

    def prepare(self, entry: str, launches: int) -> None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def launch_begins(self, index: int) -> None: ...

    def launch_ends(self) -> None: ...

    def take(self) -> list[dict[str, float]] | None: ...

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        """One launch's counters as DRAM bytes read and written and the L2 hit rate (``Backend.per_launch``)."""
        ...


class _OutsideMarker:
    """A marker for a profiler outside this process: nothing to prepare, per launch or to hand over."""

    name = ""
    status = ""
    first = False  # an outside profiler counts every range it sees: none is run to be dropped
    counts_here = False  # its report is parsed at the executor's finish step (``counters.counting``)

    def prepare(self, entry: str, launches: int) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def launch_begins(self, index: int) -> None:
        pass

    def launch_ends(self) -> None:
        pass

    def take(self) -> None:
        return None

    def per_launch(self, values: dict[str, float]) -> dict[str, float]:
        raise CounterError(f"the {self.name or 'outside'} marker counts nothing in this process")


class NoMarker(_OutsideMarker):
    """Nothing marked: the backend counts every launch of the kernel and drops the earlier ones by order."""

    name = "none"


class CudaProfilerRange(_OutsideMarker):
    """``cuProfilerStart`` / ``cuProfilerStop`` around the counted launches (Nsight Compute's
    ``--profile-from-start off`` profiles only between them), so the warm-up is never replayed by
    the profiler: microseconds per launch instead of a profiled launch each."""

    name = "cuda-profiler"

    def __init__(self) -> None:
        from cuda.bindings import driver

        self._drv = driver
        self.status = ""

    def _call(self, fn: Any, what: str) -> None:
        err = fn()[0]
        if err != self._drv.CUresult.CUDA_SUCCESS:
            self.status = f"{what} returned {getattr(err, 'name', err)}"

    def start(self) -> None:
        self._call(self._drv.cuProfilerStart, "cuProfilerStart")

    def stop(self) -> None:
        self._call(self._drv.cuProfilerStop, "cuProfilerStop")


def _cupti(counting: Counting) -> Marker:
    from .cupti import CuptiRanges

    return CuptiRanges(counting)


#: a marker by name, made from the unit's ``Counting``
MARKERS = {
    "none": lambda counting: NoMarker(),
    "cuda-profiler": lambda counting: CudaProfilerRange(),
    "cupti-range": _cupti,
}


class LaunchTap:
    """Every launch of the unit's kernel, in order: how many before the range opened (since the
    previous configuration's range closed), and [buffer set, chunk position] of each inside it;
    the ``marker`` hears each launch inside begin and end (``launched``)."""

    def __init__(self, marker: Marker | None = None) -> None:
        self.before = 0
        self.inside: list[list[int]] | None = None
        self.marker = marker if marker is not None else NoMarker()

    def __call__(self, buffer_set: int, position: int) -> None:
        if self.inside is None:
            self.before += 1
        else:
            self.inside.append([int(buffer_set), int(position)])
            self.marker.launch_begins(len(self.inside) - 1)

    def launched(self) -> None:
        """The launch just told of is enqueued (or failed to be)."""
        if self.inside is not None:
            self.marker.launch_ends()

    def open(self) -> None:
        self.inside = []

    def close(self) -> tuple[int, list[list[int]]]:
        """(launches before the range, launches inside it); the tally starts again."""
        got = (self.before, list(self.inside or []))
        self.before, self.inside = 0, None
        return got


class _Range:
    """The profiler range ``time_launches`` opens after its warm-up (``TimingOptions.profiler``)."""

    def __init__(self, marker: Any, tap: LaunchTap) -> None:
        self.marker, self.tap = marker, tap

    def start(self) -> None:
        self.tap.open()
        self.marker.start()

    def stop(self) -> None:
        self.marker.stop()


class CounterPhase:
    """The counter phase of a counting unit (module docstring); ``run`` returns the manifest entry."""

    name = "counters"

    def __init__(self, counting: Counting) -> None:
        self.counting = counting
        self.marker = MARKERS[counting.marker](counting)
        self.tap = LaunchTap(self.marker)

    def run(self, configuration: Configuration, launches: Replayed, row: dict[str, Any]) -> dict[str, Any]:
        sets = launches.sets
        samples = self.counting.samples(sets)
        kspec = launches.kspec
        # a profiler in this process is set up before the warm-up, never after it
        self.marker.prepare(kspec.entry, launches.launch_bound(samples))
        if self.marker.first:  # its first range reads what the set-up left: run one and drop it
            launches.timed(samples, hold=False, profiler=_Range(self.marker, self.tap), telemetry=None)
            self.tap.close()
            self.marker.take()
        launches.timed(samples, hold=False, profiler=_Range(self.marker, self.tap), telemetry=None)
        before, inside = self.tap.close()
        counted = self.marker.take()
        if counted is not None and len(counted) != len(inside):
            raise CounterError(
                f"{self.marker.name} counted {len(counted)} launch(es) of {configuration.kernel} size "
                f"{configuration.size}; the range held {len(inside)}"
            )
        entry = {
            **({"values": counted} if counted is not None else {}),
            "kernel": configuration.kernel,
            "entry": kspec.entry,
            "size_bytes": int(configuration.size),
            "n": int(launches.n),
            "rotating_requested": str(configuration.rotating),
            "rotating": sets,
            "flush": configuration.flush,
            "warmup": before,
            "count": len(inside),
            "timed": samples,
            "launches": inside,
            "input_bytes": input_bytes(kspec, launches.n),
            "footprint_bytes": kspec.footprint(launches.n),
            "marker": self.marker.name,
            "marker_status": self.marker.status,
            "plan_note": str(row.get("plan_note", "")),
        }
        if counted is not None and self.marker.counts_here:  # counted in this process: summarised here
            entry[SUMMARY] = self.summary(configuration, entry)
        return entry

    def summary(self, configuration: Configuration, entry: dict[str, Any]) -> CounterSummary:
        """The configuration's ``CounterSummary`` from what the marker counted (``entry``'s values):
        its timed launches' means, as a report's are made at the finish step (``counting.records``)."""
        per = [self.marker.per_launch(v) for v in entry["values"]]
        timed = [p for p, (_s, pos) in zip(per, entry["launches"]) if pos >= 0]
        note = "; ".join(filter(None, [entry["marker_status"], entry["plan_note"]]))
        return make_record(
            configuration,
            rotating=entry["rotating"],
            backend=self.counting.label or self.marker.name,
            launches=timed,
            warmup=entry["warmup"],
            inputs=entry["input_bytes"],
            note=note,
        ).summary()


__all__ = [
    "Counting",
    "CounterPhase",
    "CudaProfilerRange",
    "DEFAULT_COUNT",
    "LaunchTap",
    "MARKERS",
    "Marker",
    "NoMarker",
    "SUMMARY",
]
