"""A/B in one run: kernels of one configuration measured in alternating turns of a few chunks.

Why: two kernels measured one after the other see different machine states (clock, temperature,
what else runs); a slow drift then reads as a difference between them. Measured in turns, in an
order shuffled every round (seeded, so a run can be repeated; the seed is in the metadata), both
see the same drift, and it cancels in their ratio. Every turn is an ordinary ``time_launches`` call
(fixed count: ``turn_chunks`` chunks); the turns of a kernel are concatenated with chunk ids that
stay distinct and increase through the whole configuration, so the sample frames show the order
in which chunks ran (a chunk id is unique across the interleaved kernels) and the block bootstrap
keeps its blocks. Rotating buffer sets keep rotating across turns (a turn starts at the set after
the last one the kernel used). A variant is just a kernel name: each kernel's stop rule is tracked on its own, and
rounds go on until every kernel's rule says stop, so all kernels get the same number of turns.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import ConfigError
from .flush import Flusher
from .stats import StopRule
from .raw_times import RawTimes
from .timing import Workload, time_launches
from .timing_options import LEAD_SEED, TimingOptions, timing_options

#: chunks per turn: short turns cancel faster drift, each turn costs one warm-up
DEFAULT_TURN_CHUNKS = 2


@dataclass
class Interleaved:
    """Raw times per kernel and the order the turns ran in."""

    raws: dict[str, RawTimes]
    order: list[str] = field(default_factory=list)


def _rotated(workload: Workload, start: int, count: int) -> Workload:
    """The workload's sets from ``start`` on (a turn's local set j is the global set start + j); an
    in-kernel timer is rotated alike (a view sharing its slots), so a launch of local set j gets the
    arguments of global set start + j with its timer slot, not those of global set j."""
    sets = list(workload.arg_sets)
    k = start % len(sets)
    n = max(1, min(count, len(sets)))
    picked = (sets[k:] + sets[:k])[:n]
    timer = workload.timer
    if timer is not None:
        timer = copy.copy(timer)
        timer.args = (list(timer.args[k:]) + list(timer.args[:k]))[:n]
    return Workload(workload.device, workload.kernel, workload.grid, workload.block, picked, timer=timer)


def interleaved_launches(
    workloads: Mapping[str, Workload],
    flushers: Mapping[str, Flusher | None],
    rule: StopRule,
    options: TimingOptions | None = None,
    *,
    rng: np.random.Generator,
    turn_chunks: int = DEFAULT_TURN_CHUNKS,
    **overrides: Any,
) -> Interleaved:
    """Measure ``workloads`` (kernel name -> workload) in shuffled turns until every kernel's
    ``rule`` says stop (module docstring). ``flushers``: the flush before each launch, per kernel;
    ``options``: how each turn is timed (``bench.timing``; a random lead is drawn anew each turn,
    and turns after the first warm up for at most 2 ms)."""
    opts = timing_options(options, overrides)
    if not workloads:
        raise ConfigError("interleaving needs at least one kernel")
    if isinstance(turn_chunks, bool) or not isinstance(turn_chunks, int) or turn_chunks < 1:
        raise ConfigError(f"turn_chunks must be a positive integer, got {turn_chunks!r}")
    names = list(workloads)
    trackers = {k: rule.at_least(len(w.arg_sets)).tracker() for k, w in workloads.items()}
    parts: dict[str, list[RawTimes]] = {k: [] for k in names}
    used = {k: 0 for k in names}  # samples taken so far (where the next turn's rotation starts)
    reasons: dict[str, str] = {}
    next_chunk = 0
    order: list[str] = []
    turn = opts.chunk * turn_chunks
    t0 = time.perf_counter()
    first = True
    while True:
        for k in names:
            if k in reasons:
                continue
            got = parts[k]
            samples = np.concatenate([p.time_s for p in got]) if got else np.empty(0)
            ids = np.concatenate([p.chunk for p in got]) if got else np.empty(0, dtype=np.int64)
            more, why = trackers[k].check(samples, time.perf_counter() - t0, ids)
            if more == 0:
                reasons[k] = why
        if len(reasons) == len(names):
            break
        for k in [names[i] for i in rng.permutation(len(names))]:
            w = workloads[k]
            want = turn
            if not rule.adaptive:  # a fixed count: the last turn takes only what is left
                want = max(1, min(turn, int(rule.iterations or 0) - used[k]))
            sub = _rotated(w, used[k], want)
            raw = time_launches(
                sub,
                flushers.get(k),
                StopRule(iterations=want),
                opts,
                warmup_s=opts.warmup_s if first else min(opts.warmup_s, 0.002),
                lead_seed=LEAD_SEED + len(order),
            )  # another draw each turn
            raw.buffer_set = (raw.buffer_set + used[k]) % len(w.arg_sets)
            raw.chunk = raw.chunk + next_chunk
            next_chunk = int(raw.chunk.max()) + 1 if raw.chunk.size else next_chunk
            used[k] += len(raw.time_s)
            parts[k].append(raw)
            order.append(k)
        first = False
    out: dict[str, RawTimes] = {}
    for k in names:
        raws = parts[k]
        notes = list(dict.fromkeys(n for x in raws for n in x.notes))
        why = reasons[k]
        if why and not why.startswith(("fixed iteration count", "converged")):
            notes.append(why)
        notes.append(
            f"interleaved with {', '.join(n for n in names if n != k)} in {len(raws)} turn(s) of "
            f"{turn_chunks} chunk(s), shuffled order"
        )
        out[k] = RawTimes.concat(raws, notes=notes, stop_reason=why)
    return Interleaved(out, order)


__all__ = ["DEFAULT_TURN_CHUNKS", "Interleaved", "interleaved_launches"]
