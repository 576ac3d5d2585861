#!/usr/bin/env python3
"""The current figures, computed from the recorded data in data/ and benchmarks/results/.

Each figure is one function over the files one run wrote: it returns the number as it is quoted and
where it comes from (the command that made the data, the device, the revision, the date). The
provenance is read from the data files themselves (`.meta.json`, a result's `provenance`, a
truth/drift JSON's `revision`); where a file does not hold a field, the figure names it from the
run's record (the `scripts/h200_all.sh` phase of that revision, the date of BENCHMARKS.md's section)
and says so with "(log)".

    python benchmarks/figures.py                 # print the table (Markdown)
    python scripts/gen_docs.py                   # write docs/figures.md and BENCHMARKS.md's head

`tests/docs/test_generated_docs.py` fails when the committed pages differ from what this computes, so a
new recorded run changes the figures by changing the data, never by editing a page.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
H200 = "NVIDIA H200 (driver 580.159.04)"
VM = "2-core AMD EPYC dev VM (shared), no GPU"
VM_XEON = "2-core Intel Xeon dev VM (480 MiB L3), no GPU; the test suite on its other core"


@dataclass(frozen=True)
class Figure:
    area: str
    what: str
    value: str
    command: str
    device: str
    revision: str
    date: str
    data: str


def _load(rel: str) -> dict:
    return json.loads((REPO / rel).read_text())


def _rev(revision: str) -> str:
    revision = str(revision or "unknown")
    if revision == "unknown":
        return "unknown (tree copied without .git)"
    dirty = "+dirty" if revision.endswith("+dirty") else ""
    return revision.removesuffix("+dirty")[:7] + dirty


def _day(date: str) -> str:
    return str(date)[:16].replace("T", " ") + (" UTC" if "T" in str(date) else "")


def _us(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


def _cmd(command: str) -> str:
    """A recorded command without the machine's temporary output folder."""
    import re

    command = re.sub(r"--out \S+", "--out DIR", str(command))
    return command.replace("__main__.py ", "hipexplore ")


# -- compile cache ----------------------------------------------------------------------------------
def cache_hits(rel: str, device: str, label: str) -> list[Figure]:
    d = _load(rel)
    p = d["provenance"]
    common = dict(
        command=_cmd(p["command"]), device=device, revision=_rev(p["git_revision"]), date=_day(p["date"]), data=rel
    )
    return [
        Figure(
            "compile cache",
            f"{label}: memory hit, p50 (n={d['memory_hit']['n']})",
            _us(d["memory_hit"]["p50_s"]),
            **common,
        ),
        Figure(
            "compile cache",
            f"{label}: disk hit, p50, warm page cache (n={d['disk_hit']['n']})",
            _us(d["disk_hit"]["p50_s"]),
            **common,
        ),
        Figure(
            "compile cache",
            f"{label}: real compile of the same kernel, p50 (n={d['recompile']['n']})",
            _us(d["recompile"]["p50_s"]),
            **common,
        ),
    ]


def key_headers() -> list[Figure]:
    rel = "benchmarks/results/key_headers.json"
    if not (REPO / rel).exists():
        return []
    d = _load(rel)
    p = d["provenance"]
    a, b = d["by_digest"], d["full_text"]
    return [
        Figure(
            "compile cache",
            f"{d['compiler']} {d['target']} {d['list']} requests (~{d['header_bytes_median'] / 1024:.0f} KB "
            f"of headers each): disk hit p50, headers keyed by digest / in full (key record)",
            f"{_us(a['p50_s'])} / {_us(b['p50_s'])} ({a['key_bytes_median'] / 1024:.1f} / {b['key_bytes_median'] / 1024:.1f} KiB)",
            "python benchmarks/compile/key_headers.py --out benchmarks/results/key_headers.json",
            VM,
            _rev(p.get("git_revision")),
            _day(p.get("date")),
            rel,
        )
    ]


def cache_team() -> list[Figure]:
    rel = "benchmarks/results/cache_bench_team.json"
    d = _load(rel)
    p, t = d["provenance"], d["team"]
    return [
        Figure(
            "compile cache",
            f"host: Redis remote hit on loopback, p50 (n={t['remote_hit']['n']}, {t['remote_hit']['server']})",
            _us(t["remote_hit"]["p50_s"]),
            _cmd(p["command"]),
            VM,
            _rev(p["git_revision"]),
            _day(p["date"]),
            rel,
        )
    ]


def replay_cli() -> list[Figure]:
    rel = "data/tuning/h200_cli/tune_cli_j4.json"
    d = _load(rel)
    p = d["provenance"]
    value = (
        f"{d['seconds']:.2f} s through the cache, {d['seconds_without_cache']:.2f} s without, ideal "
        f"{d['seconds_ideal']:.2f} s ({d['kernels']} kernels, {d['unique_kernels']} unique, {d['joins']} joined)"
    )
    return [
        Figure(
            "tuning replay",
            f"NVRTC sm_90, {d['jobs']} jobs, memory cache",
            value,
            _cmd(p["command"]),
            "H200 machine's host CPU (Intel Xeon, 16 cores)",
            _rev(p["git_revision"]),
            _day(p["date"]),
            rel,
        )
    ]


# -- the harness on the H200 (session 4) --------------------------------------------------------------
S4_DATE = "2026-12-01 (log)"
S4_TRUTH = "bash scripts/h200_all.sh {phase} (log): python3 benchmarks/truth3_h200.py {args}"
S4_CALLS = {  # the phase of scripts/h200_all.sh at that revision, and its truth3 arguments
    1: ("7", "--reps 3 --alternations 2"),
    2: ("9", "--reps 2 --designs random:1,random:0 --skip N S nofence"),
    4: ("10", "--reps 3 --designs random:1,random:2 --skip N S nofence"),
}


def _truth(call: int) -> tuple[dict, str]:
    rel = f"data/h200/chunk-padding-fenced-end/call{call}_truth3.json"
    return _load(rel), rel


def _s4_command(call: int) -> str:
    phase, args = S4_CALLS[call]
    return S4_TRUTH.format(phase=phase, args=args)


def triad_timers() -> list[Figure]:
    out = []
    d, _ = _truth(4)
    rel = "data/h200/chunk-padding-fenced-end/call4_L_floor.parquet"
    f = pd.read_parquet(REPO / rel)
    f = f[(f["design"] == "random:1") & (f["flush"] == "l2-read")]
    for mib in (1.0, 256.0):
        row = f[f["size_mib"] == mib]
        ev, ik = row["events_us"].median(), row["in_kernel_us"].median()
        out.append(
            Figure(
                "harness",
                f"triad {mib:g} MiB, l2-read: events / in-kernel timer median ({len(row)} runs)",
                f"{ev:.2f} µs / {ik:.2f} µs",
                _s4_command(4),
                H200,
                _rev(d["revision"]),
                S4_DATE,
                rel,
            )
        )
    return out


def launch_floor() -> list[Figure]:
    floors, net_ok, net_n, revs = [], 0, 0, []
    for call in (1, 2, 4):
        d, _ = _truth(call)
        revs.append(_rev(d["revision"]))
        f = pd.read_parquet(REPO / f"data/h200/chunk-padding-fenced-end/call{call}_L_floor.parquet")
        floors += list(f["floor_us"])
        big = f[f["size_mib"] >= 16]
        net_ok += int((big["net_over_inkernel"].abs() <= 0.03).sum())
        net_n += len(big)
    cmd = "; ".join(_s4_command(c).split(" (log)")[0] for c in (1, 2, 4)) + " (log)"
    data = "data/h200/chunk-padding-fenced-end/call{1,2,4}_L_floor.parquet"
    return [
        Figure(
            "harness",
            "launch floor (empty one-block kernel after the same flush), range over 16 sweeps",
            f"{min(floors):.2f}–{max(floors):.2f} µs",
            cmd,
            H200,
            ", ".join(revs),
            S4_DATE,
            data,
        ),
        Figure(
            "harness",
            "net_median_s within 3% of the in-kernel timer, configurations ≥ 16 MiB",
            f"{net_ok} of {net_n}",
            cmd,
            H200,
            ", ".join(revs),
            S4_DATE,
            data,
        ),
    ]


def nvbench() -> list[Figure]:
    d, rel = _truth(1)
    worst = max(abs(r["ratio"] - 1) for r in d["N_ours_vs_nvbench"])
    sizes = [r["size_mib"] for r in d["N_ours_vs_nvbench"]]
    return [
        Figure(
            "harness",
            f"l2-write median vs nvbench's cold median, same cubin, {min(sizes):g}–{max(sizes):g} MiB: largest difference",
            f"{worst * 100:.1f}%",
            _s4_command(1),
            H200,
            _rev(d["revision"]),
            S4_DATE,
            rel,
        )
    ]


def chunk_position() -> list[Figure]:
    within, total, revs = 0, 0, []
    for call in (2, 4):
        d, _ = _truth(call)
        revs.append(_rev(d["revision"]))
        f = pd.read_parquet(REPO / f"data/h200/chunk-padding-fenced-end/call{call}_P_effects.parquet")
        col = "design" if "design" in f.columns else "lead"
        f = f[f[col] == "random:1"]
        within += int((f["max_effect"] <= 0.01).sum())
        total += len(f)
    cmd = "; ".join(_s4_command(c).split(" (log)")[0] for c in (2, 4)) + " (log)"
    return [
        Figure(
            "harness",
            "chunk position: (configuration, run) position medians within 1% of the typical one, "
            "default chunk (random lead, trail 1), 1–256 MiB, 2000 iterations",
            f"{within} of {total}",
            cmd,
            H200,
            ", ".join(revs),
            S4_DATE,
            "data/h200/chunk-padding-fenced-end/call{2,4}_P_effects.parquet",
        )
    ]


def drift() -> list[Figure]:
    rel = "data/h200/chunk-padding-fenced-end/call3_drift.json"
    d = _load(rel)
    rows = d["A_spread_by_passes"]["4"]
    ratios = [r["ratio"] for r in rows if not math.isnan(r["ratio"])]
    runs = max(r["rep"] for r in rows)
    sizes = sorted({r["size_kib"] for r in rows})
    return [
        Figure(
            "harness",
            f"run-to-run: SD of {runs} run medians (4 passes each) / the σ the intervals imply, "
            f"{sizes[0]} KiB–{sizes[-1] // 1024} MiB, both timers",
            f"{min(ratios):.2f}–{max(ratios):.2f}×",
            "bash scripts/h200_all.sh 8 (log): python3 benchmarks/drift_h200.py --passes 4 --runs 10 --no-long",
            H200,
            _rev(d["revision"]),
            S4_DATE,
            rel,
        )
    ]


def adaptive() -> list[Figure]:
    d, rel = _truth(1)
    s = [r for r in d["S_adaptive"] if r["flush"] != "cold-reference"]
    timed_out = sum(bool(r["timed_out"]) for r in s)
    return [
        Figure(
            "harness",
            f"default adaptive sweep, {len(s)} configurations and their cold references: wall time (timeouts)",
            f"{d['S_seconds']:.1f} s ({timed_out} timed out)",
            _s4_command(1),
            H200,
            _rev(d["revision"]),
            S4_DATE,
            rel,
        )
    ]


# -- verdicts, own kernels, Dask, Triton (second wave) -------------------------------------------------
def _meta(rel: str) -> dict:
    return _load(rel)


def verdicts() -> list[Figure]:
    rel = "data/h200/verdicts-twin-and-5pct/verdicts.json"
    d = _load(rel)
    m = _meta("data/h200/verdicts-twin-and-5pct/interleaved.meta.json")
    slower = sum(r["verdict"] == "slower" for r in d["A_plus5_vs_stream"])
    n = len(d["A_plus5_vs_stream"])
    twins = len(d["B_twin_vs_stream"])
    common = dict(
        command="bash scripts/h200_all.sh 2 (log): python3 benchmarks/verdict_h200.py --quick",
        device=H200,
        revision=_rev(m["git_revision"]),
        date=_day(m["date"]),
        data=rel,
    )
    return [
        Figure(
            "verdicts",
            "a +5%-traffic variant interleaved with its base: configurations called `slower`",
            f"{slower} of {n}",
            **common,
        ),
        Figure(
            "verdicts",
            "an identical twin interleaved with its base: false `faster`/`slower` verdicts",
            f"{d['B_false_verdicts']} of {twins}",
            **common,
        ),
    ]


def host_verdicts() -> list[Figure]:
    """#23 on this VM: identical copies and a 4x-work kernel, interleaved, default units, one core busy;
    and the default sweep's wall time beside 887bcf3's."""
    out = []
    rel = "data/host/verdicts-busy/verdict_truth.json"
    if (REPO / rel).exists():
        d = _load(rel)
        p = d["provenance"]
        c = d["counts"]
        ident, sep, w4 = c.get("identical copy", {}), c.get("separate runs", {}), c.get("W4 vs A", {})
        common = dict(
            command=f"python benchmarks/verdict_truth.py --device host --runs {d['runs']} --sizes {d['sizes']} --busy --out DIR",
            device=VM + ", one core kept busy",
            revision=_rev(p.get("git_revision")),
            date=_day(p.get("date")),
            data=rel,
        )
        out += [
            Figure(
                "verdicts",
                f"byte-identical copies interleaved, {d['runs']} runs: false `faster`/`slower` (same / undecided)",
                f"{ident.get('faster', 0) + ident.get('slower', 0)} of {ident.get('rows', 0)} "
                f"({ident.get('same', 0)} / {ident.get('undecided', 0)})",
                **common,
            ),
            Figure(
                "verdicts",
                "separate runs of one kernel compared: false `faster`/`slower` (same / undecided)",
                f"{sep.get('faster', 0) + sep.get('slower', 0)} of {sep.get('rows', 0)} "
                f"({sep.get('same', 0)} / {sep.get('undecided', 0)})",
                **common,
            ),
            Figure(
                "verdicts",
                "a 4x-work kernel against its base: rows called `slower`",
                f"{w4.get('slower', 0)} of {w4.get('rows', 0)}",
                **common,
            ),
        ]
    rel = "data/host/default-wall/verdict_truth.json"
    if (REPO / rel).exists():
        d = _load(rel)
        p = d["provenance"]
        walls: dict[str, list[float]] = {}
        for b in d["baseline_walls"]:
            walls.setdefault(b["version"], []).append(float(b["wall_s"]))
        old, new = (sorted(walls.get(k, [math.nan])) for k in ("baseline", "this"))
        med = [v[len(v) // 2] for v in (old, new)]
        out.append(
            Figure(
                "harness",
                f"default `hipexplore bench triad` ({d['sizes']} x {d['flush']}) wall time, "
                f"887bcf3 (one unit) / units auto, median of {len(new)} alternating reps",
                f"{med[0]:.1f} s / {med[1]:.1f} s ({med[1] / med[0]:.2f}x)",
                f"python benchmarks/verdict_truth.py --device host --runs 0 --sizes {d['sizes']} --baseline .old "
                f"--baseline-reps {len(new)} --out DIR",
                VM,
                _rev(p.get("git_revision")),
                _day(p.get("date")),
                rel,
            )
        )
    return out


def h200_verdicts() -> list[Figure]:
    """#23 on the H200 at defaults: byte-identical copies and separate runs (false calls), +5% / +3%
    kernels (power), the default sweep's wall time beside 887bcf3's, all from one device call."""
    folder = "data/h200/verdict-truth"
    rel = f"{folder}/verdict_truth.json"
    if not (REPO / rel).exists():
        return []
    d = _load(rel)
    m = _meta(f"{folder}/run00.meta.json")  # the device's own record (the summary was analysed here)
    c = d["counts"]
    ident, sep = c.get("identical copy", {}), c.get("separate runs", {})
    common = dict(
        command=f"HX_BASELINE=.old bash scripts/h200_all.sh verdict-truth: python3 benchmarks/verdict_truth.py "
        f"--device cuda --runs 17 --budget-s 480 --baseline .old --baseline-reps 2 --out DIR "
        f"({d['runs']} runs; --analyze here)",
        device=H200,
        revision=_rev(m.get("git_revision")),
        date=_day(m.get("date")),
        data=rel,
    )

    def power(kernel: str, sizes: tuple[int, ...]) -> str:
        rows = [
            p
            for p in d["power"]
            if p["kind"] == f"{kernel} vs A" and p["size_bytes"] >> 20 in sizes and p["flush"] in ("none", "l2-write")
        ]
        return f"{sum(p['slower'] for p in rows)} of {sum(p['rows'] for p in rows)}"

    ref = {(r["kernel"], r["size_bytes"] >> 20): r["ratio"] for r in d["reference"] if r["flush"] == "none"}
    walls: dict[str, list[float]] = {}
    for b in d["baseline_walls"]:
        walls.setdefault(b["version"], []).append(float(b["wall_s"]))
    old, new = (sum(walls[k]) / len(walls[k]) for k in ("baseline", "this"))
    return [
        Figure(
            "verdicts",
            f"H200, byte-identical copies (A, B, C) interleaved, {d['runs']} runs x 9 configurations: false "
            "`faster`/`slower` (same / undecided)",
            f"{ident.get('faster', 0) + ident.get('slower', 0)} of {ident.get('rows', 0)} "
            f"({ident.get('same', 0)} / {ident.get('undecided', 0)})",
            **common,
        ),
        Figure(
            "verdicts",
            "H200, separate runs of one kernel compared (run i vs i+1): false `faster`/`slower` (same / undecided)",
            f"{sep.get('faster', 0) + sep.get('slower', 0)} of {sep.get('rows', 0)} "
            f"({sep.get('same', 0)} / {sep.get('undecided', 0)})",
            **common,
        ),
        Figure(
            "verdicts",
            f"H200, +5% kernel (reference {ref.get(('S5', 16), math.nan):.3f}x at 16 MiB, "
            f"{ref.get(('S5', 256), math.nan):.3f}x at 256 MiB): rows called `slower` at 16 and 256 MiB, none/l2-write",
            power("S5", (16, 256)),
            **common,
        ),
        Figure(
            "verdicts",
            f"H200, +3% kernel (reference {ref.get(('S3', 256), math.nan):.3f}x at 256 MiB): rows called `slower` "
            "at 256 MiB, none/l2-write",
            power("S3", (256,)),
            **common,
        ),
        Figure(
            "harness",
            f"H200, default `hipexplore bench triad` ({d['sizes']} x {d['flush']}) wall time, 887bcf3 / units auto, "
            f"mean of {len(walls['this'])} alternating reps",
            f"{old:.1f} s / {new:.1f} s ({new / old:.2f}x)",
            **common,
        ),
    ]


def h200_tuning_scale() -> list[Figure]:
    """#28 on the H200 machine's 16 host cores: llama3-8b (1,144 requests, 532 unique), NVRTC sm_90."""
    folder = "data/tuning/scale/h200-memory-vs-ideal"
    if not (REPO / folder / "summary.json").exists():
        return []
    d = _load(f"{folder}/summary.json")
    p = d["provenance"]
    r = d["results"]
    dev = "H200 machine's host CPU (Intel Xeon, 16 cores)"
    cmd = "bash scripts/h200_all.sh tuning-scale: " + _cmd(d["command"]).replace(
        "/opt/torch/.venv/bin/python3", "python3"
    )
    common = dict(
        command=cmd,
        device=dev,
        revision=_rev(p.get("git_revision")),
        date=_day(p.get("date")),
        data=f"{folder}/summary.json",
    )
    ser = r["serial__llama3-8b__nvrtc-sm_90__j1"]["derived"]
    par = r["parallel__llama3-8b__nvrtc-sm_90__j16"]["derived"]
    sec = r["second-run__llama3-8b__nvrtc-sm_90__j1"]["warm_vs_cold"]
    out = [
        Figure(
            "tuning replay",
            "llama3-8b list, NVRTC sm_90, 1 job: cache off / memory cache / ideal (memory and ideal each the fastest of 2 passes)",
            f"{ser['off_s']:.1f} s / {ser['memory_s']:.1f} s / {ser['ideal_s']:.1f} s (memory/ideal {ser['memory_vs_ideal']:.3f})",
            **common,
        ),
        Figure(
            "tuning replay",
            "llama3-8b list, NVRTC sm_90, 16 jobs: cache off / memory cache / ideal (memory and ideal each the fastest of 2 passes)",
            f"{par['off_s']:.2f} s / {par['memory_s']:.2f} s / {par['ideal_s']:.2f} s (memory/ideal {par['memory_vs_ideal']:.3f})",
            **common,
        ),
        Figure(
            "tuning replay",
            "llama3-8b list, NVRTC sm_90: second tuning run, warm disk / warm Redis on an empty disk, of the cold run",
            f"{sec['warm-disk'] * 100:.2f}% / {sec['warm-redis-empty-disk'] * 100:.2f}%",
            **common,
        ),
    ]
    crel = f"{folder}/cluster/summary.json"
    if (REPO / crel).exists():
        c = _load(crel)
        cd = c["results"]["cluster__llama3-8b__nvrtc-sm_90__j2"]["derived"]
        out.append(
            Figure(
                "tuning replay",
                "llama3-8b list, NVRTC sm_90, 2 Dask workers sharing Redis: compiles in the cold pass / unique kernels",
                f"{cd['cold_compiles']} / {cd['unique_kernels']} ({cd['cold_s']:.1f} s)",
                "bash scripts/h200_all.sh tuning-scale (HX_STEPS=cluster): "
                + _cmd(c["command"]).replace("/opt/torch/.venv/bin/python3", "python3"),
                dev,
                # HX_REV=7ce0dc9+cluster-pin: 7ce0dc9 with the unpinned compile workers committed as 5fc5acb
                str(c["provenance"].get("git_revision")).replace("+cluster-pin", " + 5fc5acb's cluster.py"),
                _day(c["provenance"].get("date")),
                crel,
            )
        )
    return out


def _triple(x: dict, digits: int = 1) -> str:
    """A replay step's derived numbers as 'off / memory / ideal (memory/ideal r)'."""
    return (
        f"{x['off_s']:.{digits}f} s / {x['memory_s']:.{digits}f} s / {x['ideal_s']:.{digits}f} s "
        f"(memory/ideal {x['memory_vs_ideal']:.3f})"
    )


def _scale_figure(rel: str, what: str, value: Callable[[dict], str], device: str, prefix: str = "") -> Figure:
    """One figure from a tuning_scale.py summary.json: ``value`` reads its results; the command is the
    recorded one with the machine's own interpreter paths shortened to what a reader types."""
    d = _load(rel)
    p = d["provenance"]
    cmd = (
        _cmd(d["command"])
        .replace("/opt/torch/.venv/bin/python3", "python3")
        .replace("/tmp/suite/.venv/bin/python", ".venv/bin/python")
    )
    return Figure(
        "tuning replay",
        what,
        value(d["results"]),
        prefix + cmd,
        device,
        _rev(p.get("git_revision")),
        _day(p.get("date")),
        rel,
    )


def h200_tuning_scale_s5() -> list[Figure]:
    """#28's remaining H200 measurements (wave 3, session 5): resnet50 (1,202 requests, 626 unique) with
    NVRTC at 1 job, its second run and 2 Dask workers; Triton's own cache beside ours at 16 jobs; Triton
    sm_90 at 1 job over every 3rd llama3-8b problem. One folder per call, each with its summary.json."""
    folder = "data/tuning/scale/h200-resnet50-and-triton-cache"
    if not (REPO / folder / "r50-serial" / "summary.json").exists():
        return []
    dev, pre = "H200 machine's host CPU (Intel Xeon, 16 cores)", "bash scripts/h200_all.sh tuning-scale: "
    out = [
        _scale_figure(
            f"{folder}/r50-serial/summary.json",
            "resnet50 list, NVRTC sm_90, 1 job: cache off / memory cache / ideal "
            "(memory and ideal each the fastest of 2 passes)",
            lambda r: _triple(r["serial__resnet50__nvrtc-sm_90__j1"]["derived"]),
            dev,
            pre,
        ),
        _scale_figure(
            f"{folder}/r50-serial/summary.json",
            "resnet50 list, NVRTC sm_90: second tuning run, warm disk / warm Redis on an empty disk, of the cold run",
            lambda r: "{:.2f}% / {:.2f}%".format(
                *(
                    100 * r["second-run__resnet50__nvrtc-sm_90__j1"]["warm_vs_cold"][k]
                    for k in ("warm-disk", "warm-redis-empty-disk")
                )
            ),
            dev,
            pre,
        ),
        _scale_figure(
            f"{folder}/r50-cluster/summary.json",
            "resnet50 list, NVRTC sm_90, 2 Dask workers sharing Redis: compiles in the cold pass / unique kernels",
            lambda r: "{cold_compiles} / {unique_kernels} ({cold_s:.1f} s)".format(
                **r["cluster__resnet50__nvrtc-sm_90__j2"]["derived"]
            ),
            dev,
            pre,
        ),
    ]
    for lst in ("llama3-8b", "resnet50"):
        out.append(
            _scale_figure(
                f"{folder}/triton-cache/summary.json",
                f"{lst} list, Triton sm_90, 16 jobs: our disk tier cold / warm beside Triton's own cache cold / warm",
                lambda r, lst=lst: (
                    "{disk-cold:.1f} s / {disk-warm:.2f} s beside {triton-cold:.1f} s / {triton-warm:.2f} s".format(
                        **r[f"triton-cache__{lst}__triton-sm_90__j16"]["derived"]["seconds"]
                    )
                ),
                dev,
                pre,
            )
        )
    out.append(
        _scale_figure(
            f"{folder}/triton-serial/summary.json",
            "llama3-8b list, every 3rd problem (379 requests, 195 unique), "
            "Triton sm_90, 1 job: cache off / memory / ideal",
            lambda r: _triple(r["serial__llama3-8b__triton-sm_90__j1"]["derived"]),
            dev,
            pre,
        )
    )
    return out


def host_tuning_scale_s5() -> list[Figure]:
    """#28's cache-off serial passes of the whole shipped lists on this 2-core VM (wave 3, session 5),
    each a plain ``hipexplore tune-replay --cache off --no-ideal`` while the test suite ran on the other
    core (with Triton the same command also times Triton's own cache over the list, cold then warm);
    resnet50's serial step with hiprtc and Triton gfx942's second run, from tuning_scale.py."""
    folder = "data/tuning/scale/host-whole-lists-cache-off"
    out: list[Figure] = []
    for lst in ("llama3-8b", "resnet50"):
        for comp, target in (("hiprtc", "gfx90a"), ("triton", "gfx942")):
            rel = f"{folder}/off-{lst}-{comp}.json"
            if not (REPO / rel).exists():
                continue
            d = _load(rel)
            p = d["provenance"]
            sc = d["scenarios"]
            value = f"{d['seconds']:.1f} s ({d['compiles']} compiles, {d['failed']} failed)"
            if "triton-cold" in sc:
                value += f"; Triton's own cache cold / warm {sc['triton-cold']['seconds']:.1f} s / {sc['triton-warm']['seconds']:.2f} s"
            out.append(
                Figure(
                    "tuning replay",
                    f"{lst} whole list ({d['kernels']} requests, {d['unique_kernels']} unique), {comp} {target}, "
                    "1 job: cache-off serial pass, measured",
                    value,
                    _cmd(p["command"]),
                    VM_XEON,
                    _rev(p.get("git_revision")),
                    _day(p.get("date")),
                    rel,
                )
            )
    if (REPO / folder / "serial-r50" / "summary.json").exists():
        out.append(
            _scale_figure(
                f"{folder}/serial-r50/summary.json",
                "resnet50 whole list, hiprtc gfx90a, 1 job: cache off / memory "
                "cache / ideal (memory and ideal each the fastest of 2 passes)",
                lambda r: _triple(r["serial__resnet50__hiprtc-gfx90a__j1"]["derived"]),
                VM_XEON,
            )
        )
    if (REPO / folder / "second-triton" / "summary.json").exists():
        for lst in ("llama3-8b", "resnet50"):

            def second(r: dict, lst: str = lst) -> str:
                x = r[f"second-run__{lst}__triton-gfx942__j1"]
                w = x["warm_vs_cold"]
                return f"{w['warm-disk'] * 100:.2f}% / {w['warm-redis-empty-disk'] * 100:.2f}% (cold {x['runs']['cold']['seconds']:.1f} s)"

            out.append(
                _scale_figure(
                    f"{folder}/second-triton/summary.json",
                    f"{lst} whole list, Triton gfx942: second tuning run, warm "
                    "disk / warm Redis on an empty disk, of the cold run",
                    second,
                    VM_XEON,
                )
            )
    return out


def own_kernels() -> list[Figure]:
    rel = "data/h200/own-kernels/byok.json"
    d = _load(rel)
    m = _meta("data/h200/own-kernels/transpose.meta.json")
    runs = d["runs"]
    checked = sum(1 for r in runs.values() for v in r.get("checks", {}).values() if str(v).startswith("rel_l2_error="))
    return [
        Figure(
            "own kernels",
            f"own kernels swept and output-checked ({', '.join(runs)})",
            f"{len(runs)} kernels, {checked} checks passed, {len(d['errors'])} errors",
            "bash scripts/h200_all.sh 1 (log): python3 benchmarks/byok_h200.py",
            H200,
            _rev(m["git_revision"]),
            _day(m["date"]),
            rel,
        )
    ]


def cluster() -> list[Figure]:
    rel = "data/h200/dask-one-gpu/cluster_gpu.json"
    d = _load(rel)
    p = d["provenance"]
    o = d["one_vs_cluster"]
    return [
        Figure(
            "cluster",
            f"one Dask worker vs this process on {d['gpus']} GPU: configurations whose medians agree within their intervals",
            f"{o['agree']} of {o['configurations']} (ratios {o['ratio_min']:.3f}–{o['ratio_max']:.3f})",
            _cmd(p["command"]),
            H200,
            _rev(p["git_revision"]),
            _day(p["date"]),
            rel,
        )
    ]


def triton() -> list[Figure]:
    rel = "data/h200/triton-pick/choice.csv"
    c = pd.read_csv(REPO / rel)
    m = _load("data/h200/triton-pick/meta.json")
    p = m.get("provenance", m)
    changed = c[~c["same_choice"].astype(bool)]
    worst = changed["regret"].max() if len(changed) else 0.0
    told = int(changed["distinguishable"].astype(bool).sum())
    return [
        Figure(
            "tuning replay",
            "Triton split-K candidates on the H200: (problem, rotating, flush) settings whose pick differs "
            "from the hot-cache pick (of them, beyond the noise; largest regret)",
            f"{len(changed)} of {len(c)} ({told} beyond the noise; {worst * 100:.1f}%)",
            "bash scripts/h200_all.sh 2 (log): python3 benchmarks/triton_h200.py --cubins .triton_cubins",
            H200,
            _rev(p.get("git_revision", "0ccb506")),
            _day(p.get("date", "2026-12-01 (log)")),
            rel,
        )
    ]


def cli_hit() -> list[Figure]:
    """A CLI disk hit in a fresh process against the compile it replaces and `hipexplore --help` (#49, item 6)."""
    rel = "benchmarks/results/compile_hit.json"
    d = _load(rel)
    m, p = d["median_s"], d["provenance"]
    words = str(p["command"]).split()
    command = _cmd(" ".join(["python", *(w.replace(f"{REPO}/", "") for w in words[1:])]))
    load = ", ".join(f"{x:.0f}" for x in d.get("load_before", [])[:1])
    device = f"2-core Intel Xeon dev VM, no GPU, load {load} (other sessions' work)"
    return [
        Figure(
            "compile cache",
            f"CLI disk hit in a fresh process / the compile it replaces / `hipexplore --help`, {c}, "
            f"medians of {len(d['rounds'])} alternated rounds",
            f"{m[f'{c}.hit']:.2f} s / {m[f'{c}.miss']:.2f} s / {m['help']:.2f} s ({m[f'{c}.hit'] / m['help']:.2f}x --help)",
            command,
            device,
            _rev(p.get("git_revision", "")),
            _day(p.get("date", "")),
            rel,
        )
        for c in ("hiprtc", "nvrtc", "host")
        if f"{c}.hit" in m
    ]


FIGURES: list[Callable[[], list[Figure]]] = [
    lambda: cache_hits("benchmarks/results/cache_bench.json", VM, "hiprtc gfx90a"),
    lambda: cache_hits(
        "benchmarks/results/cache_bench_h200_nvrtc.json",
        "H200 machine's host CPU (Intel Xeon, 16 cores)",
        "NVRTC sm_90",
    ),
    cache_team,
    key_headers,
    cli_hit,
    replay_cli,
    triton,
    triad_timers,
    launch_floor,
    nvbench,
    chunk_position,
    drift,
    adaptive,
    verdicts,
    host_verdicts,
    h200_verdicts,
    own_kernels,
    cluster,
    h200_tuning_scale,
    h200_tuning_scale_s5,
    host_tuning_scale_s5,
]


def figures() -> list[Figure]:
    return [f for make in FIGURES for f in make()]


def markdown_table(rows: list[Figure] | None = None) -> str:
    rows = figures() if rows is None else rows
    out = ["| area | figure | value | command | device | revision | date | data |", "|---|---|---|---|---|---|---|---|"]
    for f in rows:
        cells = [f.area, f.what, f"**{f.value}**", f"`{f.command}`", f.device, f"`{f.revision}`", f.date, f"`{f.data}`"]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown_table())
