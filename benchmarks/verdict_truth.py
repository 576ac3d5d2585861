"""False verdicts and power at default settings, through the real CLI (issue #23's done-when).

A reviewer's A/B, run as a reviewer would run it, many times:

    hipexplore bench A,B,S5,S3 --source a.cu --source b.cu --source s5.cu --source s3.cu \
        --entry hx_stream --args ... --size 1MiB,16MiB,256MiB --flush none,l2-write --interleave --out run.parquet

* ``B`` is a byte-identical copy of ``A`` (same text, same entry, another kernel name): every
  ``faster``/``slower`` of ``compare(run, base=A, new=B)`` is a false verdict.
* Separate runs of one kernel: ``A`` of run i against ``A`` of run i+1 (``compare(run_i, run_j)``
  on the samples of ``A`` alone): every ``faster``/``slower`` is false.
* ``S5`` / ``S3`` do the same work over 5% / 3% more elements (the grid-stride loop wraps around):
  what they cost is read off a many-process reference, all units of all runs pooled (each unit its
  own process and placement), and ``slower`` should be called where they are.
* On the host (``--device host``) the kernels are C: ``B`` the identical copy, ``W4`` four times the
  work (the done-when's 4x kernel); ``--busy`` keeps a background process spinning on one core.
* ``--baseline DIR``: an older checkout's default is timed beside this one's, alternating, on the
  catalog triad over the same configurations (the 1.5x wall-time bound).

Writes DIR/verdict_truth.json (counts, coverage of 1 on identical code, per-configuration power,
wall times, versions) and
DIR/rows.parquet (one row per comparison row), prints a short table last.
Usage: PYTHONPATH=. python3 benchmarks/verdict_truth.py --device cuda --runs 17 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

# the kernels (their texts are hipexplore calibrate's: the same A/A measurement, as one command)
from hipexplore.calibrate import GPU_ARGS, HOST_ARGS, STREAM_CU, WORK_C  # noqa: E402


def parse_variants(text: str) -> dict[str, int]:
    """``--variants``: "S5=5,S3=3" -> {"S5": 5, "S3": 3} (name = percent more elements)."""
    out = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        name, _, pct = part.partition("=")
        if not name or not pct.isdigit() or name in ("A", "B", "C"):
            raise SystemExit(f"--variants: expected NAME=PERCENT pairs such as S5=5,S1=1, got {part!r}")
        out[name] = int(pct)
    return out


def sources(device: str, where: Path, variants: dict[str, int] | None = None) -> tuple[list[str], list[Path], str, str]:
    """(kernel names, their source files, entry, args) for the device; ``variants``: the GPU's
    changed kernels (name -> percent more elements; default S5 and S3)."""
    where.mkdir(parents=True, exist_ok=True)
    if device == "host":
        kernels = {"A": 1, "B": 1, "C": 1, "W4": 4}
        files = []
        for name, reps in kernels.items():
            p = where / f"{name.lower()}.c"
            p.write_text(f"#define REPS {reps}\n" + WORK_C)
            files.append(p)
        return list(kernels), files, "hx_work", HOST_ARGS
    kernels = {"A": 0, "B": 0, "C": 0, **(variants if variants is not None else {"S5": 5, "S3": 3})}
    files = []
    for name, extra in kernels.items():
        p = where / f"{name.lower()}.cu"
        p.write_text(f"#define EXTRA {extra}ULL\n" + STREAM_CU)
        files.append(p)
    return list(kernels), files, "hx_stream", GPU_ARGS


def hx(pythonpath: str | None = None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return [sys.executable, "-m", "hipexplore"], env


def run_bench(
    args: argparse.Namespace, kernels: list[str], files: list[Path], entry: str, spec: str, out: Path, seed: int
) -> float:
    cmd, env = hx()
    line = [
        *cmd,
        "bench",
        ",".join(kernels),
        *sum((["--source", str(f)] for f in files), []),
        "--entry",
        entry,
        "--args",
        spec,
        "--device",
        args.device,
        "--size",
        args.sizes,
        "--flush",
        args.flush,
        "--interleave",
        "--seed",
        str(seed),
        "--out",
        str(out),
        "--no-progress",
        "--no-resume",
        *shlex.split(args.bench_extra),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(line, env=env, capture_output=True, text=True, timeout=args.run_timeout)
    wall = time.perf_counter() - t0
    (out.parent / f"{out.stem}.log").write_text(" ".join(line) + "\n" + done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"bench failed (rc {done.returncode}): {done.stderr.strip()[-2000:]}")
    return wall


def baseline_walls(args: argparse.Namespace, reps: int) -> list[dict]:
    """The catalog triad over the same configurations at each version's defaults, alternating."""
    rows = []
    for r in range(reps):
        for label, path in (("baseline", args.baseline), ("this", None)):
            cmd, env = hx(path)
            line = [
                *cmd,
                "bench",
                "triad",
                "--device",
                args.device,
                "--size",
                args.sizes,
                "--flush",
                args.flush,
                "--no-progress",
            ]
            t0 = time.perf_counter()
            done = subprocess.run(
                line, env=env, capture_output=True, text=True, timeout=args.run_timeout, cwd=path or None
            )
            rows.append(
                {
                    "version": label,
                    "rep": r,
                    "wall_s": time.perf_counter() - t0,
                    "rc": done.returncode,
                    "tail": (done.stdout + done.stderr)[-400:],
                }
            )
            print(f"wall {label} rep {r}: {rows[-1]['wall_s']:.1f} s (rc {done.returncode})", flush=True)
    return rows


def comparisons(paths: list[Path], kernels: list[str]):
    import pandas as pd

    import hipexplore

    rows = []
    base = kernels[0]
    copies = [k for k in kernels if k in ("A", "B", "C")]
    for i, p in enumerate(paths):
        for a in range(len(copies)):
            for b in range(a + 1, len(copies)):
                c = hipexplore.compare(str(p), base=copies[a], new=copies[b])
                rows.append(c.assign(kind="identical copy", run=i))
        for new in kernels:
            if new not in copies:
                c = hipexplore.compare(str(p), base=base, new=new)
                rows.append(c.assign(kind=f"{new} vs {base}", run=i))
    for i in range(len(paths) - 1):
        for k in copies:  # separate runs of one kernel (A, and its copies)
            s1 = pd.read_parquet(paths[i])
            s2 = pd.read_parquet(paths[i + 1])
            c = hipexplore.compare(s1[s1["kernel"] == k], s2[s2["kernel"] == k])
            rows.append(c.assign(kind="separate runs", run=i, base_kernel=k, new_kernel=k))
    return pd.concat(rows, ignore_index=True)


def reference(paths: list[Path], kernels: list[str]):
    """Per configuration and kernel: the median over every unit of every run (each unit its own
    process) of the unit's median over the base kernel's in the same unit."""
    import numpy as np
    import pandas as pd

    frames = []
    for i, p in enumerate(paths):
        s = pd.read_parquet(p)
        s = s[(s["flush"] != "cold-reference") & ~s.get("dropped", pd.Series(False, index=s.index)).astype(bool)]
        g = (
            s.groupby(["kernel", "size_bytes", "flush", "pass_index"])["time_s"]
            .median()
            .rename("unit_median")
            .reset_index()
        )
        frames.append(g.assign(run=i))
    u = pd.concat(frames)
    base = u[u["kernel"] == kernels[0]].rename(columns={"unit_median": "base"}).drop(columns="kernel")
    m = u.merge(base, on=["size_bytes", "flush", "pass_index", "run"])
    m["log_ratio"] = np.log(m["unit_median"] / m["base"])
    out = (
        m.groupby(["kernel", "size_bytes", "flush"])
        .agg(units=("log_ratio", "size"), ratio=("log_ratio", "mean"), sd=("log_ratio", "std"))
        .reset_index()
    )
    out["ratio"] = np.exp(out["ratio"])
    return out


def coverage(rows) -> dict:
    """Per kind of identical-code rows (identical copies, separate runs): how many rows, and the
    fraction whose decision interval (``ratio_ci_low``..``ratio_ci_high``: the wider of the unit and
    the chunk interval) contains 1 -- at a nominal 95% (99% for separate runs) about that fraction
    should; far above it, the intervals are wider than the variation they describe. The unit and
    the chunk interval are counted on their own too (which of them is too wide), and the rows whose
    measured change is named (``change_called``, the interval excluding 1)."""
    import numpy as np

    out = {}
    both = rows[rows["present"] == "both"]
    cold = both["flush"] == "cold-reference"
    # the interleaved copies are decided at 95%; their cold references (not interleaved) and separate
    # runs at 99% (verdicts.SEPARATE_RUNS_LEVEL): each level's coverage on its own, and all together
    groups = {
        "identical copy": both["kind"] == "identical copy",
        "identical copy, interleaved (95%)": (both["kind"] == "identical copy") & ~cold,
        "identical copy, cold references (99%)": (both["kind"] == "identical copy") & cold,
        "separate runs": both["kind"] == "separate runs",
    }
    for kind, pick in groups.items():
        g = both[pick]
        lo, hi = g["ratio_ci_low"].to_numpy(float), g["ratio_ci_high"].to_numpy(float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        if not ok.any():
            continue

        def covers(a: str, b: str) -> float:
            x, y = g[a].to_numpy(float)[ok], g[b].to_numpy(float)[ok]
            return float(np.mean((x <= 1) & (1 <= y)))

        rel = (hi[ok] - lo[ok]) / 2
        out[kind] = {
            "rows": int(ok.sum()),
            "coverage": covers("ratio_ci_low", "ratio_ci_high"),
            "unit_coverage": covers("unit_ci_low", "unit_ci_high"),
            "chunk_coverage": covers("chunk_ci_low", "chunk_ci_high"),
            "unit_wider": float(
                np.mean(
                    (g["unit_ci_high"] - g["unit_ci_low"]).to_numpy(float)[ok]
                    >= (g["chunk_ci_high"] - g["chunk_ci_low"]).to_numpy(float)[ok]
                )
            ),
            "median_half_width": float(np.median(rel)),
            "change_called": int(g["change_called"].isin(("faster", "slower")).sum())
            if "change_called" in g.columns
            else None,
            "min_low_bound": float(np.nanmin(lo[ok])),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--runs", type=int, default=17)
    ap.add_argument("--sizes", default="1MiB,16MiB,256MiB")
    ap.add_argument("--flush", default="none,l2-write")
    ap.add_argument(
        "--bench-extra", default="", help="more flags for each run's bench command, e.g. '--resolution 1%%'"
    )
    ap.add_argument(
        "--variants",
        default="S5=5,S3=3",
        help="the GPU's changed kernels, NAME=PERCENT more elements each (e.g. S1=1 for a +1%% change)",
    )
    ap.add_argument("--busy", action="store_true", help="keep one core busy with a background process")
    ap.add_argument("--baseline", default=None, help="an older checkout: time its default beside this one's")
    ap.add_argument("--baseline-reps", type=int, default=2)
    ap.add_argument("--run-timeout", type=float, default=400)
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no new run after this many seconds")
    ap.add_argument("--start", type=int, default=0, help="index of the first run (a later call goes on numbering)")
    ap.add_argument(
        "--analyze",
        nargs="*",
        default=None,
        metavar="DIR",
        help="measure nothing: analyse the run*.parquet files of these folders together",
    )
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kernels, files, entry, spec = sources(args.device, out / "src", parse_variants(args.variants))
    if args.analyze is not None:
        paths = sorted(
            p
            for d in args.analyze
            for p in Path(d).glob("run*.parquet")
            if not p.name.endswith((".summary.parquet", ".units.parquet"))
        )
        walls = [
            float(w)
            for d in args.analyze
            if (Path(d) / "walls.json").exists()
            for w in json.loads((Path(d) / "walls.json").read_text())
        ]
        base_rows = [
            b
            for d in args.analyze
            if (Path(d) / "baseline.json").exists()
            for b in json.loads((Path(d) / "baseline.json").read_text())
        ]
        return report(args, out, kernels, paths, walls, base_rows)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    t_start = time.perf_counter()
    walls, paths = [], []
    try:
        if args.baseline:
            base_rows = baseline_walls(args, args.baseline_reps)
        else:
            base_rows = []
        (out / "baseline.json").write_text(json.dumps(base_rows))
        for r in range(args.start, args.start + args.runs):
            if time.perf_counter() - t_start > args.budget_s:
                print(f"budget reached after {r - args.start} runs", flush=True)
                break
            p = out / f"run{r:02d}.parquet"
            walls.append(run_bench(args, kernels, files, entry, spec, p, seed=r))
            (out / "walls.json").write_text(json.dumps(walls))
            paths.append(p)
            print(f"run {r}: {walls[-1]:.1f} s", flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    report(args, out, kernels, paths, walls, base_rows)


def report(
    args: argparse.Namespace,
    out: Path,
    kernels: list[str],
    paths: list[Path],
    walls: list[float],
    base_rows: list[dict],
) -> None:
    if not paths:  # --runs 0: the wall-time baseline alone
        from hipexplore.provenance import collect

        meta = collect(compilers=False)
        (out / "verdict_truth.json").write_text(
            json.dumps(
                {
                    "device": args.device,
                    "runs": 0,
                    "sizes": args.sizes,
                    "flush": args.flush,
                    "busy": args.busy,
                    "baseline_walls": base_rows,
                    "git_revision": meta.get("git_revision"),
                    "provenance": {k: str(v) for k, v in meta.items()},
                },
                indent=1,
                default=str,
            )
        )
        for b in base_rows:
            print(f"  baseline timing: {b['version']} rep {b['rep']}: {b['wall_s']:.1f} s rc {b['rc']}")
        return
    rows = comparisons(paths, kernels)
    rows.to_parquet(out / "rows.parquet")
    ref = reference(paths, kernels)
    ref.to_parquet(out / "reference.parquet")
    import hipexplore
    from hipexplore.provenance import collect

    counts = {}
    for kind, g in rows[rows["present"] == "both"].groupby("kind"):
        counts[kind] = {
            "rows": int(len(g)),
            **{v: int((g["verdict"] == v).sum()) for v in ("faster", "slower", "same", "undecided")},
        }
    power = []
    for (kind, size, flush), g in rows[rows["present"] == "both"].groupby(["kind", "size_bytes", "flush"]):
        power.append(
            {
                "kind": kind,
                "size_bytes": int(size),
                "flush": flush,
                "rows": int(len(g)),
                "slower": int((g["verdict"] == "slower").sum()),
                "faster": int((g["verdict"] == "faster").sum()),
                "named_slower": int((g["change_called"] == "slower").sum()) if "change_called" in g else None,
                "named_faster": int((g["change_called"] == "faster").sum()) if "change_called" in g else None,
                "median_ratio": float(g["ratio"].median()),
                "median_half_width": float(g["half_width"].median()),
                "units": int(g["new_units"].min()) if "new_units" in g else None,
            }
        )
    meta = collect(compilers=False)
    summary = {
        "device": args.device,
        "runs": len(paths),
        "kernels": kernels,
        "sizes": args.sizes,
        "flush": args.flush,
        "bench_extra": getattr(args, "bench_extra", ""),
        "busy": args.busy,
        "wall_s": walls,
        "wall_median_s": float(sorted(walls)[len(walls) // 2]) if walls else None,
        "baseline_walls": base_rows,
        "counts": counts,
        "power": power,
        "coverage": coverage(rows),
        "reference": ref.to_dict("records"),
        "hipexplore": hipexplore.__version__,
        "git_revision": meta.get("git_revision"),
        "provenance": {k: str(v) for k, v in meta.items()},
    }
    (out / "verdict_truth.json").write_text(json.dumps(summary, indent=1, default=str))
    print("\nreference (all units pooled):")
    for r in ref.to_dict("records"):
        print(
            f"  {r['kernel']:>3} {r['size_bytes'] >> 20:>4} MiB {r['flush']:<9} ratio {r['ratio']:.4f} sd {r['sd']:.4f} units {r['units']}"
        )
    print("\nverdict counts:")
    for kind, c in counts.items():
        print(f"  {kind:<16} {c}")
    print("\ncoverage of 1 by the decision interval on identical code (unit / chunk interval alone):")
    for kind, c in summary["coverage"].items():
        print(
            f"  {kind:<16} {c['coverage']:.1%} of {c['rows']} rows ({c['unit_coverage']:.1%} / {c['chunk_coverage']:.1%}; "
            f"unit interval the wider in {c['unit_wider']:.0%}); median half-width {c['median_half_width']:.2%}; "
            f"change named in {c['change_called']}"
        )
    print("\npower / false calls by configuration:")
    for p in power:
        print(
            f"  {p['kind']:<16} {p['size_bytes'] >> 20:>4} MiB {p['flush']:<9} slower {p['slower']}/{p['rows']} "
            f"faster {p['faster']} ratio {p['median_ratio']:.4f} +-{p['median_half_width']:.2%} units {p['units']}"
        )
    if walls:
        print(f"\nwall per run: median {summary['wall_median_s']:.1f} s over {len(walls)} runs")
    for b in base_rows:
        print(f"  baseline timing: {b['version']} rep {b['rep']}: {b['wall_s']:.1f} s rc {b['rc']}")


if __name__ == "__main__":
    main()
