"""``SweepSpec``: what a sweep measures, as one frozen, picklable value.

The spec is the one place a sweep's options are declared: ``sweep()``'s keyword parameters and the
``hipexplore bench`` options are derived from its fields (their defaults and the ``help`` each
field carries in its metadata), ``configurations()`` is the one list of what a sweep measures, and
``timing()`` the ``TimingOptions`` every timed run takes. Adding a field: declare it here (with
``help``) and read it where it is used.

Why a value object: ``sweep()`` took 24 parameters and its resume check compared them by hand. A
spec is validated once (``__post_init__``: a ``ConfigError`` naming the field, the value and what
is allowed), can be sent to another process or machine (kernels are catalog names, or the
``KernelSpec`` a caller built), and is stored in the sweep's metadata (``sweep.spec``), so resuming
compares the recorded spec with the new one. ``measurement()`` is the part that must match for
finished rows to be kept: kernels, sizes, rotating counts and flush modes may grow.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigError
from . import spec_checks as ck
from .defaults import CHUNK_LEAD, CHUNK_TRAIL, DEFAULT_CHUNK, DEFAULT_MEM_FRACTION, WARMUP_S
from .spec_checks import check_budget, check_counters, check_resolution, check_units  # the options' checks

if TYPE_CHECKING:  # imported where they are used: `bench --help` builds its parser from this module's
    # SweepSpec, and these would bring the kernel catalog, the device layer and the timing loop with them
    from ..kernels.spec import KernelSpec
    from ..schema import Configuration
    from .stats import StopRule
    from .timing_options import TimingOptions


def _option(
    default: Any,
    help: str,
    *,
    metavar: str | None = None,
    least: int | None = None,
    most: int | None = None,
    alias: str | None = None,
    check: Any = None,
    const: Any = None,
) -> Any:
    """A spec field that ``sweep()`` and ``hipexplore bench`` offer as an option: its ``help`` (one
    line, the CLI shows it with the default), and for the CLI's parser a ``metavar``, the bounds of
    an integer (``least``, ``most``), an older flag name still accepted (``alias``), the function
    that reads the command line's text (``check``: text -> value, a ``ConfigError`` when it is wrong)
    and the value of the flag given without one (``const``: ``--counters`` alone is ``True``)."""
    return field(
        default=default,
        metadata={
            "help": help,
            "metavar": metavar,
            "least": least,
            "most": most,
            "alias": alias,
            "check": check,
            "const": const,
        },
    )


def options() -> list[dataclasses.Field]:
    """The spec fields ``sweep()`` takes as keywords and ``hipexplore bench`` as ``--options``, in order."""
    return [f for f in dataclasses.fields(SweepSpec) if "help" in f.metadata]


def _stop_rule() -> StopRule:
    """``SweepSpec.stop``'s default: ``StopRule()`` (imported here, not when this module loads)."""
    from .stats import StopRule

    return StopRule()


@dataclass(frozen=True)
class SweepSpec:
    """Every (kernel, size, rotating, flush) combination and how each is measured.

    ``kernels``: catalog names or ``KernelSpec`` objects; ``sizes``: bytes per array (ints or
    ``'64KiB'``-style text); ``rotating``: counts or ``'auto'``; ``flush``: modes of
    ``FLUSH_MODES``. Scalars are accepted for each and become 1-tuples. ``stop`` decides when a
    configuration has enough samples (``StopRule(iterations=N)`` for a fixed count). ``reference``
    takes a cold reference per (kernel, size) with ``reference_samples`` single launches.
    """

    kernels: tuple[str | KernelSpec, ...] = ("triad",)
    sizes: tuple[int, ...] = (1 << 20,)
    rotating: tuple[int | str, ...] = (1,)
    flush: tuple[str, ...] = ("none",)
    stop: StopRule = field(default_factory=_stop_rule)
    reference: bool = _option(
        True,
        "take a cold reference per (kernel, size): single launches after an l2-read flush (bias is NaN without one)",
    )
    reference_samples: int = _option(
        48, "cold-reference launches per (kernel, size), taken in reference_parts parts", least=1, most=1_000_000
    )
    mem_fraction: float = _option(DEFAULT_MEM_FRACTION, "cap rotating sets at this fraction of free device memory")
    chunk: int = _option(
        DEFAULT_CHUNK, "timed launches per stream hold (equal queue depth behind every timed launch)", least=1
    )
    #: untimed launches at the head of each chunk: an int, or "random" (0 or 1 per chunk, seeded):
    #: every chunk position then sees both launch parities (see bench.timing)
    chunk_lead: int | str = _option(
        CHUNK_LEAD,
        "untimed launches at the head of each hold: random (0 or 1 per chunk, "
        "so every position sees both launch parities) or N",
        metavar="random|N",
    )
    #: untimed samples after each chunk's last timed one, so that it too has work queued behind it
    chunk_trail: int = _option(CHUNK_TRAIL, "untimed samples after the last timed one of each hold", least=0)
    warmup_s: float = _option(WARMUP_S, "seconds of launches before each timed run")
    verify: bool = _option(
        True,
        "before any timing, check each (kernel, size) once: the --args roles (an 'in' never "
        "written, every 'out' element written, an 'inout' changed) and the output against its "
        "reference element by element",
    )
    #: (mode, factor) pairs: the flush buffer as a multiple of the LLC (see bench.flush)
    flush_factors: tuple[tuple[str, float], ...] = _option(
        (), "flush buffer as a multiple of the LLC per mode, e.g. l2-read=3,l2-write=1", metavar="MODE=X,..."
    )
    flush_end_event: bool = _option(False, "record an event between flush and kernel (a separate flush time)")
    #: which timers measure each configuration: ``events`` and/or ``in-kernel`` (kernels with a
    #: timed variant only; see bench.timing): one summary row per configuration and timer
    timers: tuple[str, ...] = _option(
        ("events",),
        "events, in-kernel (kernels' own timestamps), or both: events,in-kernel",
        metavar="TIMER,...",
        alias="--timer",
    )
    #: the cold reference is taken in this many parts spread through the (kernel, size)'s
    #: configurations, so drift during the sweep reaches the reference too (at most one part per
    #: reference sample)
    reference_parts: int = _option(
        3, "the cold reference is taken in this many parts through its configurations", least=1
    )
    #: samples whose chunk ran below this fraction of the device's maximum clock are throttled:
    #: flagged, and left out of the statistics when ``drop_throttled`` (counted in ``n_throttled``)
    throttle_threshold: float = _option(0.75, "a chunk below this fraction of the maximum clock is throttled")
    drop_throttled: bool = _option(
        True, "leave throttled samples out of the statistics (--no-drop-throttled keeps them)"
    )
    #: warm-up before the first configuration until the clock is stable, at least this long
    #: (None: the device's default: 0.4 s on AMD, whose clocks ramp slowly; 0.2 s on NVIDIA; 0 on the host)
    clock_warmup_s: float | None = _option(
        None,
        "warm up until the clock is stable, at least this many seconds "
        "(auto: 0.4 on AMD, 0.2 on NVIDIA, 0 on the host)",
    )
    #: A/B in one run: the kernels of each configuration are measured in alternating turns of a
    #: few chunks, in an order shuffled with ``interleave_seed`` (see bench.interleave)
    interleave: bool = _option(
        False, "A/B in one run: the kernels of each configuration in alternating, shuffled turns"
    )
    interleave_seed: int = _option(0, "the seed of the interleaved turns' shuffled order", least=0, alias="--seed")
    #: how many *units* measure each configuration: each unit its own share of the samples, its own
    #: buffer placement (fresh allocations behind a pad of its own size), its own code-object load
    #: and, on a GPU, its own process; intervals and verdicts are decided from the variation between
    #: units (``bench.levels``). "auto": at least 3, up to 6 where the unit medians spread wide
    #: (``bench.units``); 1 gives the old single-unit sweep, whose intervals cover chunk noise only
    units: int | str = _option(
        "auto",
        "units per configuration, each with its own placement, code load and (GPU) "
        "process; verdicts need >= 2 (auto: 3, up to 6 where units disagree)",
        metavar="auto|N",
        alias="--passes",
        check=check_units,
    )
    #: precision on request (Kalibera & Jones: size a level's repetitions by its variance): extra
    #: units, beyond the planned ones, for each configuration whose 95% interval over its units (the
    #: interval compare gives the ratio to the first kernel when interleaved) is wider than
    #: +-resolution, until it is or the extras have taken ``resolution_budget`` times the planned units' time (``bench.units``);
    #: the metadata's ``units.resolution`` says which. 0: off (auto's few extras only)
    resolution: float = _option(
        0.0,
        "extra units until each configuration's 95% half-width over its units (when "
        "interleaved: compare's interval of the ratio to the first kernel) reaches this, "
        "e.g. 1% or 0.01, or the budget runs out; 0: off",
        metavar="PCT",
        check=check_resolution,
    )
    resolution_budget: float = _option(
        2.0,
        "with --resolution: the extra units may take this multiple of the planned units' time",
        metavar="X",
        check=check_budget,
    )
    #: time the launch floor (an empty kernel, per flush mode, in each process) and report
    #: ``floor_s`` / ``net_median_s`` on events rows (see bench.floor); None: on a GPU, not on the host
    floor: bool | None = _option(
        None,
        "time the launch floor and report floor_s / net_median_s on events rows (auto: on a GPU, not on the host)",
        metavar="auto|on|off",
    )
    #: after the timed units, count each configuration's DRAM bytes and L2 hit rate with the
    #: device's profiler (``bench.counters``: a counting unit per (kernel, size) replays the trials'
    #: launches under CUPTI / ncu / rocprofv3, outside every timed window): True (the device's backend), a
    #: backend's name, or False. Not part of ``measurement()``: counting changes no timed sample.
    counters: bool | str = _option(
        False,
        "after the timed units, count DRAM bytes, L2 hit rate and cold fraction per "
        "configuration (CUPTI in process or ncu on NVIDIA, rocprofv3 on AMD; --counters alone: the "
        "device's)",
        metavar="on|off|cupti|ncu|rocprofv3",
        check=check_counters,
        const=True,
    )

    def __post_init__(self) -> None:
        """Each value checked once, in the order the fields read, by named steps (``bench.spec_checks``):
        a bad one is one ``ConfigError`` line naming the field, the value and what is allowed; the
        axes become tuples, the lead, trail, units, counters and resolution their checked values."""
        kernels, sizes, rotating, flush = ck.checked_axes(self.kernels, self.sizes, self.rotating, self.flush)
        ck.check_stop(self.stop)
        factors = ck.checked_flush_factors(self.flush_factors)
        self._set(ck.checked_chunks(self.chunk, self.chunk_lead, self.chunk_trail))
        ck.check_amounts(self)
        self._set(ck.checked_units(self))
        ck.check_switches(self)
        timers = ck.checked_timers(self.timers, kernels)
        ck.check_device_limits(self)
        self._set(
            {
                "kernels": kernels,
                "sizes": sizes,
                "rotating": rotating,
                "flush": flush,
                "flush_factors": factors,
                "timers": timers,
            }
        )

    def _set(self, values: dict[str, Any]) -> None:
        """Checked values in place of the given ones (the spec is frozen once made)."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    # -- derived views ----------------------------------------------------------------------------
    def specs(self) -> list[KernelSpec]:
        from ..kernels import catalog

        return [catalog.get(k) for k in self.kernels]

    @property
    def flush_factor(self) -> dict[str, float]:
        return dict(self.flush_factors)

    @staticmethod
    def measures(flush: str, timer: str) -> bool:
        """Whether a (flush, timer) pair exists (``FlushMode.measures``: the inline icache flush has
        no in-kernel timed variant, its wrapper has no timer slot, so that pair is never measured)."""
        from .flush import flush_mode

        return flush_mode(flush).measures(timer)

    def configurations(self) -> tuple[Configuration, ...]:
        """Every configuration the sweep measures, in the order it measures them: per kernel and
        size, each rotating count's flush modes and timers, then the cold reference per timer.
        The one list of which configurations exist (the summary's rows, the progress total,
        resume's and the cluster's bookkeeping all count these)."""
        from ..schema import Configuration

        out: list[Configuration] = []
        for kspec in self.specs():
            for size in self.sizes:
                out += [
                    Configuration(kspec.name, size, str(r), f, t)
                    for r in self.rotating
                    for f in self.flush
                    for t in self.timers
                    if self.measures(f, t)
                ]
                if self.reference:
                    out += [Configuration.reference_of(kspec.name, size, t) for t in self.timers]
        return tuple(out)

    def timing(self, telemetry: Any = None) -> TimingOptions:
        """How every timed run of this sweep is taken (``telemetry``: read after each chunk)."""
        from .timing_options import TimingOptions

        return TimingOptions(
            chunk=self.chunk,
            warmup_s=self.warmup_s,
            flush_end_event=self.flush_end_event,
            lead=self.chunk_lead,
            trail=self.chunk_trail,
            telemetry=telemetry,
        )

    def as_record(self) -> dict[str, Any]:
        """Every field as JSON-ready data (kernels by name): what ``sweep.spec`` stores."""
        from ..kernels import catalog

        return {
            "kernels": [catalog.get(k).name for k in self.kernels],
            "sizes": list(self.sizes),
            "rotating": list(self.rotating),
            "flush": list(self.flush),
            "stop": dataclasses.asdict(self.stop),
            "reference": self.reference,
            "reference_samples": self.reference_samples,
            "mem_fraction": self.mem_fraction,
            "chunk": self.chunk,
            "chunk_lead": self.chunk_lead,
            "chunk_trail": self.chunk_trail,
            "warmup_s": self.warmup_s,
            "verify": self.verify,
            "flush_factors": dict(self.flush_factors),
            "flush_end_event": self.flush_end_event,
            "timers": list(self.timers),
            "reference_parts": self.reference_parts,
            "throttle_threshold": self.throttle_threshold,
            "drop_throttled": self.drop_throttled,
            "clock_warmup_s": self.clock_warmup_s,
            "interleave": self.interleave,
            "interleave_seed": self.interleave_seed,
            "units": self.units,
            "floor": self.floor,
            "counters": self.counters,
            "resolution": self.resolution,
            "resolution_budget": self.resolution_budget,
        }

    def record(self) -> dict[str, str]:
        """The spec as metadata entries of a sweep's files: ``sweep.spec`` (the whole spec as JSON,
        which resume reads back) and the readable ``sweep.*`` / ``flush.factor.*`` keys (``bench.info``)."""
        from . import info
        from .stats import StopRule

        record = self.as_record()
        return info.spec_entries(record, repr(StopRule(**record["stop"])))

    def measurement(self) -> dict[str, str]:
        """What must be equal for rows measured under this spec to sit with rows measured under
        another (``bench.info.MEASUREMENT_KEYS`` and the flush factors)."""
        return _measurement_of(self.as_record())

    @staticmethod
    def recorded_measurement(metadata: Mapping[str, str]) -> dict[str, str]:
        """The measurement of a recorded sweep: from its ``sweep.spec`` when the writer stored one,
        else (legacy files, written before specs were recorded) its loose ``sweep.*`` keys."""
        from ..untrusted import load_json
        from . import info

        raw = info.SWEEP_SPEC.of(metadata)
        if raw:
            try:  # bounded: a recorded file is untrusted input (ConfigError for deep nesting, huge integers)
                return _measurement_of(load_json(raw, info.SWEEP_SPEC.name))
            except (ValueError, TypeError, KeyError, AttributeError, ConfigError):
                pass  # unreadable: compare what the loose keys say
        return info.recorded_measurement_keys(metadata)


def _measurement_of(record: Mapping[str, Any]) -> dict[str, str]:
    """``SweepSpec.measurement()`` of an ``as_record()`` dict (so a recorded spec reads the same)."""
    from . import info
    from .stats import StopRule

    return info.measurement_entries(record, repr(StopRule(**record["stop"])))


#: ``sweep()`` keywords of earlier releases and the spec fields they fill (a DeprecationWarning names both)
RENAMED = {"verify_results": "verify", "flush_factor": "flush_factors", "passes": "units"}


def spec_from_arguments(
    kernels: Any,
    sizes: Any,
    rotating: Any,
    flush: Any,
    *,
    iterations: int | None = None,
    stop: StopRule | None = None,
    **fields: Any,
) -> SweepSpec:
    """``sweep()``'s arguments as a ``SweepSpec`` (``iterations`` and ``stop`` exclude each other;
    ``fields``: spec fields by name, or their old names in ``RENAMED``)."""
    import warnings

    from ..kernels import catalog
    from ..kernels.spec import KernelSpec
    from .stats import StopRule

    for old, new in RENAMED.items():
        if old in fields:
            warnings.warn(f"sweep({old}=...) is now {new}=...", DeprecationWarning, stacklevel=3)
            fields[new] = fields.pop(old)
    known = {f.name for f in options()}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ConfigError(f"unknown sweep option(s) {', '.join(unknown)}; expected one of {', '.join(sorted(known))}")
    if isinstance(fields.get("flush_factors"), Mapping):
        fields["flush_factors"] = tuple(fields["flush_factors"].items())
    kernels = list(ck.listed(kernels, (str, KernelSpec)))
    specs = [catalog.get(k) for k in kernels]  # unknown kernel: the catalog's error, first
    if iterations is not None and stop is not None:
        SweepSpec(tuple(specs), sizes, rotating, flush)  # the lists' own errors come first, as they did
        raise ConfigError("give either iterations (fixed count) or stop (a StopRule), not both")
    rule = StopRule(iterations=iterations) if iterations is not None else (stop or StopRule())
    return SweepSpec(kernels=tuple(specs), sizes=sizes, rotating=rotating, flush=flush, stop=rule, **fields)
