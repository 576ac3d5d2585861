#!/usr/bin/env python3
"""H200 benchmark: triad at 1..256 MiB per array x rotating {1, 2, 4, auto} x flush {none, l2-write,
l2-read}, the cold reference per size, and, in the same process on the same cubin and buffers,
``triton.testing.do_bench`` (which zeroes a 256 MiB buffer before every launch).

Also in the same run: a triad correctness check against numpy for every size (the sweep's
``verify``), an l2-write sweep whose flush buffer is 256 MiB like do_bench's, a sweep with an event
between each flush and the kernel's start event (our first method), and the naive method
(one event pair and a stream sync per launch) at 1 MiB, to show the host latency it measures.

Run from the repository root:
    PYTHONPATH=. python3 benchmarks/h200_sweep.py --out data/h200
Outputs (in --out): h200_triad.parquet (+ .summary.parquet, .meta.json); h200_variants.parquet
(+ .summary.parquet; an extra ``variant`` column: ``write256``, ``flush-end-event``); h200_extra.json
(do_bench raw times, interleaved ours/do_bench rounds, naive timing, checks, provenance).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

MIB = 1 << 20


def tree_hash(root: Path) -> str:
    """SHA-256 over the library and benchmark sources (stands in for a git revision before the first commit)."""
    h = hashlib.sha256()
    files = sorted([*root.glob("hipexplore/**/*.py"), *root.glob("benchmarks/*.py")])
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/h200")
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--sizes-mib", default="1,2,4,8,16,32,64,128,256")
    ap.add_argument("--reference-samples", type=int, default=50)
    ap.add_argument("--dobench-rep-ms", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved ours/do_bench rounds")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[1]
    command = "PYTHONPATH=. python3 " + " ".join([f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    sizes = [int(s) * MIB for s in args.sizes_mib.split(",")]
    extra: dict = {"command": command, "source_tree_sha256": tree_hash(root), "errors": []}

    from hipexplore.bench import sweep
    from hipexplore.bench import rotating as rot
    from hipexplore.devices import get_device
    from hipexplore.kernels import catalog
    from hipexplore.kernels.build import kernel_for, last_path

    dev = get_device("cuda")
    props = dev.properties
    extra["device"] = props.as_dict()
    print("device:", props, flush=True)

    # correctness of the catalog kernels at sizes that exercise the n % 4 tail (the sweep's own
    # check covers triad at every swept size)
    from hipexplore.bench.check import CheckTarget
    from hipexplore.bench.sweep import verify

    odd = {}
    for name in ("triad", "copy", "fill"):
        kspec = catalog.get(name)
        for n_odd in (1, 3, 262147, 10_000_019):
            with rot.BufferSets(dev, kspec, n_odd, 1, seed=n_odd) as sets:
                g, b = kspec.geometry(n_odd, dev)
                odd[f"{name}.{n_odd}"] = verify(CheckTarget(dev, kspec, sets, kernel_for(dev, catalog.get(name)), g, b))
    extra["verify_odd_n"] = odd
    print("odd-n correctness (||out - ref|| / ||ref||):", odd, flush=True)

    t0 = time.time()
    res = sweep(
        "triad",
        sizes,
        [1, 2, 4, "auto"],
        ["none", "l2-write", "l2-read"],
        device=dev,
        iterations=args.iterations,
        reference_samples=args.reference_samples,
        out=out / "h200_triad.parquet",
        progress=False,
        command=command,
    )
    extra["sweep_seconds"] = time.time() - t0
    extra["compile_path"] = last_path()
    extra["verify"] = {k: v for k, v in res.metadata.items() if k.startswith("verify.")}
    print(f"main sweep: {len(res.summary)} configurations in {extra['sweep_seconds']:.1f} s", flush=True)

    # variants, same process: l2-write with do_bench's 256 MiB buffer; flushes followed by their own
    # end event (the idle ~1.2 us between flush and kernel lets the cache drain dirty lines)
    import pandas as pd

    t0 = time.time()
    variants = {
        "write256": dict(rotating=[1], flush=["l2-write"], flush_factor={"l2-write": 256 * MIB / dev.llc_bytes}),
        "flush-end-event": dict(rotating=[1], flush=["l2-write", "l2-read"], flush_end_event=True),
    }
    var_samples, var_summary = [], []
    for vname, kw in variants.items():
        rv = sweep(
            "triad",
            sizes,
            device=dev,
            iterations=args.iterations,
            reference=False,
            progress=False,
            command=command,
            verify_results=False,
            **kw,
        )
        var_samples.append(rv.samples.assign(variant=vname))
        var_summary.append(rv.summary.assign(variant=vname))
    var_summary_df = pd.concat(var_summary, ignore_index=True)
    pd.concat(var_samples, ignore_index=True).to_parquet(out / "h200_variants.parquet", index=False)
    var_summary_df.to_parquet(out / "h200_variants.summary.parquet", index=False)
    extra["variants_seconds"] = time.time() - t0

    # --- triton do_bench on the same kernel, same cubin, same buffers, same process ---------------
    spec = catalog.get("triad")
    kernel = kernel_for(dev, catalog.get("triad"))
    dobench: list[dict] = []
    try:
        import torch
        import triton
        from cuda.bindings import driver as drv
        from triton.testing import do_bench

        extra["torch"] = torch.__version__
        extra["triton"] = triton.__version__
        with rot.BufferSets(dev, spec, spec.elements(MIB), 1) as sets:  # first do_bench call pays one-time costs
            g0, b0 = spec.geometry(spec.elements(MIB), dev)
            st0 = drv.CUstream(torch.cuda.current_stream().cuda_stream)
            do_bench(lambda: dev.launch(kernel, g0, b0, sets.args[0], stream=st0), warmup=5, rep=20)
            torch.cuda.synchronize()
        for size in sizes:
            n = spec.elements(size)
            grid, block = spec.geometry(n, dev)
            with rot.BufferSets(dev, spec, n, 1) as sets:
                stream = drv.CUstream(torch.cuda.current_stream().cuda_stream)
                fn = lambda: dev.launch(kernel, grid, block, sets.args[0], stream=stream)  # noqa: E731
                torch.cuda.synchronize()
                times_ms = do_bench(fn, warmup=25, rep=args.dobench_rep_ms, return_mode="all")
                torch.cuda.synchronize()
            t = np.asarray(times_ms, dtype=np.float64) * 1e-3
            dobench.append(
                {
                    "size_bytes": size,
                    "n": int(t.size),
                    "times_s": t.tolist(),
                    "median_s": float(np.median(t)),
                    "mean_s": float(t.mean()),
                    "min_s": float(t.min()),
                    "p5_s": float(np.percentile(t, 5)),
                    "p95_s": float(np.percentile(t, 95)),
                }
            )
            print(f"do_bench {size // MIB:4d} MiB: median {np.median(t) * 1e6:9.2f} us (n={t.size})", flush=True)
    except Exception:
        extra["errors"].append("do_bench: " + traceback.format_exc())
        print(extra["errors"][-1], flush=True)
    extra["do_bench"] = dobench

    # --- interleaved rounds: ours (l2-write, rotating 1) and do_bench alternate, so the spread of
    # each between rounds is measured in the same run as their difference ---------------------------
    rounds: list[dict] = []
    try:
        from hipexplore.bench.flush import make_flusher
        from hipexplore.bench.stats import StopRule
        from hipexplore.bench.timing import Workload, time_launches

        wflush = make_flusher(dev, "l2-write")
        try:
            for rnd in range(args.rounds):
                for size in sizes:
                    n = spec.elements(size)
                    grid, block = spec.geometry(n, dev)
                    with rot.BufferSets(dev, spec, n, 1) as sets:
                        raw = time_launches(
                            Workload(dev, kernel, grid, block, sets.args),
                            wflush,
                            StopRule(iterations=args.iterations),
                            warmup_s=0.02,
                        )
                        stream = drv.CUstream(torch.cuda.current_stream().cuda_stream)
                        fn = lambda: dev.launch(kernel, grid, block, sets.args[0], stream=stream)  # noqa: E731
                        torch.cuda.synchronize()
                        db = np.asarray(do_bench(fn, warmup=25, rep=args.dobench_rep_ms // 2, return_mode="all")) * 1e-3
                        torch.cuda.synchronize()
                    ours = float(np.median(raw.time_s))
                    rounds.append(
                        {
                            "round": rnd,
                            "size_bytes": size,
                            "ours_l2write_s": ours,
                            "do_bench_s": float(np.median(db)),
                            "do_bench_n": int(db.size),
                            "ratio": ours / float(np.median(db)) - 1.0,
                        }
                    )
        finally:
            wflush.free()
        by_size = {}
        for size in sizes:
            rs = [r for r in rounds if r["size_bytes"] == size]
            ours_m = [r["ours_l2write_s"] for r in rs]
            db_m = [r["do_bench_s"] for r in rs]
            by_size[str(size // MIB)] = {
                "ratio_of_medians": float(np.median(ours_m) / np.median(db_m) - 1.0),
                "ours_round_spread": float((max(ours_m) - min(ours_m)) / np.median(ours_m)),
                "do_bench_round_spread": float((max(db_m) - min(db_m)) / np.median(db_m)),
                "ratios": [r["ratio"] for r in rs],
            }
            print(
                f"interleaved {size // MIB:4d} MiB: ours/do_bench - 1 = {by_size[str(size // MIB)]['ratio_of_medians']:+.3f} "
                f"(rounds: {', '.join(f'{r:+.3f}' for r in by_size[str(size // MIB)]['ratios'])}; "
                f"spread ours {by_size[str(size // MIB)]['ours_round_spread']:.3f}, do_bench {by_size[str(size // MIB)]['do_bench_round_spread']:.3f})",
                flush=True,
            )
        extra["interleaved"] = {"rounds": rounds, "by_size": by_size}
    except Exception:
        extra["errors"].append("interleaved: " + traceback.format_exc())
        print(extra["errors"][-1], flush=True)

    # --- naive: one event pair and a sync per launch (host latency inside the window) -------------
    try:
        n = spec.elements(MIB)
        grid, block = spec.geometry(n, dev)
        with rot.BufferSets(dev, spec, n, 1) as sets:
            e0, e1 = dev.event(), dev.event()
            vals = []
            for i in range(320):
                dev.record(e0)
                dev.launch(kernel, grid, block, sets.args[0])
                dev.record(e1)
                dev.synchronize()
                if i >= 20:
                    vals.append(dev.elapsed_s(e0, e1))
        extra["naive_1mib"] = {
            "n": len(vals),
            "median_s": float(np.median(vals)),
            "method": "record, launch, record, stream sync; per launch",
        }
        print(f"naive event pair + sync, 1 MiB: median {np.median(vals) * 1e6:.2f} us", flush=True)
    except Exception:
        extra["errors"].append("naive: " + traceback.format_exc())

    # --- checks against the criteria -------------------------------------------------------
    s = res.summary

    def med(size: int, r: str, f: str) -> float:
        row = s[(s.size_bytes == size) & (s.rotating_requested == r) & (s.flush == f)]
        return float(row.median_s.iloc[0]) if len(row) else float("nan")

    big = 256 * MIB if 256 * MIB in sizes else max(sizes)
    checks = {
        "hot_1mib_us": med(MIB, "1", "none") * 1e6,
        "big_none_r1_us": med(big, "1", "none") * 1e6,
        "big_none_auto_us": med(big, "auto", "none") * 1e6,
        "big_l2read_r1_us": med(big, "1", "l2-read") * 1e6,
    }
    vals = [checks["big_none_r1_us"], checks["big_none_auto_us"], checks["big_l2read_r1_us"]]
    checks["big_spread_rel"] = (max(vals) - min(vals)) / min(vals)
    ratios = {}
    for row in dobench:
        ours = med(row["size_bytes"], "1", "l2-write")
        v = var_summary_df[(var_summary_df.size_bytes == row["size_bytes"]) & (var_summary_df.flush == "l2-write")]
        w256 = v[v.variant == "write256"].median_s
        fee = v[v.variant == "flush-end-event"].median_s
        ratios[str(row["size_bytes"] // MIB)] = {
            "ours_l2write_us": ours * 1e6,
            "do_bench_us": row["median_s"] * 1e6,
            "ratio": ours / row["median_s"] - 1.0,
            "ours_l2write256_us": float(w256.iloc[0]) * 1e6,
            "ratio256": float(w256.iloc[0]) / row["median_s"] - 1.0,
            "ours_flush_end_event_us": float(fee.iloc[0]) * 1e6,
            "ratio_flush_end_event": float(fee.iloc[0]) / row["median_s"] - 1.0,
        }
    checks["l2write_vs_do_bench"] = ratios
    extra["checks"] = checks
    (out / "h200_extra.json").write_text(json.dumps(extra, indent=1, default=str))

    # --- short table last (the device tool returns the tail of the output) -------------------------
    print("\nMiB  r     flush        median_us  iqr_rel  bias     GB/s")
    for r in s.sort_values(["size_bytes", "flush", "rotating"]).itertuples():
        print(
            f"{r.size_bytes // MIB:4d} {r.rotating_requested:5s} {r.flush:14s} {r.median_s * 1e6:9.2f} {r.iqr_rel:7.3f} {r.bias:+7.3f} {r.bandwidth_gbs:7.0f}"
        )
    print(json.dumps(checks, indent=1, default=str))
    if extra["errors"]:
        print("ERRORS:", len(extra["errors"]))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
