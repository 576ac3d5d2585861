"""What each unit of a sweep drew (``bench.units``' promises), read from real host sweeps.

``bench.units`` promises that a unit draws afresh what the code under review does not decide: a pad
allocation of its own size before anything else, its own allocation order of interleaved kernels,
its own seeded turn order, a freshly loaded library (a fresh device object in-process, a fresh
process where the unit location is ``worker``), one pool of buffers only for kernels whose buffers
match (dtype included), and, for adaptive sweeps, extra units that keep interleaved pairs paired and
stay within their share of the time. Other tests count the units; these check what each drew.

The device is the real host device (real C kernels through ctypes) with its allocations, frees and
launches written down; the kernels write one line per loaded library into a log file (a static flag
in the library: a library loaded anew starts with the flag clear), with the process id.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hipexplore.bench import passes as ps
from hipexplore.bench import sweep
from hipexplore.bench import units as us
from hipexplore.bench.spec import SweepSpec
from hipexplore.bench.stats import StopRule
from hipexplore.devices.base import unbind
from hipexplore.devices.host import HostDevice
from hipexplore.kernels import catalog, user_kernel
from hipexplore.schema import Configuration

SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int logged_a, logged_b, logged_i;
static void note(int* done, const char* who) {
  if (*done) return;
  *done = 1;
  const char* p = getenv("HX_DRAW_LOG");
  if (!p) return;
  FILE* f = fopen(p, "a");
  if (!f) return;
  fprintf(f, "%d %s %p\n", (int)getpid(), who, (void*)done);
  fclose(f);
}
void hx_axpy(float* restrict y, const float* restrict x, float s, unsigned long long n) {
  note(&logged_a, "a");
  for (unsigned long long i = 0; i < n; ++i) y[i] = s * x[i] + y[i];
}
void hx_axpy_pad(float* restrict y, const float* restrict x, const float* restrict unused, float s,
                 unsigned long long n) {
  note(&logged_b, "b");
  for (unsigned long long i = 0; i < n; ++i) y[i] = s * x[i] + y[i];
}
void hx_iaxpy(int* restrict y, const int* restrict x, int s, unsigned long long n) {
  note(&logged_i, "i");
  for (unsigned long long i = 0; i < n; ++i) y[i] = s * x[i] + y[i];
}
"""
ARGS = "inout:y:f32[n],in:x:f32[n],s:f32=2,n:u64=n"
KERNELS = {
    "dr_a": ("hx_axpy", ARGS),
    "dr_copy": ("hx_axpy", ARGS),
    "dr_own": ("hx_axpy_pad", "inout:y:f32[n],in:x:f32[n],in:unused:f32[16],s:f32=2,n:u64=n"),
    "dr_int": ("hx_iaxpy", "inout:y:i32[n],in:x:i32[n],s:i32=2,n:u64=n"),
}  # f32's bytes, another dtype


class RecordingDevice(HostDevice):
    """The host device, writing down (device, what, detail) for every allocation, free and launch;
    a unit's fresh device (``fresh()``) is one of these too, with its own identity."""

    events: list[tuple[int, str, object]] = []

    def alloc(self, nbytes):
        buf = super().alloc(nbytes)
        RecordingDevice.events.append((id(self), "alloc", int(nbytes)))
        return buf

    def free(self, buf) -> None:
        RecordingDevice.events.append((id(self), "free", int(buf.nbytes)))
        super().free(buf)

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        RecordingDevice.events.append((id(self), "launch", unbind(kernel, shared_bytes)[0].__name__))
        super().launch(kernel, grid, block, args, shared_bytes)


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    src = tmp_path_factory.mktemp("src") / "draws.c"
    src.write_text(SRC)
    for name, (fn, args) in KERNELS.items():
        user_kernel(src, fn, args, name=name)
    yield
    for name in KERNELS:
        catalog.unregister(name)


@pytest.fixture
def log(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "loads.log"
    monkeypatch.setenv("HX_DRAW_LOG", str(path))
    return path


def _loads(log: Path) -> list[tuple[int, str, str]]:
    """(pid, kernel letter, address of its flag) per library load that launched it."""
    return [(int(p), w, a) for p, w, a in (line.split() for line in log.read_text().splitlines())]


def _per_device(dev0: RecordingDevice) -> list[list[tuple[str, object]]]:
    """The recorded events of each device in the order the devices first appear (unit order:
    unit 0 measures on the device given, each later unit on a fresh one)."""
    order: list[int] = []
    for d, _, _ in RecordingDevice.events:
        if d not in order:
            order.append(d)
    assert order and order[0] == id(dev0)
    return [[(w, x) for d2, w, x in RecordingDevice.events if d2 == d] for d in order]


def _run(names, units, seed, *, per_unit=48, device=None, **kw):
    return sweep(
        list(names),
        ["64KiB"],
        [1],
        ["none"],
        device=device or HostDevice(),
        iterations=per_unit * units,
        units=units,
        interleave=True,
        interleave_seed=seed,
        progress=False,
        reference=False,
        **kw,
    )


def _turns(res) -> dict[int, str]:
    """Per unit: the kernels in the order their chunks ran (the interleaved turn order)."""
    s = res.samples.sort_values(["pass_index", "chunk"]).drop_duplicates(["pass_index", "chunk"])
    return {int(k): "".join(g["kernel"].str[3]) for k, g in s.groupby("pass_index")}


@pytest.mark.timeout(240)
def test_each_unit_holds_its_own_pad_first_and_allocates_the_kernels_in_its_own_order(kernels, log) -> None:
    """Unit k (k >= 1) allocates ``passes.pad_bytes(k, seed)`` before any buffer, holds it until its
    last launch and frees it; the metadata records those pads; the kernel allocated (and warmed up)
    first moves between units, unit 0 keeping the spec's order. The seed chosen makes the order move
    (a fixed draw: the same in every run)."""
    seed = 6
    RecordingDevice.events = []
    dev = RecordingDevice()
    res = _run(["dr_a", "dr_own"], 4, seed, device=dev, worker=False)
    units = _per_device(dev)
    assert len(units) == 4  # a fresh device object per unit after the first
    pads = [ps.pad_bytes(k, seed=seed) for k in range(4)]
    assert res.metadata["sweep.unit_pad_bytes"] == ",".join(map(str, pads))
    assert len(set(pads[1:])) == 3 and pads != [ps.pad_bytes(k, seed=seed + 1) for k in range(4)]  # the seed moves them
    firsts = []
    for k, ev in enumerate(units):
        allocs = [x for w, x in ev if w == "alloc"]
        launches = [i for i, (w, _) in enumerate(ev) if w == "launch"]
        if k == 0:
            assert pads[0] == 0 and not set(pads[1:]) & set(allocs)  # the first unit holds no pad
        else:
            assert allocs[0] == pads[k], (k, allocs[:3])  # the pad before any buffer of the unit
            pad_free = max(i for i, (w, x) in enumerate(ev) if w == "free" and x == pads[k])
            assert pad_free > launches[-1]  # held through the unit's last launch
        firsts.append(ev[launches[0]][1])
    names = {"hx_axpy": "dr_a", "hx_axpy_pad": "dr_own"}
    firsts = [names[f] for f in firsts]
    assert firsts[0] == "dr_a", firsts  # unit 0: the spec's order
    assert set(firsts) == {"dr_a", "dr_own"}, firsts  # and the order moves between units


@pytest.mark.timeout(240)
def test_the_turn_order_is_drawn_per_unit_from_the_seed_and_the_unit(kernels, log) -> None:
    """Interleaved turns are shuffled by a generator seeded with (interleave seed, unit): every unit
    runs its own order (pairwise distinct here, 12 turns of 2 chunks per kernel each), a second run
    with the same seed runs exactly the same orders, another seed other ones."""
    one = _turns(_run(["dr_a", "dr_copy"], 4, 5, worker=False))
    assert len(one) == 4 and all(t.count("a") == t.count("c") for t in one.values())
    assert len(set(one.values())) == 4, one  # no two units share their draw
    assert _turns(_run(["dr_a", "dr_copy"], 4, 5, worker=False)) == one  # seeded: a run can be repeated
    other = _turns(_run(["dr_a", "dr_copy"], 4, 6, worker=False))
    assert all(other[k] != one[k] for k in range(4)), (one, other)


@pytest.mark.timeout(240)
def test_each_unit_loads_the_library_anew_in_process(kernels, log) -> None:
    """In-process (the host's default): a unit after the first measures on a fresh device object,
    whose library is a new dlopen: each kernel's static flag starts clear in every unit, at a new
    address, all in this process."""
    RecordingDevice.events = []
    res = _run(["dr_a", "dr_own"], 3, 0, device=RecordingDevice(), worker=False, per_unit=12)
    assert res.metadata["sweep.unit_location"] == "in-process"
    loads = _loads(log)
    for who in ("a", "b"):
        mine = [x for x in loads if x[1] == who]
        assert len(mine) == 3, loads  # one load per unit
        assert {p for p, _, _ in mine} == {os.getpid()}
        assert len({a for _, _, a in mine}) == 3  # three libraries, three copies of the flag


def _worker_children() -> list[int]:
    """This process's children that are sweep workers (``bench.worker_main``)."""
    me, out = os.getpid(), []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat_line = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat_line.rsplit(")", 1)[1].split()[1]) == me and b"hipexplore.bench.worker_main" in cmd:
            out.append(int(d))
    return out


@pytest.mark.timeout(300)
def test_worker_units_each_run_in_a_process_of_their_own(kernels, log) -> None:
    """``worker=True``: the unit location is ``worker`` and each unit's library is loaded in a
    process of its own (three pids, none of them this one), each holding its own pad there; while
    a unit measures, the next unit's worker is already started (its start-up costs no wall time)."""
    during: list[list[int]] = []
    res = _run(
        ["dr_a", "dr_own"], 3, 0, worker=True, per_unit=12, on_result=lambda row: during.append(_worker_children())
    )
    assert res.metadata["sweep.unit_location"] == "worker"
    loads = _loads(log)
    pids = {who: [p for p, w, _ in loads if w == who] for who in ("a", "b")}
    assert len(pids["a"]) == 3 and len(set(pids["a"])) == 3 and os.getpid() not in pids["a"], loads
    assert sorted(pids["a"]) == sorted(pids["b"])  # both kernels of a unit in the unit's process
    assert res.metadata["worker.pad_bytes"] == str(ps.pad_bytes(2, seed=0))  # the last unit's, held in its worker
    first_unit = during[0]  # unit 0's first row: unit 0's worker measures, unit 1's waits
    assert len(first_unit) == 2 and pids["a"][0] in first_unit and pids["a"][1] in first_unit, (during, pids)
    assert not _worker_children()  # every worker gone after the sweep


@pytest.mark.timeout(240)
def test_a_pool_is_shared_only_by_buffers_of_the_same_dtype(kernels, log) -> None:
    """Two kernels share one pool of buffer sets only when their buffers match one for one: the same
    f32 buffers do; i32 buffers of exactly the same bytes do not (each kernel reads its own typed data)."""
    same = _run(["dr_a", "dr_copy"], 1, 0, worker=False, per_unit=12)
    assert same.metadata["interleave.pool.65536"] == "shared"
    other = _run(["dr_a", "dr_int"], 1, 0, worker=False, per_unit=12)
    assert other.metadata["interleave.pool.65536"] == "own sets"
    # (the pool's rule itself, sweeprun.shared_pool: tests/bench/test_sweeprun.py)
    a, i = catalog.get("dr_a"), catalog.get("dr_int")
    n = a.elements(65536)
    assert n == i.elements(65536) and [b.nbytes(n, a.scalars(n)) for b in a.buffers()] == [
        b.nbytes(n, i.scalars(n)) for b in i.buffers()
    ]
    # the pristine host inputs kept between configurations are kept per dtype too: the i32 kernel
    # right after the f32 one of the same bytes and seed gets i32 data of its own
    from hipexplore.bench.inputs import host_inputs

    fa = host_inputs(a, n, a.scalars(n), seed=11)
    fi = host_inputs(i, n, i.scalars(n), seed=11)
    assert {x.dtype for x in fa.values()} == {np.dtype(np.float32)} and {x.dtype for x in fi.values()} == {
        np.dtype(np.int32)
    }


# -- the extras' pairing and budget: the unit plan fed with unit frames of known spread -------------------
def _unit_frame(kernel: str, unit: int, level: float) -> pd.DataFrame:
    """Samples of one unit of ``kernel`` (64 KiB, rotating 1, flush none, events) around ``level``."""
    t = level * (1 + 0.001 * np.sin(np.arange(16)))
    return pd.DataFrame(
        {
            "kernel": kernel,
            "size_bytes": 65536,
            "rotating_requested": "1",
            "flush": "none",
            "timer": "events",
            "time_s": t,
            "dropped": False,
            "pass_index": unit,
        }
    )


@pytest.mark.timeout(60)
def test_extra_units_keep_interleaved_pairs_paired_within_their_time_share(kernels) -> None:
    """Adaptive, interleaved: only dr_a's unit medians spread (dr_copy's agree), yet the extra unit
    measures both kernels of the configuration (a verdict pairs them unit by unit). The planned
    units took 3 s for 6 (configuration, unit)s; an extra of 2 configurations costs 1 s, within
    ``EXTRA_BUDGET`` (0.35 x 3 s); a second would pass it, so there is exactly one. Every unit,
    extras too, takes one of ``lo + 1`` shares of the rule (room for the extras)."""
    rule = StopRule()
    spec = SweepSpec(
        kernels=("dr_a", "dr_copy"),
        sizes=(65536,),
        rotating=(1,),
        flush=("none",),
        interleave=True,
        reference=False,
        stop=rule,
    )
    plan = us.UnitPlan(spec, (3, 6))
    jobs = []
    for k, spread in enumerate((1.0, 1.25, 0.8)):
        job = plan.next()
        assert job is not None and job.unit == k and not job.done
        jobs.append(job)
        frame = pd.concat([_unit_frame("dr_a", k, 1e-5 * spread), _unit_frame("dr_copy", k, 1e-5)], ignore_index=True)
        plan.finished(job, frame, False, 1.0)
    extra = plan.next()
    assert extra is not None and extra.unit == 3
    left_out = {c.kernel for c in extra.done}
    assert left_out == set(), extra.done  # both kernels of the wide configuration: the pair stays paired
    assert us.wide(pd.concat(plan.frames), spec) == {
        Configuration("dr_a", 65536, "1", "none", "events"),
        Configuration("dr_copy", 65536, "1", "none", "events"),
    }
    for job in (*jobs, extra):
        assert job.spec.units == 1
        assert job.spec.stop.timeout_s == pytest.approx(rule.timeout_s / 4)  # one of lo + 1 = 4 shares
        assert job.spec.stop.target_ci == pytest.approx(rule.target_ci * 2)
    plan.finished(extra, pd.concat([_unit_frame("dr_a", 3, 1e-5), _unit_frame("dr_copy", 3, 1e-5)]), False, 1.0)
    assert plan.next() is None  # 3 + 1 + 1 s would pass 3 x 1.35 s
    # without the spread nothing is added
    calm = us.UnitPlan(spec, (3, 6))
    for k in range(3):
        job = calm.next()
        calm.finished(job, pd.concat([_unit_frame("dr_a", k, 1e-5), _unit_frame("dr_copy", k, 1e-5)]), False, 1.0)
    assert calm.next() is None


@pytest.mark.timeout(60)
def test_an_extra_unit_waits_for_room_in_the_budget(kernels) -> None:
    """The budget counts the planned units' time per (configuration, unit): 3 s for 6 here, so an
    extra of the one wide configuration costs 0.5 s; extras run while the planned time plus the
    extras' plus the next one's stays within (1 + ``EXTRA_BUDGET``) x 3 s = 4.05 s: two of them."""
    spec = SweepSpec(kernels=("dr_a", "dr_own"), sizes=(65536,), rotating=(1,), flush=("none",), reference=False)
    plan = us.UnitPlan(spec, (3, 6))
    for k, spread in enumerate((1.0, 1.3, 0.75)):
        job = plan.next()
        plan.finished(
            job, pd.concat([_unit_frame("dr_a", k, 1e-5 * spread), _unit_frame("dr_own", k, 1e-5)]), False, 1.0
        )
    extra = plan.next()
    assert extra is not None and {c.kernel for c in extra.done} == {"dr_own"}  # not interleaved: no partner to keep
    plan.finished(extra, _unit_frame("dr_a", 3, 1e-5), False, 0.5)
    extra2 = plan.next()
    assert extra2 is not None and extra2.unit == 4  # 3 + 0.5 + 0.5 = 4.0 <= 4.05
    plan.finished(extra2, _unit_frame("dr_a", 4, 1e-5), False, 0.5)
    assert plan.next() is None  # 3 + 1.0 + 0.5 > 4.05
    # both configurations wide: an extra of both is priced at two configurations' time (1 s), so after
    # one that took 0.5 s the next (3 + 0.5 + 1 s) does not fit, however fast the first was
    plan = us.UnitPlan(spec, (3, 6))
    for k, spread in enumerate((1.0, 1.3, 0.75)):
        job = plan.next()
        plan.finished(
            job, pd.concat([_unit_frame("dr_a", k, 1e-5 * spread), _unit_frame("dr_own", k, 1e-5 * spread)]), False, 1.0
        )
    extra = plan.next()
    assert extra is not None and not extra.done
    plan.finished(extra, pd.concat([_unit_frame("dr_a", 3, 1e-5), _unit_frame("dr_own", 3, 1e-5)]), False, 0.5)
    assert plan.next() is None


@pytest.mark.timeout(60)
def test_extra_units_take_no_cold_reference(kernels) -> None:
    """The cold reference is taken by the planned units (each its share); an extra unit leaves
    every reference configuration out, measuring only the wide ones."""
    spec = SweepSpec(
        kernels=("dr_a",), sizes=(65536,), rotating=(1,), flush=("none",), reference=True, reference_samples=48
    )
    plan = us.UnitPlan(spec, (3, 6))
    refs = {c for c in spec.configurations() if c.is_reference}
    assert refs
    for k, spread in enumerate((1.0, 1.3, 0.75)):
        job = plan.next()
        assert not job.done & refs and job.spec.reference_samples == 16  # 48 over the 3 planned units
        plan.finished(job, _unit_frame("dr_a", k, 1e-5 * spread), False, 1.0)
    extra = plan.next()
    assert extra is not None and refs <= extra.done
    assert set(spec.configurations()) - extra.done == {Configuration("dr_a", 65536, "1", "none", "events")}


@pytest.mark.timeout(60)
def test_a_fixed_count_is_split_among_the_planned_units_without_room_for_extras() -> None:
    """A fixed count goes exactly to the planned units (no extras follow it): 10 over 3 is 4, 3, 3."""
    spec = SweepSpec(kernels=("triad",), sizes=(65536,), rotating=(1,), stop=StopRule(iterations=10), units=3)
    assert us.shares(spec, 3, 3) == 3
    plan = us.UnitPlan(spec, (3, 3))
    got = []
    while (job := plan.next()) is not None:
        got.append(job.spec.stop.iterations)
        plan.finished(job, None, False, 1.0)
    assert got == [4, 3, 3]
    assert us.shares(SweepSpec(kernels=("triad",), sizes=(65536,)), 3, 6) == 4


class PlacementClock(RecordingDevice):
    """A virtual clock (a stand-in for the timer only; the kernels really run): a launch takes 100 us,
    dr_own's (``hx_axpy_pad``) times the placement factor of its first buffer, drawn per allocation
    from a fixed sequence (+-8%), so its units on fresh buffers disagree as placements did on the
    H200 while dr_a's agree."""

    sequence = 0
    factor: dict[int, float] = {}

    def __init__(self, *a, **k) -> None:
        super().__init__(*a, **k)
        self.clock_ns = 0

    def alloc(self, nbytes):
        buf = super().alloc(nbytes)
        PlacementClock.sequence += 1
        PlacementClock.factor[buf.ptr] = 1.0 + float(
            np.random.default_rng([9, PlacementClock.sequence]).uniform(-0.08, 0.08)
        )
        return buf

    def launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        import ctypes

        super().launch(kernel, grid, block, args, shared_bytes)
        ptr = next((int(v.value) for v in args.values if isinstance(v, ctypes.c_void_p)), 0)
        placed = unbind(kernel, shared_bytes)[0].__name__ == "hx_axpy_pad"
        self.clock_ns += int(100_000 * (PlacementClock.factor.get(ptr, 1.0) if placed else 1.0))

    def record(self, event) -> None:
        self.clock_ns += 1
        event.t_ns = self.clock_ns


@pytest.mark.timeout(300)
def test_a_real_adaptive_sweep_adds_extra_units_to_both_kernels_of_a_pair(kernels, log) -> None:
    """``units="auto"``, interleaved, dr_own's unit medians moved by its placement, dr_a's not: the
    extra units (index 3 and up) measure both kernels of each configuration they measure (dr_a
    too, which alone would need none), so the verdict's pairs stay paired, and both end with the
    same number of units."""
    RecordingDevice.events = []
    res = sweep(
        ["dr_a", "dr_own"],
        ["64KiB", "128KiB"],
        [1],
        ["none"],
        device=PlacementClock(),
        units="auto",
        stop=StopRule(min_samples=16, max_samples=32, min_time_s=0.0, min_wall_s=0.0),
        interleave=True,
        interleave_seed=1,
        progress=False,
        reference=False,
        worker=False,
    )
    s = res.samples
    extra = s[s["pass_index"] >= 3]
    assert len(extra), res.summary[["kernel", "size_bytes", "passes"]]  # the spread earned extras
    for (size, unit), g in extra.groupby(["size_bytes", "pass_index"]):
        assert set(g["kernel"]) == {"dr_a", "dr_own"}, (size, unit)
    passes = res.summary.pivot(index="size_bytes", columns="kernel", values="passes")
    assert (passes["dr_a"] == passes["dr_own"]).all(), passes
    assert res.metadata["sweep.units_planned"] == "3"
