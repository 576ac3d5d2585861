"""The flush vocabulary (bench.flush) and the configuration's columns (schema.Configuration):
one place each, asked rather than compared."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from hipexplore.bench import flush as fl
from hipexplore.bench.spec import SweepSpec
from hipexplore.devices.host import HostDevice
from hipexplore.errors import ConfigError, UnsupportedOperation
from hipexplore.schema import COLD_REFERENCE, Configuration

PACKAGE = Path(__file__).resolve().parents[2] / "hipexplore"


def test_every_mode_is_an_object_found_by_its_name_and_an_unknown_name_is_one_line():
    assert fl.FLUSH_MODES == ("none", "l2-write", "l2-read", "icache", "inline-icache")
    assert all(fl.flush_mode(m.name) is m and str(m) == m.name for m in fl.MODES)
    assert fl.flush_mode(fl.L2_READ) is fl.L2_READ and fl.REFERENCE is fl.L2_READ
    with pytest.raises(ConfigError, match=r"flush mode 'l3-write' is unknown; expected one of none, l2-write"):
        fl.flush_mode("l3-write")
    with pytest.raises(ConfigError, match="'l3-write' is unknown"):
        SweepSpec(flush=("none", "l3-write"))
    assert SweepSpec(flush=(fl.L2_READ, "none")).flush == ("l2-read", "none")  # a spec keeps names: it pickles


def test_what_a_mode_is_is_its_own_attributes():
    assert [m.name for m in fl.MODES if m.transforms_kernel] == ["inline-icache"]
    assert [m.name for m in fl.MODES if m.icache] == ["icache", "inline-icache"]
    assert [m.name for m in fl.MODES if not m.measures("in-kernel")] == ["inline-icache"]
    assert all(m.measures("events") for m in fl.MODES)
    assert [m.name for m in fl.MODES if m.note] == ["inline-icache"]
    assert (
        fl.NONE.nbytes(1 << 20) == 0
        and fl.L2_WRITE.nbytes(1 << 20) == 2 << 20
        and fl.L2_READ.nbytes(1 << 20) == 4 << 20
    )


def test_which_devices_support_a_mode_follows_what_the_device_declares():
    host = HostDevice()
    try:
        assert not host.instruction_cache_flush
        assert [m.name for m in fl.supported_modes(host)] == ["none", "l2-write", "l2-read"]
        with pytest.raises(UnsupportedOperation, match="'icache' is not available on host device"):
            fl.check_flush_mode(host, "icache")

        class Amd(HostDevice):
            instruction_cache_flush = True

        amd = Amd()
        try:
            assert fl.supported_modes(amd) == fl.MODES
            assert fl.make_flusher(amd, "inline-icache") is None  # compiled into the kernel: nothing launched
        finally:
            amd.close()
    finally:
        host.close()


#: a flush name compared as a string (== / != / in a literal tuple) outside the vocabulary
#: ("none" only next to a flush: it names other things too, a GEMM epilogue for one)
_NAMES = "|".join(re.escape(n) for n in fl.FLUSH_MODES if n != "none")
_COMPARED = re.compile(
    rf"""(==|!=)\s*["'](?:{_NAMES})["']|["'](?:{_NAMES})["']\s*(==|!=)|in\s*\(\s*["'](?:{_NAMES})["']"""
    rf"""|flush\w*["'\]]*\s*(==|!=)\s*["']none["']|["']none["']\s*(==|!=)\s*\w*flush"""
)


def test_no_flush_mode_is_compared_as_a_string_outside_the_vocabulary():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "bench" / "flush.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if _COMPARED.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{i}: {line.strip()}")
    assert not found, "\n".join(found)


def test_no_configuration_column_list_outside_configuration():
    # the key spelled out: (kernel,) size, rotating as requested (, flush, timer); frame schemas that
    # merely list these columns among others (schema's SAMPLE/SUMMARY columns) are not a key
    spelled = re.compile(
        r"""["']size_bytes["']\s*,\s*["']rotating_requested["']|["']rotating_requested["']\s*,\s*["']flush["']\s*,\s*["']timer["']"""
        r"""|\[["']problem["']\s*,\s*["']rotating_requested["']"""
    )
    found = [
        f"{p.relative_to(PACKAGE)}:{i}"
        for p in PACKAGE.rglob("*.py")
        if p != PACKAGE / "schema.py"
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if spelled.search(line)
    ]
    assert not found, found


def test_a_configuration_reads_and_writes_its_own_columns_and_rotating_key():
    c = Configuration("triad", 4096, "auto", "l2-read")
    frame = pd.DataFrame(
        [
            {**c.columns(), "rotating": 6, "median_s": 1.0},
            {**c._replace(size=8192).columns(), "rotating": 12, "median_s": 2.0},
        ]
    )
    assert Configuration.of_frame(frame) == [c, c._replace(size=8192)]
    assert list(Configuration.select(frame, [c])["median_s"]) == [1.0]
    assert list(Configuration.select(frame, [c], keep=False)["median_s"]) == [2.0]
    assert list(Configuration.rotating_of(frame)) == ["auto", "auto"]  # the key is the request, not the planned count
    assert list(Configuration.rotating_of(frame.drop(columns=["rotating_requested"]))) == ["6", "12"]
    assert c.reference() == Configuration("triad", 4096, "1", COLD_REFERENCE) and c.reference().is_reference
    assert c.reference_key == ("triad", 4096, "events")
