"""``hipexplore.bench.counters.phase``: the counting unit's replay of the trials through
``time_launches`` on the host device, the profiler's range around the counted launches (its launch
bound announced first, its first range run and dropped when it asks), and the refusal of a
profiler that counted another number of launches than the range held."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import Counting
from hipexplore.bench.counters.backends import CounterError
from hipexplore.bench.counters.phase import CounterPhase, NoMarker
from hipexplore.bench.executors import UnitRun
from hipexplore.bench.record import Collector
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweeprun import SweepRun
from hipexplore.bench.units import UnitJob
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice

KIB = 1 << 10


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    require_compiler("host")
    d = HostDevice(llc_bytes=128 * KIB)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("ccache"))
    return d


def _unit(spec: SweepSpec, run_id: str, counting: Counting) -> UnitRun:
    """A sweep's one counting unit, as an executor hands it to ``SweepRun``."""
    return UnitRun(UnitJob(spec, 0, frozenset(), counting=counting), run_id)


class _Watched:
    """The real host device, its launches noted (which kernel, which argument set) in order."""

    def __init__(self, device: HostDevice) -> None:
        self.device, self.calls = device, []

    def __getattr__(self, name: str):
        return getattr(self.device, name)

    def launch(self, kernel, grid, block, args, shared_bytes=0):
        self.calls.append((kernel, args))
        return self.device.launch(kernel, grid, block, args, shared_bytes)


class _Marks(NoMarker):
    """A marker noting where the range opens and closes, in the device's launches."""

    name, status = "marks", ""

    def __init__(self, watched: _Watched) -> None:
        self.watched, self.at = watched, []

    def start(self) -> None:
        self.at.append(len(self.watched.calls))

    def stop(self) -> None:
        self.at.append(len(self.watched.calls))


def test_the_counting_unit_replays_the_trials_path_and_takes_no_timed_sample(dev) -> None:
    """Counting mode of a unit: initialize and warm up as a timed unit, then per configuration only
    the counter phase, which launches through ``time_launches`` (chunks of 4, seeded leads, a trail,
    each kernel launch after its flush, set i for timed sample i) with the range around the chunks;
    the manifest lists every launch inside the range in order, and says how many came before."""
    spec = SweepSpec(
        kernels=("triad",),
        sizes=(64 * KIB,),
        rotating=(3,),
        flush=("none", "l2-write"),
        stop=StopRule(iterations=6),
        units=1,
        warmup_s=0.0,
    )
    watched = _Watched(dev)
    phase = CounterPhase(Counting("none", 5))
    phase.marker = marks = _Marks(watched)
    channel = Collector()
    run = SweepRun(_unit(spec, "count", Counting("none", 5)), watched, channel, phases=(phase,))
    assert run.measure() is False
    assert channel.rows == [] and channel.frames == []  # no timed sample, no row
    entries = channel.counted_entries
    assert [(e["rotating_requested"], e["flush"], e["rotating"], e["timed"]) for e in entries] == [
        ("3", "none", 3, 5),
        ("3", "l2-write", 3, 5),
    ]
    kernel = next(k for k, _ in watched.calls if k is not run.flushers["l2-write"].kernel)
    for e, (lo, hi) in zip(entries, zip(marks.at[0::2], marks.at[1::2])):
        inside = watched.calls[lo:hi]
        launched = [a for k, a in inside if k is kernel]
        assert len(launched) == e["count"] == len(e["launches"])  # the manifest is every launch in the range, in order
        timed = [(s, p) for s, p in e["launches"] if p >= 0]
        assert [s for s, _ in timed] == [i % 3 for i in range(5)] and [p for _, p in timed] == [0, 1, 2, 3, 0]
        for j, (s, p) in enumerate(e["launches"]):  # an untimed launch repeats a neighbour's set (a lead, a trail)
            if p < 0:
                assert s in {e["launches"][j - 1][0] if j else None, *(x for x, _ in e["launches"][j + 1 : j + 2])}
        if e["flush"] == "l2-write":
            flush = run.flushers["l2-write"].kernel
            assert [k is flush for k, _ in inside] == [True, False] * len(launched)  # every launch after its flush
        else:
            assert all(k is kernel for k, _ in inside)
        assert e["warmup"] > 0 and e["input_bytes"] == 128 * KIB and e["entry"] == "triad"
    ids = {}
    for s_, (_k, a) in zip(
        [s for e in entries for s, _ in e["launches"]],
        [c for lo, hi in zip(marks.at[0::2], marks.at[1::2]) for c in watched.calls[lo:hi] if c[0] is kernel],
    ):
        ids.setdefault(s_, set()).add(id(a))
    # set i is always the same buffers, and the three sets are three: the manifest names the sets launched
    assert (
        sorted(ids) == [0, 1, 2]
        and all(len(v) == 1 for v in ids.values())
        and len({next(iter(v)) for v in ids.values()}) == 3
    )


class _Bound(NoMarker):
    """A marker noting the launch bound the phase announces (``prepare``) and the launches its range holds."""

    name, status = "bound", ""

    def __init__(self) -> None:
        self.bounds: list[int] = []
        self.held: list[int] = []

    def prepare(self, entry: str, launches: int) -> None:
        self.bounds.append(launches)

    def start(self) -> None:
        self.held.append(0)

    def launch_begins(self, index: int) -> None:
        self.held[-1] += 1


@pytest.mark.parametrize(
    "timing",
    [
        {},
        {"chunk": 1, "chunk_lead": 1, "chunk_trail": 2},
        {"chunk": 7, "chunk_lead": 0, "chunk_trail": 0},
        {"chunk": 3, "chunk_lead": 2, "chunk_trail": 1},
    ],
)
def test_the_phase_announces_a_launch_bound_its_range_never_passes(dev, timing) -> None:
    """A profiler in the process sizes its record of ranges before the range opens (CUPTI drops
    the ranges past its counter-data image: the pass then fails). An ``auto`` rotation of hundreds
    of sets replays hundreds of timed launches, each chunk with its leads and trail: the bound the
    phase announces covers what the range holds, whatever the chunking, and is not far above it."""
    from hipexplore.bench.counters.cupti import CuptiRanges

    spec = SweepSpec(
        kernels=("triad",),
        sizes=(4 * KIB,),
        rotating=(1, 301),
        flush=("none",),
        stop=StopRule(iterations=301),
        units=1,
        warmup_s=0.0,
        **timing,
    )
    phase = CounterPhase(Counting("none", 12))
    phase.marker = phase.tap.marker = marker = _Bound()
    run = SweepRun(_unit(spec, "bound", Counting("none", 12)), dev, Collector(), phases=(phase,))
    run.measure()
    entries = run.channel.counted_entries
    assert [e["timed"] for e in entries] == [12, 301] and [e["count"] for e in entries] == marker.held
    for bound, held in zip(marker.bounds, marker.held):
        assert held <= bound <= 2 * held, (
            bound,
            held,
        )  # a random lead is counted in every chunk: half of them have one
    ranges = CuptiRanges.__new__(CuptiRanges)  # the record CUPTI's marker asks for, from the same bound
    ranges.mode, ranges.samples = "user", 12
    for bound, held in zip(marker.bounds, marker.held):
        ranges.launches = bound
        assert ranges.ranges() >= held + 64


class _First(_Bound):
    """A profiler whose first range reads what its set-up left (CUPTI's: ``Marker.first``): each
    range's launches noted, and only the ranges after the first read as the warm-up left them."""

    name = "first"

    def __init__(self) -> None:
        super().__init__()
        self.first, self.taken = True, []

    def stop(self) -> None:
        self.first = False

    def take(self) -> list[dict[str, float]]:
        self.taken.append(self.held[-1])
        return [{"dram__bytes_read.sum": 0.0, "dram__bytes_write.sum": 0.0}] * self.held[-1]


def test_a_profilers_first_range_is_run_and_dropped_before_the_first_configurations(dev) -> None:
    """CUPTI's first range after its set-up read a 1 MiB add's first launch from DRAM (2.0 MiB, then
    0 B): that range is run once and dropped, so the first configuration's counted launches are the
    second range's (the same count as the later configurations', which run one range each); an
    outside profiler (ncu counts every range it sees) gets no extra range."""
    spec = SweepSpec(
        kernels=("triad",),
        sizes=(4 * KIB,),
        rotating=(1, 3),
        flush=("none",),
        stop=StopRule(iterations=12),
        units=1,
        warmup_s=0.0,
    )
    for marker, ranges in ((_First(), 3), (_Bound(), 2)):
        phase = CounterPhase(Counting("none", 12))
        phase.marker = phase.tap.marker = marker
        run = SweepRun(_unit(spec, "first", Counting("none", 12)), dev, Collector(), phases=(phase,))
        run.measure()
        entries = run.channel.counted_entries
        assert len(marker.held) == ranges and len(entries) == 2, (marker.name, marker.held)
        assert [e["count"] for e in entries] == marker.held[-2:]  # the entries are the last two ranges'
        if ranges == 3:
            assert marker.taken == marker.held and [len(e["values"]) for e in entries] == marker.held[-2:]


class _Miscounting(_Bound):
    """A profiler in the process (``take`` returns one value per launch it counted) that counts
    ``off`` launches more (or fewer) than the range held."""

    name = "miscounting"

    def __init__(self, off: int) -> None:
        super().__init__()
        self.off = off

    def take(self) -> list[dict[str, float]]:
        return [{"dram__bytes_read.sum": 0.0}] * max(0, self.held[-1] + self.off)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("off", [-1, 1, 0])
def test_a_profiler_that_counted_another_number_of_launches_than_the_range_held_is_refused(dev, off) -> None:
    """Counts pair with the range's launches by position (each one's buffer set and chunk position):
    one launch too many or too few and every count would pair with the wrong set. The phase refuses
    such a profiler naming both numbers; one that counted exactly the range's launches passes."""
    spec = SweepSpec(
        kernels=("triad",),
        sizes=(4 * KIB,),
        rotating=(3,),
        flush=("none",),
        stop=StopRule(iterations=6),
        units=1,
        warmup_s=0.0,
    )
    phase = CounterPhase(Counting("none", 6))
    phase.marker = phase.tap.marker = marker = _Miscounting(off)
    run = SweepRun(_unit(spec, "miscount", Counting("none", 6)), dev, Collector(), phases=(phase,))
    if off == 0:
        run.measure()
        (entry,) = run.channel.counted_entries
        assert len(entry["values"]) == entry["count"] == marker.held[-1]
        return
    with pytest.raises(CounterError) as err:
        run.measure()
    held = marker.held[-1]
    assert str(err.value) == (
        f"miscounting counted {held + off} launch(es) of triad size {4 * KIB}; the range held {held}"
    )


def test_a_counting_units_report_folder_moves_with_every_argument_that_names_it() -> None:
    """``Counting.moved``: a cluster unit's profiler writes below a folder of its worker's own: the
    report folder and each path below it in the prefix name the new folder, nothing else changes;
    a counting without a report (CUPTI counts in the worker) is left as it is."""
    c = Counting(
        "cuda-profiler",
        prefix=(
            "ncu",
            "-k",
            "regex:(^|x)/tmp/r(x|$)",
            "--log-file",
            "/tmp/r/g0/ncu.log",
            "-d",
            "/tmp/r/g0",
            "/tmp/r/g00",
        ),
        report="/tmp/r/g0",
    )
    m = c.moved("/w/own")
    assert m.prefix == (
        "ncu", "-k", "regex:(^|x)/tmp/r(x|$)", "--log-file", "/w/own/ncu.log", "-d", "/w/own", "/tmp/r/g00"
    )  # fmt: skip
    assert m.report == "/w/own" and (m.marker, m.count, m.metrics) == (c.marker, c.count, c.metrics)
    assert Counting("cupti-range").moved("/w/own") == Counting("cupti-range")
