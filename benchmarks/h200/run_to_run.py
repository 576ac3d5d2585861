"""Where does run-to-run drift live? (issue 9: "SD of run medians <= 1.5x the implied sigma").

Back-to-back runs of the same triad sweep on the H200 moved their medians by 1-8 event ticks, with a
strong common factor across sizes (run medians correlate 0.6-0.85 between 1 MiB and 64 MiB): a shift
shared by every configuration of a run. This script separates the candidates, in one process:

  A. ``--runs`` sweeps (4 KiB, 1, 4, 16, 64, 256 MiB; none / l2-read), timers events AND in-kernel on
     the same launches, fresh buffers each run: if the in-kernel medians do not drift and the events
     do, the drift is in the launch/event path (the ~3 us events include and the kernel does not);
     4 KiB is the floor (events - in-kernel there = launch + drain of a near-empty grid).
  B. one long run of 10x the iterations on one set of buffers, split into 10 consecutive epochs:
     drift in time with buffers fixed, against the same statistic as A.

Usage (GPU machine): PYTHONPATH=. python3 benchmarks/h200/run_to_run.py --out DIR [--runs 10]
Writes DIR/A_runs.parquet, DIR/B_samples.parquet, DIR/drift.json and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

KIB, MIB = 1 << 10, 1 << 20


def epochs(samples: pd.DataFrame, count: int) -> pd.DataFrame:
    """Per configuration and timer: the median and interval of each of ``count`` consecutive epochs."""
    from hipexplore.bench.stats import Measurement

    rows = []
    for (size, flush, timer), g in samples.groupby(["size_bytes", "flush", "timer"]):
        g = g.sort_values("iteration")
        for e, part in enumerate(np.array_split(np.arange(len(g)), count)):
            sub = g.iloc[part]
            m = Measurement(sub["time_s"].to_numpy(), chunks=sub["chunk"].to_numpy())
            lo, hi = m.bootstrap_ci()
            rows.append(
                {
                    "size_bytes": size,
                    "flush": flush,
                    "timer": timer,
                    "epoch": e,
                    "median_s": m.median,
                    "ci_low_s": lo,
                    "ci_high_s": hi,
                }
            )
    return pd.DataFrame(rows)


def spread(frame: pd.DataFrame, by: str) -> pd.DataFrame:
    rows = []
    for (size, flush, timer), g in frame.groupby(["size_bytes", "flush", "timer"]):
        implied = float(((g.ci_high_s - g.ci_low_s) / 2 / 1.96).mean())
        sd = float(g.median_s.std(ddof=1))
        rows.append(
            {
                "size_kib": size // KIB,
                "flush": flush,
                "timer": timer,
                by: g[by].nunique(),
                "mean_median_us": g.median_s.mean() * 1e6,
                "sd_ns": sd * 1e9,
                "implied_ns": implied * 1e9,
                "ratio": sd / implied if implied else float("inf"),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument(
        "--passes",
        type=int,
        nargs="*",
        default=[1],
        help="pass counts to compare (runs alternate between them, so drift reaches each alike)",
    )
    ap.add_argument("--no-long", action="store_true", help="skip part B")
    ap.add_argument("--device", default="cuda", help="cuda (the run); host for a smoke test of the script")
    ap.add_argument("--sizes-mib", type=float, nargs="*", help="override the sizes (MiB) for a smoke test")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import hipexplore as hx
    from hipexplore.devices import get_device

    dev = get_device(a.device)
    timers = ("events", "in-kernel") if a.device == "cuda" else ("events",)
    sizes = [4 * KIB, 1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
    if a.sizes_mib:
        sizes = [4 * KIB] + [int(x * MIB) for x in a.sizes_mib]
    report: dict = {"device": dev.name, "revision": os.environ.get("HIPEXPLORE_GIT_REVISION", "")}
    t0 = time.time()
    runs = []
    for r in range(a.runs):
        for npass in a.passes:
            t = time.time()
            res = hx.sweep(
                "triad",
                sizes,
                [1],
                ["none", "l2-read"],
                device=dev,
                iterations=a.iterations,
                reference=False,
                progress=False,
                timers=timers,
                passes=npass,
            )
            runs.append(res.summary.assign(rep=r, run_id=f"run{r}p{npass}", npass=npass, run_seconds=time.time() - t))
            pd.concat(runs, ignore_index=True).to_parquet(out / "A_runs.parquet")  # kept if the run is cut short
            print(f"run {r} passes {npass}: {time.time() - t:.1f} s", flush=True)
    everything = pd.concat(runs, ignore_index=True)
    everything.to_parquet(out / "A_runs.parquet")
    by_passes = {n: spread(everything[everything.npass == n], "rep").assign(npass=n) for n in a.passes}
    report["A_spread_by_passes"] = {str(n): f.to_dict("records") for n, f in by_passes.items()}
    A = everything[everything.npass == a.passes[0]]
    sA = pd.concat(by_passes.values(), ignore_index=True)
    # events minus the run's own floor (events - in-kernel at 4 KiB, same flush)
    if len(timers) == 1:
        A = pd.concat([A, A.assign(timer="in-kernel", median_s=0.0)], ignore_index=True)  # smoke test only
    piv = A.pivot_table(index=["rep", "flush", "size_bytes"], columns="timer", values="median_s").reset_index()
    floor = piv[piv.size_bytes == 4 * KIB].set_index(["rep", "flush"])
    piv["floor_s"] = [floor.loc[(r, f), "events"] - floor.loc[(r, f), "in-kernel"] for r, f in zip(piv.rep, piv.flush)]
    piv["events_minus_floor_s"] = piv["events"] - piv["floor_s"]
    piv["offset_s"] = piv["events"] - piv["in-kernel"]
    piv.to_parquet(out / "A_offsets.parquet")
    corr = A[A.timer == "events"].pivot_table(index="rep", columns=["size_bytes", "flush"], values="median_s").corr()
    report["A_spread"] = sA.to_dict("records")
    report["A_offsets"] = (
        piv.groupby(["size_bytes", "flush"])
        .agg(
            offset_mean_us=("offset_s", lambda x: x.mean() * 1e6),
            offset_sd_ns=("offset_s", lambda x: x.std() * 1e9),
            floor_mean_us=("floor_s", lambda x: x.mean() * 1e6),
            emf_sd_ns=("events_minus_floor_s", lambda x: x.std() * 1e9),
            events_sd_ns=("events", lambda x: x.std() * 1e9),
            inkernel_sd_ns=("in-kernel", lambda x: x.std() * 1e9),
            emf_over_inkernel=("events_minus_floor_s", "mean"),
        )
        .reset_index()
        .to_dict("records")
    )
    report["A_seconds"] = time.time() - t0

    t1 = time.time()
    if a.no_long:
        (out / "drift.json").write_text(json.dumps(report, indent=1, default=str))
        pd.set_option("display.width", 250)
        print(sA.to_string(index=False))
        print(pd.DataFrame(report["A_offsets"]).to_string(index=False))
        print(f"seconds A {report['A_seconds']:.1f}")
        return
    long = hx.sweep(
        "triad",
        sizes[1::2],
        [1],
        ["none", "l2-read"],
        device=dev,
        iterations=a.iterations * 10,
        reference=False,
        progress=False,
        timers=timers,
    )
    long.samples.to_parquet(out / "B_samples.parquet")
    sB = spread(epochs(long.samples, 10), "epoch")
    report["B_spread"] = sB.to_dict("records")
    report["B_seconds"] = time.time() - t1
    report["seconds"] = time.time() - t0
    (out / "drift.json").write_text(json.dumps(report, indent=1, default=str))
    pd.set_option("display.width", 250)
    print("A. runs (fresh buffers each):")
    print(sA.to_string(index=False))
    print(pd.DataFrame(report["A_offsets"]).to_string(index=False))
    print("A. run-median correlation (events):")
    print(corr.round(2).to_string())
    print("B. epochs of one long run:")
    print(sB.to_string(index=False))
    print(f"seconds A {report['A_seconds']:.1f} B {report['B_seconds']:.1f}")


if __name__ == "__main__":
    main()
