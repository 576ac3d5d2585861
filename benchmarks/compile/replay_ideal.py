"""How close a tuning replay's memory pass comes to the ideal, and where the excess goes.

For each compiler:target and --jobs, every round runs the ideal (each unique kernel once, no cache)
and the memory pass, each on its own salted copy of the list, in ABBA order across rounds (so a
drift of the shared machine's speed favours neither); the ratio is taken within a round and the
median over rounds reported. The excess of each memory pass over its round's ideal is split into:
  calls     the memory pass's compiler calls minus the ideal's for the same kernels, / jobs
            (per-call timing: the same kernel compiled in both passes, matched by label)
  outside   (1 job) wall time outside compiler calls: keys, lookups, hits, event bookkeeping
  waiting   (jobs > 1) the rest: workers idle (joins, the end of the list, scheduling)
Usage (the command recorded in BENCHMARKS.md):
  PYTHONPATH=. .venv/bin/python benchmarks/compile/replay_ideal.py --lists nvrtc:sm_90:2:6,triton:gfx942:1:6 \
      --jobs 1,8 --rounds 4 --granularity scheduled
(LIST = compiler:target:problems:candidates-per-problem.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pandas as pd  # noqa: E402

from hipexplore.compile.cache import CompileCache  # noqa: E402
from hipexplore.tuning.lists import build_list, select_problems  # noqa: E402
from hipexplore.tuning.replay import make_compiler, measure_ideal, replay_through_cache, salted, warm_up  # noqa: E402


def build(compiler: str, target: str, problems: str, limit: int):
    probs = select_problems(problems)
    if compiler == "triton":
        from hipexplore.tuning.triton_list import build_triton_list

        return build_triton_list(target, problems=probs, limit=limit)
    return build_list(compiler, target, problems=probs, limit=limit)


def one_round(tl, comp, jobs: int, order: tuple[str, ...], tag: str, granularity: str) -> dict:
    res = {}
    for name in order:
        lst = salted(tl, f"{tag}_{name}_{os.getpid()}")
        if name == "ideal":
            res[name] = measure_ideal(lst, comp, jobs)
        else:
            res[name] = replay_through_cache(
                lst, comp, CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False), "memory", jobs, granularity
            )
    ideal, mem = res["ideal"], res["memory"]
    fi, fm = ideal.frame, mem.frame
    compiled = fm[fm["outcome"] == "compiled"].set_index("kernel")["call_seconds"]
    ideal_calls = fi.set_index("kernel")["call_seconds"]
    common = compiled.index.intersection(ideal_calls.index)
    calls = float(compiled[common].sum() - ideal_calls[common].sum()) / jobs
    excess = mem.seconds - ideal.seconds
    out = {
        "ideal_s": ideal.seconds,
        "memory_s": mem.seconds,
        "ratio": mem.seconds / ideal.seconds,
        "excess_s": excess,
        "calls_s": calls,
        "matched": len(common),
        "joins": int((fm["outcome"] == "joined").sum()),
        "compiles": int((fm["outcome"] == "compiled").sum()),
        "cpu_ratio": mem.cpu_seconds / ideal.cpu_seconds if ideal.cpu_seconds > 0 else float("nan"),
        "worst_call_ratio": float((compiled[common] / ideal_calls[common]).max()),
        "median_call_ratio": float((compiled[common] / ideal_calls[common]).median()),
    }
    if jobs == 1:
        out["outside_s"] = float(mem.seconds - fm["call_seconds"].sum())
        out["ideal_outside_s"] = float(ideal.seconds - fi["call_seconds"].sum())
    else:
        out["waiting_s"] = excess - calls
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", default="nvrtc:sm_90:2:6,triton:gfx942:1:6")
    ap.add_argument("--jobs", default="1,8")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument(
        "--granularity",
        default="auto",
        choices=("auto", "candidate", "kernel", "scheduled"),
        help="unit of parallel work (default auto: scheduled with --jobs > 1, as tune-replay)",
    )
    ap.add_argument("--json", default=None, help="write all rounds here")
    args = ap.parse_args()
    rows = []
    for spec in args.lists.split(","):
        compiler, target, problems, limit = spec.split(":")
        tl = build(compiler, target, problems, int(limit))
        for jobs in (int(j) for j in args.jobs.split(",")):
            comp = make_compiler(compiler, jobs)
            try:
                warm_up(comp, compiler, target, jobs)
                measure_ideal(salted(tl, f"warm_{time.time_ns()}"), comp, jobs)  # untimed warm pass
                for r in range(args.rounds):
                    order = ("ideal", "memory") if r % 2 == 0 else ("memory", "ideal")
                    row = one_round(tl, comp, jobs, order, f"r{r}_{time.time_ns()}", args.granularity)
                    row.update(
                        list=f"{compiler}:{target}", kernels=tl.kernels, unique=tl.unique_kernels, jobs=jobs, round=r
                    )
                    rows.append(row)
                    print(
                        json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}),
                        flush=True,
                    )
            finally:
                comp.close()
    df = pd.DataFrame(rows)
    if args.json:
        df.to_json(args.json, orient="records", indent=1)
    agg = df.groupby(["list", "jobs"]).agg(
        kernels=("kernels", "first"),
        unique=("unique", "first"),
        ideal_s=("ideal_s", "median"),
        memory_s=("memory_s", "median"),
        ratio=("ratio", "median"),
        ratio_min=("ratio", "min"),
        cpu_ratio=("cpu_ratio", "median"),
        calls_s=("calls_s", "median"),
        excess_s=("excess_s", "median"),
        joins=("joins", "max"),
    )
    print(agg.to_string(float_format=lambda v: f"{v:.3f}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
