"""Triton (``triton.compile``) as a compiler backend: hsaco for gfx targets, cubin for sm targets.

Why a backend: the PyPI ``triton`` wheel carries its own LLVM, AMD device libraries and ptxas, so a
CPU-only machine with no ROCm produces real gfx942/gfx950 code objects and sm_90 cubins offline.
Triton is heavy to import and its LLVM is process-global, so the registry runs it isolated (in
worker processes) by default and the parent never imports it: requests are built by
``triton_source.triton_request`` with ``ast`` alone.

Each compile: import the request's generated modules from their texts (from memory, under file
names derived from their digest, so the line info Triton writes is the same in every process), find
the ``@triton.jit`` function (through ``autotune``/``heuristics`` wrappers), set exactly the
request's keyed variables in the environment (every other one the key would hold unset), make
Triton's knobs follow them (values set from Python, those read once at import such as
``PTXAS_OPTIONS``' default, passed explicitly), and call ``triton.compile(ASTSource(...), target=...)``
with Triton's own cache pointed at a private directory and ``always_compile`` on (our cache is the
cache; Triton's must not turn a compile into a silent hit). The ``ObjectCode`` carries the binary
and ``metadata``: kernel name, shared memory, num_warps/warp size, the kernel parameters the ABI
takes (the user's non-constexpr arguments, then Triton 3.x's trailing scratch pointers, counted from
the PTX/AMDGCN entry) and, for AMD, the resource usage from the code object's metadata
(``triton_launch.launch_metadata``).
``implicit_inputs`` keys the files the compile reads outside the request (the tools and libraries
variables name, files named by ptxas options, an ``ir_override``) by content.

The identity (computed from the installed files, without importing Triton): its version, a stamp
of libtriton, a hash of the Python sources that generate code (what ``triton_key()`` hashes) and
stamps of the AMD code generator, ptxas and the bundled device libraries.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.abc
import importlib.util
import linecache
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from typing import Any, Iterator

from ..errors import CompileError, CompilerUnavailable, ConfigError
from ._common import file_stamp, join_log
from . import compiler_cache
from .base import CompilerBase, ObjectCode
from .request import CompileRequest, CompilerIdentity
from .triton_launch import launch_metadata
from .triton_source import FILE_ENV, check_target, decode_options, knob_names

#: binary: the hsaco (gfx) or cubin (sm); asm: the AMDGCN (gfx) or PTX (sm) text Triton's own LLVM
#: wrote, as UTF-8 bytes (LLVM 14's llvm-objdump cannot disassemble gfx942, so this is the listing)
MODES = ("binary", "asm")


#: what the extra brings (said where it is missing)
_WHEEL = "the PyPI wheel, >= 3.9, carries its own LLVM, AMD device libraries and ptxas"


def _import_triton() -> Any:
    try:
        import triton  # noqa: F401
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401

        return triton
    except Exception as exc:  # ImportError, or a broken install raising anything on import
        from ..extras import message

        raise CompilerUnavailable(
            message(
                "the Triton compiler",
                "triton",
                detail=f"triton is not importable ({type(exc).__name__}: {exc}); {_WHEEL}",
            )
        ) from exc


def gpu_target(target: str) -> Any:
    """Triton's GPUTarget for 'gfx942' / 'sm_90' (wave64 on gfx9, wave32 on gfx10+)."""
    from triton.backends.compiler import GPUTarget

    check_target(target)
    if target.startswith("gfx"):
        return GPUTarget("hip", target, 64 if target.startswith("gfx9") else 32)
    return GPUTarget("cuda", int(re.sub(r"[af]$", "", target[3:])), 32)


class TritonCompiler(CompilerBase):
    """``triton.compile`` behind the compiler interface (one compile at a time per process)."""

    name = "triton"

    def __init__(self, triton_cache_dir: str | None = None) -> None:
        #: "": Triton's own cache is private and bypassed (always_compile), so every compile is real.
        #: A directory: Triton's own on-disk cache there is used (the replay's triton-cold/warm
        #: passes), and ``metadata["triton_cache_hit"]`` says whether it hit. None (default): as
        #: ``HIPEXPLORE_COMPILER_CACHE`` says in this process (``on``: TRITON_CACHE_DIR; else "").
        self._dir_given = triton_cache_dir is not None
        if triton_cache_dir is None:
            triton_cache_dir = compiler_cache.backend_kwargs(self.name).get("triton_cache_dir", "")
        self.triton_cache_dir = str(triton_cache_dir or "")
        self._lock = threading.Lock()
        self._triton: Any = None
        self._reason = ""
        self._identity: CompilerIdentity | None = None
        self._workdir: str | None = None

    def own_cache(
        self, options: tuple[str, ...] = (), identity: CompilerIdentity | None = None, environ: Any = None
    ) -> compiler_cache.OwnCache:
        """Triton's own cache: the folder this backend was given, else as the environment chooses."""
        if self._dir_given:
            if not self.triton_cache_dir:
                return compiler_cache.OwnCache(self.name, "off", "hipexplore compiles with always_compile")
            return compiler_cache.OwnCache(
                self.name,
                "on",
                "Triton's own cache in a folder given to the backend",
                live=True,
                directory=self.triton_cache_dir,
            )
        return compiler_cache.state(self.name, tuple(options), environ)

    def _bindings(self) -> Any:
        if self._triton is None:
            try:
                self._triton = _import_triton()
            except CompilerUnavailable as exc:
                self._reason = str(exc)
                raise
        return self._triton

    def _root(self) -> str:
        """The installed triton package's directory, found without importing it (its import is heavy
        and loads LLVM: the parent process of an isolated compiler, ``hipexplore info`` and
        provenance only need to know it is there and what it is)."""
        try:
            spec = importlib.util.find_spec("triton")
        except (ImportError, ValueError):  # a broken install, or sys.modules["triton"] = None
            spec = None
        if spec is None or not spec.origin:
            from ..extras import message

            self._reason = message("the Triton compiler", "triton", ["triton"], detail=_WHEEL)
            raise CompilerUnavailable(self._reason)
        return os.path.dirname(spec.origin)

    def available(self) -> bool:
        try:
            self._root()
            return True
        except CompilerUnavailable:
            return False

    def unavailable_reason(self) -> str:
        return "" if self.available() else self._reason

    def targets(self) -> tuple[str, ...]:
        if not self.available():
            return ()
        return ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201", "sm_80", "sm_89", "sm_90", "sm_100", "sm_120")

    def version(self) -> str:
        """``triton <distribution version>``: the identity's version, read without hashing a file."""
        from importlib.metadata import version as dist_version

        return f"triton {dist_version('triton')}"

    def identity(self) -> CompilerIdentity:
        """Triton's version, libtriton's stamp, a hash of the Python sources that generate code
        (compiler, backends, language, runtime: what ``triton_key()`` hashes) and stamps of the
        AMD code generator, ptxas and the device libraries. Computed from the files, no import."""
        if self._identity is not None:
            return self._identity
        root = self._root()
        sources = hashlib.sha256()
        for sub in ("compiler", "backends", "language", "runtime"):
            for dirpath, dirnames, files in sorted(os.walk(os.path.join(root, sub))):
                dirnames.sort()
                for f in sorted(files):
                    if f.endswith(".py"):
                        path = os.path.join(dirpath, f)
                        sources.update(os.path.relpath(path, root).encode() + b"\0")
                        with open(path, "rb") as fh:
                            sources.update(hashlib.sha256(fh.read()).digest())
        extra: list[tuple[str, str]] = [("python_sources", sources.hexdigest())]
        for rel in ("backends/amd/lib/libtriton_amd_codegen.so", "backends/nvidia/bin/ptxas"):
            path = os.path.join(root, rel)
            if os.path.exists(path):
                extra.append((rel, file_stamp(path)))
        for sub in ("amd", "nvidia"):
            lib = os.path.join(root, "backends", sub, "lib")
            for f in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
                if f.endswith(".bc"):
                    extra.append((f"{sub}/{f}", file_stamp(os.path.join(lib, f))))
        libtriton = os.path.join(root, "_C", "libtriton.so")
        self._identity = CompilerIdentity(
            name=self.name,
            version=self.version(),
            library=libtriton,
            stamp=file_stamp(libtriton) if os.path.exists(libtriton) else "",
            extra=tuple(extra),
        )
        return self._identity

    @staticmethod
    def identity_files(record: dict) -> list[str]:
        """Every file ``identity`` hashes (the Python sources, the code generator, ptxas, the device
        libraries), found from its record: a remembered identity (``memo.identity``) is re-``stat``ed
        against all of them, so an edited Triton source is a new identity in a new process too."""
        root = os.path.dirname(os.path.dirname(str(record.get("library", ""))))
        if not root or not os.path.isdir(root):
            return []
        out = []
        for sub in ("compiler", "backends", "language", "runtime"):
            for dirpath, dirnames, files in os.walk(os.path.join(root, sub)):
                out.append(dirpath)
                out += [os.path.join(dirpath, f) for f in files if f.endswith((".py", ".bc", ".so")) or f == "ptxas"]
        return out

    def implicit_inputs(self, request: CompileRequest, identity: CompilerIdentity) -> Any:
        """Files the compile reads outside the request, keyed by content (``compile/implicit.py``):
        the files the variables of ``FILE_ENV`` name (ptxas, libdevice, the AMD code generator,
        LLVM and Triton plugins), the files ptxas options name (``--options-file``, or any
        operand that is a file), an ``ir_override`` file. Not cached (an ``error``): a request
        ``triton_request`` marked (a value that can change without its text changing, a variable
        that reads files chosen at compile time), a tool given as a script (what it runs is not in
        the key), a file that cannot be read."""
        from . import implicit

        _, _, env, opts = decode_options(request.options)
        marked = [o.partition("=")[2] for o in request.options if o.startswith("uncacheable=")]

        def resolve(col: Any) -> str:
            cwd = os.getcwd()

            def read(label: str, path: str, tool: bool = False) -> str:
                full = os.path.join(cwd, path) if not os.path.isabs(path) else path
                if full != path:
                    col.cwd = cwd
                data = col.read(f"{label}={path}", full)
                if data is None:
                    return f"{label}={path} is not a readable file"
                if tool and data[:2] == b"#!":
                    return f"{label}={path} is a script: the tool it runs is not in the key"
                return ""

            problems: list[str] = []
            for name in sorted(FILE_ENV & set(env)):
                parts = [p for p in env[name].split(os.pathsep if name == "TRITON_PLUGIN_PATHS" else "\0") if p]
                problems += [
                    read(name, p, tool=name.endswith("PTXAS_PATH") or name.endswith("PTXAS_BLACKWELL_PATH"))
                    for p in parts
                ]
            ptx = opts.get("ptx_options", env.get("PTXAS_OPTIONS", "")) if request.target.startswith("sm_") else ""
            for label, path in _ptxas_files(str(ptx or ""), cwd):
                problems.append(read(label, path))
            if opts.get("ir_override"):
                problems.append(read("ir_override", str(opts["ir_override"])))
            problems = [p for p in (*marked, *problems) if p]
            return "; ".join(problems)

        return implicit.current(request, identity, resolve)

    def close(self) -> None:
        super().close()
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    # -- compile ---------------------------------------------------------------------------------
    def _check(self, request: CompileRequest) -> None:
        if request.compiler != self.name:
            raise ConfigError(f"request is for compiler {request.compiler!r}, not {self.name!r}")
        if request.mode not in MODES:
            raise ConfigError(f"triton mode must be one of {MODES}; got {request.mode!r}")
        check_target(request.target)
        if len(request.kernels) != 1:
            raise ConfigError(f"a triton request names exactly one kernel; got {list(request.kernels)}")

    def _dir(self) -> str:
        if self._workdir is None:
            self._workdir = tempfile.mkdtemp(prefix="hipexplore-triton-")
        return self._workdir

    def compile(self, request: CompileRequest) -> ObjectCode:
        self._check_open()
        self._check(request)
        triton = self._bindings()
        sig, consts, env, opts = decode_options(request.options)
        (kernel,) = request.kernels
        own = self.triton_cache_dir
        hits: list[bool] = []
        with (
            self._lock,
            _knobs(env, own or os.path.join(self._dir(), "triton-cache"), always_compile=not own),
            _python_knobs(triton),
            _listener(triton, hits.append if own else None),
        ):
            fn = self._load(request, kernel)
            from triton.compiler import ASTSource

            missing = [a for a in fn.arg_names if a not in sig and a not in consts]
            unknown = sorted((set(sig) | set(consts)) - set(fn.arg_names))
            if missing or unknown:
                raise self._error(
                    f"{kernel}({', '.join(fn.arg_names)}): "
                    + (f"no type or constexpr value for {', '.join(missing)}" if missing else "")
                    + ("; " if missing and unknown else "")
                    + (f"unknown arguments {', '.join(unknown)}" if unknown else ""),
                    request,
                    request.options,
                )
            full_sig = {a: ("constexpr" if a in consts else sig[a]) for a in fn.arg_names}
            target = gpu_target(request.target)
            self._check_options(request, target, opts)
            if target.backend == "cuda" and "ptx_options" not in opts:
                # CUDAOptions reads PTXAS_OPTIONS once, when Triton is imported (a dataclass default):
                # a worker that imported it under another value would compile with that one
                opts = {**opts, "ptx_options": env.get("PTXAS_OPTIONS", "")}
            start = time.perf_counter()
            try:
                compiled = triton.compile(ASTSource(fn, full_sig, consts), target=target, options=opts)
            except Exception as exc:
                raise self._error(
                    f"triton failed to compile {kernel!r} for {request.target}: "
                    f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}",
                    request,
                    request.options,
                    str(exc),
                ) from None
            seconds = time.perf_counter() - start
        binary_kind = "hsaco" if target.backend == "hip" else "cubin"
        if request.mode == "asm":
            binary = compiled.asm["amdgcn" if target.backend == "hip" else "ptx"].encode()
        else:
            binary = compiled.asm[binary_kind]
        user_args = [a for a in fn.arg_names if a not in consts]
        meta = launch_metadata(compiled, binary_kind, user_args)
        if own:
            meta["triton_cache_hit"] = bool(hits and hits[-1])
        return ObjectCode(
            binary=bytes(binary),
            compiler=self.name,
            target=request.target,
            mode=request.mode,
            log=join_log(
                f"triton {triton.__version__}: {binary_kind if request.mode == 'binary' else 'assembly'} "
                f"for {request.target}, kernel "
                f"{meta['name']} ({len(meta['params'])} parameters)"
            ),
            lowered_names={kernel: meta["name"]},
            compile_seconds=seconds,
            metadata=meta,
        )

    def _load(self, request: CompileRequest, kernel: str) -> Any:
        """Import the request's kernel module as a package whose submodules are the request's
        generated modules (``headers``: the local modules it imports, ``triton_modules``), under a
        name derived from all their texts (a module imported for another request never stands
        in), from memory: each has the file name ``<hipexplore-triton>/<digest>/<name>``, which
        is what Triton writes into the binary's line info. A real temporary folder's random name
        made two compiles of one request differ byte for byte."""
        from triton.runtime.jit import JITFunction

        texts = request.source.text + "".join(f"\0{h.name}\0{h.text}" for h in request.headers)
        digest = hashlib.sha256(texts.encode()).hexdigest()[:16]
        modname = f"_hipexplore_triton_{digest}"
        base = f"<hipexplore-triton>/{digest}"
        _SOURCES.add(modname, f"{base}/{request.source.name}", request.source.text, package=True)
        for h in request.headers:
            if h.name.endswith(".py"):
                _SOURCES.add(f"{modname}.{h.name[:-3]}", f"{base}/{h.name}", h.text)
        sys.modules.pop(modname, None)  # run the kernel's module again: its globals are the request's
        try:
            module = importlib.import_module(modname)  # Triton's code generator looks functions' modules up
        except Exception as exc:
            sys.modules.pop(modname, None)
            raise self._error(
                f"importing the kernel module for {kernel!r} failed: {type(exc).__name__}: {exc}",
                request,
                request.options,
            ) from None
        fn = getattr(module, kernel, None)
        while fn is not None and not isinstance(fn, JITFunction) and hasattr(fn, "fn"):
            fn = fn.fn  # autotune / heuristics wrappers
        if not isinstance(fn, JITFunction):
            raise self._error(f"{kernel!r} is not a @triton.jit function", request, request.options)
        return fn

    def _check_options(self, request: CompileRequest, target: Any, opts: dict[str, Any]) -> None:
        """Triton's parse_options silently drops names it does not know: a typo would compile the
        defaults under a key that claims otherwise, so unknown names are refused here."""
        from triton.compiler.compiler import make_backend

        fields = set(getattr(make_backend(target).parse_options({}), "__dataclass_fields__", {}))
        unknown = sorted(set(opts) - fields) if fields else []
        if unknown:
            raise ConfigError(
                f"unknown triton option(s) {', '.join(unknown)} for {request.target}; expected some of "
                f"{', '.join(sorted(f for f in fields if not f.startswith('_')))}"
            )


class _Sources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports the generated modules of Triton requests from their texts (``TritonCompiler._load``),
    with the file names given; ``get_source`` and ``linecache`` give ``inspect`` (and so Triton)
    their lines."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[str, str, bool]] = {}
        self._installed = False

    def add(self, name: str, filename: str, text: str, package: bool = False) -> None:
        self._texts[name] = (filename, text, package)
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        if not self._installed:
            sys.meta_path.insert(0, self)
            self._installed = True

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in self._texts:
            return None
        filename, _, package = self._texts[fullname]
        return importlib.util.spec_from_loader(fullname, self, origin=filename, is_package=package)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        filename, text, package = self._texts[module.__name__]
        module.__file__ = filename
        if package:
            module.__path__ = []
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        exec(compile(text, filename, "exec"), module.__dict__)

    def get_source(self, fullname: str) -> str:
        return self._texts[fullname][1]


_SOURCES = _Sources()


@contextlib.contextmanager
def _knobs(env: dict[str, str], cache_dir: str, always_compile: bool = True) -> Iterator[None]:
    """Exactly the request's keyed variables in os.environ (every other one the key would hold
    unset), a private Triton cache, and always_compile, for the duration of one compile."""
    keyed = sorted(knob_names())
    saved = {k: os.environ.get(k) for k in {*keyed, *env, "TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE"}}
    try:
        for k in keyed:
            os.environ.pop(k, None)
        os.environ.update(env)
        os.environ["TRITON_CACHE_DIR"] = cache_dir
        if always_compile:
            os.environ["TRITON_ALWAYS_COMPILE"] = "1"
        else:
            os.environ.pop("TRITON_ALWAYS_COMPILE", None)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _python_knobs(triton: Any) -> Iterator[None]:
    """Triton's knobs as the environment (the request's) says, for one compile: values set from
    Python (``triton.knobs.nvidia.ptxas_options = ...`` in an in-process compiler), the ones read
    once at import (``runtime.debug``, ``compilation.instrumentation_mode``) and the stages
    inspection hook are not in the key, so they must not reach the compile."""
    knobs = getattr(triton, "knobs", None)
    if knobs is None:
        yield
        return
    with contextlib.ExitStack() as stack:
        for name in ("build", "cache", "compilation", "runtime", "language", "nvidia", "amd"):
            group = getattr(knobs, name, None)
            if group is not None and hasattr(group, "scope") and hasattr(group, "reset"):
                stack.enter_context(group.scope())  # restores Python values and their variables afterwards
                group.reset()
        refresh = getattr(knobs, "refresh_knobs", None)
        if refresh is not None:
            refresh()
        tool = getattr(getattr(knobs, "NvidiaTool", None), "from_path", None)
        if hasattr(tool, "cache_clear"):  # ptxas & co. are remembered by path: the file may have changed
            tool.cache_clear()
        runtime = getattr(knobs, "runtime", None)
        hook = getattr(runtime, "add_stages_inspection_hook", None)
        if hook is not None:
            runtime.add_stages_inspection_hook = None
            stack.callback(setattr, runtime, "add_stages_inspection_hook", hook)
        yield


@contextlib.contextmanager
def _listener(triton: Any, record: Any) -> Iterator[None]:
    """Triton's compilation listener, telling a hit of its own cache from a compile."""
    if record is None:
        yield
        return
    knobs = triton.knobs.compilation
    saved = knobs.listener
    knobs.listener = lambda **kw: record(bool(kw.get("cache_hit")))
    try:
        yield
    finally:
        knobs.listener = saved


def _ptxas_files(options: str, cwd: str) -> list[tuple[str, str]]:
    """The files ptxas options make it read: ``--options-file``/``-optf`` operands (comma lists)
    and any other operand that names an existing file (Triton splits the options on spaces)."""
    found: list[tuple[str, str]] = []
    tokens = [t for t in options.split(" ") if t]
    take = False
    for tok in tokens:
        if take:
            found += [("ptxas --options-file", p) for p in tok.split(",") if p]
            take = False
            continue
        flag, eq, value = tok.partition("=")
        if flag in ("--options-file", "-optf"):
            if eq:
                found += [("ptxas --options-file", p) for p in value.split(",") if p]
            else:
                take = True
            continue
        for cand in ((value,) if eq else ()) + (tok,):
            if cand and os.path.isfile(os.path.join(cwd, cand)):
                found.append(("ptxas operand", cand))
                break
    return found


__all__ = ["TritonCompiler", "gpu_target", "launch_metadata", "CompileError"]
