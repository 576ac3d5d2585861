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
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd


TIMED_TRIAD = r"""
typedef unsigned long long u64;
struct __attribute__((aligned(16))) f4 { float x, y, z, w; };
__device__ static inline u64 now_ns() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
/* the catalog triad plus an in-kernel timer: t[0] = first block start (atomicMin), t[1] = last
   block end (atomicMax), both %globaltimer ns */
extern "C" __global__ void triad_timed(float* __restrict__ a, const float* __restrict__ b,
                                       const float* __restrict__ c, float s, u64 n, u64* t) {
  if (threadIdx.x == 0) atomicMin(&t[0], now_ns());
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x, n4 = n / 4;
  for (u64 i = tid; i < n4; i += stride) {
    f4 x = ((const f4*)b)[i], y = ((const f4*)c)[i], r;
    r.x = x.x + s * y.x; r.y = x.y + s * y.y; r.z = x.z + s * y.z; r.w = x.w + s * y.w;
    ((f4*)a)[i] = r;
  }
  for (u64 i = 4 * n4 + tid; i < n; i += stride) a[i] = b[i] + s * c[i];
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(&t[1], now_ns());
}
"""


def run_design(dev, kernel, grid, block, args, flusher, timed: int, pad: int, chunks: int, timer=None):
    """``args``: one PackedArgs, or (with ``timer`` = (buffer, per-position args)) the timed kernel."""
    from hipexplore.bench.timing import _EventPool

    pool = _EventPool.of(dev)
    per = 3 if flusher is not None else 2
    evs = pool.take(1 + per * timed)
    rows = []
    for c in range(chunks):
        if timer is not None:
            init = np.tile(np.array([np.iinfo(np.uint64).max, 0], dtype=np.uint64), timed)
            dev.copy_to_device(timer[0], init)
            dev.synchronize()
        hold = dev.hold_stream(5.0)
        try:
            dev.record(evs[0])
            for j in range(timed):
                e = evs[1 + per * j : 1 + per * (j + 1)]
                if flusher is not None:
                    dev.record(e[0])
                    flusher.enqueue()
                dev.record(e[-2])
                dev.launch(kernel, grid, block, args if timer is None else timer[1][j])
                dev.record(e[-1])
            for _ in range(pad):
                if flusher is not None:
                    flusher.enqueue()
                dev.launch(kernel, grid, block, args if timer is None else timer[2])
        finally:
            hold.release()
        dev.synchronize()
        to = hold.timed_out()
        inner = np.full(timed, np.nan)
        if timer is not None:
            got = np.empty(2 * timed, dtype=np.uint64)
            dev.copy_to_host(timer[0], got)
            inner = (got[1::2].astype(np.int64) - got[0::2].astype(np.int64)) * 1e-9
        for j in range(timed):
            e = evs[1 + per * j : 1 + per * (j + 1)]
            rows.append((c, j, dev.elapsed_s(e[-2], e[-1]), float(inner[j]), bool(to)))
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
    from hipexplore.kernels.build import kernel_for

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = get_device(a.device)
    spec = catalog.get("triad")
    size = parse_size(a.size)
    n = spec.elements(size)
    grid, block = spec.geometry(n, dev)
    kernel = kernel_for(dev, catalog.get("triad"))
    designs = [
        ("plain-64", 64, 0),
        ("plain-32", 32, 0),
        ("pad-8", 64, 8),
        ("pad-16", 64, 16),
        ("pad-32", 64, 32),
        ("bounded-8", 8, 0),
        ("bounded-4", 4, 0),
        ("bounded-2", 2, 0),
        ("bounded-1", 1, 0),
    ]
    frames = []
    from hipexplore.compile import CompileCache, CompileRequest, Source
    from hipexplore.devices.base import PackedArgs

    import ctypes

    res = CompileCache(disk_dir=False).get_or_compile(
        CompileRequest(Source("triad_timed.cu", TIMED_TRIAD), "nvrtc", dev.target, kernels=("triad_timed",))
    )
    tk = dev.kernel(dev.load(res.object_code), res.object_code.symbol("triad_timed"))
    tbuf = dev.alloc(16 * 64)
    scratch = dev.alloc(16)
    with rot.BufferSets(dev, spec, n, 1) as sets:
        base_vals = list(sets.args[0].values)
        targs = [PackedArgs(base_vals + [ctypes.c_void_p(tbuf.ptr + 16 * j)]) for j in range(64)]
        tpad = PackedArgs(base_vals + [ctypes.c_void_p(scratch.ptr)])
        for flush in ("none", "l2-read"):
            fl = make_flusher(dev, flush)
            try:
                for _ in range(3):  # warm-up (clocks, module load)
                    run_design(dev, kernel, grid, block, sets.args[0], fl, 64, 0, 2)
                order = list(designs)
                for rep in range(2):  # two passes, second in reverse order: drift shows as a pass difference
                    for name, timed, pad in order if rep == 0 else order[::-1]:
                        chunks = max(a.chunks, (a.chunks * 64) // timed // 4)
                        t0 = time.perf_counter()
                        rows = run_design(dev, kernel, grid, block, sets.args[0], fl, timed, pad, chunks)
                        df = pd.DataFrame(rows, columns=["chunk", "position", "time_s", "kernel_s", "hold_timed_out"])
                        df["design"], df["timed"], df["pad"], df["flush"], df["pass"] = name, timed, pad, flush, rep
                        df["wall_s"] = time.perf_counter() - t0
                        df["timer"] = "events"
                        frames.append(df)
                        # the same design with the in-kernel timer (first block start -> last block end)
                        rows = run_design(
                            dev, tk, grid, block, None, fl, timed, pad, chunks, timer=(tbuf, targs[:timed], tpad)
                        )
                        df = pd.DataFrame(rows, columns=["chunk", "position", "time_s", "kernel_s", "hold_timed_out"])
                        df["design"], df["timed"], df["pad"], df["flush"], df["pass"] = name, timed, pad, flush, rep
                        df["wall_s"], df["timer"] = math.nan, "in-kernel"
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
    for (flush, name, timer), g in data.groupby(["flush", "design", "timer"], sort=False):
        if timer == "in-kernel":
            g = g.assign(time_s=g["kernel_s"])
        med = g["time_s"].median()
        pos = g.groupby("position")["time_s"].median()
        worst = float((pos / med - 1).abs().max())
        tail = pos.iloc[-min(9, len(pos)) :].median()
        head = pos.iloc[: max(1, len(pos) - 9)].median() if len(pos) > 9 else pos.median()
        lines.append(
            f"{flush:8s} {name:10s} {timer:9s} n={len(g):6d} median={med * 1e6:7.3f} us  head={head * 1e6:7.3f} "
            f"tail9={tail * 1e6:7.3f}  max|pos/med-1|={worst:6.1%}  timeouts={int(g['hold_timed_out'].sum())}"
        )
    text = "\n".join(lines)
    (out / "queue_depth.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
