"""Compile kernels through one cache: requests and keys, compiler backends, the cache.

Names are resolved lazily so that importing ``hipexplore.compile`` never loads a compiler library.
"""
from __future__ import annotations

from .base import Compiler, ObjectCode
from .request import (
    CacheKey,
    CompileRequest,
    CompilerIdentity,
    DIAGNOSTICS,
    Source,
    make_key,
    sha256_digest,
)

_LAZY = {
    "get_compiler": ".registry",
    "compiler_info": ".registry",
    "CompileCache": ".cache",
    "CacheResult": ".cache",
    "default_cache": ".cache",
    "compile": ".cache",
    "CacheEvent": ".events",
    "EVENT_COLUMNS": ".events",
    "DiskCache": ".disk",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        mod = importlib.import_module(_LAZY[name], __name__)
        return getattr(mod, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CacheKey",
    "Compiler",
    "CompileRequest",
    "CompilerIdentity",
    "DIAGNOSTICS",
    "ObjectCode",
    "Source",
    "make_key",
    "sha256_digest",
    *_LAZY,
]
