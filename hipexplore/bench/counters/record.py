"""What a counter pass reports per configuration: the columns (declared once), the inputs' bytes
from the argument roles, the cold fraction, the cache-state word and the check of the cold promise.

Why a record of its own: the timed summary infers the cache state from time; these columns say
what the hardware counted for the same launches (a counting unit's replay of the trials, see
``counters.phase``), and they join the summary by
configuration (``COUNTER_KEY``: kernel, size, rotating as requested, flush; the timer does not
change what a launch moves, so both timers' rows get the same counters).

The rule (``cache_state``): ``cold_fraction`` = DRAM bytes read per launch / bytes of the launch's
``in`` and ``inout`` buffers. At or above ``COLD_AT`` (0.9) the inputs came from memory: ``cold``;
at or below ``WARM_AT`` (0.1) they came from the cache: ``warm``; between: ``partial``. Why 0.1 and
0.9: on the H200 (Nsight Compute at 9124be5, issue 35's table) the triad's fractions sat at
0.00-0.07 when its sets fit the L2 and at 0.98-1.00 when they did not; what lies between the two
clusters is a working set of which part survives (4 MiB x 3 sets read 0.19), and the margins absorb
the traffic a launch adds besides its inputs (sector over-fetch, page-table walks, the previous
launch's write-backs). The kit's own recordings of the same table: data/counters/h200/.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any, Iterable, Mapping

from ...kernels.spec import KernelSpec
from ...schema import COUNTER_COLUMNS, Configuration, UntimedKey
from .summary import TEXT_COLUMNS, CounterSummary

#: at or above: the inputs were read from memory (``cold``)
COLD_AT = 0.9
#: at or below: the inputs were served by the cache (``warm``)
WARM_AT = 0.1
#: the state words, and the one for a kernel without inputs (nothing can be cold)
STATES = ("cold", "partial", "warm")
NO_STATE = "n/a"
#: the buffer roles a launch reads
INPUT_ROLES = ("in", "inout")

#: the columns a counter record joins the summary on
COUNTER_KEY = Configuration.UNTIMED_COLUMNS


@dataclass(frozen=True)
class CounterRecord:
    """One configuration's counters (per launch: the mean over the counted launches)."""

    kernel: str
    size_bytes: int
    rotating_requested: str
    flush: str
    #: buffer sets the counted sequence rotated over
    rotating: int
    #: the backend that counted ("ncu 2025.3.1", "rocprofv3 (built, not run)")
    counter_backend: str
    #: launches counted (after ``counter_warmup`` launches that were not)
    counter_launches: int
    counter_warmup: int
    dram_read_bytes: float
    dram_write_bytes: float
    #: L2 hits / lookups, 0..1
    l2_hit_rate: float
    #: bytes of the launch's in/inout buffers
    input_bytes: int
    cold_fraction: float
    #: cold / partial / warm (n/a without inputs)
    cache_state: str
    #: "" (not asked cold), "kept", "broken", or "unverified" (asked, inputs, no DRAM bytes counted)
    cold_promise: str
    #: the promise check's one line ("" unless broken or unverified)
    counter_warning: str
    #: what the backend said about how it counted ("" when nothing is to be said)
    counter_note: str = ""

    def as_row(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def key(self) -> UntimedKey:
        """The configuration it counts, less the timer (``COUNTER_KEY``)."""
        return UntimedKey(self.kernel, int(self.size_bytes), str(self.rotating_requested), self.flush)

    def summary(self) -> CounterSummary:
        """The figures a summary row gets (``schema.COUNTER_COLUMNS``), field by field (no row between)."""
        return CounterSummary(**{c: getattr(self, c) for c in COUNTER_COLUMNS})


#: every column of a counter record, in order (the schema of ``CounterPass.frame()``): the key, the
#: sets counted, the launches before the range, and the columns a summary row gets
#: (``schema.COUNTER_COLUMNS``, declared there once)
RECORD_COLUMNS = tuple(f.name for f in fields(CounterRecord))
#: the columns a join adds to a summary row
COUNTER_VALUE_COLUMNS = tuple(c for c in RECORD_COLUMNS if c not in COUNTER_KEY)


def input_bytes(kspec: KernelSpec, n: int) -> int:
    """Bytes of every ``in``/``inout`` buffer one launch of ``kspec`` at ``n`` elements gets (their
    counts may use ``n`` and the scalar arguments): what a cold launch must read from memory."""
    env = kspec.scalars(n)
    return sum(a.nbytes(n, env) for a in kspec.buffers() if a.role in INPUT_ROLES)


def cold_fraction(read_bytes: float, inputs: int) -> float:
    """DRAM bytes read per launch / input bytes (NaN without inputs or without a reading)."""
    if inputs <= 0 or not math.isfinite(read_bytes):
        return math.nan
    return float(read_bytes) / inputs


def cache_state(fraction: float) -> str:
    """``cold`` at or above ``COLD_AT``, ``warm`` at or below ``WARM_AT``, else ``partial``;
    ``n/a`` for NaN (no inputs, or nothing counted)."""
    if not math.isfinite(fraction):
        return NO_STATE
    if fraction >= COLD_AT:
        return "cold"
    if fraction <= WARM_AT:
        return "warm"
    return "partial"


def asks_cold(rotating_requested: Any, flush: str) -> str:
    """Why a configuration promises cold inputs ("flush l2-write", "rotating auto"), or ""."""
    from ...errors import ConfigError
    from ..flush import flush_mode

    try:
        cold = flush_mode(flush).cold_data  # the mode says (an instruction-cache flush promises nothing about data)
    except ConfigError:  # a recorded name this version does not know: no promise it can check
        cold = False
    if cold:
        return f"flush {flush}"
    if str(rotating_requested).strip().lower() == "auto":
        return "rotating auto"
    return ""


def promise_check(
    rotating_requested: Any,
    flush: str,
    fraction: float,
    read_bytes: float = math.nan,
    inputs: int = 0,
    launches: "list[float] | None" = None,
) -> tuple[str, str]:
    """(``cold_promise``, one-line warning) of a configuration: a configuration asked to be cold (a
    flush, or rotating ``auto``) that measured ``warm`` or ``partial`` is ``broken`` and its line says
    by how much; one not asked, or without inputs (nothing to be cold), is ("", ""); one kept is
    ("kept", ""); one with inputs whose DRAM bytes were not counted (a backend without the
    metric) is ``unverified`` and says so, rather than reading as a configuration never asked.
    ``launches``: each counted launch's own fraction: a mean that is cold over launches of which
    some read less than ``COLD_AT`` of their inputs is ``broken`` too (a kernel that skips its work
    on one launch in five averages 0.8; one in twenty averages 0.95, and the mean alone keeps it)."""
    kept = _promise(rotating_requested, flush, fraction, read_bytes, inputs)
    low = [f for f in (launches or []) if math.isfinite(f) and f < COLD_AT]
    if kept[0] != "kept" or not low:
        return kept
    return "broken", (
        f"asked cold ({asks_cold(rotating_requested, flush)}) but {len(low)} of {len(launches or [])} counted "
        f"launches read less than {COLD_AT:g} of their inputs from DRAM (the least {min(low):.2f}; the mean "
        f"{fraction:.2f} hides them)"
    )


def _promise(rotating_requested: Any, flush: str, fraction: float, read_bytes: float, inputs: int) -> tuple[str, str]:
    """``promise_check`` on the mean alone."""
    why = asks_cold(rotating_requested, flush)
    if not why:
        return "", ""
    state = cache_state(fraction)
    if state == NO_STATE:  # no inputs: the promise can be neither kept nor broken; else nothing was counted
        if inputs and not math.isfinite(read_bytes):
            return "unverified", f"asked cold ({why}) but its DRAM bytes were not counted: the state is unknown"
        return "", ""
    if state == "cold":
        return "kept", ""
    from ...readable import format_bytes

    read = f"; DRAM read {format_bytes(read_bytes)} of {format_bytes(inputs)} of inputs per launch" if inputs else ""
    return "broken", (
        f"asked cold ({why}) but counted {state}: cold fraction {fraction:.2f} (cold needs >= {COLD_AT:g}){read}"
    )


def make_record(
    conf: Configuration,
    *,
    rotating: int,
    backend: str,
    launches: list[Mapping[str, float]],
    warmup: int,
    inputs: int,
    note: str = "",
) -> CounterRecord:
    """A configuration's record from its counted launches (each a mapping with ``dram_read_bytes``,
    ``dram_write_bytes`` and ``l2_hit_rate``): per-launch means, then the fraction, state and promise.
    ``conf``: the configuration counted (its timer is not part of the record: ``COUNTER_KEY``)."""

    def mean(key: str) -> float:
        vals = [float(x[key]) for x in launches if key in x and math.isfinite(float(x[key]))]
        return sum(vals) / len(vals) if vals else math.nan

    read, write, hit = mean("dram_read_bytes"), mean("dram_write_bytes"), mean("l2_hit_rate")
    frac = cold_fraction(read, inputs)
    each = [cold_fraction(float(x["dram_read_bytes"]), inputs) for x in launches if "dram_read_bytes" in x]
    promise, warning = promise_check(conf.rotating, conf.flush, frac, read, inputs, each)
    return CounterRecord(
        conf.kernel,
        int(conf.size),
        str(conf.rotating),
        conf.flush,
        int(rotating),
        backend,
        len(launches),
        int(warmup),
        read,
        write,
        hit,
        int(inputs),
        frac,
        cache_state(frac),
        promise,
        warning,
        note,
    )


def records_frame(records: Iterable[CounterRecord]) -> Any:
    """The records as a DataFrame with exactly ``RECORD_COLUMNS`` (pandas imported here, not at start-up)."""
    import pandas as pd

    return pd.DataFrame([r.as_row() for r in records], columns=list(RECORD_COLUMNS))


def join_summary(summary: Any, counters: Any) -> Any:
    """``summary`` (the sweep's summary frame) with the counter columns added by ``COUNTER_KEY``;
    rows without counters (the cold reference, a configuration not counted) get NaN / ""."""
    left = summary.copy()
    right = counters[list(COUNTER_KEY) + [c for c in COUNTER_VALUE_COLUMNS if c not in left.columns]].copy()
    right["size_bytes"] = right["size_bytes"].astype(left["size_bytes"].dtype)
    right["rotating_requested"] = right["rotating_requested"].astype(str)
    left["rotating_requested"] = left["rotating_requested"].astype(str)
    out = left.merge(right, on=list(COUNTER_KEY), how="left", suffixes=("", "_counted"))
    for c in TEXT_COLUMNS:
        if c in out.columns:
            out[c] = out[c].fillna("")
    return out


__all__ = [
    "COLD_AT",
    "COUNTER_COLUMNS",
    "COUNTER_KEY",
    "COUNTER_VALUE_COLUMNS",
    "CounterRecord",
    "NO_STATE",
    "RECORD_COLUMNS",
    "STATES",
    "WARM_AT",
    "asks_cold",
    "cache_state",
    "cold_fraction",
    "input_bytes",
    "join_summary",
    "make_record",
    "promise_check",
    "records_frame",
]
