"""The counter pass (``hipexplore.bench.counters``), a phase of the one measurement pipeline: the
state rule and its thresholds, the promise check, the inputs' bytes from argument roles, the host's
refusal, the profilers' command lines, the parsers, the attribution of counted launches to
configurations, the counting unit's replay through the trials' own path on the host device, the
orchestrator running the counting unit after the timed units under a command prefix and joining
records (parsed from the H200's recorded ncu output) to the right summary rows, resume, the CLI on
the host, and (from the recordings in data/counters/h200/) the records the recorded raw outputs
give. GPU-marked tests run ``hipexplore bench ... --counters`` for real, with CUPTI in the counting
unit's worker and under Nsight Compute."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from conftest import GPU, need, need_tool, require_compiler
from hipexplore.bench import SweepSpec
from hipexplore.bench.counters import (COLD_AT, COUNTER_COLUMNS, HOST_LINE, RECORD_COLUMNS, WARM_AT, Counting, CountersSkipped, asks_cold,
                                       cache_state, collect, counted_configurations, counter_backend, input_bytes,
                                       join_summary, promise_check)
from hipexplore.bench.counters.backends import CounterError, Launch, base_name, name_pattern, reports
from hipexplore.bench.counters.registry import from_description
from hipexplore.bench.counters.counting import MANIFEST, attribute
from hipexplore.bench.counters.record import make_record
from hipexplore.bench.counters.ncu import NCU_GROUPS, NCU_METRICS, NcuBackend, ncu_command, parse_csv, pass_note
from hipexplore.bench.counters.phase import CounterPhase, NoMarker
from hipexplore.bench.counters.rocprof import GROUPS, RocprofBackend, parse_counter_collection, tcc_bytes
from hipexplore.bench.executors import InProcessExecutor
from hipexplore.bench.orchestrator import Orchestrator
from hipexplore.bench.record import Collector
from hipexplore.bench.result import SweepHooks
from hipexplore.bench.stats import StopRule
from hipexplore.bench.sweeprun import SweepRun
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog, user_kernel
from hipexplore.schema import SUMMARY_COLUMNS, Configuration

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "data" / "counters" / "h200"
KIB, MIB = 1 << 10, 1 << 20


@pytest.fixture(scope="module")
def dev(tmp_path_factory) -> HostDevice:
    require_compiler("host")
    d = HostDevice(llc_bytes=128 * KIB)
    d.cache = CompileCache(disk_dir=tmp_path_factory.mktemp("ccache"))
    return d


# -- the rule, the promise, the inputs ----------------------------------------------------------------
def test_state_rule_thresholds() -> None:
    assert (COLD_AT, WARM_AT) == (0.9, 0.1)
    assert [cache_state(x) for x in (1.0, 0.9, 0.8999, 0.5, 0.1001, 0.1, 0.0)] == \
        ["cold", "cold", "partial", "partial", "partial", "warm", "warm"]
    assert cache_state(1.4) == "cold"  # over-fetch: more than the inputs read is still cold
    assert cache_state(math.nan) == "n/a"


def test_which_configurations_promise_cold_and_the_flag() -> None:
    assert asks_cold("1", "l2-write") == "flush l2-write" and asks_cold("4", "l2-read") == "flush l2-read"
    assert asks_cold(" AUTO ", "none") == "rotating auto"
    assert asks_cold("5", "none") == "" and asks_cold("1", "icache") == "" and asks_cold("1", "inline-icache") == ""
    assert asks_cold("1", "l3-magic") == ""  # a recorded flush name this version does not know promises nothing
    assert promise_check("5", "none", 0.0) == ("", "")
    assert promise_check("auto", "none", 0.97) == ("kept", "")
    state, line = promise_check("auto", "none", 0.04, 85_000, 2 * MIB)
    assert state == "broken"
    assert line.startswith("asked cold (rotating auto) but counted warm: cold fraction 0.04") and "\n" not in line
    assert "2 MiB of inputs" in line
    assert promise_check("1", "l2-write", 0.5)[1].startswith("asked cold (flush l2-write) but counted partial")
    assert promise_check("auto", "l2-write", math.nan) == ("", "")  # no inputs: neither kept nor broken
    # inputs, but no DRAM bytes counted (a backend without the metric): unknown, and said, not silent
    assert promise_check("auto", "none", math.nan, math.nan, 2 * MIB) == \
        ("unverified", "asked cold (rotating auto) but its DRAM bytes were not counted: the state is unknown")
    assert promise_check("5", "none", math.nan, math.nan, 2 * MIB) == ("", "")  # not asked: nothing to verify


def test_the_cold_promise_is_checked_per_launch_not_only_on_the_mean() -> None:
    """A kernel that skips its reads on one launch in twenty averages 0.95 (cold): the launch that
    read nothing breaks the promise, and the line says how many launches and the least (issue 51)."""
    inputs = 2 * MIB
    each = [1.0] * 19 + [0.0]
    state, line = promise_check("1", "l2-read", sum(each) / 20, 0.95 * inputs, inputs, each)
    assert state == "broken" and line == ("asked cold (flush l2-read) but 1 of 20 counted launches read less than 0.9 of "
                                          "their inputs from DRAM (the least 0.00; the mean 0.95 hides them)")
    assert promise_check("1", "l2-read", 1.0, inputs, inputs, [1.0001] * 12) == ("kept", "")
    assert promise_check("5", "none", 0.5, inputs / 2, inputs, [0.0, 1.0]) == ("", "")  # not asked: nothing to break
    # the record takes each launch's own fraction
    launches = [{"dram_read_bytes": float(inputs), "dram_write_bytes": 0.0}] * 19 + [{"dram_read_bytes": 0.0, "dram_write_bytes": 0.0}]
    rec = make_record(kernel="k", size_bytes=MIB, rotating_requested="1", flush="l2-read", rotating=1, backend="b",
                      launches=launches, warmup=0, inputs=inputs)
    assert rec.cold_promise == "broken" and "1 of 20 counted launches" in rec.counter_warning and rec.cache_state == "cold"


def test_input_bytes_of_catalog_kernels() -> None:
    n = catalog.get("triad").elements(MIB)
    assert input_bytes(catalog.get("triad"), n) == 2 * MIB  # b and c in; a out
    assert input_bytes(catalog.get("copy"), n) == MIB
    assert input_bytes(catalog.get("fill"), n) == 0  # nothing read: no state
    assert input_bytes(catalog.get("flush-l2-read"), 1024) == 16 * 1024 + 0  # buf in (4*n u32), sink out


def test_input_bytes_follow_roles_and_counts_of_a_source_kernel(tmp_path) -> None:
    src = tmp_path / "k.cu"
    src.write_text('extern "C" __global__ void k(float* o, const float* a, double* acc, const int* idx, int rows, int cols) {}\n')
    k = user_kernel(str(src), "k", "out:o:f32[rows*cols],in:a:f32[rows*cols],inout:acc:f64[rows],in:idx:i32[17],"
                                   "rows:i32=n//64,cols:i32=64", register_it=False)
    n = k.elements(MIB)  # 262144 floats: rows 4096, cols 64
    assert input_bytes(k, n) == 4 * n + 8 * 4096 + 4 * 17  # a + acc (inout) + idx; o is not read


def test_counted_configurations_leave_out_the_reference_and_merge_timers() -> None:
    spec = SweepSpec(kernels=("triad",), sizes=(MIB,), rotating=(1, "auto"), flush=("none", "l2-write"),
                     timers=("events", "in-kernel"))
    got = counted_configurations(spec)
    assert got == [Configuration("triad", MIB, r, f) for r in ("1", "auto") for f in ("none", "l2-write")]
    with pytest.raises(ConfigError, match="no configuration to count"):
        counted_configurations(spec, [Configuration("triad", MIB, "1", "cold-reference")])


# -- the host, and the profilers' command lines ---------------------------------------------------
def test_the_host_refuses_in_one_line(dev) -> None:
    for counters in (True, "ncu", "rocprofv3"):
        backend, why = counter_backend(SweepSpec(kernels=("triad",), sizes=(64 * KIB,), counters=counters), dev)
        assert backend is None and "\n" not in why
    assert counter_backend(SweepSpec(counters=True), dev)[1] == HOST_LINE
    assert counter_backend(SweepSpec(counters="ncu"), dev)[1] == "ncu counts NVIDIA GPUs; the device is host:0"
    assert counter_backend(SweepSpec(counters="cupti"), dev)[1] == "CUPTI counts NVIDIA GPUs; the device is host:0"


def test_ncu_command_line(tmp_path) -> None:
    pattern = name_pattern(["triad", "transpose_tiled<32, 8>"])
    cmd = ncu_command("/usr/local/cuda/bin/ncu", NCU_METRICS, pattern, tmp_path / "ncu.log")
    assert cmd == ["/usr/local/cuda/bin/ncu", "--target-processes", "all", "--profile-from-start", "off",
                   "--cache-control", "none", "--clock-control", "none",
                   "-k", "regex:(^|[^A-Za-z0-9_])(transpose_tiled|triad)([^A-Za-z0-9_]|$)",
                   "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct",
                   "--csv", "--print-units", "base", "--log-file", str(tmp_path / "ncu.log")]
    assert "--print-units" not in ncu_command("ncu", NCU_METRICS, pattern, tmp_path / "l", print_units=False)
    assert "--profile-from-start" not in ncu_command("ncu", NCU_METRICS, pattern, tmp_path / "l", profiler_range=False)
    whole = from_description(NcuBackend(ncu=str(tmp_path / "none"), profiler_range=False).describe())
    assert (whole.profiler_range, whole.marker, whole.captures_warmup) == (False, "none", True)
    assert (NcuBackend().marker, NcuBackend().captures_warmup) == ("cuda-profiler", False)
    # the backend's own prefix: application replay (kernel replay saves what a launch can reach first)
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    be = NcuBackend(ncu=str(fake))
    # one counting unit per replay pass: the DRAM bytes alone, then the hit rate (a second pass's save
    # before the first streamed the worker's allocations through the L2: every launch read cold)
    assert be.groups(None) == [("dram__bytes_read.sum", "dram__bytes_write.sum"), ("lts__t_sector_hit_rate.pct",)]
    prefix = be.prefix(be.groups(None)[0], tmp_path, ["triad"])
    assert prefix[prefix.index("--replay-mode") + 1] == "kernel" and prefix.index("--replay-mode") < prefix.index("-k")
    assert prefix[prefix.index("--metrics") + 1] == "dram__bytes_read.sum,dram__bytes_write.sum"
    again = from_description(NcuBackend(ncu=str(fake), replay="application").describe())
    assert again.replay == "application" and again.groups(None) == be.groups(None)
    assert NcuBackend(ncu=str(fake), metrics=("dram__bytes_read.sum",)).groups(None) == [("dram__bytes_read.sum",)]
    with pytest.raises(ConfigError, match="replay mode must be one of kernel, application, got 'range'"):
        NcuBackend(replay="range")
    for name in ("triad", "void triad(float*, float const*)", "transpose_tiled", "void transpose_tiled<32, 8>(float*)"):
        assert reports(name, "triad") or reports(name, "transpose_tiled<32, 8>"), name
    for name in ("hx_write_flush", "hx_read_flush", "triad_timed", "mytriad", "hx_spin"):
        assert not reports(name, "triad"), name
    assert base_name("void transpose_tiled<32, 8>(float*)") == "transpose_tiled"
    with pytest.raises(ConfigError, match="no function name"):
        base_name("<lambda>")


def test_rocprofv3_command_line_groups_and_label(tmp_path, dev) -> None:
    be = RocprofBackend(rocprofv3=str(tmp_path / "no-such-rocprofv3"))
    assert be.available(dev) == "rocprofv3 counts AMD GPUs; the device is host:0"
    assert [be.groups(type("D", (), {"target": t})()) for t in ("gfx942:sramecc+:xnack-", "gfx90a")] == \
        [list(GROUPS["gfx942"]), list(GROUPS["gfx90a"])]
    assert all(len(g) <= 2 for gs in GROUPS.values() for g in gs)  # --pmc fails unless a set fits one pass
    cmd = be.prefix(("TCC_HIT_sum", "TCC_MISS_sum"), tmp_path, ["triad"])
    assert cmd == ["rocprofv3", "--pmc", "TCC_HIT_sum", "TCC_MISS_sum", "--kernel-include-regex",
                   "(^|[^A-Za-z0-9_])(triad)([^A-Za-z0-9_]|$)", "--output-format", "csv", "-d", str(tmp_path / "rocprof"),
                   "-o", "counters", "--"]
    assert be.describe()["label"] == "rocprofv3 (built, not run)"


def test_tcc_bytes_formulas() -> None:
    # gfx942 (FETCH_SIZE/WRITE_SIZE of rocprofiler-sdk's counter_defs.yaml): 1 GiB read as 128-byte
    # requests (TCC_BUBBLE), 152 more 64-byte ones; 1 GiB written as 64-byte requests
    got = tcc_bytes({"TCC_BUBBLE_sum": 8388608, "TCC_EA0_RDREQ_sum": 8388760, "TCC_EA0_RDREQ_32B_sum": 0,
                     "TCC_EA0_WRREQ_sum": 16777216, "TCC_EA0_WRREQ_64B_sum": 16777216, "TCC_HIT_sum": 3, "TCC_MISS_sum": 1},
                    "gfx942")
    assert got["dram_read_bytes"] == (1 << 30) + 64 * 152 and got["dram_write_bytes"] == 1 << 30 and got["l2_hit_rate"] == 0.75
    got = tcc_bytes({"TCC_EA_RDREQ_sum": 10, "TCC_EA_RDREQ_32B_sum": 4, "TCC_EA_WRREQ_sum": 5, "TCC_EA_WRREQ_64B_sum": 2,
                     "TCC_HIT_sum": 0, "TCC_MISS_sum": 0}, "gfx90a")
    assert (got["dram_read_bytes"], got["dram_write_bytes"]) == (6 * 64 + 4 * 32, 2 * 64 + 3 * 32)
    assert math.isnan(got["l2_hit_rate"])


# -- parsers on text in the documented formats (the recorded outputs are tested further down) ----------
DETAILS = """==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "triad" - 0: 0%....50%....100% - 1 pass
==PROF== Profiling "triad" - 1: 0%....50%....100% - 1 pass
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","triad","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","2,101,248"
"0","4242","python3.12","127.0.0.1","triad","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","0.52"
"1","4242","python3.12","127.0.0.1","triad","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","1.50"
"1","4242","python3.12","127.0.0.1","triad","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","4.10"
"1","4242","python3.12","127.0.0.1","triad","1","13","(256, 1, 1)","(528, 1, 1)","0","9.0","Command line profiler metrics","lts__t_sector_hit_rate.pct","%","n/a"
"""
RAW = """"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum"
"","","","","","","","","","Kbyte","byte"
"1","7","python3","h","stencil2d","1","7","0","9.0","2.5","1,048,576"
"0","7","python3","h","stencil2d","1","7","0","9.0","1,024","0"
"""


def test_ncu_parser_reads_the_details_and_raw_pages() -> None:
    got = parse_csv(DETAILS)
    assert [x.kernel for x in got] == ["triad", "triad"]
    assert got[0].values == {"dram__bytes_read.sum": 2101248.0, "lts__t_sector_hit_rate.pct": 0.52}
    assert got[1].values["dram__bytes_read.sum"] == 1.5e6 and got[1].values["gpu__time_duration.sum"] == pytest.approx(4.1e-6)
    assert math.isnan(got[1].values["lts__t_sector_hit_rate.pct"])
    raw = parse_csv(RAW)  # rows by ID, the units row applied
    assert [x.values for x in raw] == [{"dram__bytes_read.sum": 1.024e6, "dram__bytes_write.sum": 0.0},
                                       {"dram__bytes_read.sum": 2500.0, "dram__bytes_write.sum": 1048576.0}]
    assert pass_note(DETAILS) == ""
    assert "2 passes" in pass_note(DETAILS.replace("- 1 pass", "- 2 passes"))
    with pytest.raises(CounterError, match="no CSV header"):
        parse_csv("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")


def test_rocprofv3_parser_reads_counter_collection() -> None:
    head = ('"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id",'
            '"Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
            '"Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"')
    rows = [f'{d},{d},4,1,99,99,1048576,10,"{k}",256,0,0,8,0,16,"{c}",{v},1,2'
            for d, k, c, v in ((2, "triad", "TCC_HIT_sum", "7.000000"), (1, "triad", "TCC_HIT_sum", "5.000000"),
                               (1, "triad", "TCC_MISS_sum", "1.000000"), (1, "triad", "TCC_MISS_sum", "2.000000"))]
    got = parse_counter_collection("\n".join([head, *rows]))
    assert [x.values for x in got] == [{"TCC_HIT_sum": 5.0, "TCC_MISS_sum": 3.0}, {"TCC_HIT_sum": 7.0}]
    with pytest.raises(CounterError, match="needs columns"):
        parse_counter_collection('"Kernel_Name","x"\n"a",1')


def _entry(kernel: str, entry: str, warmup: int, count: int) -> dict:
    return {"kernel": kernel, "entry": entry, "size_bytes": MIB, "rotating_requested": "1", "rotating": 1, "flush": "none",
            "warmup": warmup, "count": count}


def test_attribution_by_order_and_name() -> None:
    entries = [_entry("triad", "triad", 4, 2), _entry("stencil", "stencil2d", 6, 3)]
    counted = [Launch("triad", {"i": i}) for i in range(2)] + [Launch("stencil2d", {"i": i}) for i in range(3)]
    owned, note = attribute(counted, entries, False, "ncu")
    assert [[x.values["i"] for x in o] for o in owned] == [[0, 1], [0, 1, 2]] and note == ""
    whole = [Launch("triad", {"i": i}) for i in range(6)] + [Launch("stencil2d", {"i": i}) for i in range(9)]
    owned, note = attribute(whole, entries, False, "ncu")  # the warm-up reported although not asked: by the total
    assert [[x.values["i"] for x in o] for o in owned] == [[4, 5], [6, 7, 8]] and "before the range" in note
    with pytest.raises(CounterError, match="reported 4 launch"):
        attribute(counted[:4], entries, False, "ncu")
    with pytest.raises(CounterError, match="expected kernel 'stencil2d', got \\['triad'\\]"):
        attribute([Launch("triad")] * 5, entries, False, "ncu")


# -- the counting unit's replay, on the host device ------------------------------------------------
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
    spec = SweepSpec(kernels=("triad",), sizes=(64 * KIB,), rotating=(3,), flush=("none", "l2-write"),
                     stop=StopRule(iterations=6), units=1, warmup_s=0.0)
    watched = _Watched(dev)
    phase = CounterPhase(Counting("none", 5))
    phase.marker = marks = _Marks(watched)
    channel = Collector()
    run = SweepRun(spec, watched, channel, run_id="count", counting=Counting("none", 5), phases=(phase,))
    assert run.measure() is False
    assert channel.rows == [] and channel.frames == []  # no timed sample, no row
    entries = channel.counted_entries
    assert [(e["rotating_requested"], e["flush"], e["rotating"], e["timed"]) for e in entries] == \
        [("3", "none", 3, 5), ("3", "l2-write", 3, 5)]
    kernel = next(k for k, _ in watched.calls if k is not run.flushers["l2-write"].kernel)
    for e, (lo, hi) in zip(entries, zip(marks.at[0::2], marks.at[1::2])):
        inside = watched.calls[lo:hi]
        launched = [a for k, a in inside if k is kernel]
        assert len(launched) == e["count"] == len(e["launches"])  # the manifest is every launch in the range, in order
        timed = [(s, p) for s, p in e["launches"] if p >= 0]
        assert [s for s, _ in timed] == [i % 3 for i in range(5)] and [p for _, p in timed] == [0, 1, 2, 3, 0]
        for j, (s, p) in enumerate(e["launches"]):  # an untimed launch repeats a neighbour's set (a lead, a trail)
            if p < 0:
                assert s in {e["launches"][j - 1][0] if j else None, *(x for x, _ in e["launches"][j + 1:j + 2])}
        if e["flush"] == "l2-write":
            flush = run.flushers["l2-write"].kernel
            assert [k is flush for k, _ in inside] == [True, False] * len(launched)  # every launch after its flush
        else:
            assert all(k is kernel for k, _ in inside)
        assert e["warmup"] > 0 and e["input_bytes"] == 128 * KIB and e["entry"] == "triad"
    ids = {}
    for s_, (_k, a) in zip([s for e in entries for s, _ in e["launches"]],
                           [c for lo, hi in zip(marks.at[0::2], marks.at[1::2]) for c in watched.calls[lo:hi] if c[0] is kernel]):
        ids.setdefault(s_, set()).add(id(a))
    # set i is always the same buffers, and the three sets are three: the manifest names the sets launched
    assert sorted(ids) == [0, 1, 2] and all(len(v) == 1 for v in ids.values()) and len({next(iter(v)) for v in ids.values()}) == 3


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


@pytest.mark.parametrize("timing", [{}, {"chunk": 1, "chunk_lead": 1, "chunk_trail": 2}, {"chunk": 7, "chunk_lead": 0, "chunk_trail": 0},
                                    {"chunk": 3, "chunk_lead": 2, "chunk_trail": 1}])
def test_the_phase_announces_a_launch_bound_its_range_never_passes(dev, timing) -> None:
    """A profiler in the process sizes its record of ranges before the range opens (CUPTI drops
    the ranges past its counter-data image: the pass then fails). An ``auto`` rotation of hundreds
    of sets replays hundreds of timed launches, each chunk with its leads and trail: the bound the
    phase announces covers what the range holds, whatever the chunking, and is not far above it."""
    from hipexplore.bench.counters.cupti import CuptiRanges

    spec = SweepSpec(kernels=("triad",), sizes=(4 * KIB,), rotating=(1, 301), flush=("none",), stop=StopRule(iterations=301),
                     units=1, warmup_s=0.0, **timing)
    phase = CounterPhase(Counting("none", 12))
    phase.marker = phase.tap.marker = marker = _Bound()
    run = SweepRun(spec, dev, Collector(), run_id="bound", counting=Counting("none", 12), phases=(phase,))
    run.measure()
    entries = run.channel.counted_entries
    assert [e["timed"] for e in entries] == [12, 301] and [e["count"] for e in entries] == marker.held
    for bound, held in zip(marker.bounds, marker.held):
        assert held <= bound <= 2 * held, (bound, held)  # a random lead is counted in every chunk: half of them have one
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
    spec = SweepSpec(kernels=("triad",), sizes=(4 * KIB,), rotating=(1, 3), flush=("none",), stop=StopRule(iterations=12),
                     units=1, warmup_s=0.0)
    for marker, ranges in ((_First(), 3), (_Bound(), 2)):
        phase = CounterPhase(Counting("none", 12))
        phase.marker = phase.tap.marker = marker
        run = SweepRun(spec, dev, Collector(), run_id="first", counting=Counting("none", 12), phases=(phase,))
        run.measure()
        entries = run.channel.counted_entries
        assert len(marker.held) == ranges and len(entries) == 2, (marker.name, marker.held)
        assert [e["count"] for e in entries] == marker.held[-2:]  # the entries are the last two ranges'
        if ranges == 3:
            assert marker.taken == marker.held and [len(e["values"]) for e in entries] == marker.held[-2:]


# -- the orchestrator: the counting unit after the timed units, under a prefix, joined to the rows ----
#: where each host configuration's counted launches come from: the H200's recorded ncu output of
#: triad at 1 MiB (the same kernel and size). ("auto", "none") is given launches that read their
#: inputs from DRAM (recorded after an l2-write flush); ("auto", "l2-write") the stand-alone replay's
#: own 40 sets, which read partial (0.73: why the pass replays the timed path now): a broken cold
#: promise, to see it flagged
RECORDED_FOR = {("1", "none"): ("triad-1MiB", "1", "none"), ("1", "l2-write"): ("triad-1MiB-l2write", "1", "l2-write"),
                ("auto", "none"): ("triad-1MiB-l2write", "1", "l2-write"), ("auto", "l2-write"): ("triad-1MiB", "auto", "none")}
UNTIMED_READ = 1e12  # what a chunk's untimed lead and trail "read": a record that averaged them would show it


def _recorded_launches(folder: str, rotating: str, flush: str) -> list[dict[str, float]]:
    manifest = json.loads((RECORDED / folder / "group-0" / MANIFEST).read_text())
    launches = parse_csv((RECORDED / folder / "group-0" / "ncu.log").read_text())
    i = 0
    for e in manifest["entries"]:
        if (e["rotating_requested"], e["flush"]) == (rotating, flush):
            return [x.values for x in launches[i:i + e["count"]]]
        i += e["count"]
    raise AssertionError(f"{folder} has no {rotating}/{flush}")


class _RecordedNcu(NcuBackend):
    """Nsight Compute as the H200 recorded it, for a host without a GPU: the counting unit runs for
    real (a sweep worker under ``wrapper``, a prefix that writes its argv to a file and execs the
    rest), and its manifest's launches are given, as ncu's own CSV lines in ncu.log, the launches
    ncu recorded on the H200 (``RECORDED_FOR``): timed launch i the i-th recorded one. The real
    parser, attribution, record and join read them."""

    def __init__(self, wrapper: Path, argv_file: Path, seen: list) -> None:
        # one group of the four metrics, as the H200 recording was made (before NCU_GROUPS split them)
        super().__init__(ncu=str(wrapper), metrics=("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
                                                    "gpu__time_duration.sum"))
        self.marker, self.captures_warmup = "none", False  # the host has no cuProfilerStart; the log holds the range only
        self.wrapper, self.argv_file, self.seen, self.calls = wrapper, argv_file, seen, []

    def available(self, device) -> str | None:
        return None

    def prefix(self, group, out_dir, entries):
        self.calls.append(len(self.seen))  # how many timed rows had arrived when the counting unit started
        return [str(self.wrapper), str(self.argv_file)]

    def parse(self, out_dir):
        entries = json.loads((out_dir / MANIFEST).read_text())["entries"]
        lines = ['"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
                 '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"']
        ident = 0
        for e in entries:
            recorded = _recorded_launches(*RECORDED_FOR[(e["rotating_requested"], e["flush"])])
            timed = iter(recorded)
            for _set, position in e["launches"]:
                values = next(timed) if position >= 0 else {"dram__bytes_read.sum": UNTIMED_READ, "dram__bytes_write.sum": 0.0,
                                                            "lts__t_sector_hit_rate.pct": 0.0}
                for name, value in values.items():
                    unit = "%" if name.endswith(".pct") else "nsecond" if name.startswith("gpu__time") else "byte"
                    scale = 1e9 if unit == "nsecond" else 1
                    lines.append(f'"{ident}","1","python3","h","{e["entry"]}","1","7","(256, 1, 1)","(4, 1, 1)","0","9.0",'
                                 f'"Command line profiler metrics","{name}","{unit}","{value * scale:.6f}"')
                ident += 1
        (out_dir / "ncu.log").write_text("\n".join(lines) + "\n")
        return super().parse(out_dir)

    def describe(self):  # not ncu_version(): the wrapper is no ncu to ask
        return {"name": "ncu", "label": "ncu (recorded on the H200)", "metrics": list(self.metrics), "profiler_range": False}


@pytest.fixture
def recorded_ncu(tmp_path):
    if not (RECORDED / "triad-1MiB" / "group-0" / "ncu.log").is_file():
        need("the recorded triad passes under data/counters/h200", "scripts/h200_all.sh counters records them")
    wrapper = tmp_path / "wrap.sh"
    wrapper.write_text('#!/bin/sh\nout="$1"; shift\nprintf \'%s\\n\' "$@" > "$out"\nexec "$@"\n')
    wrapper.chmod(0o755)
    seen: list = []
    return _RecordedNcu(wrapper, tmp_path / "argv.txt", seen), seen


def _host_spec(**kw) -> SweepSpec:
    return SweepSpec(kernels=("triad",), sizes=(MIB,), rotating=(1, "auto"), flush=("none", "l2-write"),
                     stop=StopRule(iterations=4), units=1, reference_samples=4, warmup_s=0.0, **kw)


def _sweep(dev, spec, out, backend=None, seen=None):
    hooks = SweepHooks(on_result=(seen.append if seen is not None else None))
    return Orchestrator(spec, InProcessExecutor(dev), out=out, hooks=hooks, progress=False, counter_backend=backend).run()


def _by(summary) -> dict:
    return {(r["rotating_requested"], r["flush"]): r for r in summary.to_dict("records")}


def test_the_orchestrator_counts_after_the_timed_units_under_a_prefix_and_joins_the_rows(dev, tmp_path, recorded_ncu) -> None:
    backend, seen = recorded_ncu
    out = tmp_path / "o.parquet"
    res = _sweep(dev, _host_spec(counters=True), out, backend, seen)
    assert backend.calls == [5]  # one counting unit, started after all 5 timed rows (4 configurations and the reference)
    argv = backend.argv_file.read_text().splitlines()
    assert argv[:2] == [sys.executable, "-I"]  # the prefix, then the isolated interpreter of a sweep worker
    assert list(res.summary.columns) == [*SUMMARY_COLUMNS, *COUNTER_COLUMNS]  # schema.COUNTER_COLUMNS, re-exported
    rows = _by(res.summary)
    for key, (folder, rot, flush) in RECORDED_FOR.items():
        timed = _recorded_launches(folder, rot, flush)
        want = sum(x["dram__bytes_read.sum"] for x in timed) / len(timed)
        assert rows[key]["dram_read_bytes"] == pytest.approx(want)  # the timed launches' mean: leads and trails left out
        assert rows[key]["cold_fraction"] == pytest.approx(want / (2 * MIB)) and rows[key]["input_bytes"] == 2 * MIB
        assert rows[key]["counter_backend"] == "ncu (recorded on the H200)" and rows[key]["counter_launches"] == 12
    states = {k: (r["cache_state"], r["cold_promise"]) for k, r in rows.items()}
    assert states == {("1", "none"): ("warm", ""), ("1", "l2-write"): ("cold", "kept"), ("auto", "none"): ("cold", "kept"),
                      ("auto", "l2-write"): ("partial", "broken"), ("1", "cold-reference"): ("", "")}
    broken = rows[("auto", "l2-write")]
    assert broken["counter_warning"].startswith("asked cold (flush l2-write) but counted partial")
    assert broken["counter_warning"] in broken["warning"]
    assert rows[("1", "none")]["median_s"] > 0  # the timed columns are the sweep's own
    assert res.metadata["counters.status"].startswith("counted 4 configuration(s) with ncu (recorded on the H200)")
    kept = tmp_path / "o.counters" / "triad-1048576"
    assert {p.name for p in kept.rglob("*")} >= {"backend.json", "group-0", MANIFEST, "ncu.log"}
    assert collect(kept, backend=backend).frame()["cache_state"].tolist() == ["warm", "cold", "cold", "partial"]
    on_disk = pd.read_parquet(tmp_path / "o.summary.parquet")
    assert on_disk["cache_state"].tolist() == res.summary["cache_state"].tolist()
    from hipexplore.verdicts import compare

    assert len(compare(str(out), str(out))) == 5  # a file with counters reads back as any result (bench.readback)
    from hipexplore.report.recorded import load_recorded

    assert load_recorded(out).summary["cache_state"].tolist() == res.summary["cache_state"].tolist()  # and in the report


def test_resume_counts_a_finished_sweep_without_timing_it_again(dev, tmp_path, recorded_ncu) -> None:
    backend, seen = recorded_ncu
    out = tmp_path / "o.parquet"
    first = _sweep(dev, _host_spec(), out, None, seen)  # no counters asked: the columns of a sweep without them
    assert list(first.summary.columns) == list(SUMMARY_COLUMNS) and len(seen) == 5
    seen.clear()
    again = _sweep(dev, _host_spec(counters=True), out, backend, seen)  # counters are not part of measurement(): resumed
    assert seen == [] and backend.calls == [0]  # nothing timed again; the counting unit ran
    assert again.summary["median_s"].tolist() == first.summary["median_s"].tolist()
    assert _by(again.summary)[("1", "none")]["cache_state"] == "warm"
    third = _sweep(dev, _host_spec(counters=True), out, backend, seen)  # every configuration counted: nothing runs
    assert seen == [] and backend.calls == [0] and third.metadata["counters.status"].startswith("every configuration")
    assert third.summary["cache_state"].tolist() == again.summary["cache_state"].tolist()
    plain = _sweep(dev, _host_spec(), out, None, seen)  # resumed without counters: the counted columns stay
    assert plain.summary["cache_state"].tolist() == again.summary["cache_state"].tolist()


def test_a_failed_counter_pass_is_one_line_and_the_sweep_is_kept(dev, tmp_path, recorded_ncu) -> None:
    backend, seen = recorded_ncu
    backend.prefix = lambda group, out_dir, entries: ["false"]  # a profiler that exits before starting the worker
    with pytest.warns(CountersSkipped) as caught:
        res = _sweep(dev, _host_spec(counters=True), tmp_path / "o.parquet", backend, seen)
    (line,) = [str(w.message) for w in caught if w.category is CountersSkipped]
    # the worker's death is a KernelFault naming how it ended, whether it died before or after its job was sent
    assert line.startswith("no counters: the counter pass failed (KernelFault: ") and "exit code 1" in line
    assert "\n" not in line
    assert res.metadata["counters.status"] == line
    assert len(seen) == 5 and res.summary["median_s"].notna().all()  # every timed row kept
    assert (res.summary["cache_state"].fillna("") == "").all()
    assert pd.read_parquet(tmp_path / "o.summary.parquet")["median_s"].notna().all()


def test_the_prefix_goes_in_front_of_the_isolated_interpreter() -> None:
    from hipexplore.interpreter import isolated_argv

    argv = isolated_argv("pass", "a", prefix=("ncu", "--csv"))
    assert argv[:4] == ["ncu", "--csv", sys.executable, "-I"] and argv[-1] == "a"


def test_counters_are_an_option_outside_the_measurement() -> None:
    from hipexplore.bench import sweep

    assert SweepSpec().counters is False and SweepSpec(counters="ON").counters is True
    assert SweepSpec(counters="ncu").counters == "ncu" and SweepSpec(counters="off").counters is False
    assert SweepSpec(counters=True).measurement() == SweepSpec().measurement()  # rows resume either way
    assert json.loads(SweepSpec(counters="rocprofv3").record()["sweep.spec"])["counters"] == "rocprofv3"
    import inspect

    assert inspect.signature(sweep).parameters["counters"].default is False
    with pytest.raises(ConfigError, match="counters must be on, off or a backend \\(cupti, ncu, rocprofv3\\), got 'triad'"):
        SweepSpec(counters="triad")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "hipexplore", "bench", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=240)


def test_the_cli_on_the_host_says_in_one_line_why_there_are_no_counters(tmp_path) -> None:
    args = ["triad", "--device", "host", "--size", "64KiB", "--rotating", "1,2", "--iterations", "4", "--units", "1",
            "--reference-samples", "4", "--no-progress", "--json"]
    plain = _cli(*args, "--out", str(tmp_path / "a.parquet"), cwd=tmp_path)
    counted = _cli(*args, "--counters", "--out", str(tmp_path / "b.parquet"), cwd=tmp_path)
    assert plain.returncode == counted.returncode == 0, counted.stderr
    assert counted.stderr.strip() == f"hipexplore bench: no counters: {HOST_LINE}"  # one line
    a, b = json.loads(plain.stdout), json.loads(counted.stdout)
    assert [list(r) for r in a["summary"]] == [list(r) for r in b["summary"]]  # the same columns: no counter column
    key = lambda r: (r["rotating_requested"], r["flush"], r["n"])  # noqa: E731
    assert [key(r) for r in a["summary"]] == [key(r) for r in b["summary"]]
    assert b["counters"] == f"no counters: {HOST_LINE}"
    table = _cli(*args[:-1], "--counters", cwd=tmp_path)
    assert table.returncode == 0 and " state " not in table.stdout.splitlines()[0]
    bad = _cli("triad", "--device", "host", "--counters", "nvprof", cwd=tmp_path)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "'nvprof'" in bad.stderr


def test_the_library_warns_once_on_the_host(dev) -> None:
    with pytest.warns(CountersSkipped, match="no counters: host: no hardware counters"):
        res = Orchestrator(_host_spec(counters=True), InProcessExecutor(dev), progress=False).run()
    assert "cache_state" not in res.summary.columns


def test_the_state_column_in_the_table() -> None:
    from hipexplore.cli.bench_table import table

    row = {c: math.nan for c in SUMMARY_COLUMNS}
    row.update(kernel="triad", size_bytes=MIB, rotating=40, rotating_requested="auto", flush="none", timer="events", n=10,
               median_s=1e-6, ci_low_s=1e-6, ci_high_s=1e-6, stop_reason="", warning="")
    counted = {**row, "cache_state": "cold", "cold_fraction": 0.98}
    text = table(pd.DataFrame([counted, {**row, "cache_state": "", "cold_fraction": math.nan}]))
    head, first, second = text.splitlines()
    assert "state" in head.split() and "cold 0.98" in first and "cold" not in second
    assert "state" not in table(pd.DataFrame([row])).splitlines()[0].split()


def test_join_summary_adds_counters_to_both_timers_not_the_reference() -> None:
    from hipexplore.bench.counters.record import make_record, records_frame

    rec = make_record(kernel="triad", size_bytes=MIB, rotating_requested="auto", flush="none", rotating=40, backend="ncu 2025.3.1",
                      launches=[{"dram_read_bytes": 2 * MIB, "dram_write_bytes": MIB, "l2_hit_rate": 0.3}] * 2, warmup=40,
                      inputs=2 * MIB)
    assert (rec.cold_fraction, rec.cache_state, rec.cold_promise) == (1.0, "cold", "kept")
    summary = pd.DataFrame({"kernel": ["triad"] * 3, "size_bytes": [MIB] * 3, "rotating_requested": ["auto", "auto", "1"],
                            "rotating": [40, 40, 1], "flush": ["none", "none", "cold-reference"],
                            "timer": ["events", "in-kernel", "events"], "median_s": [1e-6, 2e-6, 3e-6]})
    joined = join_summary(summary, records_frame([rec]))
    assert list(joined["cache_state"]) == ["cold", "cold", ""] and list(joined["rotating"]) == [40, 40, 1]
    assert set(RECORD_COLUMNS) - set(joined.columns) == set() and set(COUNTER_COLUMNS) <= set(RECORD_COLUMNS)


# -- the H200 recordings ----------------------------------------------------------------------------
def _recorded() -> dict[str, object]:
    folders = sorted(p.parent for p in RECORDED.glob("*/backend.json")) if RECORDED.is_dir() else []
    if not folders:
        need(f"recorded counter passes under {RECORDED.relative_to(ROOT)}",
             "benchmarks/h200/counters.py records them on the H200 (scripts/h200_all.sh counters)")
    return {p.name: collect(p) for p in folders}


def _state(passes, group: str, rotating: str, flush: str, size: int = MIB):
    rec = next(r for r in passes[group].records if (r.rotating_requested, r.flush, r.size_bytes) == (rotating, flush, size))
    return rec


def test_recorded_passes_parse_and_follow_the_rule() -> None:
    passes = _recorded()
    for name, counted in passes.items():
        assert counted.records, name
        manifest = json.loads((RECORDED / name / "group-0" / MANIFEST).read_text())
        for rec, e in zip(counted.records, manifest["entries"]):
            assert rec.counter_launches == e["count"] and rec.input_bytes == e["input_bytes"] > 0
            assert rec.cache_state == cache_state(rec.dram_read_bytes / rec.input_bytes)
            assert 0 <= rec.l2_hit_rate <= 1 and rec.dram_read_bytes >= 0 and rec.dram_write_bytes >= 0
            assert (rec.cold_promise == "broken") == bool(rec.counter_warning)
        assert "pass" not in " ".join(counted.notes), counted.notes  # one replay pass: the counters saw the sequence's cache


def test_recorded_triad_states_grow_with_the_sets() -> None:
    """What the H200 recording (data/counters/h200/, scripts/h200_all.sh counters) says of the triad:
    one set of 1 MiB arrays stays in the L2, a write flush or a 48 MiB working set does not, and
    the cold fraction grows with the rotating sets. (The PR's 5 sets counted 0.39 here, partial, not
    the 0.00 of the earlier ncu read over the timed CLI process: BENCHMARKS.md "Counters" says why
    the pass replays the timed sequence itself.)"""
    passes = _recorded()
    if "triad-1MiB" not in passes:
        need("the recorded triad-1MiB pass", f"not among {sorted(passes)}")
    frac = {r: _state(passes, "triad-1MiB", r, "none").cold_fraction for r in ("1", "2", "5", "10", "20")}
    assert frac["1"] <= WARM_AT and frac["2"] <= WARM_AT
    assert frac["2"] < frac["5"] < frac["10"] < frac["20"], frac
    assert _state(passes, "triad-1MiB-l2write", "1", "l2-write").cold_fraction >= COLD_AT
    assert _state(passes, "triad-16MiB", "1", "none", 16 * MIB).cold_fraction >= COLD_AT
    assert all(r.input_bytes == 2 * r.size_bytes for c in passes.values() for r in c.records if r.kernel == "triad")


def test_recorded_user_kernels_keep_the_cold_promise() -> None:
    passes = _recorded()
    users = [n for n in passes if not n.startswith("triad")]
    if not users:
        need("recorded passes of the --source kernels", f"not among {sorted(passes)}")
    for name in users:
        for rec in passes[name].records:
            if asks_cold(rec.rotating_requested, rec.flush):
                assert rec.cold_promise == "kept", (name, rec)
        assert _state(passes, name, "1", "none").cache_state == "warm", name  # 1 MiB of inputs stays in a 60 MB L2


# -- on the GPU ----------------------------------------------------------------------------------------
def _ncu() -> str:
    return need_tool("ncu", "/usr/local/cuda/bin/ncu", flag=GPU, hint="Nsight Compute, part of the CUDA toolkit")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["cupti", "ncu"])
def test_counters_through_the_cli_on_the_gpu(cuda, tmp_path, backend) -> None:
    """``hipexplore bench ... --counters BACKEND``: one set of a 1 MiB triad stays in the L2 (warm),
    an l2-write flush makes it cold (the promise kept), and the summary's timing columns of the very
    same configurations are the sweep's own (the counting unit takes none). CUPTI counts in one
    counting unit for the whole pass, its values in the manifest; ncu under one process per metric group."""
    if backend == "ncu":
        _ncu()
    out = tmp_path / "t.parquet"
    res = _cli("triad", "--device", "cuda", "--size", "1MiB", "--rotating", "1,auto", "--flush", "none,l2-write", "--counters",
               backend, "--json", "--no-progress", "--out", str(out), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    rows = {(r["rotating_requested"], r["flush"]): r for r in doc["summary"] if r["timer"] == "events"}
    states = {k: (r["cache_state"], r["cold_fraction"], r["cold_promise"]) for k, r in rows.items()}
    assert rows[("1", "none")]["cache_state"] == "warm", states
    assert (rows[("1", "l2-write")]["cache_state"], rows[("1", "l2-write")]["cold_promise"]) == ("cold", "kept"), states
    for key in (("auto", "none"), ("auto", "l2-write")):  # auto (~40 sets of 2 MiB) defeats the L2: the issue's >= 0.9
        assert (rows[key]["cache_state"], rows[key]["cold_promise"]) == ("cold", "kept"), states
    for key in (("1", "none"), ("1", "l2-write"), ("auto", "none"), ("auto", "l2-write")):
        r = rows[key]
        assert r["median_s"] > 0 and r["ci_low_s"] <= r["median_s"] <= r["ci_high_s"] and r["n"] > 0, key
        assert r["counter_launches"] >= 12 and r["input_bytes"] == 2 * MIB, key
        assert r["counter_backend"].startswith("ncu" if backend == "ncu" else "CUPTI"), key
    assert rows[("1", "cold-reference")]["cache_state"] in ("", None)
    assert doc["counters"].startswith(f"counted 4 configuration(s) with {'ncu' if backend == 'ncu' else 'CUPTI'}"), doc["counters"]
    if backend == "ncu":  # ncu's own CSV kept beside the result: one profiled process per metric group (one replay pass each)
        logs = sorted((tmp_path / "t.counters").rglob("ncu.log"))
        assert len(logs) == len(NCU_GROUPS), logs
        assert all(parse_csv(log.read_text()) for log in logs), logs
    else:  # one counting unit for the pass; each counted launch's values in its manifest
        manifests = sorted((tmp_path / "t.counters").rglob(MANIFEST))
        assert len(manifests) == 1, manifests
        entries = json.loads(manifests[0].read_text())["entries"]
        assert len(entries) == 4 and all(len(e["values"]) == e["count"] >= 12 for e in entries), entries
        warm_rate, cold_rate = rows[("1", "none")]["l2_hit_rate"], rows[("1", "l2-write")]["l2_hit_rate"]
        if warm_rate is None:  # the chip counts no L2 counter in the DRAM pair's pass: said in the notes
            assert "the L2 hit rate is not counted" in json.dumps(doc), doc["counters"]
        else:
            assert warm_rate > cold_rate, states


@pytest.mark.gpu
def test_a_broken_cold_promise_is_flagged_in_the_cli_table_on_the_gpu(cuda, tmp_path) -> None:
    """auto on a 1 MiB "LLC" is 2 sets of 3 MiB, which the H200's real L2 keeps: asked cold, counted
    warm (ncu on the H200) or partial (CUPTI on an H100: 0.17 cold), never cold, and flagged. The
    default backend counts: CUPTI where it is usable, else Nsight Compute."""
    from hipexplore.bench.counters.cupti import CuptiBackend

    if CuptiBackend().available(cuda) is not None:
        _ncu()
    res = _cli("triad", "--device", "cuda", "--size", "1MiB", "--rotating", "auto", "--llc-bytes", "1MiB", "--counters",
               "--no-progress", "--units", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    head, *lines = res.stdout.splitlines()
    assert "state" in head.split()
    auto = next(line for line in lines if " auto=2 " in line and "cold-reference" not in line)
    state = "warm" if " warm " in auto else "partial"
    assert f" {state} " in auto, res.stdout
    # the row's note numbers point at the notes under the table, where the whole warning is spelled out
    marks = auto.split()[-1].split(",")
    notes = {line.split(None, 1)[0]: line.split(None, 1)[1] for line in lines
             if line.strip() and line.split(None, 1)[0].isdigit() and len(line.split(None, 1)) == 2}
    assert any(f"asked cold (rotating auto) but counted {state}" in notes.get(m, "") for m in marks), res.stdout


# -- the pipeline's own recording (the CLI's pass, one replay pass per metric group) -------------------
PIPELINE_RECORDED = ROOT / "data" / "counters" / "h100-cli"


def test_the_pipelines_recorded_pass_parses_here_to_what_the_cli_printed_on_the_gpu() -> None:
    """``hipexplore bench ... --counters`` on the H100 (data/counters/h100-cli/, BENCHMARKS.md "Wave 4"): its folders,
    one ``group-N`` per metric group, read back on the host give exactly the rows the CLI printed there
    (``summary.json``), and the issue's table: 5 sets of a 1 MiB triad warm, auto and l2-write cold with the
    promise kept, 3 sets of 4 MiB partial, the user kernels' auto and l2-write cold."""
    folders = sorted(p.parent for p in PIPELINE_RECORDED.glob("*/*/backend.json"))
    if not folders:
        need(f"the pipeline's recorded pass under {PIPELINE_RECORDED.relative_to(ROOT)}", "scripts/h200_all.sh counters")
    printed = {(r["group"], r["rotating"].split("=")[0], r["flush"]): r
               for r in json.loads((PIPELINE_RECORDED / "summary.json").read_text())["rows"]}
    seen = {}
    for folder in folders:
        assert {p.name for p in folder.glob("group-*")} == {f"group-{i}" for i in range(len(NCU_GROUPS))}, folder
        for rec in collect(folder).records:
            key = (folder.parent.name, rec.rotating_requested, rec.flush)
            cli = printed[key]
            for col in ("dram_read_bytes", "dram_write_bytes", "l2_hit_rate", "cold_fraction", "counter_launches"):
                assert getattr(rec, col) == pytest.approx(cli[col], rel=1e-9), (key, col)
            assert (rec.cache_state, rec.cold_promise) == (cli["cache_state"], cli["cold_promise"]), key
            seen[key] = rec
    assert len(seen) == len(printed) == 24  # the table of BENCHMARKS.md "Wave 4": 6 + 1 + 6 + 6 + 4 + 1 configurations
    assert seen[("triad-1MiB", "5", "none")].cold_fraction <= 0.1 and seen[("triad-1MiB", "5", "none")].cache_state == "warm"
    for key in (("triad-1MiB", "auto", "none"), ("triad-1MiB-l2write", "1", "l2-write"), ("stencil2d-1MiB", "auto", "none"),
                ("reduce_sum-1MiB", "auto", "none"), ("stencil2d-1MiB", "5", "l2-write"), ("reduce_sum-1MiB", "1", "l2-write")):
        assert seen[key].cold_fraction >= COLD_AT and (seen[key].cache_state, seen[key].cold_promise) == ("cold", "kept"), key
    assert seen[("triad-4MiB", "3", "none")].cache_state == "partial"
