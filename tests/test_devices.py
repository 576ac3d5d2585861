"""Device backends: selection and absent-device errors, the host backend end to end, argument
marshalling, LLC and peak-bandwidth sources. (CUDA and HIP runtime calls run on the H200 script;
here neither GPU exists, so their absence must be reported clearly.)"""
from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from hipexplore.devices import get_device, parse_device
from hipexplore.devices.base import (
    DeviceBuffer,
    expected_packed,
    pack_args,
    peak_from_clock,
    peak_from_table,
)
from hipexplore.devices.host import HostDevice, parse_size, read_llc
from hipexplore.errors import ConfigError, DeviceUnavailable, UnsupportedOperation
from hipexplore.kernels import catalog


def test_parse_device_and_unknown_kind() -> None:
    assert parse_device("cuda:1") == ("cuda", 1)
    assert parse_device("host") == ("host", 0)
    with pytest.raises(ConfigError, match="'tpu'"):
        get_device("tpu")
    with pytest.raises(ConfigError, match="integer"):
        parse_device("cuda:x")


def test_hip_absent_names_what_was_looked_for() -> None:
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("hip")
    msg = str(exc.value)
    assert "HIP" in msg and ("hipGetDeviceCount" in msg or "hip-python" in msg or "libamdhip64" in msg)


def _gpu_present(kind: str) -> bool:
    try:
        get_device(kind).close()
    except DeviceUnavailable:
        return False
    return True


def test_cuda_absent_names_what_was_looked_for() -> None:
    if _gpu_present("cuda"):
        pytest.skip("an NVIDIA GPU is present here: the absent-device error cannot be produced")
    with pytest.raises(DeviceUnavailable) as exc:
        get_device("cuda")
    assert "CUDA" in str(exc.value)


def test_auto_falls_back_to_host_and_says_why() -> None:
    if _gpu_present("cuda") or _gpu_present("hip"):
        pytest.skip("a GPU is present here: auto does not fall back to the host")
    dev = get_device("auto")
    assert dev.kind == "host"
    reasons = getattr(dev, "auto_reasons")
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
    kernel = dev.compiled_kernel("triad")
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
    hold = dev.hold_stream()
    hold.release()
    assert hold.timed_out() is False
    with pytest.raises(UnsupportedOperation, match="inline-icache"):
        dev.compiled_kernel("triad", inline_icache=True)


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
    try:
        from hipexplore.devices.hip import _hip

        hip = _hip()
    except DeviceUnavailable as exc:
        from conftest import missing

        missing("hip-python", str(exc))
    packed = pack_args(catalog.get("triad").args, {"a": 0x1000, "b": 0x2000, "c": 0x3000, "s": 3.0, "n": 10})
    (err,) = hip.hipModuleLaunchKernel(None, 1, 1, 1, 64, 1, 1, 0, None, packed.address, None)
    assert err != hip.hipError_t.hipSuccess
