"""The split-K GEMM family: compiled by the real compilers, run on the host through ctypes and
checked against numpy (fresh random inputs, poisoned outputs, relative error)."""

from __future__ import annotations

import numpy as np
import pytest

from elfcheck import assert_amdgpu_code_object, assert_cubin
from hipexplore.errors import ConfigError
from hipexplore.tuning import gemm as g

# fp32 accumulation over K <= 300 terms of size ~1: far under 1e-5 relative in practice
RTOL = 2e-5


@pytest.fixture(scope="module")
def host():
    from conftest import require_compiler

    return require_compiler("host")


def _binaries(comp, shape, cfg, act):
    return {r: comp.compile(g.kernel_request(r, "host", "host", shape, cfg, act)).binary for r in g.roles_for(cfg)}


CASES = [
    # shape (m, n, k), config, activation
    ((64, 64, 64), g.GemmConfig(64, 64, 16, 4, 4, split=1, unroll=4), "none"),
    ((100, 70, 90), g.GemmConfig(64, 32, 16, 4, 2, split=3, unroll=4), "gelu"),  # ragged tiles
    ((33, 17, 7), g.GemmConfig(16, 16, 8, 2, 2, split=4, unroll=2), "relu"),  # K=7 not divisible by 4
    ((48, 40, 301), g.GemmConfig(32, 32, 32, 2, 2, split=2, unroll=8), "none"),  # K odd, split 2
    ((5, 3, 2), g.GemmConfig(16, 16, 8, 2, 2, split=4, unroll=2), "gelu"),  # split > K: empty slices
    ((65, 129, 100), g.GemmConfig(128, 64, 8, 8, 4, split=3, unroll=8), "relu"),  # 100 = 3*34 - 2
]


@pytest.mark.parametrize("dims,cfg,act", CASES, ids=[f"{d}-{c.name}-{a}" for d, c, a in CASES])
def test_host_pipeline_matches_numpy(host, dims, cfg, act):
    shape = g.GemmShape(*dims)
    bins = _binaries(host, shape, cfg, act)
    for trial in range(2):  # fresh inputs each time: the same function on any input
        a, b, bias = g.random_inputs(shape, seed=None)
        out = g.run_host_pipeline(bins, shape, cfg, a, b, bias)
        assert out.shape == (shape.m, shape.n)
        assert np.isfinite(out).all(), "some output element was never written (poison survived)"
        err = g.relative_error(out, g.reference(a, b, bias, act))
        assert err < RTOL, f"trial {trial}: relative error {err:.3g}"


def test_wrong_kernel_is_caught(host):
    """The check can fail: a pipeline missing the bias term is far from the reference."""
    shape, cfg = g.GemmShape(20, 12, 9), g.GemmConfig(16, 16, 8, 2, 2, split=2, unroll=2)
    bins = _binaries(host, shape, cfg, "none")
    a, b, bias = g.random_inputs(shape)
    out = g.run_host_pipeline(bins, shape, cfg, a, b, np.zeros_like(bias))
    assert g.relative_error(out, g.reference(a, b, bias, "none")) > 1e-2


def test_poison_shows_unwritten_output(host):
    """Skipping the fill leaves NaN from the poisoned workspace: the poison is visible."""
    shape, cfg = g.GemmShape(8, 8, 8), g.GemmConfig(16, 16, 8, 2, 2, split=1, unroll=2)
    bins = _binaries(host, shape, cfg, "none")
    a, b, bias = g.random_inputs(shape)
    work = np.full(shape.m * shape.n, np.nan, dtype=np.float32)
    with g.HostKernels({"gemm": bins["gemm"]}) as k:
        k("gemm", a, b, work)  # accumulates into NaN: never zeroed
    assert np.isnan(work).all()


def test_tails_do_not_depend_on_tiles():
    shape = g.GemmShape(128, 256, 64)
    c1, c2 = g.GemmConfig(64, 64, 16, 4, 4, split=2), g.GemmConfig(32, 32, 32, 2, 2, split=2, unroll=8)
    for role in ("fill", "reduce", "pointwise"):
        assert g.kernel_request(role, "nvrtc", "sm_90", shape, c1, "gelu") == g.kernel_request(
            role, "nvrtc", "sm_90", shape, c2, "gelu"
        )
    assert g.kernel_request("gemm", "nvrtc", "sm_90", shape, c1) != g.kernel_request(
        "gemm", "nvrtc", "sm_90", shape, c2
    )
    # a different split changes the fill (workspace size) and the reduce, not the pointwise tail
    c3 = g.GemmConfig(64, 64, 16, 4, 4, split=4)
    assert g.kernel_request("fill", "host", "host", shape, c1) != g.kernel_request("fill", "host", "host", shape, c3)
    assert g.kernel_request("pointwise", "host", "host", shape, c1) == g.kernel_request(
        "pointwise", "host", "host", shape, c3
    )
    assert g.roles_for(g.GemmConfig(split=1)) == ("fill", "gemm", "pointwise")


@pytest.mark.parametrize("compiler,target", [("nvrtc", "sm_90"), ("hiprtc", "gfx90a")])
def test_gpu_sources_compile(compiler, target):
    """One GPU text per role compiles with both NVRTC and hiprtc (split-K config with a reduce)."""
    from conftest import require_compiler

    comp = require_compiler(compiler)
    shape, cfg = g.GemmShape(100, 70, 90), g.GemmConfig(64, 32, 16, 4, 2, split=3, unroll=4)
    for role in g.roles_for(cfg):
        code = comp.compile(g.kernel_request(role, compiler, target, shape, cfg, "gelu"))
        # a code object / cubin for the target that defines the role's kernel (extern "C": not mangled)
        if compiler == "hiprtc":
            assert_amdgpu_code_object(code.binary, target, g.symbol(role))
        else:
            assert_cubin(code.binary, int(target[3:]), g.symbol(role))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(bm=64, tm=3), "divide the block tile"),
        (dict(bm=128, bn=128, tm=1, tn=1), "threads per block"),
        (dict(bk=128, bm=64, bn=64), "shared memory"),
        (dict(split=0), "split must be a positive integer"),
        (dict(unroll=True), "unroll must be a positive integer"),
    ],
)
def test_bad_configs_are_refused(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        g.GemmConfig(**kwargs)


def test_bad_arguments_name_the_value():
    shape, cfg = g.GemmShape(4, 4, 4), g.GemmConfig()
    with pytest.raises(ConfigError, match="'swish'"):
        g.kernel_request("pointwise", "host", "host", shape, cfg, "swish")
    with pytest.raises(ConfigError, match="'epilogue'"):
        g.kernel_request("epilogue", "host", "host", shape, cfg)
    with pytest.raises(ConfigError, match="split=1"):
        g.defines("reduce", shape, cfg)
    with pytest.raises(ConfigError, match="GemmShape.k"):
        g.GemmShape(4, 4, 0)
    with pytest.raises(ConfigError, match=r"a must have shape \(4, 4\)"):
        g.run_host_pipeline(
            {}, shape, cfg, np.zeros((3, 4), np.float32), np.zeros((4, 4), np.float32), np.zeros(4, np.float32)
        )


def test_launch_geometry_takes_the_devices_own_count():
    """No H100/H200 count stands in for a device: the elementwise grid is capped at 8 blocks per
    multiprocessor of the count given, and a missing or bad count is refused by name."""
    shape, cfg = g.GemmShape(1024, 1024, 64), g.GemmConfig(split=4)
    assert g.launch_geometry("fill", shape, cfg, 4).grid == (32, 1, 1)
    assert g.launch_geometry("fill", shape, cfg, 304).grid == (min(304 * 8, 4 * 1024 * 1024 // 256), 1, 1)
    assert g.launch_geometry("gemm", shape, cfg, 4) == g.launch_geometry("gemm", shape, cfg, 304)
    assert_the_count_is_required(lambda *count: g.launch_geometry("fill", shape, cfg, *count))


def assert_the_count_is_required(launch) -> None:
    """``launch(*count)`` without a count is a TypeError naming sm_count; None, 0, True, 1.5 are
    refused by name (tests/tuning/test_hxgen.py checks hxgen.launch with it too)."""
    with pytest.raises(TypeError, match="sm_count"):
        launch()
    for bad in (None, 0, True, 1.5):
        with pytest.raises(ConfigError, match=rf"sm_count .*; got {bad!r}"):
            launch(bad)
