"""A ``ConfigurationResult`` made by hand, for the tests of what carries one (the wire, the guard,
the cluster's result): every sample column of its declared type, the parts' fields of theirs."""

from __future__ import annotations

import dataclasses

import numpy as np

from hipexplore.bench import wire
from hipexplore.bench.outcome import (
    Bias,
    ConfigurationResult,
    Floor,
    Identity,
    Placement,
    Rotation,
    RunSummary,
    Samples,
    Statistics,
)
from hipexplore.schema import Configuration


def samples(c: Configuration, run_id: str, n: int = 4, cluster: bool = False, **over: str) -> Samples:
    types = wire.CLUSTER_SAMPLE_TYPES if cluster else wire.SAMPLE_TYPES
    text = {
        **c.columns(),
        "run_id": run_id,
        "device": "host:0",
        "device_name": "cpu",
        "worker": "tls://w:1",
        "host": "h",
        "gpu": "0",
        **over,
    }

    def column(name: str, t: str) -> np.ndarray:
        if t == wire.TEXT:
            return np.array([text[name]] * n, dtype=object)
        if t == wire.INT:
            return np.full(n, c.size, dtype=np.int64) if name == "size_bytes" else np.arange(n, dtype=np.int64)
        return np.arange(n) % 2 == 0 if t == wire.BOOL else np.linspace(0.5e-6, 1.5e-6, n)

    return Samples({k: column(k, t) for k, t in types.items()})


def result(
    c: Configuration, run_id: str = "run0001", n: int = 4, *, cluster: bool = False, unit: int = 0, **over: str
) -> ConfigurationResult:
    s = samples(c, run_id, n, cluster, **over)
    parts = (
        Statistics(n, 1e-6, 1e-6, 0.5e-6, 0.5e-6, 1.5e-6, 0.1, 0.2, 0.9e-6, 1.1e-6, 0, float("nan")),
        RunSummary(1, "fixed iteration count", False, 0, float("nan"), 12.5, float("nan")),
    )
    r = ConfigurationResult(
        c,
        unit,
        Identity(run_id, "host:0", "cpu"),
        Rotation(c.rotating, 1, 1 << 30, 3 << 14),
        s,
        s.measurement(),
        Floor(),
        Bias(),
        parts,
        "noisy",
    )
    return r.with_summary(Placement("tls://w:1", "h", "0")) if cluster else r


def but(r: ConfigurationResult, **changes: object) -> ConfigurationResult:
    return dataclasses.replace(r, **changes)
