"""What hipexplore's cache saves beyond the compilers' own caches, on a GPU host (issue 45, item 5).

One command within a time budget (``--budget-s``, default 330 s: the device tool's call is 10
minutes, the scenario is meant to take about 6), every result written as its step ends:

  stale       benchmarks/compile/stale_keys.py: the stale-key cases against NVRTC's own cache (live
              where a driver loads) and hipexplore's
  nvrtc-*     ``hipexplore tune-replay --passes N --cache all`` (ideal, cold, off, compiler-cache, memory,
              disk-cold, disk-warm in alternated
              rounds, each pass in fresh processes) for the llama3-8b and resnet50 lists with NVRTC at
              16 and at 1 job
  triton      the same for Triton (its own cache off in ``cold``/``off``, on and warm in ``compiler-cache``)

Each replay step replays every K-th problem of its list (``--every-problem K``), K chosen so the
step's estimate fits its share of the budget (``STEPS``; at most what is left, and a step that cannot
fit what is left is skipped and says so): the estimate counts the compiles of its
passes (per round: ideal and memory the unique kernels, cold, off and compiler-cache every kernel)
at a rate per compile measured on the earlier steps of the same compiler and jobs (a prior guess
before the first), plus each pass's worker start. A step past its limit is stopped and recorded as
such; the steps after it go on.

Writes OUT/summary.json (per step: the command, the list's size, the savings with intervals, the
compiler's own cache per scenario, the walls; the stale table; provenance) and OUT/<step>.parquet
(the replay frame, every pass).

Usage:
  bash scripts/h200_all.sh compiler-caches                      # on the device (the lead)
  python3 benchmarks/compile/compiler_caches.py --out DIR [--budget-s 330] [--passes 3]
  .venv/bin/python benchmarks/compile/compiler_caches.py --out DIR --budget-s 120 --passes 2   # this host: a smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

#: (step, compiler, target, list, jobs, share of the whole budget); the stale-key step comes first
STEPS = (
    ("nvrtc-llama3-8b-j16", "nvrtc", "sm_90", "llama3-8b", 16, 0.17),
    ("nvrtc-llama3-8b-j1", "nvrtc", "sm_90", "llama3-8b", 1, 0.20),
    ("nvrtc-resnet50-j16", "nvrtc", "sm_90", "resnet50", 16, 0.14),
    ("nvrtc-resnet50-j1", "nvrtc", "sm_90", "resnet50", 1, 0.17),
    ("triton-llama3-8b-j16", "triton", "sm_90", "llama3-8b", 16, 0.22),
)
EVERY = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
#: prior guesses (the H200 machine's 16 host cores, BENCHMARKS.md "tuning replay"): seconds a compile, by
#: compiler and jobs, and seconds each pass spends starting and warming its workers; both are
#: replaced by what the earlier steps measured
RATE = {("nvrtc", 1): 0.065, ("nvrtc", 16): 0.0065, ("triton", 1): 0.6, ("triton", 16): 0.06}
START = {("nvrtc", 1): 1.5, ("nvrtc", 16): 2.5, ("triton", 1): 4.0, ("triton", 16): 6.0}
SCENARIOS_PER_ROUND = 7  # ideal, cold, off, compiler-cache, memory, disk-cold, disk-warm


def list_size(name: str, compiler: str, target: str, every: int) -> tuple[int, int]:
    from hipexplore.tuning import listfile

    tl = listfile.expand(listfile.read(name).select(every_problem=every), compiler, target)
    return tl.kernels, tl.unique_kernels


def _known(table: dict, compiler: str, jobs: int, prior: dict, scale: bool) -> float:
    """What was measured for (compiler, jobs); else for another job count of the compiler (a rate scaled
    by the parallelism, at most 10-fold); else the prior of the nearest job count."""
    if (compiler, jobs) in table:
        return table[(compiler, jobs)]
    eff = lambda j: min(j, 10)  # noqa: E731
    for (c, j), value in table.items():
        if c == compiler:
            return value * eff(j) / eff(jobs) if scale else value
    return prior.get((compiler, 1 if jobs == 1 else 16), 0.1 if scale else 5.0)


def estimate(compiler: str, jobs: int, kernels: int, unique: int, passes: int, rates: dict) -> float:
    """Seconds of a step: per round ideal, memory and disk-cold compile the unique kernels, cold, off and
    compiler-cache every kernel (disk-warm none) (a worst case: NVRTC's cache may serve the last), and each pass
    starts its workers (Triton one warming pass more: its cache is off in off)."""
    rate = _known(rates.get("rate", {}), compiler, jobs, RATE, True)
    start = _known(rates.get("start", {}), compiler, jobs, START, False)
    return passes * ((3 * unique + 3 * kernels) * rate + (SCENARIOS_PER_ROUND + (compiler == "triton")) * start)


def plan(step: tuple, passes: int, seconds: float, rates: dict) -> tuple[int, int, int, float]:
    """The smallest K whose estimate fits ``seconds`` (the largest K when none does)."""
    _name, compiler, target, lst, jobs, _share = step
    for every in EVERY:
        kernels, unique = list_size(lst, compiler, target, every)
        est = estimate(compiler, jobs, kernels, unique, passes, rates)
        if est <= seconds:
            return every, kernels, unique, est
    return every, kernels, unique, est


def replay_step(step: tuple, out: Path, passes: int, target_s: float, left: float, rates: dict) -> dict[str, Any]:
    name, compiler, target, lst, jobs, _share = step
    every, kernels, unique, est = plan(step, passes, min(target_s, left - 10.0), rates)
    if est > left - 10.0:
        return {
            "status": "skipped: would not fit the budget left",
            "every_problem": every,
            "estimate_s": est,
            "left_s": left,
        }
    frame = out / f"{name}.parquet"
    cmd = [
        sys.executable,
        "-m",
        "hipexplore",
        "tune-replay",
        "--compiler",
        compiler,
        "--target",
        target,
        "--list",
        lst,
        "--every-problem",
        str(every),
        "--jobs",
        str(jobs),
        "--passes",
        str(passes),
        "--cache",
        "all",
        "--json",
        "--quiet",
        "--frame",
        str(frame),
        "--force",
    ]
    limit = max(30.0, min(left - 5.0, 2.5 * est + 30.0))
    t0 = time.perf_counter()
    record: dict[str, Any] = {
        "command": " ".join(cmd[1:]).replace(str(out) + "/", "OUT/"),
        "every_problem": every,
        "kernels": kernels,
        "unique_kernels": unique,
        "estimate_s": est,
        "limit_s": limit,
    }
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, cwd=REPO)
    except subprocess.TimeoutExpired:
        record.update(status="timeout", seconds=time.perf_counter() - t0)
        return record
    record["seconds"] = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        record.update(status=f"exit {proc.returncode}", stderr=proc.stderr.strip()[-2000:])
        return record
    rep = json.loads(proc.stdout)
    keep = (
        "compiler_cache",
        "compiler_cache_setting",
        "compiler_cache_by_scenario",
        "rounds",
        "pass_walls",
        "saved_vs_cold",
        "saved_beyond_compiler_cache",
        "warm_beyond_compiler_cache",
        "memory_vs_ideal",
        "failed",
        "kernels",
        "unique_kernels",
        "jobs",
    )
    record.update(status="ok" if proc.returncode == 0 else "some compiles failed", **{k: rep.get(k) for k in keep})
    walls = rep.get("pass_walls") or {}
    compiles = (
        sum(len(w) for s, w in walls.items() if s in ("cold", "off", "compiler-cache")) * kernels
        + sum(len(w) for s, w in walls.items() if s in ("ideal", "memory", "disk-cold")) * unique
    )
    spent, n = sum(sum(w) for w in walls.values()), sum(len(w) for w in walls.values())
    if compiles and n:  # what the next steps of this compiler are planned with
        rates.setdefault("rate", {})[(compiler, jobs)] = spent / compiles
        rates.setdefault("start", {})[(compiler, jobs)] = max(0.0, record["seconds"] - spent) / n
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=330.0)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--steps", default="stale," + ",".join(s[0] for s in STEPS))
    p.add_argument(
        "--max-jobs", type=int, default=16, help="the jobs of the parallel steps (16 on the GPU host's 16 cores)"
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    wanted = [s for s in args.steps.split(",") if s]
    start = time.perf_counter()
    from hipexplore.provenance import collect

    summary: dict[str, Any] = {
        "budget_s": args.budget_s,
        "passes": args.passes,
        "steps": {},
        "provenance": collect(command=[sys.executable, *sys.argv]),
    }
    rates: dict = {}

    def save() -> None:
        summary["seconds"] = time.perf_counter() - start
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))

    if "stale" in wanted:
        t0 = time.perf_counter()
        limit = max(60, min(150, args.budget_s / 3))
        try:  # a stale step past its limit is recorded as such; the replay steps still run
            proc = subprocess.run(
                [sys.executable, str(REPO / "benchmarks" / "compile" / "stale_keys.py"), "--out", str(out / "stale")],
                capture_output=True,
                text=True,
                timeout=limit,
            )
            status, log = ("ok" if proc.returncode == 0 else f"exit {proc.returncode}"), proc.stderr
        except subprocess.TimeoutExpired as exc:
            status, log = f"stopped at its limit ({limit:.0f} s)", (exc.stderr or b"").decode(errors="replace")
        summary["steps"]["stale"] = {"status": status, "seconds": time.perf_counter() - t0, "log": log.strip()[-3000:]}
        save()
    shares = sum(step[5] for step in STEPS if step[0] in wanted) or 1.0  # the steps asked for share the whole budget
    for step in STEPS:
        if step[0] not in wanted:
            continue
        if step[4] > 1:
            step = (step[0].replace("j16", f"j{args.max_jobs}"), *step[1:4], args.max_jobs, step[5])
        left = args.budget_s - (time.perf_counter() - start)
        if left < 30:
            summary["steps"][step[0]] = {"status": "skipped: budget spent"}
            continue
        passes = args.passes if step[1] != "triton" else max(2, args.passes - 1)  # Triton: with and without its cache
        summary["steps"][step[0]] = replay_step(step, out, passes, step[5] / shares * args.budget_s, left, rates)
        print(
            f"compiler_caches: {step[0]}: {summary['steps'][step[0]].get('status')} "
            f"({summary['steps'][step[0]].get('seconds', 0):.0f} s)",
            file=sys.stderr,
        )
        save()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
