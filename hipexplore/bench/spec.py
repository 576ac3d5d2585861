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
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigError
from .defaults import CHUNK_LEAD, CHUNK_TRAIL, DEFAULT_CHUNK, DEFAULT_MEM_FRACTION, WARMUP_S, auto_or_count

if TYPE_CHECKING:  # imported where they are used: `bench --help` builds its parser from this module's
    # SweepSpec, and these would bring the kernel catalog, the device layer and the timing loop with them
    from ..kernels.spec import KernelSpec
    from ..schema import Configuration
    from .stats import StopRule
    from .timing import TimingOptions

#: most units a sweep may make (each unit is a whole sweep of its share of the samples)
MAX_UNITS = 64
MAX_PASSES = MAX_UNITS  # the former name
#: ``units="auto"``: at least ``AUTO_UNITS[0]`` units, more (up to ``AUTO_UNITS[1]``) for the
#: configurations whose unit medians still spread wider than the stop rule's target (``bench.units``)
AUTO_UNITS = (3, 6)


def parse_size(text: str | int) -> int:
    """'1MiB', '256M', '4096', '64KiB', '1GiB', '1TiB' -> bytes."""
    if isinstance(text, numbers.Integral) and not isinstance(text, bool):
        if text <= 0:
            raise ConfigError(f"size must be positive, got {text}")
        return int(text)
    t = str(text).strip()
    units = {
        "": 1,
        "b": 1,
        "k": 1 << 10,
        "kib": 1 << 10,
        "kb": 1000,
        "m": 1 << 20,
        "mib": 1 << 20,
        "mb": 10**6,
        "g": 1 << 30,
        "gib": 1 << 30,
        "gb": 10**9,
        "t": 1 << 40,
        "tib": 1 << 40,
        "tb": 10**12,
    }
    num = t.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = t[len(num) :].strip().lower()
    try:
        val = float(num)
    except ValueError:
        val = -1
    if unit not in units or not val > 0 or not math.isfinite(val):
        raise ConfigError(f"size {text!r} is not a positive size like 4096, 64KiB, 1MiB, 256M, 1GiB or 1TiB")
    return int(val * units[unit])


def check_units(value: Any) -> int | str:
    """``units``: "auto" or an integer in [1, MAX_UNITS] (text as the CLI gives it too)."""
    given, value = value, auto_or_count(value)
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= MAX_UNITS:
        raise ConfigError(f"units must be 'auto' or an integer in [1, {MAX_UNITS}], got {given!r}")
    return int(value)


def check_resolution(value: Any) -> float:
    """``resolution``: 0 (off) or a fraction in (0, 0.5): ``0.01`` or ``1%`` (text as the CLI gives it too)."""
    given = value
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            value = math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value == 0 or 0 < value < 0.5):
        raise ConfigError(f"resolution must be 0 (off) or a half-width below 50%, such as 1% or 0.01; got {given!r}")
    return float(value)


def check_budget(value: Any) -> float:
    """``resolution_budget``: a positive multiple of the planned units' time (text as the CLI gives it too)."""
    given = value
    try:
        value = float(value) if isinstance(value, str) else value
    except ValueError:
        value = math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"resolution_budget must be a positive multiple of the planned units' time, such as 2; got {given!r}"
        )
    return float(value)


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


#: ``SweepSpec.counters``: the values it takes (True: the device's own backend)
COUNTER_BACKENDS = ("cupti", "ncu", "rocprofv3")


def check_counters(value: Any) -> bool | str:
    """``counters``: False, True (the device's backend) or a backend's name; the command line's text
    too (on/off, true/false, cupti, ncu, rocprofv3)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower() if isinstance(value, str) else None
    words = {
        "on": True,
        "true": True,
        "yes": True,
        "auto": True,
        "off": False,
        "false": False,
        "no": False,
        "none": False,
    }
    if text in words:
        return words[text]
    if text in COUNTER_BACKENDS:
        return text
    raise ConfigError(
        f"counters must be on, off or a backend ({', '.join(COUNTER_BACKENDS)}), got {value!r} "
        f"(on the command line, KERNEL goes before a bare --counters)"
    )


def options() -> list[dataclasses.Field]:
    """The spec fields ``sweep()`` takes as keywords and ``hipexplore bench`` as ``--options``, in order."""
    return [f for f in dataclasses.fields(SweepSpec) if "help" in f.metadata]


def _listed(value: Any, scalar: tuple[type, ...]) -> list[Any]:
    return [value] if isinstance(value, scalar) else list(value)


def _stop_rule() -> StopRule:
    """``SweepSpec.stop``'s default: ``StopRule()`` (imported here, not when this module loads)."""
    from .stats import StopRule

    return StopRule()


def _by_name(kernel: str | KernelSpec) -> str | KernelSpec:
    """A registered KernelSpec becomes its catalog name (picklable); others stay as given."""
    from ..kernels import catalog
    from ..kernels.spec import KernelSpec

    if isinstance(kernel, KernelSpec):
        try:
            if catalog.get(kernel.name) is kernel:
                return kernel.name
        except ConfigError:
            pass
    return kernel


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
        from ..kernels import catalog
        from ..kernels.spec import KernelSpec
        from ..schema import TIMERS, Timer
        from . import rotating as rot
        from .flush import FLUSH_MODES, flush_mode
        from .stats import StopRule
        from .timing import check_lead, check_trail

        kernels = tuple(_by_name(k) for k in _listed(self.kernels, (str, KernelSpec)))
        for k in kernels:
            catalog.get(k)  # an unknown name fails here, naming the registered kernels
        sizes = tuple(parse_size(s) for s in _listed(self.sizes, (int, str)))
        rotating = tuple(rot.parse_rotating(r) for r in _listed(self.rotating, (int, str)))
        flush = tuple(_listed(self.flush, (str,)))
        if not kernels or not sizes or not rotating or not flush:
            raise ConfigError("sweep needs at least one kernel, size, rotating count and flush mode")
        flush = tuple(flush_mode(f).name for f in flush)  # an unknown name: one line naming the known ones
        if not isinstance(self.stop, StopRule):
            raise ConfigError(f"stop must be a StopRule; got {self.stop!r}")
        factors = tuple(
            (str(k), v)
            for k, v in (self.flush_factors.items() if isinstance(self.flush_factors, Mapping) else self.flush_factors)
        )
        for mode, factor in factors:
            try:
                flush_mode(mode)
            except ConfigError:
                raise ConfigError(
                    f"flush factor for {mode!r}: unknown flush mode; expected one of {', '.join(FLUSH_MODES)}"
                ) from None
            if (
                isinstance(factor, bool)
                or not isinstance(factor, (int, float))
                or not math.isfinite(factor)
                or factor <= 0
            ):
                raise ConfigError(f"flush factor for {mode!r} must be a positive, finite number; got {factor!r}")
        self._check_int("chunk", self.chunk, 1)
        object.__setattr__(self, "chunk_lead", check_lead(self.chunk_lead))
        object.__setattr__(self, "chunk_trail", check_trail(self.chunk_trail))
        if self.reference:
            self._check_int("reference_samples", self.reference_samples, 1)
        if (
            isinstance(self.mem_fraction, bool)
            or not isinstance(self.mem_fraction, (int, float))
            or not 0 < self.mem_fraction <= 1
        ):
            raise ConfigError(f"mem_fraction must be in (0, 1], got {self.mem_fraction!r}")
        if (
            isinstance(self.warmup_s, bool)
            or not isinstance(self.warmup_s, (int, float))
            or not math.isfinite(self.warmup_s)
            or self.warmup_s < 0
        ):
            raise ConfigError(f"warmup_s must be a finite number of seconds >= 0, got {self.warmup_s!r}")
        self._check_int("interleave_seed", self.interleave_seed, 0)
        object.__setattr__(self, "units", check_units(self.units))
        iterations = None if self.stop.adaptive else int(self.stop.iterations or 0)
        if self.units != "auto" and iterations and int(self.units) > iterations:
            # each unit takes a sample at least: 20 units of 10 iterations silently took 20
            raise ConfigError(
                f"units {self.units} is more than the {iterations} iterations it would split: each unit takes at "
                f"least one sample; give {iterations} units or fewer, more iterations, or units 'auto'"
            )
        object.__setattr__(self, "counters", check_counters(self.counters))
        object.__setattr__(self, "resolution", check_resolution(self.resolution))
        object.__setattr__(self, "resolution_budget", check_budget(self.resolution_budget))
        if self.floor is not None and not isinstance(self.floor, bool):
            raise ConfigError(f"floor must be True, False or None (on a GPU only), got {self.floor!r}")
        for name in ("reference", "verify", "flush_end_event", "drop_throttled", "interleave"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        timers = tuple(dict.fromkeys(_listed(self.timers, (str,))))
        if not timers:
            raise ConfigError(f"timers needs at least one of {', '.join(TIMERS)}")
        if any(t.timed_kernel for t in [Timer.of(t) for t in timers]):  # each named checked first
            untimed = [catalog.get(k).name for k in kernels if not catalog.get(k).timer]
            if untimed:
                raise ConfigError(
                    f"the in-kernel timer needs kernels that write their own timestamps; "
                    f"{', '.join(repr(u) for u in untimed)} do(es) not (timer-capable: "
                    f"{', '.join(n for n in catalog.names() if catalog.get(n).timer)})"
                )
        self._check_int("reference_parts", self.reference_parts, 1)
        if (
            isinstance(self.throttle_threshold, bool)
            or not isinstance(self.throttle_threshold, (int, float))
            or not 0 <= self.throttle_threshold < 1
        ):
            raise ConfigError(
                f"throttle_threshold must be a fraction in [0, 1) of the maximum clock, got {self.throttle_threshold!r}"
            )
        if self.clock_warmup_s is not None and (
            isinstance(self.clock_warmup_s, bool)
            or not isinstance(self.clock_warmup_s, (int, float))
            or not math.isfinite(self.clock_warmup_s)
            or not 0 <= self.clock_warmup_s <= 60
        ):
            raise ConfigError(f"clock_warmup_s must be None or seconds in [0, 60], got {self.clock_warmup_s!r}")
        for name, value in (
            ("kernels", kernels),
            ("sizes", sizes),
            ("rotating", rotating),
            ("flush", flush),
            ("flush_factors", factors),
            ("timers", timers),
        ):
            object.__setattr__(self, name, value)

    @staticmethod
    def _check_int(name: str, value: Any, least: int) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
            raise ConfigError(f"{name} must be an integer >= {least}, got {value!r}")

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
        from .timing import TimingOptions

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
    kernels = list(_listed(kernels, (str, KernelSpec)))
    specs = [catalog.get(k) for k in kernels]  # unknown kernel: the catalog's error, first
    if iterations is not None and stop is not None:
        SweepSpec(tuple(specs), sizes, rotating, flush)  # the lists' own errors come first, as they did
        raise ConfigError("give either iterations (fixed count) or stop (a StopRule), not both")
    rule = StopRule(iterations=iterations) if iterations is not None else (stop or StopRule())
    return SweepSpec(kernels=tuple(specs), sizes=sizes, rotating=rotating, flush=flush, stop=rule, **fields)
