"""``hipexplore.devices.base``: the Device protocol and its base: argument marshalling byte for
byte, peak bandwidth from the clock or the table, host arrays filled as their init says, every
capability a member (answered or refused in one line; no probe of a device by getattr/hasattr),
and compute units reaching a launch's geometry."""

from __future__ import annotations

import ctypes
import struct

import numpy as np
import pytest

from hipexplore.devices.base import DeviceBuffer, expected_packed, pack_args, peak_from_clock, peak_from_table
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError, UnsupportedOperation
from hipexplore.kernels import catalog

from devices.test_devices import _one_line_refusal


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


def test_peak_bandwidth_sources() -> None:
    # H200: 3201 MHz x 6016-bit (what the driver reported on our H200) -> ~4.81 TB/s
    assert peak_from_clock(3_201_000, 6016) == pytest.approx(4814.3, rel=1e-4)
    gbs, src = peak_from_table("AMD Instinct MI300X")
    assert gbs == 5300.0 and "table" in src
    gbs, src = peak_from_table("Mystery GPU")
    assert np.isnan(gbs) and "unknown" in src


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


def _probes(source: str) -> list[tuple[str, int]]:
    """(member, line) of every ``getattr``/``hasattr`` on a device-named object for a Device member."""
    import ast

    from hipexplore.devices.base import Device, DeviceBase

    members = {n for n in (*vars(Device), *vars(DeviceBase)) if not n.startswith("__")} | {"kind", "index"}
    return [
        (node.args[1].value, node.lineno)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in members
        and "dev" in ast.unparse(node.args[0])
    ]


def test_no_getattr_or_hasattr_probes_a_device_for_its_members() -> None:
    """Every ``Device`` member is answered by the device (or refused); a ``getattr(device, "x", d)``
    or ``hasattr(device, "x")`` in the library is a second answer, usually one GPU's figure."""
    from pathlib import Path

    assert sorted(_probes('n = int(getattr(dev, "compute_units", 0) or 132)\nok = hasattr(self.device, "memset")')) == [
        ("compute_units", 1),
        ("memset", 2),
    ]
    repo = Path(__file__).resolve().parents[2]
    found = {
        (str(path.relative_to(repo)), member, line)
        for path in sorted((repo / "hipexplore").rglob("*.py"))
        for member, line in _probes(path.read_text())
    }
    assert {(f, m) for f, m, _ in found} <= PENDING_PROBES, sorted(found)


#: probes in the files the pipeline rewrite owns, replaced when it merges (each by the member named
#: in the comment); no file may gain one, and no other file may have any
PENDING_PROBES: set[tuple[str, str]] = set()  # every probe is a member now
