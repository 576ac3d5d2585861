"""Compile kernels through one cache: requests and keys, compiler backends, the cache.

Names are resolved lazily (``hipexplore._lazy``) so that importing ``hipexplore.compile`` never loads a
compiler library, and ``hipexplore compile --help`` only the request module it takes its choices from.
"""

from __future__ import annotations

from .._lazy import lazy

_LAZY = {
    "Compiler": ".base",
    "ObjectCode": ".base",
    "CacheKey": ".request",
    "CompileRequest": ".request",
    "CompilerIdentity": ".request",
    "DIAGNOSTICS": ".request",
    "Source": ".request",
    "make_key": ".request",
    "sha256_digest": ".request",
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
__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = list(_LAZY)
