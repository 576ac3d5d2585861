"""Precompiled code objects (issue 10, part 3): files written by another compile (NVRTC, hiprtc,
cc through ``hipexplore compile --out``) are recognised, checked against the device's target before
loading, and a host shared library runs through ``bench --code-object``."""

from __future__ import annotations

import json

import pytest

import hipexplore as hx
from hipexplore.cli import main
from hipexplore.compile.cache import CompileCache
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError
from hipexplore.kernels import catalog
from hipexplore.kernels.code_objects import fits, inspect, read_code_object

SAXPY_CU = """extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
SAXPY_C = """void saxpy(float* y, const float* x, float a, unsigned long long n) {
  for (unsigned long long i = 0; i < n; ++i) y[i] = a * x[i] + y[i]; }
"""
ARGS = "inout:y:f32[n],in:x:f32[n],a:f32=2.0,n:u64=n"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def compile_to(capsys, src, out, *argv):
    assert main(["compile", str(src), *argv, "--out", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cubin_and_ptx_from_nvrtc_are_read_and_checked(need_nvrtc, tmp_path, cache_dir, capsys):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY_CU)
    cubin, ptx = tmp_path / "saxpy.cubin", tmp_path / "saxpy.ptx"
    compile_to(capsys, src, cubin, "--compiler", "nvrtc", "--target", "sm_90", "--kernel", "saxpy")
    compile_to(capsys, src, ptx, "--compiler", "nvrtc", "--target", "sm_80", "--kernel", "saxpy", "--mode", "ptx")
    _, info = read_code_object(cubin)
    assert (info.kind, info.targets, info.compiler) == ("cubin", ("sm_90",), "nvrtc")
    assert fits(info, "nvrtc", "sm_90") and not fits(info, "nvrtc", "sm_80") and not fits(info, "nvrtc", "sm_100")
    assert not fits(info, "hiprtc", "gfx90a") and not fits(info, "host", "host")
    _, pinfo = read_code_object(ptx)
    assert (pinfo.kind, pinfo.targets) == ("ptx", ("sm_80",))
    # PTX is JIT-compiled for any newer sm, never an older one
    assert fits(pinfo, "nvrtc", "sm_90") and fits(pinfo, "nvrtc", "sm_80") and not fits(pinfo, "nvrtc", "sm_75")
    sm80 = tmp_path / "saxpy80.cubin"
    compile_to(capsys, src, sm80, "--compiler", "nvrtc", "--target", "sm_80", "--kernel", "saxpy")
    assert read_code_object(sm80)[1].targets == ("sm_80",)


def test_cubin_on_the_host_device_is_a_clear_error(need_nvrtc, tmp_path, cache_dir, capsys):
    src = tmp_path / "saxpy.cu"
    src.write_text(SAXPY_CU)
    cubin = tmp_path / "saxpy.cubin"
    compile_to(capsys, src, cubin, "--compiler", "nvrtc", "--target", "sm_90", "--kernel", "saxpy")
    rc = main(
        [
            "bench",
            "saxpy",
            "--device",
            "host",
            "--code-object",
            str(cubin),
            "--entry",
            "saxpy",
            "--args",
            ARGS,
            "--iterations",
            "3",
            "--no-reference",
            "--no-progress",
            "--size",
            "4KiB",
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert (
        f"code object {str(cubin)!r} is cubin for sm_90, but host device" in err
        and "needs a host shared library" in err
    )


def test_hsaco_from_hiprtc_is_read_and_checked(need_hiprtc, tmp_path, cache_dir, capsys):
    src = tmp_path / "saxpy.hip"
    src.write_text("#include <hip/hip_runtime.h>\n" + SAXPY_CU)
    co = tmp_path / "saxpy.hsaco"
    compile_to(capsys, src, co, "--compiler", "hiprtc", "--target", "gfx90a", "--kernel", "saxpy")
    _, info = read_code_object(co)
    assert (info.kind, info.targets, info.compiler) == ("amdgpu-elf", ("gfx90a",), "hiprtc")
    assert fits(info, "hiprtc", "gfx90a") and fits(info, "hiprtc", "gfx90a:sramecc+:xnack-")
    assert not fits(info, "hiprtc", "gfx942") and not fits(info, "nvrtc", "sm_90")
    spec = catalog.user_kernel(None, "saxpy", ARGS, name="test_hsaco_on_host", code_object=co, register_it=False)
    with pytest.raises(ConfigError, match=r"is amdgpu-elf for gfx90a, but host device .* needs a host shared library"):
        hx.sweep(spec, ["4KiB"], device="host", iterations=3, reference=False, progress=False)


def test_host_shared_library_runs_through_bench_code_object(need_host_cc, tmp_path, cache_dir, capsys):
    src = tmp_path / "saxpy.c"
    src.write_text(SAXPY_C)
    lib = tmp_path / "libsaxpy.so"
    compile_to(capsys, src, lib, "--compiler", "host")
    assert read_code_object(lib)[1].kind == "host-elf"
    rc = main(
        [
            "bench",
            "saxpy",
            "--device",
            "host",
            "--code-object",
            str(lib),
            "--entry",
            "saxpy",
            "--args",
            ARGS,
            "--iterations",
            "6",
            "--rotating",
            "1,3",
            "--flush",
            "none,l2-write",
            "--no-reference",
            "--no-progress",
            "--size",
            "64KiB",
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    rows = json.loads(out.out)["summary"]
    assert len(rows) == 4 and all(r["median_s"] > 0 for r in rows)
    # --entry is required with --code-object, and a missing symbol names itself
    assert main(["bench", "saxpy", "--device", "host", "--code-object", str(lib), "--args", ARGS, "--no-progress"]) == 2
    assert "--code-object needs --entry" in capsys.readouterr().err
    spec = catalog.user_kernel(None, "no_such_fn", ARGS, name="test_missing_sym", code_object=lib, register_it=False)
    dev = HostDevice()
    dev.cache = CompileCache(disk_dir=False)
    with pytest.raises(hx.DeviceError, match="'no_such_fn' is not in the loaded host module"):
        hx.sweep(spec, ["4KiB"], device=dev, iterations=3, reference=False, progress=False)


def test_unknown_and_truncated_files_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="not a code object hipexplore knows"):
        inspect(b"hello world, not a binary", "code object 'x'")
    with pytest.raises(ConfigError, match="truncated ELF"):
        inspect(b"\x7fELF\x02\x01", "code object 'y'")
    with pytest.raises(ConfigError, match="does not exist"):
        catalog.user_kernel(None, "k", ARGS, code_object=tmp_path / "missing.hsaco", register_it=False)
