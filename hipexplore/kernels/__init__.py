"""Kernel catalog: triad, copy, fill and the blocking spin kernel, written once for hiprtc and
NVRTC, with host C twins; open registration for GEMM kernels and user kernels.

Each ``KernelSpec`` carries its argument spec, launch geometry, and bytes/flops per launch so that
results can be shown as bandwidth against the device's peak.
"""
from __future__ import annotations

from . import build as _build  # noqa: F401  (kernel_for, BUILDER: spec -> request -> cache -> loaded function)
from .catalog import BUILTIN, get, names, parse_args, register, unregister, user_kernel
from .spec import Arg, KernelSpec, canonical_dtype, fixed_geometry, grid_stride
from .transform import insert_icache_flush

__all__ = [
    "Arg",
    "BUILTIN",
    "KernelSpec",
    "canonical_dtype",
    "fixed_geometry",
    "get",
    "grid_stride",
    "insert_icache_flush",
    "names",
    "parse_args",
    "register",
    "unregister",
    "user_kernel",
]
