"""``hipexplore.bench.counters.ncu``: Nsight Compute's command line and replay passes, and its CSV
parsed (the details and raw pages, in the documented formats; the recorded outputs are tested in
test_counters.py)."""

from __future__ import annotations

import math

import pytest

from hipexplore.bench.counters.backends import CounterError, name_pattern
from hipexplore.bench.counters.ncu import NCU_METRICS, NcuBackend, ncu_command, parse_csv, pass_note
from hipexplore.errors import ConfigError


def test_ncu_command_line(tmp_path) -> None:
    pattern = name_pattern(["triad", "transpose_tiled<32, 8>"])
    cmd = ncu_command("/usr/local/cuda/bin/ncu", NCU_METRICS, pattern, tmp_path / "ncu.log")
    assert cmd == [
        "/usr/local/cuda/bin/ncu",
        "--target-processes",
        "all",
        "--profile-from-start",
        "off",
        "--cache-control",
        "none",
        "--clock-control",
        "none",
        "-k",
        "regex:(^|[^A-Za-z0-9_])(transpose_tiled|triad)([^A-Za-z0-9_]|$)",
        "--metrics",
        "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct",
        "--csv",
        "--print-units",
        "base",
        "--log-file",
        str(tmp_path / "ncu.log"),
    ]
    assert "--print-units" not in ncu_command("ncu", NCU_METRICS, pattern, tmp_path / "l", print_units=False)
    assert "--profile-from-start" not in ncu_command("ncu", NCU_METRICS, pattern, tmp_path / "l", profiler_range=False)
    whole = NcuBackend(ncu=str(tmp_path / "none"), profiler_range=False)
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
    assert NcuBackend(ncu=str(fake), replay="application").groups(None) == be.groups(None)
    assert NcuBackend(ncu=str(fake), metrics=("dram__bytes_read.sum",)).groups(None) == [("dram__bytes_read.sum",)]
    with pytest.raises(ConfigError, match="replay mode must be one of kernel, application, got 'range'"):
        NcuBackend(replay="range")


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
    assert got[1].values["dram__bytes_read.sum"] == 1.5e6 and got[1].values["gpu__time_duration.sum"] == pytest.approx(
        4.1e-6
    )
    assert math.isnan(got[1].values["lts__t_sector_hit_rate.pct"])
    raw = parse_csv(RAW)  # rows by ID, the units row applied
    assert [x.values for x in raw] == [
        {"dram__bytes_read.sum": 1.024e6, "dram__bytes_write.sum": 0.0},
        {"dram__bytes_read.sum": 2500.0, "dram__bytes_write.sum": 1048576.0},
    ]
    assert pass_note(DETAILS) == ""
    assert "2 passes" in pass_note(DETAILS.replace("- 1 pass", "- 2 passes"))
    with pytest.raises(CounterError, match="no CSV header"):
        parse_csv(
            "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters"
        )


def test_what_ncu_says_of_itself_is_learnt_where_it_runs_and_travels_with_the_backend(tmp_path) -> None:
    """A cluster's workers are asked whether they can count (``available``, on the worker's own device
    and ncu); the backend then travels to the client, which may have no ncu of its own: the units'
    command still asks for base units, and the label names the workers' ncu version."""
    import pickle

    from hipexplore.bench.dask_executor import PlanDevice

    tool = tmp_path / "ncu"
    tool.write_text(
        '#!/bin/sh\ncase "$1" in\n  --help) echo "  --print-units <mode>";;\n'
        '  --version) echo "NVIDIA (R) Nsight Compute Command Line Profiler Version 2025.3.1";;\nesac\n'
    )
    tool.chmod(0o755)
    worker = PlanDevice({"llc_bytes": 1, "free": 1, "total": 1, "name": "H100", "kind": "cuda", "index": 0})
    backend = NcuBackend(ncu=str(tool))
    assert backend.available(worker) is None
    on_the_client = pickle.loads(pickle.dumps(backend))
    tool.unlink()  # the client has no such ncu
    cmd = on_the_client.prefix(on_the_client.groups(worker)[0], tmp_path / "out", ["triad"])
    assert cmd[0] == str(tool) and cmd[cmd.index("--print-units") + 1] == "base"
    assert on_the_client.describe()["label"] == "ncu 2025.3.1"
