#!/usr/bin/env python3
"""Many GPUs on Dask (issue 16): one GPU against N pinned workers, in one command.

The 16-configuration sweep (triad and copy x 1 MiB, 256 MiB per array x rotating 1, auto x flush
none, l2-read, fixed iterations; plus the cold reference per (kernel, size)) is measured:
  1. on one GPU (``device cuda``, this process), its wall time;
  2. on N Dask workers, one per GPU (``bench.cluster``, ``local:N``), its wall time (cluster start-up
     timed apart), and whether each configuration's median agrees with the one-GPU run's within
     their 95% intervals;
  3. whole on every worker (``run_on_every_worker``): per-GPU medians and whether the GPUs agree
     within their intervals (``grouping.per_gpu``);
then ``tune-replay --compiler nvrtc --cluster`` over the same workers sharing one cache directory
(``OUT/cache``): the ideal, disk-cold and disk-warm passes, every event with its worker.

Also recorded: what each worker sees (visible-device variables, device name and properties), so
the pinning is checked, not assumed.

Run on the GPU host, from the repository root (Dask is not installed there: carry the wheels,
downloaded here with
``pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 -d .whl "dask[distributed]==2026.8.0"``):
    pip install --no-index --find-links .whl --target /tmp/site "dask[distributed]" && \\
    PYTHONPATH=/tmp/site:. python3 benchmarks/h200/many_gpus.py --out data/cluster_gpu
Outputs (in --out): one_gpu.parquet, cluster.parquet (+ .summary.parquet, .meta.json each),
every_gpu.summary.parquet, replay.parquet (events, with worker/host), cluster_gpu.json (the figures).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path

KEYS = ["kernel", "size_bytes", "rotating_requested", "flush", "timer"]


def gpu_count() -> int:
    try:
        from cuda.bindings import runtime as rt  # type: ignore[import-not-found]

        err, n = rt.cudaGetDeviceCount()
        return int(n) if int(err) == 0 else 0
    except Exception:  # noqa: BLE001
        return 0


def what_worker_sees(device: str = "cuda") -> dict:
    """On a worker: the pinning variables and the device it opens as cuda:0."""
    from hipexplore.bench.cluster import VISIBLE_DEVICE_VARS
    from hipexplore.devices import get_device

    out = {v: os.environ.get(v, "") for v in VISIBLE_DEVICE_VARS}
    dev = get_device(device)
    try:
        props = dev.properties
        out["device_name"] = dev.name
        out["properties"] = {
            k: str(v) for k, v in (props.as_dict() if hasattr(props, "as_dict") else dict(props)).items()
        }
        out["visible_gpus"] = gpu_count()
    finally:
        dev.close()
    return out


def agree(a, b) -> "object":
    import pandas as pd

    j = pd.merge(
        a[[*KEYS, "median_s", "ci_low_s", "ci_high_s"]],
        b[[*KEYS, "median_s", "ci_low_s", "ci_high_s", "gpu"]],
        on=KEYS,
        suffixes=("_one", "_cluster"),
    )
    j["agree"] = (j["ci_low_s_one"] <= j["ci_high_s_cluster"]) & (j["ci_low_s_cluster"] <= j["ci_high_s_one"])
    j["ratio"] = j["median_s_cluster"] / j["median_s_one"]
    return j


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory for the results")
    ap.add_argument("--gpus", type=int, default=None, help="workers (one per GPU; default: every GPU)")
    ap.add_argument(
        "--iterations", type=int, default=1000, help="fixed samples per configuration (>= the auto set count)"
    )
    ap.add_argument("--no-replay", action="store_true", help="skip the tune-replay part")
    ap.add_argument("--device", default="cuda", help="cuda (default); host for a dry run of this script without a GPU")
    ap.add_argument("--sizes", default="1MiB,256MiB", help="bytes per array (default 1MiB,256MiB)")
    ap.add_argument("--replay-problems", default=None, help="tuning-list problems for the replay (default all four)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import distributed

    from hipexplore.bench.run import run
    from hipexplore.bench.cluster import ClusterOptions, local_cluster, run_cluster, run_on_every_worker
    from hipexplore.bench.result import RunOptions
    from hipexplore.bench.grouping import per_gpu
    from hipexplore.bench.spec import SweepSpec
    from hipexplore.bench.stats import StopRule
    from hipexplore.devices import get_device
    from hipexplore.provenance import collect

    n = args.gpus or (gpu_count() if args.device.startswith("cuda") else 2)
    if n < 1:
        print("cluster_gpu: no CUDA GPU visible", file=sys.stderr)
        return 2
    spec = SweepSpec(
        kernels=("triad", "copy"),
        sizes=tuple(args.sizes.split(",")),
        rotating=(1, "auto"),
        flush=("none", "l2-read"),
        stop=StopRule(iterations=args.iterations),
    )
    result: dict = {"gpus": n, "configurations": spec.configurations(), "spec": spec.as_record(), "errors": []}

    dev = get_device(args.device)
    result["provenance"] = collect(dev, command=["python3", *sys.argv])
    t0 = time.perf_counter()
    one = run(spec, dev, RunOptions(out=out / "one_gpu.parquet", resume=False, progress=False))
    result["wall_s_one_gpu"] = time.perf_counter() - t0
    dev.close()

    t0 = time.perf_counter()
    lc = local_cluster(n)
    client = distributed.Client(lc)
    result["cluster_start_s"] = time.perf_counter() - t0
    result["dashboard"] = client.dashboard_link
    try:
        result["workers_see"] = {w: v for w, v in client.run(what_worker_sees, args.device).items()}
        t0 = time.perf_counter()
        res = run_cluster(
            spec,
            client,
            ClusterOptions(device=args.device),
            RunOptions(out=out / "cluster.parquet", resume=False, progress=False),
        )
        result["wall_s_cluster"] = time.perf_counter() - t0
        result["speedup"] = result["wall_s_one_gpu"] / result["wall_s_cluster"]
        result["cluster_reruns"] = json.loads(res.metadata.get("cluster.reruns", "[]"))
        result["cluster_failed"] = json.loads(res.metadata.get("cluster.failed", "[]"))
        result["configurations_per_worker"] = res.summary["worker"].value_counts().to_dict()
        j = agree(one.summary, res.summary)
        result["one_vs_cluster"] = {
            "configurations": len(j),
            "agree": int(j["agree"].sum()),
            "ratio_min": float(j["ratio"].min()),
            "ratio_max": float(j["ratio"].max()),
            "rows": j.to_dict("records"),
        }
        t0 = time.perf_counter()
        every = run_on_every_worker(spec, client, device=args.device)
        result["wall_s_every_gpu"] = time.perf_counter() - t0
        every.to_parquet(out / "every_gpu.summary.parquet")
        cmp = per_gpu(every)
        result["per_gpu"] = {
            "configurations": len(cmp),
            "agree": int(cmp["agree"].sum()) if len(cmp) else 0,
            "spread_rel_max": float(cmp["spread_rel"].max()) if len(cmp) else math.nan,
            "rows": cmp.to_dict("records"),
        }
        if not args.no_replay:
            try:
                from hipexplore.schema import TUNING, write_parquet
                from hipexplore.tuning.cluster import replay_on_cluster
                from hipexplore.tuning.lists import build_list

                from hipexplore.tuning.lists import select_problems

                tlist = build_list("nvrtc", "sm_90", problems=select_problems(args.replay_problems))
                rep = replay_on_cluster(tlist, client, cache_dir=out / "cache")
                write_parquet(rep.frame, out / "replay.parquet", TUNING, result["provenance"])
                result["replay"] = rep.to_json()
                result["replay"]["events_per_worker"] = (
                    rep.frame.groupby(["scenario", "worker"]).size().rename("events").reset_index().to_dict("records")
                )
            except Exception as exc:  # noqa: BLE001 - the sweep figures stand without the replay
                result["errors"].append({"part": "replay", "error": "".join(traceback.format_exception(exc))[-3000:]})
    finally:
        client.close()
        lc.close()
    (out / "cluster_gpu.json").write_text(json.dumps(result, indent=1, default=str))
    print(
        json.dumps(
            {
                k: result.get(k)
                for k in (
                    "gpus",
                    "wall_s_one_gpu",
                    "wall_s_cluster",
                    "speedup",
                    "cluster_start_s",
                    "configurations_per_worker",
                    "cluster_reruns",
                    "cluster_failed",
                )
            },
            default=str,
        )
    )
    print("one vs cluster:", {k: v for k, v in result["one_vs_cluster"].items() if k != "rows"})
    print("per gpu:", {k: v for k, v in result["per_gpu"].items() if k != "rows"})
    if "replay" in result:
        print(
            "replay:", {k: result["replay"][k] for k in ("seconds", "seconds_ideal", "compiles", "disk_hits", "failed")}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
