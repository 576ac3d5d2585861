"""The hostile-kernel suite on the host (issue 51): every CUDA source of the suite and of the honest
set compiles with the real NVRTC for sm_90 (and the stateful families with hiprtc), and the host
C twins of the stateful cheats are flagged ``untrusted timing`` in the row and in the headline
while their honest twins and the host catalog are not, through the library and the CLI.

What needs a GPU (the persisting-L2 guard, the counters, the launch floor, the prefetch) is
tests/gpu/test_gpu_hostile.py; the figures are benchmarks/h200/hostile.py's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cliproc
from fixtures.hostile import ARGS, BY_NAME, FAMILIES, HERE, host_spec, kernel_spec, suite

pytestmark = pytest.mark.timeout(600)
MIB = 1 << 20


@pytest.fixture(scope="module")
def host():
    from hipexplore.devices.host import HostDevice

    return HostDevice(llc_bytes=MIB)


def test_every_cuda_source_of_the_suite_compiles_with_nvrtc_for_sm90(need_nvrtc, tmp_path):
    from fixtures.hostile import honest
    from hipexplore.compile import CompileCache
    from hipexplore.kernels.build import compile_kernel
    from hipexplore.kernels.catalog import user_kernel

    cache = CompileCache(disk_dir=False)
    specs = [kernel_spec(f, h) for f in FAMILIES if f.kind == "kernel" for h in (False, True)]
    specs.append(user_kernel(str(HERE / "launched.cu"), "hx_launched", ARGS, name="hx_launched", register_it=False))
    specs += [s for s, _sizes in honest.kernels(tmp_path) if s.gpu_source is not None or s.source_file]
    names = set()
    for spec in specs:
        code = compile_kernel(spec, "nvrtc", "sm_90", cache=cache)
        assert code.binary[:4] == b"\x7fELF" and code.target == "sm_90", spec.name
        names.add(spec.name)
    assert len(names) == 49, sorted(names)  # 11 of the suite, 43 of the honest set, whose 5 honest twins are the same


def test_the_honest_twin_is_the_same_source_without_the_cheat(need_nvrtc):
    """-DHX_HONEST compiles a different binary from the same file: the cheat is in the hostile one only."""
    from hipexplore.compile import CompileCache
    from hipexplore.kernels.build import compile_kernel

    cache = CompileCache(disk_dir=False)
    for f in FAMILIES:
        if f.kind == "kernel":
            bad, good = (compile_kernel(kernel_spec(f, h), "nvrtc", "sm_90", cache=cache).binary for h in (False, True))
            assert bad != good, f.name
    assert len(FAMILIES) >= 6 and {f.kind for f in FAMILIES} == {"kernel", "launcher"}


def test_the_stateful_families_compile_with_hiprtc_for_gfx90a(need_hiprtc):
    """Built, not run: no AMD GPU has been lent to this project (the PTX families have no AMD spelling)."""
    from hipexplore.compile import CompileCache
    from hipexplore.kernels.build import compile_kernel

    cache = CompileCache(disk_dir=False)
    built = [
        f.name
        for f in FAMILIES
        if f.hiprtc
        for h in (False, True)
        if compile_kernel(kernel_spec(f, h), "hiprtc", "gfx90a", cache=cache).binary
    ]
    assert len(built) == 6, built


def test_a_child_launch_cannot_reach_the_harness(need_nvrtc):
    """Dynamic parallelism (a parent that returns while its child works): NVRTC refuses the device-side
    launch, and with -rdc=true makes a relocatable object (ELF type 1) whose child launch is an
    undefined cudadevrt symbol: one NVRTC module loaded with cuModuleLoadData, as here, cannot run it."""
    import io

    from elftools.elf.elffile import ELFFile

    from hipexplore.compile import CompileCache
    from hipexplore.errors import CompileError
    from hipexplore.kernels.build import compile_kernel
    from hipexplore.kernels.catalog import user_kernel

    cache = CompileCache(disk_dir=False)
    args = "out:out:f32[n], in:x:f32[n], n:u64=n"
    plain = user_kernel(str(HERE / "child_launch.cu"), "hx_parent", args, name="cdp", register_it=False)
    with pytest.raises(CompileError, match="device-side kernel launch could not be processed"):
        compile_kernel(plain, "nvrtc", "sm_90", cache=cache)
    rdc = user_kernel(
        str(HERE / "child_launch.cu"), "hx_parent", args, name="cdp_rdc", options=("-rdc=true",), register_it=False
    )
    elf = ELFFile(io.BytesIO(compile_kernel(rdc, "nvrtc", "sm_90", cache=cache).binary))
    undefined = {
        s.name
        for sec in elf.iter_sections()
        if sec.name == ".symtab"
        for s in sec.iter_symbols()
        if s["st_shndx"] == "SHN_UNDEF"
    }
    assert elf.header["e_type"] == "ET_REL" and "__cudaCDP2LaunchDeviceV2" in undefined, undefined


@pytest.fixture(scope="module")
def verdicts(host):
    return suite.host_verdicts(host, iterations=16)


def test_every_stateful_host_twin_is_flagged_and_no_honest_twin(verdicts):
    got, rows = verdicts
    assert {v["family"]: v["verdict"] for v in got} == {
        "output-cache": "flagged",
        "skip-work": "flagged",
        "result-replay": "flagged",
    }, got
    assert all(v["honest_flagged_rows"] == 0 for v in got), got
    by_kernel = {r["kernel"]: r for r in rows if r["flush"] == "l2-read"}
    # each caught by the sampled output check; the result replay only through its fresh inputs
    for name in ("output_cache_hostile_c", "skip_work_hostile_c", "result_replay_hostile_c"):
        assert any("output checks of launches sampled across the run failed" in f for f in by_kernel[name]["flags"]), (
            name
        )
    assert any("(fresh inputs): out[" in f for f in by_kernel["result_replay_hostile_c"]["flags"])
    # the two that stop writing outputs are caught before timing too: right at their first launch, wrong at their second
    assert any(
        "its first launch (the role check) wrote every output and its second left some unwritten" in f
        for f in by_kernel["output_cache_hostile_c"]["flags"]
    )


def test_the_headline_says_which_timings_are_not_evidence(host):
    import hipexplore as hx
    from hipexplore.report.headline import headline

    res = hx.sweep(
        [host_spec(BY_NAME["output-cache"], False), host_spec(BY_NAME["output-cache"], True)],
        sizes=[64 << 10],
        rotating=[1],
        flush=["none", "l2-read"],
        device=host,
        iterations=8,
        units=1,
        progress=False,
        worker=False,
    )
    first = headline(res.summary)[0]
    assert first.startswith(
        "Untrusted timings: 3 of 6 configuration(s) of 1 kernel(s) (output_cache_hostile_c) failed a "
        "check that needs nothing from the kernel, so their times are not evidence: "
    ), first
    assert "output_cache_hostile_c, no flush: " in first and "output_cache_hostile_c, the cold reference: " in first
    honest = res.summary[res.summary["kernel"] == "output_cache_honest_c"]
    assert headline(honest)[0].startswith("Noise:")


def test_the_physical_floor_on_the_host_with_a_declared_bandwidth(host, monkeypatch):
    """32 MiB of inputs at a declared 200 GB/s take at least 168 us: a call that returns at once is
    below it, the honest twin (one thread reading memory) far above."""
    import hipexplore as hx

    monkeypatch.setenv("HIPEXPLORE_HOST_BANDWIDTH", str(200 * 10**9))
    res = hx.sweep(
        [host_spec(BY_NAME["output-cache"], False), host_spec(BY_NAME["output-cache"], True)],
        sizes=[16 * MIB],
        rotating=[1],
        flush=["l2-read"],
        device=host,
        iterations=8,
        units=1,
        progress=False,
        worker=False,
        reference=False,
    )
    rows = {r["kernel"]: suite.row_view(r) for r in res.summary.to_dict("records")}
    floor = [f for f in rows["output_cache_hostile_c"]["flags"] if "below the physical floor" in f]
    assert (
        floor
        and "32 MiB of inputs from memory at the peak 200 GB/s (declared: HIPEXPLORE_HOST_BANDWIDTH) takes at "
        "least 168 us"
        in floor[0]
    ), rows["output_cache_hostile_c"]
    assert rows["output_cache_honest_c"]["flags"] == []


def test_the_host_catalog_and_honest_twins_raise_no_flag(host, monkeypatch):
    import hipexplore as hx

    monkeypatch.setenv("HIPEXPLORE_HOST_BANDWIDTH", str(200 * 10**9))
    kernels = ["triad", "copy", "fill", *(host_spec(f, True) for f in FAMILIES if f.host_file)]
    res = hx.sweep(
        kernels,
        sizes=[256 << 10, 4 * MIB],
        rotating=[1, "auto"],
        flush=["none", "l2-read"],
        device=host,
        iterations=24,
        units=1,
        progress=False,
        worker=False,
    )
    views = [suite.row_view(r) for r in res.summary.to_dict("records")]
    assert len(views) == 6 * 2 * 5 and not [v for v in views if suite.flagged(v)], [
        v for v in views if suite.flagged(v)
    ]


def test_the_cli_flags_a_source_kernel_that_caches_its_output(tmp_path):
    """``hipexplore bench --source output_cache.c``: exit 0, its rows carry the flag in --json."""
    env = {**os.environ, "HIPEXPLORE_LLC_BYTES": str(MIB)}
    argv = [
        "bench",
        "hx_output_cache",
        "--source",
        str(HERE / "output_cache.c"),
        "--args",
        ARGS,
        "--device",
        "host",
        "--size",
        "64KiB",
        "--rotating",
        "1",
        "--flush",
        "l2-read",
        "--iterations",
        "8",
        "--units",
        "1",
        "--json",
        "--no-progress",
        "--out",
        str(tmp_path / "oc.parquet"),
    ]
    p = cliproc.run(argv, timeout=300, env=env, cwd=tmp_path)  # python -m hipexplore, forked from a preloaded one
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["summary"]
    timed = [r for r in rows if r["flush"] == "l2-read"]
    assert timed and all("untrusted timing: " in r["warning"] for r in timed), timed
    assert Path(tmp_path / "oc.parquet").is_file()
