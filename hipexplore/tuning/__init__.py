"""Split-K GEMM tuning lists and their replay through the compile cache.

``lists``: problems x candidates expanded into compile requests (fill, gemm, reduce, pointwise);
``replay``: compile a list serially or in parallel through each cache mode, beside the ideal;
``workload``: each candidate's pipeline a workload timed by the one pipeline (``bench``) under
rotating buffers and flushes, ``ranking``: the best per setting;
``listfile``: tuning lists as files (the shipped real-model lists, data/tuning/lists), ``models``
their problems and candidate space, ``generate`` the script that writes them; ``floor``: the
compile floor, a bound no compiling pass of a replay is below.
Names resolve lazily, so importing this package loads no compiler and no device runtime.
"""

from __future__ import annotations

_LAZY = {
    "GemmProblem": ".lists",
    "ListEntry": ".lists",
    "TuningList": ".lists",
    "build_list": ".lists",
    "default_candidates": ".lists",
    "select_problems": ".lists",
    "transformer_problems": ".lists",
    "FRAME_COLUMNS": ".replay",
    "ReplayReport": ".results",
    "ScenarioResult": ".results",
    "measure_ideal": ".replay",
    "resolve_granularity": ".replay",
    "ListSpec": ".listfile",
    "compile_floor": ".floor",
    "replay_through_cache": ".replay",
    "run_replay": ".replay",
    "benchmark_candidates": ".workload",
    "check_on_device": ".workload",
    "choice_table": ".ranking",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
