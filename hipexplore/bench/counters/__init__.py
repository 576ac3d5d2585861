"""Hardware counters: show that the cache state a configuration asked for is the one it got.

Every answer about rotating buffers and flushes rests on timing: the harness *sets* a cache state
(N rotating sets, a flush) and infers from the time that it was reached. The counter pass, a phase
of the one measurement pipeline (``sweep(counters=True)``, ``hipexplore bench --counters``),
counts after a sweep's timed units, for the trials' own launches replayed by a counting unit under
the device's profiler, the DRAM bytes each launch read and wrote and its L2 hit rate, and says per
configuration whether its inputs came from memory: ``cold_fraction`` = DRAM bytes read per launch /
bytes of its ``in``/``inout`` buffers, and the state word ``cold`` / ``partial`` / ``warm``
(``record.cache_state``). A configuration asked to be cold (a flush, or rotating ``auto``) that
counted ``warm`` or ``partial`` is flagged (``record.promise_check``). The columns
(``schema.COUNTER_COLUMNS``) join the sweep's summary rows.

Parts: ``record`` (columns, rule, promise), ``phase`` (the counting unit's replay through the
trials' path: the worker's side), ``counting`` (the parent's side: the backend, the plan of counting units run
by the orchestrator's executor, the records; ``collect`` reads a recorded pass folder back),
``summary`` (``CounterSummary``: one configuration's figures, a typed value), ``backends`` /
``ncu`` / ``rocprof`` (who counts; the host has no counters). Why these backends and why the timed
path is replayed: docs/guide/counters.md.
"""

from __future__ import annotations

from .backends import HOST_LINE, CounterError, CountersUnavailable
from .registry import backend_for
from .counting import CounterPass, CountersSkipped, CountingPlan, collect, counted_configurations, counter_backend
from .phase import DEFAULT_COUNT, Counting, CounterPhase
from .record import (
    COLD_AT,
    COUNTER_COLUMNS,
    COUNTER_KEY,
    RECORD_COLUMNS,
    WARM_AT,
    CounterRecord,
    asks_cold,
    cache_state,
    cold_fraction,
    input_bytes,
    join_summary,
    promise_check,
)
from .summary import CounterSummary

__all__ = [
    "COLD_AT",
    "COUNTER_COLUMNS",
    "COUNTER_KEY",
    "RECORD_COLUMNS",
    "CounterError",
    "CounterPass",
    "CounterPhase",
    "CounterRecord",
    "CounterSummary",
    "CountersSkipped",
    "CountingPlan",
    "CountersUnavailable",
    "Counting",
    "DEFAULT_COUNT",
    "HOST_LINE",
    "WARM_AT",
    "asks_cold",
    "backend_for",
    "cache_state",
    "cold_fraction",
    "collect",
    "counted_configurations",
    "counter_backend",
    "input_bytes",
    "join_summary",
    "promise_check",
]
