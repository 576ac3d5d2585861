"""The benchmark harness: rotating buffers, flush modes, latency-free timing, statistics, sweeps.

``sweep(...)`` is the entry point (re-exported as ``hipexplore.sweep``); it fills a ``SweepSpec``
(frozen, picklable, validated) that ``run(spec, device)`` measures; ``Measurement`` keeps raw
samples and computes the statistics; ``StopRule`` chooses fixed or adaptive sample counts.

Names resolve lazily (``hipexplore._lazy``): the CLI imports ``bench.spec`` for its option
defaults, and that must not load pandas through ``bench.sweep``.
"""

from __future__ import annotations

from .._lazy import lazy

_LAZY = {
    "COLD_REFERENCE": "hipexplore.schema",
    "SAMPLE_COLUMNS": "hipexplore.schema",
    "SUMMARY_COLUMNS": "hipexplore.schema",
    "Measurement": ".stats",
    "StopRule": ".stats",
    "SweepSpec": ".spec",
    "parse_size": ".spec_checks",
    "callable_kernel": ".callable",
    "OutputCheck": ".callable",
    "LaunchModel": ".callable",
    "RunOptions": ".result",
    "SweepHooks": ".sweep",
    "SweepResult": ".sweep",
    "run": ".sweep",
    "sweep": ".sweep",
}
__getattr__, __dir__ = lazy(__name__, _LAZY)
__all__ = list(_LAZY)
