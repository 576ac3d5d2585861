"""The bench/ house (issue 24): one Configuration type, one list of which configurations exist, one
TimingOptions value, sweep()/CLI options derived from SweepSpec's fields, and devices that get the
kernels they need for themselves through an explicit argument rather than an import side effect."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest

from hipexplore.bench.cluster import expected_keys, groups_of
from hipexplore.bench.spec import SweepSpec, options
from hipexplore.bench.sweep import sweep
from hipexplore.errors import ConfigError
from hipexplore.schema import COLD_REFERENCE, Configuration


def test_configurations_own_the_inline_icache_rule_so_the_total_is_what_is_measured():
    spec = SweepSpec(
        kernels=("triad", "copy"),
        sizes=(4096,),
        rotating=(1, "auto"),
        flush=("none", "inline-icache"),
        timers=("events", "in-kernel"),
    )
    confs = spec.configurations()
    # per kernel: 2 rotating x (2 flush x 2 timers - the inline-icache in-kernel pair) + a reference per timer
    assert len(confs) == 2 * (2 * (2 * 2 - 1) + 2) == 16
    assert not any(c.flush == "inline-icache" and c.timer == "in-kernel" for c in confs)
    assert len(set(confs)) == len(confs) and all(isinstance(c, Configuration) for c in confs)
    assert set().union(*(expected_keys(g) for g in groups_of(spec))) == set(confs)  # the cluster counts the same
    assert [c for c in confs if c.is_reference] == [
        Configuration(k, 4096, "1", COLD_REFERENCE, t) for k in ("triad", "copy") for t in ("events", "in-kernel")
    ]


def test_a_configuration_is_the_tuple_a_row_spells():
    c = Configuration("triad", 4096, "auto", "l2-read", "events")
    assert c == ("triad", 4096, "auto", "l2-read", "events") and hash(c) == hash(tuple(c))
    assert (
        Configuration.of({"kernel": "triad", "size_bytes": 4096, "rotating_requested": "auto", "flush": "l2-read"}) == c
    )
    import pandas as pd

    frame = pd.DataFrame([{"kernel": "triad", "size_bytes": 4096, "rotating_requested": "auto", "flush": "l2-read"}])
    assert Configuration.of_frame(frame) == [c]  # an old file without a timer column: events
    assert (
        c.describe() == "size=4096 rotating=auto flush=l2-read"
        and "timer=in-kernel" in c._replace(timer="in-kernel").describe()
    )
    assert sorted([c._replace(size=8192), c]) == [c, c._replace(size=8192)]  # ordered


def test_sweep_and_the_cli_offer_every_spec_option_under_its_own_name_and_default():
    params = inspect.signature(sweep).parameters
    for f in options():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        assert params[f.name].default == default, f.name
    helptext = subprocess.run(
        [sys.executable, "-m", "hipexplore", "bench", "--help"], capture_output=True, text=True
    ).stdout
    for f in options():
        assert f"--{f.name.replace('_', '-')}" in helptext, f.name
    assert "--no-drop-throttled" in helptext and "--no-reference" in helptext
    with pytest.raises(ConfigError, match="unknown sweep option.*verfy"):
        sweep("triad", device="host", verfy=False)
    # a misspelt keyword of the call itself (not a spec field) is named beside the call's own keywords
    with pytest.raises(ConfigError, match=r"unknown sweep option\(s\) progres;.* progress,.* worker") as err:
        sweep("triad", device="host", progres=False)
    assert "\n" not in str(err.value)


def test_a_cli_option_reaches_the_recorded_spec_by_its_field_name(tmp_path):
    from hipexplore.cli import main

    out = tmp_path / "o.parquet"
    assert (
        main(
            [
                "bench",
                "triad",
                "--device",
                "host",
                "--size",
                "4KiB",
                "--iterations",
                "4",
                "--no-reference",
                "--no-progress",
                "--json",
                "--no-drop-throttled",
                "--interleave-seed",
                "5",
                "--reference-parts",
                "2",
                "--units",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rec = json.loads(json.loads((tmp_path / "o.meta.json").read_text())["sweep.spec"])
    assert (rec["drop_throttled"], rec["interleave_seed"], rec["reference_parts"], rec["reference"]) == (
        False,
        5,
        2,
        False,
    )


def test_devices_build_their_own_kernels_only_with_the_builder_they_are_given():
    """The device floor imports nothing of the kernel catalog: a host device is made, held and
    released without ``hipexplore.kernels`` ever being imported, and the spin kernel of a GPU hold
    comes from the ``kernels=`` argument (``bench.timing`` passes ``kernels.build.BUILDER``)."""
    code = (
        "import sys\n"
        "from hipexplore.devices.host import HostDevice\n"
        "d = HostDevice()\n"
        "d.hold_stream(1.0).release()\n"
        "print(sorted(m for m in sys.modules if m.startswith('hipexplore.kernels')))\n"
    )
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "[]"
    from hipexplore.devices.gpu import GpuDeviceBase

    assert "kernels" in inspect.signature(GpuDeviceBase.hold_stream).parameters
    from hipexplore.devices import base

    assert not hasattr(base, "install_kernel_builder") and not hasattr(base.DeviceBase, "compiled_kernel")
