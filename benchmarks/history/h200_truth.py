"""Measurement truth on the H200 (issue 9, item 7 and its done-when), in one run.

For the catalog triad at 1, 4, 16, 64, 256 MiB, on the same cubin:
  A. ours: events and the in-kernel timer, flush none / l2-write / l2-read, 200 fixed iterations,
     chunks of 4 (the harness default), the cold reference in parts;
  B. nvbench's cold measurement through its Python package (cuda-bench: flush = memset of the L2,
     sync, blocking kernel, one launch), median of its samples;
  C. triton.testing.do_bench (its 256 MB zeroing between reps), median;
  D. chunk position: the largest |median at a position / median - 1| per configuration, and the
     same for the old design (64 per hold) measured here side by side;
  E. 10 repeated runs of the none / l2-read sweep: SD of the run medians against the sigma the
     reported intervals imply (half-width / 1.96);
  F. a default adaptive sweep (8 configurations + references): stop reasons, timeouts.

Usage (GPU machine): PYTHONPATH=. python3 benchmarks/h200_truth.py --out DIR [--quick]
(carry the cuda-bench wheel: `.whl/cuda_bench-*.whl` installed to /tmp/site, PYTHONPATH=/tmp/site:.).
Writes DIR/truth.json (every table), DIR/*.parquet, and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import traceback
from pathlib import Path

import pandas as pd

MIB = 1 << 20


def ours(dev, sizes, iterations, chunk=None, timers=("events", "in-kernel"), flush=("none", "l2-write", "l2-read")):
    import hipexplore as hx

    kw = {"chunk": chunk} if chunk else {}
    return hx.sweep(
        "triad", sizes, [1], list(flush), device=dev, iterations=iterations, timers=timers, progress=False, **kw
    )


def nvbench_cold(dev, sizes):
    """nvbench cold medians (s) per size for our triad cubin, launched on nvbench's stream."""
    import sys
    import tempfile

    import cuda.bench as bench
    from cuda.bindings import driver as drv

    from hipexplore.bench import rotating as rot
    from hipexplore.kernels import catalog
    from hipexplore.kernels.build import kernel_for

    spec = catalog.get("triad")
    kernel = kernel_for(dev, "triad")
    keep = []
    for size in sizes:
        n = spec.elements(size)
        sets = rot.BufferSets(dev, spec, n, 1)
        keep.append(sets)
        grid, block = spec.geometry(n, dev)
        args = sets.args[0]

        def fn(state, grid=grid, block=block, args=args, size=size):
            state.add_global_memory_reads(2 * size)
            state.add_global_memory_writes(size)
            state.exec(
                lambda launch: dev.launch(
                    kernel, grid, block, args, stream=drv.CUstream(launch.get_stream().__cuda_stream__()[1])
                )
            )

        fn.__name__ = f"triad_{size // MIB}MiB"
        bench.register(fn)
    out = Path(tempfile.mkdtemp()) / "nvbench.json"
    argv = [sys.argv[0], "--json", str(out)]
    bench.run_all_benchmarks(argv)
    root = json.loads(out.read_text())
    res = {}
    for b in root.get("benchmarks", []):
        size = int(b["name"].split("_")[1].replace("MiB", "")) * MIB
        for st in b.get("states", []):
            tags = {s["tag"]: {d["name"]: d.get("value") for d in s.get("data", [])} for s in st.get("summaries", [])}
            med = tags.get("nv/cold/time/gpu/median", {}).get("value")
            mean = tags.get("nv/cold/time/gpu/mean", {}).get("value")
            res[size] = {
                "median_s": float(med) if med is not None else math.nan,
                "mean_s": float(mean) if mean is not None else math.nan,
                "tags": sorted(tags),
            }
    for s in keep:
        s.free()
    return res


def do_bench(dev, sizes):
    import torch
    import triton.testing

    from hipexplore.bench import rotating as rot
    from hipexplore.kernels import catalog
    from hipexplore.kernels.build import kernel_for
    from cuda.bindings import driver as drv

    spec = catalog.get("triad")
    kernel = kernel_for(dev, "triad")
    res = {}
    for size in sizes:
        n = spec.elements(size)
        with rot.BufferSets(dev, spec, n, 1) as sets:
            grid, block = spec.geometry(n, dev)
            stream = drv.CUstream(torch.cuda.current_stream().cuda_stream)
            fn = lambda: dev.launch(kernel, grid, block, sets.args[0], stream=stream)  # noqa: E731
            ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
            res[size] = {"median_s": ms * 1e-3}
    return res


def position_effect(samples: pd.DataFrame) -> pd.DataFrame:
    rows = []
    x = samples[samples.flush != "cold-reference"]
    for (size, flush, timer), g in x.groupby(["size_bytes", "flush", "timer"]):
        med = g.time_s.median()
        pos = g.groupby("position").time_s.median()
        rows.append(
            {
                "size_mib": size / MIB,
                "flush": flush,
                "timer": timer,
                "median_us": med * 1e6,
                "max_position_effect": float((pos / med - 1).abs().max()),
                "positions": int(pos.size),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    import hipexplore as hx
    from hipexplore.devices import get_device

    dev = get_device("cuda")
    sizes = [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
    report: dict = {
        "device": dev.name,
        "revision": os.environ.get("HIPEXPLORE_GIT_REVISION", ""),
        "sizes_mib": [s // MIB for s in sizes],
    }
    t0 = time.time()

    # A + D: ours, new design and the old 64-per-hold design side by side
    resA = ours(dev, sizes, 200)
    resA.samples.to_parquet(out / "A_samples.parquet")
    resA.summary.to_parquet(out / "A_summary.parquet")
    old = ours(dev, sizes, 200, chunk=64, timers=("events",), flush=("none", "l2-read"))
    pe_new, pe_old = position_effect(resA.samples), position_effect(old.samples)
    report["position_effect_chunk4"] = pe_new.to_dict("records")
    report["position_effect_chunk64"] = pe_old.to_dict("records")
    s = resA.summary
    table = s[s.flush != "cold-reference"][
        [
            "size_bytes",
            "flush",
            "timer",
            "n",
            "median_s",
            "ci_low_s",
            "ci_high_s",
            "bias",
            "bias_ci_low",
            "bias_ci_high",
            "clock_mhz",
            "n_throttled",
            "warning",
        ]
    ].copy()
    table["size_mib"] = table.size_bytes / MIB
    report["ours"] = table.drop(columns=["size_bytes"]).to_dict("records")
    report["ours_reference"] = s[s.flush == "cold-reference"][
        ["size_bytes", "timer", "n", "median_s", "ci_low_s", "ci_high_s"]
    ].to_dict("records")

    # B, C: nvbench cold and do_bench on the same cubin
    for name, fn in (("nvbench_cold", nvbench_cold), ("do_bench", do_bench)):
        try:
            report[name] = {str(k // MIB): v for k, v in fn(dev, sizes).items()}
        except Exception as exc:  # a missing package must not lose the rest of the run
            report[name] = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}

    # E: repeated runs
    reps = 3 if a.quick else a.repeats
    runs = []
    for r in range(reps):
        res = hx.sweep(
            "triad", sizes, [1], ["none", "l2-read"], device=dev, iterations=200, reference=False, progress=False
        )
        runs.append(res.summary.assign(rep=r, run_id=f"run{r}"))
    allruns = pd.concat(runs, ignore_index=True)
    allruns.to_parquet(out / "E_runs.parquet")
    from hipexplore.bench.drift import run_to_run

    rr = run_to_run(runs)
    rows = [
        {
            "size_mib": r.size_bytes / MIB,
            "flush": r.flush,
            "runs": r.runs,
            "mean_median_us": r.mean_median_s * 1e6,
            "sd_of_medians_ns": r.sd_of_medians_s * 1e9,
            "implied_sigma_ns": r.implied_sigma_s * 1e9,
            "ratio": r.ratio,
            "drift": r.drift,
        }
        for r in rr.itertuples()
    ]
    report["repeats"] = rows

    # F: a default adaptive sweep
    t1 = time.time()
    ad = hx.sweep("triad", [1 * MIB, 64 * MIB], [1, "auto"], ["none", "l2-read"], device=dev, progress=False)
    ad.summary.to_parquet(out / "F_adaptive_summary.parquet")
    report["adaptive"] = {
        "seconds": time.time() - t1,
        "rows": ad.summary[
            ["size_bytes", "rotating", "flush", "n", "median_s", "ci_low_s", "ci_high_s", "stop_reason", "timed_out"]
        ].to_dict("records"),
    }
    report["seconds"] = time.time() - t0
    (out / "truth.json").write_text(json.dumps(report, indent=1, default=str))

    # tables
    pd.set_option("display.width", 250)
    print("A. ours (200 iterations, chunks of 4):")
    print(
        table[
            [
                "size_mib",
                "flush",
                "timer",
                "median_s",
                "ci_low_s",
                "ci_high_s",
                "bias",
                "bias_ci_low",
                "bias_ci_high",
                "clock_mhz",
            ]
        ].to_string(index=False)
    )
    print("B/C. nvbench cold, do_bench medians (us):")
    for name in ("nvbench_cold", "do_bench"):
        v = report[name]
        print(
            name,
            {k: round(x["median_s"] * 1e6, 3) for k, x in v.items() if isinstance(x, dict) and "median_s" in x}
            if "error" not in v
            else v["error"],
        )
    print("D. position effect, chunk 4 vs 64 (max |pos median / median - 1|):")
    print(
        pe_new.merge(pe_old, on=["size_mib", "flush", "timer"], how="left", suffixes=("_4", "_64")).to_string(
            index=False
        )
    )
    print("E. repeats:")
    print(pd.DataFrame(rows).to_string(index=False))
    print("F. adaptive:", f"{report['adaptive']['seconds']:.1f} s")
    print(ad.summary[["size_bytes", "rotating", "flush", "n", "stop_reason", "timed_out"]].to_string(index=False))


if __name__ == "__main__":
    main()
