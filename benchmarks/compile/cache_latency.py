"""Compile-cache benchmark: what a memory hit and a disk hit cost against a real recompile, and
what the isolated worker pool gains on distinct compiles; with ``--team``, what a remote hit from
the Redis team tier costs on loopback and what the per-key lock costs a hit.

All arms run side by side in one process on one code object: a real hiprtc gfx90a compile of a
templated kernel with 16 fully unrolled instances (about 50 KB of code object). Latencies are
wall times around ``CompileCache.get_or_compile`` (key building, lookup, checksum, everything);
the disk tier is read through a page cache that the first read warms (stated in the output).

    python benchmarks/compile/cache_latency.py                      # full run, writes benchmarks/results/
    python benchmarks/compile/cache_latency.py --quick              # smoke run (few samples)
    python benchmarks/compile/cache_latency.py --compiler nvrtc --target sm_90
    python benchmarks/compile/cache_latency.py --team-only --compiler host --target host   # remote hit + lock arms only (~20 s)

The team arms start their own ``redis-server`` (Debian package) on a free 127.0.0.1 port in a temp
dir (maxmemory 256 MB, allkeys-lru, no persistence) and stop it afterwards.

Writes ``<out>.json`` (samples summary + provenance) and ``<out>.md`` (the table for BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from hipexplore.compile import CompileRequest, Source  # noqa: E402
from hipexplore.compile.cache import CompileCache  # noqa: E402
from hipexplore.compile.registry import get_compiler  # noqa: E402
from hipexplore.provenance import collect  # noqa: E402

#: SALT makes distinct compiles of identical cost; INSTANCES sets the code-object size.
KERNEL = r"""
#define SALT %(salt)d
template <int N>
__global__ void poly(float* __restrict__ out, const float* __restrict__ in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float acc = (float)(SALT & 0xff);
#pragma unroll
  for (int k = 0; k < 16 * N; ++k) acc = acc * x + (float)(k ^ N);
  out[i] = acc;
}
"""
EXT = {"hiprtc": ".hip", "nvrtc": ".cu", "host": ".c"}
HOST_KERNEL = r"""
#define SALT %(salt)d
float poly(const float* in, int n) { float acc = SALT & 0xff; for (int i = 0; i < n; ++i) acc = acc * in[i] + i; return acc; }
"""


def make_request(compiler: str, target: str, salt: int, instances: int) -> CompileRequest:
    if compiler == "host":
        return CompileRequest(Source("poly.c", HOST_KERNEL % {"salt": salt}), "host", "host", label=f"poly salt {salt}")
    return CompileRequest(
        Source(f"poly{EXT[compiler]}", KERNEL % {"salt": salt}),
        compiler,
        target,
        kernels=tuple(f"poly<{i}>" for i in range(1, instances + 1)),
        label=f"poly x{instances} salt {salt}",
    )


def summarize(samples: list[float]) -> dict:
    ordered = sorted(samples)
    n = len(ordered)

    def pct(p: float) -> float:
        return ordered[min(n - 1, max(0, int(round(p / 100 * (n - 1)))))]

    return {
        "n": n,
        "p50_s": pct(50),
        "p99_s": pct(99),
        "mean_s": statistics.fmean(ordered),
        "min_s": ordered[0],
        "max_s": ordered[-1],
    }


def time_lookups(cache: CompileCache, request: CompileRequest, compiler, n: int, expect: str) -> list[float]:
    samples = []
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        result = cache.get_or_compile(request, compiler)
        samples.append(clock() - t0)
        if result.outcome != expect:
            raise SystemExit(f"expected {expect}, got {result.outcome}: the benchmark is not measuring what it says")
    return samples


def distinct_compiles(compiler_name: str, target: str, instances: int, workers: int, salts: list[int]) -> dict:
    """Compile len(salts) distinct requests through a fresh memory-only cache with an isolated
    compiler of ``workers`` worker processes; requests are issued by ``workers`` threads."""
    compiler = get_compiler(compiler_name, isolated=True, workers=workers)
    warm = [make_request(compiler_name, target, 10 * workers + k, instances) for k in range(workers)]
    with ThreadPoolExecutor(max_workers=workers) as pool:  # start and warm every worker, untimed
        list(pool.map(compiler.compile, warm))
    cache = CompileCache(disk_dir=False)
    requests = [make_request(compiler_name, target, s, instances) for s in salts]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(lambda r: cache.get_or_compile(r, compiler), requests))
    wall = time.perf_counter() - t0
    outcomes = {r.outcome for r in results}
    if outcomes != {"compiled"}:
        raise SystemExit(f"distinct compiles were not all compiled: {outcomes}")
    return {
        "workers": workers,
        "compiles": len(requests),
        "wall_s": wall,
        "sum_compile_s": sum(r.compile_seconds for r in results),
    }


class _Redis:
    """A throw-away redis-server on a free loopback port (the tests' fixture does the same)."""

    def __enter__(self) -> "_Redis":
        import shutil
        import socket
        import subprocess

        exe = shutil.which("redis-server")
        if exe is None:
            raise SystemExit("--team needs redis-server (Debian package redis-server; setup.sh --dev installs it)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.tmp = tempfile.TemporaryDirectory(prefix="hipexplore-bench-redis-")
        self.proc = subprocess.Popen(
            [
                exe,
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--dir",
                self.tmp.name,
                "--save",
                "",
                "--appendonly",
                "no",
                "--maxmemory",
                "256mb",
                "--maxmemory-policy",
                "allkeys-lru",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        for _ in range(200):
            try:
                if client.ping():
                    break
            except redis.RedisError:
                time.sleep(0.05)
        self.version = client.info("server")["redis_version"]
        self.url = f"redis://127.0.0.1:{port}/0"
        return self

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()
        self.tmp.cleanup()


def team_arms(args: argparse.Namespace, compiler, request: CompileRequest) -> dict:
    """Remote hits on loopback; memory hits with and without the disk tier (whose per-key lock is
    only taken on misses), alternated in blocks A B B A so drift hits both; the lock's own cost."""
    os.environ.setdefault("HIPEXPLORE_CACHE_SECRET", "benchmark-secret")
    out: dict = {}
    with _Redis() as server, tempfile.TemporaryDirectory(prefix="hipexplore-cache-bench-") as tmp:
        url = server.url
        seed = CompileCache(disk_dir=False, remote=url)
        assert seed.get_or_compile(request, compiler).outcome == "compiled"
        remote_only = CompileCache(max_entries=0, disk_dir=False, remote=url)  # every lookup goes to Redis
        time_lookups(remote_only, request, compiler, min(100, args.remote_lookups), "remote-hit")
        remote = time_lookups(remote_only, request, compiler, args.remote_lookups, "remote-hit")
        out["remote_hit"] = {
            **summarize(remote),
            "server": f"redis-server {server.version}",
            "entry_bytes": len(remote_only.remote.client.get(f"hx:v1:{seed.key_for(request, compiler).digest}")),
        }
        with_disk = CompileCache(disk_dir=tmp)
        without = CompileCache(disk_dir=False)
        for c in (with_disk, without):
            c.get_or_compile(request, compiler)
            time_lookups(c, request, compiler, 500, "memory-hit")
        blocks: dict[str, list[float]] = {"disk tier on (lock on misses only)": [], "no disk tier (no lock)": []}
        names = list(blocks)
        per = max(1, args.lookups // 4)
        for name in (names[0], names[1], names[1], names[0]):
            blocks[name] += time_lookups(
                with_disk if name == names[0] else without, request, compiler, per, "memory-hit"
            )
        out["memory_hit_lock"] = {k: summarize(v) for k, v in blocks.items()}
        a, b = (statistics.median(blocks[n]) for n in names)
        out["memory_hit_lock"]["p50_difference_s"] = a - b
        disk = with_disk.disk
        digest = with_disk.key_for(request, compiler).digest
        lock_times = []
        for _ in range(args.lock_samples):
            t0 = time.perf_counter()
            with disk.key_lock(digest):
                pass
            lock_times.append(time.perf_counter() - t0)
        out["key_lock_uncontended"] = summarize(lock_times)
    out["goals"] = {"remote_hit_p50_le_1ms": out["remote_hit"]["p50_s"] <= 1e-3}
    return out


def team_markdown(t: dict) -> str:
    r, m, k = t["remote_hit"], t["memory_hit_lock"], t["key_lock_uncontended"]
    names = [n for n in m if n != "p50_difference_s"]
    lines = [
        "| lookup | n | p50 | p99 | mean |",
        "|---|---|---|---|---|",
        f"| remote hit ({r['server']} on loopback, memory and disk tiers off; entry {r['entry_bytes'] / 1000:.1f} kB with HMAC) | {r['n']} | {_t(r['p50_s'])} | {_t(r['p99_s'])} | {_t(r['mean_s'])} |",
        *(
            f"| memory hit, {n} | {m[n]['n']} | {_t(m[n]['p50_s'])} | {_t(m[n]['p99_s'])} | {_t(m[n]['mean_s'])} |"
            for n in names
        ),
        f"| per-key lock acquire + release alone (uncontended, taken on misses only) | {k['n']} | {_t(k['p50_s'])} | {_t(k['p99_s'])} | {_t(k['mean_s'])} |",
        "",
        f"Memory-hit p50 difference (disk tier on − off, blocks A B B A): {m['p50_difference_s'] * 1e6:+.2f} µs. "
        f"Goal remote hit p50 ≤ 1 ms: {'met' if t['goals']['remote_hit_p50_le_1ms'] else 'NOT met'}.",
    ]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> dict:
    compiler = get_compiler(args.compiler)
    if not compiler.available():
        raise SystemExit(f"{args.compiler} unavailable: {compiler.unavailable_reason()}")
    load_before = os.getloadavg()
    if args.team_only:
        request = make_request(args.compiler, args.target, random.SystemRandom().randrange(10**9), args.instances)
        team = team_arms(args, compiler, request)
        return {
            "benchmark": "compile-cache-team",
            "compiler": args.compiler,
            "target": args.target,
            "compiler_identity": compiler.identity().record(),
            "team": team,
            "conditions": {
                "loadavg_before": list(load_before),
                "loadavg_after": list(os.getloadavg()),
                "cpu_count": os.cpu_count(),
            },
            "provenance": collect(command=[Path(sys.executable).name, *sys.argv]),
        }
    # Salts are random per run: a compiler-side cache (NVRTC 13.0 on the H200 image serves an
    # identical program again in ~14 ms, across processes) must never shortcut a "fresh" compile.
    salts = iter(random.SystemRandom().sample(range(10**6, 10**9), 64))
    request = make_request(args.compiler, args.target, next(salts), args.instances)
    identity = compiler.identity()
    compiler.compile(make_request(args.compiler, args.target, next(salts), args.instances))  # untimed warm-up

    def timed_compile(req: CompileRequest) -> tuple[float, float, int]:
        t0 = time.perf_counter()
        code = compiler.compile(req)
        return time.perf_counter() - t0, code.compile_seconds, len(code.binary)

    # what a cache hit replaces: a compile of this kernel that no cache (ours or the compiler's) has seen
    fresh = [
        timed_compile(make_request(args.compiler, args.target, next(salts), args.instances))
        for _ in range(args.recompiles)
    ]
    # the same program again: shows the compiler's own caching, if it has any
    same = [timed_compile(request) for _ in range(args.recompiles)]
    size = same[0][2]
    recompile_wall = [w for w, _, _ in fresh]
    recompile_recorded = [c for _, c, _ in fresh]

    with tempfile.TemporaryDirectory(prefix="hipexplore-cache-bench-") as tmp:
        memory_cache = CompileCache(disk_dir=tmp)
        first = memory_cache.get_or_compile(request, compiler)
        assert first.outcome == "compiled"
        time_lookups(memory_cache, request, compiler, min(200, args.lookups), "memory-hit")  # warm-up
        memory = time_lookups(memory_cache, request, compiler, args.lookups, "memory-hit")

        disk_cache = CompileCache(max_entries=0, disk_dir=tmp)  # memory tier off: every lookup reads the file
        time_lookups(disk_cache, request, compiler, min(50, args.disk_lookups), "disk-hit")  # warms the page cache
        disk = time_lookups(disk_cache, request, compiler, args.disk_lookups, "disk-hit")
        disk_file_bytes = sum(e.size for e in disk_cache.disk.entries())

    # distinct compiles: serial (1 worker) against the pool (2 workers), ABBA with fresh salts
    pool_runs = []
    for workers in (1, 2, 2, 1)[: 4 if args.repeats_abba else 2]:
        run_salts = [next(salts) for _ in range(args.distinct)]
        pool_runs.append(distinct_compiles(args.compiler, args.target, args.instances, workers, run_salts))

    team = team_arms(args, compiler, request) if args.team else None
    load_after = os.getloadavg()
    rec = summarize(recompile_wall)
    same_rec = summarize([w for w, _, _ in same])
    mem = summarize(memory)
    dsk = summarize(disk)
    serial = [r["wall_s"] for r in pool_runs if r["workers"] == 1]
    parallel = [r["wall_s"] for r in pool_runs if r["workers"] == 2]
    return {
        "benchmark": "compile-cache",
        "compiler": args.compiler,
        "target": args.target,
        "compiler_identity": identity.record(),
        "code_object_bytes": size,
        "disk_entry_bytes": disk_file_bytes,
        "instances": args.instances,
        "recompile": {
            **rec,
            "recorded_compile_p50_s": statistics.median(recompile_recorded),
            "through": "isolated worker" if type(compiler).__name__ == "IsolatedCompiler" else "in-process",
        },
        "recompile_same_source": {**same_rec, "speedup_vs_recompile_p50": rec["p50_s"] / same_rec["p50_s"]},
        "memory_hit": {**mem, "speedup_vs_recompile_p50": rec["p50_s"] / mem["p50_s"]},
        "disk_hit": {**dsk, "speedup_vs_recompile_p50": rec["p50_s"] / dsk["p50_s"], "page_cache": "warm"},
        "distinct_compiles": {
            "runs": pool_runs,
            "serial_median_wall_s": statistics.median(serial),
            "pool2_median_wall_s": statistics.median(parallel),
            "speedup": statistics.median(serial) / statistics.median(parallel),
        },
        "goals": {
            "memory_hit_p50_le_20us": mem["p50_s"] <= 20e-6,
            "disk_hit_p50_le_1ms": dsk["p50_s"] <= 1e-3,
        },
        "team": team,
        "conditions": {
            "loadavg_before": list(load_before),
            "loadavg_after": list(load_after),
            "cpu_count": os.cpu_count(),
        },
        "provenance": collect(command=[Path(sys.executable).name, *sys.argv]),
    }


def _t(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def markdown(r: dict) -> str:
    p = r["provenance"]
    if r["benchmark"] == "compile-cache-team":
        return (
            team_markdown(r["team"]) + f"\nConditions: load average {r['conditions']['loadavg_before'][0]:.2f} before, "
            f"{r['conditions']['loadavg_after'][0]:.2f} after (1-min), {r['conditions']['cpu_count']} CPUs. CPU: {p.get('cpu', '?')}. "
            f"Compiler: {r['compiler_identity']['version']}. hipexplore {p.get('hipexplore')} at {p.get('git_revision')}, "
            f"{p.get('date')}, Python {p.get('python')}.\n\nCommand: `{p.get('command')}`\n"
        )
    rec, mem, dsk, dc = r["recompile"], r["memory_hit"], r["disk_hit"], r["distinct_compiles"]
    sr = r["recompile_same_source"]
    lines = [
        f"Code object: {r['code_object_bytes'] / 1000:.1f} kB ({r['compiler']} {r['target']}, {r['instances']} unrolled "
        f"template instances; disk entry {r['disk_entry_bytes'] / 1000:.1f} kB with header and checksum).",
        "",
        "| lookup | n | p50 | p99 | mean | fresh compile p50 / p50 |",
        "|---|---|---|---|---|---|",
        f"| memory hit | {mem['n']} | {_t(mem['p50_s'])} | {_t(mem['p99_s'])} | {_t(mem['mean_s'])} | {mem['speedup_vs_recompile_p50']:,.0f}× |",
        f"| disk hit (memory tier off, warm page cache) | {dsk['n']} | {_t(dsk['p50_s'])} | {_t(dsk['p99_s'])} | {_t(dsk['mean_s'])} | {dsk['speedup_vs_recompile_p50']:,.0f}× |",
        f"| real compile, fresh source ({rec['through']}) | {rec['n']} | {_t(rec['p50_s'])} | {_t(rec['p99_s'])} | {_t(rec['mean_s'])} | 1× |",
        f"| real recompile, same source (compiler's own caching) | {sr['n']} | {_t(sr['p50_s'])} | {_t(sr['p99_s'])} | {_t(sr['mean_s'])} | {sr['speedup_vs_recompile_p50']:,.1f}× |",
        "",
        f"Distinct compiles ({dc['runs'][0]['compiles']} per run, isolated worker pool, runs in order "
        + ", ".join(f"{x['workers']}w" for x in dc["runs"])
        + "):",
        "",
        "| workers | wall per run | median |",
        "|---|---|---|",
        f"| 1 (serial) | {', '.join(_t(x['wall_s']) for x in dc['runs'] if x['workers'] == 1)} | {_t(dc['serial_median_wall_s'])} |",
        f"| 2 | {', '.join(_t(x['wall_s']) for x in dc['runs'] if x['workers'] == 2)} | {_t(dc['pool2_median_wall_s'])} |",
        "",
        f"Pool speedup: {dc['speedup']:.2f}× on {r['conditions']['cpu_count']} CPUs. "
        f"Goals: memory hit p50 ≤ 20 µs: {'met' if r['goals']['memory_hit_p50_le_20us'] else 'NOT met'}; "
        f"disk hit p50 ≤ 1 ms: {'met' if r['goals']['disk_hit_p50_le_1ms'] else 'NOT met'}.",
        "",
        f"Conditions: load average {r['conditions']['loadavg_before'][0]:.2f} before, "
        f"{r['conditions']['loadavg_after'][0]:.2f} after (1-min). CPU: {p.get('cpu', '?')}. "
        f"Compiler: {r['compiler_identity']['version']}. hipexplore {p.get('hipexplore')} at {p.get('git_revision')}, "
        f"{p.get('date')}, Python {p.get('python')}.",
        "",
        f"Command: `{p.get('command')}`",
    ]
    if r.get("team"):
        lines += ["", team_markdown(r["team"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compiler", default="hiprtc", choices=sorted(EXT))
    ap.add_argument("--target", default="gfx90a")
    ap.add_argument("--instances", type=int, default=16, help="template instances (16 -> about 50 KB on gfx90a)")
    ap.add_argument("--lookups", type=int, default=20000, help="memory-hit samples")
    ap.add_argument("--disk-lookups", type=int, default=5000, help="disk-hit samples")
    ap.add_argument("--recompiles", type=int, default=7, help="compiles per baseline arm (fresh and same source)")
    ap.add_argument("--distinct", type=int, default=8, help="distinct compiles per pool run")
    ap.add_argument(
        "--out",
        default=None,
        help="output path without suffix (default benchmarks/results/cache_bench, "
        "or cache_bench_team with --team-only)",
    )
    ap.add_argument("--quick", action="store_true", help="few samples (smoke test)")
    ap.add_argument(
        "--team", action="store_true", help="also the team arms: remote hits (a local redis-server) and the lock's cost"
    )
    ap.add_argument("--team-only", action="store_true", help="only the team arms (short)")
    ap.add_argument("--remote-lookups", type=int, default=5000, help="remote-hit samples")
    ap.add_argument("--lock-samples", type=int, default=2000, help="uncontended key-lock samples")
    args = ap.parse_args(argv)
    args.repeats_abba = True
    if args.quick:
        args.lookups, args.disk_lookups, args.recompiles, args.distinct, args.repeats_abba = 500, 200, 2, 2, False
    result = run(args)
    out = Path(args.out or REPO / "benchmarks" / "results" / ("cache_bench_team" if args.team_only else "cache_bench"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
