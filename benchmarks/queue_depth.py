"""Queue depth vs the timed kernel (issue 9, item 1): measure before choosing the design.

On the H200 a timed launch with 9 or more launches queued behind it read ~0.66 us more than the
last few of a 64-launch chunk. This script times the 1 MiB triad (hot: 1 set, no flush; cold:
l2-read flush) in held chunks under several designs and writes one row per sample with its chunk
position, so the effect of position on the median can be read per design:

  plain-C        C timed launches per chunk (today's harness at C=64)
  pad-P          64 timed launches + P untimed trailing launches of the same kernel in the chunk
  bounded-C      C timed launches per chunk, C small (every launch has < C launches behind it)

Usage (GPU machine): PYTHONPATH=. python3 benchmarks/queue_depth.py --out DIR [--size 1MiB] [--chunks 40]
Writes DIR/queue_depth.parquet and prints the per-design table (median of the first and last
positions, and max |position median / design median - 1|).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd


def run_design(dev, kernel, grid, block, args, flusher, timed: int, pad: int, chunks: int):
    from hipexplore.bench.timing import _EventPool

    pool = _EventPool.of(dev)
    per = 3 if flusher is not None else 2
    evs = pool.take(1 + per * timed)
    rows = []
    for c in range(chunks):
        hold = dev.hold_stream(5.0)
        try:
            dev.record(evs[0])
            for j in range(timed):
                e = evs[1 + per * j: 1 + per * (j + 1)]
                if flusher is not None:
                    dev.record(e[0])
                    flusher.enqueue()
                dev.record(e[-2])
                dev.launch(kernel, grid, block, args)
                dev.record(e[-1])
            for _ in range(pad):
                if flusher is not None:
                    flusher.enqueue()
                dev.launch(kernel, grid, block, args)
        finally:
            hold.release()
        dev.synchronize()
        to = hold.timed_out()
        for j in range(timed):
            e = evs[1 + per * j: 1 + per * (j + 1)]
            rows.append((c, j, dev.elapsed_s(e[-2], e[-1]), bool(to)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", default="1MiB")
    ap.add_argument("--chunks", type=int, default=40)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    from hipexplore.bench import rotating as rot
    from hipexplore.bench.flush import make_flusher
    from hipexplore.bench.sweep import parse_size
    from hipexplore.devices import get_device
    from hipexplore.kernels import catalog

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = get_device(a.device)
    spec = catalog.get("triad")
    size = parse_size(a.size)
    n = spec.elements(size)
    grid, block = spec.geometry(n, dev)
    kernel = dev.compiled_kernel("triad")
    designs = [("plain-64", 64, 0), ("plain-32", 32, 0), ("pad-8", 64, 8), ("pad-16", 64, 16), ("pad-32", 64, 32),
               ("bounded-8", 8, 0), ("bounded-4", 4, 0), ("bounded-2", 2, 0)]
    frames = []
    with rot.BufferSets(dev, spec, n, 1) as sets:
        for flush in ("none", "l2-read"):
            fl = make_flusher(dev, flush)
            try:
                for _ in range(3):  # warm-up (clocks, module load)
                    run_design(dev, kernel, grid, block, sets.args[0], fl, 64, 0, 2)
                order = list(designs)
                for rep in range(2):  # two passes, second in reverse order: drift shows as a pass difference
                    for name, timed, pad in (order if rep == 0 else order[::-1]):
                        chunks = max(a.chunks, (a.chunks * 64) // timed // 4)
                        t0 = time.perf_counter()
                        rows = run_design(dev, kernel, grid, block, sets.args[0], fl, timed, pad, chunks)
                        df = pd.DataFrame(rows, columns=["chunk", "position", "time_s", "hold_timed_out"])
                        df["design"], df["timed"], df["pad"], df["flush"], df["pass"] = name, timed, pad, flush, rep
                        df["wall_s"] = time.perf_counter() - t0
                        frames.append(df)
            finally:
                if fl is not None:
                    fl.free()
    data = pd.concat(frames, ignore_index=True)
    data["size_bytes"] = size
    data["device_name"] = dev.name
    data["git_revision"] = os.environ.get("HIPEXPLORE_GIT_REVISION", "")
    data.to_parquet(out / "queue_depth.parquet")
    lines = []
    for (flush, name), g in data.groupby(["flush", "design"], sort=False):
        med = g["time_s"].median()
        pos = g.groupby("position")["time_s"].median()
        worst = float((pos / med - 1).abs().max())
        tail = pos.iloc[-min(9, len(pos)):].median()
        head = pos.iloc[: max(1, len(pos) - 9)].median() if len(pos) > 9 else pos.median()
        lines.append(f"{flush:8s} {name:10s} n={len(g):6d} median={med * 1e6:7.3f} us  head={head * 1e6:7.3f} "
                     f"tail9={tail * 1e6:7.3f}  max|pos/med-1|={worst:6.1%}  timeouts={int(g['hold_timed_out'].sum())}")
    text = "\n".join(lines)
    (out / "queue_depth.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
