"""``hipexplore.devices.hip``: the HIP device through hip-python, without an AMD GPU here: the
runtime's own "no device" answer named, kernel parameters hip-python accepts, the LLC (L2 plus
Infinity Cache on MI300-class parts), the spin timeout in the device's clock, and the ROCm 5
runtime refused."""

from __future__ import annotations


import pytest

from hipexplore.devices import available, get_device
from hipexplore.devices.base import pack_args
from hipexplore.errors import DeviceUnavailable
from hipexplore.kernels import catalog

from devices.test_devices import _hip_or_missing, _not_here


def test_hip_absent_names_what_was_looked_for() -> None:
    """With hip-python and a runtime installed but no AMD GPU, the error is the runtime's own answer
    (hipErrorNoDevice from hipGetDeviceCount), not some other failure passed off as 'no device'."""
    from hipexplore.devices.hip import hip_runtime

    try:
        hip = hip_runtime()
    except DeviceUnavailable as exc:  # no hip-python or no runtime library: that is what get_device says
        assert str(exc).startswith("HIP: ") and ("hip-python" in str(exc) or "HIP runtime" in str(exc))
        with pytest.raises(DeviceUnavailable) as again:
            get_device("hip")
        assert str(again.value) == f"{exc}; devices here: {', '.join(available())}"
        return
    err, count = hip.hipGetDeviceCount()
    if err == hip.hipError_t.hipSuccess and count > 0:
        _not_here(
            "a machine without an AMD GPU", "an AMD GPU is present here: the absent-device error cannot be produced"
        )
    assert err == hip.hipError_t.hipErrorNoDevice  # what the runtime says independently of hipexplore
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("hip")
    msg = str(exc.value)
    assert msg.startswith("HIP: ") and "hipGetDeviceCount" in msg
    # the runtime's answer, then the devices that are here (issue 49.5: say which devices exist)
    assert msg.endswith(f"returned hipErrorNoDevice; devices here: {', '.join(available())}"), msg
    assert available()[-1] == "--device host (this CPU)" and not any(d.startswith("--device hip") for d in available())


def test_hip_llc_table_adds_infinity_cache_on_mi300() -> None:
    from hipexplore.devices.hip import llc_for_arch

    llc, src = llc_for_arch("gfx942:sramecc+:xnack-", 4 << 20)
    assert llc == (4 << 20) + (256 << 20) and "Infinity Cache" in src
    llc, src = llc_for_arch("gfx90a:sramecc+:xnack-", 8 << 20)
    assert llc == 8 << 20 and "Infinity" not in src


def test_hip_python_accepts_our_kernel_params() -> None:
    """hipModuleLaunchKernel takes PackedArgs.address as kernelParams (no TypeError); with no AMD GPU
    here the runtime answers with an error code instead of launching."""
    hip = _hip_or_missing()
    err, count = hip.hipGetDeviceCount()
    if err == hip.hipError_t.hipSuccess and count > 0:
        _not_here(
            "a machine without an AMD GPU",
            "an AMD GPU is present here: a launch of a null kernel would not be refused for want of a device",
        )
    packed = pack_args(catalog.get("triad").args, {"a": 0x1000, "b": 0x2000, "c": 0x3000, "s": 3.0, "n": 10})
    (err,) = hip.hipModuleLaunchKernel(None, 1, 1, 1, 64, 1, 1, 0, None, packed.address, None)
    # refused for want of a device (ROCm 5.2 here answers hipErrorInvalidDevice), not for its arguments
    assert err in (hip.hipError_t.hipErrorInvalidDevice, hip.hipError_t.hipErrorNoDevice), err
    with pytest.raises(TypeError):  # hip-python does check the kernelParams type: a str is refused
        hip.hipModuleLaunchKernel(None, 1, 1, 1, 64, 1, 1, 0, None, "not a pointer array", None)


@pytest.mark.parametrize("arch", ["gfx940", "gfx941", "gfx942:sramecc+:xnack-", "gfx950"])
def test_hip_llc_is_l2_plus_infinity_cache_on_every_mi300_class_arch(arch: str) -> None:
    from hipexplore.devices.hip import llc_for_arch

    llc, src = llc_for_arch(arch, 4 << 20)
    assert llc == (4 << 20) + (256 << 20)
    assert src.startswith("hipDeviceAttributeL2CacheSize (4194304 B, one XCD) + 256 MiB Infinity Cache")
    assert arch.split(":")[0] in src


@pytest.mark.parametrize(
    "arch, l2", [("gfx90a:sramecc+:xnack-", 8 << 20), ("gfx908", 8 << 20), ("gfx1100", 6 << 20), ("gfx94", 4 << 20)]
)
def test_hip_llc_is_the_reported_l2_elsewhere(arch: str, l2: int) -> None:
    from hipexplore.devices.hip import llc_for_arch

    assert llc_for_arch(arch, l2) == (l2, "hipDeviceAttributeL2CacheSize")


def test_hip_refuses_a_rocm5_runtime() -> None:
    """The refusal HipDevice applies after finding a GPU, on the version the installed runtime
    reports (ROCm 5.2's libamdhip64.so.5 here); device_count() stops earlier without an AMD GPU."""
    from hipexplore.devices.hip import MIN_RUNTIME_VERSION, check_runtime_version

    hip = _hip_or_missing()
    err, runtime = hip.hipRuntimeGetVersion()
    assert err == hip.hipError_t.hipSuccess
    if runtime >= MIN_RUNTIME_VERSION:
        check_runtime_version(runtime, 1)  # ROCm >= 6: accepted
    else:
        major, minor = runtime // 10_000_000, runtime // 100_000 % 100
        with pytest.raises(
            DeviceUnavailable,
            match=rf"runtime is version {runtime} \(ROCm {major}\.{minor}\); the device API needs ROCm >= 6",
        ):
            check_runtime_version(runtime, 1)
    check_runtime_version(60_000_000, 1)
    check_runtime_version(60_443_483, 2)  # ROCm 6.4
    with pytest.raises(DeviceUnavailable, match=r"found 2 AMD GPU\(s\).*\(ROCm 5\.7\)"):
        check_runtime_version(50_734_000, 2)
    with pytest.raises(DeviceUnavailable, match=r"\(ROCm 5\.99\)"):
        check_runtime_version(59_999_999, 1)


def test_hip_device_refuses_the_installed_rocm5_runtime_once_a_gpu_is_counted(monkeypatch) -> None:
    """HipDevice's own refusal path on the real hip-python + ROCm 5.2 runtime: only the GPU count is
    stood in for (there is no AMD GPU here; device_count() would stop with hipErrorNoDevice first);
    hipRuntimeGetVersion and the decision are the real ones."""
    from hipexplore.devices import hip as hipdev

    hip = _hip_or_missing()
    err, runtime = hip.hipRuntimeGetVersion()
    if err != hip.hipError_t.hipSuccess or runtime >= hipdev.MIN_RUNTIME_VERSION:
        _not_here(
            "the ROCm 5 HIP runtime (setup.sh installs it where no ROCm >= 6 is)",
            f"the installed HIP runtime is not ROCm 5 (hipRuntimeGetVersion: {err.name}, {runtime})",
        )
    monkeypatch.setattr(hipdev, "device_count", lambda: 1)
    with pytest.raises(
        DeviceUnavailable, match=rf"found 1 AMD GPU\(s\), but the HIP runtime is version {runtime} \(ROCm 5\."
    ):
        hipdev.HipDevice(0)


def test_spin_hold_timeout_argument_is_the_limit_in_the_kernels_clock() -> None:
    """The spin kernel gives up after ``timeout_ns`` of its own clock: CUDA's globaltimer counts real
    ns; HIP's s_memrealtime count x 10 is ns only at 100 MHz, so the argument scales with the
    device's wall clock (a 25 MHz clock counts 4x slower: a quarter of the ns count)."""
    from hipexplore.devices.gpu import GpuDeviceBase
    from hipexplore.devices.hip import HipDevice

    assert GpuDeviceBase()._spin_timeout_arg(2.0) == 2_000_000_000
    hip = HipDevice.__new__(HipDevice)
    for khz, want in ((100_000, 2_000_000_000), (25_000, 500_000_000), (200_000, 4_000_000_000)):
        hip._wall_khz = khz
        assert hip._spin_timeout_arg(2.0) == want
