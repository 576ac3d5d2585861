"""Run one real-model tuning candidate's kernels (hxgen) on a device and check them against numpy.

Why: the tuning lists exist to be compiled, but a kernel that compiles and computes the wrong
thing is no model of a real one. ``check_candidate`` launches a candidate's kernels in order
(fill, gemm, pointwise for split-K; the fused gemm alone otherwise) on fresh random inputs with
every output poisoned (NaN), and returns the relative error against numpy in float64. It runs on
the host device (the C twins) in CI and on a CUDA or HIP device (the generated C++ text).
"""

from __future__ import annotations

import ctypes
import math
from typing import Any, Callable

import numpy as np

from ..errors import ConfigError
from . import hxgen
from .gemm import relative_error  # the one definition: both tuning families check alike

#: fp32 accumulation in another order than numpy's (and K up to 16384): far under this
DEFAULT_RTOL = 2e-5


def reference(
    problem: hxgen.Problem, a: np.ndarray, b: np.ndarray, e0: np.ndarray | None, e1: np.ndarray | None
) -> np.ndarray:
    """epilogue(a @ b, e0, e1) in float64 (e0: bias [N] or an M x N tensor; e1: the residual)."""
    from math import erf

    x = a.astype(np.float64) @ b.astype(np.float64)
    epi = problem.epilogue
    if epi in ("bias", "bias_relu", "bias_gelu", "bias_add_relu"):
        x = x + e0.astype(np.float64)[None, :]
    if epi == "bias_add_relu":
        x = x + e1.astype(np.float64)
    if epi == "add":
        x = x + e0.astype(np.float64)
    if epi == "mul":
        x = x * e0.astype(np.float64)
    if epi in ("bias_relu", "bias_add_relu"):
        x = np.maximum(x, 0.0)
    if epi == "bias_gelu":
        x = 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))
    if epi == "silu":
        x = x / (1.0 + np.exp(-x))
    return x


def inputs(problem: hxgen.Problem, seed: int | None = None) -> dict[str, np.ndarray]:
    """Random fp32 inputs in [-1, 1): a (M x K), b (K x N) and the epilogue's extra inputs."""
    rng = np.random.default_rng(seed)
    m, n, k = problem.shape
    out = {"a": rng.uniform(-1, 1, (m, k)).astype(np.float32), "b": rng.uniform(-1, 1, (k, n)).astype(np.float32)}
    for i, kind in enumerate(hxgen.EPILOGUES[problem.epilogue][0]):
        out[f"e{i}"] = rng.uniform(-1, 1, n if kind == "col" else (m, n)).astype(np.float32)
    return out


def check_candidate(
    device: Any,
    problem: hxgen.Problem,
    config: hxgen.PerfConfig,
    compile_fn: Callable[[Any], Any],
    seed: int | None = None,
) -> float:
    """Compile (``compile_fn(request) -> ObjectCode``), load and run a candidate's kernels on
    ``device`` (a hipexplore Device: host, cuda or hip); return the relative error of the result."""
    from ..devices.base import PackedArgs as Args

    kind = device.kind
    compiler = {"host": "host", "cuda": "nvrtc", "hip": "hiprtc"}.get(kind)
    if compiler is None:
        raise ConfigError(f"check_candidate runs on the host, cuda or hip device; got {kind!r}")
    data = inputs(problem, seed)
    m, n, _ = problem.shape
    bufs = {name: device.alloc(arr.nbytes) for name, arr in data.items()}
    bufs["c"] = device.alloc(4 * m * n)
    bufs["y"] = device.alloc(4 * m * n)
    poison = np.full(m * n, np.nan, dtype=np.float32)
    for name, arr in data.items():
        device.copy_to_device(bufs[name], arr)
    device.copy_to_device(bufs["c"], poison)
    device.copy_to_device(bufs["y"], poison)
    kernels = {}
    for role in hxgen.roles(problem, config):
        code = compile_fn(hxgen.request(role, compiler, device.target, problem, config, label=role))
        kernels[role] = device.kernel(device.load(code), code.symbol(hxgen.SYMBOLS[role]))
    null = ctypes.c_void_p(0)

    def ptr(name: str) -> ctypes.c_void_p:
        return ctypes.c_void_p(int(bufs[name].ptr)) if name in bufs else null

    for role in hxgen.roles(problem, config):
        if compiler == "host":  # the C twins take every pointer, used or not
            names = {"gemm": ("a", "b", "c", "e0", "e1"), "fill": ("c",), "pointwise": ("c", "e0", "e1", "y")}[role]
        else:
            names = hxgen.kernel_arguments(role, problem, config)
        grid, block = hxgen.launch(role, problem, config, device.compute_units)
        device.launch(kernels[role], grid, block, Args([ptr(x) for x in names]))
    device.synchronize()
    result = np.empty(m * n, dtype=np.float32)
    final = "y" if "pointwise" in hxgen.roles(problem, config) else "c"
    device.copy_to_host(bufs[final], result)
    for buf in bufs.values():
        device.free(buf)
    return relative_error(
        result.reshape(m, n), reference(problem, data["a"], data["b"], data.get("e0"), data.get("e1"))
    )


__all__ = ["DEFAULT_RTOL", "check_candidate", "inputs", "reference", "relative_error"]
