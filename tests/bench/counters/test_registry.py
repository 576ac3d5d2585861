"""``hipexplore.bench.counters.registry``: counter backends by name, the one a device gets, and a
backend rebuilt from the description it recorded (to parse its output again)."""

from __future__ import annotations

import pytest

from conftest import require_compiler
from hipexplore.bench.counters.backends import HostBackend
from hipexplore.bench.counters.ncu import NcuBackend
from hipexplore.bench.counters.registry import backend_for, backend_named, from_description
from hipexplore.bench.counters.rocprof import RocprofBackend
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError


def test_backends_by_name_and_an_unknown_name_in_one_line() -> None:
    assert isinstance(backend_named("ncu"), NcuBackend) and isinstance(backend_named("rocprofv3"), RocprofBackend)
    assert isinstance(backend_named("host"), HostBackend)
    assert backend_named("cupti").name == "cupti"
    with pytest.raises(
        ConfigError, match="counter backend 'nvprof' is unknown; expected cupti, ncu, rocprofv3 or host"
    ):
        backend_named("nvprof")


def test_the_host_device_gets_the_host_backend_unless_one_is_named() -> None:
    require_compiler("host")
    dev = HostDevice()
    assert isinstance(backend_for(dev), HostBackend)
    assert isinstance(backend_for(dev, "ncu"), NcuBackend)


def test_a_recorded_description_gives_the_backend_back(tmp_path) -> None:
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    whole = from_description(NcuBackend(ncu=str(tmp_path / "none"), profiler_range=False).describe())
    assert (whole.profiler_range, whole.marker, whole.captures_warmup) == (False, "none", True)
    be = NcuBackend(ncu=str(fake))
    again = from_description(NcuBackend(ncu=str(fake), replay="application").describe())
    assert again.replay == "application" and again.groups(None) == be.groups(None)
    one = from_description(NcuBackend(ncu=str(fake), metrics=("dram__bytes_read.sum",)).describe())
    assert one.metrics == ("dram__bytes_read.sum",) and one.groups(None) == [("dram__bytes_read.sum",)]
    assert isinstance(from_description({"name": "host"}), HostBackend)
    with pytest.raises(ConfigError, match="counter backend '' is unknown"):
        from_description({})
