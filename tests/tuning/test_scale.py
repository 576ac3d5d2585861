"""The tuning replay at scale (issue #28; two workers over the Redis tier: test_cluster.py):
``benchmarks/tuning_scale.py`` runs its steps end to end
(small, with the host compiler) and writes what the report reads; the done-when summary is
computed from the measured numbers."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[2]


def _scale_module():
    spec = importlib.util.spec_from_file_location("tuning_scale", ROOT / "benchmarks" / "tuning_scale.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tuning_scale"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tuning_scale_runs_its_steps_and_the_report_reads_them(tmp_path, redis_server):
    """serial, second-run (fresh processes over a warm directory and a warm Redis tier), on a
    small selection with the host compiler; then the report's replay panel from the folder."""
    from conftest import require_compiler

    require_compiler("host")
    mod = _scale_module()
    out = tmp_path / "scale"
    rc = mod.main(
        [
            "--out",
            str(out),
            "--lists",
            "resnet50",
            "--compilers",
            "host:host",
            "--steps",
            "serial,second-run",
            "--problems",
            "b1.layer3.0.conv2,b16.fc",
            "--limit",
            "4",
            "--redis",
            redis_server.url,
        ]
    )
    assert rc == 0, (out / "log.txt").read_text()
    summary = json.loads((out / "summary.json").read_text())
    res = summary["results"]
    serial = res["serial__resnet50__host-host__j1"]
    d = serial["derived"]
    assert d["floor_above_a_pass"] == [] and d["floor_s"] <= min(d["memory_s"], d["ideal_s"], d["off_s"])
    sec = res["second-run__resnet50__host-host__j1"]
    cold, warm, redis = (sec["runs"][k] for k in ("cold", "warm-disk", "warm-redis-empty-disk"))
    assert cold["compiles"] == cold["unique_kernels"] and warm["compiles"] == 0 and redis["compiles"] == 0
    assert warm["disk_hits"] == cold["unique_kernels"] and redis["remote_hits"] == cold["unique_kernels"]
    assert warm["pass"] == "disk" and set(sec["warm_vs_cold"]) == {"warm-disk", "warm-redis-empty-disk"}
    dw = summary["done_when"]
    assert dw["memory_vs_ideal"]["rows"][0]["jobs"] == 1
    assert dw["speedups_beside_the_seed"][0]["seed_speedup"] == pytest.approx(369.789 / 117.274)
    assert summary["scale"]["limit"] == 4 and summary["provenance"]["git_revision"]
    # the report's panel from the recorded serial frame: the list's name and the floor under the curve
    from hipexplore.report.replay import replay_data
    from hipexplore.report.review import ideal_floor

    data = replay_data(str(out / serial["frame"]), compiler="host", target="host")
    assert data.list_name == "resnet50" and data.primary == "memory" and data.baseline is not None
    assert ideal_floor(data) <= float(data.events["lookup_seconds"].sum())
    # --bundle packs the frames for a machine that returns few files
    tar = mod.bundle(out)
    assert tar.name == "frames.tar" and not list(out.glob("*.parquet"))
    assert {p.name for p in out.iterdir()} == {"summary.json", "log.txt", "frames.tar"}


def test_done_when_reads_the_numbers_it_is_given():
    mod = _scale_module()
    results = {
        "serial__l__c-t__j1": {
            "list": "l",
            "compiler": "c",
            "target": "t",
            "jobs": 1,
            "kernels": 1200,
            "derived": {
                "off_s": 320.0,
                "memory_s": 110.0,
                "ideal_s": 108.0,
                "memory_vs_ideal": 110 / 108,
                "memory_vs_floor": 1.05,
                "off_vs_memory": 320 / 110,
            },
        },
        "parallel__l__c-t__j16": {
            "list": "l",
            "compiler": "c",
            "target": "t",
            "jobs": 16,
            "kernels": 1200,
            "derived": {
                "off_s": 25.0,
                "memory_s": 9.6,
                "ideal_s": 9.0,
                "memory_vs_ideal": 9.6 / 9.0,
                "memory_vs_floor": 1.1,
                "off_vs_memory": 25 / 9.6,
            },
        },
        "estimate__m__c-t__j16": {
            "list": "m",
            "compiler": "c",
            "target": "t",
            "kernels": 1100,
            "j1": {"extrapolated_off_s": 900.0},
        },
        "second-run__l__c-t__j1": {"warm_vs_cold": {"warm-disk": 0.01, "warm-redis-empty-disk": 0.03}},
        "cluster__l__c-t__j2": {
            "derived": {
                "each_unique_once": True,
                "cold_compiles": 5,
                "unique_kernels": 5,
                "workers_used": {"a": 3, "b": 2},
            }
        },
    }
    dw = mod.done_when(results)
    assert dw["off_serial_ge_300s"]["l"]["met_measured"] and not dw["off_serial_ge_300s"]["m"]["met_measured"]
    assert dw["off_serial_ge_300s"]["m"]["met_extrapolated"]
    assert dw["memory_vs_ideal"]["met_1job"] == [True] and dw["memory_vs_ideal"]["met_16jobs"] == [False]
    assert dw["warm_second_run_le_2pct"]["met"] == {"second-run__l__c-t__j1": False}
    assert dw["cluster_each_unique_once"]["cluster__l__c-t__j2"]["met"]
    assert [s["seed_speedup"] for s in dw["speedups_beside_the_seed"]] == [
        pytest.approx(3.153, abs=1e-3),
        pytest.approx(2.708, abs=1e-3),
    ]
