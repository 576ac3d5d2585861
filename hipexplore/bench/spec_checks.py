"""The checks of a sweep's values: each bad input is one ``ConfigError`` line naming the field, the value
and what is allowed.

Why a module of its own: the same checks read ``sweep()``'s keywords, the ``hipexplore bench``
command line's text (an option's ``check``: ``check_units``, ``check_resolution``, ...), a notebook's
parameters and the widgets' fields, and ``SweepSpec.__post_init__`` runs them as a few named steps
(the axes, the chunks, the amounts, the units, the switches, the timers, the device limits) in the
order a reader meets the fields. ``hipexplore bench --help`` imports this module (the options' checks
are in the spec's field metadata), so what the checks need beyond the library's errors (the kernel
catalog, the flush modes, the timing loop's lead and trail) is imported where it is used.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ConfigError
from .defaults import auto_or_count

if TYPE_CHECKING:
    from ..kernels.spec import KernelSpec

#: most units a sweep may make (each unit is a whole sweep of its share of the samples)
MAX_UNITS = 64
MAX_PASSES = MAX_UNITS  # the former name
#: ``units="auto"``: at least ``AUTO_UNITS[0]`` units, more (up to ``AUTO_UNITS[1]``) for the
#: configurations whose unit medians still spread wider than the stop rule's target (``bench.units``)
AUTO_UNITS = (3, 6)
#: ``SweepSpec.counters``: the values it takes (True: the device's own backend)
COUNTER_BACKENDS = ("cupti", "ncu", "rocprofv3")
#: the size units ``parse_size`` reads, in bytes
_SIZE_UNITS = {
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


# -- one value, as a keyword or as the command line's text ---------------------------------------
def parse_size(text: str | int) -> int:
    """'1MiB', '256M', '4096', '64KiB', '1GiB', '1TiB' -> bytes."""
    if isinstance(text, numbers.Integral) and not isinstance(text, bool):
        if text <= 0:
            raise ConfigError(f"size must be positive, got {text}")
        return int(text)
    t = str(text).strip()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = t[len(num) :].strip().lower()
    try:
        val = float(num)
    except ValueError:
        val = -1
    if unit not in _SIZE_UNITS or not val > 0 or not math.isfinite(val):
        raise ConfigError(f"size {text!r} is not a positive size like 4096, 64KiB, 1MiB, 256M, 1GiB or 1TiB")
    return int(val * _SIZE_UNITS[unit])


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
    if not _real(value) or not (value == 0 or 0 < value < 0.5):
        raise ConfigError(f"resolution must be 0 (off) or a half-width below 50%, such as 1% or 0.01; got {given!r}")
    return float(value)


def check_budget(value: Any) -> float:
    """``resolution_budget``: a positive multiple of the planned units' time (text as the CLI gives it too)."""
    given = value
    try:
        value = float(value) if isinstance(value, str) else value
    except ValueError:
        value = math.nan
    if not _real(value) or not (math.isfinite(value) and value > 0):
        raise ConfigError(
            f"resolution_budget must be a positive multiple of the planned units' time, such as 2; got {given!r}"
        )
    return float(value)


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


def check_int(name: str, value: Any, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ConfigError(f"{name} must be an integer >= {least}, got {value!r}")


def listed(value: Any, scalar: tuple[type, ...]) -> list[Any]:
    """A scalar as a one-item list; a sequence as a list."""
    return [value] if isinstance(value, scalar) else list(value)


def _real(value: Any) -> bool:
    """An int or a float, not a bool."""
    return not isinstance(value, bool) and isinstance(value, (int, float))


# -- the steps of ``SweepSpec.__post_init__`` ------------------------------------------------------
def by_name(kernel: str | KernelSpec) -> str | KernelSpec:
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


def checked_axes(kernels: Any, sizes: Any, rotating: Any, flush: Any) -> tuple[tuple[Any, ...], ...]:
    """The four axes as tuples: each kernel known (by name where registered), each size in bytes,
    each rotating count read, each flush mode by its name; none empty."""
    from ..kernels import catalog
    from ..kernels.spec import KernelSpec
    from . import rotating as rot
    from .flush import flush_mode

    names = tuple(by_name(k) for k in listed(kernels, (str, KernelSpec)))
    for k in names:
        catalog.get(k)  # an unknown name fails here, naming the registered kernels
    byte_sizes = tuple(parse_size(s) for s in listed(sizes, (int, str)))
    counts = tuple(rot.parse_rotating(r) for r in listed(rotating, (int, str)))
    modes = tuple(listed(flush, (str,)))
    if not names or not byte_sizes or not counts or not modes:
        raise ConfigError("sweep needs at least one kernel, size, rotating count and flush mode")
    return names, byte_sizes, counts, tuple(flush_mode(f).name for f in modes)  # an unknown mode: one line


def check_stop(stop: Any) -> None:
    from .stats import StopRule

    if not isinstance(stop, StopRule):
        raise ConfigError(f"stop must be a StopRule; got {stop!r}")


def checked_flush_factors(value: Any) -> tuple[tuple[str, Any], ...]:
    """(mode, factor) pairs (from a mapping too): each mode known, each factor positive and finite."""
    from .flush import FLUSH_MODES, flush_mode

    factors = tuple((str(k), v) for k, v in (value.items() if isinstance(value, Mapping) else value))
    for mode, factor in factors:
        try:
            flush_mode(mode)
        except ConfigError:
            raise ConfigError(
                f"flush factor for {mode!r}: unknown flush mode; expected one of {', '.join(FLUSH_MODES)}"
            ) from None
        if not _real(factor) or not math.isfinite(factor) or factor <= 0:
            raise ConfigError(f"flush factor for {mode!r} must be a positive, finite number; got {factor!r}")
    return factors


def checked_chunks(chunk: Any, lead: Any, trail: Any) -> dict[str, Any]:
    """The chunk (timed launches per hold, >= 1), its untimed lead and trail as the timing loop takes them."""
    from .timing_options import check_lead, check_trail

    check_int("chunk", chunk, 1)
    return {"chunk_lead": check_lead(lead), "chunk_trail": check_trail(trail)}


def check_amounts(spec: Any) -> None:
    """The cold reference's samples (when it is taken), the memory share, the warm-up, the seed."""
    if spec.reference:
        check_int("reference_samples", spec.reference_samples, 1)
    if not _real(spec.mem_fraction) or not 0 < spec.mem_fraction <= 1:
        raise ConfigError(f"mem_fraction must be in (0, 1], got {spec.mem_fraction!r}")
    if not _real(spec.warmup_s) or not math.isfinite(spec.warmup_s) or spec.warmup_s < 0:
        raise ConfigError(f"warmup_s must be a finite number of seconds >= 0, got {spec.warmup_s!r}")
    check_int("interleave_seed", spec.interleave_seed, 0)


def checked_units(spec: Any) -> dict[str, Any]:
    """The units (no more than the fixed iterations they split), the counters, the resolution and its budget."""
    units = check_units(spec.units)
    iterations = None if spec.stop.adaptive else int(spec.stop.iterations or 0)
    if units != "auto" and iterations and int(units) > iterations:
        # each unit takes a sample at least: 20 units of 10 iterations silently took 20
        raise ConfigError(
            f"units {units} is more than the {iterations} iterations it would split: each unit takes at "
            f"least one sample; give {iterations} units or fewer, more iterations, or units 'auto'"
        )
    return {
        "units": units,
        "counters": check_counters(spec.counters),
        "resolution": check_resolution(spec.resolution),
        "resolution_budget": check_budget(spec.resolution_budget),
    }


def check_switches(spec: Any) -> None:
    """The floor (True, False or None: auto) and the switches that are True or False."""
    if spec.floor is not None and not isinstance(spec.floor, bool):
        raise ConfigError(f"floor must be True, False or None (on a GPU only), got {spec.floor!r}")
    for name in ("reference", "verify", "flush_end_event", "drop_throttled", "interleave"):
        if not isinstance(getattr(spec, name), bool):
            raise ConfigError(f"{name} must be True or False, got {getattr(spec, name)!r}")


def checked_timers(timers: Any, kernels: tuple[Any, ...]) -> tuple[str, ...]:
    """The timers, each once: at least one, each known, the in-kernel one only for kernels that time themselves."""
    from ..kernels import catalog
    from ..schema import TIMERS, Timer

    names = tuple(dict.fromkeys(listed(timers, (str,))))
    if not names:
        raise ConfigError(f"timers needs at least one of {', '.join(TIMERS)}")
    if any(t.timed_kernel for t in [Timer.of(t) for t in names]):  # each named checked first
        untimed = [catalog.get(k).name for k in kernels if not catalog.get(k).timer]
        if untimed:
            raise ConfigError(
                f"the in-kernel timer needs kernels that write their own timestamps; "
                f"{', '.join(repr(u) for u in untimed)} do(es) not (timer-capable: "
                f"{', '.join(n for n in catalog.names() if catalog.get(n).timer)})"
            )
    return names


def check_device_limits(spec: Any) -> None:
    """The reference's parts, the throttle threshold, the clock warm-up."""
    check_int("reference_parts", spec.reference_parts, 1)
    if not _real(spec.throttle_threshold) or not 0 <= spec.throttle_threshold < 1:
        raise ConfigError(
            f"throttle_threshold must be a fraction in [0, 1) of the maximum clock, got {spec.throttle_threshold!r}"
        )
    warm = spec.clock_warmup_s
    if warm is not None and (not _real(warm) or not math.isfinite(warm) or not 0 <= warm <= 60):
        raise ConfigError(f"clock_warmup_s must be None or seconds in [0, 60], got {warm!r}")


__all__ = [
    "AUTO_UNITS",
    "COUNTER_BACKENDS",
    "MAX_PASSES",
    "MAX_UNITS",
    "check_budget",
    "check_counters",
    "check_resolution",
    "check_units",
    "parse_size",
]
