"""hipexplore.kernels.sources: the kernel texts, written once for hiprtc and NVRTC, and their host
C twins. The host twins are built with cc and called (the numbers they compute, the in-kernel
timer); every GPU text compiles on both runtime compilers, with and without ``-DHX_TIMED``, from
its text alone (no ``#include``)."""

from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

from conftest import need_tool, require_compiler
from hipexplore.compile import CompileRequest, Source
from hipexplore.kernels import sources

GPU = {
    "triad": sources.TRIAD_GPU,
    "copy": sources.COPY_GPU,
    "fill": sources.FILL_GPU,
    "hx_spin": sources.SPIN_GPU,
    "hx_read_flush": sources.READ_FLUSH_GPU,
    "hx_empty": sources.EMPTY_GPU,
    "hx_write_flush": sources.WRITE_FLUSH_GPU,
    "hx_icache_flush": sources.ICACHE_FLUSH_GPU,
}
TARGETS = {"nvrtc": "sm_90", "hiprtc": "gfx90a"}
F = ctypes.POINTER(ctypes.c_float)
U64 = ctypes.c_ulonglong


def host_library(tmp_path, *defines: str) -> ctypes.CDLL:
    cc = need_tool("cc")
    src = tmp_path / "k.c"
    src.write_text(sources.HOST_KERNELS_C)
    lib = tmp_path / f"k{len(defines)}.so"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", *defines, "-o", str(lib), str(src)], check=True, timeout=120)
    return ctypes.CDLL(str(lib))


def ptr(a: np.ndarray):
    return a.ctypes.data_as(F)


@pytest.mark.timeout(120)
def test_host_twins_compute_what_the_gpu_kernels_do(tmp_path):
    lib = host_library(tmp_path)
    n = 1003  # not a multiple of 4: the GPU kernels' tail
    rng = np.random.default_rng(0)
    a, b, c = np.zeros(n, np.float32), rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    lib.triad(ptr(a), ptr(b), ptr(c), ctypes.c_float(3.0), U64(n))
    np.testing.assert_allclose(a, b + np.float32(3.0) * c, rtol=1e-6)
    d = np.zeros(n, np.float32)
    lib.copy(ptr(d), ptr(b), U64(n))
    np.testing.assert_array_equal(d, b)
    lib.fill(ptr(d), ctypes.c_float(2.5), U64(n))
    assert (d == 2.5).all()
    words = np.arange(64, dtype=np.uint32)
    lib.hx_write_flush(words.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)), ctypes.c_uint32(7), U64(64))
    assert (words == 7).all()
    words[:] = np.arange(64, dtype=np.uint32)
    sink = np.zeros(1, np.uint32)
    lib.hx_read_flush.restype = ctypes.c_uint32
    acc = lib.hx_read_flush(
        words.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)),
        U64(16),  # 16 words of 16 bytes
        sink.ctypes.data_as(ctypes.POINTER(ctypes.c_uint32)),
    )
    assert acc == int(np.bitwise_xor.reduce(words)) and sink[0] == 0
    lib.hx_empty()


@pytest.mark.timeout(120)
def test_host_in_kernel_timer_brackets_the_work(tmp_path):
    lib = host_library(tmp_path, "-DHX_TIMED")
    n = 1 << 20
    a, b, c = np.zeros(n, np.float32), np.ones(n, np.float32), np.ones(n, np.float32)
    t = np.zeros(2, np.uint64)
    lib.triad(ptr(a), ptr(b), ptr(c), ctypes.c_float(2.0), U64(n), t.ctypes.data_as(ctypes.POINTER(U64)))
    assert (a == 3.0).all()
    assert 0 < t[0] < t[1] and t[1] - t[0] < 10**10  # ns of CLOCK_MONOTONIC, start then end


@pytest.mark.timeout(30)
def test_gpu_texts_have_no_include_and_share_the_prelude():
    for name, text in GPU.items():
        assert "#include" not in text and text.startswith(sources.GPU_PRELUDE), name
        assert f"HX_KERNEL void {name}(" in text, name
    assert "#include" in sources.HOST_KERNELS_C  # the host twins are C for cc: its headers are there


@pytest.mark.timeout(600)
@pytest.mark.parametrize("compiler", ["nvrtc", "hiprtc"])
@pytest.mark.parametrize("timed", [False, True], ids=["plain", "timed"])
def test_every_gpu_text_compiles_on_both_runtime_compilers(compiler, timed):
    comp = require_compiler(compiler)
    options = ("-DHX_TIMED",) if timed else ()
    for name, text in GPU.items():
        ext = "cu" if compiler == "nvrtc" else "hip"
        code = comp.compile(
            CompileRequest(Source(f"{name}.{ext}", text), compiler, TARGETS[compiler], kernels=(name,), options=options)
        )
        assert code.binary, name
