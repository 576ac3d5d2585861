"""What a unit measured with (bench.measured): ``MeasuredInfo``, the typed report a unit sends through its
channel, written as the registry's text, read back exactly across a worker's frames, merged into the
run's as each unit reports it, and (a cluster) what a unit adds to what the run knows."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from hipexplore.bench.measured import MeasuredInfo


def _initialized() -> MeasuredInfo:
    telemetry = SimpleNamespace(source="sysfs cpufreq (max 1980 MHz)", max_clock_mhz=1980.0)
    device = SimpleNamespace(llc_bytes=62914560, llc_source="CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE")
    return MeasuredInfo.initialized(telemetry, {"none": 0, "l2-read": 188743680}, device)


def test_a_report_writes_the_text_the_files_carry_and_reads_back_exactly():
    report = _initialized()
    report.merge(MeasuredInfo.verified("triad", 16384, 1.7234e-08))
    report.merge(MeasuredInfo(floors={"none": 2.5923e-06}, pools={16384: True}, worker_pad_bytes=3211264))
    flat = report.entries()
    assert flat == {
        "telemetry.source": "sysfs cpufreq (max 1980 MHz)",
        "telemetry.max_clock_mhz": "1980",
        "flush.none.bytes": "0",
        "flush.l2-read.bytes": "188743680",
        "device.llc_bytes": "62914560",
        "device.llc_source": "CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE",
        "verify.triad.16384": "rel_l2_error=1.72e-08",
        "floor.none.median_s": "2.5923e-06",
        "interleave.pool.16384": "shared",
        "worker.pad_bytes": "3211264",
    }
    back = MeasuredInfo.of_entries(flat)
    assert back.entries() == flat and back.verify == {"triad.16384": 1.72e-08} and back.pools == {16384: True}
    assert MeasuredInfo().entries() == {} and MeasuredInfo.of_entries({}) == MeasuredInfo()


def test_an_unknown_clock_and_an_unchecked_output_are_nan_both_ways():
    report = MeasuredInfo(telemetry_max_clock_mhz=math.nan, verify={"k.1": math.nan})
    flat = report.entries()
    assert flat == {"telemetry.max_clock_mhz": "nan", "verify.k.1": "rel_l2_error=nan"}
    back = MeasuredInfo.of_entries(flat)
    assert math.isnan(back.telemetry_max_clock_mhz) and math.isnan(back.verify["k.1"])


@pytest.mark.parametrize(
    "entries, why",
    [
        ({"run_id": "x"}, "not what a unit reports"),
        ({"identity.triad": "forged"}, "not what a unit reports"),
        ({"flush.a.b.bytes": "1"}, "not what a unit reports"),
        ({"floor.none.median_s": "fast"}, "not how a unit writes it"),
        ({"worker.pad_bytes": "4096.0"}, "not how a unit writes it"),
        ({"interleave.pool.16384": "maybe"}, "not how a unit writes it"),
    ],
)
def test_a_frame_entry_no_unit_writes_is_refused(entries, why):
    """Across a worker's frames a report is read back exactly: a key that is not a unit's, or a value
    its key would not write, is refused (``bench.guard`` turns it into one line)."""
    with pytest.raises(ValueError, match=why):
        MeasuredInfo.of_entries(entries)
    assert MeasuredInfo.reports("warmup.clock") and not MeasuredInfo.reports("sweep.spec")


def test_reports_merge_as_units_send_them_and_a_cluster_unit_adds_only_what_is_new():
    run = _initialized()
    run.merge(MeasuredInfo(warmup_clock="clock stable at 1980 MHz after 0.20 s", verify={"triad.16384": 0.0}))
    run.merge(MeasuredInfo(warmup_clock="again", inputs={0: "drawn 2, mapped 0"}))  # the latest says
    assert run.warmup_clock == "again" and run.inputs == {0: "drawn 2, mapped 0"} and run.llc_bytes == 62914560
    other_worker = MeasuredInfo(
        telemetry_source="another GPU's",
        llc_bytes=1,
        flush_bytes={"none": 0, "l2-write": 5},
        verify={"triad.16384": 1e-9, "copy.16384": 0.0},
        inputs={1: "drawn 0, mapped 2"},
    )
    new = other_worker.new_to(run)
    assert new == MeasuredInfo(
        flush_bytes={"l2-write": 5},
        verify={"triad.16384": 1e-9, "copy.16384": 0.0},
        inputs={1: "drawn 0, mapped 2"},
    )
    run.merge(new)
    assert run.telemetry_source == "sysfs cpufreq (max 1980 MHz)" and run.verify["triad.16384"] == 1e-9
