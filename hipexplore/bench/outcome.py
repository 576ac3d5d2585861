"""``ConfigurationResult``: what one (configuration, unit) of a sweep measured, as one typed object.

Why: a configuration starts typed (``Configuration``, its flush mode, its rotating plan) and used to
become a dict row and a DataFrame inside the unit, then be grown by ``row.update`` in three places
(phases, floor, bias, counters) and joined back by column names. Here the unit (``bench.sweeprun``)
makes one ``ConfigurationResult`` per configuration: the configuration, its raw samples, its
``Measurement``, the rotating plan it ran under, the launch floor, the bias against its cold reference
and *named summaries* (nvbench's one ``state`` with named summaries, torch's ``Measurement`` grouped by
its ``TaskSpec``): ``statistics`` (``Statistics``), ``run`` (``RunSummary``: how the sampling ended,
the bandwidth), ``counters`` (``CounterSummary``, the counter pass's figures) and, a cluster unit's,
``placement`` (``Placement``: the worker that measured it). A change is a new object
(``dataclasses.replace``, ``with_summary``), never a row grown in place.

It crosses the worker pipe and the Dask task as data (``bench.wire``: each part's fields by their
declared types, the samples as typed arrays, never a pickle), ``bench.record.Record`` keeps them per
(configuration, unit), and only ``bench.io`` turns them into the files' rows and frames. Every part
is named by the columns it fills (``hipexplore.schema``'s lists stay the contract): ``columns()`` is
the flat view io writes and the trust checks read, ``of_columns`` reads a row of a file back into
the same parts, losslessly, so files written by the previous revision read back identically.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from ..schema import COUNTER_COLUMNS, SAMPLE_COLUMNS, Configuration
from .stats import Measurement

if TYPE_CHECKING:
    import numpy as np

NAN = math.nan
#: the unit of a result merged over a sweep's units (``bench.passes.merged_result``)
MERGED = -1


class Part:
    """A part of a result whose fields are the columns it fills (declared types: ``str``, ``int``,
    ``float``, ``bool``; ``bench.wire`` checks them). ``NAME``: the summary's name among a result's."""

    NAME: ClassVar[str] = ""

    def columns(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))  # type: ignore[arg-type]

    @classmethod
    def of_columns(cls, row: Mapping[str, Any]) -> Any:
        """The part from a row (a file's): each field's column as read (so it writes back identically),
        its default where the row has none."""
        given = {f.name: row[f.name] for f in fields(cls) if f.name in row}  # type: ignore[arg-type]
        return cls(**given)


@dataclass(frozen=True)
class Identity(Part):
    """Which run and device measured it."""

    run_id: str = ""
    device: str = ""
    device_name: str = ""


@dataclass(frozen=True)
class Rotation(Part):
    """The rotating plan as it ran (``bench.rotating.RotatingPlan``): the count asked for, the buffer
    sets used, the memory cap they were sized under, one set's footprint."""

    rotating_requested: str = ""
    rotating: int = 1
    rotating_cap_bytes: int = 0
    footprint_bytes: int = 0

    @classmethod
    def of_plan(cls, plan: Any) -> "Rotation":
        return cls(str(plan.requested), int(plan.count), int(plan.cap_bytes), int(plan.footprint_bytes))


@dataclass(frozen=True)
class Floor(Part):
    """The launch floor after the configuration's flush and its median net of it (NaN: no floor)."""

    floor_s: float = NAN
    net_median_s: float = NAN

    @classmethod
    def of(cls, floor_s: float | None, median_s: float, timer: Any) -> "Floor":
        """NaN for a timer the floor does not apply to (in-kernel) or no floor measured (``bench.floor``)."""
        from ..schema import Timer

        if not Timer.of(timer, imported=True).launch_floor or floor_s is None or not math.isfinite(floor_s):
            return cls()
        return cls(float(floor_s), float(median_s) - float(floor_s))


@dataclass(frozen=True)
class Bias(Part):
    """The median against the cold reference's: ``median / reference - 1`` and its interval (NaN without one)."""

    reference_median_s: float = NAN
    bias: float = NAN
    bias_ci_low: float = NAN
    bias_ci_high: float = NAN

    @classmethod
    def of(cls, m: Measurement, ref: Measurement | None) -> "Bias":
        """Against ``ref`` (``stats.ratio_ci``: the two-sample interval; passes' ratios where there are passes)."""
        from .stats import ratio_ci

        if ref is None or not ref.median > 0:
            return cls()
        ratio, lo, hi = ratio_ci(m, ref, resamples=1000)
        return cls(ref.median, ratio - 1.0, lo - 1.0, hi - 1.0)


@dataclass(frozen=True)
class Statistics(Part):
    """The named summary ``statistics``: the ``Measurement``'s figures (its interval a block bootstrap)."""

    NAME: ClassVar[str] = "statistics"
    n: int = 0
    median_s: float = NAN
    mean_s: float = NAN
    min_s: float = NAN
    p5_s: float = NAN
    p95_s: float = NAN
    iqr_rel: float = NAN
    cv: float = NAN
    ci_low_s: float = NAN
    ci_high_s: float = NAN
    n_outliers: int = 0
    bimodality: float = NAN

    @classmethod
    def of(cls, summary: Mapping[str, Any]) -> "Statistics":
        """From ``Measurement.summary()``."""
        return cls.of_columns(summary)


@dataclass(frozen=True)
class RunSummary(Part):
    """The named summary ``run``: how the sampling ended (its stop reason, a timeout, throttled
    samples, the median clock), the units merged and the bandwidth against the device's peak."""

    NAME: ClassVar[str] = "run"
    passes: int = 1
    stop_reason: str = ""
    timed_out: bool = False
    n_throttled: int = 0
    clock_mhz: float = NAN
    bandwidth_gbs: float = NAN
    peak_bandwidth_gbs: float = NAN


#: the text columns among the counter columns (a configuration nothing counted has "" there, NaN elsewhere)
COUNTER_TEXT_COLUMNS = ("cache_state", "cold_promise", "counter_warning", "counter_backend", "counter_note")


@dataclass(frozen=True)
class CounterSummary(Part):
    """The named summary ``counters``: one configuration's counters (per launch: the mean over its
    counted launches; ``bench.counters``), made where they are known (in a counting unit's worker by
    a backend that counts in process, at the executor's finish step from a report, or from a summary
    row read back). The fields are ``schema.COUNTER_COLUMNS``, in that order."""

    NAME: ClassVar[str] = "counters"
    dram_read_bytes: float
    dram_write_bytes: float
    #: L2 hits / lookups, 0..1
    l2_hit_rate: float
    #: bytes of the launch's in/inout buffers
    input_bytes: int
    #: DRAM bytes read per launch / ``input_bytes``
    cold_fraction: float
    #: cold / partial / warm (n/a without inputs)
    cache_state: str
    #: "" (not asked cold), "kept", "broken", or "unverified"
    cold_promise: str
    #: the promise check's one line ("" unless broken or unverified)
    counter_warning: str
    #: the backend that counted ("ncu 2025.3.1", "CUPTI range profiler (libcupti.so.13)")
    counter_backend: str
    #: launches counted
    counter_launches: int
    #: what the backend said about how it counted ("" when nothing is to be said)
    counter_note: str = ""

    @classmethod
    def of_columns(cls, columns: Mapping[str, Any]) -> "CounterSummary":
        """From the counter columns (every one of ``COUNTER_COLUMNS``; others are ignored)."""
        return cls(**{c: columns[c] for c in COUNTER_COLUMNS})

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> "CounterSummary | None":
        """The counters a summary row read back holds, its values as they were read; None when
        nothing counted it (no counter columns, or an empty backend: a file written without
        counters, a configuration not counted, the cold reference)."""
        backend = row.get("counter_backend")
        if not isinstance(backend, str) or not backend:
            return None
        return cls(**{c: row.get(c, "" if c in COUNTER_TEXT_COLUMNS else NAN) for c in COUNTER_COLUMNS})

    @classmethod
    def uncounted(cls) -> "CounterSummary":
        """The columns of a configuration nothing counted: NaN, and "" in the text columns."""
        return cls(**{c: ("" if c in COUNTER_TEXT_COLUMNS else NAN) for c in COUNTER_COLUMNS})


@dataclass(frozen=True)
class Placement(Part):
    """The named summary ``placement`` of a cluster unit: the Dask worker, its host, the pinned GPU."""

    NAME: ClassVar[str] = "placement"
    worker: str = ""
    host: str = ""
    gpu: str = ""


#: the named summaries a result may hold, by name
SUMMARIES: dict[str, type[Part]] = {s.NAME: s for s in (Statistics, RunSummary, CounterSummary, Placement)}


@dataclass(frozen=True, eq=False)
class Samples:
    """A result's raw samples: one array per sample column (``schema.SAMPLE_COLUMNS``, plus the
    cluster's), in the schema's order; what the samples file holds of the configuration."""

    columns: Mapping[str, "np.ndarray"]

    @classmethod
    def of_raw(
        cls, who: Identity, conf: Configuration, plan: Rotation, raw: Any, marks: "tuple[np.ndarray, np.ndarray]"
    ) -> "Samples":
        """The raw samples (``raw``: a ``bench.raw_times.RawTimes``) of a configuration as the samples file's columns (``schema.SAMPLE_COLUMNS``);
        ``marks``: which were throttled, and which dropped from the statistics."""
        import numpy as np

        k = len(raw.time_s)
        throttled, dropped = marks

        def text(v: Any) -> np.ndarray:
            out = np.empty(k, dtype=object)
            out[:] = [v] * k
            return out

        def ints(v: Any) -> np.ndarray:
            return np.asarray(v, dtype=np.int64) if not np.isscalar(v) else np.full(k, v, dtype=np.int64)

        columns = {
            "run_id": text(who.run_id),
            "device": text(who.device),
            "device_name": text(who.device_name),
            "kernel": text(conf.kernel),
            "size_bytes": ints(conf.size),
            "footprint_bytes": ints(plan.footprint_bytes),
            "rotating": ints(plan.rotating),
            "rotating_requested": text(conf.rotating),
            "flush": text(conf.flush),
            "timer": text(conf.timer),
            "iteration": np.arange(k, dtype=np.int64),
            "pass_index": np.zeros(k, dtype=np.int64),
            "chunk": ints(raw.chunk),
            "position": ints(raw.position),
            "lead": ints(raw.lead),
            "buffer_set": ints(raw.buffer_set),
            "time_s": raw.time_s,
            "flush_s": raw.flush_s,
            "gap_s": raw.gap_s,
            "clock_mhz": raw.clock_mhz,
            "temp_c": raw.temp_c,
            "power_w": raw.power_w,
            "host_load": raw.host_load,
            "host_busy": raw.host_busy,
            "host_steal": raw.host_steal,
            "throttled": throttled.astype(bool),
            "dropped": dropped.astype(bool),
        }
        return cls({c: columns[c] for c in SAMPLE_COLUMNS})

    @property
    def n(self) -> int:
        first = next(iter(self.columns.values()), None)
        return 0 if first is None else len(first)

    def __getitem__(self, name: str) -> "np.ndarray":
        return self.columns[name]

    def measurement(self, label: str = "", notes: "list[str] | None" = None, *, groups: bool = False) -> Measurement:
        """The ``Measurement`` of the kept samples (every one when all were dropped), blocks of chunks
        (within units: ``groups``, the merged samples' ``pass_index``)."""
        keep = ~self.columns["dropped"].astype(bool)
        if not keep.any():
            keep = ~keep
        return Measurement(
            self.columns["time_s"][keep],
            label=label,
            notes=list(notes or []),
            chunks=self.columns["chunk"][keep],
            groups=self.columns["pass_index"][keep] if groups else None,
        )

    def but(self, **arrays: Any) -> "Samples":
        """These samples with some columns replaced (the order kept)."""
        return Samples({c: arrays.get(c, v) for c, v in self.columns.items()})

    @staticmethod
    def concat(parts: "list[Samples]") -> "Samples":
        import numpy as np

        parts = [p for p in parts if p.n] or parts[:1]
        return Samples({c: np.concatenate([p.columns[c] for p in parts]) for c in parts[0].columns})


@dataclass(frozen=True, eq=False)
class ConfigurationResult:
    """One (configuration, unit)'s outcome (module docstring); ``unit``: the unit that measured it,
    ``MERGED`` for the merge of a configuration's units (its samples carry each one's ``pass_index``)."""

    configuration: Configuration
    unit: int
    identity: Identity
    plan: Rotation
    samples: Samples
    measurement: Measurement | None  #: None only for a row read back without its samples
    floor: Floor = field(default_factory=Floor)
    bias: Bias = field(default_factory=Bias)
    summaries: tuple[Part, ...] = ()
    warning: str = ""

    def summary(self, name: str) -> Any:
        """The named summary ``name`` (``statistics``, ``run``, ``counters``, ``placement``), or None."""
        return next((s for s in self.summaries if s.NAME == name), None)

    @property
    def statistics(self) -> Statistics:
        return self.summary(Statistics.NAME) or Statistics()

    @property
    def run(self) -> RunSummary:
        return self.summary(RunSummary.NAME) or RunSummary()

    @property
    def counters(self) -> CounterSummary | None:
        return self.summary(CounterSummary.NAME)

    def with_summary(self, part: Part | None, name: str = "") -> "ConfigurationResult":
        """This result with ``part`` in place of its summary of that name (None: without ``name``'s)."""
        drop = part.NAME if part is not None else name
        return replace(
            self, summaries=(*(s for s in self.summaries if s.NAME != drop), *([part] if part is not None else []))
        )

    def columns(self) -> dict[str, Any]:
        """The flat view: every column the parts fill, the named summaries' where it has them (what
        ``bench.io`` writes as the summary row, what the trust checks read)."""
        parts = [
            self.identity,
            self.plan,
            self.statistics,
            self.run,
            self.bias,
            self.floor,
            *(s for s in self.summaries if s.NAME not in (Statistics.NAME, RunSummary.NAME)),
        ]
        return (
            {k: v for p in parts for k, v in p.columns().items()}
            | self.configuration.columns()
            | {"warning": self.warning}
        )

    @classmethod
    def of_columns(
        cls, row: Mapping[str, Any], samples: Samples, unit: int, *, groups: bool = False
    ) -> "ConfigurationResult":
        """A row of a file (a summary or units row) and its samples read back as a result."""
        c = Configuration.of(row)
        summaries: list[Part] = [Statistics.of_columns(row), RunSummary.of_columns(row)]
        counted = CounterSummary.of_row(row)
        if counted is not None:
            summaries.append(counted)
        if any(k in row for k in Placement.names()):
            summaries.append(Placement.of_columns(row))
        m = samples.measurement(" ".join(map(str, c)), groups=groups) if samples.n else None
        return cls(
            c,
            unit,
            Identity.of_columns(row),
            Rotation.of_columns(row),
            samples,
            m,
            Floor.of_columns(row),
            Bias.of_columns(row),
            tuple(summaries),
            row.get("warning", ""),
        )


@dataclass(frozen=True)
class Rebiased:
    """A result sent before, filled in again once its cold reference is whole: its bias and its
    warning (a reference flag may join it). ``apply`` makes the new result."""

    configuration: Configuration
    bias: Bias
    warning: str

    @classmethod
    def of(cls, result: ConfigurationResult) -> "Rebiased":
        return cls(result.configuration, result.bias, result.warning)

    def apply(self, result: ConfigurationResult) -> ConfigurationResult:
        return replace(result, bias=self.bias, warning=self.warning)


__all__ = [
    "Bias",
    "COUNTER_TEXT_COLUMNS",
    "ConfigurationResult",
    "CounterSummary",
    "Floor",
    "Identity",
    "MERGED",
    "Part",
    "Placement",
    "Rebiased",
    "Rotation",
    "RunSummary",
    "SUMMARIES",
    "Samples",
    "Statistics",
]
