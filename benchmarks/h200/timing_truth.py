"""Measurement truth on the H200, session 4 (issue 9): the random chunk lead, the fenced in-kernel end.

  P. chunk position, the random lead against none, side by side: ``--reps`` alternations of the
     triad at 1-256 MiB, flush none / l2-write / l2-read, events and in-kernel, 2000 iterations (500
     per position), once with ``chunk_lead="random"`` (the default now: 0 or 1 untimed launch at the
     head of each hold) and once with ``chunk_lead=0`` (session 3's design), the order alternating;
     ``bench.drift.position_effect`` per sweep.
  L. events - floor against the in-kernel timer, from the same sweeps; in the first alternation also
     ``triad-nofence`` (the same source with session 3's in-kernel end, no ``__threadfence`` before
     it), so the fence's share of the gap is measured in the same run.
  N. ours (l2-write) against nvbench's cold measurement, each in a fresh process, in alternation.
  S. a default adaptive sweep of 8 configurations (stops before its timeout?).

Usage (GPU machine): PYTHONPATH=/tmp/site:. python3 benchmarks/h200/timing_truth.py --out DIR [--reps 3]
Writes DIR/truth3.json, DIR/*.parquet and prints the tables. ``--device host`` smoke-tests the
script's own code (no in-kernel timer or nvbench there).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

MIB = 1 << 20
HERE = Path(__file__).resolve().parent


def nofence_triad():
    """The catalog triad with session 3's in-kernel end (no fence): a spec of its own, not registered."""
    from hipexplore.kernels import catalog, sources

    fenced = "#define HX_T_END __threadfence(); __syncthreads();"
    assert fenced in sources.TRIAD_GPU
    src = sources.TRIAD_GPU.replace(fenced, "#define HX_T_END __syncthreads();")
    return dataclasses.replace(catalog.get("triad"), name="triad-nofence", gpu_source=src)


def floor_rows(summary: pd.DataFrame, **tags) -> list[dict]:
    s = summary
    ev = s[(s.timer == "events") & (s.kernel == "triad")].set_index(["size_bytes", "flush"])
    rows = []
    for (size, flush), r in ev.iterrows():
        row = {
            **tags,
            "size_mib": size / MIB,
            "flush": flush,
            "events_us": r.median_s * 1e6,
            "floor_us": r.floor_s * 1e6,
            "net_us": r.net_median_s * 1e6,
        }
        for kernel, col in (("triad", "in_kernel_us"), ("triad-nofence", "nofence_in_kernel_us")):
            ik = s[(s.timer == "in-kernel") & (s.kernel == kernel) & (s.size_bytes == size) & (s.flush == flush)]
            if len(ik):
                row[col] = float(ik.median_s.iloc[0]) * 1e6
        if "in_kernel_us" in row:
            row["net_over_inkernel"] = row["net_us"] / row["in_kernel_us"] - 1
        if "nofence_in_kernel_us" in row:
            row["net_over_nofence"] = row["net_us"] / row["nofence_in_kernel_us"] - 1
        rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--alternations", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes-mib", type=float, nargs="*")
    ap.add_argument("--skip", nargs="*", default=[], help="parts to skip (P, N, S)")
    ap.add_argument(
        "--designs",
        default="random:1,0:0",
        help="chunk designs P compares, LEAD:TRAIL each (default: the default now against session 3's)",
    )
    a = ap.parse_args()
    sizes = [int(x * MIB) for x in (a.sizes_mib or [1, 4, 16, 64, 256])]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import hipexplore as hx
    from hipexplore.bench.drift import position_effect
    from hipexplore.devices import get_device

    dev = get_device(a.device)
    gpu = a.device == "cuda"
    timers = ("events", "in-kernel") if gpu else ("events",)
    report: dict = {
        "device": dev.name,
        "revision": os.environ.get("HIPEXPLORE_GIT_REVISION", ""),
        "sizes_mib": [s / MIB for s in sizes],
    }
    t0 = time.time()
    pd.set_option("display.width", 250)

    if "P" not in a.skip:
        effects, floors, summaries = [], [], []
        designs = [
            (d.split(":")[0] if d.split(":")[0] == "random" else int(d.split(":")[0]), int(d.split(":")[1]))
            for d in a.designs.split(",")
        ]
        for rep in range(a.reps):
            order = designs if rep % 2 == 0 else designs[::-1]
            for lead, trail in order:
                kernels = ["triad"] + (
                    [nofence_triad()]
                    if gpu and rep == 0 and (lead, trail) == designs[0] and "nofence" not in a.skip
                    else []
                )
                t = time.time()
                res = hx.sweep(
                    kernels,
                    sizes,
                    [1],
                    ["none", "l2-write", "l2-read"],
                    device=dev,
                    iterations=a.iterations,
                    timers=timers,
                    reference=False,
                    progress=False,
                    floor=True,
                    chunk_lead=lead,
                    chunk_trail=trail,
                )
                name = f"{lead}:{trail}"
                tag = {"rep": rep, "design": name}  # not "lead": the samples keep their own per-chunk lead
                res.samples[res.samples.kernel == "triad"].assign(**tag).to_parquet(
                    out / f"P_samples_{rep}_{lead}_{trail}.parquet"
                )
                summaries.append(res.summary.assign(**tag))
                pe = position_effect(res.samples[res.samples.kernel == "triad"]).assign(**tag)
                effects.append(pe)
                floors += floor_rows(res.summary, **tag)
                print(f"P rep {rep} design {name}: {time.time() - t:.1f} s", flush=True)
        pe = pd.concat(effects, ignore_index=True)
        pe["size_mib"] = pe.size_bytes / MIB
        pe.drop(columns=["effects"]).to_parquet(out / "P_effects.parquet")
        pd.concat(summaries, ignore_index=True).to_parquet(out / "P_summary.parquet")
        fl = pd.DataFrame(floors)
        fl.to_parquet(out / "L_floor.parquet")
        report["P_position_effect"] = pe.drop(columns=["kernel", "effects"]).to_dict("records")
        report["L_floor"] = floors
        report["P_seconds"] = time.time() - t0
        (out / "truth3.json").write_text(json.dumps(report, indent=1, default=str))
        wide = pe.pivot_table(index=["size_mib", "flush", "timer"], columns=["design", "rep"], values="max_effect")
        print("P. largest position effect of the medians (fraction), per design (lead:trail) and rep:")
        print(wide.round(4).to_string(), flush=True)
        means = []
        for (rep, name), g in pd.concat([pd.read_parquet(f) for f in sorted(out.glob("P_samples_*.parquet"))]).groupby(
            ["rep", "design"]
        ):
            for (size, flush, timer), c in g.groupby(["size_bytes", "flush", "timer"]):
                m = c.groupby("position").time_s.mean()
                means.append(
                    {
                        "rep": rep,
                        "design": name,
                        "size_mib": size / MIB,
                        "flush": flush,
                        "timer": timer,
                        "max_mean_effect": float((m / m.median() - 1).abs().max()),
                        "means_us": [round(v * 1e6, 4) for v in m],
                    }
                )
        means = pd.DataFrame(means)
        means.to_parquet(out / "P_means.parquet")
        report["P_position_means"] = means.to_dict("records")
        print("P. largest position effect of the means, per design and rep:")
        print(
            means.pivot_table(index=["size_mib", "flush", "timer"], columns=["design", "rep"], values="max_mean_effect")
            .round(4)
            .to_string(),
            flush=True,
        )
        print("L. events - floor vs in-kernel (fenced) and vs the fenceless end:")
        print(fl.to_string(index=False), flush=True)

    if "N" not in a.skip:
        t1 = time.time()
        ours, nv = [], []
        for k in range(a.alternations):
            r = hx.sweep("triad", sizes, [1], ["l2-write"], device=dev, iterations=200, reference=False, progress=False)
            ours += [{"alt": k, "size_mib": x.size_bytes / MIB, "median_s": x.median_s} for x in r.summary.itertuples()]
            if gpu:
                f = out / f"nv_{k}.json"
                cmd = [
                    sys.executable,
                    str(HERE / "nvbench_cold.py"),
                    "--out",
                    str(f),
                    "--sizes-mib",
                    *[str(x / MIB) for x in sizes],
                ]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
                if p.returncode != 0 or not f.exists():
                    report.setdefault("N_errors", []).append(p.stderr[-1500:])
                else:
                    nv += [
                        {"alt": k, "size_mib": int(s) / MIB, "median_s": v["median_s"]}
                        for s, v in json.loads(f.read_text()).items()
                    ]
            print(f"N alternation {k}: {time.time() - t1:.1f} s", flush=True)
        o, n = pd.DataFrame(ours), pd.DataFrame(nv)
        o.to_parquet(out / "N_ours.parquet")
        table = o.groupby("size_mib").median_s.median().rename("ours_s").to_frame()
        if len(n):
            n.to_parquet(out / "N_nvbench.parquet")
            table["nvbench_s"] = n.groupby("size_mib").median_s.median()
            table["ratio"] = table.ours_s / table.nvbench_s
        report["N_ours_vs_nvbench"] = table.reset_index().to_dict("records")
        report["N_seconds"] = time.time() - t1
        print("N. l2-write vs nvbench cold (medians over fresh processes):")
        print(table.to_string(), flush=True)

    if "S" not in a.skip:
        t2 = time.time()
        r = hx.sweep("triad", [1 << 20, 16 << 20], [1, "auto"], ["none", "l2-read"], device=dev, progress=False)
        r.summary.to_parquet(out / "S_adaptive.parquet")
        cols = [
            "size_bytes",
            "rotating_requested",
            "flush",
            "n",
            "median_s",
            "ci_low_s",
            "ci_high_s",
            "stop_reason",
            "timed_out",
        ]
        report["S_adaptive"] = r.summary[cols].to_dict("records")
        report["S_seconds"] = time.time() - t2
        print("S. default adaptive sweep:")
        print(r.summary[cols].to_string(index=False), flush=True)

    report["seconds"] = time.time() - t0
    (out / "truth3.json").write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
