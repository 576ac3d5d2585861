"""Typed run metadata: ``RunInfo`` (and its ``UnitsInfo``, ``MeasuredInfo``, ``ClusterInfo``),
serialised once.

Why: a sweep's metadata was a ``dict[str, str]`` of about 40 dotted keys written in 9 modules, with
lists as JSON inside strings and prefixes sliced off by readers. Every key is now spelled here, in
one reader (``RunInfo.from_metadata``) and one writer (``RunInfo.to_metadata``); the rest of the
code sets typed fields. The on-disk format is unchanged (the same flat keys in meta.json and in the
parquet files' metadata), so files written before, and the loaders that read them (``bench.io``,
``report.recorded``, ``benchmarks/figures.py``), read the same; ``to_metadata(from_metadata(m))``
gives ``m`` back, keys no field claims included (``other``).

Every key is declared once in the registry below (``KEYS``: a ``Key`` with its name, type, parse,
format and description, as pyperf's ``_metadata.py``; ``FAMILIES`` for ``<prefix><part>`` keys);
other modules name keys by their constants (``DEVICE_NAME``, ``COUNTERS_STATUS``) or read typed
fields (``RunInfo.read(path).counters.backend``), and ``tests/bench/test_info.py`` fails when more
than 10 dotted key strings appear outside this module.

A unit reports what it measured with through its channel as entries made here
(``MeasuredInfo.entries_*``), so a worker's pipe and a cluster's task carry the same keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

# -- the registry of keys (as pyperf's ``_metadata.py``): one declaration per key -----------------


@dataclass(frozen=True)
class Key:
    """One metadata key: its ``name`` in the files, the ``type`` of its value, how its text is
    parsed (``parse``) and how a value is written (``format``), and what it says. Code outside this
    module names a key by its constant here (``DEVICE_NAME``), never by its dotted string."""

    name: str
    type: type
    parse: Callable[[str], Any]
    format: Callable[[Any], str]
    description: str

    def of(self, meta: Mapping[str, Any] | None, default: Any = None) -> Any:
        """This key's value in a flat ``meta``, parsed; ``default`` when absent, empty or unreadable."""
        text = (meta or {}).get(self.name)
        if text is None or str(text) == "":
            return default
        try:
            return self.parse(str(text))
        except (TypeError, ValueError):
            return default

    def entry(self, value: Any) -> dict[str, str]:
        """``{name: text}``: the one place a value of this key becomes text."""
        return {self.name: self.format(value)}


@dataclass(frozen=True)
class Family:
    """Keys named ``<prefix><part><suffix>`` (``identity.<kernel>``, ``flush.<mode>.bytes``), one
    value each (text), declared once."""

    prefix: str
    suffix: str
    description: str

    def key(self, part: Any) -> str:
        return f"{self.prefix}{part}{self.suffix}"

    def owns(self, key: str) -> bool:
        return (
            key.startswith(self.prefix) and key.endswith(self.suffix) and len(key) > len(self.prefix) + len(self.suffix)
        )

    def part(self, key: str) -> str:
        return key[len(self.prefix) : len(key) - len(self.suffix)]

    def of(self, meta: Mapping[str, Any] | None) -> dict[str, str]:
        """``{part: text}`` of every key of this family in ``meta``."""
        return {self.part(k): str(v) for k, v in (meta or {}).items() if self.owns(k)}


KEYS: dict[str, Key] = {}
FAMILIES: dict[str, Family] = {}


def _percent(text: str) -> float:
    return float(text.strip().rstrip("%")) / 100


def _key(
    name: str,
    description: str,
    type_: type = str,
    parse: Callable[[str], Any] = str,
    format: Callable[[Any], str] = str,
) -> Key:  # noqa: A002 - pyperf's word
    if name in KEYS:
        raise ValueError(f"metadata key {name!r} declared twice")
    KEYS[name] = Key(name, type_, parse, format, description)
    return KEYS[name]


def _family(prefix: str, description: str, suffix: str = "") -> Family:
    FAMILIES[prefix + "*" + suffix] = Family(prefix, suffix, description)
    return FAMILIES[prefix + "*" + suffix]


RUN_ID = _key("run_id", "the run's id (12 hex digits), kept by a resumed run")
TIMING_METHOD = _key("timing.method", "how times were taken (the timer's own words)")
HIPEXPLORE = _key("hipexplore", "the hipexplore version that wrote the file")
GIT_REVISION = _key("git_revision", "hipexplore's git revision, where known")
DATE = _key("date", "when the run started (ISO 8601)")
COMMAND = _key("command", "the command line that ran it")
PYTHON = _key("python", "the Python version")
PLATFORM = _key("platform", "the operating system (platform.platform())")
HOSTNAME_HASH = _key("hostname_hash", "a digest of the host's name")
CPU = _key("cpu", "the host CPU's model")
CPU_COUNT = _key("cpu_count", "the host's CPU count")
TELEMETRY_SOURCE = _key("telemetry.source", "where clocks, temperature and power were read")
TELEMETRY_MAX_CLOCK_MHZ = _key("telemetry.max_clock_mhz", "the device's top clock (MHz; nan: unknown)")
WARMUP_CLOCK = _key("warmup.clock", "how the clock was warmed up")
WORKER_PAD_BYTES = _key("worker.pad_bytes", "the pad a sweep worker held (bytes)")
DEVICE_LLC_SOURCE = _key("device.llc_source", "where the last-level cache size was read")
DEVICE_NAME = _key("device.name", "the device's name")
DEVICE_KIND = _key("device.kind", "the device's kind: hip, cuda, host, or the importer's format")
DEVICE_TARGET = _key("device.target", "the device's compile target (gfx942, sm_90, host)")
DEVICE_DRIVER = _key("device.driver", "the driver version")
DEVICE_RUNTIME = _key("device.runtime", "the runtime version")
DEVICE_LLC_BYTES = _key("device.llc_bytes", "the last-level cache the flushes were sized for (bytes)")
SOURCE_FORMAT = _key("source.format", "an imported file's format (nvbench, pyperf)")
SWEEP_KERNELS = _key("sweep.kernels", "the kernels swept (comma-separated)")
SWEEP_SIZES = _key("sweep.sizes", "the sizes swept in bytes (comma-separated)")
SWEEP_ROTATING = _key("sweep.rotating", "the rotating counts asked for (comma-separated)")
SWEEP_FLUSH = _key("sweep.flush", "the flush modes (comma-separated)")
SWEEP_TIMERS = _key("sweep.timers", "the timers (comma-separated)")
SWEEP_SPEC = _key("sweep.spec", "the whole spec as JSON (what resume reads back)")
SWEEP_STOP_RULE = _key("sweep.stop_rule", "the stop rule (its repr)")
SWEEP_CHUNK = _key("sweep.chunk", "launches per timed chunk")
SWEEP_CHUNK_LEAD = _key("sweep.chunk_lead", "untimed launches before each chunk")
SWEEP_CHUNK_TRAIL = _key("sweep.chunk_trail", "untimed launches after each chunk")
SWEEP_MEM_FRACTION = _key("sweep.mem_fraction", "the share of device memory rotating buffers may take")
SWEEP_REFERENCE_SAMPLES = _key("sweep.reference_samples", "samples of each cold reference (0: none)")
SWEEP_FLUSH_END_EVENT = _key("sweep.flush_end_event", "whether a flush's end was timed by an event")
SWEEP_REFERENCE_PARTS = _key("sweep.reference_parts", "parts each cold reference is taken in")
SWEEP_THROTTLE = _key("sweep.throttle", "the throttle threshold and whether throttled samples are dropped")
SWEEP_INTERLEAVE = _key("sweep.interleave", "seed=<n> when interleaved, else no")
SWEEP_UNITS = _key("sweep.units", "units asked for (a number or auto)")
SWEEP_UNITS_PLANNED = _key("sweep.units_planned", "units planned", int, int)
SWEEP_UNITS_DONE = _key("sweep.units_done", "units every configuration has", int, int)
SWEEP_UNIT_LOCATION = _key("sweep.unit_location", "where units ran: in-process, worker, cluster")
SWEEP_UNIT_PAD_BYTES = _key(
    "sweep.unit_pad_bytes",
    "the pad each unit held (bytes, comma-separated)",
    list,
    lambda t: _ints(t),
    lambda v: ",".join(map(str, v)),
)
COUNTERS_STATUS = _key("counters.status", "what the counter pass did, or why there are no counters")
COUNTERS_BACKEND = _key("counters.backend", "the backend that counted, in its own words (CUPTI, ncu, rocprofv3)")
COUNTERS_WALL_S = _key("counters.wall_s", "the counter pass's wall time (s)", float, float, lambda v: f"{v:.3f}")
COUNTERS_OUTPUTS = _key("counters.outputs", "where the counter pass kept its reports")
UNITS_RESOLUTION = _key(
    "units.resolution", "the resolution asked for (a 95% half-width)", float, _percent, lambda v: f"{v:.2%}"
)
UNITS_RESOLUTION_OUTCOME = _key("units.resolution_outcome", "whether the resolution was reached, and what stopped it")

#: what must be equal for rows measured under one spec to sit with rows of another (with the flush factors)
MEASUREMENT_KEYS = (
    SWEEP_STOP_RULE,
    SWEEP_CHUNK,
    SWEEP_CHUNK_LEAD,
    SWEEP_CHUNK_TRAIL,
    SWEEP_MEM_FRACTION,
    SWEEP_REFERENCE_SAMPLES,
    SWEEP_FLUSH_END_EVENT,
    SWEEP_REFERENCE_PARTS,
    SWEEP_THROTTLE,
    SWEEP_UNITS,
)

IDENTITY = _family("identity.", "a kernel's identity digest (code, options, arguments, geometry, device)")
CODE = _family("code.", "the code under test: <kernel>.sha256, .origin, .git_revision, .file")
DEVICE = _family("device.", "a device property")
PACKAGE = _family("package.", "an installed package's version")
COMPILER = _family("compiler.", "a compiler's version")
COMPILER_CACHE = _family("compiler_cache.", "a compiler's own cache")
FLUSH_FACTOR = _family("flush.factor.", "a flush mode's buffer factor")
FLUSH_BYTES = _family("flush.", "a flush mode's buffer (bytes)", ".bytes")
VERIFY = _family("verify.", "<kernel>.<size>: the output check")
FLOOR = _family("floor.", "a flush mode's launch floor (median s)", ".median_s")
POOL = _family("interleave.pool.", "<size>: shared or own sets")
UNIT_INPUTS = _family("inputs.unit.", "<unit>: how its inputs were made")
CLUSTER = _family("cluster.", "a cluster run: device, scheduler, dashboard, workers, reruns, failed, incomplete")

#: the prefixes of the typed groups, in the order they are written back
_SPEC_KEYS = ("sweep.kernels", "sweep.sizes", "sweep.rotating", "sweep.flush", "sweep.timers", "sweep.spec")
_SPEC_PREFIXES = ("sweep.", "flush.factor.")
_UNIT_KEYS = {
    "sweep.unit_pad_bytes": "pad_bytes",
    "sweep.units_done": "done",
    "sweep.units_planned": "planned",
    "sweep.unit_location": "location",
}


def spec_entries(record: Mapping[str, Any], stop_rule: str) -> dict[str, str]:
    """A spec's metadata entries (``SweepSpec.record``) from its ``as_record()`` dict and its stop
    rule's repr: ``sweep.spec`` (the whole record as JSON, which resume reads back) and the readable
    ``sweep.*`` / ``flush.factor.*`` keys."""
    lists = (
        (SWEEP_KERNELS, "kernels"),
        (SWEEP_SIZES, "sizes"),
        (SWEEP_ROTATING, "rotating"),
        (SWEEP_FLUSH, "flush"),
        (SWEEP_TIMERS, "timers"),
    )
    return {
        **{key.name: ",".join(str(v) for v in record[name]) for key, name in lists},
        **measurement_entries(record, stop_rule),
        SWEEP_SPEC.name: json.dumps(dict(record), sort_keys=True),
    }


def measurement_entries(record: Mapping[str, Any], stop_rule: str) -> dict[str, str]:
    """``SweepSpec.measurement()`` of an ``as_record()`` dict (so a recorded spec reads the same) and
    its stop rule's repr: the ``MEASUREMENT_KEYS`` and the flush factors."""
    values = (
        stop_rule,
        record["chunk"],
        record.get("chunk_lead", 0),
        record.get("chunk_trail", 0),  # written before leads and trails existed: none
        record["mem_fraction"],
        record["reference_samples"] if record["reference"] else 0,
        record["flush_end_event"],
        record.get("reference_parts", 1),
        f"{record.get('throttle_threshold', 0.0)} drop={record.get('drop_throttled', False)}",
        record.get("units", record.get("passes", 1)),
    )  # older files: passes
    out = {key.name: key.format(v) for key, v in zip(MEASUREMENT_KEYS, values)}
    out[SWEEP_INTERLEAVE.name] = f"seed={record.get('interleave_seed', 0)}" if record.get("interleave") else "no"
    return {**out, **{FLUSH_FACTOR.key(k): str(v) for k, v in dict(record["flush_factors"]).items()}}


def recorded_measurement_keys(metadata: Mapping[str, Any]) -> dict[str, str]:
    """The loose measurement keys of a file written before specs were recorded (chunk leads and
    trails, written before they existed: none)."""
    loose = {
        k: str(v)
        for k, v in metadata.items()
        if k.startswith((*(key.name for key in MEASUREMENT_KEYS), FLUSH_FACTOR.prefix))
    }
    return {SWEEP_CHUNK_LEAD.name: "0", SWEEP_CHUNK_TRAIL.name: "0", **loose}


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
        out = (
            {
                "sweep.unit_pad_bytes": ",".join(map(str, self.pad_bytes)),
                "sweep.units_done": str(self.done),
                "sweep.units_planned": str(self.planned),
                "sweep.unit_location": self.location,
            }
            if self.planned
            else {}
        )
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
        out = {
            "cluster.device": self.device,
            "cluster.scheduler": self.scheduler,
            "cluster.dashboard": self.dashboard,
            "cluster.reruns": json.dumps(self.reruns),
            "cluster.failed": json.dumps(self.failed),
            "cluster.workers": ",".join(self.workers),
        }
        return {**out, **({"cluster.incomplete": self.incomplete} if self.incomplete else {})}

    @classmethod
    def of(cls, meta: Mapping[str, str]) -> "ClusterInfo":
        def listed(key: str) -> list[Any]:
            try:
                got = json.loads(meta.get(key) or "[]")
            except ValueError:
                return []
            return got if isinstance(got, list) else []

        return cls(
            meta.get("cluster.device", ""),
            meta.get("cluster.scheduler", ""),
            meta.get("cluster.dashboard", ""),
            [w for w in str(meta.get("cluster.workers", "")).split(",") if w],
            listed("cluster.reruns"),
            listed("cluster.failed"),
            meta.get("cluster.incomplete", ""),
        )

    def shown(self) -> dict[str, Any]:
        """What ``hipexplore bench --json`` prints under ``cluster``."""
        return {k[len("cluster.") :]: v for k, v in self.entries().items()}


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
    UNIT_KEYS = re.compile(
        r"telemetry\.(source|max_clock_mhz)|flush\.[^.]+\.bytes|device\.llc_(bytes|source)|warmup\.clock"
        r"|verify\..+|floor\.[^.]+\.median_s|interleave\.pool\..+|worker\.pad_bytes|inputs\.unit\.\d+"
    )

    # -- what a unit sends through its channel ------------------------------------------------------
    @staticmethod
    def entries_initialized(telemetry: Any, flush_bytes: Mapping[str, int], device: Any) -> dict[str, str]:
        return {
            "telemetry.source": telemetry.source,
            "telemetry.max_clock_mhz": f"{telemetry.max_clock_mhz:g}",
            **{f"flush.{f}.bytes": str(n) for f, n in flush_bytes.items()},
            "device.llc_bytes": str(device.llc_bytes),
            "device.llc_source": device.llc_source,
        }

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
        out = {
            "telemetry.source": self.telemetry_source,
            "telemetry.max_clock_mhz": self.telemetry_max_clock_mhz,
            **{f"flush.{f}.bytes": str(n) for f, n in self.flush_bytes.items()},
            "device.llc_bytes": self.llc_bytes,
            "device.llc_source": self.llc_source,
            "warmup.clock": self.warmup_clock,
            **{f"verify.{k}": v for k, v in self.verify.items()},
            **{f"floor.{f}.median_s": v for f, v in self.floors.items()},
            **{f"interleave.pool.{s}": v for s, v in self.pools.items()},
            "worker.pad_bytes": self.worker_pad_bytes,
        }
        return {k: v for k, v in out.items() if v != ""}


def _take(meta: dict[str, str], key: Key, empty: bool = True) -> Any:
    """``key``'s value, taken out of ``meta``, where its text is what ``key`` writes for that value
    (so that writing it back gives the same text); None (and the text left in ``meta``: ``other``)
    where absent, empty (unless ``empty``) or written otherwise."""
    text = meta.get(key.name)
    if text is None or (text == "" and not empty):
        return None
    try:
        value = key.parse(text)
        if key.format(value) != text:
            return None
    except (TypeError, ValueError):
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


def _claim(meta: dict[str, str], key: str) -> str:
    return str(meta.pop(key, ""))


def _measured(meta: dict[str, str]) -> MeasuredInfo:
    m = MeasuredInfo(_claim(meta, "telemetry.source"), _claim(meta, "telemetry.max_clock_mhz"))
    for key in [
        k for k in meta if k.startswith("flush.") and k.endswith(".bytes") and not k.startswith("flush.factor.")
    ]:
        m.flush_bytes[key[len("flush.") : -len(".bytes")]] = int(meta.pop(key) or 0)
    m.llc_bytes, m.llc_source = _claim(meta, "device.llc_bytes"), _claim(meta, "device.llc_source")
    m.warmup_clock, m.worker_pad_bytes = _claim(meta, "warmup.clock"), _claim(meta, "worker.pad_bytes")
    for prefix, target, suffix in (
        ("verify.", m.verify, ""),
        ("floor.", m.floors, ".median_s"),
        ("interleave.pool.", m.pools, ""),
    ):
        for key in [k for k in meta if k.startswith(prefix) and k.endswith(suffix)]:
            target[key[len(prefix) : len(key) - len(suffix)]] = meta.pop(key)
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
    def from_metadata(cls, metadata: Mapping[str, str] | None) -> "RunInfo":
        """The one reader of a sweep's flat metadata (files of every release)."""
        meta = {str(k): str(v) for k, v in dict(metadata or {}).items()}
        info = cls(run_id=_claim(meta, "run_id"), timing_method=_claim(meta, "timing.method"))
        if any(k.startswith("cluster.") for k in meta):
            info.cluster = ClusterInfo.of(meta)
            for k in [k for k in meta if k.startswith("cluster.")]:
                meta.pop(k)
        units = {attr: meta.pop(key) for key, attr in _UNIT_KEYS.items() if key in meta}
        info.units = UnitsInfo(
            int(units.get("planned") or 0),
            int(units.get("done") or 0),
            units.get("location", ""),
            _ints(units.get("pad_bytes", "")),
        )
        for key in [k for k in meta if k.startswith("inputs.unit.")]:
            info.units.inputs[int(key.rsplit(".", 1)[1])] = meta.pop(key)
        info.measured = _measured(meta)
        info.counters, info.resolution = CountersInfo.take(meta), ResolutionInfo.take(meta)
        for key in list(meta):
            if key.startswith("identity."):
                info.identities[key[len("identity.") :]] = meta.pop(key)
            elif key.startswith("code."):
                info.code[key] = meta.pop(key)
            elif key.startswith(_SPEC_PREFIXES):
                info.spec[key] = meta.pop(key)
        info.provenance = {
            k: meta.pop(k) for k in list(meta) if k.startswith(("device.", "package.", "compiler.")) or k in _PROVENANCE
        }
        info.other = meta
        return info

    def to_metadata(self) -> dict[str, str]:
        """The one writer: the flat keys files carry (the same keys every release wrote)."""
        out: dict[str, str] = {
            **self.provenance,
            **self.code,
            **{f"identity.{k}": v for k, v in self.identities.items()},
            **self.spec,
        }
        if self.timing_method:
            out["timing.method"] = self.timing_method
        out.update(self.measured.entries())
        out.update(self.units.entries())
        if self.cluster is not None:
            out.update(self.cluster.entries())
        out.update(self.counters.entries())
        out.update(self.resolution.entries())
        out.update(self.other)
        if self.run_id:
            out["run_id"] = self.run_id
        return out


#: provenance keys without a prefix (``provenance.collect``)
_PROVENANCE = tuple(
    k.name for k in (HIPEXPLORE, GIT_REVISION, DATE, COMMAND, PYTHON, PLATFORM, HOSTNAME_HASH, CPU, CPU_COUNT)
)

__all__ = [
    "FAMILIES",
    "KEYS",
    "ClusterInfo",
    "CountersInfo",
    "Family",
    "Key",
    "MeasuredInfo",
    "ResolutionInfo",
    "RunInfo",
    "UnitsInfo",
]
