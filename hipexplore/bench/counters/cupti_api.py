"""CUPTI's range profiler through ``ctypes``: the counting unit's counters read in its own process.

Why ``ctypes`` and not ``cupti-python``: NVIDIA's Python CUPTI (13.0.1 on PyPI) binds the activity
and callback APIs, and from 13.3 PM sampling and the profiler host, but not the range profiler,
which is what counts a chosen launch's DRAM bytes (nvbench's ``cupti_profiler.cu`` uses the same C
calls for its CUPTI measurements). The structures are CUPTI 13.0's (``cupti_range_profiler.h``,
``cupti_profiler_host.h``, ``cupti_profiler_target.h``, ``cupti_target.h``); each carries its size,
so a newer library reads them as the older layout it still accepts
(``tests/bench/counters/test_cupti_api.py`` compiles them against the installed headers).

The sequence (``RangeSession``): ``cuptiProfilerInitialize``; the chip's name; a profiler-host object
for it and a configuration image of the metrics (refused when they need more than one hardware
pass: a second pass would replay launches whose cache state the first pass changed); the range
profiler enabled on the current context with a counter-data image; per configuration ``begin``
(user ranges, user replay: nothing replayed), a range pushed and popped around each counted launch
(``push``/``pop``), ``end`` (stop, decode, one value per metric and range). Every call's status is
checked; a failure is a ``CounterError`` naming the call, CUPTI's words and the library.
"""

from __future__ import annotations

import ctypes as C
import glob
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .backends import CounterError

#: where the CUPTI library is looked for after HIPEXPLORE_CUPTI_LIBRARY: the CUDA toolkit's (its
#: version matches the driver it was installed with), then the ``nvidia-cuda-cupti`` wheel's
CUPTI_PLACES = (
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so*",
    "/usr/local/cuda/targets/*/lib/libcupti.so*",
    "/usr/local/cuda/lib64/libcupti.so*",
    "/usr/local/cuda-*/extras/CUPTI/lib64/libcupti.so*",
    "/usr/local/cuda-*/targets/*/lib/libcupti.so*",
    "/usr/local/cuda-*/lib/libcupti.so*",
)
# CUpti_ProfilerRange, CUpti_ProfilerReplayMode, CUpti_ProfilerType
AUTO_RANGE, USER_RANGE, KERNEL_REPLAY, USER_REPLAY, RANGE_PROFILER = 1, 2, 2, 3, 0
#: how ranges are made: ``user`` (a range pushed and popped around each counted launch, user replay)
#: or ``auto`` (CUPTI makes one per kernel launch, named by the kernel; kernel replay, one pass)
RANGE_MODES = {"user": (USER_RANGE, USER_REPLAY), "auto": (AUTO_RANGE, KERNEL_REPLAY)}
ERROR_INSUFFICIENT_PRIVILEGES = 35


def _params(name: str, fields: list[tuple[str, Any]]) -> type:
    """A CUPTI parameter structure: ``structSize`` and ``pPriv`` first, then ``fields``; ``SIZE``
    is the header's ``CUPTI_PROFILER_STRUCT_SIZE`` (the end of the last field)."""
    cls = type(name, (C.Structure,), {"_fields_": [("structSize", C.c_size_t), ("pPriv", C.c_void_p), *fields]})
    last = getattr(cls, cls._fields_[-1][0])
    cls.SIZE = last.offset + last.size
    return cls


_obj, _bytes, _names = C.c_void_p, C.POINTER(C.c_uint8), C.POINTER(C.c_char_p)
#: every structure used, by its C name (the layout test reads this table)
STRUCTS: dict[str, type] = {
    s.__name__: s
    for s in (
        _params("CUpti_Profiler_Initialize_Params", []),
        _params("CUpti_Profiler_DeInitialize_Params", []),
        _params("CUpti_Device_GetChipName_Params", [("deviceIndex", C.c_size_t), ("pChipName", C.c_char_p)]),
        _params(
            "CUpti_Profiler_Host_Initialize_Params",
            [
                ("profilerType", C.c_int),
                ("pChipName", C.c_char_p),
                ("pCounterAvailabilityImage", _bytes),
                ("pHostObject", _obj),
            ],
        ),
        _params("CUpti_Profiler_Host_Deinitialize_Params", [("pHostObject", _obj)]),
        _params(
            "CUpti_Profiler_Host_ConfigAddMetrics_Params",
            [("pHostObject", _obj), ("ppMetricNames", _names), ("numMetrics", C.c_size_t)],
        ),
        _params(
            "CUpti_Profiler_Host_GetConfigImageSize_Params", [("pHostObject", _obj), ("configImageSize", C.c_size_t)]
        ),
        _params(
            "CUpti_Profiler_Host_GetConfigImage_Params",
            [("pHostObject", _obj), ("configImageSize", C.c_size_t), ("pConfigImage", _bytes)],
        ),
        _params(
            "CUpti_Profiler_Host_GetNumOfPasses_Params",
            [("configImageSize", C.c_size_t), ("pConfigImage", _bytes), ("numOfPasses", C.c_size_t)],
        ),
        _params(
            "CUpti_Profiler_Host_EvaluateToGpuValues_Params",
            [
                ("pHostObject", _obj),
                ("pCounterDataImage", _bytes),
                ("counterDataImageSize", C.c_size_t),
                ("rangeIndex", C.c_size_t),
                ("ppMetricNames", _names),
                ("numMetrics", C.c_size_t),
                ("pMetricValues", C.POINTER(C.c_double)),
            ],
        ),
        _params("CUpti_RangeProfiler_Enable_Params", [("ctx", C.c_void_p), ("pRangeProfilerObject", _obj)]),
        _params("CUpti_RangeProfiler_Disable_Params", [("pRangeProfilerObject", _obj)]),
        _params(
            "CUpti_RangeProfiler_SetConfig_Params",
            [
                ("pRangeProfilerObject", _obj),
                ("configSize", C.c_size_t),
                ("pConfig", _bytes),
                ("counterDataImageSize", C.c_size_t),
                ("pCounterDataImage", _bytes),
                ("range", C.c_int),
                ("replayMode", C.c_int),
                ("maxRangesPerPass", C.c_size_t),
                ("numNestingLevels", C.c_uint16),
                ("minNestingLevel", C.c_uint16),
                ("passIndex", C.c_size_t),
                ("targetNestingLevel", C.c_uint16),
            ],
        ),
        _params("CUpti_RangeProfiler_Start_Params", [("pRangeProfilerObject", _obj)]),
        _params(
            "CUpti_RangeProfiler_Stop_Params",
            [
                ("pRangeProfilerObject", _obj),
                ("passIndex", C.c_size_t),
                ("targetNestingLevel", C.c_size_t),
                ("isAllPassSubmitted", C.c_uint8),
            ],
        ),
        _params("CUpti_RangeProfiler_PushRange_Params", [("pRangeProfilerObject", _obj), ("pRangeName", C.c_char_p)]),
        _params("CUpti_RangeProfiler_PopRange_Params", [("pRangeProfilerObject", _obj)]),
        _params(
            "CUpti_RangeProfiler_DecodeData_Params", [("pRangeProfilerObject", _obj), ("numOfRangeDropped", C.c_size_t)]
        ),
        _params(
            "CUpti_RangeProfiler_GetCounterDataSize_Params",
            [
                ("pRangeProfilerObject", _obj),
                ("pMetricNames", _names),
                ("numMetrics", C.c_size_t),
                ("maxNumOfRanges", C.c_size_t),
                ("maxNumRangeTreeNodes", C.c_uint32),
                ("counterDataSize", C.c_size_t),
            ],
        ),
        _params(
            "CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
            [("pRangeProfilerObject", _obj), ("counterDataSize", C.c_size_t), ("pCounterData", _bytes)],
        ),
        _params(
            "CUpti_RangeProfiler_GetCounterDataInfo_Params",
            [("pCounterDataImage", _bytes), ("counterDataImageSize", C.c_size_t), ("numTotalRanges", C.c_size_t)],
        ),
        _params(
            "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
            [
                ("pCounterDataImage", _bytes),
                ("counterDataImageSize", C.c_size_t),
                ("rangeIndex", C.c_size_t),
                ("rangeDelimiter", C.c_char_p),
                ("rangeName", C.c_char_p),
            ],
        ),
    )
}


def _version_key(path: str) -> tuple:
    """Sorts paths by the numbers in them, as versions (``cuda-12.10`` after ``cuda-12.4``)."""
    import re

    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", path))


def candidates(places: tuple[str, ...] | None = None) -> list[str]:
    """The CUPTI libraries found, in the order they are tried: ``places`` (``CUPTI_PLACES``) in
    order, within a pattern the newest toolkit first (``cuda-13.0`` before ``cuda-12.4``) and
    in one folder the plain ``libcupti.so`` first; then the ``nvidia-cuda-cupti`` wheel's."""
    out: list[str] = []
    for pattern in CUPTI_PLACES if places is None else places:
        hits = [p for p in glob.glob(pattern) if Path(p).is_file()]
        folders = sorted({os.path.dirname(p) for p in hits}, key=_version_key, reverse=True)
        out += [p for folder in folders for p in sorted((h for h in hits if os.path.dirname(h) == folder), key=len)]
    try:
        import nvidia  # the wheels' namespace package (nvidia/cu13/lib/libcupti.so.13)

        for root in getattr(nvidia, "__path__", []):
            out += sorted(glob.glob(os.path.join(root, "*", "lib", "libcupti.so*")), key=len)
    except ImportError:
        pass
    return list(dict.fromkeys(out))


_usable: dict[str, str] = {}


def usable(path: str) -> str:
    """ "" when ``path`` is a shared library that exports the range profiler (CUPTI 12.6 or newer:
    ``cuptiRangeProfilerEnable`` in its dynamic symbol names); else why not (a toolkit too old, a
    file that is not a library). Read, not loaded: the parent of a sweep that may time in its own
    process never has CUPTI in it (only the counting unit's worker loads it)."""
    if path not in _usable:
        import mmap

        try:
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data[:4] != b"\x7fELF":
                    _usable[path] = f"{path} is not a shared library"
                elif data.find(b"\0cuptiRangeProfilerEnable\0") < 0:
                    _usable[path] = f"{path} has no range profiler (cuptiRangeProfilerEnable: CUPTI 12.6 or newer)"
                else:
                    _usable[path] = ""
        except (OSError, ValueError) as exc:
            return f"{path} cannot be read: {exc}"
    return _usable[path]


def locate(explicit: str | None = None, places: tuple[str, ...] | None = None) -> tuple[str | None, str]:
    """(the CUPTI library to load, "") or (None, why none): ``explicit`` (or HIPEXPLORE_CUPTI_LIBRARY)
    when given, which must be usable; else the first usable of ``candidates``."""
    from ... import settings

    explicit = explicit or settings.CUPTI_LIBRARY.get()
    if explicit:
        if not Path(explicit).is_file():
            return None, f"{explicit} is not a file"
        why = usable(explicit)
        return (None, why) if why else (explicit, "")
    reasons = []
    for path in candidates(places):
        why = usable(path)
        if not why:
            return path, ""
        reasons.append(why)
    return None, "; ".join(reasons[:3]) or "no libcupti.so found"


def find_cupti(explicit: str | None = None) -> str | None:
    """The CUPTI library to load (``locate``), or None."""
    return locate(explicit)[0]


def load(path: str) -> C.CDLL:
    """``path`` loaded, after the profiler's host library beside it (libnvperf_host.so: CUPTI opens
    it by name, and the folder may not be on the loader's path)."""
    folder = Path(path).parent
    for helper in ("libnvperf_host.so", "libnvperf_target.so"):
        if (folder / helper).is_file():
            try:
                C.CDLL(str(folder / helper), mode=C.RTLD_GLOBAL)
            except OSError:
                pass
    try:
        return C.CDLL(path)
    except OSError as exc:
        raise CounterError(f"CUPTI library {path} does not load: {exc}") from exc


class Api:
    """The library's calls, each checked (``call``)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lib = load(path)

    def words(self, status: int) -> str:
        text = C.c_char_p()
        try:
            self.lib.cuptiGetResultString(int(status), C.byref(text))
        except AttributeError:
            return f"status {status}"
        return f"{(text.value or b'').decode(errors='replace') or 'unknown'} ({status})"

    def call(self, function: str, params: Any) -> Any:
        """``function(&params)`` with ``params.structSize`` set; a non-zero status raises."""
        params.structSize = type(params).SIZE
        try:
            fn = getattr(self.lib, function)
        except AttributeError as exc:
            raise CounterError(f"{self.path} has no {function} (the range profiler needs CUPTI 12.6 or newer)") from exc
        fn.restype = C.c_int
        status = fn(C.byref(params))
        if status:
            hint = (
                (
                    " (counters need the administrator's permission on this machine: NVreg_RestrictProfilingToAdminUsers=0,"
                    " or run as root)"
                )
                if status == ERROR_INSUFFICIENT_PRIVILEGES
                else ""
            )
            raise CounterError(f"{function} failed: {self.words(status)}{hint} [{self.path}]")
        return params

    def make(self, struct: str, **values: Any) -> Any:
        return STRUCTS[struct](**values)


def _c_names(names: tuple[str, ...]) -> Any:
    return (C.c_char_p * len(names))(*[n.encode() for n in names])


@dataclass
class Counted:
    """One range's values: its name (the launch's index in the configuration) and each metric's."""

    name: str
    values: dict[str, float]


class RangeSession:
    """The range profiler on this process's current CUDA context (module docstring)."""

    def __init__(
        self,
        metrics: tuple[str, ...],
        *,
        device_index: int = 0,
        library: str | None = None,
        ranges: int = 256,
        mode: str = "user",
    ) -> None:
        if mode not in RANGE_MODES:
            raise CounterError(f"CUPTI range mode must be one of {', '.join(RANGE_MODES)}, got {mode!r}")
        self.mode = mode
        path, why = locate(library)
        if path is None:
            raise CounterError(
                f"CUPTI library not usable: {why} (HIPEXPLORE_CUPTI_LIBRARY, the CUDA toolkit's "
                "extras/CUPTI/lib64, or the nvidia-cuda-cupti wheel)"
            )
        self.api, self.metrics = Api(path), tuple(metrics)
        self._names = _c_names(self.metrics)
        self.obj = self.host = None
        self.capacity, self.image = 0, None
        self._initialized = False
        try:
            self._open(device_index, ranges)
        except BaseException:
            self.close()
            raise

    def _open(self, device_index: int, ranges: int) -> None:
        api = self.api
        api.call("cuptiProfilerInitialize", api.make("CUpti_Profiler_Initialize_Params"))
        self._initialized = True
        chip = api.call("cuptiDeviceGetChipName", api.make("CUpti_Device_GetChipName_Params", deviceIndex=device_index))
        self.chip = (chip.pChipName or b"").decode()
        host = api.call(
            "cuptiProfilerHostInitialize",
            api.make("CUpti_Profiler_Host_Initialize_Params", profilerType=RANGE_PROFILER, pChipName=chip.pChipName),
        )
        self.host = host.pHostObject
        api.call(
            "cuptiProfilerHostConfigAddMetrics",
            api.make(
                "CUpti_Profiler_Host_ConfigAddMetrics_Params",
                pHostObject=self.host,
                ppMetricNames=self._names,
                numMetrics=len(self.metrics),
            ),
        )
        size = api.call(
            "cuptiProfilerHostGetConfigImageSize",
            api.make("CUpti_Profiler_Host_GetConfigImageSize_Params", pHostObject=self.host),
        ).configImageSize
        self.config = (C.c_uint8 * size)()
        api.call(
            "cuptiProfilerHostGetConfigImage",
            api.make(
                "CUpti_Profiler_Host_GetConfigImage_Params",
                pHostObject=self.host,
                configImageSize=size,
                pConfigImage=self.config,
            ),
        )
        self.passes = api.call(
            "cuptiProfilerHostGetNumOfPasses",
            api.make("CUpti_Profiler_Host_GetNumOfPasses_Params", configImageSize=size, pConfigImage=self.config),
        ).numOfPasses
        if self.passes != 1:
            raise CounterError(
                f"metrics {', '.join(self.metrics)} need {self.passes} hardware passes on {self.chip}; the "
                f"counter pass counts in one (a replayed launch would see the cache the first pass left)"
            )
        from cuda.bindings import driver

        err, ctx = driver.cuCtxGetCurrent()
        if err != driver.CUresult.CUDA_SUCCESS or not int(ctx):
            raise CounterError(f"no current CUDA context to profile (cuCtxGetCurrent: {getattr(err, 'name', err)})")
        self.obj = api.call(
            "cuptiRangeProfilerEnable", api.make("CUpti_RangeProfiler_Enable_Params", ctx=int(ctx))
        ).pRangeProfilerObject
        self._image(ranges)

    def _image(self, ranges: int) -> None:
        """A counter-data image for ``ranges`` ranges (made again, larger, when a configuration needs more)."""
        api = self.api
        size = api.call(
            "cuptiRangeProfilerGetCounterDataSize",
            api.make(
                "CUpti_RangeProfiler_GetCounterDataSize_Params",
                pRangeProfilerObject=self.obj,
                pMetricNames=self._names,
                numMetrics=len(self.metrics),
                maxNumOfRanges=ranges,
                maxNumRangeTreeNodes=ranges,
            ),
        ).counterDataSize
        self.image, self.capacity = (C.c_uint8 * size)(), int(ranges)

    def begin(self, ranges: int) -> None:
        """A fresh counter-data image with room for ``ranges`` ranges; the profiler configured and started."""
        if ranges > self.capacity:
            self._image(max(int(ranges), 2 * self.capacity))
        api = self.api
        api.call(
            "cuptiRangeProfilerCounterDataImageInitialize",
            api.make(
                "CUpti_RangeProfiler_CounterDataImage_Initialize_Params",
                pRangeProfilerObject=self.obj,
                counterDataSize=len(self.image),
                pCounterData=self.image,
            ),
        )
        api.call(
            "cuptiRangeProfilerSetConfig",
            api.make(
                "CUpti_RangeProfiler_SetConfig_Params",
                pRangeProfilerObject=self.obj,
                configSize=len(self.config),
                pConfig=self.config,
                counterDataImageSize=len(self.image),
                pCounterDataImage=self.image,
                range=RANGE_MODES[self.mode][0],
                replayMode=RANGE_MODES[self.mode][1],
                maxRangesPerPass=self.capacity,
                numNestingLevels=1,
                minNestingLevel=1,
                passIndex=0,
                targetNestingLevel=1,
            ),
        )
        api.call("cuptiRangeProfilerStart", api.make("CUpti_RangeProfiler_Start_Params", pRangeProfilerObject=self.obj))

    def push(self, name: str) -> None:
        self._name = name.encode()  # kept alive until the pop
        self.api.call(
            "cuptiRangeProfilerPushRange",
            self.api.make("CUpti_RangeProfiler_PushRange_Params", pRangeProfilerObject=self.obj, pRangeName=self._name),
        )

    def pop(self) -> None:
        self.api.call(
            "cuptiRangeProfilerPopRange",
            self.api.make("CUpti_RangeProfiler_PopRange_Params", pRangeProfilerObject=self.obj),
        )

    def end(self) -> tuple[list[Counted], int]:
        """Stop, decode, and every range's values in order; (ranges, ranges CUPTI dropped)."""
        api = self.api
        stop = api.call(
            "cuptiRangeProfilerStop", api.make("CUpti_RangeProfiler_Stop_Params", pRangeProfilerObject=self.obj)
        )
        if not stop.isAllPassSubmitted:
            raise CounterError("CUPTI asked for another replay pass of a one-pass configuration")
        dropped = api.call(
            "cuptiRangeProfilerDecodeData",
            api.make("CUpti_RangeProfiler_DecodeData_Params", pRangeProfilerObject=self.obj),
        ).numOfRangeDropped
        total = api.call(
            "cuptiRangeProfilerGetCounterDataInfo",
            api.make(
                "CUpti_RangeProfiler_GetCounterDataInfo_Params",
                pCounterDataImage=self.image,
                counterDataImageSize=len(self.image),
            ),
        ).numTotalRanges
        out = []
        values = (C.c_double * len(self.metrics))()
        for i in range(int(total)):
            info = api.call(
                "cuptiRangeProfilerCounterDataGetRangeInfo",
                api.make(
                    "CUpti_RangeProfiler_CounterData_GetRangeInfo_Params",
                    pCounterDataImage=self.image,
                    counterDataImageSize=len(self.image),
                    rangeIndex=i,
                    rangeDelimiter=b"/",
                ),
            )
            api.call(
                "cuptiProfilerHostEvaluateToGpuValues",
                api.make(
                    "CUpti_Profiler_Host_EvaluateToGpuValues_Params",
                    pHostObject=self.host,
                    pCounterDataImage=self.image,
                    counterDataImageSize=len(self.image),
                    rangeIndex=i,
                    ppMetricNames=self._names,
                    numMetrics=len(self.metrics),
                    pMetricValues=values,
                ),
            )
            out.append(Counted((info.rangeName or b"").decode(errors="replace"), dict(zip(self.metrics, list(values)))))
        return out, int(dropped)

    def close(self) -> None:
        """Everything released, each step tried (a failed step never hides the error that led here)."""
        api = getattr(self, "api", None)
        if api is None:
            return
        steps = []
        if self.obj is not None:
            steps.append(
                (
                    "cuptiRangeProfilerDisable",
                    api.make("CUpti_RangeProfiler_Disable_Params", pRangeProfilerObject=self.obj),
                )
            )
        if self.host is not None:
            steps.append(
                (
                    "cuptiProfilerHostDeinitialize",
                    api.make("CUpti_Profiler_Host_Deinitialize_Params", pHostObject=self.host),
                )
            )
        if self._initialized:
            steps.append(("cuptiProfilerDeInitialize", api.make("CUpti_Profiler_DeInitialize_Params")))
        for function, params in steps:
            try:
                api.call(function, params)
            except CounterError:
                pass
        self.obj = self.host = None
        self._initialized = False


__all__ = [
    "Api",
    "CUPTI_PLACES",
    "Counted",
    "RANGE_MODES",
    "RangeSession",
    "STRUCTS",
    "candidates",
    "find_cupti",
    "load",
    "locate",
    "usable",
]
