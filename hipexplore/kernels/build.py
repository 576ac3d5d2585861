"""Build catalog kernels: spec -> ``CompileRequest`` -> compile cache -> loaded function.

Why here and not in ``devices/``: devices only load code objects, allocate and launch; knowing the
catalog and the cache is this layer's job. ``KernelBuilder`` memoizes the loaded function per
device (a weak map, so a closed and dropped device takes its modules with it) and is installed as
the builder behind ``Device.compiled_kernel`` (see ``devices.base.install_kernel_builder``).

Every kernel the harness runs (the one under test, the flush kernels, the blocking kernel) is a
``CompileRequest`` answered by ``hipexplore.compile.compile(request, cache)``, so benchmark runs
exercise and are recorded by the same cache as everything else.

If the cache module cannot be imported (e.g. a stripped-down environment without its
dependencies), a direct in-process compile through the same compiler libraries is used and
``last_path()`` reports it, so a result never hides how its kernels were built.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any, Sequence

from ..compile.base import ObjectCode
from ..compile.request import CompileRequest, Source
from ..devices.base import install_kernel_builder
from ..errors import CompileError, CompilerUnavailable, ConfigError
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


def request_for(spec: KernelSpec, compiler: str, target: str, *, inline_icache: bool = False,
                timed: bool = False) -> CompileRequest:
    """The compile request for ``spec`` on one compiler/target (inline-icache transforms the source;
    ``timed`` builds the in-kernel timed variant, for kernels whose spec has ``timer=True``)."""
    text = spec.source_for(compiler)
    entry = spec.entry_for(compiler)
    label = spec.name
    ext = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c"}[compiler]
    if inline_icache:
        if compiler != "hiprtc":
            raise ConfigError(f"inline-icache inserts AMD instructions and needs the hiprtc compiler, not {compiler!r}")
        text = insert_icache_flush(text, entry, filename=f"{spec.name}{ext}")
        label += "+inline-icache"
    options = tuple(spec.options)
    if timed:
        if not spec.timer:
            raise ConfigError(f"kernel {spec.name!r} has no in-kernel timer (only kernels whose source writes "
                              f"its timestamps under {TIMED_OPTION}: {', '.join(n for n in catalog.names() if catalog.get(n).timer)})")
        options += (TIMED_OPTION,)
        label += "+timer"
    return CompileRequest(
        source=Source(f"{spec.name}{ext}", text),
        compiler=compiler,
        target=target,
        kernels=(entry,),
        options=options,
        label=label,
    )


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


def compile_kernel(spec: KernelSpec, compiler: str, target: str, *, cache: Any = None, inline_icache: bool = False,
                   timed: bool = False) -> ObjectCode:
    return compile_request(request_for(spec, compiler, target, inline_icache=inline_icache, timed=timed), cache)


def _as_object_code(result: Any) -> ObjectCode:
    if isinstance(result, ObjectCode):
        return result
    for attr in ("code", "object_code", "obj", "value"):
        val = getattr(result, attr, None)
        if isinstance(val, ObjectCode):
            return val
    raise CompileError(f"the compile cache returned {type(result).__name__}, which holds no ObjectCode")


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
        raise CompilerUnavailable(f"compiler {request.compiler!r}: neither the compile cache nor the compiler module could be imported ({exc})") from None
    return cls().compile(request)


# --- the per-device builder behind Device.compiled_kernel ---------------------------------------

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

    def loaded(self, device: Any, name: str, *, inline_icache: bool = False, timed: bool = False) -> LoadedKernel:
        key = (name, inline_icache, timed)
        with self._lock:
            found = self._memo.get(device, {}).get(key)
        if found is not None:
            return found
        spec = catalog.get(name)
        code = compile_kernel(spec, device.compiler, device.target, cache=device.cache, inline_icache=inline_icache, timed=timed)
        module = device.load(code)
        loaded = LoadedKernel(module, device.kernel(module, code.symbol(spec.entry_for(device.compiler))), code)
        with self._lock:
            return self._memo.setdefault(device, {}).setdefault(key, loaded)

    def kernel(self, device: Any, name: str, *, inline_icache: bool = False, timed: bool = False) -> Any:
        return self.loaded(device, name, inline_icache=inline_icache, timed=timed).function

    def arguments(self, name: str) -> Sequence[Arg]:
        return catalog.get(name).args


#: the builder every device's ``compiled_kernel`` asks
BUILDER = KernelBuilder()
install_kernel_builder(BUILDER)


def kernel_for(device: Any, name: str, *, inline_icache: bool = False, timed: bool = False) -> Any:
    """A catalog kernel for ``device``, compiled through ``device.cache``, loaded once per device
    (``timed``: its in-kernel timed variant)."""
    return BUILDER.kernel(device, name, inline_icache=inline_icache, timed=timed)
