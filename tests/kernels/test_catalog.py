"""Kernel catalog: open registration, user kernels, real compiles of the catalog and flush kernels
(hiprtc for gfx90a, NVRTC for sm_90, host cc), and the inline-icache transform checked in the
disassembled code object."""

from __future__ import annotations

import subprocess

import pytest

from elfcheck import assert_amdgpu_code_object, assert_cubin, assert_host_library
from hipexplore.compile.cache import CompileCache
from hipexplore.errors import ConfigError
from hipexplore.kernels import Arg, KernelSpec, catalog, insert_icache_flush, parse_args, user_kernel
from hipexplore.kernels.build import compile_kernel, request_for

GPU_KERNELS = ("triad", "copy", "fill", "spin", "flush-l2-write", "flush-l2-read", "flush-icache", "floor-empty")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> CompileCache:
    return CompileCache(disk_dir=tmp_path_factory.mktemp("kcache"))


def _objdump() -> str:
    from conftest import OBJDUMP_NAMES, require_tool

    return require_tool(*OBJDUMP_NAMES)


def _instructions(binary: bytes, tmp_path, symbol: str) -> list[str]:
    obj = tmp_path / "code.o"
    obj.write_bytes(binary)
    out = subprocess.run(
        [_objdump(), "-d", "--mcpu=gfx90a", str(obj)], capture_output=True, text=True, check=True
    ).stdout
    lines, inside = [], False
    for line in out.splitlines():
        if line.endswith(f"<{symbol}>:"):
            inside = True
            continue
        if inside:
            if not line.strip():
                if lines:
                    break
                continue
            lines.append(line.split("//")[0].strip())
    assert lines, f"symbol {symbol} not found in disassembly:\n{out[:2000]}"
    return lines


def test_catalog_has_streaming_kernels_with_traffic() -> None:
    assert {"triad", "copy", "fill", "spin"} <= set(catalog.names())
    triad = catalog.get("triad")
    n = triad.elements(1 << 20)
    assert n == 262144
    assert triad.footprint(n) == 3 * 4 * n and triad.flops_per_launch(n) == 2 * n
    assert catalog.get("copy").footprint(n) == 8 * n and catalog.get("fill").footprint(n) == 4 * n
    grid, block = triad.geometry(n, type("D", (), {"compute_units": 132, "kind": "cuda"})())
    assert grid == (528, 1, 1) and block == (256, 1, 1)  # 132 SMs x 4 blocks of 256, as in our H200 notes
    with pytest.raises(ConfigError, match="unknown kernel 'nope'"):
        catalog.get("nope")
    with pytest.raises(ConfigError, match="positive"):
        triad.elements(0)


def test_registration_is_open_and_guards_duplicates() -> None:
    spec = KernelSpec(
        name="test_scale",
        entry="scale",
        args=(Arg("x", "buffer", "f32", role="inout"), Arg("n", "scalar", "u64", value="n")),
        gpu_source='extern "C" __global__ void scale(float* x, unsigned long long n) {}',
    )
    catalog.register(spec)
    try:
        assert catalog.get("test_scale") is spec
        other = KernelSpec(name="test_scale", entry="scale", args=(), gpu_source="x")
        with pytest.raises(ConfigError, match="already registered"):
            catalog.register(other)
        catalog.register(other, replace=True)
        assert catalog.get("test_scale") is other
    finally:
        catalog.unregister("test_scale")


def test_parse_args_and_errors() -> None:
    args = parse_args("out:a:f32[n], in:b:f32[2*n], s:f32=2.5, n:u64=n")
    assert [(a.name, a.kind, a.dtype) for a in args] == [
        ("a", "buffer", "float32"),
        ("b", "buffer", "float32"),
        ("s", "scalar", "float32"),
        ("n", "scalar", "uint64"),
    ]
    assert args[1].elements(10) == 20 and args[2].scalar(10) == 2.5 and args[3].scalar(10) == 10
    with pytest.raises(ConfigError, match="cannot parse kernel argument 'oops'"):
        parse_args("oops")
    with pytest.raises(ConfigError, match="dtype 'f33'"):
        parse_args("out:a:f33[n]")
    with pytest.raises(ConfigError, match="arithmetic expression"):
        parse_args("out:a:f32[__import__('os')]")[0].elements(3)


def test_user_kernel_from_file(tmp_path) -> None:
    src = tmp_path / "scale.cu"
    src.write_text(
        'extern "C" __global__ void scale2(float* y, const float* x, unsigned long long n) {\n'
        "  unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n"
    )
    spec = user_kernel(
        src,
        "scale2",
        "out:y:f32[n],in:x:f32[n],n:u64=n",
        name="test_scale2",
        grid=64,
        block=128,
        bytes_per_launch="8*n",
        register_it=False,
    )
    assert spec.footprint(100) == 800
    assert spec.geometry(100, None) == ((64, 1, 1), (128, 1, 1))
    with pytest.raises(ConfigError, match="does not exist"):
        user_kernel(tmp_path / "missing.cu", "k", "n:u64=n")
    with pytest.raises(ConfigError, match="no host C source"):
        spec.source_for("host")


@pytest.mark.parametrize("name", GPU_KERNELS)
def test_catalog_compiles_with_hiprtc_for_gfx90a(name, need_hiprtc, cache) -> None:
    spec = catalog.get(name)
    code = compile_kernel(spec, "hiprtc", "gfx90a", cache=cache)
    assert code.target == "gfx90a" and code.symbol(spec.entry) == spec.entry
    assert_amdgpu_code_object(code.binary, "gfx90a", spec.entry)


@pytest.mark.parametrize("name", GPU_KERNELS)
def test_catalog_compiles_with_nvrtc_for_sm90(name, need_nvrtc, cache) -> None:
    spec = catalog.get(name)
    code = compile_kernel(spec, "nvrtc", "sm_90", cache=cache)
    assert code.target == "sm_90" and code.mode == "cubin"
    assert_cubin(code.binary, 90, code.symbol(spec.entry))


def test_host_twins_compile(need_host_cc, cache) -> None:
    for name in ("triad", "copy", "fill", "flush-l2-write", "flush-l2-read"):
        spec = catalog.get(name)
        code = compile_kernel(spec, "host", "host", cache=cache)
        assert_host_library(code.binary, spec.entry_for("host"))
    with pytest.raises(ConfigError, match="no host C source"):
        request_for(catalog.get("spin"), "host", "host")


def test_icache_flush_kernel_disassembles_to_icache_inv(need_hiprtc, cache, tmp_path) -> None:
    code = compile_kernel(catalog.get("flush-icache"), "hiprtc", "gfx90a", cache=cache)
    ins = _instructions(code.binary, tmp_path, "hx_icache_flush")
    assert ins[0] == "s_icache_inv" and ins[1:17] == ["s_nop 0"] * 16


@pytest.mark.parametrize("name", ["triad", "copy", "fill"])
def test_inline_icache_is_first_in_the_kernel(name, need_hiprtc, cache, tmp_path) -> None:
    spec = catalog.get(name)
    plain = compile_kernel(spec, "hiprtc", "gfx90a", cache=cache)
    flushed = compile_kernel(spec, "hiprtc", "gfx90a", cache=cache, inline_icache=True)
    ins = _instructions(flushed.binary, tmp_path, spec.entry)
    assert ins[0] == "s_icache_inv", ins[:20]
    assert ins[1:17] == ["s_nop 0"] * 16, ins[:20]
    assert "s_icache_inv" not in _instructions(plain.binary, tmp_path, spec.entry)
    # a different source text: its own cache key, both entries live side by side
    keys = cache.events()
    assert keys[keys.kernel == f"{name}+inline-icache"].digest.nunique() == 1
    assert set(keys[keys.kernel == name].digest) != set(keys[keys.kernel == f"{name}+inline-icache"].digest)


def test_inline_icache_transform_errors() -> None:
    src = catalog.get("triad").gpu_source
    with pytest.raises(ConfigError, match="no __global__ function named 'nope'"):
        insert_icache_flush(src, "nope")
    once = insert_icache_flush(src, "triad")
    with pytest.raises(ConfigError, match="twice"):
        insert_icache_flush(once, "triad")
    with pytest.raises(ConfigError, match="not defined"):
        insert_icache_flush('extern "C" __global__ void k(float* x);', "k")
    with pytest.raises(ConfigError, match="needs the hiprtc compiler"):
        request_for(catalog.get("triad"), "nvrtc", "sm_90", inline_icache=True)


TIMED_KERNELS = tuple(n for n in catalog.names() if catalog.get(n).timer)


def test_there_are_timed_catalog_kernels() -> None:
    assert {"triad", "copy", "fill"} <= set(TIMED_KERNELS)


@pytest.mark.parametrize("name", TIMED_KERNELS)
def test_timed_variants_compile_with_both_gpu_compilers(name, need_hiprtc, need_nvrtc, cache) -> None:
    spec = catalog.get(name)
    code = compile_kernel(spec, "hiprtc", "gfx90a", cache=cache, timed=True)
    assert_amdgpu_code_object(code.binary, "gfx90a", spec.entry)
    code = compile_kernel(spec, "nvrtc", "sm_90", cache=cache, timed=True)
    assert_cubin(code.binary, 90, code.symbol(spec.entry))


@pytest.mark.parametrize("name", TIMED_KERNELS)
def test_the_in_kernel_end_is_read_after_a_device_wide_fence(name, need_nvrtc, cache) -> None:
    """Every thread fences its stores before the block's end timestamp (kernels/sources.py): in the
    PTX a gpu-scope fence comes after the last global store and before the last %globaltimer read."""
    import dataclasses
    import re

    from hipexplore.compile.cache import compile as cached_compile

    spec = catalog.get(name)
    req = dataclasses.replace(request_for(spec, "nvrtc", "sm_90", timed=True), mode="ptx")
    ptx = cached_compile(req, cache).binary.decode()
    lines = ptx.splitlines()
    reads = [i for i, ln in enumerate(lines) if "%globaltimer" in ln]
    assert len(reads) == 2, reads  # the start and the end
    fences = [i for i, ln in enumerate(lines) if re.search(r"\b(membar\.gl|fence\.(sc|acq_rel)\.gpu)\b", ln)]
    stores = [i for i, ln in enumerate(lines) if re.search(r"\bst\.global\b", ln)]
    assert fences and stores
    assert any(max(stores) < f < reads[-1] for f in fences), (stores[-3:], fences, reads)
