"""Device backends: selection and absent-device errors, the host backend end to end, argument
marshalling, LLC and peak-bandwidth sources. (CUDA and HIP runtime calls run on the H200 script;
here neither GPU exists, so their absence must be reported clearly.)"""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from hipexplore.devices import available, get_device, parse_device
from hipexplore.devices.base import (
    DeviceBuffer,
    expected_packed,
    pack_args,
    peak_from_clock,
    peak_from_table,
)
from hipexplore.devices.host import HostDevice, parse_size, read_llc
from hipexplore.errors import ConfigError, DeviceError, DeviceUnavailable, UnsupportedOperation
from hipexplore.kernels import catalog
from hipexplore.kernels.build import kernel_for


def test_parse_device_and_unknown_kind() -> None:
    assert parse_device("cuda:1") == ("cuda", 1)
    assert parse_device("host") == ("host", 0)
    with pytest.raises(ConfigError, match="'tpu'"):
        get_device("tpu")
    with pytest.raises(ConfigError, match="integer"):
        parse_device("cuda:x")


def _not_here(what: str, reason: str) -> None:
    """A condition no CI flag can ask a machine for (no GPU where one is, another runtime): a skip
    under every flag, through conftest's one helper."""
    from conftest import NOT_REQUIRED, need

    need(what, reason, flag=NOT_REQUIRED)


def _hip_or_missing():
    from conftest import missing
    from hipexplore.devices.hip import hip_runtime

    try:
        return hip_runtime()
    except DeviceUnavailable as exc:
        missing("hip-python with a loadable HIP runtime", str(exc))


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
        assert str(again.value) == str(exc)
        return
    err, count = hip.hipGetDeviceCount()
    if err == hip.hipError_t.hipSuccess and count > 0:
        _not_here("a machine without an AMD GPU", "an AMD GPU is present here: the absent-device error cannot be produced")
    assert err == hip.hipError_t.hipErrorNoDevice  # what the runtime says independently of hipexplore
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("hip")
    msg = str(exc.value)
    assert msg.startswith("HIP: ") and "hipGetDeviceCount" in msg
    # the runtime's answer, then the devices that are here (issue 49.5: say which devices exist)
    assert msg.endswith(f"returned hipErrorNoDevice; devices here: {', '.join(available())}"), msg
    assert available()[-1] == "--device host (this CPU)" and not any(d.startswith("--device hip") for d in available())


def _gpu_present(kind: str) -> bool:
    try:
        get_device(kind).close()
    except DeviceUnavailable:
        return False
    return True


def test_cuda_absent_names_what_was_looked_for() -> None:
    if _gpu_present("cuda"):
        _not_here("a machine without an NVIDIA GPU", "an NVIDIA GPU is present here: the absent-device error cannot be produced")
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("cuda")
    msg = str(exc.value)
    assert msg.endswith(f"; devices here: {', '.join(available())}"), msg
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:  # no NVIDIA driver here: the message names the library that was looked for
        assert msg.startswith("CUDA: looked for the NVIDIA driver library libcuda.so.1")
    else:  # a driver without a usable GPU: cuInit's or cuDeviceGetCount's own error, by name
        assert msg.startswith("CUDA: cu") and "CUDA_ERROR_" in msg


def test_auto_falls_back_to_host_and_says_why() -> None:
    if _gpu_present("cuda") or _gpu_present("hip"):
        _not_here("a machine without a GPU", "a GPU is present here: auto does not fall back to the host")
    dev = get_device("auto")
    assert dev.kind == "host"
    reasons = dev.auto_reasons
    assert len(reasons) == 2 and reasons[0].startswith("HIP") and reasons[1].startswith("CUDA")


def test_host_properties_and_llc_from_sysfs(tmp_path) -> None:
    dev = HostDevice()
    props = dev.properties
    assert props.kind == "host" and props.target == "host" and props.compiler == "host"
    assert props.llc_bytes > 0 and props.llc_source
    free, total = dev.memory_info()
    assert 0 < free <= total
    # a fake sysfs tree: the highest level wins, instruction caches are ignored
    for i, (level, typ, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"), (3, "Unified", "8M")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{typ}\n")
        (d / "size").write_text(f"{size}\n")
    llc, src = read_llc(tmp_path)
    assert llc == 8 << 20 and "L3" in src
    assert parse_size("32768K") == 32 << 20
    assert HostDevice(llc_bytes=12345).llc_bytes == 12345


def test_host_rejects_bad_index_and_sizes() -> None:
    with pytest.raises(ConfigError, match="index 0"):
        HostDevice(1)
    with pytest.raises(ConfigError, match="positive"):
        HostDevice().alloc(0)


def test_host_copy_roundtrip_and_free() -> None:
    dev = HostDevice()
    buf = dev.alloc(4096)
    assert buf.ptr % 64 == 0
    data = np.arange(1024, dtype=np.float32)
    dev.copy_to_device(buf, data)
    back = np.empty_like(data)
    dev.copy_to_host(buf, back)
    assert np.array_equal(back, data)
    dev.free(buf)
    with pytest.raises(Exception, match="freed"):
        dev.copy_to_host(buf, back)


def test_pack_args_bytes_match_struct_layout() -> None:
    spec = catalog.get("triad")
    buf_a = DeviceBuffer(0x7F0000001000, 64, "test")
    values = {"a": buf_a, "b": 0x7F0000002000, "c": 0x7F0000003000, "s": 3.0, "n": 2**40 + 7}
    packed = pack_args(spec.args, values)
    # kernelParams: each pointer in the void*[] points at the argument's bytes
    reads = [ctypes.string_at(packed.pointers[i], ctypes.sizeof(packed.values[i])) for i in range(len(packed))]
    assert reads[0] == struct.pack("=Q", 0x7F0000001000)
    assert reads[3] == struct.pack("=f", 3.0)
    assert reads[4] == struct.pack("=Q", 2**40 + 7)
    # extra: naturally aligned image (float at 24, 4 bytes padding, u64 at 32)
    image = packed.packed()
    assert image == expected_packed(spec.args, values)
    assert len(image) == 40 and image[28:32] == b"\0\0\0\0"
    with pytest.raises(ConfigError, match="no value for kernel argument 'n'"):
        pack_args(spec.args, {k: v for k, v in values.items() if k != "n"})


def test_host_device_runs_triad_through_the_compile_cache(need_host_cc, tmp_path) -> None:
    from hipexplore.bench.rotating import BufferSets
    from hipexplore.compile.cache import CompileCache

    dev = HostDevice()
    dev.cache = CompileCache(disk_dir=tmp_path)
    spec = catalog.get("triad")
    kernel = kernel_for(dev, "triad")
    n = 1000
    with BufferSets(dev, spec, n, 2, seed=3) as sets:
        grid, block = spec.geometry(n, dev)
        start, end = dev.event(), dev.event()
        dev.record(start)
        dev.launch(kernel, grid, block, sets.args[1])
        dev.record(end)
        assert dev.elapsed_s(start, end) > 0
        out = np.empty(n, dtype=np.float32)
        dev.copy_to_host(sets.buffers[1]["a"], out)
        np.testing.assert_allclose(out, sets.host["b"] + np.float32(3.0) * sets.host["c"], rtol=1e-6)
    events = dev.cache.events()
    assert list(events["kernel"]) == ["triad"] and events["outcome"].iloc[0] == "compiled"
    with pytest.raises(UnsupportedOperation, match="inline-icache"):
        kernel_for(dev, "triad", inline_icache=True)


def test_peak_bandwidth_sources() -> None:
    # H200: 3201 MHz x 6016-bit (what the driver reported on our H200) -> ~4.81 TB/s
    assert peak_from_clock(3_201_000, 6016) == pytest.approx(4814.3, rel=1e-4)
    gbs, src = peak_from_table("AMD Instinct MI300X")
    assert gbs == 5300.0 and "table" in src
    gbs, src = peak_from_table("Mystery GPU")
    assert np.isnan(gbs) and "unknown" in src


def test_hip_llc_table_adds_infinity_cache_on_mi300() -> None:
    from hipexplore.devices.hip import llc_for_arch

    llc, src = llc_for_arch("gfx942:sramecc+:xnack-", 4 << 20)
    assert llc == (4 << 20) + (256 << 20) and "Infinity Cache" in src
    llc, src = llc_for_arch("gfx90a:sramecc+:xnack-", 8 << 20)
    assert llc == 8 << 20 and "Infinity" not in src


def test_host_device_satisfies_the_protocol() -> None:
    from hipexplore.devices import Device

    assert isinstance(HostDevice(), Device)


def test_hip_python_accepts_our_kernel_params() -> None:
    """hipModuleLaunchKernel takes PackedArgs.address as kernelParams (no TypeError); with no AMD GPU
    here the runtime answers with an error code instead of launching."""
    hip = _hip_or_missing()
    err, count = hip.hipGetDeviceCount()
    if err == hip.hipError_t.hipSuccess and count > 0:
        _not_here("a machine without an AMD GPU", "an AMD GPU is present here: a launch of a null kernel would not be refused for want of a device")
    packed = pack_args(catalog.get("triad").args, {"a": 0x1000, "b": 0x2000, "c": 0x3000, "s": 3.0, "n": 10})
    (err,) = hip.hipModuleLaunchKernel(None, 1, 1, 1, 64, 1, 1, 0, None, packed.address, None)
    # refused for want of a device (ROCm 5.2 here answers hipErrorInvalidDevice), not for its arguments
    assert err in (hip.hipError_t.hipErrorInvalidDevice, hip.hipError_t.hipErrorNoDevice), err
    with pytest.raises(TypeError):  # hip-python does check the kernelParams type: a str is refused
        hip.hipModuleLaunchKernel(None, 1, 1, 1, 64, 1, 1, 0, None, "not a pointer array", None)


# --- the stream hold's signals, LLC sources and overrides, peak bandwidth, ROCm 5 refusal (issue 17) --

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


class _TimingOutHold:
    def release(self) -> None:
        return None

    def timed_out(self) -> bool:
        return True


class _HostWithBrokenHold(HostDevice):
    """The real host device whose hold reports a timeout on chunks 2 and 4 (as a GPU hold does when
    the host enqueues a chunk slower than the spin kernel waits)."""

    def __init__(self) -> None:
        super().__init__(llc_bytes=256 << 10)
        self.holds = 0

    def hold_stream(self, timeout_s: float = 2.0, **kw):
        self.holds += 1
        return _TimingOutHold() if self.holds in (2, 4) else super().hold_stream(timeout_s, **kw)


def test_timed_out_holds_are_counted_and_noted(need_host_cc, tmp_path) -> None:
    from hipexplore.bench.rotating import BufferSets
    from hipexplore.bench.stats import StopRule
    from hipexplore.bench.timing import Workload, time_launches
    from hipexplore.compile.cache import CompileCache

    spec = catalog.get("triad")
    broken = _HostWithBrokenHold()
    broken.cache = CompileCache(disk_dir=tmp_path)
    host = HostDevice(llc_bytes=256 << 10)
    host.cache = broken.cache
    # a timed-out hold fails its chunk: discarded, measured again with half the launches (4, then
    # 2 after hold 2 failed, then 1 after hold 4 failed): 1 + 1 + 14 accepted chunks for 20 samples
    for dev, timeouts, chunks in ((broken, 2, 16), (host, 0, 5)):
        with BufferSets(dev, spec, 256, 1) as sets:
            grid, block = spec.geometry(256, dev)
            wl = Workload(dev, kernel_for(dev, "triad"), grid, block, sets.args)
            raw = time_launches(wl, None, StopRule(iterations=20), chunk=4, warmup_s=0, hold_timeout_s=1e-9)
        assert raw.chunks == chunks and raw.hold_timeouts == timeouts and len(raw.time_s) == 20
        assert list(raw.chunk) == sorted(raw.chunk) and raw.chunk.max() == chunks - 1
        noted = [n for n in raw.notes if "stream hold timed out" in n]
        assert noted == ([f"stream hold timed out in {timeouts} chunk(s): those samples were discarded and measured again "
                          "with fewer launches per hold"] if timeouts else [])


def test_host_llc_override_by_argument_and_environment(monkeypatch) -> None:
    sysfs_llc, _src = read_llc()
    monkeypatch.delenv("HIPEXPLORE_LLC_BYTES", raising=False)
    dev = HostDevice()
    assert (dev.llc_bytes, dev.llc_source, dev.llc_override) == (sysfs_llc, _src, None)
    monkeypatch.setenv("HIPEXPLORE_LLC_BYTES", "7340032")
    dev = HostDevice()
    assert dev.llc_bytes == 7 << 20 and dev.llc_source == f"override (HIPEXPLORE_LLC_BYTES; reported {sysfs_llc} B: {_src})"
    assert dev.properties.llc_bytes == 7 << 20 and dev.llc_override == 7 << 20
    dev = HostDevice(llc_bytes=3 << 20)  # the argument wins over the environment
    assert dev.llc_bytes == 3 << 20 and dev.llc_source.startswith("override (llc_bytes argument; reported ")
    assert dev.llc_override == 3 << 20 and dev.fresh().llc_override == 3 << 20
    assert get_device("host").llc_bytes == 7 << 20 and get_device("host", llc_bytes=1 << 20).llc_bytes == 1 << 20


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
    assert gpu.llc_source == f"override (HIPEXPLORE_LLC_BYTES; reported {60 << 20} B: CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)"
    gpu._init_common(8 << 20, None)
    gpu._choose_llc(*reported, gpu._llc_given)
    assert gpu.llc_bytes == gpu.llc_override == 8 << 20
    assert gpu.llc_source.startswith("override (llc_bytes argument; reported 62914560 B")


@pytest.mark.parametrize("arch", ["gfx940", "gfx941", "gfx942:sramecc+:xnack-", "gfx950"])
def test_hip_llc_is_l2_plus_infinity_cache_on_every_mi300_class_arch(arch: str) -> None:
    from hipexplore.devices.hip import llc_for_arch

    llc, src = llc_for_arch(arch, 4 << 20)
    assert llc == (4 << 20) + (256 << 20)
    assert src.startswith("hipDeviceAttributeL2CacheSize (4194304 B, one XCD) + 256 MiB Infinity Cache")
    assert arch.split(":")[0] in src


@pytest.mark.parametrize("arch, l2", [("gfx90a:sramecc+:xnack-", 8 << 20), ("gfx908", 8 << 20), ("gfx1100", 6 << 20), ("gfx94", 4 << 20)])
def test_hip_llc_is_the_reported_l2_elsewhere(arch: str, l2: int) -> None:
    from hipexplore.devices.hip import llc_for_arch

    assert llc_for_arch(arch, l2) == (l2, "hipDeviceAttributeL2CacheSize")


def test_peak_bandwidth_clock_first_table_second() -> None:
    from hipexplore.devices.base import choose_peak

    # H200 reports 3201 MHz x 6016 bit: the clock (4814 GB/s) wins over the table's 4800
    gbs, src = choose_peak("NVIDIA H200", 3_201_000, 6016)
    assert gbs == pytest.approx(2 * 3_201_000e3 * 6016 / 8 / 1e9) and src == "memory clock 3201000 kHz x 6016-bit bus x 2 (DDR)"
    for clock, bus in ((0, 6016), (3_201_000, 0), (0, 0)):  # either number missing: the datasheet table
        assert choose_peak("NVIDIA H200", clock, bus) == (4800.0, "table: datasheet 4800 GB/s for 'H200'")
    gbs, src = choose_peak("Mystery GPU", 0, 0)
    assert np.isnan(gbs) and src.startswith("unknown")
    # MI300 (HIP passes table_first for gfx94*): the table, unless the name is not in it
    assert choose_peak("AMD Instinct MI300X", 1_300_000, 8192, table_first=True)[0] == 5300.0
    assert choose_peak("AMD Instinct MI300X", 1_300_000, 8192)[0] == pytest.approx(2 * 1_300_000e3 * 8192 / 8 / 1e9)
    assert choose_peak("Unlisted gfx942", 1_300_000, 8192, table_first=True)[0] == pytest.approx(2662.4)


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
        with pytest.raises(DeviceUnavailable, match=rf"runtime is version {runtime} \(ROCm {major}\.{minor}\); the device API needs ROCm >= 6"):
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
        _not_here("the ROCm 5 HIP runtime (setup.sh installs it where no ROCm >= 6 is)",
                  f"the installed HIP runtime is not ROCm 5 (hipRuntimeGetVersion: {err.name}, {runtime})")
    monkeypatch.setattr(hipdev, "device_count", lambda: 1)
    with pytest.raises(DeviceUnavailable, match=rf"found 1 AMD GPU\(s\), but the HIP runtime is version {runtime} \(ROCm 5\."):
        hipdev.HipDevice(0)


def _sysfs(root, entries) -> None:
    for i, (level, typ, size) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{typ}\n")
        (d / "size").write_text(f"{size}\n")


def test_read_llc_picks_the_largest_data_cache_of_the_highest_level(tmp_path) -> None:
    _sysfs(tmp_path / "a", [(1, "Data", "32K"), (1, "Instruction", "64K")])  # an instruction cache never counts
    assert read_llc(tmp_path / "a") == (32 << 10, f"sysfs L1 {tmp_path / 'a' / 'index0'}/size")
    _sysfs(tmp_path / "b", [(2, "Unified", "1M"), (3, "Unified", "8M"), (3, "Unified", "16M")])
    assert read_llc(tmp_path / "b")[0] == 16 << 20
    _sysfs(tmp_path / "c", [(3, "Unified", "16M"), (3, "Unified", "8M"), (2, "Unified", "1M")])
    assert read_llc(tmp_path / "c")[0] == 16 << 20
    (tmp_path / "empty").mkdir()
    llc, src = read_llc(tmp_path / "empty")
    assert llc == 32 << 20 and src.startswith("default 32 MiB")


def test_host_memory_and_copies_are_bounded() -> None:
    from hipexplore.errors import DeviceError

    dev = HostDevice()
    free, total = dev.memory_info()
    fields = dict(line.split(":", 1) for line in open("/proc/meminfo").read().splitlines())
    assert total == int(fields["MemTotal"].split()[0]) * 1024 and 0 < free < total
    buf = dev.alloc(4096)
    with pytest.raises(ConfigError, match="does not fit the 4096 B buffer"):
        dev.copy_to_device(buf, np.zeros(4097, dtype=np.uint8))
    with pytest.raises(ConfigError, match="C-contiguous"):
        dev.copy_to_host(buf, np.zeros((16, 16), dtype=np.float32)[:, ::2])
    with pytest.raises(ConfigError, match="at most 4096 B"):
        dev.copy_to_host(buf, np.zeros(4097, dtype=np.uint8))
    start, end = dev.event(), dev.event()
    dev.record(start)
    with pytest.raises(DeviceError, match="never recorded"):
        dev.elapsed_s(start, end)


def test_gpu_index_checks_flush_modes_and_runtime_errors() -> None:
    from hipexplore.devices.gpu import GpuDeviceBase, check_call
    from hipexplore.errors import DeviceError

    check = GpuDeviceBase._check_index
    check("CUDA", 2, 1, "none")
    with pytest.raises(DeviceUnavailable, match=r"^CUDA: the driver reports 0 devices$"):
        check("CUDA", 0, 0, "the driver reports 0 devices")
    for bad in (2, -1):
        with pytest.raises(DeviceUnavailable, match=rf"device index {bad} requested but only 2 device\(s\) present \(0\.\.1\)"):
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


def test_peak_table_matches_names_by_case_insensitive_substring() -> None:
    assert peak_from_table("NVIDIA H200 NVL")[0] == 4800.0
    assert peak_from_table("nvidia h100 sxm5 80gb")[0] == 3350.0
    assert peak_from_table("NVIDIA A100-SXM4-80GB")[0] == 2039.0  # the specific entry before the generic 'A100'
    assert peak_from_table("AMD Instinct MI250X / MI250")[0] == 3277.0


def test_host_arrays_are_filled_as_their_init_says() -> None:
    from hipexplore.devices.base import fill_host_array
    from hipexplore.errors import BenchmarkError

    rng = np.random.default_rng(0)
    f = np.empty(100_000, dtype=np.float32)
    fill_host_array(f, "random", rng)
    assert 0.5 <= f.min() < 0.51 and 1.49 < f.max() < 1.5  # uniform in [0.5, 1.5): never near zero
    i = np.empty(10_000, dtype=np.int32)
    fill_host_array(i, "random", rng)
    assert i.min() == 0 and i.max() == 99
    for init, value in (("zeros", 0.0), ("ones", 1.0), (2.5, 2.5), ("-3", -3.0)):
        fill_host_array(f, init, rng)
        assert (f == value).all()
    with pytest.raises(BenchmarkError, match="'lots'"):
        fill_host_array(f, "lots", rng)


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


# --- capabilities are members of the device base: an answer, or one refusal line -----------------

def _one_line_refusal(call, *words: str) -> str:
    with pytest.raises(UnsupportedOperation) as info:
        call()
    text = str(info.value)
    assert "\n" not in text and all(w in text for w in words), text
    return text


def test_host_compute_units_and_memory_are_what_the_os_reports() -> None:
    import os

    dev = HostDevice()
    assert dev.compute_units == os.cpu_count() == dev.properties.compute_units
    free, total = dev.memory_info()
    assert total == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")  # MemTotal, read another way
    assert 0 < free <= total and dev.properties.total_bytes == total


def test_host_memset_sets_every_byte_of_the_buffer_only() -> None:
    dev = HostDevice()
    buf = dev.alloc(4096)
    dev.copy_to_device(buf, np.full(4096, 1, dtype=np.uint8))
    dev.memset(buf, 7)
    out = np.zeros(4096, dtype=np.uint8)
    dev.copy_to_host(buf, out)
    assert (out == 7).all()
    dev.memset(buf)
    dev.copy_to_host(buf, out)
    assert not out.any()
    dev.free(buf)
    with pytest.raises(DeviceError, match="already freed"):
        dev.memset(buf, 1)


def test_host_fresh_places_the_same_kernel_at_another_address(need_host_cc, tmp_path) -> None:
    """``fresh()``: a device with this one's settings and nothing loaded, so a sweep's next unit
    loads its library anew (the code lands elsewhere; bench.units relies on it)."""
    from hipexplore.compile.cache import CompileCache

    dev = HostDevice(llc_bytes=5 << 20)
    dev.cache = CompileCache(disk_dir=tmp_path)
    other = dev.fresh()
    other.cache = dev.cache
    assert type(other) is HostDevice and other is not dev
    assert (other.llc_bytes, other.llc_source, other.llc_override) == (dev.llc_bytes, dev.llc_source, 5 << 20)
    here, there = kernel_for(dev, "triad"), kernel_for(other, "triad")
    assert ctypes.cast(here, ctypes.c_void_p).value != ctypes.cast(there, ctypes.c_void_p).value
    dev.close(), other.close()


def test_host_refuses_dynamic_shared_memory_in_one_line() -> None:
    _one_line_refusal(lambda: HostDevice().set_max_dynamic_shared(object(), 64 << 10), "host device", "65536")


def test_the_device_base_refuses_what_it_cannot_know() -> None:
    """A backend deriving ``DeviceBase`` that reads nothing: every capability refuses in one line
    naming the device (no 132-SM or 16-GiB stand-in); ``fresh`` is itself, ``llc_override`` None."""
    from hipexplore.devices.base import DeviceBase, DeviceBuffer

    class Bare(DeviceBase):
        kind = "bare"

    dev = Bare()
    _one_line_refusal(lambda: dev.compute_units, "bare device", "compute-unit")
    _one_line_refusal(dev.memory_info, "bare device", "memory")
    _one_line_refusal(lambda: dev.memset(DeviceBuffer(0, 16, "bare")), "bare device", "memset")
    _one_line_refusal(lambda: dev.set_max_dynamic_shared(None, 1024), "bare device", "1024")
    _one_line_refusal(lambda: dev.llc_bytes, "bare device", "llc_bytes=")
    assert dev.fresh() is dev and dev.llc_override is None and dev.llc_source.startswith("none")
    assert isinstance(UnsupportedOperation("x"), ConfigError)  # the CLI's one line, exit 2


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


def test_compute_units_reach_the_launch_geometry() -> None:
    """A grid-stride launch scales with the device's own count (no stand-in when a device has none:
    it refuses); without a device (a size check) it is one compute unit."""
    from hipexplore.devices.base import DeviceBase

    class Bare(DeviceBase):
        kind = "bare"

    triad = catalog.get("triad")
    host = HostDevice()
    assert triad.geometry(1 << 30, host)[0][0] == 4 * host.compute_units
    assert triad.geometry(1 << 30, None)[0][0] == 4
    _one_line_refusal(lambda: triad.geometry(1 << 30, Bare()), "bare device", "compute-unit")


#: probes in the files the pipeline rewrite owns, replaced when it merges (each by the member named
#: in the comment); no file may gain one, and no other file may have any
PENDING_PROBES: set[tuple[str, str]] = set()  # every probe is a member now


def _probes(source: str) -> list[tuple[str, int]]:
    """(member, line) of every ``getattr``/``hasattr`` on a device-named object for a Device member."""
    import ast

    from hipexplore.devices.base import Device, DeviceBase

    members = {n for n in (*vars(Device), *vars(DeviceBase)) if not n.startswith("__")} | {"kind", "index"}
    return [(node.args[1].value, node.lineno) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in members
            and "dev" in ast.unparse(node.args[0])]


def test_no_getattr_or_hasattr_probes_a_device_for_its_members() -> None:
    """Every ``Device`` member is answered by the device (or refused); a ``getattr(device, "x", d)``
    or ``hasattr(device, "x")`` in the library is a second answer, usually one GPU's figure."""
    from pathlib import Path

    assert sorted(_probes('n = int(getattr(dev, "compute_units", 0) or 132)\nok = hasattr(self.device, "memset")')) == [
        ("compute_units", 1), ("memset", 2)]
    repo = Path(__file__).resolve().parents[2]
    found = {(str(path.relative_to(repo)), member, line) for path in sorted((repo / "hipexplore").rglob("*.py"))
             for member, line in _probes(path.read_text())}
    assert {(f, m) for f, m, _ in found} <= PENDING_PROBES, sorted(found)
