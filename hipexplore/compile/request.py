"""Compile requests and their cache keys.

A request is everything that decides the compiler's output. Its key is a canonical JSON record
(sorted keys, no whitespace) of the request plus the compiler's identity; the SHA-256 digest of
that record is only an *index*: the full record is stored with every cache entry and compared on
every hit (the MIGraphX #5270 review's critical finding: a digest alone is not an identity).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ..errors import ConfigError
from . import inputs

#: Bump when the compiled output format changes, or when the key record changes in a way that could
#: read the same as an old record; old disk entries then miss (and sit in their own folder). A new
#: field or a field spelled differently (headers became ``{"name", "sha256"}``) already gives every
#: key another digest, so old entries are never read as new ones; they age out with pruning.
KEY_SCHEMA = 1

COMPILERS = ("hiprtc", "nvrtc", "host", "triton")

#: Diagnostic switches. They have side effects (files written, logs printed) that a cache hit
#: would silently skip, so a request that sets any of them BYPASSES the cache: it always compiles,
#: is recorded as outcome ``bypassed``, and its result is not stored.
DIAGNOSTICS = frozenset({"dump-source", "dump-asm", "trace"})

#: Default compile mode per compiler: what kind of binary comes back.
DEFAULT_MODE = {"hiprtc": "code-object", "nvrtc": "cubin", "host": "shared-library", "triton": "binary"}

DigestFn = Callable[[bytes], str]

#: Options that make the compiler read files the key cannot see (an edited header would then be
#: served stale from the cache). Headers are passed as ``headers=`` so their text is keyed;
#: include directories go through ``compile.includes.with_closure``, which reads them into headers.
FILE_READING_OPTIONS = (
    "-I",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-include",
    "--include-path",
    "--pre-include",
    "-imacros",
    "--sysroot",
    "@",
)


def sha256_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=4096)
def text_digest(text: str) -> str:
    """SHA-256 of a source text's UTF-8 bytes (remembered: the same header set recurs in every
    request of a tuning list)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Source:
    """One named source text: the main program or a header it includes."""

    name: str
    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"source name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.text, str):
            raise ConfigError(f"source text for {self.name!r} must be str, got {type(self.text).__name__}")


@dataclass(frozen=True)
class CompilerIdentity:
    """Who compiles: name, version and a stamp of the library actually loaded.

    ``stamp`` changes when the loaded library file changes (path, size, mtime and a hash of its
    first megabyte), so a toolkit upgrade of the same version string still changes the key.
    ``extra`` holds anything else that changes output (e.g. device-libs location).
    """

    name: str
    version: str
    library: str = ""
    stamp: str = ""
    extra: tuple[tuple[str, str], ...] = ()

    def record(self) -> dict:
        return {
            "name": self.name,
            "version": self.version,
            "library": self.library,
            "stamp": self.stamp,
            "extra": [list(kv) for kv in self.extra],
        }


@dataclass(frozen=True)
class CompileRequest:
    """Everything that decides a compile's output, except the compiler identity.

    kernels: kernel names or C++ name expressions (``"axpy<float, 4>"``) whose lowered (mangled)
    names the compiler reports back; ``label`` is a human name for events and never enters the key.
    """

    source: Source
    compiler: str
    target: str
    headers: tuple[Source, ...] = ()
    kernels: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    mode: str = ""
    diagnostics: frozenset[str] = frozenset()
    label: str = field(default="", compare=False)
    #: which clock macros (DATE, TIME, TIMESTAMP) the texts use; computed, not compared
    clock: frozenset[str] = field(default=frozenset(), compare=False, repr=False, init=False)

    def __post_init__(self) -> None:
        if self.compiler not in COMPILERS:
            raise ConfigError(f"compiler must be one of {', '.join(COMPILERS)}; got {self.compiler!r}")
        if not isinstance(self.target, str) or not self.target:
            raise ConfigError(
                f"target must be a non-empty string such as 'gfx90a', 'sm_90' or 'host'; got {self.target!r}"
            )
        if isinstance(self.source, str):
            object.__setattr__(self, "source", Source("main" + _EXT.get(self.compiler, ".c"), self.source))
        for attr in ("headers", "kernels", "options"):
            val = getattr(self, attr)
            if isinstance(val, str):
                raise ConfigError(f"{attr} must be a sequence, not the single string {val!r}")
            object.__setattr__(self, attr, tuple(val))
        if isinstance(self.headers, Mapping):  # pragma: no cover - tuple() above already flattened
            pass
        hdrs = []
        for h in self.headers:
            if isinstance(h, tuple) and len(h) == 2:
                h = Source(*h)
            if not isinstance(h, Source):
                raise ConfigError(f"headers must be Source objects or (name, text) pairs; got {h!r}")
            hdrs.append(h)
        names = [h.name for h in hdrs]
        if len(set(names)) != len(names):
            raise ConfigError(f"header names must be unique; got {names}")
        object.__setattr__(self, "headers", tuple(hdrs))
        for k in self.kernels:
            if not isinstance(k, str) or not k.strip():
                raise ConfigError(f"kernel names must be non-empty strings; got {k!r}")
        for o in self.options:
            if not isinstance(o, str):
                raise ConfigError(f"options must be strings; got {o!r}")
            if o.startswith(FILE_READING_OPTIONS):
                raise ConfigError(
                    f"option {o!r} makes the compiler read files the cache key cannot see (an edited file would be "
                    f"served stale); give include directories as `-I DIR`/`--include-dir DIR` on the command line or "
                    f"include_dirs=[...] in Python (hipexplore.compile.includes keys every file they supply), "
                    f"or headers as CompileRequest(headers=...) / `--header FILE`"
                )
            why = inputs.refused_option(o, self.compiler)
            if why:
                raise ConfigError(why)
        texts = [(s.name, s.text) for s in (self.source, *hdrs)]
        inputs.check_texts(texts)
        object.__setattr__(self, "clock", inputs.uses_clock(t for _, t in texts))
        if not self.mode:
            object.__setattr__(self, "mode", DEFAULT_MODE[self.compiler])
        diags = frozenset(self.diagnostics)
        unknown = diags - DIAGNOSTICS
        if unknown:
            raise ConfigError(f"unknown diagnostics {sorted(unknown)}; expected a subset of {sorted(DIAGNOSTICS)}")
        object.__setattr__(self, "diagnostics", diags)

    @property
    def name(self) -> str:
        """A short human name: the label, else the kernels, else the source file name."""
        return self.label or (",".join(self.kernels) if self.kernels else self.source.name)

    def record(self) -> dict:
        """The request part of the key record (label and diagnostics excluded)."""
        return {
            "source": {"name": self.source.name, "text": self.source.text},
            # header order does not change what a #include sees, so sort by name. Each header by the
            # SHA-256 of its text (as MIGraphX's persistent cache and cuda.core key headers): a
            # tuning list's kernels share a 75 KB header set, which in full made every key record
            # 79 KB and a disk hit ~2 ms of JSON (2% of an NVRTC compile on the H200 machine)
            "headers": [
                {"name": h.name, "sha256": text_digest(h.text)} for h in sorted(self.headers, key=lambda s: s.name)
            ],
            "kernels": list(self.kernels),
            "options": list(self.options),  # order matters to compilers: keep it
            "target": self.target,
            "compiler": self.compiler,
            "mode": self.mode,
        }

    def with_(self, **changes) -> "CompileRequest":
        from dataclasses import replace

        return replace(self, **changes)


_EXT = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c", "triton": ".py"}


@dataclass(frozen=True)
class CacheKey:
    """The canonical key record, its exact bytes, and the digest used as the index/file name."""

    canonical: bytes
    digest: str
    #: False when the files the compile reads could not be listed (the cache then compiles, stores nothing)
    cacheable: bool = field(default=True, compare=False)
    #: the compiler's own cache as this lookup's compile would use it (recorded in its event; not keyed:
    #: the output does not depend on it, and a request's own --no-cache/-pch are among its options)
    compiler_cache: str = field(default="", compare=False)

    @property
    def record(self) -> dict:
        return json.loads(self.canonical)

    def __str__(self) -> str:
        return self.digest


def canonical_json(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def make_key(
    request: CompileRequest, identity: CompilerIdentity, digest: DigestFn = sha256_digest, implicit=None
) -> CacheKey:
    """Build the key: canonical record of (schema, request, compiler identity) and its digest.

    ``implicit``: the files the compile reads outside the request (``compile.implicit.Implicit``,
    from the compiler's ``implicit_inputs``); listed under ``"implicit"`` when there are any.
    """
    if identity.name != request.compiler:
        raise ConfigError(f"compiler identity {identity.name!r} does not match request compiler {request.compiler!r}")
    record = {"schema": KEY_SCHEMA, "request": request.record(), "compiler": identity.record()}
    if request.clock:  # __DATE__/__TIME__: the expansion the compiler will see is an input
        record["clock"] = inputs.clock_record(request.compiler, request.clock)
    if implicit is not None and (implicit.files or implicit.error):
        record["implicit"] = implicit.record()
    canonical = canonical_json(record)
    return CacheKey(
        canonical=canonical, digest=digest(canonical), cacheable=not (implicit is not None and implicit.error)
    )
