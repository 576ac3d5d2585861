"""AMD GPUs through hip-python (``hip.hip``): the HIP runtime's module API.

``hipModuleLoadData`` on hiprtc code objects, ``hipModuleGetFunction``, ``hipModuleLaunchKernel``
with a ``void*[]`` of argument addresses (``PackedArgs.address``; ``PackedArgs.packed()`` is the
byte image HIP's ``extra`` form takes), ``hipEventRecord``/``hipEventElapsedTime``,
``hipMemGetInfo``, and ``hipDeviceGetAttribute`` for L2 size, CU count, memory clock and bus width.

LLC on MI300-class parts (gfx940/941/942/950): HIP reports one XCD's L2 (4 MiB) as
``l2CacheSize`` and has no API for the 256 MiB memory-side Infinity Cache, so the LLC used for
rotating-buffer sizing and flushes is the reported L2 plus ``INFINITY_CACHE_BYTES`` (override with
``llc_bytes=`` or ``HIPEXPLORE_LLC_BYTES``).

Library: hip-python 7.2.2 loads ROCm 5.2's ``libamdhip64.so.5`` through ``hip.chip.DLL`` (the same
override ``hipexplore.compile.hiprtc`` uses for ``hip.chiprtc.DLL``), which is enough to count devices;
``HIPEXPLORE_HIP_DLL`` names another library. The device API needs ROCm >= 6: hip-python 6.x/7.x
binds ROCm 6 symbols and struct layouts (``hipGetDeviceProperties`` is ``hipGetDevicePropertiesR0600``,
which ROCm 5 lacks), so a GPU behind a ROCm 5 runtime is refused with ``DeviceUnavailable``.
None of this has run on an AMD GPU.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..compile.base import ObjectCode
from .. import settings
from ..errors import ConfigError, DeviceUnavailable
from .base import DeviceProperties, PackedArgs, choose_peak
from .gpu import GpuDeviceBase

#: gfx arch prefix -> memory-side cache (Infinity Cache / MALL) bytes that HIP does not report.
INFINITY_CACHE_BYTES: dict[str, int] = {
    "gfx940": 256 << 20,
    "gfx941": 256 << 20,
    "gfx942": 256 << 20,
    "gfx950": 256 << 20,
}


def llc_for_arch(arch: str, reported_l2: int) -> tuple[int, str]:
    """LLC bytes and where they came from, for a gfx arch name like 'gfx942:sramecc+:xnack-'."""
    base = arch.split(":", 1)[0]
    extra = INFINITY_CACHE_BYTES.get(base)
    if extra:
        return reported_l2 + extra, (
            f"hipDeviceAttributeL2CacheSize ({reported_l2} B, one XCD) + {extra >> 20} MiB "
            f"Infinity Cache (table, {base}: MI300-class)"
        )
    return reported_l2, "hipDeviceAttributeL2CacheSize"


def hip_dll() -> bytes:
    """The HIP runtime library to load: HIPEXPLORE_HIP_DLL, else ROCm >= 6's libamdhip64.so, else
    ROCm 5's libamdhip64.so.5 (what Debian ships)."""
    env = settings.HIP_DLL.get()
    if env:
        return env.encode()
    for name in ("libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"):
        try:
            ctypes.CDLL(name)
            return name.encode()
        except OSError:
            continue
    return b"libamdhip64.so.5"


#: hipRuntimeGetVersion() of ROCm 6.0: hip-python 6.x/7.x device calls match this ABI and later.
MIN_RUNTIME_VERSION = 60_000_000


#: whether this module has pointed hip-python at its runtime library (once per process)
_dll_chosen = False


def check_runtime_version(runtime: int, gpus: int) -> None:
    """Refuse a HIP runtime older than ROCm 6 (``hipRuntimeGetVersion()`` below ``MIN_RUNTIME_VERSION``).

    hip-python 6.x/7.x binds ROCm 6 symbols and struct layouts (hipGetDeviceProperties is
    hipGetDevicePropertiesR0600, absent from libamdhip64.so.5): refuse rather than misread.
    """
    if runtime < MIN_RUNTIME_VERSION:
        raise DeviceUnavailable(
            f"HIP: found {gpus} AMD GPU(s), but the HIP runtime is version {runtime} (ROCm {runtime // 10_000_000}."
            f"{runtime // 100_000 % 100}); the device API needs ROCm >= 6 with a matching hip-python "
            f"(ROCm 5's libamdhip64.so.5 serves hiprtc compiles only)"
        )


def hip_runtime() -> Any:
    """hip-python's HIP runtime module (6.x-7.x ``hip.hip`` or 10.x ``rocm.bindings.hip``, whichever
    is installed: compile/hip_bindings.py), pointed at ``hip_dll()`` once per process. Public: tests ask the
    runtime directly to check what a ``HipDevice`` reports."""
    global _dll_chosen
    from ..compile import hip_bindings
    from ..errors import CompilerUnavailable

    if not hip_bindings.layout():
        from ..extras import DeviceExtraMissing

        raise DeviceExtraMissing(
            "the HIP device",
            "hip",
            detail="looked for hip-python (hip.chip for 6.x-7.x, rocm.bindings for >= 10) and could not import it",
        ) from None
    try:
        if not _dll_chosen:
            hip_bindings.point("hip", hip_dll().decode())
            _dll_chosen = True
    except CompilerUnavailable:  # already loaded by someone else: keep theirs
        pass
    try:
        return hip_bindings.module("hip")
    except Exception as exc:
        raise DeviceUnavailable(f"HIP: hip-python could not load the HIP runtime {hip_dll()!r}: {exc}") from None


def device_count() -> int:
    """Number of HIP devices; raises ``DeviceUnavailable`` naming what was looked for."""
    hip = hip_runtime()
    try:
        err, n = hip.hipGetDeviceCount()
    except Exception as exc:
        raise DeviceUnavailable(
            f"HIP: hipGetDeviceCount could not run (runtime library {hip_dll()!r}): {exc}"
        ) from None
    if err != hip.hipError_t.hipSuccess:
        raise DeviceUnavailable(
            f"HIP: looked for an AMD GPU with hipGetDeviceCount (runtime {hip_dll().decode()}); it returned {err.name}"
        )
    return int(n)


class HipDevice(GpuDeviceBase):
    """One AMD GPU through the HIP module API: hiprtc code objects, one non-blocking stream.
    Refused (``DeviceUnavailable``) behind a ROCm 5 runtime, whose ABI hip-python 6.x/7.x does not bind."""

    kind = "hip"
    MEMORY_CALLS = {
        "malloc": "hipMalloc",
        "free": "hipFree",
        "to_device": "hipMemcpyHtoD",
        "to_host": "hipMemcpyDtoH",
        "memset": "hipMemsetD8Async",
    }

    def __init__(self, index: int = 0, *, llc_bytes: int | None = None, cache: Any = None) -> None:
        hip = self._hip = hip_runtime()
        n = device_count()
        self._start(
            "HIP",
            hip,
            hip.hipError_t.hipSuccess,
            n,
            index,
            "the runtime loaded but reports 0 AMD GPUs",
            llc_bytes,
            cache,
        )
        check_runtime_version(int(self._call(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion")), n)
        self._call(hip.hipSetDevice(index), "hipSetDevice")
        props = hip.hipDeviceProp_t()
        self._call(hip.hipGetDeviceProperties(props, index), "hipGetDeviceProperties")
        raw_name = props.name
        self._name = (raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)).split("\0", 1)[0].strip()
        arch = props.gcnArchName
        self._arch = (arch.decode() if isinstance(arch, bytes) else str(arch)).split("\0", 1)[0].strip()
        A = hip.hipDeviceAttribute_t
        self._compute_units = self._attr(A.hipDeviceAttributeMultiprocessorCount)
        l2 = self._attr(A.hipDeviceAttributeL2CacheSize)
        self._choose_llc(*llc_for_arch(self._arch, l2), self._llc_given)
        clock = self._attr(A.hipDeviceAttributeMemoryClockRate)
        bus = self._attr(A.hipDeviceAttributeMemoryBusWidth)
        self._wall_khz = self._attr(A.hipDeviceAttributeWallClockRate) or 100_000
        # not checked on hardware: MI300's reported HBM3 clock x bus x 2 may read half the datasheet rate
        self._peak = choose_peak(self._name, clock, bus, table_first=self._arch.startswith("gfx94"))
        self._driver_version = str(self._call(hip.hipDriverGetVersion(), "hipDriverGetVersion"))
        self._runtime_version = str(self._call(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion"))
        self.stream = self._call(hip.hipStreamCreateWithFlags(1), "hipStreamCreateWithFlags(hipStreamNonBlocking)")

    def _attr(self, attr: Any) -> int:
        return int(self._call(self._hip.hipDeviceGetAttribute(attr, self.index), f"hipDeviceGetAttribute({attr.name})"))

    def _spin_timeout_arg(self, timeout_s: float) -> int:
        # the spin kernel counts s_memrealtime ticks x 10 as "ns" (exact for a 100 MHz clock); with a
        # wall clock of W kHz that count grows W/100000 times as fast as real ns
        return int(timeout_s * 1e9 * (self._wall_khz / 100_000))

    @property
    def target(self) -> str:
        return self._arch.split(":", 1)[0]

    @property
    def compiler(self) -> str:
        return "hiprtc"

    @property
    def properties(self) -> DeviceProperties:
        return self._properties(f"HIP {self._runtime_version} (hip-python)", {"gcnArchName": self._arch})

    def memory_info(self) -> tuple[int, int]:
        free, total = self._call(self._hip.hipMemGetInfo(), "hipMemGetInfo")
        return int(free), int(total)

    # memory: the calls are named in MEMORY_CALLS; GpuDeviceBase does the rest
    def _host_alloc_mapped(self, nbytes: int) -> tuple[int, int]:
        hip = self._hip
        host = self._call(
            hip.hipHostMalloc(nbytes, hip.hipHostMallocMapped | hip.hipHostMallocPortable | hip.hipHostMallocCoherent),
            "hipHostMalloc(mapped)",
        )
        host_addr = int(host)
        ctypes.memset(host_addr, 0, nbytes)
        dev = self._call(hip.hipHostGetDevicePointer(host, 0), "hipHostGetDevicePointer")
        self._mapped = host
        return host_addr, int(dev)

    def load(self, code: ObjectCode) -> Any:
        if code.compiler != "hiprtc":
            raise ConfigError(f"the HIP device loads hiprtc code objects, not {code.compiler!r} output")
        return self._call(self._hip.hipModuleLoadData(code.binary), f"hipModuleLoadData({code.target})")

    def kernel(self, module: Any, name: str) -> Any:
        return self._call(self._hip.hipModuleGetFunction(module, name.encode()), f"hipModuleGetFunction({name!r})")

    def set_max_dynamic_shared(self, kernel: Any, nbytes: int) -> None:
        """Nothing to allow: HIP has no opt-in cap below the LDS size (CUDA's 48 KiB default has no
        AMD counterpart), so a launch may ask for the whole LDS and one asking more fails at launch."""

    def _launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int,
        stream: Any,
    ) -> None:
        res = self._hip.hipModuleLaunchKernel(
            kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream, args.address, None
        )
        self._call(res, f"hipModuleLaunchKernel(grid={grid}, block={block})")

    def event(self) -> Any:
        return self._call(self._hip.hipEventCreate(), "hipEventCreate")

    def record(self, event: Any, stream: Any = None) -> None:
        self._call(self._hip.hipEventRecord(event, self.stream if stream is None else stream), "hipEventRecord")

    def elapsed_s(self, start: Any, end: Any) -> float:
        return float(self._call(self._hip.hipEventElapsedTime(start, end), "hipEventElapsedTime")) * 1e-3

    def synchronize(self) -> None:
        self._call(self._hip.hipStreamSynchronize(self.stream), "hipStreamSynchronize")

    def __repr__(self) -> str:
        return f"HipDevice({self.index}, {self.name!r}, {self._arch})"
