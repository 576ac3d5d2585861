"""The inline instruction-cache flush on kernels written as users write them (issue 9, item 6).

Each kernel below is compiled by the real hiprtc for gfx90a twice, plain and with the flush, and
the code objects are read back: the named kernels start with ``s_icache_inv`` + 16 ``s_nop 0`` and
their argument loads come after it; kernels not named are untouched; the kernel's interface in the
code-object metadata (argument offsets, sizes, kinds, kernarg size, work-group size from launch
bounds) is the same as the plain kernel's, so the harness launches the flushed kernel with the
same arguments.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import OBJDUMP_NAMES, require_compiler, require_tool
from hipexplore.compile import CompileCache, CompileRequest, Source
from hipexplore.errors import ConfigError
from hipexplore.kernels.transform import ICACHE_ASM_LINES, find_kernels, insert_icache_flush

STENCIL_HEADER = (
    "coeffs.h",
    """
#pragma once
struct Coeffs { float c0, c1, c2; };
#define RADIUS 1
""",
)

SOURCES = {
    # a templated stencil with a by-value struct parameter from a header, launch bounds before the
    # name, comments holding braces, and a #define right above it
    "stencil": (
        """
#include "coeffs.h"
// a comment with a } brace and a { brace
#define TILE 128 /* { */
template <typename T, int BLOCK>
__global__ void __launch_bounds__(BLOCK) stencil1d(const T* __restrict__ in, T* __restrict__ out, Coeffs c, int n) {
  /* } */ int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= RADIUS && i < n - RADIUS) out[i] = c.c0 * in[i - 1] + c.c1 * in[i] + c.c2 * in[i + 1];
}
""",
        ("stencil1d<float, 256>",),
        [STENCIL_HEADER],
    ),
    # extern "C" kernels, one named and one not, plus a device helper and an unnamed parameter
    "softmax": (
        """
__device__ inline float warp_max(float v) { for (int o = 32; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor(v, o)); return v; }
extern "C" __global__ void row_softmax(const float* x, float* y, int cols, int /*unused*/) {
  extern __shared__ float buf[];
  const float* row = x + blockIdx.x * cols;
  float m = -3.4e38f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, row[j]);
  m = warp_max(m);
  float s = 0.f;
  for (int j = threadIdx.x; j < cols; j += blockDim.x) { buf[j] = __expf(row[j] - m); s += buf[j]; }
  for (int j = threadIdx.x; j < cols; j += blockDim.x) y[blockIdx.x * cols + j] = buf[j] / s;
}
extern "C" __global__ void other(float* y) { y[threadIdx.x] = 1.f; }
""",
        ("row_softmax",),
        [],
    ),
    # kernels made by a macro, in a namespace, and a kernel in an extern "C" block
    "macros": (
        """
#define DEFINE_SCALE(NAME, F) extern "C" __global__ void NAME(float* a, unsigned long long n) { \\
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; if (i < n) a[i] *= F; }
DEFINE_SCALE(scale2, 2.0f)
DEFINE_SCALE(scale3, 3.0f)
namespace ops {
template <int K> __global__ void addk(int* p) { p[threadIdx.x] += K; }
}
extern "C" {
__global__ void in_block(double* d, double v) { d[threadIdx.x] = v; }
}
""",
        ("scale3", "ops::addk<7>", "in_block"),
        [],
    ),
}


def _compile(src: str, kernels, headers, cache):
    req = CompileRequest(Source("user.hip", src), "hiprtc", "gfx90a", kernels=tuple(kernels), headers=headers)
    return cache.get_or_compile(req).object_code


def _disasm(binary: bytes, tmp_path, tag: str) -> str:
    path = tmp_path / f"{tag}.co"
    path.write_bytes(binary)
    out = subprocess.run(
        [require_tool(*OBJDUMP_NAMES), "-d", "--mcpu=gfx90a", str(path)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def _instructions(dis: str, symbol: str) -> list[str]:
    part = dis.split(f"<{symbol}>:", 1)[1].split("\n\n", 1)[0]
    return [ln.split("//")[0].strip() for ln in part.splitlines()[1:] if ln.strip()]


def _metadata(binary: bytes, tmp_path, tag: str) -> dict[str, str]:
    """Per kernel symbol: its interface lines of the AMDGPU metadata note (access qualifiers aside)."""
    path = tmp_path / f"{tag}.meta.co"
    path.write_bytes(binary)
    readelf = require_tool("llvm-readelf", "llvm-readelf-14", "llvm-readelf-15", "llvm-readelf-16")
    text = subprocess.run([readelf, "--notes", str(path)], capture_output=True, text=True, timeout=60).stdout
    import yaml

    doc = yaml.safe_load(text.split("---", 1)[1].rsplit("...", 1)[0])
    keys = (".offset", ".size", ".value_kind", ".address_space")
    out = {}
    for k in doc["amdhsa.kernels"]:
        args = [tuple(a.get(x) for x in keys) for a in k.get(".args", [])]
        out[k[".name"]] = (
            args,
            k[".kernarg_segment_size"],
            k[".kernarg_segment_align"],
            k[".max_flat_workgroup_size"],
            k[".group_segment_fixed_size"],
        )
    return out


@pytest.fixture(scope="module")
def cache():
    return CompileCache(disk_dir=False)


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_inline_flush_is_first_and_the_interface_unchanged(case, cache, tmp_path):
    require_compiler("hiprtc")
    src, kernels, headers = SOURCES[case]
    plain = _compile(src, kernels, headers, cache)
    flushed_src = insert_icache_flush(src, kernels, filename="user.hip", headers=headers)
    flushed = _compile(flushed_src, kernels, headers, cache)
    assert plain.lowered_names == flushed.lowered_names
    dis, dis_plain = _disasm(flushed.binary, tmp_path, "f"), _disasm(plain.binary, tmp_path, "p")
    meta, meta_plain = _metadata(flushed.binary, tmp_path, "f"), _metadata(plain.binary, tmp_path, "p")
    for expr in kernels:
        sym = flushed.lowered_names[expr]
        ins = _instructions(dis, sym)
        assert ins[:17] == list(ICACHE_ASM_LINES), f"{expr}: {ins[:20]}"
        first_load = next(
            i for i, x in enumerate(ins) if x.startswith(("s_load", "global_load", "flat_load", "buffer_load"))
        )
        assert first_load > 17, f"{expr}: a load ran before the flush: {ins[: first_load + 1]}"
        assert "s_icache_inv" not in _instructions(dis_plain, sym)
        assert meta[sym] == meta_plain[sym], f"{expr}: kernel interface changed\n{meta_plain[sym]}\n---\n{meta[sym]}"
    named = {flushed.lowered_names[e] for e in kernels}
    for sym in meta:  # kernels not named keep their code
        if sym not in named:
            assert "s_icache_inv" not in _instructions(dis, sym)


def test_every_kernel_when_none_is_named(cache, tmp_path):
    require_compiler("hiprtc")
    src, _, headers = SOURCES["macros"]
    out = insert_icache_flush(src, None, filename="user.hip")
    code = _compile(out, ("scale2", "scale3", "in_block"), headers, cache)
    dis = _disasm(code.binary, tmp_path, "all")
    for sym in code.lowered_names.values():
        assert _instructions(dis, sym)[:17] == list(ICACHE_ASM_LINES)


def test_the_parse_finds_definitions_only_and_what_they_look_like():
    src, _, headers = SOURCES["stencil"]
    (site,) = find_kernels(src + "\ntemplate <typename T, int B> __global__ void decl_only(T*);\n", "user.hip", headers)
    assert (
        site.name == "stencil1d"
        and site.template_args == "T, BLOCK"
        and site.launch_bounds == "__launch_bounds__(BLOCK)"
    )
    assert [n for _, n in site.params] == ["in", "out", "c", "n"] and not site.c_linkage
    sites = {s.name: s for s in find_kernels(SOURCES["macros"][0], "user.hip")}
    assert set(sites) == {"scale2", "scale3", "addk", "in_block"}
    assert sites["scale2"].in_macro and sites["scale2"].c_linkage and not sites["addk"].in_macro


def test_refusals_name_the_kernel():
    src = SOURCES["softmax"][0]
    with pytest.raises(
        ConfigError,
        match=r"no __global__ function named 'nope' in user.hip: not defined there \(kernels defined there: other, row_softmax\)",
    ):
        insert_icache_flush(src, "nope", filename="user.hip")
    with pytest.raises(ConfigError, match="parameter pack"):
        insert_icache_flush("template <typename... A> __global__ void v(A... a) {}", "v")
    with pytest.raises(ConfigError, match="defines no __global__ kernel"):
        insert_icache_flush("__device__ int f() { return 1; }", None)
    with pytest.raises(ConfigError, match="twice"):
        insert_icache_flush(insert_icache_flush(src, "other"), "other")


def test_cli_compile_inline_icache_writes_the_transformed_code_object(tmp_path, capsys, monkeypatch):
    """`hipexplore compile SRC --compiler hiprtc --target gfx90a --kernel NAME --inline-icache --out F`."""
    require_compiler("hiprtc")
    import json as _json

    from hipexplore.cli import main

    monkeypatch.setenv("HIPEXPLORE_CACHE_DIR", str(tmp_path / "cache"))
    src, kernels, headers = SOURCES["stencil"]
    (tmp_path / "stencil.hip").write_text(src)
    (tmp_path / headers[0][0]).write_text(headers[0][1])
    out = tmp_path / "flushed.co"
    argv = [
        "compile",
        str(tmp_path / "stencil.hip"),
        "--compiler",
        "hiprtc",
        "--target",
        "gfx90a",
        "--kernel",
        kernels[0],
        "--header",
        str(tmp_path / headers[0][0]),
        "--inline-icache",
        "--out",
        str(out),
        "--json",
    ]
    assert main(argv) == 0
    first = _json.loads(capsys.readouterr().out)
    assert first["inline_icache"] and first["outcome"] == "compiled"
    sym = first["lowered_names"][kernels[0]]
    assert _instructions(_disasm(out.read_bytes(), tmp_path, "cli"), sym)[:17] == list(ICACHE_ASM_LINES)
    assert main(argv) == 0
    second = _json.loads(capsys.readouterr().out)
    assert second["key"] == first["key"] and second["outcome"] in ("memory-hit", "disk-hit")
    assert main(argv[:-4] + ["--json"]) == 0  # without the flush: another key
    assert _json.loads(capsys.readouterr().out)["key"] != first["key"]
    assert (
        main(["compile", str(tmp_path / "stencil.hip"), "--compiler", "nvrtc", "--target", "sm_90", "--inline-icache"])
        == 2
    )
    assert "needs --compiler hiprtc" in capsys.readouterr().err
