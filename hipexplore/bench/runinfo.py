"""``RunInfo``: a sweep's metadata, typed, from where it is made to the files (and its ``UnitsInfo``,
``ClusterInfo``, ``CountersInfo``, ``ResolutionInfo``; what the units measured with is
``bench.measured.MeasuredInfo``).

Why: the metadata was typed only at the door (``RunInfo`` read a file's flat ``dict[str, str]``),
while the orchestrator, its executors and the record carried that flat dict, and every fact became
text where it was made. Now the executor makes a ``RunInfo`` (provenance, the code under test, the
spec as recorded, the timing method), the orchestrator sets its typed fields (the identities, the
run id, the units, the counter pass, the resolution's outcome) and merges each unit's report into
``measured``, the ``Record`` writes it, and ``bench.io`` alone turns it into the flat text of the
files and of ``SweepResult.metadata`` (``to_metadata``, through the registry's formats:
``bench.info``).

The on-disk format is unchanged: the same flat keys in meta.json and in the parquet files'
metadata, so files written before, and the loaders that read them (``bench.io``,
``report.recorded``, ``benchmarks/figures.py``), read the same. ``from_metadata`` is the one reader
(files of every release) and ``to_metadata`` the one writer: ``to_metadata(from_metadata(m))`` gives
``m`` back, keys no field claims (and text a typed field would write otherwise) included (``other``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from .info import (
    CLUSTER,
    CLUSTER_FIELDS,
    CODE,
    COUNTERS_BACKEND,
    COUNTERS_OUTPUTS,
    COUNTERS_STATUS,
    COUNTERS_WALL_S,
    DEVICE_KIND,
    DEVICE_NAME,
    IDENTITY,
    PROVENANCE_KEYS,
    PROVENANCE_PREFIXES,
    RUN_ID,
    SPEC_PREFIXES,
    TIMING_METHOD,
    UNITS_KEYS,
    UNITS_RESOLUTION,
    UNITS_RESOLUTION_OUTCOME,
    Key,
)
from .measured import MeasuredInfo


@dataclass
class UnitsInfo:
    """How a sweep in units ran: units planned (``planned``), the units every configuration has
    (``done``), where they ran (``location``: in-process, worker, cluster) and the pad each unit held
    (``pad_bytes``); how each unit's inputs were made is what it reported (``MeasuredInfo.inputs``)."""

    planned: int = 0
    done: int = 0
    location: str = ""
    pad_bytes: list[int] = field(default_factory=list)

    def entries(self) -> dict[str, str]:
        """The keys of a sweep in units (a one-unit sweep records none)."""
        if not self.planned:
            return {}
        return {k: v for name, key in UNITS_KEYS.items() for k, v in key.entry(getattr(self, name)).items()}

    @classmethod
    def take(cls, meta: dict[str, str]) -> "UnitsInfo":
        """The units' keys of ``meta``, taken out of it (as every release wrote them)."""
        got = {name: meta.pop(key.name) for name, key in UNITS_KEYS.items() if key.name in meta}
        return cls(
            int(got.get("planned") or 0),
            int(got.get("done") or 0),
            got.get("location", ""),
            UNITS_KEYS["pad_bytes"].parse(got.get("pad_bytes", "")),
        )


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
        out = {
            CLUSTER.key("device"): self.device,
            CLUSTER.key("scheduler"): self.scheduler,
            CLUSTER.key("dashboard"): self.dashboard,
            CLUSTER.key("reruns"): json.dumps(self.reruns),
            CLUSTER.key("failed"): json.dumps(self.failed),
            CLUSTER.key("workers"): ",".join(self.workers),
        }
        return {**out, **({CLUSTER.key("incomplete"): self.incomplete} if self.incomplete else {})}

    @classmethod
    def of(cls, meta: Mapping[str, str]) -> "ClusterInfo":
        def listed(key: str) -> list[Any]:
            try:
                got = json.loads(meta.get(CLUSTER.key(key)) or "[]")
            except ValueError:
                return []
            return got if isinstance(got, list) else []

        text = {name: str(meta.get(CLUSTER.key(name), "")) for name in CLUSTER_FIELDS}
        return cls(
            text["device"],
            text["scheduler"],
            text["dashboard"],
            [w for w in text["workers"].split(",") if w],
            listed("reruns"),
            listed("failed"),
            text["incomplete"],
        )

    def shown(self) -> dict[str, Any]:
        """What ``hipexplore bench --json`` prints under ``cluster``."""
        return {CLUSTER.part(k): v for k, v in self.entries().items()}


def _take(meta: dict[str, str], key: Key, empty: bool = True) -> Any:
    """``key``'s value, taken out of ``meta``, where its text is what ``key`` writes for that value
    (so that writing it back gives the same text); None (and the text left in ``meta``: ``other``)
    where absent, empty (unless ``empty``) or written otherwise."""
    text = meta.get(key.name)
    if text is None or (text == "" and not empty):
        return None
    try:
        value = key.exact(text)
    except ValueError:
        return None
    del meta[key.name]
    return value


@dataclass
class CountersInfo:
    """The counter pass: what it did (``status``: counted, nothing to count, or ``no counters: why``),
    the backend that counted, its wall time and where it kept its reports (None: not recorded)."""

    status: str = ""
    backend: str | None = None
    wall_s: float | None = None
    outputs: str | None = None

    #: the status of a pass that found every configuration counted by an earlier run
    NOTHING_TO_COUNT = "every configuration was counted before: nothing to count"

    @classmethod
    def counted(cls, configurations: int, backend: str, wall_s: float, outputs: Any) -> "CountersInfo":
        return cls(
            f"counted {configurations} configuration(s) with {backend} in {wall_s:.1f} s",
            backend,
            wall_s,
            str(outputs or ""),
        )

    @classmethod
    def skipped(cls, why: str) -> "CountersInfo":
        return cls(f"no counters: {why}")

    @property
    def missing(self) -> bool:
        """True when counters were asked for and the device could not count (the status says why)."""
        return self.status.startswith("no counters")

    def entries(self) -> dict[str, str]:
        values = (
            (COUNTERS_STATUS, self.status or None),
            (COUNTERS_BACKEND, self.backend),
            (COUNTERS_WALL_S, self.wall_s),
            (COUNTERS_OUTPUTS, self.outputs),
        )
        return {k: v for key, value in values if value is not None for k, v in key.entry(value).items()}

    @classmethod
    def take(cls, meta: dict[str, str]) -> "CountersInfo":
        return cls(
            _take(meta, COUNTERS_STATUS, empty=False) or "",
            _take(meta, COUNTERS_BACKEND),
            _take(meta, COUNTERS_WALL_S),
            _take(meta, COUNTERS_OUTPUTS),
        )


@dataclass
class ResolutionInfo:
    """``--resolution``: the 95% half-width asked for (a fraction; None: not asked) and the outcome
    (reached, or what stopped the extra units)."""

    asked: float | None = None
    outcome: str = ""

    def entries(self) -> dict[str, str]:
        return {
            **(UNITS_RESOLUTION.entry(self.asked) if self.asked is not None else {}),
            **(UNITS_RESOLUTION_OUTCOME.entry(self.outcome) if self.outcome else {}),
        }

    def shown(self) -> str:
        """``±1.00%``, as the files write it."""
        return f"±{UNITS_RESOLUTION.format(self.asked)}" if self.asked is not None else ""

    @classmethod
    def take(cls, meta: dict[str, str]) -> "ResolutionInfo":
        return cls(_take(meta, UNITS_RESOLUTION), _take(meta, UNITS_RESOLUTION_OUTCOME, empty=False) or "")


@dataclass
class RunInfo:
    """A sweep's metadata, typed (module docstring): its id, the provenance (``provenance.collect``:
    versions, host, device properties, the command), the code under test (``code.*``) and each
    kernel's identity, the spec as recorded (``sweep.*``, ``flush.factor.*``: what resume compares),
    the timing method, what the units measured with, the units and the cluster, the counter pass,
    the resolution, and every other key."""

    run_id: str = ""
    provenance: dict[str, str] = field(default_factory=dict)
    code: dict[str, str] = field(default_factory=dict)
    identities: dict[str, str] = field(default_factory=dict)
    spec: dict[str, str] = field(default_factory=dict)
    timing_method: str = ""
    measured: MeasuredInfo = field(default_factory=MeasuredInfo)
    units: UnitsInfo = field(default_factory=UnitsInfo)
    cluster: ClusterInfo | None = None
    counters: CountersInfo = field(default_factory=CountersInfo)
    resolution: ResolutionInfo = field(default_factory=ResolutionInfo)
    other: dict[str, str] = field(default_factory=dict)

    @property
    def device_name(self) -> str:
        return self.provenance.get(DEVICE_NAME.name, "")

    @property
    def device_kind(self) -> str:
        return self.provenance.get(DEVICE_KIND.name, "")

    @classmethod
    def read(cls, path: Any) -> "RunInfo":
        """The metadata of a sweep's file (FILE.parquet, its summary or units file, or FILE.meta.json),
        typed (``bench.readback.read_metadata``: ``{}`` where it carries none)."""
        from .readback import read_metadata

        return cls.from_metadata(read_metadata(path))

    @classmethod
    def of(cls, metadata: "RunInfo | Mapping[str, str] | None") -> "RunInfo":
        """``metadata`` as a ``RunInfo``: itself, or a file's flat metadata read (``from_metadata``)."""
        return metadata if isinstance(metadata, RunInfo) else cls.from_metadata(metadata)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, str] | None) -> "RunInfo":
        """The one reader of a sweep's flat metadata (files of every release)."""
        meta = {str(k): str(v) for k, v in dict(metadata or {}).items()}
        info = cls(run_id=str(meta.pop(RUN_ID.name, "")), timing_method=str(meta.pop(TIMING_METHOD.name, "")))
        if any(CLUSTER.owns(k) for k in meta):
            info.cluster = ClusterInfo.of(meta)
            for k in [k for k in meta if CLUSTER.owns(k)]:
                meta.pop(k)
        info.units = UnitsInfo.take(meta)
        info.measured = MeasuredInfo.take(meta)
        info.counters, info.resolution = CountersInfo.take(meta), ResolutionInfo.take(meta)
        for key in list(meta):
            if IDENTITY.owns(key):
                info.identities[IDENTITY.part(key)] = meta.pop(key)
            elif CODE.owns(key):
                info.code[key] = meta.pop(key)
            elif key.startswith(SPEC_PREFIXES):
                info.spec[key] = meta.pop(key)
        info.provenance = {
            k: meta.pop(k) for k in list(meta) if k.startswith(PROVENANCE_PREFIXES) or k in PROVENANCE_KEYS
        }
        info.other = meta
        return info

    def to_metadata(self) -> dict[str, str]:
        """The one writer: the flat keys files carry (the same keys every release wrote); called by
        ``bench.io`` (``io.metadata_text``), where the run's metadata becomes text."""
        out: dict[str, str] = {
            **self.provenance,
            **self.code,
            **IDENTITY.entries(self.identities),
            **self.spec,
        }
        if self.timing_method:
            out.update(TIMING_METHOD.entry(self.timing_method))
        out.update(self.measured.entries())
        out.update(self.units.entries())
        if self.cluster is not None:
            out.update(self.cluster.entries())
        out.update(self.counters.entries())
        out.update(self.resolution.entries())
        out.update(self.other)
        if self.run_id:
            out.update(RUN_ID.entry(self.run_id))
        return out


__all__ = ["ClusterInfo", "CountersInfo", "MeasuredInfo", "ResolutionInfo", "RunInfo", "UnitsInfo"]
