"""Build catalog kernels: spec -> ``CompileRequest`` -> compile cache -> loaded function.

Why here and not in ``devices/``: devices only load code objects, allocate and launch; knowing the
catalog and the cache is this layer's job. ``KernelBuilder`` memoizes the loaded function per
device (a weak map, so a closed and dropped device takes its modules with it) and is installed as
the ``KernelBuilder`` a device is given when it needs kernels itself (``Device.hold_stream(kernels=...)``).

Every kernel the harness runs (the one under test, the flush kernels, the blocking kernel) is a
``CompileRequest`` answered by ``hipexplore.compile.compile(request, cache)``, so benchmark runs
exercise and are recorded by the same cache as everything else.

If the cache module cannot be imported (e.g. a stripped-down environment without its
dependencies), a direct in-process compile through the same compiler libraries is used and
``last_path()`` reports it, so a result never hides how its kernels were built.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
import threading
import weakref
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Sequence

from ..compile.base import ObjectCode
from ..compile.includes import with_closure
from ..compile.request import CompileRequest, Source, canonical_json
from ..errors import CompileError, CompilerUnavailable, ConfigError
from ..files import bounded_name
from . import catalog
from .spec import Arg, KernelSpec
from .transform import insert_icache_flush

_PATH = {"last": ""}
_LOCK = threading.Lock()


def last_path() -> str:
    """``"cache"`` when the last compile went through the compile cache, ``"direct: <why>"`` otherwise."""
    return _PATH["last"]


#: The compile option that turns a timer-capable source into its in-kernel timed variant.
TIMED_OPTION = "-DHX_TIMED"


def request_for(
    spec: KernelSpec, compiler: str, target: str, *, inline_icache: bool = False, timed: bool = False
) -> CompileRequest:
    """The compile request for ``spec`` on one compiler/target (inline-icache transforms the source;
    ``timed`` builds the in-kernel timed variant, for kernels whose spec has ``timer=True``).

    A spec read from a file (``source_file``) is read again here, and its include closure (sibling
    headers, ``include_dirs``, built-in runtime headers: ``compile.includes``) becomes the request's
    headers, so every file the compile reads is in the key.
    """
    text = spec.source_for(compiler)
    from_file = bool(spec.source_file) and (spec.source_file.endswith(".c") == (compiler == "host"))
    if from_file:
        try:
            text = Path(spec.source_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"kernel {spec.name!r}: cannot read its source file {spec.source_file!r}: {exc}"
            ) from None
    entry = spec.entry_for(compiler)
    label = spec.name
    ext = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c"}[compiler]
    file_name = bounded_name(spec.name, ext)  # a kernel name of any length or character is one file name
    if inline_icache:
        if compiler != "hiprtc":
            raise ConfigError(f"inline-icache inserts AMD instructions and needs the hiprtc compiler, not {compiler!r}")
        text = insert_icache_flush(text, entry, filename=file_name)
        label += "+inline-icache"
    options = tuple(spec.options)
    if timed:
        if not spec.timer:
            raise ConfigError(
                f"kernel {spec.name!r} has no in-kernel timer (only kernels whose source writes "
                f"its timestamps under {TIMED_OPTION}: {', '.join(n for n in catalog.names() if catalog.get(n).timer)})"
            )
        options += (TIMED_OPTION,)
        label += "+timer"
    request = CompileRequest(
        source=Source(file_name, text),
        compiler=compiler,
        target=target,
        headers=tuple(spec.headers),
        kernels=(entry,),
        options=options,
        label=label,
    )
    if spec.source_file or spec.include_dirs or spec.headers or "#include" in text:
        request, _ = with_closure(
            request, source_path=spec.source_file if from_file else None, include_dirs=spec.include_dirs
        )
    return request


def compile_request(request: CompileRequest, cache: Any = None) -> ObjectCode:
    """Compile through ``hipexplore.compile.compile`` (the cache); fall back to the compiler class
    itself only when the cache machinery cannot be imported (``last_path()`` then says why)."""
    try:
        from ..compile import cache as cache_mod

        if cache is not None and hasattr(cache, "get_or_compile"):
            result = cache.get_or_compile(request)
        else:
            result = cache_mod.compile(request, cache=cache)
    except ImportError as exc:
        with _LOCK:
            _PATH["last"] = f"direct: compile cache unavailable ({exc})"
        return _direct_compile(request)
    with _LOCK:
        _PATH["last"] = "cache"
    return _as_object_code(result)


def compile_kernel(
    spec: KernelSpec, compiler: str, target: str, *, cache: Any = None, inline_icache: bool = False, timed: bool = False
) -> ObjectCode:
    return compile_request(request_for(spec, compiler, target, inline_icache=inline_icache, timed=timed), cache)


def _as_object_code(result: Any) -> ObjectCode:
    if isinstance(result, ObjectCode):
        return result
    for attr in ("code", "object_code", "obj", "value"):
        val = getattr(result, attr, None)
        if isinstance(val, ObjectCode):
            return val
    raise CompileError(f"the compile cache returned {type(result).__name__}, which holds no ObjectCode")


def user_paths(log: str, name: str, path: str) -> str:
    """A compiler log with the request's source ``name`` (what the compiler was given, in its build
    folder) shown as the user's file ``path``, in the diagnostics (``broken.c:2:11: error`` ->
    ``src/broken.c:2:11: error``); the ``$ command`` line keeps what ran."""
    import re

    spelled = re.compile(r"(?<![\w./-])" + re.escape(name) + r"(?=:)")
    return "\n".join(line if line.startswith("$ ") else spelled.sub(lambda _m: path, line) for line in log.split("\n"))


# --- direct compile: used only when hipexplore.compile.cache cannot be imported ------------------


def _direct_compile(request: CompileRequest) -> ObjectCode:
    try:
        if request.compiler == "host":
            from ..compile.host import HostCompiler as cls
        elif request.compiler == "nvrtc":
            from ..compile.nvrtc import NvrtcCompiler as cls
        else:
            from ..compile.hiprtc import HiprtcCompiler as cls
    except ImportError as exc:
        raise CompilerUnavailable(
            f"compiler {request.compiler!r}: neither the compile cache nor the compiler module could be imported ({exc})"
        ) from None
    return cls().compile(request)


# --- the per-device builder (kernel_for; a GPU's hold_stream(kernels=BUILDER)) ------------------


@dataclass(frozen=True)
class LoadedKernel:
    """A catalog kernel loaded on one device: the module handle, the function, the code object."""

    module: Any
    function: Any
    code: ObjectCode


class KernelBuilder:
    """Compiles catalog kernels through the device's cache, loads them, memoizes per device."""

    def __init__(self) -> None:
        self._memo: weakref.WeakKeyDictionary[Any, dict[tuple[str, bool], LoadedKernel]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def loaded(
        self, device: Any, name: str | KernelSpec, *, inline_icache: bool = False, timed: bool = False
    ) -> LoadedKernel:
        """Memoized per device and per request content: a kernel whose source file or any header
        of its include closure changed builds again (and the cache then compiles it anew)."""
        spec = catalog.get(name)
        if inline_icache and not device.instruction_cache_flush:
            from ..errors import UnsupportedOperation

            raise UnsupportedOperation(
                f"inline-icache inserts AMD GPU instructions (s_icache_inv); the {device.kind} device cannot run it"
            )
        if spec.call is not None:  # a Python callable: nothing to build or load
            return LoadedKernel(None, spec.call, None)  # type: ignore[arg-type]
        if spec.code_object:
            from .code_objects import load_code_object

            key: tuple = (spec.name, "code-object", spec.code_object, _file_stamp(spec.code_object))
            with self._lock:
                found = self._memo.get(device, {}).get(key)
            if found is not None:
                return found
            module, function, code = load_code_object(device, spec.code_object, spec.entry)
            loaded = LoadedKernel(module, function, code)
        else:
            request = request_for(spec, device.compiler, device.target, inline_icache=inline_icache, timed=timed)
            key = (spec.name, inline_icache, timed, hashlib.sha256(canonical_json(request.record())).hexdigest())
            with self._lock:
                found = self._memo.get(device, {}).get(key)
            if found is not None:
                return found
            try:
                code = compile_request(request, device.cache)
            except CompileError as exc:
                if spec.source_file and request.source.name != spec.source_file:
                    exc.log = user_paths(exc.log, request.source.name, spec.source_file)
                raise
            if device.compiler == "host" and not timed:
                check_host_signature(spec, request)  # before the function can ever be called
            module = device.load(code)
            loaded = LoadedKernel(module, device.kernel(module, code.symbol(spec.entry_for(device.compiler))), code)
        with self._lock:
            return self._memo.setdefault(device, {}).setdefault(key, loaded)

    def kernel(self, device: Any, name: str, *, inline_icache: bool = False, timed: bool = False) -> Any:
        return self.loaded(device, name, inline_icache=inline_icache, timed=timed).function

    def arguments(self, name: str) -> Sequence[Arg]:
        return catalog.get(name).args


def _file_stamp(path: str) -> tuple[int, int]:
    try:
        st = Path(path).stat()
    except OSError as exc:
        raise ConfigError(f"code object {path!r} cannot be read: {exc.strerror or exc}") from None
    return st.st_size, st.st_mtime_ns


# --- host kernels: the --args spec checked against the C function's own parameter list ------------
#
# Why: the host device calls a user's C function through ctypes with the arguments the spec
# describes. A spec shorter than the function (or a scalar of the wrong width, a pointer passed
# where a number is expected) is not an error ctypes can see: the function reads garbage registers
# as pointers and counts and the whole process dies with SIGSEGV (rc 139, no message). The compiler
# knows the parameters: gcc's ``-aux-info`` prints every function's prototype, and
# ``__builtin_classify_type``/``sizeof`` in a probe compiled beside the source tell what each
# parameter is (pointer or value, integer or floating, its width), typedefs and macros resolved as
# in the real compile. A compiler without ``-aux-info`` (clang) gives no signature: the call is
# then made unchecked (``signature_checked`` says which).

#: ``__builtin_classify_type`` classes (gcc's typeclass.h)
_TYPE_CLASS = {
    0: "void",
    1: "integer",
    2: "char",
    3: "enum",
    4: "bool",
    5: "pointer",
    6: "reference",
    7: "offset",
    8: "floating",
    9: "complex",
    10: "function",
    11: "method",
    12: "struct",
    13: "union",
    14: "array",
    15: "string",
    16: "lang",
    17: "opaque",
    18: "bitint",
}
_INTEGERS = {1, 2, 3, 4}
_SIG_MEMO: dict[str, str] = {}
_SIG_LOCK = threading.Lock()


def _aux_prototype(aux: str, entry: str) -> tuple[str, list[str]] | None:
    """(parameter list text, parameter names) of ``entry``'s definition in gcc ``-aux-info`` output;
    None when it holds no definition of it with named parameters."""
    best = None
    for line in aux.splitlines():
        m = re.match(r"/\* .*:\d+:(?P<kind>[NO][FC]) \*/ (?P<decl>.*)$", line)
        if not m or m.group("kind")[1] != "F":
            continue
        decl = m.group("decl")
        at = re.search(rf"(?<![A-Za-z0-9_]){re.escape(entry)} \(", decl)
        if at is None or decl[: at.start()].count("(") != decl[: at.start()].count(")"):
            continue
        depth, i = 0, at.end() - 1
        for i in range(at.end() - 1, len(decl)):
            depth += {"(": 1, ")": -1}.get(decl[i], 0)
            if depth == 0:
                break
        params = decl[at.end() : i]
        names = re.search(r"/\* \((?P<names>[^)]*)\)", decl[i:])
        if names is None:
            continue
        best = (params, [n.strip() for n in names.group("names").split(",") if n.strip()])
    return best


def _host_signature_problems(spec: KernelSpec, request: CompileRequest) -> str:
    """Compare ``spec.args`` with the C parameters of ``request``'s entry; "" when they agree (or the
    compiler cannot say), else the reason, naming the arguments."""
    import os
    import subprocess
    import tempfile

    from ..compile.host import BUILD_PREFIX, HostCompiler

    entry = spec.entry_for("host")
    try:
        argv = HostCompiler()._command()
    except CompilerUnavailable:
        return ""
    env = dict(os.environ, LC_ALL="C", LANGUAGE="C")
    with tempfile.TemporaryDirectory(prefix=f"{BUILD_PREFIX}{os.getpid()}-sig-") as tmp:
        folder = Path(tmp)
        for src in (request.source, *request.headers):
            path = (folder / src.name).resolve()
            if folder.resolve() not in path.parents:
                return ""
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(src.text, encoding="utf-8")
        source = folder / request.source.name
        aux = folder / "hx.aux"
        opts = [o for o in request.options if not o.startswith(("-o", "-M"))]

        def run(cmd: list[str]) -> subprocess.CompletedProcess:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env, timeout=120, errors="replace")

        try:
            proc = run([*argv, *opts, f"-I{tmp}", "-fsyntax-only", "-aux-info", str(aux), str(source)])
        except (OSError, subprocess.TimeoutExpired):
            return ""
        if proc.returncode != 0 or not aux.is_file():
            return ""  # clang has no -aux-info; a source error is the compile's to report
        found = _aux_prototype(aux.read_text(encoding="utf-8", errors="replace"), entry)
        if found is None:
            return ""
        params_text, names = found
        if params_text.strip() == "void":
            names = []
        if "..." in params_text:
            return f"{entry}() takes a variable argument list (...), which a kernel launch cannot pass"
        args = list(spec.args)
        decls = [p.strip() for p in _split_params(params_text)] if names else []
        if len(names) != len(args):
            shown = f"({params_text.strip()})"
            effect = (
                "calling it would read the missing ones from whatever the registers hold"
                if len(args) < len(names)
                else "the spec does not describe this function"
            )
            return (
                f"the spec describes {len(args)} argument(s) ({', '.join(a.name for a in args) or 'none'}) but "
                f"{entry}{shown} takes {len(names)}: {effect}"
            )
        probe = folder / "hx_signature_probe.c"
        head = f'#include "{request.source.name}"\nstatic void __hx_signature_probe({params_text}) {{\n'

        def facts(body: list[str]) -> set[str]:
            probe.write_text(head + "\n".join(body) + "\n}\n", encoding="utf-8")
            try:
                p = run([*argv, *opts, f"-I{tmp}", "-fsyntax-only", "-w", "-fno-diagnostics-show-caret", str(probe)])
            except (OSError, subprocess.TimeoutExpired):
                return {"?"}
            return set(re.findall(r'static assertion failed: "(HXSIG [^"]*)"', p.stderr)) if p.returncode else set()

        got = facts(_class_probe(names, args))
        if "?" in got:
            return ""
        cls = {int(m.split()[1]): int(m.split()[3]) for m in got if m.split()[2] == "class"}
        pointee = {int(m.split()[1]): int(m.split()[3]) for m in got if m.split()[2] == "pointee"}
        if len(cls) != len(names):
            return ""  # the probe did not compile as expected: no verdict
        sizes_body = _size_probe(names, args, cls, pointee)
        size_of = {int(m.split()[1]): int(m.split()[3]) for m in facts(sizes_body)} if sizes_body else {}
    return "; ".join(_param_problems(args, decls, cls, pointee, size_of))


def _class_probe(names: list[str], args: list[Any]) -> list[str]:
    """Static assertions that fail naming each parameter's type class (and a buffer's pointee's)."""
    body = []
    for i, name in enumerate(names):
        for k in _TYPE_CLASS:
            body.append(f'_Static_assert(__builtin_classify_type({name}) != {k}, "HXSIG {i} class {k}");')
            if args[i].kind == "buffer":
                body.append(f'_Static_assert(__builtin_classify_type(({name})[0]) != {k}, "HXSIG {i} pointee {k}");')
    return body


def _size_probe(names: list[str], args: list[Any], cls: dict[int, int], pointee: dict[int, int]) -> list[str]:
    """Static assertions that fail naming the size of each arithmetic parameter (or pointee)."""
    body = []
    for i, name in enumerate(names):
        target = f"({name})[0]" if args[i].kind == "buffer" and pointee.get(i) in (*_INTEGERS, 8) else name
        if args[i].kind == "scalar" and cls[i] not in (*_INTEGERS, 8):
            continue
        if args[i].kind == "buffer" and pointee.get(i) not in (*_INTEGERS, 8):
            continue
        for size in (1, 2, 4, 8, 16):
            body.append(f'_Static_assert(sizeof({target}) != {size}, "HXSIG {i} size {size}");')
    return body


def _param_problems(
    args: list[Any], decls: list[str], cls: dict[int, int], pointee: dict[int, int], size_of: dict[int, int]
) -> list[str]:
    """Each argument of the spec against what the probes found of its C parameter."""
    from ..devices.base import CTYPES as ctypes_of

    problems = []
    for i, (a, decl) in enumerate(zip(args, decls)):
        width = ctypes.sizeof(ctypes_of[a.dtype])
        floating = a.dtype.startswith("float")
        kind = _TYPE_CLASS.get(cls[i], "other")
        if a.kind == "buffer":
            if cls[i] not in (5, 14):
                problems.append(
                    f"argument {i + 1} {a.name!r} is a buffer (a pointer) but the C parameter is '{decl}' ({kind})"
                )
                continue
            pk = pointee.get(i)
            if pk in (0, 12, 13, 14, 10, None):
                continue  # void*, a struct or an array: the element layout is the kernel's, not checkable
            if pk == 5:
                problems.append(
                    f"argument {i + 1} {a.name!r} is a buffer of {a.dtype} but the C parameter '{decl}' points to pointers"
                )
            elif (pk == 8) != floating or size_of.get(i, width) != width:
                what = "floating" if pk == 8 else "integer"
                problems.append(
                    f"argument {i + 1} {a.name!r} is a buffer of {a.dtype} ({width}-byte elements) but the C "
                    f"parameter '{decl}' points to {size_of.get(i, '?')}-byte {what} elements"
                )
        else:
            if cls[i] not in (*_INTEGERS, 8):
                problems.append(
                    f"argument {i + 1} {a.name!r} is a scalar {a.dtype} passed by value but the C parameter is '{decl}' ({kind})"
                )
            elif (cls[i] == 8) != floating or size_of.get(i, width) != width:
                what = "floating" if cls[i] == 8 else "integer"
                problems.append(
                    f"argument {i + 1} {a.name!r} is a {a.dtype} ({width} bytes) but the C parameter '{decl}' is a "
                    f"{size_of.get(i, '?')}-byte {what}"
                )
    return problems


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in text:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p for p in out if p.strip()]


def check_host_signature(spec: KernelSpec, request: CompileRequest) -> None:
    """``ConfigError`` (one line) when ``spec.args`` does not match the host C entry's parameters:
    their number, pointer or value, integer or floating, width. Memoized per request content.
    Catalog kernels are trusted (their specs and sources are written together and tested)."""
    if id(spec) in _TRUSTED:
        return
    digest = hashlib.sha256(
        canonical_json(request.record()) + repr([(a.name, a.kind, a.dtype) for a in spec.args]).encode()
    ).hexdigest()
    with _SIG_LOCK:
        known = _SIG_MEMO.get(digest)
    if known is None:
        known = _host_signature_problems(spec, request)
        with _SIG_LOCK:
            _SIG_MEMO[digest] = known
    if known:
        raise ConfigError(
            f"kernel {spec.name!r}: its --args spec does not match the C function "
            f"{spec.entry_for('host')}() in {Path(spec.source_file).name or request.source.name}: {known}; "
            f"it was not called (fix the spec or the function)"
        )


#: the process's builder: what ``kernel_for`` asks, and what the harness hands a device that needs
#: its own kernels (``Device.hold_stream(kernels=BUILDER)``: the spin kernel)
BUILDER = KernelBuilder()
#: the catalog's own kernels: not probed. Named, not "whatever is registered when this module
#: loads": ``hipexplore.kernels`` is lazy, so a user kernel may be registered before this import
_TRUSTED = {id(spec) for spec in catalog.OWN}


def kernel_for(device: Any, name: "str | KernelSpec", *, inline_icache: bool = False, timed: bool = False) -> Any:
    """A catalog kernel (or a KernelSpec) for ``device``, compiled through ``device.cache``, loaded
    once per device and request content (``timed``: its in-kernel timed variant)."""
    return BUILDER.kernel(device, name, inline_icache=inline_icache, timed=timed)
