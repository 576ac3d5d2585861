"""``hipexplore.devices.gpu``: what the CUDA and HIP devices share: index checks, flush modes a GPU
supports, runtime errors by name, the LLC override keeping what the runtime reported, the stream
hold's signals, and capabilities answered from the runtime or refused in one line."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from hipexplore.errors import ConfigError, DeviceUnavailable

from devices.test_devices import _hip_or_missing, _one_line_refusal


def test_spin_hold_releases_through_its_flag_and_reads_the_status_word() -> None:
    """SpinHold (the CUDA/HIP hold) on plain host memory standing in for the mapped [flag, status]
    pair: release writes flag = 1 once; timed_out() reads the status word the spin kernel sets."""
    from hipexplore.devices.gpu import SpinHold

    words = (ctypes.c_int32 * 2)(0, 0)
    hold = SpinHold(None, ctypes.addressof(words))  # type: ignore[arg-type]
    assert words[0] == 0 and hold.timed_out() is False
    hold.release()
    assert words[0] == 1
    words[0] = 0
    hold.release()  # a second release does not write again
    assert words[0] == 0
    words[1] = 1  # the spin kernel gave up before the release
    assert hold.timed_out() is True


def test_gpu_llc_override_keeps_what_the_runtime_reported(monkeypatch) -> None:
    from hipexplore.devices.gpu import GpuDeviceBase

    reported = (60 << 20, "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE")
    monkeypatch.delenv("HIPEXPLORE_LLC_BYTES", raising=False)
    gpu = GpuDeviceBase()
    gpu._init_common(None, None)
    gpu._choose_llc(*reported, gpu._llc_given)
    assert (gpu.llc_bytes, gpu.llc_source, gpu.llc_override) == (*reported, None)
    monkeypatch.setenv("HIPEXPLORE_LLC_BYTES", str(50 << 20))
    gpu._choose_llc(*reported, gpu._llc_given)
    assert gpu.llc_bytes == gpu.llc_override == 50 << 20
    assert (
        gpu.llc_source == f"override (HIPEXPLORE_LLC_BYTES; reported {60 << 20} B: CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)"
    )
    gpu._init_common(8 << 20, None)
    gpu._choose_llc(*reported, gpu._llc_given)
    assert gpu.llc_bytes == gpu.llc_override == 8 << 20
    assert gpu.llc_source.startswith("override (llc_bytes argument; reported 62914560 B")


def test_peak_bandwidth_clock_first_table_second() -> None:
    from hipexplore.devices.base import choose_peak

    # H200 reports 3201 MHz x 6016 bit: the clock (4814 GB/s) wins over the table's 4800
    gbs, src = choose_peak("NVIDIA H200", 3_201_000, 6016)
    assert (
        gbs == pytest.approx(2 * 3_201_000e3 * 6016 / 8 / 1e9)
        and src == "memory clock 3201000 kHz x 6016-bit bus x 2 (DDR)"
    )
    for clock, bus in ((0, 6016), (3_201_000, 0), (0, 0)):  # either number missing: the datasheet table
        assert choose_peak("NVIDIA H200", clock, bus) == (4800.0, "table: datasheet 4800 GB/s for 'H200'")
    gbs, src = choose_peak("Mystery GPU", 0, 0)
    assert np.isnan(gbs) and src.startswith("unknown")
    # MI300 (HIP passes table_first for gfx94*): the table, unless the name is not in it
    assert choose_peak("AMD Instinct MI300X", 1_300_000, 8192, table_first=True)[0] == 5300.0
    assert choose_peak("AMD Instinct MI300X", 1_300_000, 8192)[0] == pytest.approx(2 * 1_300_000e3 * 8192 / 8 / 1e9)
    assert choose_peak("Unlisted gfx942", 1_300_000, 8192, table_first=True)[0] == pytest.approx(2662.4)


def test_gpu_index_checks_flush_modes_and_runtime_errors() -> None:
    from hipexplore.devices.gpu import GpuDeviceBase, check_call
    from hipexplore.errors import DeviceError

    check = GpuDeviceBase._check_index
    check("CUDA", 2, 1, "none")
    with pytest.raises(DeviceUnavailable, match=r"^CUDA: the driver reports 0 devices$"):
        check("CUDA", 0, 0, "the driver reports 0 devices")
    for bad in (2, -1):
        with pytest.raises(
            DeviceUnavailable, match=rf"device index {bad} requested but only 2 device\(s\) present \(0\.\.1\)"
        ):
            check("CUDA", 2, bad, "none")
    cuda_like = type("CudaLike", (GpuDeviceBase,), {"kind": "cuda"})()
    hip_like = type("HipLike", (GpuDeviceBase,), {"kind": "hip"})()
    from hipexplore.bench.flush import flush_mode

    for mode in map(flush_mode, ("none", "l2-write", "l2-read")):
        assert mode.supported_by(cuda_like) and mode.supported_by(hip_like)
    for mode in map(flush_mode, ("icache", "inline-icache")):
        assert not mode.supported_by(cuda_like) and mode.supported_by(hip_like)
    with pytest.raises(ConfigError, match="'l3-write' is unknown"):
        flush_mode("l3-write")
    # real hip-python results: (hipErrorNoDevice, 0) from hipGetDeviceCount, (hipSuccess, version)
    hip = _hip_or_missing()
    with pytest.raises(DeviceError, match=r"^hipGetDeviceCount failed: hipErrorNoDevice \(100\)$"):
        check_call(hip.hipGetDeviceCount(), "hipGetDeviceCount", hip.hipError_t.hipSuccess)
    err, version = hip.hipRuntimeGetVersion()
    assert check_call((err, version), "hipRuntimeGetVersion", hip.hipError_t.hipSuccess) == version > 0


def test_a_gpu_device_answers_from_its_runtime_or_refuses() -> None:
    """What can run without a GPU: the GPU base reads compute units and memory from its runtime, so
    before it has one it refuses (never a default count); HIP has no dynamic-shared opt-in to call
    (ROCm ignores the attribute), so allowing it is a no-op there; a GPU unit's fresh placement is
    a fresh worker process, so ``fresh()`` is the device itself."""
    from hipexplore.devices.gpu import GpuDeviceBase
    from hipexplore.devices.hip import HipDevice

    gpu = GpuDeviceBase()
    gpu._init_common(None, None)
    _one_line_refusal(lambda: gpu.compute_units, "gpu device", "compute-unit")
    _one_line_refusal(gpu.memory_info, "gpu device", "memory")
    _one_line_refusal(lambda: gpu.set_max_dynamic_shared(None, 96 << 10), "gpu device", str(96 << 10))
    assert gpu.fresh() is gpu
    gpu._compute_units = 132  # what CudaDevice/HipDevice read from the runtime at start-up
    assert gpu.compute_units == 132
    hip = HipDevice.__new__(HipDevice)
    assert hip.set_max_dynamic_shared(None, 64 << 10) is None
