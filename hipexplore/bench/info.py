"""Typed run metadata: ``RunInfo`` (and its ``UnitsInfo``, ``MeasuredInfo``, ``ClusterInfo``),
serialised once.

Why: a sweep's metadata was a ``dict[str, str]`` of about 40 dotted keys written in 9 modules, with
lists as JSON inside strings and prefixes sliced off by readers. Every key is now spelled here, in
one reader (``RunInfo.from_metadata``) and one writer (``RunInfo.to_metadata``); the rest of the
code sets typed fields. The on-disk format is unchanged (the same flat keys in meta.json and in the
parquet files' metadata), so files written before, and the loaders that read them (``bench.io``,
``report.recorded``, ``benchmarks/figures.py``), read the same; ``to_metadata(from_metadata(m))``
gives ``m`` back, keys no field claims included (``other``).

A unit reports what it measured with through its channel as entries made here
(``MeasuredInfo.entries_*``), so a worker's pipe and a cluster's task carry the same keys.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

#: the prefixes of the typed groups, in the order they are written back
_SPEC_KEYS = ("sweep.kernels", "sweep.sizes", "sweep.rotating", "sweep.flush", "sweep.timers", "sweep.spec")
_SPEC_PREFIXES = ("sweep.", "flush.factor.")
_UNIT_KEYS = {"sweep.unit_pad_bytes": "pad_bytes", "sweep.units_done": "done", "sweep.units_planned": "planned",
              "sweep.unit_location": "location"}


def _ints(text: str) -> list[int]:
    return [int(x) for x in str(text).split(",") if x.strip()]


@dataclass
class UnitsInfo:
    """How a sweep in units ran: units planned (``planned``), the units every configuration has
    (``done``), where they ran (``location``: in-process, worker, cluster), the pad each unit held
    (``pad_bytes``), and per unit how its inputs were made (``inputs``: drawn or mapped)."""

    planned: int = 0
    done: int = 0
    location: str = ""
    pad_bytes: list[int] = field(default_factory=list)
    inputs: dict[int, str] = field(default_factory=dict)

    def entries(self) -> dict[str, str]:
        out = {"sweep.unit_pad_bytes": ",".join(map(str, self.pad_bytes)), "sweep.units_done": str(self.done),
               "sweep.units_planned": str(self.planned), "sweep.unit_location": self.location} if self.planned else {}
        return {**out, **{f"inputs.unit.{k}": v for k, v in sorted(self.inputs.items())}}


@dataclass
class ClusterInfo:
    """A cluster run: the device name each worker opened, the scheduler, its dashboard, the workers
    whose rows are in the result, units re-run after a lost worker (``reruns``), units that never
    finished (``failed``) and, when some did not, why the result is incomplete."""

    device: str = ""
    scheduler: str = ""
    dashboard: str = ""
    workers: list[str] = field(default_factory=list)
    reruns: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    incomplete: str = ""

    def entries(self) -> dict[str, str]:
        out = {"cluster.device": self.device, "cluster.scheduler": self.scheduler, "cluster.dashboard": self.dashboard,
               "cluster.reruns": json.dumps(self.reruns), "cluster.failed": json.dumps(self.failed),
               "cluster.workers": ",".join(self.workers)}
        return {**out, **({"cluster.incomplete": self.incomplete} if self.incomplete else {})}

    @classmethod
    def of(cls, meta: Mapping[str, str]) -> "ClusterInfo":
        def listed(key: str) -> list[Any]:
            try:
                got = json.loads(meta.get(key) or "[]")
            except ValueError:
                return []
            return got if isinstance(got, list) else []

        return cls(meta.get("cluster.device", ""), meta.get("cluster.scheduler", ""), meta.get("cluster.dashboard", ""),
                   [w for w in str(meta.get("cluster.workers", "")).split(",") if w], listed("cluster.reruns"),
                   listed("cluster.failed"), meta.get("cluster.incomplete", ""))

    def shown(self) -> dict[str, Any]:
        """What ``hipexplore bench --json`` prints under ``cluster``."""
        return {k[len("cluster."):]: v for k, v in self.entries().items()}


@dataclass
class MeasuredInfo:
    """What the units measured with: the telemetry, each flush's buffer, the LLC, the clock warm-up,
    each (kernel, size)'s output check, the launch floor per flush, interleaved pools, a worker's pad."""

    telemetry_source: str = ""
    telemetry_max_clock_mhz: str = ""
    flush_bytes: dict[str, int] = field(default_factory=dict)
    llc_bytes: str = ""
    llc_source: str = ""
    warmup_clock: str = ""
    verify: dict[str, str] = field(default_factory=dict)  # "<kernel>.<size>" -> "rel_l2_error=..."
    floors: dict[str, str] = field(default_factory=dict)  # flush -> median seconds
    pools: dict[str, str] = field(default_factory=dict)  # size -> "shared" | "own sets"
    worker_pad_bytes: str = ""

    #: the metadata keys a unit reports (the ``entry_*`` below and ``UnitsInfo``'s inputs): all a
    #: unit measured elsewhere (a sweep worker, a cluster worker) may set in the run's metadata
    #: (``bench.guard``), never the provenance, identities or spec the parent wrote
    UNIT_KEYS = re.compile(r"telemetry\.(source|max_clock_mhz)|flush\.[^.]+\.bytes|device\.llc_(bytes|source)|warmup\.clock"
                           r"|verify\..+|floor\.[^.]+\.median_s|interleave\.pool\..+|worker\.pad_bytes|inputs\.unit\.\d+")

    # -- what a unit sends through its channel ------------------------------------------------------
    @staticmethod
    def entries_initialized(telemetry: Any, flush_bytes: Mapping[str, int], device: Any) -> dict[str, str]:
        return {"telemetry.source": telemetry.source, "telemetry.max_clock_mhz": f"{telemetry.max_clock_mhz:g}",
                **{f"flush.{f}.bytes": str(n) for f, n in flush_bytes.items()},
                "device.llc_bytes": str(device.llc_bytes), "device.llc_source": device.llc_source}

    @staticmethod
    def entry_warmup(what: str) -> dict[str, str]:
        return {"warmup.clock": what}

    @staticmethod
    def entry_verify(kernel: str, size: int, error: float) -> dict[str, str]:
        return {f"verify.{kernel}.{size}": f"rel_l2_error={error:.3g}"}

    @staticmethod
    def entry_floor(flush: str, median_s: float) -> dict[str, str]:
        return {f"floor.{flush}.median_s": f"{median_s:.6g}"}

    @staticmethod
    def entry_pool(size: int, shared: bool) -> dict[str, str]:
        return {f"interleave.pool.{size}": "shared" if shared else "own sets"}

    @staticmethod
    def entry_worker_pad(nbytes: int) -> dict[str, str]:
        return {"worker.pad_bytes": str(nbytes)}

    # -- read and written back ----------------------------------------------------------------------
    def entries(self) -> dict[str, str]:
        out = {"telemetry.source": self.telemetry_source, "telemetry.max_clock_mhz": self.telemetry_max_clock_mhz,
               **{f"flush.{f}.bytes": str(n) for f, n in self.flush_bytes.items()},
               "device.llc_bytes": self.llc_bytes, "device.llc_source": self.llc_source, "warmup.clock": self.warmup_clock,
               **{f"verify.{k}": v for k, v in self.verify.items()}, **{f"floor.{f}.median_s": v for f, v in self.floors.items()},
               **{f"interleave.pool.{s}": v for s, v in self.pools.items()}, "worker.pad_bytes": self.worker_pad_bytes}
        return {k: v for k, v in out.items() if v != ""}


def _claim(meta: dict[str, str], key: str) -> str:
    return str(meta.pop(key, ""))


def _measured(meta: dict[str, str]) -> MeasuredInfo:
    m = MeasuredInfo(_claim(meta, "telemetry.source"), _claim(meta, "telemetry.max_clock_mhz"))
    for key in [k for k in meta if k.startswith("flush.") and k.endswith(".bytes") and not k.startswith("flush.factor.")]:
        m.flush_bytes[key[len("flush."):-len(".bytes")]] = int(meta.pop(key) or 0)
    m.llc_bytes, m.llc_source = _claim(meta, "device.llc_bytes"), _claim(meta, "device.llc_source")
    m.warmup_clock, m.worker_pad_bytes = _claim(meta, "warmup.clock"), _claim(meta, "worker.pad_bytes")
    for prefix, target, suffix in (("verify.", m.verify, ""), ("floor.", m.floors, ".median_s"), ("interleave.pool.", m.pools, "")):
        for key in [k for k in meta if k.startswith(prefix) and k.endswith(suffix)]:
            target[key[len(prefix):len(key) - len(suffix)]] = meta.pop(key)
    return m


@dataclass
class RunInfo:
    """A sweep's metadata, typed (module docstring): its id, the provenance (``provenance.collect``:
    versions, host, device properties, the command), the code under test (``code.*``) and each
    kernel's identity, the spec as recorded (``sweep.*``, ``flush.factor.*``: what resume compares),
    the timing method, what the units measured with, the units and the cluster, and every other key."""

    run_id: str = ""
    provenance: dict[str, str] = field(default_factory=dict)
    code: dict[str, str] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    spec: dict[str, str] = field(default_factory=dict)
    timing_method: str = ""
    measured: MeasuredInfo = field(default_factory=MeasuredInfo)
    units: UnitsInfo = field(default_factory=UnitsInfo)
    cluster: ClusterInfo | None = None
    other: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str] | None) -> "RunInfo":
        """The one reader of a sweep's flat metadata (files of every release)."""
        meta = {str(k): str(v) for k, v in dict(metadata or {}).items()}
        info = cls(run_id=_claim(meta, "run_id"), timing_method=_claim(meta, "timing.method"))
        if any(k.startswith("cluster.") for k in meta):
            info.cluster = ClusterInfo.of(meta)
            for k in [k for k in meta if k.startswith("cluster.")]:
                meta.pop(k)
        units = {attr: meta.pop(key) for key, attr in _UNIT_KEYS.items() if key in meta}
        info.units = UnitsInfo(int(units.get("planned") or 0), int(units.get("done") or 0), units.get("location", ""),
                               _ints(units.get("pad_bytes", "")))
        for key in [k for k in meta if k.startswith("inputs.unit.")]:
            info.units.inputs[int(key.rsplit(".", 1)[1])] = meta.pop(key)
        info.measured = _measured(meta)
        for key in list(meta):
            if key.startswith("identity."):
                info.identities[key[len("identity."):]] = meta.pop(key)
            elif key.startswith("code."):
                info.code[key] = meta.pop(key)
            elif key.startswith(_SPEC_PREFIXES):
                info.spec[key] = meta.pop(key)
        info.provenance = {k: meta.pop(k) for k in list(meta) if k.startswith(("device.", "package.", "compiler."))
                           or k in _PROVENANCE}
        info.other = meta
        return info

    def to_metadata(self) -> dict[str, str]:
        """The one writer: the flat keys files carry (the same keys every release wrote)."""
        out: dict[str, str] = {**self.provenance, **self.code, **{f"identity.{k}": v for k, v in self.identities.items()},
                               **self.spec}
        if self.timing_method:
            out["timing.method"] = self.timing_method
        out.update(self.measured.entries())
        out.update(self.units.entries())
        if self.cluster is not None:
            out.update(self.cluster.entries())
        out.update(self.other)
        if self.run_id:
            out["run_id"] = self.run_id
        return out


#: provenance keys without a prefix (``provenance.collect``)
_PROVENANCE = ("hipexplore", "git_revision", "date", "command", "python", "platform", "hostname_hash", "cpu", "cpu_count")

__all__ = ["ClusterInfo", "MeasuredInfo", "RunInfo", "UnitsInfo"]
