#!/usr/bin/env python3
"""H200: the counter pass of issue 35 through the CLI (``hipexplore bench ... --counters --json``).

Everything runs the way a user runs it: each group below is one ``python3 -m hipexplore bench``
command with ``--counters --json --out``: the sweep's timed units, then its counting units under
Nsight Compute (the trials' own launches replayed inside the profiler's range; the raw ncu output
and manifests kept in ``<out>.counters/``). Groups: the triad table of the issue (1 MiB with
rotating 1, 2, 5, 10, 20, auto and no flush; 1 MiB, 1 set, l2-write; 4 MiB with 2, 3, 5, auto;
16 MiB with 1), and two user kernels from ``--source`` files (a 2-D stencil and a reduction,
benchmarks/h200/*.cu) at 1 MiB with rotating 1, 5, auto x flush none, l2-write.

The cost and "timings don't move": the same command without ``--counters`` is run too (group by
group while the budget lasts); the extra wall time of the counted run over the plain one is the
pass's cost as a user sees it, and ``counters.wall_s`` from the metadata the pass alone (its ratio
to the rest of the counted command's wall time does not depend on two sweeps' adaptive lengths),
and ``hipexplore compare PLAIN COUNTED --json`` must say ``same`` or ``undecided`` on every row,
never ``faster``/``slower``. Then the GPU-marked counter tests, if time is left.

    PYTHONPATH=. python3 benchmarks/h200/counters.py --out /tmp/hx-h200/counters/out --budget-s 420
Writes under --out: env/ (ncu version, nvidia-smi), runs/<group>-{counted,plain}.{log,parquet,...}
(with <group>-counted.counters/: ncu.log + manifests, what tests can parse), compare/<group>.json,
summary.json (per configuration: cold fraction, state, promise, median with and without counters,
the compare verdict; per group the wall times), summary.txt (the table printed at the end),
gpu_tests.log. Every step's error is recorded in summary.json and never stops the others.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STENCIL = [
    "--source",
    str(HERE / "stencil2d.cu"),
    "--entry",
    "stencil2d",
    "--grid",
    "ceil(cols/block_x),ceil(rows/block_y)",
    "--block",
    "32,8",
    "--args",
    "out:next:f32[rows*cols],in:grid:f32[rows*cols],rows:i32=n//1024,cols:i32=1024",
]
REDUCE = [
    "--source",
    str(HERE / "reduce_sum.cu"),
    "--entry",
    "reduce_sum",
    "--block",
    "256",
    "--args",
    "in:x:f32[n],inout:total:f32[1],n:u64=n",
]
#: (name, kernel, extra CLI arguments, size, rotating, flush), most important first
GROUPS = [
    ("triad-1MiB", "triad", [], "1MiB", "1,2,5,10,20,auto", "none"),
    ("triad-1MiB-l2write", "triad", [], "1MiB", "1", "l2-write"),
    ("stencil2d-1MiB", "stencil2d", STENCIL, "1MiB", "1,5,auto", "none,l2-write"),
    ("reduce_sum-1MiB", "reduce_sum", REDUCE, "1MiB", "1,5,auto", "none,l2-write"),
    ("triad-4MiB", "triad", [], "4MiB", "2,3,5,auto", "none"),
    ("triad-16MiB", "triad", [], "16MiB", "1", "none"),
]
#: seconds a counted group is given at most (sweep + counting units), and a plain one
COUNTED_TIMEOUT_S, PLAIN_TIMEOUT_S = 150, 100
#: a step starts only if this much of the budget is left (a counted group took ~20-40 s in the plan)
RESERVE_S = 45


def sh(cmd: list[str], timeout: float) -> tuple[int, str, str, float]:
    """(status, stdout, stderr, seconds) of a command; a timeout is status 124 and a missing program
    127, never an exception."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as exc:
        text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa: E731
        return 124, text(exc.stdout), text(exc.stderr) + f"\n(timed out after {timeout:g} s)", time.perf_counter() - t0
    except OSError as exc:
        return 127, "", f"{cmd[0]}: {exc}", time.perf_counter() - t0


def environment(out: Path) -> dict:
    """ncu's path and version, nvidia-smi (what the pass will find)."""
    env = out / "env"
    env.mkdir(parents=True, exist_ok=True)
    info: dict = {}
    try:
        from hipexplore.bench.counters.backends import find_tool
        from hipexplore.bench.counters.ncu import NCU_PLACES, ncu_version

        ncu = find_tool(None, "ncu", NCU_PLACES)
        info = {"ncu": ncu or "", "version": ncu_version(ncu) if ncu else ""}
    except Exception as exc:  # recorded, never the end of the run
        info = {"error": f"{type(exc).__name__}: {exc}"}
    rc, so, se, _ = sh(["nvidia-smi"], 30)
    (env / "nvidia-smi.txt").write_text(so + se)
    (env / "env.json").write_text(json.dumps(info, indent=1))
    return info


#: the device the runs measure on (``--device``: ``host`` for a dry run of this script's own logic)
DEVICE = ["cuda"]
#: the counter backend named on the command line (empty: --counters alone, the device's)
BACKEND: list[str] = []


def bench_command(group: tuple, out: Path, counted: bool) -> list[str]:
    name, kernel, extra, size, rot, flush = group
    path = out / "runs" / f"{name}-{'counted' if counted else 'plain'}.parquet"
    return [
        sys.executable,
        "-m",
        "hipexplore",
        "bench",
        kernel,
        *extra,
        "--device",
        DEVICE[0],
        "--size",
        size,
        "--rotating",
        rot,
        "--flush",
        flush,
        "--no-progress",
        "--json",
        "--out",
        str(path),
        "--no-resume",
        *(["--counters", *BACKEND] if counted else []),
    ]


def run_bench(group: tuple, out: Path, counted: bool, left_s: float) -> dict:
    """One CLI run of a group (given at most its timeout, and never past the budget: ``left_s``):
    its status, wall time, summary rows and counter metadata."""
    cmd = bench_command(group, out, counted)
    rc, so, se, secs = sh(cmd, max(20.0, min(COUNTED_TIMEOUT_S if counted else PLAIN_TIMEOUT_S, left_s)))
    stem = Path(cmd[cmd.index("--out") + 1]).with_suffix("")
    stem.parent.mkdir(parents=True, exist_ok=True)
    Path(f"{stem}.log").write_text(f"$ {' '.join(cmd)}\n(rc={rc}, {secs:.1f} s)\n--- stdout\n{so}\n--- stderr\n{se}")
    got = {"command": cmd, "rc": rc, "wall_s": secs, "stderr_tail": se[-1500:], "parquet": f"{stem}.parquet"}
    try:
        doc = json.loads(so.strip().splitlines()[-1])
        got.update(summary=doc["summary"], counters=doc.get("counters", ""))
    except (ValueError, IndexError, KeyError) as exc:
        got["error"] = f"no JSON summary ({type(exc).__name__}: {exc})"
    try:
        meta = json.loads(Path(f"{stem}.meta.json").read_text())
        got["counters_wall_s"] = float(meta.get("counters.wall_s", "nan"))
        got["counters_status"] = meta.get("counters.status", "")
    except (OSError, ValueError) as exc:
        got.setdefault("error", f"no meta.json ({type(exc).__name__}: {exc})")
    return got


def compare(group: tuple, out: Path, plain: dict, counted: dict) -> dict:
    """``hipexplore compare PLAIN COUNTED --json``: the verdict per configuration."""
    cmd = [sys.executable, "-m", "hipexplore", "compare", plain["parquet"], counted["parquet"], "--json"]
    rc, so, se, secs = sh(cmd, 90)
    (out / "compare").mkdir(exist_ok=True)
    (out / "compare" / f"{group[0]}.json").write_text(f"$ {' '.join(cmd)}\n(rc={rc}, {secs:.1f} s)\n{so}\n{se}")
    try:
        rows = json.loads(so)["rows"]
    except (ValueError, KeyError) as exc:
        return {"rc": rc, "error": f"{type(exc).__name__}: {exc}: {se[-800:]}"}
    verdicts = {f"{r['rotating_requested']}/{r['flush']}/{r.get('timer', 'events')}": r["verdict"] for r in rows}
    moved = {k: v for k, v in verdicts.items() if v in ("faster", "slower")}
    return {"rc": rc, "verdicts": verdicts, "moved": moved}


def group_result(group: tuple, out: Path, start: float, budget: float, with_plain: bool) -> dict:
    """A group counted, then (``with_plain``, budget permitting) plain and compared; errors recorded."""
    res: dict = {"name": group[0]}
    left = lambda: budget - (time.perf_counter() - start)  # noqa: E731
    for step, fn in (
        ("counted", lambda: run_bench(group, out, True, left())),
        ("plain", lambda: run_bench(group, out, False, left()) if with_plain else None),
    ):
        if left() < RESERVE_S:
            res[f"{step}_skipped"] = f"budget: {time.perf_counter() - start:.0f} s of {budget:g} s used"
            continue
        try:
            got = fn()
            if got is not None:
                res[step] = got
        except Exception as exc:  # recorded; the next step and group go on
            res[f"{step}_error"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}"
    if res.get("counted", {}).get("rc") == 0 and res.get("plain", {}).get("rc") == 0:
        try:
            res["compare"] = compare(group, out, res["plain"], res["counted"])
            extra = res["counted"]["wall_s"] - res["plain"]["wall_s"]
            pass_s = res["counted"].get("counters_wall_s", math.nan)
            timed_s = res["counted"]["wall_s"] - pass_s  # the counted command's own sweep, without its pass
            res["cost"] = {
                "plain_s": res["plain"]["wall_s"],
                "counted_s": res["counted"]["wall_s"],
                "extra_s": extra,
                "extra_ratio": extra / res["plain"]["wall_s"] if res["plain"]["wall_s"] > 0 else math.nan,
                "pass_s": pass_s,
                "pass_ratio": pass_s / timed_s if timed_s > 0 else math.nan,
            }
        except Exception as exc:
            res["compare_error"] = f"{type(exc).__name__}: {exc}"
    return res


def rows_of(results: list[dict]) -> list[dict]:
    """One row per counted configuration (events timer): counters beside both medians and the verdict."""
    out = []
    for g in results:
        plain = {
            (r["rotating_requested"], r["flush"]): r
            for r in g.get("plain", {}).get("summary", [])
            if r.get("timer", "events") == "events"
        }
        verdicts = g.get("compare", {}).get("verdicts", {})
        for r in g.get("counted", {}).get("summary", []):
            if r.get("timer", "events") != "events" or r["flush"] == "cold-reference":
                continue
            p = plain.get((r["rotating_requested"], r["flush"]), {})
            out.append(
                {
                    "group": g["name"],
                    "kernel": r["kernel"],
                    "size_bytes": r["size_bytes"],
                    "rotating": f"{r['rotating_requested']}={r['rotating']}",
                    "flush": r["flush"],
                    **{
                        k: r.get(k)
                        for k in (
                            "dram_read_bytes",
                            "dram_write_bytes",
                            "l2_hit_rate",
                            "input_bytes",
                            "cold_fraction",
                            "cache_state",
                            "cold_promise",
                            "counter_warning",
                            "counter_launches",
                            "counter_note",
                        )
                    },
                    "median_us": (r["median_s"] or math.nan) * 1e6,
                    "plain_median_us": (p.get("median_s") or math.nan) * 1e6,
                    "verdict": verdicts.get(f"{r['rotating_requested']}/{r['flush']}/events", ""),
                }
            )
    return out


def _num(v, fmt: str) -> str:
    """A number formatted, or '-' (None, NaN, text)."""
    return format(v, fmt) if isinstance(v, (int, float)) and v == v else "-"


def table(rows: list[dict], results: list[dict]) -> str:
    lines = [
        f"{'group':20} {'rot':>8} {'flush':9} {'cold':>6} {'L2 hit':>6} {'state':8} {'promise':7} {'us':>8} "
        f"{'plain us':>8} verdict"
    ]
    for r in rows:
        lines.append(
            f"{r['group']:20} {r['rotating']:>8} {r['flush']:9} {_num(r['cold_fraction'], '.2f'):>6} "
            f"{_num(r['l2_hit_rate'], '.2f'):>6} "
            f"{r['cache_state'] or '-':8} {r['cold_promise'] or '-':7} {_num(r['median_us'], '.3f'):>8} "
            f"{_num(r['plain_median_us'], '.3f'):>8} {r['verdict'] or '-'}"
        )
    lines.append("")
    for g in results:
        c = g.get("cost")
        counted = g.get("counted", {})
        failed = (counted.get("stderr_tail") or "").strip().splitlines()[-1:] if counted.get("rc") else []
        status = (
            counted.get("counters_status", "")
            or "".join(failed)
            or g.get("counted_error", "")
            or g.get("counted_skipped", "")
        )
        cost = (
            f"plain {c['plain_s']:.1f} s, counted {c['counted_s']:.1f} s, extra {_num(c['extra_ratio'], '+.0%')}, "
            f"pass {_num(c['pass_s'], '.1f')} s = {_num(c['pass_ratio'], '.0%')} of its sweep"
            if c
            else "no plain run"
        )
        lines.append(f"{g['name']:20} rc={g.get('counted', {}).get('rc', '-')} {cost}; {status[:120]}")
    return "\n".join(lines)


def gpu_tests(out: Path, timeout: float) -> dict:
    env = dict(os.environ, HIPEXPLORE_REQUIRE_GPU="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", "-rs", "tests/bench/counters/"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        rc, text = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        rc, text = 124, f"(timed out after {timeout:g} s)"
    secs = time.perf_counter() - t0
    (out / "gpu_tests.log").write_text(f"$ {' '.join(cmd)}\n(rc={rc}, {secs:.1f} s)\n{text}")
    last = text.strip().splitlines()[-1] if text.strip() else ""
    return {"rc": rc, "seconds": secs, "last": last}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the counter pass through the CLI on the H200 (issue 35)")
    p.add_argument("--out", required=True)
    p.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="no step runs past this many seconds (the GPU tests get what is left, plus 20 s)",
    )
    p.add_argument("--no-tests", action="store_true")
    p.add_argument(
        "--device", default="cuda", help="cuda (default); host for a dry run of this script (no counters there)"
    )
    p.add_argument("--backend", default="", help="the counter backend (cupti, ncu); default: the device's")
    a = p.parse_args(argv)
    DEVICE[0] = a.device
    BACKEND[:] = [a.backend] if a.backend else []
    start = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict = {"env": environment(out), "groups": []}
    results = summary["groups"]
    for i, group in enumerate(GROUPS):
        res = group_result(group, out, start, a.budget_s, with_plain=True)
        results.append(res)
        print(
            f"{group[0]}: {json.dumps({k: v for k, v in res.items() if k in ('cost', 'compare') or k.endswith(('_error', '_skipped'))}, default=str)[:600]}",
            flush=True,
        )
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))  # kept as it goes
    summary["rows"] = rows = rows_of(results)
    costs = [g["cost"] for g in results if "cost" in g]
    plain_s, counted_s = sum(c["plain_s"] for c in costs), sum(c["counted_s"] for c in costs)
    pass_s = sum(c["pass_s"] for c in costs if c["pass_s"] == c["pass_s"])
    summary["cost"] = {
        "plain_s": plain_s,
        "counted_s": counted_s,
        "extra_ratio": (counted_s - plain_s) / plain_s if plain_s else None,
        "pass_s": pass_s,
        "pass_ratio": pass_s / (counted_s - pass_s) if counted_s - pass_s > 0 else None,
    }
    summary["moved"] = {g["name"]: g["compare"].get("moved") for g in results if g.get("compare", {}).get("moved")}
    left = a.budget_s + 20 - (time.perf_counter() - start)
    if not a.no_tests and left > 60:
        summary["gpu_tests"] = gpu_tests(out, min(150.0, left))
    else:
        summary["gpu_tests"] = {"skipped": f"{left:.0f} s left"}
    try:
        text = table(rows, results)
    except Exception as exc:  # the records are in summary.json whatever the table does
        text = f"(no table: {type(exc).__name__}: {exc})"
    text += (
        f"\n\nall groups with a plain twin: plain {plain_s:.1f} s, counted {counted_s:.1f} s, extra "
        f"{summary['cost']['extra_ratio'] if summary['cost']['extra_ratio'] is None else format(summary['cost']['extra_ratio'], '+.0%')}"
        f", the passes {pass_s:.1f} s = {_num(summary['cost']['pass_ratio'], '.0%')} of their sweeps"
        f"; compare faster/slower: {summary['moved'] or 'none'}; gpu tests: {summary['gpu_tests']}"
    )
    (out / "summary.txt").write_text(text + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    print(text)
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
