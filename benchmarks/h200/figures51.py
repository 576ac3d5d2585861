#!/usr/bin/env python3
"""Issue 51, item 4: the GPU figures again, on a kernel written for it (not the triad, the stencil or
the polynomial the earlier figures used): ``hx_cmadd``, a complex multiply-add over interleaved
float2 (out = a * b + c: three inputs of 8 B per element, one output), and its variants doing
EXTRA per mille more elements (the grid-stride loop wraps around: that much more work, the same code
shape). ``scripts/h200_all.sh figures51`` runs it (540 s limit).

    PYTHONPATH=. python3 benchmarks/h200/figures51.py --out DIR --budget-s 500
    PYTHONPATH=. .venv/bin/python benchmarks/h200/figures51.py --out DIR --device host   (the host dry run)

Steps, each started only while its estimate fits what is left of the budget:
  cold      the cold fraction at 4 MiB x 2, 3, 4, 5 sets (flush none), from the kit's counter pass
            (CUPTI) and from Nsight Compute counting the same replayed launches (``--counters ncu``),
            one CLI command each (``hipexplore bench ... --counters X --json``)
  nvbench   parity: ``hipexplore bench`` at defaults with ``--flush l2-write`` against cuda-bench's cold
            mode on the same cubin, at 1, 4, 16, 64 and 256 MiB (nvbench in a fresh process)
  verdicts  two series of interleaved runs, taken in turns while the budget lasts (at most --runs each):
            ``small-change``: A, B, C (byte-identical copies) and S1 (+1%) at 16 and 256 MiB, flush
            l2-write, defaults; ``resolution``: A, B and S25 (+2.5%) at 1 MiB, l2-write, ``--resolution
            1%``; each run a CLI command as a reviewer runs it; then (``benchmarks/verdict_truth.py``'s
            analysis) the coverage of 1 by the intervals on identical code (copies within a run; one
            kernel over separate runs), S1 named slower at 16 and 256 MiB, S25 at 1 MiB
Cut to fit 9 minutes (said in the output): nvbench at five sizes but one process each side, the cold
fraction at one size, one flush for the verdicts, at most 10 runs per series (the issue's 9-of-10
counts; with fewer, the counts are over the runs made).

Writes DIR/figures51.json, DIR/summary.txt, DIR/runs/ (each run's parquet and log), DIR/cold/ (the
counted commands' JSON and their .counters folders), DIR/nvbench.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
MIB = 1 << 20

CMADD_CU = r"""
extern "C" __global__ void hx_cmadd(float2* __restrict__ out, const float2* __restrict__ a, const float2* __restrict__ b,
                                    const float2* __restrict__ c, unsigned long long m) {
  /* EXTRA per mille more elements than m, wrapping around: that much more work, the same code shape */
  unsigned long long total = m + (m * EXTRA) / 1000, stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    unsigned long long j = i < m ? i : i - m;
    float2 x = a[j], y = b[j], z = c[j];
    out[j] = make_float2(x.x * y.x - x.y * y.y + z.x, x.x * y.y + x.y * y.x + z.y);
  }
}
"""
CMADD_C = r"""
void hx_cmadd(float* restrict out, const float* restrict a, const float* restrict b, const float* restrict c,
              unsigned long long m) {
  unsigned long long total = m + (m * EXTRA) / 1000;
  for (unsigned long long i = 0; i < total; ++i) {
    unsigned long long j = 2 * (i < m ? i : i - m);
    out[j] = a[j] * b[j] - a[j + 1] * b[j + 1] + c[j];
    out[j + 1] = a[j] * b[j + 1] + a[j + 1] * b[j] + c[j + 1];
  }
}
"""
ARGS = "out:out:f32[n],in:a:f32[n],in:b:f32[n],in:c:f32[n],m:u64=n//2"
#: kernel name -> per mille more elements
VARIANTS = {"A": 0, "B": 0, "C": 0, "S1": 10, "S25": 25}


def write_sources(where: Path, host: bool) -> list[Path]:
    where.mkdir(parents=True, exist_ok=True)
    files = []
    for name, extra in VARIANTS.items():
        p = where / f"{name.lower()}.{'c' if host else 'cu'}"
        p.write_text(f"#define EXTRA {extra}ULL\n" + (CMADD_C if host else CMADD_CU))
        files.append(p)
    return files


def cli(args: list[str], log: Path, timeout: float) -> tuple[int, str, float]:
    """``python -m hipexplore ARGS``: (status, stdout, seconds); the command and its output in ``log``."""
    cmd = [sys.executable, "-m", "hipexplore", *args]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = 124, str(exc.stdout or ""), f"timed out after {timeout:g} s"
    log.write_text(shlex.join(cmd) + "\n" + out + "\n" + err)
    return rc, out, time.perf_counter() - t0


def step_cold(a, out: Path, files: list[Path], left: float) -> dict:
    """The cold fraction at 4 MiB x 2-5 sets, CUPTI then Nsight Compute, on the kit's replay of the same launches."""
    cold = out / "cold"
    cold.mkdir(exist_ok=True)
    res: dict = {}
    for backend in ("cupti", "ncu"):
        line = [
            "bench",
            "A",
            "--source",
            str(files[0]),
            "--entry",
            "hx_cmadd",
            "--args",
            ARGS,
            "--device",
            a.device,
            "--size",
            "4MiB",
            "--rotating",
            "2,3,4,5",
            "--flush",
            "none",
            "--iterations",
            "60",
            "--units",
            "1",
            "--counters",
            backend,
            "--json",
            "--no-progress",
            "--out",
            str(cold / f"{backend}.parquet"),
        ]
        rc, text, secs = cli(line, cold / f"{backend}.log", timeout=max(30.0, min(150.0, left / 2)))
        got: dict = {"rc": rc, "seconds": round(secs, 1)}
        if rc == 0:
            rows = json.loads(text)["summary"]
            got["rows"] = [
                {
                    k: r.get(k)
                    for k in (
                        "rotating_requested",
                        "rotating",
                        "median_s",
                        "cold_fraction",
                        "cache_state",
                        "dram_read_bytes",
                        "input_bytes",
                        "counter_backend",
                        "counter_note",
                    )
                }
                for r in rows
                if r["flush"] == "none"
            ]
        res[backend] = got
    return res


def nvbench_only(sizes_mib: list[float], out: Path) -> None:
    """In a fresh process: cuda-bench's cold medians and means of A's cubin (``nvbench_cold.py``'s method)."""
    from h200.nvbench_cold import nvbench_cold

    from hipexplore.devices import get_device
    from hipexplore.kernels.catalog import user_kernel

    spec = user_kernel(str(out.parent / "src" / "a.cu"), "hx_cmadd", ARGS, name="A", register_it=False)
    got = nvbench_cold(get_device("cuda"), [int(m * MIB) for m in sizes_mib], spec=spec, reads=3, writes=1)
    out.write_text(json.dumps({str(k): {"median": v["median_s"], "mean": v["mean_s"]} for k, v in got.items()}))


def step_nvbench(a, out: Path, files: list[Path], left: float) -> dict:
    sizes = [1, 4, 16, 64, 256]
    rc, text, secs = cli(
        [
            "bench",
            "A",
            "--source",
            str(files[0]),
            "--entry",
            "hx_cmadd",
            "--args",
            ARGS,
            "--device",
            a.device,
            "--size",
            ",".join(f"{s}MiB" for s in sizes),
            "--flush",
            "l2-write",
            "--json",
            "--no-progress",
            "--out",
            str(out / "parity.parquet"),
        ],
        out / "parity.log",
        timeout=max(30.0, left / 2),
    )
    res: dict = {"ours_rc": rc, "ours_seconds": round(secs, 1)}
    ours = (
        {int(r["size_bytes"]): float(r["median_s"]) for r in json.loads(text)["summary"] if r["flush"] == "l2-write"}
        if rc == 0
        else {}
    )
    t0 = time.perf_counter()
    nv = out / "nvbench.json"
    p = subprocess.run(
        [sys.executable, __file__, "--nvbench-only", str(nv), "--sizes-mib", *map(str, sizes)],
        capture_output=True,
        text=True,
        timeout=max(30.0, left / 2 - secs),
        cwd=ROOT,
    )
    (out / "nvbench.log").write_text(p.stdout + p.stderr)
    res["nvbench_rc"], res["nvbench_seconds"] = p.returncode, round(time.perf_counter() - t0, 1)
    theirs = json.loads(nv.read_text()) if p.returncode == 0 and nv.exists() else {}
    res["sizes"] = [
        {
            "mib": s,
            "ours_median_us": ours.get(s * MIB, math.nan) * 1e6,
            "nvbench_median_us": theirs.get(str(s * MIB), {}).get("median", math.nan) * 1e6,
            "nvbench_mean_us": theirs.get(str(s * MIB), {}).get("mean", math.nan) * 1e6,
        }
        for s in sizes
    ]
    for r in res["sizes"]:
        r["ours_over_nvbench_mean"] = (
            r["ours_median_us"] / r["nvbench_mean_us"] if r["nvbench_mean_us"] > 0 else math.nan
        )
        r["ours_over_nvbench_median"] = (
            r["ours_median_us"] / r["nvbench_median_us"] if r["nvbench_median_us"] > 0 else math.nan
        )
    return res


#: the two series of verdict runs, taken in turns: (name, kernels, GPU sizes, host sizes, extra flags)
SERIES = (
    ("small-change", ("A", "B", "C", "S1"), "16MiB,256MiB", "64KiB,256KiB", []),
    ("resolution", ("A", "B", "S25"), "1MiB", "64KiB", ["--resolution", "1%"]),
)


def step_verdicts(a, out: Path, files: list[Path], deadline: float) -> dict:
    """Interleaved runs of the two series in turns (each as a reviewer runs it: one CLI command), as
    many as the budget leaves, then verdict_truth.py's analysis per series and over both."""
    runs = out / "runs"
    runs.mkdir(exist_ok=True)
    source = dict(zip(VARIANTS, files))
    paths: dict[str, list[Path]] = {name: [] for name, *_ in SERIES}
    walls: dict[str, list[float]] = {name: [] for name, *_ in SERIES}
    for r in range(a.first_run, a.first_run + a.runs):
        for name, kernels, gpu_sizes, host_sizes, extra in SERIES:
            if walls[name] and time.monotonic() + 1.2 * max(walls[name]) > deadline:
                continue
            p = runs / f"{name}-{r:02d}.parquet"
            line = [
                "bench",
                ",".join(kernels),
                *sum((["--source", str(source[k])] for k in kernels), []),
                "--entry",
                "hx_cmadd",
                "--args",
                ARGS,
                "--device",
                a.device,
                "--size",
                host_sizes if a.device == "host" else gpu_sizes,
                "--flush",
                "l2-write",
                "--interleave",
                "--seed",
                str(r),
                *extra,
                "--out",
                str(p),
                "--no-progress",
                "--no-resume",
            ]
            rc, _text, secs = cli(line, runs / f"{name}-{r:02d}.log", timeout=max(30.0, deadline - time.monotonic()))
            if rc != 0:
                print(f"   {name} run {r}: rc {rc} (see runs/{name}-{r:02d}.log)", flush=True)
                continue
            paths[name].append(p)
            walls[name].append(round(secs, 1))
            print(f"   {name} run {r}: {secs:.1f} s", flush=True)
    res = analyze(paths)
    res["wall_s"] = walls
    res["run_files"] = {k: [q.name for q in v] for k, v in paths.items()}  # the finished runs, for --analyze
    return res


def analyze(paths: dict[str, list[Path]]) -> dict:
    """verdict_truth.py's analysis of each series' runs and over both (``--analyze`` runs it on the runs of
    several calls together: a device call fits about ten runs of each series)."""
    import pandas as pd
    import verdict_truth as vt

    res: dict = {"runs": {k: len(v) for k, v in paths.items()}, "power": [], "series": {}}
    frames = []
    for name, kernels, *_ in SERIES:
        if not paths.get(name):
            continue
        rows = vt.comparisons(paths[name], list(kernels)).assign(series=name)
        frames.append(rows)
        res["series"][name] = {"coverage": vt.coverage(rows)}
        both = rows[(rows["present"] == "both") & (rows["flush"] != "cold-reference")]
        for (kind, size), g in both.groupby(["kind", "size_bytes"]):
            res["power"].append(
                {
                    "series": name,
                    "kind": kind,
                    "size_mib": int(size) / MIB,
                    "rows": int(len(g)),
                    "slower": int((g["verdict"] == "slower").sum()),
                    "faster": int((g["verdict"] == "faster").sum()),
                    "named_slower": int((g["change_called"] == "slower").sum()) if "change_called" in g else None,
                    "median_ratio": round(float(g["ratio"].median()), 4),
                    "median_half_width": round(float(g["half_width"].median()), 4),
                }
            )
    if frames:
        rows = pd.concat(frames, ignore_index=True)
        res["coverage"] = vt.coverage(rows)
        res["rows"] = rows
    return res


def summary_lines(res: dict) -> list[str]:
    lines = [f"device {res.get('device')} revision {res.get('revision')} elapsed {res.get('elapsed_s')} s"]
    for backend, got in (res.get("cold") or {}).items():
        if isinstance(got, dict):
            fr = ", ".join(
                f"{r['rotating_requested']} sets {r['cold_fraction'] if r['cold_fraction'] is None else round(r['cold_fraction'], 2)}"
                for r in got.get("rows", [])
            )
            lines.append(f"cold fraction, 4 MiB, {backend} (rc {got.get('rc')}, {got.get('seconds')} s): {fr}")
    for r in (res.get("nvbench") or {}).get("sizes", []):
        lines.append(
            f"nvbench parity {r['mib']:>3} MiB: ours {r['ours_median_us']:.2f} us, nvbench median "
            f"{r['nvbench_median_us']:.2f} mean {r['nvbench_mean_us']:.2f} us: ratio to the mean "
            f"{r['ours_over_nvbench_mean']:.3f}"
        )
    v = res.get("verdicts") or {}
    for kind, c in (v.get("coverage") or {}).items():
        lines.append(f"coverage, both series, {kind}: {c['coverage']:.1%} of {c['rows']} rows")
    for p in v.get("power", []):
        if p["kind"] not in ("identical copy", "separate runs"):
            lines.append(
                f"{p['series']}: {p['kind']} at {p['size_mib']:g} MiB: slower {p['slower']}/{p['rows']} (named slower "
                f"{p['named_slower']}), ratio {p['median_ratio']} +-{p['median_half_width']}"
            )
        elif p["faster"] or p["slower"]:
            lines.append(
                f"{p['series']}: FALSE VERDICTS {p['kind']} at {p['size_mib']:g} MiB: faster {p['faster']}, slower {p['slower']}"
            )
    if v:
        lines.append(
            f"verdict runs per series: {v.get('runs')} (10 asked; fewer: cut to the budget)"
            + (f"; ERROR {v['error']}" if v.get("error") else "")
        )
    return lines


def analyze_folders(folders: list[Path], out: Path) -> int:
    """The verdict figures over the runs of several calls (each folder an earlier ``--out``)."""
    paths: dict[str, list[Path]] = {name: [] for name, *_ in SERIES}
    for d in folders:  # the runs each call finished (a run cut by its time limit leaves files too)
        done = json.loads((d / "figures51.json").read_text()).get("verdicts", {}).get("run_files", {})
        for name in paths:
            paths[name] += [d / "runs" / f for f in done.get(name, [])]
    res = {"verdicts": analyze(paths), "folders": [str(d) for d in folders]}
    out.mkdir(parents=True, exist_ok=True)
    rows = res["verdicts"].pop("rows", None)
    if rows is not None:
        rows.to_parquet(out / "rows.parquet")
    (out / "figures51-analysis.json").write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(summary_lines(res)))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--device", default="cuda", choices=["cuda", "host"])
    ap.add_argument("--budget-s", type=float, default=500.0)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--steps", default="cold,nvbench,verdicts")
    ap.add_argument("--first-run", type=int, default=0, help="number (and seed) of the first verdict run")
    ap.add_argument("--analyze", nargs="+", metavar="DIR", help="the verdict analysis over these --out folders' runs")
    ap.add_argument("--nvbench-only", metavar="JSON", help=argparse.SUPPRESS)
    ap.add_argument("--sizes-mib", type=float, nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.nvbench_only:
        nvbench_only(a.sizes_mib or [1], Path(a.nvbench_only))
        return 0
    if a.analyze:
        return analyze_folders([Path(d) for d in a.analyze], Path(a.out or "."))
    steps = [s for s in a.steps.split(",") if s]
    if not a.out or a.budget_s <= 0 or a.runs < 1 or set(steps) - {"cold", "nvbench", "verdicts"}:
        print(
            f"figures51.py: error: need --out, a positive --budget-s and --runs, --steps of cold,nvbench,verdicts "
            f"(got {a.out!r}, {a.budget_s}, {a.runs}, {a.steps!r})",
            file=sys.stderr,
        )
        return 2
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    host = a.device == "host"
    if host:
        os.environ.setdefault("HIPEXPLORE_LLC_BYTES", str(MIB))
    files = write_sources(out / "src", host)
    t0 = time.monotonic()
    deadline = t0 + a.budget_s
    from hipexplore.provenance import git_revision

    res: dict = {
        "device": a.device,
        "revision": git_revision(),
        "budget_s": a.budget_s,
        "kernel": "hx_cmadd",
        "variants": VARIANTS,
    }
    plan = [("cold", 80, step_cold), ("nvbench", 60, step_nvbench)]
    for name, estimate, fn in plan:
        if name not in steps or (host and name in ("cold", "nvbench")):
            continue
        left = deadline - time.monotonic()
        if left < estimate:
            res[name] = {"skipped": f"{left:.0f} s left"}
            continue
        print(f"== {name}", flush=True)
        try:
            res[name] = fn(a, out, files, left)
        except Exception as exc:  # noqa: BLE001 - recorded, the next step runs
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
    if "verdicts" in steps:
        print("== verdicts", flush=True)
        try:
            res["verdicts"] = step_verdicts(a, out, files, deadline)
        except Exception as exc:  # noqa: BLE001
            res["verdicts"] = {"error": f"{type(exc).__name__}: {exc}"}
        rows = res["verdicts"].pop("rows", None)
        if rows is not None:
            rows.to_parquet(out / "rows.parquet")
    res["elapsed_s"] = round(time.monotonic() - t0, 1)
    (out / "figures51.json").write_text(json.dumps(res, indent=1, default=str))
    lines = summary_lines(res)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
