"""``hipexplore.bench.grouping``: configurations are compared only on one device kind. Frames of
known rows: the kinds counted, a frame of several refused naming two of them, split per kind, and
workers of one kind laid side by side (``per_gpu``) with whether their intervals agree. (Cluster
sweeps that produce such frames: tests/bench/test_cluster.py.)"""

from __future__ import annotations

import pandas as pd
import pytest

from hipexplore.bench.grouping import by_device, check_one_device, device_names, per_gpu
from hipexplore.errors import ConfigError


def rows(device: str, gpu: str, median: float, half: float, rotating: str = "1") -> dict:
    return {
        "kernel": "triad",
        "size_bytes": 65536,
        "rotating_requested": rotating,
        "flush": "none",
        "timer": "events",
        "device_name": device,
        "gpu": gpu,
        "median_s": median,
        "ci_low_s": median - half,
        "ci_high_s": median + half,
    }


def test_device_kinds_are_counted_and_a_frame_of_several_is_refused_naming_two():
    frame = pd.DataFrame(
        [
            rows("NVIDIA H200", "0", 1e-6, 1e-8),
            rows("NVIDIA H200", "1", 1e-6, 1e-8),
            rows("AMD MI300X", "0", 2e-6, 1e-8),
            rows("host (x86)", "", 3e-6, 1e-8),
        ]
    )
    assert device_names(frame) == ["NVIDIA H200", "AMD MI300X", "host (x86)"]  # most rows first
    assert device_names(frame.drop(columns="device_name")) == [] and device_names(frame.iloc[:0]) == []
    with pytest.raises(
        ConfigError,
        match=r"^summary holds samples from different device kinds \('NVIDIA H200' and "
        r"'AMD MI300X' and 1 more\); they are not pooled",
    ):
        check_one_device(frame, "summary")
    one = frame[frame["device_name"] == "AMD MI300X"]
    assert check_one_device(one) is one
    split = dict(by_device(frame))
    assert list(split) == ["NVIDIA H200", "AMD MI300X", "host (x86)"] and len(split["NVIDIA H200"]) == 2


def test_workers_of_one_kind_side_by_side_with_whether_their_intervals_agree():
    frame = pd.DataFrame(
        [
            rows("NVIDIA H200", "0", 1.00e-6, 0.02e-6),
            rows("NVIDIA H200", "1", 1.03e-6, 0.02e-6),
            rows("NVIDIA H200", "0", 1.00e-6, 0.01e-6, "2"),
            rows("NVIDIA H200", "1", 1.10e-6, 0.01e-6, "2"),
            rows("AMD MI300X", "0", 2e-6, 1e-8),
        ]
    )  # one worker of its kind: nothing to compare
    got = per_gpu(frame).set_index("rotating_requested")
    assert list(got.index) == ["1", "2"] and (got["gpus"] == 2).all() and set(got["device_name"]) == {"NVIDIA H200"}
    assert got.loc["1", "medians_s"] == {"0": 1.00e-6, "1": 1.03e-6}
    assert got.loc["1", "spread_rel"] == pytest.approx(0.03) and got.loc["2", "spread_rel"] == pytest.approx(0.10)
    assert bool(got.loc["1", "agree"]) and not bool(
        got.loc["2", "agree"]
    )  # [0.98, 1.02] meets [1.01, 1.05]; not [1.09, ...]
    with pytest.raises(ConfigError, match=r"per_gpu needs summary columns \['ci_low_s', 'ci_high_s'\]"):
        per_gpu(frame.drop(columns=["ci_low_s", "ci_high_s"]))
