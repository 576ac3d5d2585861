"""The tuning replay at the scale of a real tuning flow (issue #28): one command for every
measurement the issue's done-when needs, on one machine, written under one output folder.

For each shipped list (data/tuning/lists: llama3-8b, resnet50) and each compiler:target, the steps
(``--steps``, default all that apply; each writes its results as soon as it ends, so a run cut
short keeps what it finished, and ``--resume`` skips steps whose results are there):

  estimate     compile a stratified sample of the list's unique kernels (every role, gemms evenly
               over the list) serially and with the top --jobs; extrapolate the cache-off serial
               compile time (EXTRAPOLATED, labelled so) -- minutes, where the full pass takes an hour
  serial       tune-replay at 1 job: warm-up pass, ideal (--ideal-repeats), cache off, memory;
               gives the cache-off serial time (done-when: >= 300 s), memory vs ideal and vs floor
               (done-when: 1.03x), and the saving beside the seed's 3.15x
  parallel     the same at each --jobs > 1 (default the machine's cores): memory vs ideal at 16 jobs
               (done-when: 1.05x), cache off vs cache on in parallel beside the seed's 2.71x
  second-run   a first tuning run (a fresh process, cold disk tier, and the Redis tier when a server
               is there), then a second one in a fresh process on the warm directory, and one on
               an empty directory with the warm Redis tier (another host, the next day)
               (done-when: warm <= 2% of cold)
  cluster      2 Dask workers (local) sharing the Redis tier: ideal, cold, warm passes; counts the
               compiles of the cold pass (done-when: each unique kernel exactly once)
  triton-cache Triton's own TRITON_CACHE_DIR, cold then warm, beside our disk tier cold then warm
               (Triton compilers only)

Outputs under --out: ``summary.json`` (every step's numbers, the done-when checks, provenance),
``<step>__<list>__<compiler>-<target>__j<N>.parquet`` (the replay's event frame, schema-tagged
for the report) with ``.passes.parquet`` beside it (one row per pass), ``log.txt``.

Usage:
  # the H200 machine (16 cores; NVRTC 13 and Triton for sm_90):
  python3 benchmarks/tuning_scale.py --out OUT --compilers nvrtc:sm_90,triton:sm_90
  #   one list / one step per call when a call is limited to 10 minutes, e.g.
  python3 benchmarks/tuning_scale.py --out OUT --lists llama3-8b --compilers nvrtc:sm_90 --steps serial
  # this 2-core host (hiprtc for gfx90a, Triton for gfx942), reduced scale (every 5th problem):
  .venv/bin/python benchmarks/tuning_scale.py --out OUT --compilers hiprtc:gfx90a,triton:gfx942 --every-problem 5 --jobs 2
  # smoke test of every step, a minute or two:
  .venv/bin/python benchmarks/tuning_scale.py --out /tmp/ts --quick
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

STEPS = ("estimate", "serial", "parallel", "second-run", "cluster", "triton-cache")
#: the seed's numbers (MIGraphX PR 5270, split-K tuning with rocMLIR, APNB v2 FP32 512x512)
SEED = {
    "serial_off_s": 369.789,
    "serial_on_s": 117.274,
    "parallel_off_s": 24.712,
    "parallel_on_s": 9.124,
    "serial_speedup": 369.789 / 117.274,
    "parallel_speedup": 24.712 / 9.124,
}
DONE_WHEN = {
    "off_serial_min_s": 300.0,
    "memory_vs_ideal_1job": 1.03,
    "memory_vs_ideal_16jobs": 1.05,
    "warm_vs_cold": 0.02,
}


class Run:
    """The output folder: summary.json (rewritten after every step), frames, the log."""

    def __init__(self, out: Path, command: str, resume: bool) -> None:
        self.out = out
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / "summary.json"
        self.summary: dict[str, Any] = {}
        if resume and self.path.is_file():
            self.summary = json.loads(self.path.read_text())
        self.summary.setdefault("results", {})
        self.summary["command"] = command
        self.summary["seed"] = SEED
        self.summary["done_when_thresholds"] = DONE_WHEN
        self._log = open(out / "log.txt", "a", encoding="utf-8")
        self._lock = threading.Lock()

    def log(self, msg: str) -> None:
        line = f"[{time.strftime('%H:%M:%S')}] {msg}"
        print(line, flush=True)
        with self._lock:
            self._log.write(line + "\n")
            self._log.flush()

    def done(self, key: str) -> bool:
        r = self.summary["results"].get(key)
        return bool(r) and "error" not in r

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.summary["results"][key] = value
        self.summary["done_when"] = done_when(self.summary["results"])
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.summary, indent=1, sort_keys=True, default=_jsonable) + "\n")
        os.replace(tmp, self.path)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, float) and obj != obj:
        return None
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def key_of(step: str, list_name: str, compiler: str, target: str, jobs: int, extra: str = "") -> str:
    return f"{step}__{list_name}__{compiler}-{target}__j{jobs}{('__' + extra) if extra else ''}"


def build(list_name: str, compiler: str, target: str, scale: "Scale"):
    from hipexplore.tuning import listfile

    spec = listfile.read(list_name)
    if scale.reduced:
        spec = spec.select(scale.problems, limit=scale.limit, every=scale.every, every_problem=scale.every_problem)
    return listfile.expand(spec, compiler, target)


class Scale:
    """How much of each list a run replays: all of it, or a selection (tune-replay's --every-problem,
    --limit, --every), passed the same way to the second-run processes."""

    def __init__(
        self,
        every: int | None = None,
        every_problem: int | None = None,
        limit: int | None = None,
        problems: str | None = None,
    ) -> None:
        self.every, self.every_problem, self.limit, self.problems = every, every_problem, limit, problems

    @property
    def reduced(self) -> bool:
        return (
            any(v and v > 1 for v in (self.every, self.every_problem)) or self.limit is not None or bool(self.problems)
        )

    def cli(self) -> list[str]:
        out = []
        for flag, v in (
            ("--every", self.every),
            ("--every-problem", self.every_problem),
            ("--limit", self.limit),
            ("--problems", self.problems),
        ):
            if v:
                out += [flag, str(v)]
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "every": self.every,
            "every_problem": self.every_problem,
            "limit": self.limit,
            "problems": self.problems,
            "note": "a selection of each list (tune-replay --every / --every-problem / --limit)"
            if self.reduced
            else "the full lists",
        }


def full_counts(list_name: str) -> dict[str, dict[str, int]]:
    """role -> kernels and unique kernels of the whole list (no selection), without building requests."""
    from hipexplore.tuning import hxgen
    from hipexplore.tuning import listfile

    spec = listfile.read(list_name)
    out: dict[str, dict[str, Any]] = {}
    for p, c in spec.rows():
        for role in hxgen.roles(p, c):
            d = out.setdefault(role, {"kernels": 0, "keys": set()})
            d["kernels"] += 1
            d["keys"].add(hxgen.kernel_key(role, p, c))
    return {r: {"kernels": d["kernels"], "unique": len(d["keys"])} for r, d in out.items()}


def extrapolate_off(frame: Any, list_name: str) -> dict[str, Any]:
    """The whole list's cache-off serial time from a reduced-scale off pass: each role's mean
    compile time in that pass times the role's count in the whole list (EXTRAPOLATED)."""
    off = frame[(frame["scenario"] == "off") & frame["outcome"].isin(("compiled", "bypassed"))]
    means = off.groupby("role")["call_seconds"].mean().to_dict()
    counts = full_counts(list_name)
    missing = sorted(set(counts) - set(means))
    est = sum(counts[r]["kernels"] * means[r] for r in counts if r in means)
    return {
        "extrapolated_off_s_full_list": est,
        "mean_compile_s_by_role": means,
        "full_list_counts": counts,
        "roles_not_measured": missing,
        "note": "EXTRAPOLATED: per-role mean compile time of the measured (reduced) off pass x the whole list's counts",
    }


def write_frames(run: Run, key: str, report: Any, prov: dict[str, str]) -> str:
    from hipexplore.schema import PASSES, TUNING, write_parquet

    path = run.out / f"{key}.parquet"
    prov = {
        **prov,
        "tuning.list": report.tuning_list.name,
        "tuning.list_kernels": str(report.tuning_list.kernels),
        "tuning.step": key.split("__")[0],
    }
    write_parquet(report.frame, path, TUNING, prov)
    write_parquet(report.summary_frame(), run.out / f"{key}.passes.parquet", PASSES, prov)
    return path.name


def slim(js: dict[str, Any]) -> dict[str, Any]:
    """A replay's JSON without the per-problem name list (long at this scale)."""
    out = dict(js)
    probs = out.pop("problems", [])
    out["n_problems"] = len(probs)
    return out


def provenance(command: str) -> dict[str, str]:
    from hipexplore.provenance import collect

    prov = collect(command=command)
    prov["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return prov


# ----------------------------------------------------------------------------- steps
def step_estimate(run: Run, tl: Any, list_name: str, jobs_list: list[int], sample: int) -> dict[str, Any]:
    """A stratified sample of the unique kernels compiled (salted: no compiler cache helps),
    serially and at the largest --jobs; the cache-off pass extrapolated from per-role means."""
    from concurrent.futures import ThreadPoolExecutor

    from hipexplore.tuning.replay import make_compiler, salted, warm_up

    firsts: dict[Any, Any] = {}
    for e in tl.entries:
        firsts.setdefault(e.request, e)
    uniq = list(firsts.values())
    by_role: dict[str, list[Any]] = {}
    for e in uniq:
        by_role.setdefault(e.role, []).append(e)
    picked = []
    for role, es in by_role.items():
        n = min(len(es), max(4, sample * len(es) // len(uniq)))
        step = len(es) / n
        picked += [es[int(i * step)] for i in range(n)]
    counts = {role: sum(1 for e in tl.entries if e.role == role) for role in by_role}
    ucounts = {role: len(es) for role, es in by_role.items()}
    whole = full_counts(list_name)
    out: dict[str, Any] = {
        "list": list_name,
        "compiler": tl.compiler,
        "target": tl.target,
        "kernels": tl.kernels,
        "unique_kernels": tl.unique_kernels,
        "sample": len(picked),
        "counts_by_role": counts,
        "unique_by_role": ucounts,
        "note": "EXTRAPOLATED from a sample of unique kernels (per-role means)",
    }
    for jobs in sorted({1, *jobs_list}):
        comp = make_compiler(tl.compiler, jobs)
        try:
            warm_up(comp, tl.compiler, tl.target, jobs)
            sub = type(tl)(tl.compiler, tl.target, tl.problems, tl.candidates, tuple(picked), tl.name, tl.source)
            # the sample once untimed under another salt: the first pass of a fresh process runs slow
            # (H200 machine: up to 8x), and the replay's passes come after its own warm pass too
            warm = salted(sub, f"estwarm{jobs}_{os.getpid()}_{time.time_ns()}")
            if jobs == 1:
                for e in warm.entries:
                    comp.compile(e.request)
            else:
                with ThreadPoolExecutor(jobs) as pool:
                    list(pool.map(lambda e: comp.compile(e.request), warm.entries))
            sal = salted(sub, f"est{jobs}_{os.getpid()}_{time.time_ns()}")
            times: dict[str, list[float]] = {}
            lock = threading.Lock()

            def one(e: Any) -> None:
                t0 = time.perf_counter()
                comp.compile(e.request)
                dt = time.perf_counter() - t0
                with lock:
                    times.setdefault(e.role, []).append(dt)

            t0 = time.perf_counter()
            if jobs == 1:
                for e in sal.entries:
                    one(e)
            else:
                with ThreadPoolExecutor(jobs) as pool:
                    list(pool.map(one, sal.entries))
            wall = time.perf_counter() - t0
        finally:
            comp.close()
        means = {r: sum(v) / len(v) for r, v in times.items()}
        est_off = sum(counts[r] * means[r] for r in counts) / jobs
        est_ideal = sum(ucounts[r] * means[r] for r in ucounts) / jobs
        out[f"j{jobs}"] = {
            "sample_wall_s": wall,
            "mean_compile_s_by_role": means,
            "max_compile_s_by_role": {r: max(v) for r, v in times.items()},
            "extrapolated_off_s": est_off,
            "extrapolated_ideal_s": est_ideal,
            "extrapolated_off_s_full_list": sum(whole[r]["kernels"] * means.get(r, 0.0) for r in whole) / jobs,
            "extrapolated_ideal_s_full_list": sum(whole[r]["unique"] * means.get(r, 0.0) for r in whole) / jobs,
        }
        run.log(
            f"  estimate {list_name} {tl.compiler}:{tl.target} j{jobs}: sample {len(picked)} in {wall:.1f} s; "
            f"EXTRAPOLATED off {est_off:.0f} s, ideal {est_ideal:.0f} s "
            + ", ".join(f"{r} {m:.3f} s" for r, m in means.items())
        )
    return out


def step_replay(
    run: Run,
    key: str,
    tl: Any,
    jobs: int,
    ideal_repeats: int,
    warm_pass: bool,
    prov: dict,
    reduced: bool = False,
    list_name: str = "",
) -> dict[str, Any]:
    from hipexplore.tuning.floor import check_below
    from hipexplore.tuning.replay import run_replay

    t0 = time.time()
    rep = run_replay(
        tl,
        jobs=jobs,
        cache="memory",
        measure_without_cache=True,
        ideal_repeats=ideal_repeats,
        warm_pass=warm_pass,
        on_pass=lambda name: run.log(f"  {key}: {name}"),
    )
    js = slim(rep.to_json())
    js["frame"] = write_frames(run, key, rep, prov)
    sc = js["scenarios"]
    js["derived"] = {
        "off_s": sc["off"]["seconds"],
        "memory_s": sc["memory"]["seconds"],
        "ideal_s": sc["ideal"]["seconds"],
        "floor_s": js["seconds_floor"],
        "memory_vs_ideal": sc["memory"]["seconds"] / sc["ideal"]["seconds"],
        "memory_vs_floor": js["ratio_vs_floor"],
        "off_vs_memory": sc["off"]["seconds"] / sc["memory"]["seconds"],
        "floor_above_a_pass": check_below(rep.floor(), rep.scenarios),
        "step_wall_s": time.time() - t0,
        "memory_vs_ideal_cpu": sc["memory"]["cpu_seconds"] / sc["ideal"]["cpu_seconds"]
        if sc["ideal"]["cpu_seconds"]
        else None,
        "off_vs_memory_cpu": sc["off"]["cpu_seconds"] / sc["memory"]["cpu_seconds"]
        if sc["memory"]["cpu_seconds"]
        else None,
        "load_average_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    js["derived"]["memory_vs_ideal_interval"] = scenario_interval(rep.frame, js)
    if reduced and jobs == 1:
        js["derived"]["full_list"] = extrapolate_off(rep.frame, list_name)
        run.log(
            f"  {key}: the whole list's cache-off serial pass, EXTRAPOLATED from this one: "
            f"{js['derived']['full_list']['extrapolated_off_s_full_list']:.0f} s"
        )
    d = js["derived"]
    iv = d["memory_vs_ideal_interval"]
    run.log(
        f"  {key}: off {d['off_s']:.1f} s, memory {d['memory_s']:.1f} s, ideal {d['ideal_s']:.1f} s, floor "
        f"{d['floor_s']:.1f} s; memory/ideal {d['memory_vs_ideal']:.3f} (requests: {iv['ratio']:.3f} "
        f"[{iv['low']:.3f}, {iv['high']:.3f}], {iv['change_called']}), memory/floor {d['memory_vs_floor']:.3f}, "
        f"off/memory {d['off_vs_memory']:.2f}x"
    )
    return js


def scenario_interval(frame, js: dict) -> dict:
    """memory / ideal as issue 37 asks for it: a ratio with its 95% interval, not the fastest of two.
    ``compare_scenarios`` over the recorded pass's requests (the frame keeps one pass per scenario),
    and Welch's t over the log pass totals of every timed pass (``seconds_*_passes``) beside it."""
    import numpy as np

    from hipexplore.bench.levels import independent_units
    from hipexplore.bench.stats import Measurement
    from hipexplore.verdicts import compare_scenarios

    row = compare_scenarios(frame, base="ideal", new="memory").iloc[0]
    out = {
        "ratio": float(row["ratio"]),
        "low": float(row["ratio_ci_low"]),
        "high": float(row["ratio_ci_high"]),
        "change_called": str(row["change_called"]),
        "over": str(row["interval_over"]),
    }
    mem, ideal = (np.asarray(js.get(k) or [], float) for k in ("seconds_memory_passes", "seconds_ideal_passes"))
    if mem.size >= 2 and ideal.size >= 2:
        lv = independent_units(
            Measurement(mem, groups=np.arange(mem.size)), Measurement(ideal, groups=np.arange(ideal.size))
        )
        out.update(
            passes_ratio=float(lv.center),
            passes_low=float(lv.low),
            passes_high=float(lv.high),
            passes=f"{mem.size} memory, {ideal.size} ideal passes (Welch t, df {lv.df:.1f})",
        )
    return out


def _tune_cli(list_name: str, compiler: str, target: str, scale: Scale, jobs: int, frame: Path) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "hipexplore",
        "tune-replay",
        "--compiler",
        compiler,
        "--target",
        target,
        "--list",
        list_name,
        "--jobs",
        str(jobs),
        "--cache",
        "disk",
        "--no-ideal",
        "--estimate-without-cache",
        "--json",
        "--quiet",
        "--frame",
        str(frame),
    ]
    return argv + scale.cli()


def step_second_run(
    run: Run, list_name: str, compiler: str, target: str, scale: Scale, jobs: int, redis: "Redis | None"
) -> dict[str, Any]:
    """Fresh processes of ``tune-replay --cache disk`` on one directory: cold, then warm; with a
    Redis server, a third on an empty directory that only the Redis tier can serve."""
    base = Path(tempfile.mkdtemp(prefix="hx-second-run-"))
    out: dict[str, Any] = {
        "list": list_name,
        "compiler": compiler,
        "target": target,
        "jobs": jobs,
        "redis": bool(redis),
        "runs": {},
    }
    plan = [("cold", base / "disk-a"), ("warm-disk", base / "disk-a")]
    if redis is not None:
        plan.append(("warm-redis-empty-disk", base / "disk-b"))
    try:
        for name, d in plan:
            root = str(Path(__file__).resolve().parents[1])
            env = dict(
                os.environ,
                HIPEXPLORE_CACHE_DIR=str(d),
                PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
            )
            env.pop("HIPEXPLORE_CACHE_REMOTE", None)
            if redis is not None:
                env.update(HIPEXPLORE_CACHE_REMOTE=redis.url, HIPEXPLORE_CACHE_SECRET=redis.secret)
            key = key_of("second-run", list_name, compiler, target, jobs, name)
            frame = run.out / f"{key}.parquet"
            argv = _tune_cli(list_name, compiler, target, scale, jobs, frame)
            t0 = time.perf_counter()
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=6 * 3600)
            wall = time.perf_counter() - t0
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"{name}: tune-replay exited {proc.returncode}: {proc.stderr.strip()[-800:]}")
            js = json.loads(proc.stdout)
            first = js["scenario"]
            r = {
                "process_wall_s": wall,
                "pass": first,
                "seconds": js["seconds"],
                "compiles": js["compiles"],
                "memory_hits": js["memory_hits"],
                "disk_hits": js["disk_hits"],
                "remote_hits": js["remote_hits"],
                "failed": js["failed"],
                "kernels": js["kernels"],
                "unique_kernels": js["unique_kernels"],
                "in_process_warm_s": js["scenarios"].get("disk-warm", {}).get("seconds"),
                "frame": frame.name,
            }
            out["runs"][name] = r
            run.log(
                f"  second-run {list_name} {compiler}:{target} j{jobs} {name}: pass {first} {r['seconds']:.2f} s, "
                f"{r['compiles']} compiles, {r['disk_hits']} disk / {r['remote_hits']} remote / {r['memory_hits']} memory hits "
                f"(process {wall:.1f} s)"
            )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    cold = out["runs"]["cold"]["seconds"]
    out["warm_vs_cold"] = {n: r["seconds"] / cold for n, r in out["runs"].items() if n != "cold"}
    return out


def step_cluster(
    run: Run, key: str, tl: Any, workers: int, redis: "Redis", prov: dict, timeout_s: float
) -> dict[str, Any]:
    import distributed

    from hipexplore.bench.cluster import local_cluster
    from hipexplore.tuning.cluster import replay_on_cluster

    old = {k: os.environ.get(k) for k in ("HIPEXPLORE_CACHE_SECRET",)}
    os.environ["HIPEXPLORE_CACHE_SECRET"] = redis.secret  # the workers inherit it
    lc = client = None
    try:
        t0 = time.perf_counter()
        lc = local_cluster(workers, pin=False)  # compile-only: unpinned, any number of workers
        client = distributed.Client(lc, timeout=120)
        run.log(
            f"  {key}: {workers} workers up in {time.perf_counter() - t0:.1f} s; ideal, cold and warm passes "
            f"(each bounded by {timeout_s:g} s)"
        )
        rep = replay_on_cluster(tl, client, remote=redis.url, timeout_s=timeout_s)
    finally:
        for c in (client, lc):
            if c is not None:
                try:
                    c.close()
                except Exception:  # noqa: BLE001 - closing a broken cluster must not hide the step's error
                    pass
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    js = slim(rep.to_json())
    js["frame"] = write_frames(run, key, rep, prov)
    cold = rep.frame[rep.frame["scenario"] == rep.primary]
    compiled = cold[cold["outcome"].isin(("compiled", "bypassed"))]
    js["derived"] = {
        "cold_pass": rep.primary,
        "cold_compiles": int(len(compiled)),
        "cold_distinct_compiled": int(compiled["digest"].nunique()),
        "unique_kernels": tl.unique_kernels,
        "each_unique_once": bool(len(compiled) == tl.unique_kernels and compiled["digest"].is_unique),
        "workers_used": {str(k): int(v) for k, v in cold.groupby("worker").size().items()} if "worker" in cold else {},
        "cold_s": rep.scenarios[rep.primary].seconds,
        "warm_s": rep.scenarios["disk-warm"].seconds,
        "ideal_s": rep.scenarios["ideal"].seconds,
    }
    d = js["derived"]
    run.log(
        f"  {key}: {d['cold_compiles']} compiles of {d['unique_kernels']} unique kernels in the cold pass "
        f"({d['cold_s']:.1f} s; warm {d['warm_s']:.2f} s; ideal {d['ideal_s']:.1f} s); workers {d['workers_used']}"
    )
    return js


def step_triton_cache(run: Run, key: str, tl: Any, jobs: int, prov: dict) -> dict[str, Any]:
    from hipexplore.tuning.replay import run_replay
    from hipexplore.tuning.triton_cache import add_triton_cache_passes

    rep = run_replay(tl, jobs=jobs, cache="disk", measure_without_cache=False, ideal=False, warm_pass=False)
    add_triton_cache_passes(rep)
    js = slim(rep.to_json())
    js["frame"] = write_frames(run, key, rep, prov)
    s = {n: r.seconds for n, r in rep.scenarios.items()}
    js["derived"] = {
        "seconds": s,
        "ours_warm_vs_cold": s["disk-warm"] / s["disk-cold"],
        "triton_warm_vs_cold": s["triton-warm"] / s["triton-cold"],
    }
    run.log(
        f"  {key}: ours cold {s['disk-cold']:.1f} s warm {s['disk-warm']:.2f} s; Triton's own cold "
        f"{s['triton-cold']:.1f} s warm {s['triton-warm']:.2f} s"
    )
    return js


# ----------------------------------------------------------------------------- Redis
class Redis:
    """A private redis-server on a loopback port (bounded, no persistence), or a given URL."""

    def __init__(self, url: str | None = None) -> None:
        self.proc = None
        self.dir = None
        self.secret = os.environ.get("HIPEXPLORE_CACHE_SECRET") or secrets.token_hex(16)
        if url:
            self.url = url
            return
        exe = shutil.which("redis-server")
        if exe is None:
            raise FileNotFoundError("redis-server is not on PATH")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.dir = tempfile.mkdtemp(prefix="hx-redis-")
        self.proc = subprocess.Popen(
            [
                exe,
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--dir",
                self.dir,
                "--save",
                "",
                "--appendonly",
                "no",
                "--maxmemory",
                "4gb",
                "--maxmemory-policy",
                "allkeys-lru",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"redis://127.0.0.1:{port}/0"
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 15
        while True:
            try:
                if client.ping():
                    break
            except redis.RedisError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on {self.url}") from None
                time.sleep(0.05)

    def flush(self) -> None:
        import redis

        redis.Redis.from_url(self.url).flushdb()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


# ----------------------------------------------------------------------------- the done-when
def done_when(results: dict[str, Any]) -> dict[str, Any]:
    """Each criterion of the issue, with the measured values behind it (None where not run)."""
    out: dict[str, Any] = {}
    off = {}
    for k, r in results.items():
        if k.startswith("serial__") and "derived" in r:
            off.setdefault(r["list"], []).append(
                {
                    "compiler": f"{r['compiler']}:{r['target']}",
                    "off_s": r["derived"]["off_s"],
                    "scale": r.get("kernels"),
                    "memory_vs_ideal": r["derived"]["memory_vs_ideal"],
                    "memory_vs_floor": r["derived"]["memory_vs_floor"],
                }
            )
        if k.startswith("estimate__") and "j1" in r:
            off.setdefault(r["list"], []).append(
                {
                    "compiler": f"{r['compiler']}:{r['target']}",
                    "scale": r["kernels"],
                    "extrapolated_off_s": r["j1"].get("extrapolated_off_s_full_list", r["j1"]["extrapolated_off_s"]),
                }
            )
        if k.startswith("serial__") and "full_list" in r.get("derived", {}):
            off.setdefault(r["list"], []).append(
                {
                    "compiler": f"{r['compiler']}:{r['target']}",
                    "scale": "whole list",
                    "extrapolated_off_s": r["derived"]["full_list"]["extrapolated_off_s_full_list"],
                }
            )
    out["off_serial_ge_300s"] = {
        lst: {
            "rows": rows,
            "met_measured": any(x.get("off_s", 0) >= DONE_WHEN["off_serial_min_s"] for x in rows),
            "met_extrapolated": any(x.get("extrapolated_off_s", 0) >= DONE_WHEN["off_serial_min_s"] for x in rows),
        }
        for lst, rows in off.items()
    }
    par = [
        {
            "key": k,
            "jobs": r["jobs"],
            "memory_vs_ideal": r["derived"]["memory_vs_ideal"],
            "memory_vs_floor": r["derived"]["memory_vs_floor"],
            "off_vs_memory": r["derived"]["off_vs_memory"],
        }
        for k, r in results.items()
        if k.startswith(("serial__", "parallel__")) and "derived" in r
    ]
    out["memory_vs_ideal"] = {
        "rows": par,
        "met_1job": [p["memory_vs_ideal"] <= DONE_WHEN["memory_vs_ideal_1job"] for p in par if p["jobs"] == 1],
        "met_16jobs": [p["memory_vs_ideal"] <= DONE_WHEN["memory_vs_ideal_16jobs"] for p in par if p["jobs"] == 16],
    }
    sec = {k: r["warm_vs_cold"] for k, r in results.items() if k.startswith("second-run__") and "warm_vs_cold" in r}
    out["warm_second_run_le_2pct"] = {
        "ratios": sec,
        "met": {k: all(v <= DONE_WHEN["warm_vs_cold"] for v in r.values()) for k, r in sec.items()},
    }
    cl = {k: r["derived"] for k, r in results.items() if k.startswith("cluster__") and "derived" in r}
    out["cluster_each_unique_once"] = {
        k: {
            "met": d["each_unique_once"],
            "compiles": d["cold_compiles"],
            "unique": d["unique_kernels"],
            "workers": d["workers_used"],
        }
        for k, d in cl.items()
    }
    speed = []
    for k, r in results.items():
        if k.startswith(("serial__", "parallel__")) and "derived" in r:
            speed.append(
                {
                    "key": k,
                    "jobs": r["jobs"],
                    "off_s": r["derived"]["off_s"],
                    "memory_s": r["derived"]["memory_s"],
                    "speedup": r["derived"]["off_vs_memory"],
                    "seed_speedup": SEED["serial_speedup"] if r["jobs"] == 1 else SEED["parallel_speedup"],
                }
            )
    out["speedups_beside_the_seed"] = speed
    return out


def _ratio(a: Any, b: Any) -> str:
    return f"{a / b:.3f}" if a and b else "-"


def tables(folders: list[Path]) -> str:
    """Markdown tables (for BENCHMARKS.md) of the summary.json in each folder."""
    rep_rows, sec_rows, cl_rows, tc_rows = [], [], [], []
    for folder in folders:
        summ = json.loads((folder / "summary.json").read_text())
        host = f"{summ['provenance'].get('cpu', '?')} ({summ['provenance'].get('cpu_count', '?')} cores)"
        scale = summ.get("scale", {})
        for k, r in sorted(summ["results"].items()):
            if "error" in r:
                continue
            step = k.split("__")[0]
            if step in ("serial", "parallel"):
                d, sc = r["derived"], r["scenarios"]
                full = d.get("full_list", {}).get("extrapolated_off_s_full_list")
                seed = SEED["serial_speedup"] if r["jobs"] == 1 else SEED["parallel_speedup"]
                rep_rows.append(
                    f"| {r['list']} | {r['compiler']}:{r['target']} | {r['kernels']} ({r['unique_kernels']}) | {r['jobs']} "
                    f"| {d['off_s']:.1f}{f' (whole list ~{full:.0f}, extrapolated)' if full else ''} | {d['memory_s']:.1f} "
                    f"| {d['ideal_s']:.1f} | {d['floor_s']:.1f} | {d['memory_vs_ideal']:.3f} "
                    f"| {d['memory_vs_floor']:.3f} | {_ratio(sc['memory'].get('cpu_seconds'), sc['ideal'].get('cpu_seconds'))} "
                    f"| {d['off_vs_memory']:.2f}x (seed {seed:.2f}x) | {host} |"
                )
            elif step == "second-run":
                runs = r["runs"]
                cold = runs["cold"]
                cells = [
                    f"{n}: {x['seconds']:.2f} s = {100 * x['seconds'] / cold['seconds']:.2f}% "
                    f"({x['disk_hits']} disk, {x['remote_hits']} remote, {x['compiles']} compiles)"
                    for n, x in runs.items()
                    if n != "cold"
                ]
                sec_rows.append(
                    f"| {r['list']} | {r['compiler']}:{r['target']} | {cold['kernels']} ({cold['unique_kernels']}) "
                    f"| {r['jobs']} | {cold['seconds']:.1f} | {'; '.join(cells)} | {host} |"
                )
            elif step == "cluster":
                d = r["derived"]
                cl_rows.append(
                    f"| {r['list']} | {r['compiler']}:{r['target']} | {r['kernels']} ({r['unique_kernels']}) "
                    f"| {len(d['workers_used'])} | {d['cold_compiles']} | {d['each_unique_once']} | {d['ideal_s']:.1f} "
                    f"| {d['cold_s']:.1f} | {d['warm_s']:.2f} | {host} |"
                )
            elif step == "triton-cache":
                sec = r["derived"]["seconds"]
                tc_rows.append(
                    f"| {r['list']} | {r['compiler']}:{r['target']} | {r['kernels']} ({r['unique_kernels']}) | {r['jobs']} "
                    f"| {sec['disk-cold']:.1f} | {sec['disk-warm']:.2f} | {sec['triton-cold']:.1f} | {sec['triton-warm']:.2f} | {host} |"
                )
        if scale.get("note"):
            rep_rows.append(
                f"| ({folder.name}: {scale['note']}, {json.dumps({k: v for k, v in scale.items() if v and k != 'note'})}) |"
            )
    out = [
        "| list | compiler:target | kernels (unique) | jobs | cache off s | memory s | ideal pass s | floor s "
        "| memory / ideal | memory / floor | memory / ideal (CPU) | off / memory | host |",
        "|" + "---|" * 13,
        *rep_rows,
        "",
        "| list | compiler:target | kernels (unique) | jobs | cold run s | second run (fresh process) | host |",
        "|" + "---|" * 7,
        *sec_rows,
        "",
        "| list | compiler:target | kernels (unique) | workers | compiles in the cold pass | each unique once | ideal s "
        "| cold s | warm s | host |",
        "|" + "---|" * 10,
        *cl_rows,
        "",
        "| list | compiler:target | kernels (unique) | jobs | ours cold s | ours warm s | Triton's own cold s "
        "| Triton's own warm s | host |",
        "|" + "---|" * 9,
        *tc_rows,
    ]
    return "\n".join(out)


def bundle(out: Path) -> Path:
    """Move every frame (*.parquet) into OUT/frames.tar, appending to an earlier one."""
    import tarfile

    frames = sorted(out.glob("*.parquet"))
    path = out / "frames.tar"
    with tarfile.open(path, "a") as tar:
        for f in frames:
            tar.add(f, arcname=f.name)
    for f in frames:
        f.unlink()
    return path


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--out", required=True, help="output folder (summary.json, frames, log); with --table: folders, comma-separated"
    )
    ap.add_argument(
        "--table", action="store_true", help="print the markdown tables of the summary.json under --out and exit"
    )
    ap.add_argument(
        "--lists", default="llama3-8b,resnet50", help="shipped list names or list files (default %(default)s)"
    )
    ap.add_argument("--compilers", default="nvrtc:sm_90,triton:sm_90", help="compiler:target,... (default %(default)s)")
    ap.add_argument("--steps", default=",".join(STEPS), help=f"any of {', '.join(STEPS)} (default all)")
    ap.add_argument("--jobs", default=None, help="job counts of the parallel step (default: the machine's cores)")
    ap.add_argument(
        "--every-problem",
        type=int,
        default=None,
        help="reduced scale: every K-th problem of each list, with all its candidates (keeps the repetition)",
    )
    ap.add_argument("--limit", type=int, default=None, help="reduced scale: the first N candidates of each problem")
    ap.add_argument(
        "--problems", default=None, help="reduced scale: these problems of each list (names, or a count N: the first N)"
    )
    ap.add_argument("--every", type=int, default=None, help="reduced scale: every K-th candidate of each list")
    ap.add_argument(
        "--ideal-repeats",
        type=int,
        default=1,
        help="ideal passes per replay, each repeat followed by a memory pass (default %(default)s)",
    )
    ap.add_argument(
        "--no-warm-pass",
        action="store_true",
        help="skip the untimed warm pass before the ideal (saves one pass of uniques)",
    )
    ap.add_argument(
        "--sample", type=int, default=48, help="estimate: unique kernels in the sample (default %(default)s)"
    )
    ap.add_argument("--workers", type=int, default=2, help="cluster: Dask workers (default %(default)s)")
    ap.add_argument(
        "--cluster-timeout",
        type=float,
        default=1800.0,
        help="cluster: a pass that runs longer than this many seconds fails the step (default %(default)s)",
    )
    ap.add_argument("--redis", default="auto", help="auto (start redis-server if on PATH), a redis:// URL, or none")
    ap.add_argument("--second-run-jobs", default="1", help="job counts of the second-run step (default %(default)s)")
    ap.add_argument(
        "--triton-cache-jobs",
        default=None,
        help="job counts of the triton-cache step (default: 1 and the top --jobs; one 10-minute call may fit only the top)",
    )
    ap.add_argument("--resume", action="store_true", help="keep summary.json and skip steps already in it")
    ap.add_argument("--quick", action="store_true", help="smoke test: every 12th problem, 6 candidates each, jobs 2")
    ap.add_argument(
        "--bundle",
        action="store_true",
        help="at the end, pack the frames into OUT/frames.tar (a machine that returns few files: the device "
        "tool brings back 8), leaving summary.json, log.txt and frames.tar",
    )
    args = ap.parse_args(argv)
    if args.table:
        print(tables([Path(p) for p in args.out.split(",")]))
        return 0
    command = shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(["tuning_scale.py", *argv])
    if args.quick:
        args.every_problem = args.every_problem or 12
        args.limit = args.limit or 6
        args.jobs = args.jobs or "2"
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    bad = [s for s in steps if s not in STEPS]
    if bad:
        ap.error(f"unknown steps {bad}; expected some of {', '.join(STEPS)}")
    jobs_list = [int(j) for j in (args.jobs or str(os.cpu_count() or 1)).split(",")]
    tc_jobs = sorted(
        {int(j) for j in args.triton_cache_jobs.split(",")} if args.triton_cache_jobs else {1, max(jobs_list)}
    )
    pairs = [tuple(p.split(":", 1)) for p in args.compilers.split(",")]
    run = Run(Path(args.out), command, args.resume)
    prov = provenance(command)
    run.summary["provenance"] = prov
    scale = Scale(args.every, args.every_problem, args.limit, args.problems)
    run.summary["scale"] = scale.describe()
    run.write()
    redis: Redis | None = None
    if args.redis != "none" and ({"second-run", "cluster"} & set(steps)):
        try:
            redis = Redis(None if args.redis == "auto" else args.redis)
            run.log(f"Redis tier: {redis.url}")
        except Exception as exc:  # noqa: BLE001 - the Redis steps say why they did not run
            run.log(f"no Redis tier ({exc}): second-run without it, no cluster step")
    t_start = time.time()
    rc = 0
    try:
        for list_name in [x.strip() for x in args.lists.split(",") if x.strip()]:
            for compiler, target in pairs:
                label = f"{list_name} {compiler}:{target}"
                try:
                    tl = build(list_name, compiler, target, scale)
                except Exception as exc:  # noqa: BLE001
                    run.log(f"{label}: cannot build the list: {exc}")
                    rc = 1
                    continue
                run.log(f"{label}: {tl.kernels} kernels, {tl.unique_kernels} unique ({scale.describe()['note']})")
                todo: list[tuple[str, Any]] = []
                if "estimate" in steps:
                    todo.append(
                        (
                            key_of("estimate", list_name, compiler, target, max(jobs_list)),
                            lambda: step_estimate(run, tl, list_name, jobs_list, args.sample),
                        )
                    )
                if "serial" in steps:
                    k = key_of("serial", list_name, compiler, target, 1)
                    todo.append(
                        (
                            k,
                            lambda k=k: step_replay(
                                run, k, tl, 1, args.ideal_repeats, not args.no_warm_pass, prov, scale.reduced, list_name
                            ),
                        )
                    )
                if "parallel" in steps:
                    for j in (j for j in jobs_list if j > 1):
                        k = key_of("parallel", list_name, compiler, target, j)
                        todo.append(
                            (
                                k,
                                lambda k=k, j=j: step_replay(
                                    run, k, tl, j, args.ideal_repeats, not args.no_warm_pass, prov
                                ),
                            )
                        )
                if "second-run" in steps:
                    for j in (int(x) for x in args.second_run_jobs.split(",")):
                        todo.append(
                            (
                                key_of("second-run", list_name, compiler, target, j),
                                lambda j=j: step_second_run(run, list_name, compiler, target, scale, j, redis),
                            )
                        )
                if "cluster" in steps and redis is not None:
                    k = key_of("cluster", list_name, compiler, target, args.workers)
                    todo.append(
                        (
                            k,
                            lambda k=k: (
                                redis.flush(),
                                step_cluster(run, k, tl, args.workers, redis, prov, args.cluster_timeout),
                            )[1],
                        )
                    )
                if "triton-cache" in steps and compiler == "triton":
                    for j in tc_jobs:
                        k = key_of("triton-cache", list_name, compiler, target, j)
                        todo.append((k, lambda k=k, j=j: step_triton_cache(run, k, tl, j, prov)))
                for key, fn in todo:
                    if args.resume and run.done(key):
                        run.log(f"{key}: done earlier, skipped (--resume)")
                        continue
                    run.log(f"{key}: start")
                    t0 = time.time()
                    try:
                        res = fn()
                        res["step_seconds"] = time.time() - t0
                        run.put(key, res)
                    except Exception as exc:  # noqa: BLE001 - one failing step never loses the others
                        rc = 1
                        run.log(f"{key}: FAILED {type(exc).__name__}: {exc}")
                        run.put(
                            key, {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
                        )
    finally:
        if redis is not None:
            redis.close()
        run.summary["wall_seconds"] = time.time() - t_start
        run.write()
    run.log(f"done in {time.time() - t_start:.0f} s: {run.path}")
    if args.bundle:
        bundle(run.out)
    print(json.dumps(run.summary.get("done_when", {}), indent=1, default=_jsonable))
    return rc


if __name__ == "__main__":
    sys.exit(main())
