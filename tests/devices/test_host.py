"""``hipexplore.devices.host``: the CPU as a device: its properties, LLC (sysfs, an argument, the
environment), memory and copies bounded, C kernels through ctypes end to end, a timed-out hold
counted, a fresh device placing the same kernel elsewhere, and what it refuses in one line."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from hipexplore.devices import get_device
from hipexplore.devices.host import HostDevice, parse_size, read_llc
from hipexplore.errors import ConfigError, DeviceError, UnsupportedOperation
from hipexplore.kernels import catalog
from hipexplore.kernels.build import kernel_for

from devices.test_devices import _one_line_refusal


def test_host_properties_and_llc_from_sysfs(tmp_path) -> None:
    dev = HostDevice()
    props = dev.properties
    assert props.kind == "host" and props.target == "host" and props.compiler == "host"
    assert props.llc_bytes > 0 and props.llc_source
    free, total = dev.memory_info()
    assert 0 < free <= total
    # a fake sysfs tree: the highest level wins, instruction caches are ignored
    for i, (level, typ, size) in enumerate(
        [(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"), (3, "Unified", "8M")]
    ):
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


def test_host_device_satisfies_the_protocol() -> None:
    from hipexplore.devices import Device

    assert isinstance(HostDevice(), Device)


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
        assert noted == (
            [
                f"stream hold timed out in {timeouts} chunk(s): those samples were discarded and measured again "
                "with fewer launches per hold"
            ]
            if timeouts
            else []
        )


def test_host_llc_override_by_argument_and_environment(monkeypatch) -> None:
    sysfs_llc, _src = read_llc()
    monkeypatch.delenv("HIPEXPLORE_LLC_BYTES", raising=False)
    dev = HostDevice()
    assert (dev.llc_bytes, dev.llc_source, dev.llc_override) == (sysfs_llc, _src, None)
    monkeypatch.setenv("HIPEXPLORE_LLC_BYTES", "7340032")
    dev = HostDevice()
    assert (
        dev.llc_bytes == 7 << 20
        and dev.llc_source == f"override (HIPEXPLORE_LLC_BYTES; reported {sysfs_llc} B: {_src})"
    )
    assert dev.properties.llc_bytes == 7 << 20 and dev.llc_override == 7 << 20
    dev = HostDevice(llc_bytes=3 << 20)  # the argument wins over the environment
    assert dev.llc_bytes == 3 << 20 and dev.llc_source.startswith("override (llc_bytes argument; reported ")
    assert dev.llc_override == 3 << 20 and dev.fresh().llc_override == 3 << 20
    assert get_device("host").llc_bytes == 7 << 20 and get_device("host", llc_bytes=1 << 20).llc_bytes == 1 << 20


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
