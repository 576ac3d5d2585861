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
import os
from typing import Any

from .. import settings
from ..errors import DeviceError, DeviceUnavailable
from ..kernels import catalog
from .base import DeviceProperties, PackedArgs, load_catalog_kernel, pack_args


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


class GpuDeviceBase:
    """Common code; subclasses provide the runtime calls."""

    kind = "gpu"
    cache: Any = None

    @staticmethod
    def _check_index(runtime: str, count: int, index: int, none_found: str) -> None:
        """DeviceUnavailable unless ``0 <= index < count``; the message names what was found."""
        if count == 0:
            raise DeviceUnavailable(f"{runtime}: {none_found}")
        if not 0 <= index < count:
            raise DeviceUnavailable(
                f"{runtime}: device index {index} requested but only {count} device(s) present (0..{count - 1})")

    def _init_common(self, llc_bytes: int | None) -> None:
        self._llc_override = llc_bytes
        self._spin: tuple[Any, Any] | None = None
        self._hold_mem: tuple[int, int] | None = None  # (host ptr, device ptr) of [flag, status]

    def _apply_llc_override(self, llc: int, source: str) -> tuple[int, str]:
        env = settings.LLC_BYTES.get()
        if self._llc_override is not None:
            return int(self._llc_override), f"override (llc_bytes argument; runtime reported {llc} B: {source})"
        if env is not None:
            return env, f"override (HIPEXPLORE_LLC_BYTES; runtime reported {llc} B: {source})"
        return llc, source

    # subclass hooks ------------------------------------------------------------------------
    def _host_alloc_mapped(self, nbytes: int) -> tuple[int, int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _spin_timeout_arg(self, timeout_s: float) -> int:
        return int(timeout_s * 1e9)

    # identity, from what the subclass read at start-up ----------------------------------------
    # Subclasses set _name, _compute_units, _llc (bytes, source), _peak (GB/s, source), _driver_version.
    @property
    def name(self) -> str:
        return self._name  # type: ignore[attr-defined]

    @property
    def llc_bytes(self) -> int:
        return self._llc[0]  # type: ignore[attr-defined]

    @property
    def llc_source(self) -> str:
        return self._llc[1]  # type: ignore[attr-defined]

    @property
    def compute_units(self) -> int:
        return self._compute_units  # type: ignore[attr-defined]

    @property
    def peak_bandwidth_gbs(self) -> float:
        return self._peak[0]  # type: ignore[attr-defined]

    def _properties(self, runtime: str, extra: dict[str, str] | None = None) -> DeviceProperties:
        free, total = self.memory_info()  # type: ignore[attr-defined]
        return DeviceProperties(
            kind=self.kind, index=self.index, name=self.name, target=self.target,  # type: ignore[attr-defined]
            compiler=self.compiler, llc_bytes=self.llc_bytes, llc_source=self.llc_source,  # type: ignore[attr-defined]
            free_bytes=free, total_bytes=total, peak_bandwidth_gbs=self.peak_bandwidth_gbs,
            peak_bandwidth_source=self._peak[1], compute_units=self.compute_units,  # type: ignore[attr-defined]
            driver=self._driver_version, runtime=runtime, **({"extra": extra} if extra else {}),  # type: ignore[attr-defined]
        )

    # shared ------------------------------------------------------------------------------
    def compiled_kernel(self, name: str, *, inline_icache: bool = False) -> Any:
        """Compile (through the cache), load and look up a catalog kernel; memoized per device."""
        return load_catalog_kernel(self, name, inline_icache=inline_icache)

    def hold_stream(self, timeout_s: float = 2.0) -> SpinHold:
        if self._hold_mem is None:
            self._hold_mem = self._host_alloc_mapped(8)
        host, dev = self._hold_mem
        ctypes.c_int32.from_address(host).value = 0
        ctypes.c_int32.from_address(host + 4).value = 0
        spin = self.compiled_kernel("spin")
        spec = catalog.get("spin")
        self._spin_args = pack_args(spec.args, {"flag": dev, "status": dev + 4, "timeout_ns": self._spin_timeout_arg(timeout_s)})
        self.launch(spin, (1, 1, 1), (32, 1, 1), self._spin_args)  # type: ignore[attr-defined]
        return SpinHold(self, host)

    def supports_flush(self, mode: str) -> bool:
        if mode in ("none", "l2-write", "l2-read"):
            return True
        return self.kind == "hip" and mode in ("icache", "inline-icache")


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
