"""The include closure of a compile: every file it reads, found the way the compiler finds them,
so that the content of each one is in the cache key and an edited header is never served stale.

Why a module of its own: ``-I DIR`` used to be refused (``request.FILE_READING_OPTIONS``) because
the compiler would read files the key could not see. Here the files are read *for* the compiler:
``include_closure`` walks ``#include`` lines from the main source, resolving

* ``#include "x.h"``: beside the including file, then each include directory in order;
* ``#include <x.h>``: each include directory in order;
* anything not found there: a *built-in* header of the runtime compiler (``BUILTIN_HEADERS``:
  hiprtc and NVRTC have the runtime built in, but ROCm 5.2's hiprtc fails on
  ``#include <hip/hip_runtime.h>`` and NVRTC ships no ``cuda_runtime.h``), else a *system*
  header left to the compiler (``<cstdio>`` for cc: the compiler's environment, not this closure;
  compile/implicit.py keys the files the compiler reads for it, from ``cc -M`` or resolved the
  way NVRTC/hiprtc resolve).

Every resolved file becomes a ``Source`` header named as its ``#include`` spells it, which is how
hiprtc/NVRTC match headers and how the host compiler's build folder lays them out; the request
then carries their text, so the key does too. Lines are scanned whatever the preprocessor
conditions (a superset: a header under a false ``#if`` is keyed too, which can only cause a miss,
never a stale hit). Two different files included under the same spelling are refused (the
compiler would see only one of them). ``#include MACRO`` cannot be resolved and is listed in
``unresolved``. Files the compiler finds on its own (``CPATH`` folders, ``/usr/local/include``,
absolute spellings, NVRTC's current directory) are not copied into the request: their content
enters the key through compile/implicit.py.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..errors import ConfigError
from .request import CompileRequest, Source

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>|(\S.*))', re.MULTILINE)

_HIP_NOTE = "/* hipexplore built-in: hiprtc has the HIP runtime built in; this header only satisfies the include */\n#pragma once\n"
_CUDA_NOTE = "/* hipexplore built-in: NVRTC has the CUDA device runtime built in; this header only satisfies the include */\n#pragma once\n"
_NVRTC_STDINT = _CUDA_NOTE + (
    "typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t; typedef unsigned short uint16_t;\n"
    "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t; typedef unsigned long long uint64_t;\n"
    "typedef long long intptr_t; typedef unsigned long long uintptr_t;\n")

#: Headers the runtime compilers provide built in (or need no text for), by include spelling.
BUILTIN_HEADERS: dict[str, dict[str, str]] = {
    "hiprtc": {name: _HIP_NOTE for name in (
        "hip/hip_runtime.h", "hip/hip_runtime_api.h", "hip/hip_fp16.h", "hip/hip_vector_types.h",
        "hip/math_functions.h", "hip/device_functions.h", "hip/hip_common.h", "stdint.h", "cstdint", "stddef.h", "cstddef")},
    "nvrtc": {**{name: _CUDA_NOTE for name in (
        "cuda_runtime.h", "cuda_runtime_api.h", "device_launch_parameters.h", "device_functions.h",
        "vector_types.h", "math_functions.h", "stddef.h", "cstddef")},
        "stdint.h": _NVRTC_STDINT, "cstdint": _NVRTC_STDINT},
    "host": {},
    "triton": {},  # Python source: no #include lines to walk
}


@dataclass(frozen=True)
class IncludedFile:
    """One file of the closure: the spelling that includes it, where it was found, its text."""

    spelled: str
    path: str
    text: str
    included_from: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IncludeClosure:
    """What one compile reads: files found on disk, built-in headers used, system headers left to
    the compiler, and include lines that could not be resolved (``#include MACRO``)."""

    files: tuple[IncludedFile, ...]
    builtin: tuple[str, ...] = ()
    system: tuple[str, ...] = ()
    unresolved: tuple[str, ...] = ()
    compiler: str = ""

    def headers(self) -> tuple[Source, ...]:
        """The closure as request headers: each found file under its spelling, then the built-ins."""
        out = [Source(f.spelled, f.text) for f in self.files]
        out += [Source(name, BUILTIN_HEADERS[self.compiler][name]) for name in self.builtin]
        return tuple(out)

    def record(self) -> list[dict[str, str]]:
        """One entry per keyed header (what ``compile --json`` lists)."""
        rows = [{"name": f.spelled, "path": f.path, "sha256": f.sha256, "included_from": f.included_from} for f in self.files]
        rows += [{"name": b, "path": f"(built-in {self.compiler} header)",
                  "sha256": hashlib.sha256(BUILTIN_HEADERS[self.compiler][b].encode()).hexdigest(), "included_from": ""}
                 for b in self.builtin]
        return rows


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def include_closure(text: str, *, compiler: str, source_path: str | Path | None = None,
                    include_dirs: Sequence[str | Path] = (), given: Sequence[str] = ()) -> IncludeClosure:
    """Walk the ``#include`` lines of ``text`` (the file at ``source_path``, if it is one) and of
    every file they reach; see the module docstring for the search order.

    ``given``: spellings already supplied as request headers by text (``--header``): they are
    neither searched nor listed again. Include directories must exist (``ConfigError`` otherwise).
    """
    if compiler not in BUILTIN_HEADERS:
        raise ConfigError(f"compiler must be one of {', '.join(BUILTIN_HEADERS)}; got {compiler!r}")
    dirs = []
    for d in include_dirs:
        p = Path(d).expanduser().resolve()
        if not p.is_dir():
            raise ConfigError(f"include directory {str(d)!r} does not exist or is not a directory")
        dirs.append(p)
    builtins = BUILTIN_HEADERS[compiler]
    main_dir = Path(source_path).resolve().parent if source_path is not None else None
    found: dict[str, IncludedFile] = {}
    builtin: list[str] = []
    system: list[str] = []
    unresolved: list[str] = []
    seen_paths: set[Path] = set()
    todo: list[tuple[str, Path | None, str]] = [(text, main_dir, str(source_path or "<source>"))]
    while todo:
        body, here, name = todo.pop()
        for m in _INCLUDE.finditer(body):
            quoted, angled, other = m.groups()
            if other is not None:
                unresolved.append(f"{name}: #include {other.strip()}")
                continue
            spelled = (quoted or angled).strip()
            if spelled in given:
                continue
            where = ([here] if quoted is not None and here is not None else []) + dirs
            hit = next((c for c in ((d / spelled) for d in where) if c.is_file()), None)
            if hit is None:
                if spelled in builtins:
                    if spelled not in builtin:
                        builtin.append(spelled)
                elif spelled not in system:
                    system.append(spelled)
                continue
            hit = hit.resolve()
            prior = found.get(spelled)
            if prior is not None:
                if Path(prior.path) != hit and prior.text != _read(hit, "header"):
                    raise ConfigError(
                        f"#include {spelled!r} names two different files ({prior.path} from {prior.included_from}, "
                        f"{hit} from {name}); the runtime compilers match headers by spelling, so rename one")
                continue
            content = _read(hit, "header")
            found[spelled] = IncludedFile(spelled, str(hit), content, name)
            if hit not in seen_paths:  # a file reached under a second spelling is listed, not walked again
                seen_paths.add(hit)
                todo.append((content, hit.parent, str(hit)))
    return IncludeClosure(tuple(sorted(found.values(), key=lambda f: f.spelled)), tuple(sorted(builtin)),
                          tuple(sorted(system)), tuple(unresolved), compiler)


def with_closure(request: CompileRequest, *, source_path: str | Path | None = None,
                 include_dirs: Sequence[str | Path] = ()) -> tuple[CompileRequest, IncludeClosure]:
    """``request`` with its include closure added to its headers (so the key holds every file)."""
    closure = include_closure(request.source.text, compiler=request.compiler, source_path=source_path,
                              include_dirs=include_dirs, given=[h.name for h in request.headers])
    return request.with_(headers=(*request.headers, *closure.headers())), closure


__all__ = ["BUILTIN_HEADERS", "IncludeClosure", "IncludedFile", "include_closure", "with_closure"]
