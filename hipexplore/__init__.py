"""hipexplore: evidence for GPU kernel reviews.

Two questions, answered with recorded data: how much compile time a kernel compile cache saves in
a real tuning flow, and how benchmark timings and their noise move with rotating buffers and cache
flushes. Subpackages: ``compile`` (requests, compilers, the cache), ``devices`` (host, CUDA, HIP),
``kernels`` (the catalog), ``bench`` (harness and statistics), ``tuning`` (tuning-list replay);
notebook-facing modules: ``plots``, ``widgets``, ``report``, ``cli``.
"""
from __future__ import annotations

__version__ = "0.1.0"

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
