"""Does an idle CUDA context elsewhere slow the kernel under test? And is the 64 MiB chunk-position
effect the chunk's or the launch parity's? (issue 9; BENCHMARKS.md "Run-to-run drift")

  I. one-pass sweeps of the triad (4 KiB-16 MiB, none / l2-read, events and in-kernel) alternating
     with and without a second process that holds an idle CUDA context;
  J. 4 passes (each its own process, orchestrated from this process) against 1 pass, alternating;
  K. the triad at 1 and 64 MiB, flush none, 2000 iterations in chunks of 4 and of 3: the median per
     chunk position and per launch parity (iteration % 2), both timers.

Usage (GPU machine): PYTHONPATH=. python3 benchmarks/contexts_h200.py --out DIR [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

KIB, MIB = 1 << 10, 1 << 20
IDLE = "import time; from hipexplore.devices import get_device; d = get_device('cuda'); print('ready', flush=True); time.sleep(600)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import hipexplore as hx
    from hipexplore.bench.drift import position_effect
    from hipexplore.devices import get_device

    dev = get_device(a.device)
    timers = ("events", "in-kernel") if a.device == "cuda" else ("events",)
    sizes = [4 * KIB, 1 * MIB, 4 * MIB, 16 * MIB]
    report: dict = {"device": dev.name, "revision": os.environ.get("HIPEXPLORE_GIT_REVISION", "")}
    rows = []

    def one(tag: str, r: int, passes: int = 1) -> None:
        t = time.time()
        res = hx.sweep(
            "triad",
            sizes,
            [1],
            ["none", "l2-read"],
            device=dev,
            iterations=200,
            reference=False,
            progress=False,
            timers=timers,
            passes=passes,
        )
        rows.append(res.summary.assign(tag=tag, rep=r, run_seconds=time.time() - t))
        pd.concat(rows, ignore_index=True).to_parquet(out / "IJ_runs.parquet")
        print(f"{tag} {r}: {time.time() - t:.1f} s", flush=True)

    for r in range(a.runs + 1):
        one("alone", r)
        idle = subprocess.Popen([sys.executable, "-c", IDLE], stdout=subprocess.PIPE, text=True)
        try:
            idle.stdout.readline()
            one("idle-context", r)
        finally:
            idle.kill()
            idle.wait()
    for r in range(a.runs):
        one("passes4", r, passes=4)
        one("passes1", r)
    s = pd.concat(rows, ignore_index=True)
    lv = s.groupby(["tag", "size_bytes", "flush", "timer"]).median_s.agg(["mean", "std", "count"]).reset_index()
    lv["size_mib"] = lv.size_bytes / MIB
    report["IJ_levels"] = lv.to_dict("records")
    pd.set_option("display.width", 250)
    piv = lv.pivot_table(index=["size_mib", "flush", "timer"], columns="tag", values="mean") * 1e6
    for t in ("idle-context", "passes4", "passes1"):
        if t in piv:
            piv[f"{t}_vs_alone_%"] = (piv[t] / piv["alone"] - 1) * 100
    print(piv.round(3).to_string(), flush=True)
    report["IJ_table"] = piv.reset_index().to_dict("records")

    kk = []
    for chunk in (4, 3):
        res = hx.sweep(
            "triad",
            [1 * MIB, 64 * MIB],
            [1],
            ["none"],
            device=dev,
            iterations=2000,
            reference=False,
            progress=False,
            timers=timers,
            chunk=chunk,
        )
        x = res.samples.assign(chunk_size=chunk)
        kk.append(x)
    K = pd.concat(kk, ignore_index=True)
    K.to_parquet(out / "K_samples.parquet")
    krows = []
    for (chunk, size, timer), g in K.groupby(["chunk_size", "size_bytes", "timer"]):
        med = g.time_s.median()
        pe = position_effect(g).iloc[0]
        par = g.groupby(g.iteration % 2).time_s.median() / med - 1
        krows.append(
            {
                "chunk": chunk,
                "size_mib": size / MIB,
                "timer": timer,
                "median_us": med * 1e6,
                "position_max_effect": pe.max_effect,
                "position_ci": [pe.max_effect_low, pe.max_effect_high],
                "position_effects": pe.effects,
                "parity_effects": par.tolist(),
                "parity_means_us": (g.groupby(g.iteration % 2).time_s.mean() * 1e6).tolist(),
            }
        )
    report["K"] = krows
    print(pd.DataFrame(krows).to_string(index=False))
    (out / "contexts.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
