"""Compile time of one split-K GEMM tuning list with and without the cache, against the ideal.

For each compiler:target and each --jobs value, after a warm-up compile per worker, every round
runs these passes over the same list, each with a fresh cache object:
  ideal      each unique kernel compiled once, no cache (the floor)
  off        cache disabled: every list entry compiles (what a tuner without a cache pays)
  memory     memory tier (in-flight sharing: ``joined`` when jobs > 1)
  disk-cold  memory + disk tier on an empty directory, then
  disk-warm  a fresh cache object on that directory (every kernel from disk)
The order of the passes alternates between rounds (ABBA), so a drift of the shared machine's
speed does not favour one pass; ratios are taken within a round, then the median over rounds.

Usage (the command recorded in BENCHMARKS.md):
  .venv/bin/python benchmarks/compile/tune_replay.py --compilers hiprtc:gfx90a,nvrtc:sm_90 --jobs 1,1i,2 \
      --rounds 3 --out data/tuning/tune_bench.parquet
(``1i``: serial through one isolated worker process, the baseline of the parallel speed-up; for
hiprtc serial is isolated anyway, so ``1`` and ``1i`` are the same.)
Prints a markdown table; writes every event (with round and pass) to --out, the per-pass rows to
<out>.passes.parquet and the provenance to <out>.meta.json.

Device mode (item 4; needs a GPU, or --device host for a small dry run):
  PYTHONPATH=. python3 benchmarks/compile/tune_replay.py --device cuda --out DIR
checks the GEMM pipeline against numpy on the device, then times every candidate's whole pipeline
(fill, gemm, reduce, pointwise) with rotating buffers x flush modes and writes DIR/check.csv,
DIR/candidates.parquet, DIR/choice.csv (does the pick change?) and DIR/meta.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hipexplore.compile.cache import CompileCache  # noqa: E402
from hipexplore.errors import ConfigError  # noqa: E402
from hipexplore.provenance import collect  # noqa: E402
from hipexplore.tuning.lists import build_list, select_problems  # noqa: E402
from hipexplore.tuning.replay import (  # noqa: E402
    check_target,
    make_compiler,
    measure_ideal,
    replay_through_cache,
    resolve_granularity,
    salted,
    warm_up,
)

PASSES = ("ideal", "off", "memory", "disk")


def _parse_pairs(text: str) -> list[tuple[str, str]]:
    out = []
    for item in text.split(","):
        if ":" not in item:
            raise ConfigError(f"--compilers items must be compiler:target (e.g. nvrtc:sm_90); got {item!r}")
        name, target = item.split(":", 1)
        out.append((name.strip(), target.strip()))
    return out


def run_one(
    name: str,
    target: str,
    jobs: int,
    rounds: int,
    problems: str | None,
    limit: int | None,
    log=print,
    isolated: bool | None = None,
    granularity: str = "auto",
    salt: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    tl = base = build_list(name, target, problems=select_problems(problems), limit=limit)
    comp = make_compiler(name, jobs, isolated)
    granularity = resolve_granularity(granularity, jobs)  # auto: scheduled with jobs > 1
    rows, frames = [], []
    try:
        check_target(comp, target)
        warm_up(comp, name, target, jobs)
        for rnd in range(rounds):
            order = PASSES if rnd % 2 == 0 else tuple(reversed(PASSES))
            for p in order:
                # every pass its own salt: a compiler's own program cache cannot serve a later pass
                tl = salted(base, f"{os.getpid()}_{rnd}_{p}") if salt else base
                if p == "ideal":
                    results = [measure_ideal(tl, comp, jobs)]
                elif p == "off":
                    results = [
                        replay_through_cache(
                            tl, comp, CompileCache(max_entries=0, max_bytes=0, disk_dir=False), "off", jobs, granularity
                        )
                    ]
                elif p == "memory":
                    results = [
                        replay_through_cache(
                            tl,
                            comp,
                            CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=False),
                            "memory",
                            jobs,
                            granularity,
                        )
                    ]
                else:
                    with tempfile.TemporaryDirectory(prefix="hx-tune-bench-") as d:
                        results = [
                            replay_through_cache(
                                tl,
                                comp,
                                CompileCache(max_entries=4096, max_bytes=2**30, disk_dir=d),
                                sc,
                                jobs,
                                granularity,
                            )
                            for sc in ("disk-cold", "disk-warm")
                        ]
                for res in results:
                    s = res.summary()
                    s.update(
                        compiler=name,
                        target=target,
                        round=rnd,
                        kernels=tl.kernels,
                        unique_kernels=tl.unique_kernels,
                        isolated=comp.isolated,
                        granularity=granularity,
                    )
                    rows.append(s)
                    f = res.frame.copy()
                    f["round"] = rnd
                    f["isolated"] = comp.isolated
                    f["granularity"] = granularity
                    frames.append(f)
                    log(
                        f"  {name}:{target} jobs={jobs} round={rnd} {s['scenario']:<9} {s['seconds']:8.3f} s  "
                        f"compiles={s['compiles']:<4} hits={s['hits']:<4} joins={s['joins']:<3} failed={s['failed']}"
                    )
    finally:
        comp.close()
    return (
        pd.DataFrame(rows),
        pd.concat(frames, ignore_index=True),
        {"kernels": tl.kernels, "unique": tl.unique_kernels},
    )


def _with_call_sums(passes: pd.DataFrame, events: pd.DataFrame | None) -> pd.DataFrame:
    """Add outside_compiler_seconds (serial passes: wall minus the compiler calls) where missing."""
    if "outside_compiler_seconds" in passes.columns or events is None:
        return passes
    keys = ["compiler", "target", "jobs", "isolated", "round", "scenario"]
    if "granularity" in passes.columns and "granularity" in events.columns:
        keys.append("granularity")
    calls = events.groupby(keys)["call_seconds"].sum().rename("call_seconds_sum").reset_index()
    out = passes.merge(calls, on=keys, how="left")
    out["outside_compiler_seconds"] = np.where(out["jobs"] == 1, out["seconds"] - out["call_seconds_sum"], np.nan)
    return out


def table(passes: pd.DataFrame) -> str:
    """One markdown row per compiler x jobs: medians over rounds; ratios within a round, then
    their median [min-max over rounds]."""
    lines = [
        "| compiler:target | jobs | kernels (unique) | no cache s | memory s | disk cold s | disk warm s | ideal s "
        "| memory / ideal (wall) | memory / ideal (CPU) | disk cold / ideal (wall) | outside compiler ms: memory, disk cold "
        "| no cache / memory | joins | speed-up on distinct kernels |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ideal_serial = {}
    for (c, t, iso), g in passes.groupby(["compiler", "target", "isolated"], sort=False):
        s1 = g[(g["jobs"] == 1) & (g["scenario"] == "ideal")]["seconds"]
        if len(s1):
            ideal_serial[(c, t, bool(iso))] = float(s1.median())
    if "granularity" not in passes.columns:
        passes = passes.assign(granularity="candidate")
    for (c, t, j, iso_, gran), g in passes.groupby(
        ["compiler", "target", "jobs", "isolated", "granularity"], sort=False
    ):
        by = {
            sc: g[g["scenario"] == sc].set_index("round") for sc in ("ideal", "off", "memory", "disk-cold", "disk-warm")
        }
        med = {sc: float(df["seconds"].median()) for sc, df in by.items()}
        r_mem = float((by["memory"]["seconds"] / by["ideal"]["seconds"]).median())
        r_mem_lo = float((by["memory"]["seconds"] / by["ideal"]["seconds"]).min())
        r_mem_hi = float((by["memory"]["seconds"] / by["ideal"]["seconds"]).max())
        r_cpu = float((by["memory"]["cpu_seconds"] / by["ideal"]["cpu_seconds"]).median())
        r_disk = float((by["disk-cold"]["seconds"] / by["ideal"]["seconds"]).median())
        r_off = float((by["off"]["seconds"] / by["memory"]["seconds"]).median())
        if j == 1:
            o_mem = float(by["memory"]["outside_compiler_seconds"].median()) * 1e3
            o_disk = float(by["disk-cold"]["outside_compiler_seconds"].median()) * 1e3
            ovh = f"{o_mem:.0f}, {o_disk:.0f}"
        else:  # wall minus calls means nothing when calls overlap: the cache's own lookup time instead
            ovh = (
                f"({float(by['memory']['cache_overhead_seconds'].median()) * 1e3:.0f}, "
                f"{float(by['disk-cold']['cache_overhead_seconds'].median()) * 1e3:.0f} in lookups)"
            )
        joins = int(by["memory"]["joins"].median())
        k, u = int(g["kernels"].iloc[0]), int(g["unique_kernels"].iloc[0])
        # baseline: serial through one isolated worker when measured (same IPC path), else the
        # backend's serial default
        base = ideal_serial.get((c, t, True), ideal_serial.get((c, t, False), np.nan))
        sp = base / med["ideal"] if j > 1 else np.nan
        sp_txt = f"{sp:.2f}x (goal >= {0.8 * j:.1f}x)" if j > 1 else "-"
        iso = " (isolated)" if bool(g["isolated"].iloc[0]) else " (in-process)"
        if gran != "candidate":
            iso += f", {gran} tasks"
        lines.append(
            f"| {c}:{t} | {j}{iso} | {k} ({u}) | {med['off']:.2f} | {med['memory']:.2f} | {med['disk-cold']:.2f} | "
            f"{med['disk-warm']:.3f} | {med['ideal']:.2f} | {r_mem:.3f} [{r_mem_lo:.2f}-{r_mem_hi:.2f}] | {r_cpu:.3f} | {r_disk:.3f} | {ovh} | {r_off:.2f}x | {joins} | {sp_txt} |"
        )
    return "\n".join(lines)


def device_main(args: argparse.Namespace, command: str) -> int:
    """Item 4: check the GEMM family on a device against numpy, then time every candidate's
    pipeline under each rotating count and flush mode and say whether the pick changes."""
    from hipexplore.devices import get_device
    from hipexplore.tuning.ranking import choice_table
    from hipexplore.tuning.workload import benchmark_candidates, check_on_device
    from hipexplore.tuning.lists import default_candidates

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = get_device(args.device)
    t0 = time.time()
    check = check_on_device(dev, trials=3)
    check.to_csv(out / "check.csv", index=False)
    worst = float(check["rel_error"].max())
    print(check.groupby(["m", "n", "k", "config", "activation"], sort=False)["rel_error"].max().to_string())
    print(
        f"GEMM pipeline vs numpy on {dev.name}: worst relative error {worst:.3g} over {len(check)} runs "
        f"({time.time() - t0:.1f} s)",
        flush=True,
    )
    if not worst < 1e-5:
        print("CORRECTNESS FAILED: not timing", flush=True)
        return 1
    problems = select_problems(args.problems)
    cands = default_candidates()[: args.limit] if args.limit else default_candidates()
    t1 = time.time()
    res = benchmark_candidates(
        problems,
        cands,
        device=dev,
        rotating=tuple(args.rotating.split(",")),
        flush=tuple(args.flush.split(",")),
        iterations=args.iterations,
    )
    prov = collect(device=dev, command=command)
    prov["seconds"] = f"{time.time() - t0:.1f}"
    res.attrs["provenance"] = prov
    res.to_parquet(out / "candidates.parquet", index=False)
    choice = choice_table(res)
    choice.to_csv(out / "choice.csv", index=False)
    (out / "meta.json").write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n")
    pd.set_option("display.width", 250)
    print(f"timed {len(res)} configurations in {time.time() - t1:.1f} s")
    print(
        res.groupby(["problem", "rotating_requested", "flush"], sort=False)
        .apply(
            lambda g: ", ".join(
                f"{c}:{m * 1e6:.1f}"
                for c, m in zip(g.sort_values("median_s")["candidate"][:3], g.sort_values("median_s")["median_s"][:3])
            )
        )
        .to_string()
    )
    cols = [
        "problem",
        "rotating_requested",
        "rotating",
        "flush",
        "best",
        "best_median_s",
        "hot_pick",
        "hot_pick_median_s",
        "same_choice",
        "regret",
        "runner_up_gap",
        "distinguishable",
    ]
    print(choice[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--device",
        default=None,
        help="item 4 instead of compile timing: check and time the candidates on this device (cuda, hip, host)",
    )
    ap.add_argument("--rotating", default="1,auto", help="device mode: rotating counts (default %(default)s)")
    ap.add_argument("--flush", default="none,l2-read,l2-write", help="device mode: flush modes (default %(default)s)")
    ap.add_argument("--iterations", type=int, default=100, help="device mode: timed samples per configuration")
    ap.add_argument(
        "--compilers", default="hiprtc:gfx90a,nvrtc:sm_90", help="compiler:target,... (default %(default)s)"
    )
    ap.add_argument("--jobs", default="1,2", help="comma-separated job counts (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of all passes, order alternating (default 3)")
    ap.add_argument("--problems", default=None, help="as in tune-replay: count or names (default all four)")
    ap.add_argument("--limit", type=int, default=None, help="candidates per problem (default all 12)")
    ap.add_argument("--out", default="data/tuning/tune_bench.parquet", help="events parquet (default %(default)s)")
    ap.add_argument(
        "--granularity",
        choices=("auto", "candidate", "kernel", "scheduled"),
        default="auto",
        help="unit of parallel work in the replay passes (default %(default)s)",
    )
    ap.add_argument(
        "--no-salt",
        action="store_true",
        help="compile every pass from the same sources (default: a salt in the source text per pass and round)",
    )
    ap.add_argument("--table-only", action="store_true", help="print the table of an earlier run's --out files")
    args = ap.parse_args(argv)
    if args.table_only:
        out = Path(args.out)
        passes = pd.read_parquet(out.with_suffix(".passes.parquet"))
        print(table(_with_call_sums(passes, pd.read_parquet(out))))
        print("provenance:", json.loads(out.with_suffix(".meta.json").read_text()).get("command", ""))
        return 0
    # "1i": serial through one isolated worker (the baseline of the parallel speed-up when the
    # backend's serial default is in-process, as for nvrtc and host)
    jobs_list = [(int(x.rstrip("i")), x.endswith("i") or None) for x in args.jobs.split(",")]
    if any(j < 1 for j, _ in jobs_list) or args.rounds < 1:
        raise SystemExit(f"--jobs values and --rounds must be positive; got {args.jobs!r}, {args.rounds}")
    command = shlex.join(
        [".venv/bin/python", "benchmarks/compile/tune_replay.py", *(argv if argv is not None else sys.argv[1:])]
    )
    if args.device:
        return device_main(args, command)
    all_passes, all_frames = [], []
    t0 = time.time()
    for name, target in _parse_pairs(args.compilers):
        for j, iso in jobs_list:
            print(f"{name}:{target} jobs={j}{' isolated' if iso else ''}", flush=True)
            passes, frame, _ = run_one(
                name,
                target,
                j,
                args.rounds,
                args.problems,
                args.limit,
                log=lambda m: print(m, flush=True),
                isolated=iso,
                granularity=args.granularity,
                salt=not args.no_salt,
            )
            all_passes.append(passes)
            all_frames.append(frame)
    passes = pd.concat(all_passes, ignore_index=True)
    frame = pd.concat(all_frames, ignore_index=True)
    prov = collect(command=command)
    prov["wall_seconds"] = f"{time.time() - t0:.1f}"
    prov["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    from hipexplore.schema import PASSES, TUNING, write_parquet

    write_parquet(frame, out, TUNING, prov)  # schema-tagged: the report recognises them by the tag
    write_parquet(passes, out.with_suffix(".passes.parquet"), PASSES, prov)
    out.with_suffix(".meta.json").write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n")
    print()
    print(table(_with_call_sums(passes, frame)))
    print()
    print("command:", command)
    keys = (
        "git_revision",
        "date",
        "cpu",
        "cpu_count",
        "compiler.hiprtc",
        "compiler.nvrtc",
        "package.hip-python",
        "package.cuda-bindings",
        "package.nvidia-cuda-nvrtc",
        "load_average",
        "wall_seconds",
    )
    print("provenance:", ", ".join(f"{k}={prov.get(k, '')}" for k in keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
