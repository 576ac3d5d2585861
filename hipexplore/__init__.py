"""hipexplore: evidence for GPU kernel reviews.

Two questions, answered with recorded data: how much compile time a kernel compile cache saves in
a real tuning flow, and how benchmark timings and their noise move with rotating buffers and cache
flushes. Subpackages: ``compile`` (requests, compilers, the cache), ``devices`` (host, CUDA, HIP),
``kernels`` (the catalog), ``bench`` (harness and statistics), ``tuning`` (tuning-list replay);
notebook-facing modules: ``plots``, ``widgets``, ``report``, ``cli``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._lazy import lazy  # noqa: E402
from .errors import (  # noqa: E402
    BenchmarkError,
    CacheError,
    CompileError,
    CompilerCrashed,
    CompilerError,
    CompilerUnavailable,
    CompileTimeout,
    ConfigError,
    DeviceError,
    DeviceUnavailable,
    HipexploreError,
    UnsupportedOperation,
)

__all__ = [
    "__version__",
    "BenchmarkError",
    "CacheError",
    "CompileError",
    "CompilerCrashed",
    "CompilerError",
    "CompilerUnavailable",
    "CompileTimeout",
    "ConfigError",
    "DeviceError",
    "DeviceUnavailable",
    "HipexploreError",
    "UnsupportedOperation",
]

_LAZY = {
    "Source": "hipexplore.compile.request",
    "CompileRequest": "hipexplore.compile.request",
    "CompileCache": "hipexplore.compile.cache",
    "default_cache": "hipexplore.compile.cache",
    "get_compiler": "hipexplore.compile.registry",
    "get_device": "hipexplore.devices",
    "sweep": "hipexplore.bench",
    "callable_kernel": "hipexplore.bench.callable",
    "OutputCheck": "hipexplore.bench.callable",
    "LaunchModel": "hipexplore.bench.callable",
    "user_kernel": "hipexplore.kernels.catalog",
    "SweepSpec": "hipexplore.bench",
    "StopRule": "hipexplore.bench",
    "Measurement": "hipexplore.bench.stats",
    # a function, not a module: ``hipexplore.compare(base, new)`` (the module is ``verdicts``)
    "compare": "hipexplore.verdicts",
    "compare_scenarios": "hipexplore.verdict_scenarios",
}


__getattr__, __dir__ = lazy(__name__, _LAZY)  # so ``import hipexplore`` loads no compiler or device library
__all__ += list(_LAZY)
