"""The registry of a sweep's metadata keys: every key its files carry, declared once, with its type,
how its text is parsed and how a value is written (as pyperf's ``_metadata.py``).

Why: a sweep's metadata was a ``dict[str, str]`` of about 40 dotted keys written in 9 modules, with
lists as JSON inside strings and prefixes sliced off by readers. Each key is now a ``Key`` here (its
name, type, parse, format and description; ``KEYS``), or a member of a ``Family`` (``FAMILIES``:
``<prefix><part><suffix>`` keys such as ``identity.<kernel>``, ``flush.<mode>.bytes``, typed alike).
Other modules name a key by its constant (``DEVICE_NAME``, ``COUNTERS_STATUS``), never by its
dotted string: ``tests/bench/test_info.py`` fails when more than 10 dotted key strings appear
outside this module.

The metadata travels typed, not as text: ``bench.runinfo.RunInfo`` (the run: provenance, the
spec as recorded, units, cluster, counters, resolution) holds ``bench.measured.MeasuredInfo`` (what
the units measured with, the one report a unit sends through its channel); ``bench.io`` alone turns
a ``RunInfo`` into the flat text of a sweep's files (``RunInfo.to_metadata``, through the formats
declared here), and reads it back (``RunInfo.from_metadata``). The on-disk format is unchanged.

The spec's own entries (``spec_entries``, ``measurement_entries``: what resume compares) are made
here too, from ``SweepSpec.as_record()``: they are the recorded spec's text, by definition.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping

# -- the registry of keys (as pyperf's ``_metadata.py``): one declaration per key -----------------

#: what a parse raises on text it cannot read (a pool's word: KeyError)
_UNREADABLE = (TypeError, ValueError, KeyError)


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
        except _UNREADABLE:
            return default

    def exact(self, text: str) -> Any:
        """The value whose text ``text`` is: ``ValueError`` where it does not parse, or where this key
        writes that value otherwise (so that a value read back writes back the same text)."""
        return _exact(self.parse, self.format, text, self.name)

    def entry(self, value: Any) -> dict[str, str]:
        """``{name: text}``: the one place a value of this key becomes text."""
        return {self.name: self.format(value)}


def _exact(parse: Callable[[str], Any], format: Callable[[Any], str], text: str, what: str) -> Any:  # noqa: A002
    try:
        value = parse(text)
        same = format(value) == text
    except _UNREADABLE:
        same = False
    if not same:
        raise ValueError(f"{what}: {text!r} is not what this key writes")
    return value


@dataclass(frozen=True)
class Family:
    """Keys named ``<prefix><part><suffix>`` (``identity.<kernel>``, ``flush.<mode>.bytes``), declared
    once: their ``part`` (text matching ``part_pattern``, read by ``part_parse``: ``int`` for a unit
    or a size) and their values (``parse``, ``format``: text by default)."""

    prefix: str
    suffix: str
    description: str
    parse: Callable[[str], Any] = str
    format: Callable[[Any], str] = str
    part_pattern: str = ".+"
    part_parse: Callable[[str], Any] = str

    def key(self, part: Any) -> str:
        return f"{self.prefix}{part}{self.suffix}"

    def owns(self, key: str) -> bool:
        return (
            key.startswith(self.prefix)
            and key.endswith(self.suffix)
            and len(key) > len(self.prefix) + len(self.suffix)
            and re.fullmatch(self.part_pattern, self.part(key)) is not None
        )

    def part(self, key: str) -> str:
        return key[len(self.prefix) : len(key) - len(self.suffix)]

    def of(self, meta: Mapping[str, Any] | None) -> dict[Any, Any]:
        """``{part: value}`` of every key of this family in ``meta`` that reads (the rest left out)."""
        out = {}
        for k, v in (meta or {}).items():
            if not self.owns(k):
                continue
            try:
                out[self.part_parse(self.part(k))] = self.parse(str(v))
            except _UNREADABLE:
                continue
        return out

    def entries(self, values: Mapping[Any, Any]) -> dict[str, str]:
        """``{key: text}`` of ``{part: value}``: the one place a value of this family becomes text."""
        return {self.key(p): self.format(v) for p, v in values.items()}

    def take(self, meta: dict[str, str]) -> dict[Any, Any]:
        """``{part: value}`` of the keys of this family in ``meta`` whose text is what this family
        writes for that part and value, taken out of ``meta`` (the rest left there)."""
        out = {}
        for key in [k for k in meta if self.owns(k)]:
            try:
                part = _exact(self.part_parse, str, self.part(key), key)
                out[part] = _exact(self.parse, self.format, meta[key], key)
            except ValueError:
                continue
            del meta[key]
        return out


KEYS: dict[str, Key] = {}
FAMILIES: dict[str, Family] = {}


def _percent(text: str) -> float:
    return float(text.strip().rstrip("%")) / 100


def _rel_l2(text: str) -> float:
    """An output check's text, ``rel_l2_error=1.72e-08``, as its relative L2 error."""
    if not text.startswith("rel_l2_error="):
        raise ValueError(f"not an output check: {text!r}")
    return float(text.removeprefix("rel_l2_error="))


def _ints(text: str) -> list[int]:
    return [int(x) for x in str(text).split(",") if x.strip()]


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


def _family(prefix: str, description: str, suffix: str = "", **typed: Any) -> Family:
    FAMILIES[prefix + "*" + suffix] = Family(prefix, suffix, description, **typed)
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
TELEMETRY_MAX_CLOCK_MHZ = _key(
    "telemetry.max_clock_mhz", "the device's top clock (MHz; nan: unknown)", float, float, lambda v: f"{v:g}"
)
WARMUP_CLOCK = _key("warmup.clock", "how the clock was warmed up")
WORKER_PAD_BYTES = _key("worker.pad_bytes", "the pad a sweep worker held (bytes)", int, int)
DEVICE_LLC_SOURCE = _key("device.llc_source", "where the last-level cache size was read")
DEVICE_NAME = _key("device.name", "the device's name")
DEVICE_KIND = _key("device.kind", "the device's kind: hip, cuda, host, or the importer's format")
DEVICE_TARGET = _key("device.target", "the device's compile target (gfx942, sm_90, host)")
DEVICE_DRIVER = _key("device.driver", "the driver version")
DEVICE_RUNTIME = _key("device.runtime", "the runtime version")
DEVICE_LLC_BYTES = _key("device.llc_bytes", "the last-level cache the flushes were sized for (bytes)", int, int)
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
    _ints,
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
FLUSH_BYTES = _family("flush.", "a flush mode's buffer (bytes)", ".bytes", parse=int, part_pattern=r"[^.]+")
VERIFY = _family(
    "verify.",
    "<kernel>.<size>: the output check (its relative L2 error)",
    parse=_rel_l2,
    format=lambda v: f"rel_l2_error={v:.3g}",
)
FLOOR = _family(
    "floor.",
    "a flush mode's launch floor (median s)",
    ".median_s",
    parse=float,
    format=lambda v: f"{v:.6g}",
    part_pattern=r"[^.]+",
)
POOL = _family(
    "interleave.pool.",
    "<size>: whether the interleaved kernels shared their sets (shared, own sets)",
    parse=lambda t: {"shared": True, "own sets": False}[t],
    format=lambda v: "shared" if v else "own sets",
    part_pattern=r"\d+",
    part_parse=int,
)
UNIT_INPUTS = _family("inputs.unit.", "<unit>: how its inputs were made", part_pattern=r"\d+", part_parse=int)
CLUSTER = _family("cluster.", "a cluster run: device, scheduler, dashboard, workers, reruns, failed, incomplete")

#: what a unit reports through its channel (``bench.measured.MeasuredInfo``): all a unit measured
#: elsewhere (a sweep worker, a cluster worker) may set in the run's metadata (``bench.guard``),
#: never the provenance, identities or spec the parent wrote
UNIT_REPORTED: tuple[Key | Family, ...] = (
    TELEMETRY_SOURCE,
    TELEMETRY_MAX_CLOCK_MHZ,
    FLUSH_BYTES,
    DEVICE_LLC_BYTES,
    DEVICE_LLC_SOURCE,
    WARMUP_CLOCK,
    VERIFY,
    FLOOR,
    POOL,
    WORKER_PAD_BYTES,
    UNIT_INPUTS,
)
#: the keys of a sweep in units (``bench.runinfo.UnitsInfo``), by its fields
UNITS_KEYS = {
    "planned": SWEEP_UNITS_PLANNED,
    "done": SWEEP_UNITS_DONE,
    "location": SWEEP_UNIT_LOCATION,
    "pad_bytes": SWEEP_UNIT_PAD_BYTES,
}
#: the cluster's keys (``bench.runinfo.ClusterInfo``), by its fields
CLUSTER_FIELDS = ("device", "scheduler", "dashboard", "workers", "reruns", "failed", "incomplete")
#: the prefixes of the spec as recorded (``SweepSpec.record``: what resume compares)
SPEC_PREFIXES = ("sweep.", FLUSH_FACTOR.prefix)
#: the prefixes and the keys of the provenance (``provenance.collect``)
PROVENANCE_PREFIXES = (DEVICE.prefix, PACKAGE.prefix, COMPILER.prefix)
PROVENANCE_KEYS = tuple(
    k.name for k in (HIPEXPLORE, GIT_REVISION, DATE, COMMAND, PYTHON, PLATFORM, HOSTNAME_HASH, CPU, CPU_COUNT)
)


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


__all__ = ["FAMILIES", "KEYS", "Family", "Key", "measurement_entries", "recorded_measurement_keys", "spec_entries"]
