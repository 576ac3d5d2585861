"""Why did the pipeline's counter pass read every configuration cold (1.00), 1 buffer set of 1 MiB too?

Hypothesis: Nsight Compute's kernel replay saves the device memory a profiled launch can reach
before it runs (so a later pass can restore it); in the sweep worker that memory includes the
flush buffers and the pad, hundreds of MiB, which the save streams through the L2 right before
the counted launch. The stand-alone child of run 1 allocated only the sets, so it read warm.

Three parts, all on triad 1 MiB (3 arrays: 2 MiB of inputs per launch), flush none, under
``ncu --cache-control none --clock-control none`` with the counter pass's metrics:

A. torch, no hipexplore: ``torch.add(a, b, alpha=2, out=c)`` on one set, 40 launches inside
   cuProfilerStart/Stop, with and without an unused 512 MiB allocation, kernel and application
   replay: does an allocation the kernel never touches make the launches cold?
B. the pipeline's counter pass (the orchestrator's counting units, as ``hipexplore bench
   --counters`` runs them; the kept pass folder read back with ``collect``) on rotating 1, 5, 40,
   flush none and l2-write, kernel and application replay.
C. the CLI, as a user runs it: ``hipexplore bench triad --counters`` with the default replay
   (application since this probe), its counted table (``--json``) and the pass's cost against the
   same sweep without counters.

    python3 benchmarks/h200/counters_replay.py --out DIR      (on the H200, ncu on PATH or in /usr/local/cuda)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
METRICS = "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum"

TORCH_CHILD = r"""
import sys, torch
from cuda.bindings import driver
pad = torch.empty(int(sys.argv[1]), dtype=torch.uint8, device="cuda") if int(sys.argv[1]) else None
n = 1 << 18  # 1 MiB of float32
a, b, c = (torch.rand(n, device="cuda") for _ in range(3))
for _ in range(50):
    torch.add(a, b, alpha=2.0, out=c)
torch.cuda.synchronize()
driver.cuProfilerStart()
for _ in range(40):
    torch.add(a, b, alpha=2.0, out=c)
torch.cuda.synchronize()
driver.cuProfilerStop()
"""


def ncu_path() -> str:
    from hipexplore.bench.counters.backends import find_tool
    from hipexplore.bench.counters.ncu import NCU_PLACES

    found = find_tool(None, "ncu", NCU_PLACES)
    if not found:
        raise SystemExit("ncu not found")
    return found


def per_launch(log: Path) -> list[float]:
    from hipexplore.bench.counters.ncu import parse_csv

    return [round(x.values.get("dram__bytes_read.sum", float("nan")) / 2**21, 3) for x in parse_csv(log.read_text())]


def part_a(out: Path, ncu: str) -> dict:
    got = {}
    for pad in (0, 512 << 20):
        for replay in ("kernel", "application"):
            log = out / f"A-pad{pad >> 20}-{replay}.log"
            cmd = [
                ncu,
                "--target-processes",
                "all",
                "--profile-from-start",
                "off",
                "--replay-mode",
                replay,
                "--cache-control",
                "none",
                "--clock-control",
                "none",
                "-k",
                "regex:elementwise",
                "--metrics",
                METRICS,
                "--csv",
                "--print-units",
                "base",
                "--log-file",
                str(log),
                sys.executable,
                "-c",
                TORCH_CHILD,
                str(pad),
            ]
            t0 = time.perf_counter()
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            key = f"pad {pad >> 20} MiB, {replay} replay"
            try:
                fr = per_launch(log)
                got[key] = {
                    "cold_per_launch": fr,
                    "median": sorted(fr)[len(fr) // 2] if fr else None,
                    "wall_s": round(time.perf_counter() - t0, 1),
                    "rc": run.returncode,
                }
            except Exception as exc:  # noqa: BLE001 - a probe: say what failed and go on
                got[key] = {"error": f"{type(exc).__name__}: {exc}", "rc": run.returncode, "stderr": run.stderr[-800:]}
            print("A", key, got[key], flush=True)
    return got


def part_d(out: Path, ncu: str, only_hit_rate: bool = False) -> dict:
    """D: does kernel replay save memory only when the metrics need more than one pass? The 512 MiB
    pad under kernel replay with fewer metrics (one, two, the four), and one metric in application
    replay (how many times ncu starts the process: its "Connected" lines)."""
    got = {}
    cases = [
        ("kernel", "dram__bytes_read.sum"),
        ("kernel", "dram__bytes_read.sum,dram__bytes_write.sum"),
        ("kernel", "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct"),
        ("application", "dram__bytes_read.sum"),
    ]
    if only_hit_rate:  # E: the hit rate alone, as NCU_GROUPS' second group counts it
        cases = [("kernel", "lts__t_sector_hit_rate.pct")]
    for replay, metrics in cases:
        log = out / f"D-{replay}-{metrics.count(',') + 1}.log"
        cmd = [
            ncu,
            "--target-processes",
            "all",
            "--profile-from-start",
            "off",
            "--replay-mode",
            replay,
            "--cache-control",
            "none",
            "--clock-control",
            "none",
            "-k",
            "regex:elementwise",
            "--metrics",
            metrics,
            "--csv",
            "--print-units",
            "base",
            "--log-file",
            str(log),
            sys.executable,
            "-c",
            TORCH_CHILD,
            str(512 << 20),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
        key = f"{replay} replay, {metrics}"
        try:
            from hipexplore.bench.counters.ncu import parse_csv

            fr = per_launch(log)
            hit = [x.values.get("lts__t_sector_hit_rate.pct") for x in parse_csv(log.read_text())][:6]
            got[key] = {
                "median": sorted(fr)[len(fr) // 2] if fr else None,
                "first": fr[:6],
                "hit_pct": hit,
                "rc": run.returncode,
                "processes": log.read_text().count("==PROF== Connected"),
            }
        except Exception as exc:  # noqa: BLE001 - a probe: say what failed and go on
            got[key] = {"error": f"{type(exc).__name__}: {exc}", "rc": run.returncode}
        print("D", key, got[key], flush=True)
    return got


def part_b(out: Path) -> dict:
    from hipexplore.bench import SweepSpec
    from hipexplore.bench.counters import collect
    from hipexplore.bench.counters.ncu import NcuBackend
    from hipexplore.bench.executors import WorkerExecutor
    from hipexplore.bench.orchestrator import Orchestrator
    from hipexplore.bench.result import RunOptions
    from hipexplore.devices import get_device
    from hipexplore.kernels import catalog

    spec = SweepSpec(
        kernels=(catalog.get("triad"),),
        sizes=(1 << 20,),
        rotating=("1", "5", "40"),
        flush=("none", "l2-write"),
        reference=False,
        counters="ncu",
    )
    dev = get_device("cuda")
    got = {}
    for replay in ("kernel", "application"):
        t0 = time.perf_counter()
        try:
            res = Orchestrator(
                spec,
                WorkerExecutor(dev),
                RunOptions(out=out / f"B-{replay}.parquet", progress=False),
                counter_backend=NcuBackend(replay=replay),
            ).run()
            status = res.metadata.get("counters.status", "")
            if not status.startswith("counted"):
                raise RuntimeError(status)
            c = collect(out / f"B-{replay}.counters" / "triad-1048576")
            got[replay] = {
                "wall_s": round(time.perf_counter() - t0, 1),
                "records": [
                    (r.rotating_requested, r.flush, round(r.cold_fraction, 3), r.cache_state) for r in c.records
                ],
                "per_launch": {f"{l_['rotating_requested']}/{l_['flush']}": [] for l_ in c.launches},
            }
            for l_ in c.launches:
                got[replay]["per_launch"][f"{l_['rotating_requested']}/{l_['flush']}"].append(
                    [l_["buffer_set"], l_["position"], round(l_["dram_read_bytes"] / 2**21, 3)]
                )
        except Exception as exc:  # noqa: BLE001 - a probe: say what failed and go on
            got[replay] = {"error": f"{type(exc).__name__}: {exc}"[:3000]}
        print("B", replay, json.dumps({k: v for k, v in got[replay].items() if k != "per_launch"}), flush=True)
    return got


def part_c(out: Path) -> dict:
    got = {}
    base = [
        sys.executable,
        "-m",
        "hipexplore",
        "bench",
        "triad",
        "--device",
        "cuda",
        "--size",
        "1MiB",
        "--rotating",
        "1,5,auto",
        "--flush",
        "none,l2-write",
        "--json",
        "--no-progress",
    ]
    for name, extra in (("plain", []), ("counted", ["--counters"])):
        t0 = time.perf_counter()
        run = subprocess.run(
            [*base, "--out", str(out / f"C-{name}.parquet"), *extra], capture_output=True, text=True, timeout=200
        )
        got[name] = {"rc": run.returncode, "wall_s": round(time.perf_counter() - t0, 1), "stderr": run.stderr[-1500:]}
        if run.returncode == 0:
            rows = json.loads(run.stdout)["summary"]
            got[name]["rows"] = [
                {
                    k: r.get(k)
                    for k in (
                        "size_bytes",
                        "rotating_requested",
                        "flush",
                        "median_s",
                        "cold_fraction",
                        "cache_state",
                        "cold_promise",
                    )
                }
                for r in rows
            ]
        print("C", name, json.dumps(got[name])[:3000], flush=True)
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--parts", default="A,B,C")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    ncu = ncu_path()
    res: dict = {
        "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:],
        "revision": os.environ.get("HIPEXPLORE_GIT_REVISION", ""),
    }
    parts = args.parts.split(",")
    if "A" in parts:
        res["A"] = part_a(args.out, ncu)
    if "B" in parts:
        res["B"] = part_b(args.out)
    if "D" in parts:
        res["D"] = part_d(args.out, ncu)
    if "E" in parts:
        res["E"] = part_d(args.out, ncu, only_hit_rate=True)
    if "C" in parts:
        res["C"] = part_c(args.out)
    (args.out / "summary.json").write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
