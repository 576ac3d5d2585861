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
    "seq",
    "time",
    "digest",
    "kernel",
    "compiler",
    "target",
    "mode",
    "outcome",
    "lookup_seconds",
    "compile_seconds",
    "seconds_saved",
    "bytes",
    "error",
    "compiler_cache",
)
#: What the tuning replay adds to the event columns (``round``: the pass's round when every scenario
#: ran in alternated rounds, 0 otherwise; ``pass_seconds``: the wall time of the pass the row belongs to).
REPLAY_COLUMNS = ("problem", "candidate", "role", "scenario", "entry", "jobs", "call_seconds", "round", "pass_seconds")
#: One row per timed launch of a sweep.
SAMPLE_COLUMNS = (
    "run_id",
    "device",
    "device_name",
    "kernel",
    "size_bytes",
    "footprint_bytes",
    "rotating",
    "rotating_requested",
    "flush",
    "timer",
    "iteration",
    "pass_index",
    "chunk",
    "position",
    "lead",
    "buffer_set",
    "time_s",
    "flush_s",
    "gap_s",
    "clock_mhz",
    "temp_c",
    "power_w",
    "host_load",
    "host_busy",
    "host_steal",
    "throttled",
    "dropped",
)
#: One row per sweep configuration.
SUMMARY_COLUMNS = (
    "run_id",
    "device",
    "device_name",
    "kernel",
    "size_bytes",
    "footprint_bytes",
    "rotating",
    "rotating_requested",
    "flush",
    "timer",
    "n",
    "passes",
    "median_s",
    "mean_s",
    "min_s",
    "p5_s",
    "p95_s",
    "iqr_rel",
    "cv",
    "ci_low_s",
    "ci_high_s",
    "n_outliers",
    "bimodality",
    "reference_median_s",
    "bias",
    "bias_ci_low",
    "bias_ci_high",
    "bandwidth_gbs",
    "peak_bandwidth_gbs",
    "rotating_cap_bytes",
    "stop_reason",
    "timed_out",
    "n_throttled",
    "clock_mhz",
    "floor_s",
    "net_median_s",
    "warning",
)
#: What the counter pass (``SweepSpec.counters``, bench.counters) adds to a summary row, per
#: configuration (both timers' rows alike; the cold reference none): DRAM bytes read and written per
#: launch, the L2 hit rate (0-1), the bytes of the launch's in/inout buffers, cold_fraction = DRAM
#: read / input bytes, the state word (cold / partial / warm, n/a without inputs), the promise check
#: ("" not asked cold, kept, broken, unverified: DRAM bytes not counted) and its one line, who counted, how many launches, and a note.
#: A summary without them (no counters asked, the host, files written before them) is read as it is.
COUNTER_COLUMNS = (
    "dram_read_bytes",
    "dram_write_bytes",
    "l2_hit_rate",
    "input_bytes",
    "cold_fraction",
    "cache_state",
    "cold_promise",
    "counter_warning",
    "counter_backend",
    "counter_launches",
    "counter_note",
)
#: What a cluster sweep (bench.cluster) adds to the sample and summary columns: the Dask worker's
#: address, its host name and the visible-device ordinal it was pinned to ('' when not pinned).
CLUSTER_COLUMNS = ("worker", "host", "gpu")
#: The ``flush`` value of the single-launch-after-l2-read reference rows: a sentinel only
#: ``Configuration.is_reference`` (and ``Configuration.reference_in`` for a row, a frame) tests.
COLD_REFERENCE = "cold-reference"


# -- the timer vocabulary -------------------------------------------------------------------------
class Timer(str):
    """One timer of a sweep, as an object: what the frames' ``timer`` column says (it *is* that
    string: it compares and hashes as it, so a file's rows and a spec's configurations meet), what
    it needs from the kernel and which of the run's figures apply to it. Nobody else compares timer
    names: they ask the timer (``Timer.of(text)``; members ``Timer.EVENTS``, ``Timer.IN_KERNEL``, and
    the timers of other tools' files read as sweeps, ``Timer.PYPERF``, ``Timer.NVBENCH_COLD``:
    ``imported``, no sweep runs them).

    ``label``: how a message describes it; ``timed_kernel``: it needs the kernel's timed variant
    (compiled with ``-DHX_TIMED``: the kernel writes its own timestamps; a catalog kernel without
    ``timer`` cannot, an inline flush leaves no slot: ``FlushMode.measures``); ``launch_floor``:
    its times include the launch (device events around it), so the launch floor (``floor_s``,
    ``net_median_s``, the floor flags) applies; ``default``: what a configuration is timed by when
    nothing says otherwise (files written before the ``timer`` column, messages leave it unsaid);
    ``imported``: another tool timed it (``interop``), a sweep cannot."""

    EVENTS: "Timer"
    IN_KERNEL: "Timer"
    PYPERF: "Timer"
    NVBENCH_COLD: "Timer"
    label: str
    timed_kernel: bool
    launch_floor: bool
    default: bool
    imported: bool

    def __new__(
        cls,
        name: str,
        label: str = "",
        *,
        timed_kernel: bool = False,
        launch_floor: bool = False,
        default: bool = False,
        imported: bool = False,
    ) -> "Timer":
        self = super().__new__(cls, name)
        self.label, self.timed_kernel, self.launch_floor, self.default = label, timed_kernel, launch_floor, default
        self.imported = imported
        return self

    @property
    def name(self) -> str:
        return str.__str__(self)

    def __reduce__(self) -> Any:  # a pickled timer comes back as the member of its name
        return (Timer.of, (self.name, True))

    @classmethod
    def of(cls, text: Any, imported: bool = False) -> "Timer":
        """The ``Timer`` named ``text`` (or the timer itself) among those a sweep runs (``imported``:
        other tools' too, what a file may say); a one-line ``ConfigError`` naming the value and the
        expected ones."""
        among = _KNOWN if imported else _TIMERS
        found = among.get(text) if isinstance(text, str) else None
        if found is None:
            raise ConfigError(f"timer {text!r} is unknown; expected one of {', '.join(among)}")
        return found

    @classmethod
    def of_cell(cls, value: Any) -> "Timer":
        """The timer of a row's ``timer`` cell: the default where a file has none (absent, NaN, empty)."""
        if value is None or value != value or value == "":
            return cls.EVENTS
        return cls.of(str(value), imported=True)

    @classmethod
    def of_column(cls, frame: Any) -> Any:
        """The timer name of every row of ``frame`` (a Series; the default where a file has none)."""
        import pandas as pd

        if "timer" not in frame.columns:
            return pd.Series([cls.EVENTS.name] * len(frame), index=frame.index, dtype=object)
        return frame["timer"].map(lambda v: cls.of_cell(v).name)

    @classmethod
    def defaults_in(cls, frame: Any) -> Any:
        """Whether each row of ``frame`` was timed by the default timer (a boolean Series)."""
        return cls.of_column(frame) == cls.EVENTS.name


Timer.EVENTS = Timer("events", "device events around each launch", launch_floor=True, default=True)
Timer.IN_KERNEL = Timer("in-kernel", "the kernel's own timestamps (its -DHX_TIMED variant)", timed_kernel=True)
Timer.PYPERF = Timer("pyperf", "pyperf's own timing, read from its file", imported=True)
Timer.NVBENCH_COLD = Timer("nvbench-cold", "nvbench's cold measurement, read from its file", imported=True)
_TIMERS = {t.name: t for t in (Timer.EVENTS, Timer.IN_KERNEL)}
_KNOWN = {**_TIMERS, **{t.name: t for t in (Timer.PYPERF, Timer.NVBENCH_COLD)}}
#: every timer's name, in the order the docs list them (what ``--timer`` and ``SweepSpec.timers`` take)
TIMERS: tuple[str, ...] = tuple(_TIMERS)


# -- the small keys of a configuration ------------------------------------------------------------
class UntimedKey(NamedTuple):
    """A configuration without its timer: what a legacy file (no timer column) and a counter record carry."""

    kernel: str
    size: int
    rotating: str
    flush: str

    COLUMNS = ("kernel", "size_bytes", "rotating_requested", "flush")


class ReferenceKey(NamedTuple):
    """The cold reference a configuration's bias is measured against: one per (kernel, size, timer)."""

    kernel: str
    size: int
    timer: str

    COLUMNS = ("kernel", "size_bytes", "timer")


class Setup(NamedTuple):
    """A configuration less its kernel: what two kernels compared side by side (verdicts, interop
    sides) and the kernels of one interleaved group share."""

    size: int
    rotating: str
    flush: str
    timer: str

    COLUMNS = ("size_bytes", "rotating_requested", "flush", "timer")


# -- one configuration of a sweep -----------------------------------------------------------------
class _Fields(NamedTuple):
    kernel: str
    size: int
    rotating: str
    flush: str
    timer: Timer = Timer.EVENTS


class Configuration(_Fields):
    """One configuration of a sweep: what one summary row (and its sample rows) measured.

    A frozen, ordered value. A ``NamedTuple`` rather than a dataclass so that it *is* the
    (kernel, size, rotating, flush, timer) tuple the frames' rows spell: sets of configurations
    built from a file and from a ``SweepSpec`` compare and hash alike. ``size`` is bytes per array.
    ``timer`` is always a ``Timer`` (a name given is looked up, other tools' timers too: an unknown
    one is a ``ConfigError``).
    Which configurations a sweep has is ``SweepSpec.configurations()``'s business, not this type's.

    It owns how it is spelled in a frame: ``COLUMNS`` (the one list of the key's columns: resume,
    units, cluster, grouping, drift and verdicts all use it), its named parts (``untimed_key``,
    ``reference_key``, ``setup``, each a small NamedTuple with its ``COLUMNS``), the readers ``of``
    (a row), ``of_frame`` (every row), ``select`` (a frame's rows of some configurations),
    ``frame_key`` (the key columns of a frame, for joins) and the writer ``columns``. The cold
    reference's sentinel is tested here only: ``is_reference`` (a configuration), ``marks_reference``
    (a flush value, a row, a frame).

    The one rotating story: ``rotating`` is the count *as requested* (text: ``"auto"``, ``"4"``),
    written to the ``rotating_requested`` column, and it is the key: a sweep asked for ``auto`` is
    resumed, merged and compared as ``auto`` whatever it resolved to. The ``rotating`` column is the
    number of buffer sets the plan used, an outcome of the measurement like ``median_s``
    (``rotating_cap_bytes`` says when memory capped it); ``rotating_of`` reads the key of a frame,
    also from frames that carry only the count.
    """

    __slots__ = ()

    #: the frame columns of the key, in field order
    COLUMNS = ("kernel", "size_bytes", "rotating_requested", "flush", "timer")
    #: the frame columns of a cold reference's key: one reference per (kernel, size, timer)
    REFERENCE_COLUMNS = ReferenceKey.COLUMNS
    #: the key without the timer: what a legacy file (no timer column) and a counter record carry
    UNTIMED_COLUMNS = UntimedKey.COLUMNS
    #: the key without the kernel: what two kernels compared side by side share
    SETUP_COLUMNS = Setup.COLUMNS
    #: the cache setting a candidate is ranked under (rotating sets as requested, flush)
    CACHE_COLUMNS = ("rotating_requested", "flush")

    def __new__(
        cls, kernel: str, size: int, rotating: str, flush: str, timer: "str | Timer" = Timer.EVENTS
    ) -> "Configuration":
        return super().__new__(cls, kernel, size, rotating, flush, Timer.of(timer, imported=True))

    @classmethod
    def _make(cls, iterable: Iterable[Any]) -> "Configuration":  # ``_replace`` too: the timer looked up
        return cls(*iterable)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> "Configuration":
        """The configuration of a sample or summary row (a dict; ``timer`` absent in old files: events)."""
        return cls(
            str(row["kernel"]),
            int(row["size_bytes"]),
            str(row["rotating_requested"]),
            str(row["flush"]),
            Timer.of_cell(row.get("timer")),
        )

    @classmethod
    def of_frame(cls, frame: Any) -> "list[Configuration]":
        """The configuration of every row of a sample or summary frame, in row order."""
        return [
            cls(str(k), int(s), str(r), str(f), t)
            for k, s, r, f, t in zip(
                frame["kernel"],
                frame["size_bytes"],
                frame["rotating_requested"],
                frame["flush"],
                Timer.of_column(frame),
            )
        ]

    @classmethod
    def of_key(cls, key: Iterable[Any]) -> "Configuration":
        """The configuration of a groupby key over ``COLUMNS`` (the timer NaN in a frame without one: events)."""
        kernel, size, rotating, flush, timer = key
        return cls(str(kernel), int(size), str(rotating), str(flush), Timer.of_cell(timer))

    @classmethod
    def reference_of(cls, kernel: str, size: int, timer: "str | Timer" = Timer.EVENTS) -> "Configuration":
        """The configuration of the cold reference of (kernel, size, timer)."""
        return cls(kernel, size, "1", COLD_REFERENCE, timer)

    @staticmethod
    def marks_reference(what: Any) -> Any:
        """Whether ``what`` marks the cold reference: a flush value or a row (a mapping) as a bool;
        each row of a frame, or each value of a column of flush values, as a boolean Series."""
        if what is None or isinstance(what, str):
            return what == COLD_REFERENCE
        if isinstance(what, Mapping):
            return str(what.get("flush")) == COLD_REFERENCE
        return (what["flush"] if hasattr(what, "columns") else what) == COLD_REFERENCE

    @classmethod
    def in_frame(cls, frame: Any) -> bool:
        """Whether ``frame`` spells configurations (it has the key's columns; ``timer`` may be missing in old files)."""
        return set(cls.UNTIMED_COLUMNS) <= set(frame.columns)

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
        """The key as frame columns (what a writer puts in a row; the timer as its plain name)."""
        return dict(zip(self.COLUMNS, (self.kernel, self.size, self.rotating, self.flush, self.timer.name)))

    @property
    def is_reference(self) -> bool:
        return self.flush == COLD_REFERENCE

    @property
    def reference_key(self) -> ReferenceKey:
        """(kernel, size, timer): the cold reference this configuration's bias is measured against."""
        return ReferenceKey(self.kernel, self.size, self.timer)

    @property
    def untimed_key(self) -> UntimedKey:
        """(kernel, size, rotating, flush): the configuration less its timer (a counter record's key)."""
        return UntimedKey(self.kernel, self.size, self.rotating, self.flush)

    @property
    def setup(self) -> Setup:
        """(size, rotating, flush, timer): the configuration less its kernel."""
        return Setup(self.size, self.rotating, self.flush, self.timer)

    def reference(self) -> "Configuration":
        """The configuration of its cold reference."""
        return self.reference_of(self.kernel, self.size, self.timer)

    def describe(self) -> str:
        """How a message names it: ``size=16384 rotating=auto flush=l2-read`` (+ `` timer=in-kernel``)."""
        return f"size={self.size} rotating={self.rotating} flush={self.flush}" + (
            "" if self.timer.default else f" timer={self.timer}"
        )


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
