"""NVIDIA GPUs through cuda-python's driver API (``cuda.bindings.driver``).

Uses the device's primary context (the one PyTorch and Triton use too, so a same-process
comparison with ``triton.testing.do_bench`` shares memory and clocks), one non-blocking stream,
``cuModuleLoadData`` on NVRTC cubins, ``cuLaunchKernel`` with a ``void*[]`` of argument addresses,
and ``cuEventElapsedTime`` (0.5 us resolution per the CUDA docs).

LLC: ``CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE``. Peak bandwidth: memory clock x bus width x 2, else the
datasheet table in ``base.py``. Persisting L2: the set-aside and the timed stream's access-policy
window cleared before every timed chunk (``reset_l2_persistence``), the set-aside in the provenance.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..compile.base import ObjectCode
from ..errors import ConfigError, DeviceError, DeviceUnavailable
from .base import DeviceProperties, PackedArgs, choose_peak
from .gpu import GpuDeviceBase


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        from ..extras import DeviceExtraMissing

        raise DeviceExtraMissing(
            "the CUDA device",
            "cuda",
            detail=f"looked for the cuda-python package (cuda.bindings.driver) and could not import it: {exc}",
        ) from None
    return driver


def device_count() -> int:
    """Number of CUDA devices; raises ``DeviceUnavailable`` saying what was looked for."""
    drv = _driver()
    try:
        (err,) = drv.cuInit(0)
    except Exception as exc:  # the driver library itself is missing (cuda.pathfinder raises)
        raise DeviceUnavailable(
            f"CUDA: looked for the NVIDIA driver library libcuda.so.1 and could not load it ({exc})"
        ) from None
    if err != drv.CUresult.CUDA_SUCCESS:
        raise DeviceUnavailable(f"CUDA: cuInit(0) returned {err.name}: no usable NVIDIA driver/GPU")
    err, n = drv.cuDeviceGetCount()
    if err != drv.CUresult.CUDA_SUCCESS:
        raise DeviceUnavailable(f"CUDA: cuDeviceGetCount returned {err.name}")
    return int(n)


class CudaDevice(GpuDeviceBase):
    """One NVIDIA GPU: its primary context, one non-blocking stream, NVRTC cubins."""

    kind = "cuda"
    MEMORY_CALLS = {
        "malloc": "cuMemAlloc",
        "free": "cuMemFree",
        "to_device": "cuMemcpyHtoD",
        "to_host": "cuMemcpyDtoH",
        "memset": "cuMemsetD8Async",
    }

    def __init__(self, index: int = 0, *, llc_bytes: int | None = None, cache: Any = None) -> None:
        drv = self._drv = _driver()
        self._start(
            "CUDA",
            drv,
            drv.CUresult.CUDA_SUCCESS,
            device_count(),
            index,
            "the driver loaded but reports 0 devices",
            llc_bytes,
            cache,
        )
        self._dev = self._call(drv.cuDeviceGet(index), "cuDeviceGet")
        self._ctx = self._call(drv.cuDevicePrimaryCtxRetain(self._dev), "cuDevicePrimaryCtxRetain")
        self._call(drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
        self.stream = self._call(drv.cuStreamCreate(int(drv.CUstream_flags.CU_STREAM_NON_BLOCKING)), "cuStreamCreate")
        name = self._call(drv.cuDeviceGetName(256, self._dev), "cuDeviceGetName")
        self._name = name.split(b"\0", 1)[0].decode(errors="replace").strip()
        A = drv.CUdevice_attribute
        self._cc = (
            self._attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            self._attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        )
        self._compute_units = self._attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        l2 = self._attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        self._choose_llc(l2, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE", self._llc_given)
        try:
            clock = self._attr(A.CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
            bus = self._attr(A.CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
        except DeviceError:
            clock = bus = 0
        self._peak = choose_peak(self._name, clock, bus)
        self._driver_version = str(self._call(drv.cuDriverGetVersion(), "cuDriverGetVersion"))
        self._persist_off = ""  #: why the persisting-L2 control is unavailable ("" while it works)

    # --- helpers --------------------------------------------------------------------------
    def _attr(self, attr: Any) -> int:
        return int(self._call(self._drv.cuDeviceGetAttribute(attr, self._dev), f"cuDeviceGetAttribute({attr.name})"))

    def _current(self) -> None:
        self._call(self._drv.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")

    # --- identity -------------------------------------------------------------------------
    @property
    def target(self) -> str:
        return f"sm_{self._cc[0]}{self._cc[1]}"

    @property
    def compiler(self) -> str:
        return "nvrtc"

    @property
    def pci_bus_id(self) -> str:
        """'0000:3B:00.0': how NVML finds this device (CUDA and NVML indexes can differ)."""
        raw = self._call(self._drv.cuDeviceGetPCIBusId(32, self._dev), "cuDeviceGetPCIBusId")
        return (raw if isinstance(raw, bytes) else bytes(raw)).split(b"\0", 1)[0].decode()

    @property
    def properties(self) -> DeviceProperties:
        return self._properties("cuda-python driver API", self._persisting_facts())

    # --- persisting L2 ----------------------------------------------------------------------
    def _persisting_facts(self) -> dict[str, str]:
        """The persisting-L2 set-aside now (``CU_LIMIT_PERSISTING_L2_CACHE_SIZE``) and the most the
        device allows, for the provenance (``device.persisting_l2_*``)."""
        drv = self._drv
        out = {}
        try:
            self._current()
            out["persisting_l2_limit_bytes"] = str(
                int(
                    self._call(
                        drv.cuCtxGetLimit(drv.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE),
                        "cuCtxGetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE)",
                    )
                )
            )
            out["persisting_l2_max_bytes"] = str(
                self._attr(drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
            )
        except DeviceError as exc:
            out["persisting_l2_limit_bytes"] = f"unavailable: {exc}"
        return out

    def reset_l2_persistence(self, clear: bool = True) -> str:
        """``DeviceBase.reset_l2_persistence`` with the driver: the set-aside read and set to 0
        (``cuCtxSetLimit``), the timed stream's access-policy window read and cleared
        (``cuStreamSetAttribute``), every persisting line made normal (``cuCtxResetPersistingL2Cache``;
        it takes effect on return, so it runs while the stream is idle: between chunks). Where the
        driver refuses the control (MIG, MPS) it is noted once and nothing is done after. ``clear=False``
        (``HIPEXPLORE_L2_RESET=0``) only reads and says."""
        if self._persist_off:
            return ""
        drv = self._drv
        found = []
        try:
            self._current()
            what = drv.CUlimit.CU_LIMIT_PERSISTING_L2_CACHE_SIZE
            limit = int(self._call(drv.cuCtxGetLimit(what), "cuCtxGetLimit(persisting L2)"))
            if limit:
                found.append(f"a persisting-L2 set-aside of {limit >> 10} KiB")
                if clear:
                    self._call(drv.cuCtxSetLimit(what, 0), "cuCtxSetLimit(persisting L2, 0)")
            attr = drv.CUstreamAttrID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
            value = self._call(
                drv.cuStreamGetAttribute(self.stream, attr), "cuStreamGetAttribute(access policy window)"
            )
            window = value.accessPolicyWindow
            persisting = drv.CUaccessProperty.CU_ACCESS_PROPERTY_PERSISTING
            if int(window.num_bytes) and persisting in (window.hitProp, window.missProp):
                found.append(
                    f"a persisting access-policy window of {int(window.num_bytes) >> 10} KiB on the timed stream"
                )
                if clear:
                    cleared = drv.CUstreamAttrValue()  # all zero: no window, normal access properties
                    self._call(
                        drv.cuStreamSetAttribute(self.stream, attr, cleared),
                        "cuStreamSetAttribute(access policy window)",
                    )
            if clear:
                self._call(drv.cuCtxResetPersistingL2Cache(), "cuCtxResetPersistingL2Cache")
        except DeviceError as exc:
            self._persist_off = str(exc)
        return "; ".join(found)

    def memory_info(self) -> tuple[int, int]:
        self._current()
        free, total = self._call(self._drv.cuMemGetInfo(), "cuMemGetInfo")
        return int(free), int(total)

    # --- memory (the calls are named in MEMORY_CALLS; GpuDeviceBase does the rest) -----------
    def _release(self) -> None:
        self._drv.cuDevicePrimaryCtxRelease(self._dev)

    def _host_alloc_mapped(self, nbytes: int) -> tuple[int, int]:
        drv = self._drv
        flags = int(drv.CU_MEMHOSTALLOC_DEVICEMAP) | int(drv.CU_MEMHOSTALLOC_PORTABLE)
        host = int(self._call(drv.cuMemHostAlloc(nbytes, flags), "cuMemHostAlloc"))
        ctypes.memset(host, 0, nbytes)
        dev = int(self._call(drv.cuMemHostGetDevicePointer(host, 0), "cuMemHostGetDevicePointer"))
        self._mapped = host
        return host, dev

    # --- code -----------------------------------------------------------------------------
    def load(self, code: ObjectCode) -> Any:
        if code.compiler not in ("nvrtc", "triton") or (
            code.compiler == "triton" and not code.target.startswith("sm_")
        ):
            raise ConfigError(
                f"the CUDA device loads cubins (NVRTC, or Triton for an sm_ target), not {code.compiler!r} "
                f"{code.mode} output for {code.target!r}"
            )
        self._current()
        return self._call(self._drv.cuModuleLoadData(code.binary), f"cuModuleLoadData({code.target})")

    def kernel(self, module: Any, name: str) -> Any:
        return self._call(self._drv.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name!r})")

    def set_max_dynamic_shared(self, kernel: Any, nbytes: int) -> None:
        """Allow a launch with more than 48 KiB of dynamic shared memory (Triton's larger tiles)."""
        attr = self._drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        self._call(self._drv.cuFuncSetAttribute(kernel, attr, int(nbytes)), f"cuFuncSetAttribute(shared={nbytes})")

    def _launch(
        self,
        kernel: Any,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: PackedArgs,
        shared_bytes: int,
        stream: Any,
    ) -> None:
        res = self._drv.cuLaunchKernel(
            kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes, stream, args.address, 0
        )
        if res[0] != self._ok:
            self._call(res, f"cuLaunchKernel(grid={grid}, block={block})")

    # --- timing ---------------------------------------------------------------------------
    def event(self) -> Any:
        return self._call(self._drv.cuEventCreate(int(self._drv.CUevent_flags.CU_EVENT_DEFAULT)), "cuEventCreate")

    def record(self, event: Any, stream: Any = None) -> None:
        res = self._drv.cuEventRecord(event, self.stream if stream is None else stream)
        if res[0] != self._ok:
            self._call(res, "cuEventRecord")

    def elapsed_s(self, start: Any, end: Any) -> float:
        ms = self._call(self._drv.cuEventElapsedTime(start, end), "cuEventElapsedTime")
        return float(ms) * 1e-3

    def synchronize(self) -> None:
        self._call(self._drv.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def __repr__(self) -> str:
        return f"CudaDevice({self.index}, {self.name!r}, {self.target})"
