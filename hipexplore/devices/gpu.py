"""What the CUDA and HIP backends share: the blocking-kernel stream hold, LLC overrides, and
kernels compiled through the cache for this device.

The hold (nvbench's method): a one-thread kernel spins on an int in host-mapped pinned memory.
Everything enqueued behind it (events, flushes, the kernels under test) waits in the stream while
the host enqueues a whole chunk; ``release()`` writes the flag and the GPU then runs the chunk back
to back, so host submission latency never lands inside an event pair. The kernel gives up after a
timeout and sets a status word, so a hold that broke is detected, not assumed.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ..errors import ConfigError, DeviceError, DeviceUnavailable
from .base import (
    DeviceBase,
    DeviceBuffer,
    DeviceProperties,
    KernelBuilder,
    PackedArgs,
    is_stream_work,
    pack_args,
    unbind,
)


class SpinHold:
    def __init__(self, device: "GpuDeviceBase", flag_host: int) -> None:
        self._device = device
        self._flag = flag_host
        self._released = False

    def release(self) -> None:
        if not self._released:
            ctypes.c_int32.from_address(self._flag).value = 1
            self._released = True

    def timed_out(self) -> bool:
        return ctypes.c_int32.from_address(self._flag + 4).value != 0


class GpuDeviceBase(DeviceBase):
    """Common code: memory bookkeeping, copy checks, close(), the stream hold. Subclasses name
    their runtime (``_rt``, ``MEMORY_CALLS``) and provide the rest of the ``Device`` methods
    (load, kernel, launch, events, synchronize)."""

    kind = "gpu"
    _ok: Any = None  #: the runtime's success status
    _closed = False

    @staticmethod
    def _check_index(runtime: str, count: int, index: int, none_found: str) -> None:
        """DeviceUnavailable unless ``0 <= index < count``; the message names what was found."""
        if count == 0:
            raise DeviceUnavailable(f"{runtime}: {none_found}")
        if not 0 <= index < count:
            raise DeviceUnavailable(
                f"{runtime}: device index {index} requested but only {count} device(s) present (0..{count - 1})"
            )

    def _start(
        self, runtime: str, rt: Any, ok: Any, count: int, index: int, none_found: str, llc_bytes: int | None, cache: Any
    ) -> None:
        """What every GPU constructor does first: check the index, keep the runtime module and its
        success status, and set up the shared state."""
        self._check_index(runtime, count, index, none_found)
        self._rt, self._ok, self.index = rt, ok, index
        self._init_common(llc_bytes, cache)

    def _init_common(self, llc_bytes: int | None, cache: Any) -> None:
        self.cache = cache
        self._allocs: dict[int, DeviceBuffer] = {}
        self._closed = False
        self._llc_given = llc_bytes  #: the llc_bytes argument, applied to what the runtime reports (_choose_llc)
        self._spin: tuple[Any, Any] | None = None
        self._hold_mem: tuple[int, int] | None = None  # (host ptr, device ptr) of [flag, status]

    # subclass hooks: the runtime calls ----------------------------------------------------
    def _host_alloc_mapped(self, nbytes: int) -> tuple[int, int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _current(self) -> None:
        """Make this device current for the calls that follow (CUDA: its context; HIP: nothing)."""

    #: The runtime module (cuda.bindings.driver, hip.hip) and the names of its memory calls, which
    #: take the same arguments in both: malloc(n), free(ptr), to_device(dst, src, n),
    #: to_host(dst, src, n), memset(ptr, byte, n, stream).
    _rt: Any = None
    MEMORY_CALLS: dict[str, str] = {}

    def _mem(self, op: str, *args: Any, what: str = "") -> Any:
        name = self.MEMORY_CALLS[op]
        return self._call(getattr(self._rt, name)(*args), what or name)

    def _release(self) -> None:
        """Give back what the device holds besides memory (CUDA: the primary context)."""

    def synchronize(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _call(self, result: Any, what: str) -> Any:
        return check_call(result, what, self._ok)

    # memory, with the bookkeeping both runtimes share ----------------------------------------
    def alloc(self, nbytes: int) -> DeviceBuffer:
        if not isinstance(nbytes, (int, np.integer)) or nbytes <= 0:
            raise ConfigError(f"allocation size must be a positive number of bytes, got {nbytes!r}")
        self._current()
        ptr = self._mem("malloc", int(nbytes), what=f"{self.MEMORY_CALLS['malloc']}({nbytes})")
        buf = DeviceBuffer(ptr=int(ptr), nbytes=int(nbytes), device_kind=self.kind, owner=ptr)
        self._allocs[buf.ptr] = buf
        return buf

    def free(self, buf: DeviceBuffer) -> None:
        if buf.freed:
            return
        self._current()
        self._mem("free", buf.owner)
        buf.freed = True
        self._allocs.pop(buf.ptr, None)

    def copy_to_device(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        src = np.ascontiguousarray(host)
        if src.nbytes > buf.nbytes:
            raise ConfigError(f"copy of {src.nbytes} B does not fit the {buf.nbytes} B buffer")
        self._current()
        self._mem("to_device", buf.owner, src.ctypes.data, src.nbytes)

    def copy_to_host(self, buf: DeviceBuffer, host: np.ndarray) -> None:
        if not host.flags.c_contiguous or host.nbytes > buf.nbytes:
            raise ConfigError(
                f"copy target must be a C-contiguous array of at most {buf.nbytes} B, got {host.nbytes} B"
            )
        self._current()
        self.synchronize()
        self._mem("to_host", host.ctypes.data, buf.owner, host.nbytes)

    def memset(self, buf: DeviceBuffer, value: int = 0) -> None:
        self._mem("memset", buf.owner, value, buf.nbytes, self.stream)

    def close(self) -> None:
        """Synchronize, free what is still allocated, release the device; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self.synchronize()
            for buf in list(self._allocs.values()):
                self.free(buf)
        finally:
            self._release()

    def _spin_timeout_arg(self, timeout_s: float) -> int:
        return int(timeout_s * 1e9)

    # identity, from what the subclass read at start-up (and _compute_units, _llc: DeviceBase's) --
    _name: str
    _peak: tuple[float, str]  #: (GB/s, where the number came from)
    _driver_version: str

    @property
    def target(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def compiler(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int = 0,
        stream: Any = None,
    ) -> None:
        """Launch on this device's stream (or ``stream``): a Python callable that enqueues its own
        work (``callable_kernel``) runs on it; a kernel bound to its dynamic shared memory is
        unwrapped; the rest goes to the runtime's launch call (``_launch``)."""
        stream = self.stream if stream is None else stream
        if is_stream_work(kernel):
            kernel.run(args, stream)
            return
        kernel, shared_bytes = unbind(kernel, shared_bytes)
        self._launch(kernel, grid, block, args, shared_bytes, stream)

    def _launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int,
        stream: Any,
    ) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def name(self) -> str:
        return self._name

    @property
    def peak_bandwidth_gbs(self) -> float:
        return self._peak[0]

    def _properties(self, runtime: str, extra: dict[str, str] | None = None) -> DeviceProperties:
        free, total = self.memory_info()
        return DeviceProperties(
            kind=self.kind,
            index=self.index,
            name=self.name,
            target=self.target,
            compiler=self.compiler,
            llc_bytes=self.llc_bytes,
            llc_source=self.llc_source,
            free_bytes=free,
            total_bytes=total,
            peak_bandwidth_gbs=self.peak_bandwidth_gbs,
            peak_bandwidth_source=self._peak[1],
            compute_units=self.compute_units,
            driver=self._driver_version,
            runtime=runtime,
            **({"extra": extra} if extra else {}),
        )

    # shared ------------------------------------------------------------------------------
    def hold_stream(self, timeout_s: float = 2.0, *, kernels: KernelBuilder | None = None) -> SpinHold:
        """The spin kernel (built with ``kernels``, the caller's explicit ``KernelBuilder``) launched
        on the stream, spinning on a host-mapped flag until the hold is released."""
        if kernels is None:
            raise DeviceError(
                f"{self.kind} device: a stream hold launches the spin kernel, built with kernels= "
                f"(a KernelBuilder: hipexplore.kernels.build.BUILDER); none was given"
            )
        if self._hold_mem is None:
            self._hold_mem = self._host_alloc_mapped(8)
        host, dev = self._hold_mem
        ctypes.c_int32.from_address(host).value = 0
        ctypes.c_int32.from_address(host + 4).value = 0
        spin = kernels.kernel(self, "spin")
        self._spin_args = pack_args(
            kernels.arguments("spin"), {"flag": dev, "status": dev + 4, "timeout_ns": self._spin_timeout_arg(timeout_s)}
        )
        self.launch(spin, (1, 1, 1), (32, 1, 1), self._spin_args)
        return SpinHold(self, host)

    @property
    def instruction_cache_flush(self) -> bool:  # type: ignore[override]
        """AMD GPUs have ``s_icache_inv``; NVIDIA's have no instruction the flush kernels could run."""
        return self.kind == "hip"


def check_call(result: Any, what: str, success: Any) -> Any:
    """Unpack a ``(err, *values)`` tuple from cuda-bindings/hip-python; raise ``DeviceError`` on failure."""
    if isinstance(result, tuple):
        err, rest = result[0], result[1:]
    else:
        err, rest = result, ()
    if err != success:
        name = getattr(err, "name", str(err))
        raise DeviceError(f"{what} failed: {name} ({int(err) if hasattr(err, '__int__') else err})")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


__all__ = ["GpuDeviceBase", "PackedArgs", "SpinHold", "check_call"]
