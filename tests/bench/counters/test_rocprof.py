"""``hipexplore.bench.counters.rocprof``: rocprofv3's command line, its counter groups per target,
the TCC byte formulas, and its counter-collection CSV parsed."""

from __future__ import annotations

import math

import pytest

from hipexplore.bench.counters.backends import CounterError
from hipexplore.bench.counters.rocprof import GROUPS, RocprofBackend, parse_counter_collection, tcc_bytes

from bench.counters.test_phase import dev  # noqa: F401 - the host device fixture (a small LLC, its own compile cache)

KIB = 1 << 10


def test_rocprofv3_command_line_groups_and_label(tmp_path, dev) -> None:
    be = RocprofBackend(rocprofv3=str(tmp_path / "no-such-rocprofv3"))
    assert be.available(dev) == "rocprofv3 counts AMD GPUs; the device is host:0"
    assert [be.groups(type("D", (), {"target": t})()) for t in ("gfx942:sramecc+:xnack-", "gfx90a")] == [
        list(GROUPS["gfx942"]),
        list(GROUPS["gfx90a"]),
    ]
    assert all(len(g) <= 2 for gs in GROUPS.values() for g in gs)  # --pmc fails unless a set fits one pass
    cmd = be.prefix(("TCC_HIT_sum", "TCC_MISS_sum"), tmp_path, ["triad"])
    assert cmd == [
        "rocprofv3",
        "--pmc",
        "TCC_HIT_sum",
        "TCC_MISS_sum",
        "--kernel-include-regex",
        "(^|[^A-Za-z0-9_])(triad)([^A-Za-z0-9_]|$)",
        "--output-format",
        "csv",
        "-d",
        str(tmp_path / "rocprof"),
        "-o",
        "counters",
        "--",
    ]
    assert be.describe()["label"] == "rocprofv3 (built, not run)"


def test_tcc_bytes_formulas() -> None:
    # gfx942 (FETCH_SIZE/WRITE_SIZE of rocprofiler-sdk's counter_defs.yaml): 1 GiB read as 128-byte
    # requests (TCC_BUBBLE), 152 more 64-byte ones; 1 GiB written as 64-byte requests
    got = tcc_bytes(
        {
            "TCC_BUBBLE_sum": 8388608,
            "TCC_EA0_RDREQ_sum": 8388760,
            "TCC_EA0_RDREQ_32B_sum": 0,
            "TCC_EA0_WRREQ_sum": 16777216,
            "TCC_EA0_WRREQ_64B_sum": 16777216,
            "TCC_HIT_sum": 3,
            "TCC_MISS_sum": 1,
        },
        "gfx942",
    )
    assert (
        got["dram_read_bytes"] == (1 << 30) + 64 * 152
        and got["dram_write_bytes"] == 1 << 30
        and got["l2_hit_rate"] == 0.75
    )
    got = tcc_bytes(
        {
            "TCC_EA_RDREQ_sum": 10,
            "TCC_EA_RDREQ_32B_sum": 4,
            "TCC_EA_WRREQ_sum": 5,
            "TCC_EA_WRREQ_64B_sum": 2,
            "TCC_HIT_sum": 0,
            "TCC_MISS_sum": 0,
        },
        "gfx90a",
    )
    assert (got["dram_read_bytes"], got["dram_write_bytes"]) == (6 * 64 + 4 * 32, 2 * 64 + 3 * 32)
    assert math.isnan(got["l2_hit_rate"])


def test_rocprofv3_parser_reads_counter_collection() -> None:
    head = (
        '"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id",'
        '"Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count",'
        '"Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"'
    )
    rows = [
        f'{d},{d},4,1,99,99,1048576,10,"{k}",256,0,0,8,0,16,"{c}",{v},1,2'
        for d, k, c, v in (
            (2, "triad", "TCC_HIT_sum", "7.000000"),
            (1, "triad", "TCC_HIT_sum", "5.000000"),
            (1, "triad", "TCC_MISS_sum", "1.000000"),
            (1, "triad", "TCC_MISS_sum", "2.000000"),
        )
    ]
    got = parse_counter_collection("\n".join([head, *rows]))
    assert [x.values for x in got] == [{"TCC_HIT_sum": 5.0, "TCC_MISS_sum": 3.0}, {"TCC_HIT_sum": 7.0}]
    with pytest.raises(CounterError, match="needs columns"):
        parse_counter_collection('"Kernel_Name","x"\n"a",1')
