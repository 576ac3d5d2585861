"""The compile floor of a replay: a lower bound that no pass compiling every unique kernel can beat.

Why (issue #26.5): the report drew the ideal pass (each unique kernel compiled once, measured
once) as a "floor", and the memory pass of the same run came in below it: one measured run is a
sample, not a bound. Compile times vary from call to call (the machine, the compiler's caches),
so a bound has to come from the fastest compile of each kernel that was actually measured.

The floor here is built from every compile the run timed (the ideal pass and its repeats, the
cache-off pass, which compiles each repeated kernel many times, and the cached passes' own
compiles), matched across passes by kernel (salting gives each pass its own digests, so a
kernel is named by the first list entry that uses it):

  ``compile_sum_s``  sum over unique kernels of the fastest measured compile of each;
  ``floor_s(jobs)``  max(compile_sum_s / jobs, the slowest kernel's fastest compile).

Why it bounds every measured pass that compiles each unique kernel at least once (ideal, off,
memory, disk-cold; not the warm passes, which compile nothing): such a pass makes, for every
unique kernel k, a compiler call of at least ``min_k`` (min_k is a minimum over a set that
contains that very call), so its calls sum to at least ``compile_sum_s``; at most ``jobs``
calls run at once, each within the pass's wall time, so ``jobs x wall >= sum of calls``; and the
pass lasts at least as long as its longest call. For the same reason the sum of a pass's lookup
times (the report's cumulative "cache on" curve) is at least ``compile_sum_s``.
"""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

#: outcomes whose call_seconds is one compile of the kernel (a failure compiled nothing usable)
TIMED_OUTCOMES = ("compiled", "bypassed")
#: passes that compile every unique kernel at least once (the floor bounds these)
COMPILING_SCENARIOS = ("ideal", "off", "memory", "disk-cold", "triton-cold")


def kernel_ids(frame: pd.DataFrame) -> pd.Series:
    """For every row, the kernel it is for, named by the first list entry that uses it: rows of one
    scenario (and round, when recorded in rounds) with one digest are one kernel."""
    keys = [c for c in ("scenario", "round", "jobs") if c in frame.columns]
    return frame.groupby([*keys, "digest"], sort=False)["entry"].transform("min")


def per_kernel_min(frames: Iterable[pd.DataFrame]) -> pd.Series:
    """entry id of each unique kernel -> its fastest measured compile (call_seconds) over ``frames``."""
    parts = []
    for f in frames:
        if f is None or not len(f):
            continue
        f = f.assign(kernel_id=kernel_ids(f))
        timed = f[f["outcome"].isin(TIMED_OUTCOMES) & (f["call_seconds"] > 0)]
        parts.append(timed[["kernel_id", "call_seconds"]])
    if not parts:
        return pd.Series(dtype=float, name="min_call_seconds")
    allp = pd.concat(parts, ignore_index=True)
    return allp.groupby("kernel_id")["call_seconds"].min().rename("min_call_seconds")


def floor_seconds(mins: pd.Series, jobs: int) -> float:
    """max(sum / jobs, max): the bound for a pass of ``jobs`` compiles at a time."""
    if not len(mins):
        return float("nan")
    return float(max(mins.sum() / max(1, int(jobs)), mins.max()))


def compile_floor(frames: Iterable[pd.DataFrame], jobs: int, unique_kernels: int | None = None) -> dict[str, Any]:
    """The floor of a run from its frames (the replay frame, ideal repeats too): a dict with
    ``floor_s`` (for ``jobs`` at a time), ``compile_sum_s``, ``longest_s``, the kernels it covers
    and how many compiles it drew on. ``complete`` is False when some unique kernel never
    compiled successfully (then the bound covers only the kernels that did)."""
    frames = [f for f in frames if f is not None and len(f)]
    mins = per_kernel_min(frames)
    samples = 0
    for f in frames:
        samples += int((f["outcome"].isin(TIMED_OUTCOMES) & (f["call_seconds"] > 0)).sum())
    out = {
        "floor_s": floor_seconds(mins, jobs),
        "compile_sum_s": float(mins.sum()) if len(mins) else float("nan"),
        "longest_s": float(mins.max()) if len(mins) else float("nan"),
        "jobs": int(jobs),
        "kernels": int(len(mins)),
        "compiles_measured": samples,
        "complete": unique_kernels is None or len(mins) == int(unique_kernels),
    }
    return out


def floor_of_frame(frame: pd.DataFrame, jobs: int | None = None) -> dict[str, Any]:
    """``compile_floor`` of a recorded replay frame (one pass per scenario, see report.replay.one_pass);
    ``jobs`` defaults to the frame's."""
    if jobs is None:
        jobs = int(frame["jobs"].max()) if "jobs" in frame.columns and len(frame) else 1
    return compile_floor([frame], jobs)


def check_below(floor: dict[str, Any], scenarios: dict[str, Any]) -> list[str]:
    """The compiling passes a floor is above (it never should be): one line per such pass."""
    bad = []
    for name, res in scenarios.items():
        if name not in COMPILING_SCENARIOS:
            continue
        if res.frame["outcome"].eq("failed").any():
            continue  # a pass with failures did not compile every kernel: the bound does not apply
        if floor["floor_s"] > res.seconds:
            bad.append(f"{name}: {res.seconds:.6f} s < floor {floor['floor_s']:.6f} s")
    return bad


__all__ = [
    "COMPILING_SCENARIOS",
    "check_below",
    "compile_floor",
    "floor_of_frame",
    "floor_seconds",
    "kernel_ids",
    "per_kernel_min",
]
