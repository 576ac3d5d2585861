"""Hardware counters: show that the cache state a configuration asked for is the one it got.

Every answer about rotating buffers and flushes rests on timing: the harness *sets* a cache state
(N rotating sets, a flush) and infers from the time that it was reached. A counter pass counts,
for the same kernel, rotation and flush sequence as the timed launches (after the same warm-up,
in a process of its own, outside any timed window), the DRAM bytes each launch read and wrote and
its L2 hit rate, and says per configuration whether its inputs came from memory:
``cold_fraction`` = DRAM bytes read per launch / bytes of its ``in``/``inout`` buffers, and the
state word ``cold`` / ``partial`` / ``warm`` (``record.cache_state``). A configuration asked to be
cold (a flush, or rotating ``auto``) that counted ``warm`` or ``partial`` is flagged
(``record.promise_check``).

    from hipexplore.bench.counters import count_configurations
    counted = count_configurations(spec, device)        # a SweepSpec and an NVIDIA or AMD device
    counted.frame()                                      # one row per configuration (COUNTER_COLUMNS)

Parts: ``record`` (columns, rule, promise), ``sequence`` (``launch_sequence``: the one seam to the
measurement pipeline), ``child`` (the process a profiler starts), ``backends`` / ``ncu`` /
``rocprof`` (who counts; the host has no counters), ``counting`` (the pass, and ``collect``, which
reads a recorded pass folder back). Why these backends: docs/guide/counters.md.
"""
from __future__ import annotations

from .backends import HOST_LINE, CounterError, CountersUnavailable, backend_for
from .counting import CounterPass, collect, count_configurations, counted_configurations
from .record import (COLD_AT, COUNTER_COLUMNS, COUNTER_KEY, WARM_AT, CounterRecord, asks_cold, cache_state, cold_fraction,
                     input_bytes, join_summary, promise_check)
from .sequence import DEFAULT_COUNT, launch_sequence, warmup_launches

__all__ = ["COLD_AT", "COUNTER_COLUMNS", "COUNTER_KEY", "CounterError", "CounterPass", "CounterRecord", "CountersUnavailable",
           "DEFAULT_COUNT", "HOST_LINE", "WARM_AT", "asks_cold", "backend_for", "cache_state", "cold_fraction", "collect",
           "count_configurations", "counted_configurations", "input_bytes", "join_summary", "launch_sequence",
           "promise_check", "warmup_launches"]
