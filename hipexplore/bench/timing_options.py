"""``TimingOptions``: how every timed run of a sweep is taken, as one value; and the checks of the
chunk's untimed lead and trail.

Why apart from the timing loop (``bench.timing``): the options are read by the sweep's spec
(``SweepSpec.timing()``, whose checks take the lead and trail: ``bench.spec_checks``), the cold
reference, the launch floor, the interleaved turns and the counter pass, and they import nothing of
the device layer, the kernels' build or numpy (imported where a value is checked), which the loop
itself needs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .defaults import CHUNK_LEAD, CHUNK_TRAIL, DEFAULT_CHUNK, WARMUP_S

if TYPE_CHECKING:
    from ..devices.telemetry import Telemetry

#: Seed of the random leads' order (each call draws the same balanced sequence: reproducible).
LEAD_SEED = 0x1EAD
HOLD_TIMEOUT_S = 5.0  # the blocking kernel's timeout (s)


@dataclass(frozen=True)
class TimingOptions:
    """How every timed run of a sweep is taken, as one value (``SweepSpec.timing()`` builds it).

    Why one value: the same six options (chunk, warm-up, flush-end event, lead, trail, telemetry)
    reach ``time_launches`` from the sweep, the cold reference, the launch floor and the interleaved
    turns; threaded by hand they drifted (the warm-up default was written in six places). A
    function that times takes ``options`` whole; keyword overrides (``chunk=2``) are a short form
    of ``dataclasses.replace(options, chunk=2)``, checked against these field names.
    """

    #: timed launches per stream hold
    chunk: int = DEFAULT_CHUNK
    #: wall time of launches before each timed run
    warmup_s: float = WARMUP_S
    #: an event between flush and kernel start (a separate flush time; see ``time_launches``)
    flush_end_event: bool = False
    #: untimed launches at the head of each chunk: an int, or "random" (0 or 1 per chunk)
    lead: int | str = CHUNK_LEAD
    #: the seed of the random leads' order
    lead_seed: int = LEAD_SEED
    #: untimed samples after each chunk's last timed one
    trail: int = CHUNK_TRAIL
    #: the blocking kernel gives up after this long (the chunk is then measured again, smaller)
    hold_timeout_s: float = HOLD_TIMEOUT_S
    #: clock, temperature and power read after each chunk (None: not read)
    telemetry: Telemetry | None = field(default=None, compare=False)
    #: hold the stream behind a blocking kernel while a chunk is enqueued (False: the counter pass,
    #: whose profiler serialises launches: a counted launch would wait for the hold until it timed out)
    hold: bool = True
    #: opened after the warm-up and closed after the last chunk (``start()``/``stop()``): the counter
    #: pass's profiler range around the launches it counts (``bench.counters.phase``); None: none
    profiler: Any = field(default=None, compare=False)
    #: told before every chunk and after the last, outside every timed window, with the device idle
    #: (``before_chunk(chunk, launched)``, ``after_run(chunks, launched)``: ``launched`` = timed launches
    #: so far): the trust checks of ``bench.trust`` (the persisting-L2 reset, the sampled output check)
    hooks: tuple[Any, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        import numpy as np

        object.__setattr__(self, "lead", check_lead(self.lead))
        object.__setattr__(self, "trail", check_trail(self.trail))
        if isinstance(self.chunk, bool) or not isinstance(self.chunk, (int, np.integer)) or self.chunk < 1:
            raise ConfigError(f"chunk must be a positive number of samples, got {self.chunk}")

    def but(self, **overrides: Any) -> "TimingOptions":
        """These options with some fields replaced (an unknown name is a ConfigError naming the fields)."""
        if not overrides:
            return self
        known = {f.name for f in dataclasses.fields(self)}
        bad = sorted(set(overrides) - known)
        if bad:
            raise ConfigError(f"unknown timing option(s) {', '.join(bad)}; expected {', '.join(sorted(known))}")
        return dataclasses.replace(self, **overrides)


def timing_options(options: TimingOptions | None, overrides: dict[str, Any]) -> TimingOptions:
    """``options`` (default ``TimingOptions()``) with the keyword overrides a caller gave."""
    return (options or TimingOptions()).but(**overrides)


def _untimed_count(name: str, value: Any, what: str, alternative: str = "") -> int:
    """``value`` as a count of untimed launches (an int >= 0); else a ConfigError naming it."""
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"chunk {name} must be an integer >= 0 ({what}){alternative}, got {value!r}")
    return int(value)


def check_lead(lead: Any) -> int | str:
    """``lead`` as ``time_launches`` takes it: an int >= 0 or ``"random"``; else a ConfigError."""
    if lead == "random" and isinstance(lead, str):
        return lead
    return _untimed_count("lead", lead, "untimed launches per chunk", " or 'random'")


def check_trail(trail: Any) -> int:
    """``trail`` as ``time_launches`` takes it: an int >= 0; else a ConfigError."""
    return _untimed_count("trail", trail, "untimed samples after each chunk")


__all__ = ["HOLD_TIMEOUT_S", "LEAD_SEED", "TimingOptions", "check_lead", "check_trail", "timing_options"]
