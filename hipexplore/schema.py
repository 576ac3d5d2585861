"""The recorded-data contract, in one place: column lists, cache outcomes, schema tags.

Why a leaf module: the sweep writes these frames, the cache and the tuning replay write events,
and the plots, the widgets and the report read them. Each used to keep its own copy of the
column lists (with different contents) and its own count of cache outcomes; now they all import
them from here, and docs/ARCHITECTURE.md ("Cache events", "Benchmark frames") documents them.

Files: every parquet file a hipexplore writer produces carries its kind as a schema tag in the
file's key-value metadata (``hipexplore.schema``: ``samples``, ``summary``, ``events``,
``tuning``, ``passes``, ``units``), so a reader recognises it by what its writer said, not by its columns.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, NamedTuple

from .errors import ConfigError
from .files import write_file

# -- cache outcomes -------------------------------------------------------------------------------
#: What one cache lookup did. ``joined``: waited for an identical compile already in flight in this
#: process; ``bypassed``: diagnostics requested, compiled without touching any tier; ``remote-hit``:
#: found in the Redis team tier (below disk).
Outcome = Literal["memory-hit", "disk-hit", "remote-hit", "compiled", "joined", "failed", "bypassed"]
MEMORY_HIT: Outcome = "memory-hit"
DISK_HIT: Outcome = "disk-hit"
REMOTE_HIT: Outcome = "remote-hit"
COMPILED: Outcome = "compiled"
JOINED: Outcome = "joined"
FAILED: Outcome = "failed"
BYPASSED: Outcome = "bypassed"
OUTCOMES: tuple[Outcome, ...] = (MEMORY_HIT, DISK_HIT, REMOTE_HIT, COMPILED, JOINED, FAILED, BYPASSED)
#: Outcomes that did not run the compiler in this call (in OUTCOMES order).
HIT_OUTCOMES: tuple[Outcome, ...] = (MEMORY_HIT, DISK_HIT, REMOTE_HIT, JOINED)
#: Outcomes that ran the compiler.
COMPILE_OUTCOMES: tuple[Outcome, ...] = (COMPILED, BYPASSED)

# -- column lists ---------------------------------------------------------------------------------
#: One row per cache lookup (``CompileCache.events()``).
#: ``compiler_cache``: the compiler's own cache as that lookup's compile would use it
#: (``compile.compiler_cache.OwnCache.label``: ``on: NVRTC's default; inert here: no CUDA driver; PCH off``).
EVENT_COLUMNS = (
    "seq", "time", "digest", "kernel", "compiler", "target", "mode", "outcome", "lookup_seconds",
    "compile_seconds", "seconds_saved", "bytes", "error", "compiler_cache",
)
#: What the tuning replay adds to the event columns (``round``: the pass's round when every scenario
#: ran in alternated rounds, 0 otherwise; ``pass_seconds``: the wall time of the pass the row belongs to).
REPLAY_COLUMNS = ("problem", "candidate", "role", "scenario", "entry", "jobs", "call_seconds", "round", "pass_seconds")
#: One row per timed launch of a sweep.
SAMPLE_COLUMNS = (
    "run_id", "device", "device_name", "kernel", "size_bytes", "footprint_bytes", "rotating",
    "rotating_requested", "flush", "timer", "iteration", "pass_index", "chunk", "position", "lead", "buffer_set",
    "time_s",
    "flush_s", "gap_s", "clock_mhz", "temp_c", "power_w", "host_load", "host_busy", "host_steal", "throttled", "dropped",
)
#: One row per sweep configuration.
SUMMARY_COLUMNS = (
    "run_id", "device", "device_name", "kernel", "size_bytes", "footprint_bytes", "rotating",
    "rotating_requested", "flush", "timer", "n", "passes", "median_s", "mean_s", "min_s", "p5_s", "p95_s", "iqr_rel", "cv",
    "ci_low_s", "ci_high_s", "n_outliers", "bimodality", "reference_median_s", "bias", "bias_ci_low",
    "bias_ci_high", "bandwidth_gbs", "peak_bandwidth_gbs", "rotating_cap_bytes", "stop_reason", "timed_out",
    "n_throttled", "clock_mhz", "floor_s", "net_median_s", "warning",
)
#: What the counter pass (``SweepSpec.counters``, bench.counters) adds to a summary row, per
#: configuration (both timers' rows alike; the cold reference none): DRAM bytes read and written per
#: launch, the L2 hit rate (0-1), the bytes of the launch's in/inout buffers, cold_fraction = DRAM
#: read / input bytes, the state word (cold / partial / warm, n/a without inputs), the promise check
#: ("" not asked cold, kept, broken, unverified: DRAM bytes not counted) and its one line, who counted, how many launches, and a note.
#: A summary without them (no counters asked, the host, files written before them) is read as it is.
COUNTER_COLUMNS = ("dram_read_bytes", "dram_write_bytes", "l2_hit_rate", "input_bytes", "cold_fraction", "cache_state",
                   "cold_promise", "counter_warning", "counter_backend", "counter_launches", "counter_note")
#: What a cluster sweep (bench.cluster) adds to the sample and summary columns: the Dask worker's
#: address, its host name and the visible-device ordinal it was pinned to ('' when not pinned).
CLUSTER_COLUMNS = ("worker", "host", "gpu")
#: The ``flush`` value of the single-launch-after-l2-read reference rows.
COLD_REFERENCE = "cold-reference"

# -- one configuration of a sweep -----------------------------------------------------------------
class Configuration(NamedTuple):
    """One configuration of a sweep: what one summary row (and its sample rows) measured.

    A frozen, ordered value. A ``NamedTuple`` rather than a dataclass so that it *is* the
    (kernel, size, rotating, flush, timer) tuple the frames' rows spell: sets of configurations
    built from a file and from a ``SweepSpec`` compare and hash alike. ``size`` is bytes per array.
    Which configurations a sweep has is ``SweepSpec.configurations()``'s business, not this type's.

    It owns how it is spelled in a frame: ``COLUMNS`` (the one list of the key's columns: resume,
    units, cluster, grouping, drift and verdicts all use it), the readers ``of`` (a row),
    ``of_frame`` (every row), ``select`` (a frame's rows of some configurations), ``frame_key``
    (the key columns of a frame, for joins) and the writer ``columns``.

    The one rotating story: ``rotating`` is the count *as requested* (text: ``"auto"``, ``"4"``),
    written to the ``rotating_requested`` column, and it is the key: a sweep asked for ``auto`` is
    resumed, merged and compared as ``auto`` whatever it resolved to. The ``rotating`` column is the
    number of buffer sets the plan used, an outcome of the measurement like ``median_s``
    (``rotating_cap_bytes`` says when memory capped it); ``rotating_of`` reads the key of a frame,
    also from frames that carry only the count.
    """

    kernel: str
    size: int
    rotating: str
    flush: str
    timer: str = "events"

    #: the frame columns of the key, in field order
    COLUMNS = ("kernel", "size_bytes", "rotating_requested", "flush", "timer")
    #: the frame columns of a cold reference's key: one reference per (kernel, size, timer)
    REFERENCE_COLUMNS = ("kernel", "size_bytes", "timer")
    #: the key without the timer: what a legacy file (no timer column) and a counter record carry
    UNTIMED_COLUMNS = COLUMNS[:4]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Configuration":
        """The configuration of a sample or summary row (a dict; ``timer`` absent in old files: events)."""
        return cls(str(row["kernel"]), int(row["size_bytes"]), str(row["rotating_requested"]), str(row["flush"]),
                   str(row.get("timer", "events") or "events"))

    @classmethod
    def of_frame(cls, frame: Any) -> "list[Configuration]":
        """The configuration of every row of a sample or summary frame, in row order."""
        timer = frame["timer"] if "timer" in frame.columns else ["events"] * len(frame)
        return [cls(str(k), int(s), str(r), str(f), str(t) if t == t and t else "events")
                for k, s, r, f, t in zip(frame["kernel"], frame["size_bytes"], frame["rotating_requested"], frame["flush"],
                                         timer)]

    @classmethod
    def in_frame(cls, frame: Any) -> bool:
        """Whether ``frame`` spells configurations (it has the key's columns; ``timer`` may be missing in old files)."""
        return set(cls.COLUMNS[:-1]) <= set(frame.columns)

    @classmethod
    def select(cls, frame: Any, configurations: "Iterable[Configuration]", keep: bool = True) -> Any:
        """The rows of ``frame`` whose configuration is in ``configurations`` (``keep=False``: the others)."""
        wanted = set(configurations)
        if not len(frame):
            return frame
        return frame[[(c in wanted) == keep for c in cls.of_frame(frame)]].reset_index(drop=True)

    @classmethod
    def frame_key(cls, frame: Any, columns: "Iterable[str]" = ()) -> "list[str]":
        """The key columns ``frame`` has (for a groupby or a join), ``columns`` first."""
        return [*columns, *(c for c in cls.COLUMNS if c in frame.columns)]

    @staticmethod
    def rotating_of(frame: Any) -> Any:
        """The rotating key of every row of ``frame`` (the requested text), the count as text in
        frames written before requests were recorded."""
        if "rotating_requested" in frame.columns:
            return frame["rotating_requested"].astype(str)
        return frame["rotating"].astype(str)

    def columns(self) -> dict[str, Any]:
        """The key as frame columns (what a writer puts in a row)."""
        return dict(zip(self.COLUMNS, self))

    @property
    def is_reference(self) -> bool:
        return self.flush == COLD_REFERENCE

    @property
    def reference_key(self) -> tuple[str, int, str]:
        """(kernel, size, timer): the cold reference this configuration's bias is measured against."""
        return (self.kernel, self.size, self.timer)

    def reference(self) -> "Configuration":
        """The configuration of its cold reference."""
        return Configuration(self.kernel, self.size, "1", COLD_REFERENCE, self.timer)

    def describe(self) -> str:
        """How a message names it: ``size=16384 rotating=auto flush=l2-read`` (+ `` timer=in-kernel``)."""
        return f"size={self.size} rotating={self.rotating} flush={self.flush}" + ("" if self.timer == "events" else f" timer={self.timer}")


def require_columns(frame: Any, columns: Iterable[str], what: str) -> Any:
    """``frame`` if it is a non-empty DataFrame holding ``columns``; else a ConfigError naming what
    is missing (an empty figure or table would look like evidence)."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise ConfigError(f"{what} must be a pandas DataFrame; got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ConfigError(f"{what} is missing columns {missing}; it has {list(frame.columns)}")
    if frame.empty:
        raise ConfigError(f"{what} has no rows: nothing to plot")
    return frame


def count_outcomes(outcome: Any) -> dict[str, int]:
    """Lookups by outcome, the one place they are counted (replay summaries, report tables):
    ``lookups``, ``compiles`` (compiled + bypassed), ``memory_hits``, ``disk_hits``, ``remote_hits``,
    ``hits`` (memory + disk + remote), ``joins``, ``failed``. ``outcome``: a Series of outcome strings."""
    return {
        "lookups": int(len(outcome)),
        "compiles": int(outcome.isin(COMPILE_OUTCOMES).sum()),
        "memory_hits": int((outcome == MEMORY_HIT).sum()),
        "disk_hits": int((outcome == DISK_HIT).sum()),
        "remote_hits": int((outcome == REMOTE_HIT).sum()),
        "hits": int(outcome.isin([MEMORY_HIT, DISK_HIT, REMOTE_HIT]).sum()),
        "joins": int((outcome == JOINED).sum()),
        "failed": int((outcome == FAILED).sum()),
    }


# -- schema tags on parquet files -----------------------------------------------------------------
SCHEMA_KEY = "hipexplore.schema"
SAMPLES, SUMMARY, EVENTS, TUNING, PASSES = "samples", "summary", "events", "tuning", "passes"
#: a sweep in units: one summary row per (configuration, unit), ``pass_index`` the unit (FILE.units.parquet)
UNITS = "units"
SCHEMAS = (SAMPLES, SUMMARY, EVENTS, TUNING, PASSES, UNITS)
#: the key under which writers store their provenance JSON
METADATA_KEY = "hipexplore"


def write_parquet(frame: Any, path: str | os.PathLike, schema: str, metadata: Mapping[str, str] | None = None) -> None:
    """Write ``frame`` atomically and through no one's link (``files.write_file``) with its schema
    tag and, when given, the provenance ``metadata`` (JSON under ``hipexplore``) in the file's
    key-value metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if schema not in SCHEMAS:
        raise ConfigError(f"schema must be one of {', '.join(SCHEMAS)}; got {schema!r}")
    path = Path(path)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[SCHEMA_KEY.encode()] = schema.encode()
    if metadata is not None:
        meta[METADATA_KEY.encode()] = json.dumps(dict(metadata), sort_keys=True).encode()
    table = table.replace_schema_metadata(meta)
    write_file(path, lambda fh: pq.write_table(table, fh), what=f"{schema} file")


def schema_of(path: str | os.PathLike) -> str | None:
    """The schema tag a hipexplore writer stored in the parquet file, None for untagged files."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(str(path)).metadata or {}
    tag = meta.get(SCHEMA_KEY.encode())
    return tag.decode(errors="replace") if tag is not None else None
