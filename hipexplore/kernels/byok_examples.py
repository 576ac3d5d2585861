"""Kernels shaped like the ones a reviewer brings (issue 10), used by the H200 checks
(``tests/test_gpu_byok.py``, ``benchmarks/byok_h200.py``): a templated tiled 2-D transpose, a row
softmax with dynamic shared memory, a 5-point stencil whose coefficients come from a header in an
include directory, a SAXPY to be compiled elsewhere and loaded as a cubin, and a kernel that writes
through a null pointer past a size (the fault a sweep must survive). Each comes with its NumPy
reference (module-level functions, so they pickle into a sweep worker).

Not in the catalog: they are examples of *user* kernels, built with ``user_kernel`` by the callers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..files import write_file

TRANSPOSE_CU = r"""#include <cuda_runtime.h>
template <int TILE, int ROWS_PER_PASS>
__global__ void transpose_tiled(float* __restrict__ out, const float* __restrict__ in, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long)(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (x < rows && y + j < cols) out[(long)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""
TRANSPOSE_ARGS = "out:out:f32[rows*cols], in:in:f32[rows*cols], rows:i32=isqrt(n), cols:i32=n//rows"

SOFTMAX_CU = r"""#include <cuda_runtime.h>
extern "C" __global__ void row_softmax(float* __restrict__ y, const float* __restrict__ x, int cols, int rows) {
  extern __shared__ float red[];  // blockDim.x floats: sized by --shared-bytes 'block_x*4'
  const float* xr = x + (long)blockIdx.x * cols;
  float* yr = y + (long)blockIdx.x * cols;
  float m = -3.0e38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(xr[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.0f / red[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - m) * inv;
}
"""
SOFTMAX_ARGS = "out:y:f32[n], in:x:f32[n], cols:i32=1024, rows:i32=n//cols"

STENCIL_CU = r"""#include <cuda_runtime.h>
#include <stencil_coeffs.h>
extern "C" __global__ void stencil5(float* __restrict__ out, const float* __restrict__ in, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i >= 2 && i + 2 < n)
    out[i] = C0 * in[i] + C1 * (in[i - 1] + in[i + 1]) + C2 * (in[i - 2] + in[i + 2]);
  else if (i < n)
    out[i] = in[i];
}
"""
STENCIL_ARGS = "out:out:f32[n], in:in:f32[n], n:u64=n"


def stencil_header(c0: float, c1: float, c2: float) -> str:
    return f"#pragma once\n#define C0 {c0!r}f\n#define C1 {c1!r}f\n#define C2 {c2!r}f\n"


SAXPY_CU = r"""extern "C" __global__ void saxpy(float* y, const float* x, float a, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""
SAXPY_ARGS = "inout:y:f32[n], in:x:f32[n], a:f32=2.0, n:u64=n"

FAULTY_CU = r"""extern "C" __global__ void scale_faulty(float* y, const float* x, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  if (n > (1ull << 20) && i == 0) *(volatile float*)0 = 1.0f;  // past 4 MiB per array: a null write
  if (i < n) y[i] = 2.0f * x[i];
}
"""
FAULTY_ARGS = "out:y:f32[n], in:x:f32[n], n:u64=n"


def transpose_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {"out": inputs["in"].reshape(scalars["rows"], scalars["cols"]).T.ravel().copy()}


def softmax_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    x = inputs["x"].reshape(scalars["rows"], scalars["cols"]).astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32).ravel()}


def stencil_ref_for(c0: float, c1: float, c2: float):
    return _Stencil(c0, c1, c2)


class _Stencil:
    """The stencil's reference for given coefficients (a class, so it pickles)."""

    def __init__(self, c0: float, c1: float, c2: float) -> None:
        self.c = (np.float32(c0), np.float32(c1), np.float32(c2))

    def __call__(self, inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
        x = inputs["in"]
        c0, c1, c2 = self.c
        out = x.copy()
        out[2:-2] = c0 * x[2:-2] + c1 * (x[1:-3] + x[3:-1]) + c2 * (x[:-4] + x[4:])
        return {"out": out}


def saxpy_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {"y": (np.float32(scalars["a"]) * inputs["x"] + inputs["y"]).astype(np.float32)}


def scale_ref(inputs: Mapping[str, np.ndarray], scalars: Mapping[str, Any]) -> dict[str, np.ndarray]:
    return {"y": (2.0 * inputs["x"]).astype(np.float32)}


def write_sources(folder: Path) -> dict[str, Path]:
    """The example sources as files (the stencil's header in ``folder/include``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "include").mkdir(exist_ok=True)
    paths = {}
    for name, text in (("transpose.cu", TRANSPOSE_CU), ("softmax.cu", SOFTMAX_CU), ("stencil.cu", STENCIL_CU),
                       ("saxpy.cu", SAXPY_CU), ("faulty.cu", FAULTY_CU)):
        paths[name] = write_file(folder / name, text, what="example source", durable=False)
    write_file(folder / "include" / "stencil_coeffs.h", stencil_header(0.5, 0.2, 0.05), what="example header", durable=False)
    return paths


__all__ = ["write_sources"]
