"""``hipexplore.compile.nvrtc``: NVRTC against the real compiler (pip's nvidia-cuda-nvrtc): sm_90
cubins and PTX, name expressions and headers, syntax errors with their log, identity and targets,
the assembly dump, and (on a GPU) the output run."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

from conftest import AXPY_FLOAT_MANGLED, AXPY_HEADER, AXPY_TEMPLATE, TRIAD_HIP
from hipexplore.compile._common import file_stamp
from hipexplore.compile.request import CompileRequest, Source
from hipexplore.errors import CompileError, ConfigError

from compile.test_backends import EM_CUDA, elf_header, symbols


@pytest.fixture(scope="module")
def nvrtc():
    from hipexplore.compile.nvrtc import NvrtcCompiler

    return NvrtcCompiler()


def _cuda_sm(flags: int) -> int:
    # CUDA >= 12.8 ELF ABI v8 keeps the SM in bits 8..15; older cubins in bits 0..7
    return (flags >> 8) & 0xFF if (flags >> 24) else flags & 0xFF


def test_nvrtc_triad_is_sm90_cubin(need_nvrtc, nvrtc):
    obj = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90", kernels=("triad",)))
    machine, flags = elf_header(obj.binary)
    assert machine == EM_CUDA
    assert _cuda_sm(flags) == 90, hex(flags)
    assert "triad" in symbols(obj.binary)
    sm80 = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_80"))
    assert _cuda_sm(elf_header(sm80.binary)[1]) == 80  # the target really reaches the compiler


def test_nvrtc_name_expression_and_header(need_nvrtc, nvrtc):
    req = CompileRequest(
        Source("axpy.cu", AXPY_TEMPLATE), "nvrtc", "sm_90", headers=[AXPY_HEADER], kernels=("axpy<float>",)
    )
    obj = nvrtc.compile(req)
    assert obj.symbol("axpy<float>") == AXPY_FLOAT_MANGLED
    assert AXPY_FLOAT_MANGLED in symbols(obj.binary)


def test_nvrtc_ptx_mode(need_nvrtc, nvrtc):
    obj = nvrtc.compile(CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="ptx"))
    text = obj.binary.decode()
    assert ".target sm_90" in text and ".entry triad(" in text
    assert not obj.binary.endswith(b"\0")


def test_nvrtc_syntax_error(need_nvrtc, nvrtc):
    req = CompileRequest(Source("bad.cu", TRIAD_HIP + "\nint broken = ;\n"), "nvrtc", "sm_90", options=("-lineinfo",))
    with pytest.raises(CompileError) as info:
        nvrtc.compile(req)
    err = info.value
    assert "bad.cu(7)" in err.log and "error" in err.log
    assert err.options == ("-arch=sm_90", "-lineinfo") and err.target == "sm_90" and err.compiler == "nvrtc"


def test_nvrtc_identity_targets_and_bad_target(need_nvrtc, nvrtc):
    ident = nvrtc.identity()
    assert ident.version.startswith("nvrtc ")
    assert os.path.basename(ident.library).startswith("libnvrtc.so") and ident.stamp == file_stamp(ident.library)
    assert "sm_90" in nvrtc.targets() and "sm_80" in nvrtc.targets()
    with pytest.raises(ConfigError, match="gfx90a"):
        nvrtc.compile(CompileRequest(Source("t.cu", TRIAD_HIP), "nvrtc", "gfx90a"))


def test_nvrtc_dump_asm_writes_ptx(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    obj = nvrtc.compile(
        CompileRequest(Source("triad.cu", TRIAD_HIP), "nvrtc", "sm_90", diagnostics={"dump-asm", "trace"})
    )
    ptx = list(tmp_path.rglob("*.ptx"))
    assert len(ptx) == 1 and ".entry triad(" in ptx[0].read_text()
    assert "[trace] nvrtcCompileProgram(['-arch=sm_90'])" in obj.log


@pytest.mark.gpu  # cuobjdump comes with the CUDA toolkit of the GPU job (conftest.GPU_ONLY), not with pip's NVRTC
def test_nvrtc_cubin_dump_asm_writes_sass_with_cuobjdump(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    from conftest import need_tool

    need_tool("cuobjdump")
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    obj = nvrtc.compile(
        CompileRequest(
            Source("k.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="cubin", kernels=("triad",), diagnostics={"dump-asm"}
        )
    )
    sass = list(tmp_path.rglob("*.sass"))
    assert sass and "triad" in sass[0].read_text(), obj.log


def test_nvrtc_dump_asm_without_cuobjdump_says_the_sass_was_skipped(need_nvrtc, nvrtc, tmp_path, monkeypatch):
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path / "dump"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no cuobjdump, wherever the machine has one
    obj = nvrtc.compile(
        CompileRequest(
            Source("k.cu", TRIAD_HIP), "nvrtc", "sm_90", mode="cubin", kernels=("triad",), diagnostics={"dump-asm"}
        )
    )
    assert "dump-asm: SASS skipped, cuobjdump not on PATH" in obj.log and not list(tmp_path.rglob("*.sass"))


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["cubin", "ptx"])
def test_nvrtc_output_runs_on_a_cuda_gpu(need_nvrtc, nvrtc, mode, tmp_path, monkeypatch):
    """Load the NVRTC output with the driver and run triad and axpy<float> (by lowered name)."""
    ctypes_ = ctypes
    monkeypatch.setenv("HIPEXPLORE_DUMP_DIR", str(tmp_path))
    req = CompileRequest(
        Source("k.cu", TRIAD_HIP + AXPY_TEMPLATE),
        "nvrtc",
        "sm_90",
        mode=mode,
        headers=[AXPY_HEADER],
        kernels=("triad", "axpy<float>"),
        diagnostics={"dump-asm"},
    )
    obj = nvrtc.compile(req)
    from conftest import GPU, need

    try:
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu
    try:
        status = cu.cuInit(0)[0]
    except Exception as exc:  # no libcuda
        need("a CUDA GPU", f"no CUDA driver: {exc}", flag=GPU)
    if int(status) != 0:
        need("a CUDA GPU", f"cuInit -> {status!r}", flag=GPU)

    def ok(result):
        assert int(result[0]) == 0, result
        return result[1] if len(result) == 2 else None

    ctx = ok(cu.cuDevicePrimaryCtxRetain(ok(cu.cuDeviceGet(0))))
    ok(cu.cuCtxSetCurrent(ctx))
    n = 1 << 20
    b, c = np.arange(n, dtype=np.float32), np.full(n, 2.0, np.float32)

    def upload(h):
        d = ok(cu.cuMemAlloc(h.nbytes))
        ok(cu.cuMemcpyHtoD(d, h.ctypes.data, h.nbytes))
        return d

    d_a, d_b, d_c = upload(np.zeros(n, np.float32)), upload(b), upload(c)

    def launch(func, values):
        ptrs = (ctypes_.c_void_p * len(values))(*[ctypes_.addressof(v) for v in values])
        ok(cu.cuLaunchKernel(func, n // 256, 1, 1, 256, 1, 1, 0, 0, ctypes_.addressof(ptrs), 0))
        ok(cu.cuCtxSynchronize())

    u64 = ctypes_.c_uint64
    mod = ok(cu.cuModuleLoadData(obj.binary + (b"\0" if mode == "ptx" else b"")))
    launch(
        ok(cu.cuModuleGetFunction(mod, b"triad")),
        [u64(int(d_a)), u64(int(d_b)), u64(int(d_c)), ctypes_.c_float(3.0), ctypes_.c_int(n)],
    )
    launch(
        ok(cu.cuModuleGetFunction(mod, obj.symbol("axpy<float>").encode())),
        [u64(int(d_a)), u64(int(d_b)), ctypes_.c_float(0.5), ctypes_.c_int(n)],
    )
    a = np.empty(n, np.float32)
    ok(cu.cuMemcpyDtoH(a.ctypes.data, d_a, a.nbytes))
    np.testing.assert_array_equal(a, b + 3.0 * c + 2 * 0.5 * b)  # SCALE is 2 in the header
    for d in (d_a, d_b, d_c):
        ok(cu.cuMemFree(d))
    ok(cu.cuModuleUnload(mod))
