#!/usr/bin/env python3
"""H200: the counter pass of issue 35 (hardware counters show the cache state), end to end.

For each group of configurations below: the normal sweep through the CLI (``python3 -m hipexplore
bench ... --json``, defaults: adaptive, units), then the counter pass of the same configurations
through ``hipexplore.bench.counters.count_configurations`` (Nsight Compute around a child that
replays each configuration's warm-up and 12 counted launches; this process opens no GPU context).
Groups: the triad table of the issue (1 MiB with rotating 1, 2, 5, 10, 20, auto; 1 MiB 1 set with
l2-write; 4 MiB with 2, 3, 5, auto; 16 MiB with 1), and two user kernels from ``--source`` files (a
2-D stencil and a reduction, benchmarks/h200/*.cu) at 1 MiB with rotating 1, 5, auto and flush
none, l2-write. Then the GPU-marked counter tests.

    PYTHONPATH=. python3 benchmarks/h200/counters.py --out /tmp/hx-h200/counters --pack $OUT/counters.tar.gz
Writes under --out: env/ (ncu version, help, metric query), data/<group>/ (each counter pass's folder:
backend.json, group-0/manifest.json, ncu.log: the recordings the host tests parse, copied to
data/counters/h200/), sweeps/<group>.{log,json,parquet...}, summary.json (one row per
configuration: the sweep's median and interval beside the counters; per group the wall times of
sweep and pass), gpu_tests.log. A group that would start past --budget-s is skipped and says so.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STENCIL = {"source": str(HERE / "stencil2d.cu"), "entry": "stencil2d", "grid": "ceil(cols/block_x),ceil(rows/block_y)",
           "block": "32,8", "args": "out:next:f32[rows*cols],in:grid:f32[rows*cols],rows:i32=n//1024,cols:i32=1024"}
REDUCE = {"source": str(HERE / "reduce_sum.cu"), "entry": "reduce_sum", "block": "256", "args": "in:x:f32[n],inout:total:f32[1],n:u64=n"}
#: (name, kernel, user kernel or None, sizes, rotating, flush), most important first
GROUPS = [
    ("triad-1MiB", "triad", None, ["1MiB"], ["1", "2", "5", "10", "20", "auto"], ["none"]),
    ("triad-1MiB-l2write", "triad", None, ["1MiB"], ["1"], ["l2-write"]),
    ("stencil2d-1MiB", "stencil2d", STENCIL, ["1MiB"], ["1", "5", "auto"], ["none", "l2-write"]),
    ("reduce_sum-1MiB", "reduce_sum", REDUCE, ["1MiB"], ["1", "5", "auto"], ["none", "l2-write"]),
    ("triad-4MiB", "triad", None, ["4MiB"], ["2", "3", "5", "auto"], ["none"]),
    ("triad-16MiB", "triad", None, ["16MiB"], ["1"], ["none"]),
]
#: a group is started only if this much of the budget is left (a sweep plus its pass took ~40-90 s)
GROUP_RESERVE_S = 75
QUERY = "dram__bytes_read,dram__bytes_write,lts__t_sector_hit_rate,gpu__time_duration"


def sh(cmd: list[str], timeout: float, env: dict | None = None) -> tuple[int, str, float]:
    """(status, stdout+stderr, seconds) of a command; a timeout is status 124, never an exception."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        return p.returncode, p.stdout + p.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return 124, out + f"\n(timed out after {timeout:g} s)", time.perf_counter() - t0
    except OSError as exc:  # not installed: said in the record, never the end of the run
        return 127, f"{cmd[0]}: {exc}", time.perf_counter() - t0


def environment(out: Path) -> dict:
    """ncu's path, version, help and the metric names it knows on GH100."""
    from hipexplore.bench.counters.ncu import NCU_PLACES, ncu_version
    from hipexplore.bench.counters.backends import find_tool

    env = out / "env"
    env.mkdir(parents=True, exist_ok=True)
    ncu = find_tool(None, "ncu", NCU_PLACES)
    info = {"ncu": ncu or "", "version": ncu_version(ncu) if ncu else ""}
    if ncu:
        for name, args in (("ncu_help.txt", ["--help"]),
                           ("ncu_query.txt", ["--query-metrics", "--chip", "gh100", "--query-metrics-mode", "suffix", "--metrics", QUERY])):
            rc, text, _ = sh([ncu, *args], 90)
            (env / name).write_text(f"$ ncu {' '.join(args)}\n(rc={rc})\n{text}")
    rc, text, _ = sh(["nvidia-smi"], 30)
    (env / "nvidia-smi.txt").write_text(text)
    (env / "env.json").write_text(json.dumps(info, indent=1))
    return info


def cli_command(name: str, kernel: str, user: dict | None, sizes: list[str], rot: list[str], flush: list[str], out: Path) -> list[str]:
    cmd = [sys.executable, "-m", "hipexplore", "bench", kernel, "--device", "cuda", "--size", ",".join(sizes), "--rotating",
           ",".join(rot), "--flush", ",".join(flush), "--no-progress", "--json", "--out", str(out / "sweeps" / f"{name}.parquet")]
    if user:
        cmd += ["--source", user["source"], "--entry", user["entry"], "--args", user["args"], "--block", user["block"]]
        cmd += ["--grid", user["grid"]] if "grid" in user else []
    return cmd


def kernel_spec(kernel: str, user: dict | None):
    """The KernelSpec the CLI builds for the same command line (user kernels as ``--source`` makes them)."""
    from hipexplore.kernels import catalog

    if user is None:
        return catalog.get(kernel)
    block = int(user["block"]) if user["block"].isdigit() else user["block"]
    return catalog.user_kernel(user["source"], user["entry"], user["args"], name=kernel, grid=user.get("grid"), block=block,
                               register_it=False)


def run_group(group: tuple, out: Path, count: int) -> dict:
    """The sweep (CLI), then the counter pass, of one group; what each took and gave."""
    from hipexplore.bench import SweepSpec
    from hipexplore.bench.counters import count_configurations

    name, kernel, user, sizes, rot, flush = group
    (out / "sweeps").mkdir(parents=True, exist_ok=True)
    cmd = cli_command(name, kernel, user, sizes, rot, flush, out)
    rc, text, sweep_s = sh(cmd, 240)
    (out / "sweeps" / f"{name}.log").write_text(f"$ {' '.join(cmd)}\n(rc={rc}, {sweep_s:.1f} s)\n{text}")
    summary = []
    try:
        summary = json.loads(text[text.index('{"out"'):].splitlines()[0])["summary"]
    except (ValueError, KeyError):
        pass
    result = {"name": name, "sweep_command": cmd, "sweep_rc": rc, "sweep_s": sweep_s, "sweep_summary": summary}
    from hipexplore.bench.spec import parse_size

    spec = SweepSpec(kernels=(kernel_spec(kernel, user),), sizes=tuple(parse_size(s) for s in sizes),
                     rotating=tuple(rot), flush=tuple(flush))
    from hipexplore.bench.counters.ncu import NcuBackend

    workdir = out / "data" / name
    for backend in (NcuBackend(), NcuBackend(profiler_range=False)):
        t0 = time.perf_counter()
        try:
            counted = count_configurations(spec, "cuda:0", count=count, backend=backend, workdir=workdir, timeout_s=150)
            result.update(counters_s=time.perf_counter() - t0, backend=counted.backend, notes=counted.notes,
                          records=[r.as_row() for r in counted.records], counter_commands=counted.commands,
                          profiler_range=backend.profiler_range)
            result.pop("counters_error", None)
            break
        except Exception as exc:  # kept aside; once more profiling from the start (no cuProfilerStart/Stop), then the next group
            result.update(counters_s=time.perf_counter() - t0, counters_error=f"{type(exc).__name__}: {exc}")
            result.setdefault("errors", []).append({"profiler_range": backend.profiler_range, "error": result["counters_error"],
                                                    "traceback": traceback.format_exc()[-3000:]})
            if workdir.exists():
                (out / "failed").mkdir(exist_ok=True)
                workdir.rename(out / "failed" / f"{name}-range-{backend.profiler_range}")
    result["ratio"] = result["counters_s"] / sweep_s if sweep_s > 0 else math.nan
    return result


def table(results: list[dict]) -> list[dict]:
    """One row per counted configuration: the counters beside the sweep's events median."""
    rows = []
    for g in results:
        medians = {(s["kernel"], int(s["size_bytes"]), str(s["rotating_requested"]), s["flush"]): s
                   for s in g.get("sweep_summary", []) if s.get("timer", "events") == "events"}
        for r in g.get("records", []):
            s = medians.get((r["kernel"], int(r["size_bytes"]), str(r["rotating_requested"]), r["flush"]), {})
            rows.append({"group": g["name"], **{k: r[k] for k in ("kernel", "size_bytes", "rotating_requested", "rotating", "flush",
                                                                  "dram_read_bytes", "dram_write_bytes", "l2_hit_rate", "input_bytes",
                                                                  "cold_fraction", "cache_state", "cold_promise", "counter_warning",
                                                                  "counter_note")},
                         "median_us": s["median_s"] * 1e6 if s.get("median_s") is not None else None,
                         "ci_us": [s["ci_low_s"] * 1e6, s["ci_high_s"] * 1e6] if s.get("ci_low_s") is not None else None,
                         "sweep_warning": s.get("warning", "")})
    return rows


def gpu_tests(out: Path, timeout: float) -> None:
    env = dict(os.environ, HIPEXPLORE_REQUIRE_GPU="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "-rs", "tests/test_counters.py"]
    rc, text, secs = sh(cmd, timeout, env)
    (out / "gpu_tests.log").write_text(f"$ {' '.join(cmd)}\n(rc={rc}, {secs:.1f} s)\n{text}")
    print(f"gpu tests: rc={rc} in {secs:.1f} s: {text.strip().splitlines()[-1] if text.strip() else ''}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="counter pass against its sweep on the H200 (issue 35)")
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=400.0, help="start no group after this many seconds, less its reserve")
    p.add_argument("--count", type=int, default=12, help="counted launches per configuration")
    p.add_argument("--no-tests", action="store_true")
    p.add_argument("--pack", default=None, help="write everything under --out into this .tar.gz as well")
    a = p.parse_args(argv)
    start = time.perf_counter()
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    info = environment(out)
    print(f"ncu: {info}")
    results = []
    for group in GROUPS:
        if time.perf_counter() - start > a.budget_s - GROUP_RESERVE_S:
            results.append({"name": group[0], "skipped": f"budget: {time.perf_counter() - start:.0f} s of {a.budget_s:g} s used"})
            print(f"{group[0]}: skipped (budget)")
            continue
        r = run_group(group, out, a.count)
        results.append(r)
        states = [(x["rotating_requested"], x["flush"], round(x["cold_fraction"], 3), x["cache_state"]) for x in r.get("records", [])]
        print(f"{r['name']}: sweep {r['sweep_s']:.1f} s (rc={r['sweep_rc']}), counters {r['counters_s']:.1f} s "
              f"(ratio {r['ratio']:.2f}) {r.get('counters_error', '')} {states}")
    total_sweep = sum(r.get("sweep_s", 0) for r in results)
    total_counters = sum(r.get("counters_s", 0) for r in results)
    summary = {"ncu": info, "groups": [{k: v for k, v in r.items() if k != "sweep_summary"} for r in results],
               "rows": table(results), "sweep_s": total_sweep, "counters_s": total_counters,
               "ratio": total_counters / total_sweep if total_sweep else None}
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"all groups: sweeps {total_sweep:.1f} s, counter passes {total_counters:.1f} s, ratio {summary['ratio']}")
    left = a.budget_s + 60 - (time.perf_counter() - start)
    if not a.no_tests and left > 40:
        gpu_tests(out, min(150.0, left))
    if a.pack:
        with tarfile.open(a.pack, "w:gz") as tar:
            tar.add(out, arcname=out.name)
        print(f"packed {a.pack} ({Path(a.pack).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
