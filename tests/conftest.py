"""Shared fixtures: small real kernels and guards for the real compilers.

A compiler that is not installed skips its tests with the reason; set
``HIPEXPLORE_REQUIRE_COMPILERS=1`` (CI on the reference machine does) to turn that into a failure.
"""
from __future__ import annotations

import os

import pytest

TRIAD_HIP = r"""
extern "C" __global__ void triad(float* a, const float* b, const float* c, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = b[i] + s * c[i];
}
"""

#: A templated kernel plus an include, for name expressions and headers (same text for hiprtc and NVRTC).
AXPY_TEMPLATE = r"""
#include "scale.h"
template <typename T>
__global__ void axpy(T* y, const T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += SCALE * a * x[i];
}
"""
AXPY_HEADER = ("scale.h", "#define SCALE 2\n")
AXPY_FLOAT_MANGLED = "_Z4axpyIfEvPT_PKS0_S0_i"

TRIAD_C = r"""
#include "triad.h"
void triad(float* a, const float* b, const float* c, float s, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i] + OFFSET;
}
"""
TRIAD_C_HEADER = ("triad.h", "#define OFFSET 0.0f\n")


def slow_c_source(loops: int = 1500) -> str:
    """C that takes gcc -O3 many seconds (about 20 s at 1500 loops on our CPU); tests kill it early."""
    body = [f" for (int i{k} = 0; i{k} < n; i{k}++) s += a[i{k}] * {k}.5 / (a[(i{k} + {k}) % n] + 1.0);"
            for k in range(loops)]
    return "double slow(double* a, int n) { double s = 0;\n" + "\n".join(body) + "\n return s; }\n"


def _require(name: str) -> None:
    from hipexplore.compile.registry import backend_class

    backend = backend_class(name)()
    if not backend.available():
        reason = backend.unavailable_reason()
        if os.environ.get("HIPEXPLORE_REQUIRE_COMPILERS") == "1":
            pytest.fail(f"{name} required but unavailable: {reason}")
        pytest.skip(f"{name} unavailable: {reason}")


@pytest.fixture
def need_hiprtc() -> None:
    _require("hiprtc")


@pytest.fixture
def need_nvrtc() -> None:
    _require("nvrtc")


@pytest.fixture
def need_host_cc() -> None:
    _require("host")


def live_group_members(pgid: int, settle: float = 3.0) -> list[int]:
    """PIDs (not zombies) whose process group is ``pgid``: leftovers of a killed worker.

    SIGKILL takes effect asynchronously, so this polls for up to ``settle`` seconds.
    """
    import time

    deadline = time.monotonic() + settle
    while True:
        found = _group_members(pgid)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _group_members(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            found.append(int(entry))
    return found
