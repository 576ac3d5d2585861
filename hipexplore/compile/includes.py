"""The include closure of a compile: every file it reads, found the way the compiler finds them,
so that the content of each one is in the cache key and an edited header is never served stale.

Why a module of its own: ``-I DIR`` used to be refused (``request.FILE_READING_OPTIONS``) because
the compiler would read files the key could not see. Here the files are read *for* the compiler:
``include_closure`` walks ``#include`` lines from the main source, resolving

* ``#include "x.h"``: beside the including file, then each include directory in order;
* ``#include <x.h>``: each include directory in order;
* anything not found there: a *built-in* header of the runtime compiler (``BUILTIN_HEADERS``:
  hiprtc and NVRTC have the runtime built in, but ROCm 5.2's hiprtc fails on
  ``#include <hip/hip_runtime.h>`` and NVRTC ships no ``cuda_runtime.h``; the standard headers
  neither has, ``<cstdint>``, ``<limits>``, ``<type_traits>``..., come from std_headers.py), else a *system*
  header left to the compiler (``<cstdio>`` for cc: the compiler's environment, not this closure;
  compile/implicit.py keys the files the compiler reads for it, from ``cc -M`` or resolved the
  way NVRTC/hiprtc resolve).

Every resolved file becomes a ``Source`` header named as its ``#include`` spells it, which is how
hiprtc/NVRTC match headers and how the host compiler's build folder lays them out; the request
then carries their text, so the key does too. Directives are read as the preprocessor reads
them (``directive_text``: line splices, comments, ``%:``/``??=``; ``#include_next``/``#import``
too), whatever the conditions (a superset: a header under a false ``#if`` is keyed too, which
can only cause a miss). Two different files included under the same spelling are refused (the
compiler would see only one of them). ``#include MACRO`` follows every ``#define MACRO "x"`` seen;
other forms are listed in ``unresolved``. The closure only supplies headers: what it cannot read
makes the compile fail, or is read by the compiler from disk and then keyed from the compiler's
own dependency list (implicit.py), so a spelling it misses is never served stale. Files the compiler finds on its own (``CPATH`` folders, ``/usr/local/include``,
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

_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*(?:include_next|include|import)[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>|(\S.*))', re.MULTILINE
)
_DEFINE = re.compile(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+(?:"([^"\n]+)"|<([^>\n]+)>)[ \t]*$', re.MULTILINE)
_LEX = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/|[^"\'/]+|/', re.S)


def directive_text(text: str) -> str:
    """``text`` as the preprocessor sees its directives: line splices removed (also ``??/``),
    comments replaced by a space (a block comment keeps its newlines), and a line's leading
    ``%:`` or ``??=`` read as ``#``. The closure only supplies headers: a spelling it still
    cannot read makes the compile fail or is keyed from the compiler's own list (implicit.py),
    never served stale."""
    from .implicit import spliced

    out = []
    for m in _LEX.finditer(spliced(text)):
        tok = m.group(0)
        if tok.startswith("//"):
            out.append(" ")
        elif tok.startswith("/*"):
            out.append(" " + "\n" * tok.count("\n"))
        else:
            out.append(tok)
    return re.sub(r"(?m)^([ \t]*)(?:%:|\?\?=)", r"\1#", "".join(out))


_HIP_NOTE = "/* hipexplore built-in: hiprtc has the HIP runtime built in; this header only satisfies the include */\n#pragma once\n"
_CUDA_NOTE = "/* hipexplore built-in: NVRTC has the CUDA device runtime built in; this header only satisfies the include */\n#pragma once\n"
from .std_headers import STD_HEADERS  # noqa: E402  (the texts: a module of their own)

_STD_NOTE = "/* hipexplore built-in stand-in for a standard header (the runtime compiler has none) */\n#pragma once\n"

#: Headers the runtime compilers provide built in (or need no text for), by include spelling.
BUILTIN_HEADERS: dict[str, dict[str, str]] = {
    "hiprtc": {
        **{
            name: _HIP_NOTE
            for name in (
                "hip/hip_runtime.h",
                "hip/hip_runtime_api.h",
                "hip/hip_fp16.h",
                "hip/hip_vector_types.h",
                "hip/math_functions.h",
                "hip/device_functions.h",
                "hip/hip_common.h",
            )
        },
        **{name: _STD_NOTE + text for name, text in STD_HEADERS.items()},
    },
    "nvrtc": {
        **{
            name: _CUDA_NOTE
            for name in (
                "cuda_runtime.h",
                "cuda_runtime_api.h",
                "device_launch_parameters.h",
                "device_functions.h",
                "vector_types.h",
                "math_functions.h",
            )
        },
        **{name: _STD_NOTE + text for name, text in STD_HEADERS.items()},
    },
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
        rows = [
            {"name": f.spelled, "path": f.path, "sha256": f.sha256, "included_from": f.included_from}
            for f in self.files
        ]
        rows += [
            {
                "name": b,
                "path": f"(built-in {self.compiler} header)",
                "sha256": hashlib.sha256(BUILTIN_HEADERS[self.compiler][b].encode()).hexdigest(),
                "included_from": "",
            }
            for b in self.builtin
        ]
        return rows


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(path)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None


def _existing_dirs(include_dirs: Sequence[str | Path]) -> list[Path]:
    """The include directories, resolved; ConfigError for one that is not a directory."""
    dirs = []
    for d in include_dirs:
        p = Path(d).expanduser().resolve()
        if not p.is_dir():
            raise ConfigError(f"include directory {str(d)!r} does not exist or is not a directory")
        dirs.append(p)
    return dirs


def include_closure(
    text: str,
    *,
    compiler: str,
    source_path: str | Path | None = None,
    include_dirs: Sequence[str | Path] = (),
    given: Sequence[str] = (),
) -> IncludeClosure:
    """Walk the ``#include`` lines of ``text`` (the file at ``source_path``, if it is one) and of
    every file they reach; see the module docstring for the search order.

    ``given``: spellings already supplied as request headers by text (``--header``): they are
    neither searched nor listed again. Include directories must exist (``ConfigError`` otherwise).
    """
    if compiler not in BUILTIN_HEADERS:
        raise ConfigError(f"compiler must be one of {', '.join(BUILTIN_HEADERS)}; got {compiler!r}")
    dirs = _existing_dirs(include_dirs)
    builtins = BUILTIN_HEADERS[compiler]
    main_dir = Path(source_path).resolve().parent if source_path is not None else None
    found: dict[str, IncludedFile] = {}
    builtin: list[str] = []
    system: list[str] = []
    unresolved: list[str] = []
    seen_paths: set[Path] = set()
    macros: dict[str, list[tuple[str | None, str | None]]] = {}
    todo: list[tuple[str, Path | None, str]] = [(text, main_dir, str(source_path or "<source>"))]
    while todo:
        body, here, name = todo.pop()
        body = directive_text(body)
        for m in _DEFINE.finditer(body):  # #include NAME: every spelling NAME is defined to
            macros.setdefault(m.group(1), []).append((m.group(2), m.group(3)))
        spellings = []
        for m in _INCLUDE.finditer(body):
            quoted, angled, other = m.groups()
            if other is not None:
                word = other.strip()
                if word in macros:
                    spellings += macros[word]
                else:
                    unresolved.append(f"{name}: #include {word}")
                continue
            spellings.append((quoted, angled))
        for quoted, angled in spellings:
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
                        f"{hit} from {name}); the runtime compilers match headers by spelling, so rename one"
                    )
                continue
            content = _read(hit, "header")
            found[spelled] = IncludedFile(spelled, str(hit), content, name)
            if hit not in seen_paths:  # a file reached under a second spelling is listed, not walked again
                seen_paths.add(hit)
                todo.append((content, hit.parent, str(hit)))
    return IncludeClosure(
        tuple(sorted(found.values(), key=lambda f: f.spelled)),
        tuple(sorted(builtin)),
        tuple(sorted(system)),
        tuple(unresolved),
        compiler,
    )


def with_closure(
    request: CompileRequest, *, source_path: str | Path | None = None, include_dirs: Sequence[str | Path] = ()
) -> tuple[CompileRequest, IncludeClosure]:
    """``request`` with its include closure added to its headers (so the key holds every file)."""
    closure = include_closure(
        request.source.text,
        compiler=request.compiler,
        source_path=source_path,
        include_dirs=include_dirs,
        given=[h.name for h in request.headers],
    )
    return request.with_(headers=(*request.headers, *closure.headers())), closure


__all__ = ["BUILTIN_HEADERS", "IncludeClosure", "IncludedFile", "include_closure", "with_closure"]
