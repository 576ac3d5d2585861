"""Kernel catalog: triad, copy, fill and the blocking spin kernel, written once for hiprtc and
NVRTC, with host C twins; open registration for GEMM kernels and user kernels.

Each ``KernelSpec`` carries its argument spec, launch geometry, and bytes/flops per launch so that
results can be shown as bandwidth against the device's peak.

Names resolve lazily (``hipexplore._lazy``): ``import hipexplore.kernels`` loads neither numpy nor
the kernel builder (``build``: spec -> request -> cache -> loaded function); they load on first use.
"""

from __future__ import annotations

from .._lazy import lazy

_LAZY = {
    "Arg": ".spec",
    "KernelSpec": ".spec",
    "canonical_dtype": ".spec",
    "fixed_geometry": ".spec",
    "grid_stride": ".spec",
    "BUILTIN": ".catalog",
    "get": ".catalog",
    "names": ".catalog",
    "parse_args": ".catalog",
    "register": ".catalog",
    "unregister": ".catalog",
    "user_kernel": ".catalog",
    "insert_icache_flush": ".transform",
}
__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = list(_LAZY)
