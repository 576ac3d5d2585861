"""The benchmark harness: rotating buffers, flush modes, latency-free timing, statistics, sweeps.

``sweep(...)`` is the entry point (re-exported as ``hipexplore.sweep``); it fills a ``SweepSpec``
(frozen, picklable, validated) that ``run(spec, device)`` measures; ``Measurement`` keeps raw
samples and computes the statistics; ``StopRule`` chooses fixed or adaptive sample counts.
"""
from __future__ import annotations

from .callable import callable_kernel
from .stats import Measurement, StopRule
from .sweep import COLD_REFERENCE, SAMPLE_COLUMNS, SUMMARY_COLUMNS, SweepHooks, SweepResult, SweepSpec, parse_size, run, sweep

__all__ = ["COLD_REFERENCE", "callable_kernel", "Measurement", "SAMPLE_COLUMNS", "SUMMARY_COLUMNS", "StopRule", "SweepHooks", "SweepResult",
           "SweepSpec", "parse_size", "run", "sweep"]
