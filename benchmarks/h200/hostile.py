#!/usr/bin/env python3
"""Issue 51 on a GPU: the hostile-kernel suite and the honest set through the harness's trust checks,
and what the persisting-L2 reset costs. ``scripts/h200_all.sh hostile`` runs it (240 s limit).

    PYTHONPATH=.:tests python3 benchmarks/h200/hostile.py --out DIR --budget-s 210
    PYTHONPATH=.:tests .venv/bin/python benchmarks/h200/hostile.py --out DIR --device host   (the host dry run)

Steps, in order, each started only while its estimate fits the budget left (every sweep also stops
between configurations at the deadline):
  facts      provenance (the device, its persisting-L2 set-aside and maximum), the reset's cost per call
  families   the kernel families (tests/fixtures/hostile: output cache, skipped work, result replay,
             next-launch prefetch, evict_last hints) and their honest twins at 4 MiB, rotating 1/auto x
             flush none/l2-read, 40 iterations, the counter pass
  honest     the honest set's kernels (tests/fixtures/hostile/honest.py: 43) at their sizes, rotating
             auto x flush none/l2-read, the counter pass; then ``pipelines``: 8 split-K GEMM pipelines of
             the tuning list, 4 Triton candidates and the honest launcher
  launchers  the persisting-window and side-stream launchers and the honest one (Python callables)
  reset-ab   the triad at 4 MiB, flush none, one set (hot: what a reset that flushed would change),
             200 iterations with HIPEXPLORE_L2_RESET=1, then =0
  families-2 the kernel families again, without the counter pass (the second run: what fits is run)
The host dry run (``--device host``) takes the same steps with what the host has (the C twins, the
host catalog, the host GEMM pipelines; no launchers, counters or reset) to prove the plumbing.

Writes DIR/results.json (per step: seconds, error, rows with their flags, the families' verdicts),
DIR/summary.txt (the verdict per family per run, the honest set's flag count, the done-when lines)
and DIR/<step>.summary.parquet. A step's error is recorded and never stops the others.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

MIB = 1 << 20
#: (step, estimated seconds on the H200, whether it runs on the host dry run)
PLAN = [
    ("facts", 5, True),
    ("families", 45, True),
    ("honest", 100, True),
    ("pipelines", 30, True),
    ("launchers", 20, False),
    ("reset-ab", 12, False),
    ("families-2", 25, True),
]


class Budget:
    def __init__(self, seconds: float) -> None:
        self.t0, self.seconds = time.monotonic(), seconds

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.t0)

    def over(self) -> bool:
        return self.left() <= 0


def iterations_for(specs: list, sizes: list[int], device, least: int = 32) -> int:
    """A fixed count every configuration accepts: at least the most sets ``auto`` plans, a multiple of 4."""
    from hipexplore.bench import rotating as rot

    most = least
    for spec in specs:
        for size in sizes:
            n = spec.elements(size)
            p = rot.plan(
                "auto",
                footprint_bytes=spec.footprint(n),
                set_bytes=spec.set_bytes(n),
                llc_bytes=device.llc_bytes,
                free_bytes=device.memory_info()[0],
                mem_fraction=rot.DEFAULT_MEM_FRACTION,
                size_bytes=size,
            )
            most = max(most, p.count)
    return -(-most // 4) * 4


def sweep(specs, sizes, device, budget, out: Path, name: str, **kw):
    """One sweep (stopped between configurations at the deadline); its rows, its summary written."""
    from fixtures.hostile import suite

    import hipexplore as hx

    args = dict(rotating=[1, "auto"], flush=["none", "l2-read"], iterations=40, units=1, progress=False)
    args.update(kw)
    res = hx.sweep(specs, sizes=sizes, device=device, should_stop=budget.over, **args)
    res.summary.to_parquet(out / f"{name}.summary.parquet", index=False)
    return res, [suite.row_view(r) for r in res.summary.to_dict("records")]


def step_facts(device, host: bool, **_):
    from hipexplore.provenance import collect

    prov = collect(device, compilers=False)
    facts = {
        k: v for k, v in prov.items() if k.startswith(("device.", "package.")) or k in ("git_revision", "date", "cpu")
    }
    if not host:
        t0 = time.perf_counter()
        for _ in range(1000):
            device.reset_l2_persistence()
        facts["reset_l2_persistence_us_per_call"] = round((time.perf_counter() - t0) * 1e3, 3)
    return {"facts": facts}


def step_families(device, host: bool, budget, out: Path, name: str = "families", counters: bool = True, **_):
    from fixtures.hostile import suite

    if host:
        verdicts, rows = suite.host_verdicts(device, iterations=16, should_stop=budget.over)
        return {"rows": rows, "verdicts": verdicts}
    specs = suite.family_specs()
    _res, rows = sweep(specs, [4 * MIB], device, budget, out, name, counters=counters)
    return {"rows": rows, "verdicts": [suite.verdict(f, rows) for f in suite.kernel_families()]}


def step_launchers(device, budget, out: Path, **_):
    from fixtures.hostile.launchers import launcher_spec

    specs = [
        launcher_spec("persist-window", honest=False, target=device.target),
        launcher_spec("side-stream", honest=False, target=device.target),
        launcher_spec(None, honest=True, target=device.target),
    ]
    _res, rows = sweep(specs, [4 * MIB, 64 * MIB], device, budget, out, "launchers", rotating=[1], flush=["l2-read"])
    want = {
        "persist_window_hostile": "persisting L2 was set during the timed launches",
        "side_stream_hostile": "below the",
    }
    verdicts = []
    for kernel, text in want.items():
        mine = [r for r in rows if r["kernel"] == kernel and r["flush"] != "cold-reference"]
        caught = bool(mine) and all(any(text in f for f in r["flags"]) for r in mine)
        verdicts.append(
            {
                "family": kernel.rsplit("_", 1)[0].replace("_", "-"),
                "rows": len(mine),
                "flagged_rows": sum(bool(r["flags"]) for r in mine),
                "verdict": "flagged" if caught else "MISSED",
            }
        )
    honest = [r for r in rows if r["kernel"] == "launcher_honest"]
    return {"rows": rows, "verdicts": verdicts, "honest_flagged_rows": sum(bool(r["flags"]) for r in honest)}


def step_honest(device, host: bool, budget, out: Path, **_):
    """The honest kernels, grouped by their sizes (a sweep has one size list)."""
    from fixtures.hostile import FAMILIES, honest, host_spec

    if host:
        from hipexplore.kernels import catalog

        groups = {
            (256 << 10, 4 * MIB): [
                *(catalog.get(k) for k in ("triad", "copy", "fill")),
                *(host_spec(f, True) for f in FAMILIES if f.host_file),
            ]
        }
    else:
        groups: dict[tuple[int, ...], list] = {}
        for spec, sizes in honest.kernels(Path(tempfile.mkdtemp(prefix="hx-honest-"))):
            groups.setdefault(tuple(sizes), []).append(spec)
    rows, kernels, errors = [], set(), []
    for gi, (sizes, specs) in enumerate(groups.items()):
        if budget.over():
            errors.append(f"group {gi} ({len(specs)} kernels) not run: the budget was spent")
            continue
        try:
            its = iterations_for(specs, list(sizes), device)
            _res, got = sweep(
                specs,
                list(sizes),
                device,
                budget,
                out,
                f"honest-{gi}",
                rotating=["auto"],
                iterations=its,
                counters=not host,
                worker=False if host else None,
            )
            rows += got
            kernels |= {s.name for s in specs}
        except Exception as exc:  # noqa: BLE001 - one group's error is recorded, the others run
            errors.append(f"group {gi} ({', '.join(s.name for s in specs)}): {type(exc).__name__}: {exc}")
    return _honest_result(rows, kernels, errors)


def _honest_result(rows, kernels, errors):
    from fixtures.hostile import suite

    flagged = [r for r in rows if suite.flagged(r)]
    return {
        "rows": rows,
        "kernels": sorted(kernels),
        "kernel_count": len(kernels),
        "flagged_rows": len(flagged),
        "flagged": flagged,
        "errors": errors,
    }


def step_pipelines(device, host: bool, budget, out: Path, **_):
    from fixtures.hostile import honest
    from fixtures.hostile.launchers import launcher_spec

    errors: list[str] = []
    specs = honest.pipelines(
        device,
        gemms=2 if host else 8,
        tritons=0 if host else 4,
        errors=errors,
        carried=str(ROOT / ".triton_cubins") if (ROOT / ".triton_cubins").is_dir() else None,
    )
    if not host:
        specs.append(launcher_spec(None, honest=True, target=device.target))
    its = iterations_for(specs, [MIB], device)
    _res, rows = sweep(specs, [MIB], device, budget, out, "pipelines", rotating=["auto"], iterations=its, worker=False)
    return _honest_result(rows, {s.name for s in specs}, errors)


def step_reset_ab(device, budget, out: Path, **_):
    """The hot triad with the reset before every chunk and without: a reset that flushed would slow it."""
    medians: dict[str, list[float]] = {"1": [], "0": []}
    for rep in range(1):
        for setting in ("1", "0"):
            if budget.over():
                break
            os.environ["HIPEXPLORE_L2_RESET"] = setting
            try:
                res, _rows = sweep(
                    ["triad"],
                    [4 * MIB],
                    device,
                    budget,
                    out,
                    f"reset-{setting}-{rep}",
                    rotating=[1],
                    flush=["none"],
                    iterations=200,
                    reference=False,
                )
                medians[setting].append(float(res.summary["median_s"].iloc[0]) * 1e6)
            finally:
                os.environ.pop("HIPEXPLORE_L2_RESET", None)
    ratio = (
        (sum(medians["1"]) / len(medians["1"])) / (sum(medians["0"]) / len(medians["0"]))
        if medians["1"] and medians["0"]
        else math.nan
    )
    return {"median_us": medians, "with_over_without": round(ratio, 4) if math.isfinite(ratio) else None}


STEPS = {
    "facts": step_facts,
    "families": step_families,
    "launchers": step_launchers,
    "honest": step_honest,
    "pipelines": step_pipelines,
    "reset-ab": step_reset_ab,
    "families-2": lambda **kw: step_families(name="families-2", counters=False, **kw),
}


def summary_lines(results: dict) -> list[str]:
    """The verdict per family per run, the honest set's flag count, and the done-when lines."""
    lines = [
        f"device: {results.get('device')}  revision: {results.get('revision')}  elapsed {results.get('elapsed_s')} s"
    ]
    runs = [
        (k, results[k])
        for k in ("families", "families-2", "launchers")
        if isinstance(results.get(k), dict) and ("verdicts" in results[k] or "error" in results[k])
    ]
    every = True
    for name, res in runs:
        for v in res.get("verdicts", []):
            lines.append(
                f"{name:11s} {v['family']:15s} {v['verdict']:12s} flagged {v['flagged_rows']}/{v['rows']} rows"
                + (f"; twin flagged {v.get('honest_flagged_rows')}" if "honest_flagged_rows" in v else "")
                + (f"; median/twin {v['median_over_twin']}" if v.get("median_over_twin") else "")
            )
            every &= v["verdict"] in ("flagged", "neutralised")
        if res.get("error"):
            every = False
            lines.append(f"{name}: ERROR {res['error'].splitlines()[-1]}")
    honest_rows = honest_flags = honest_kernels = 0
    for name in ("honest", "pipelines"):
        res = results.get(name) or {}
        honest_rows += len(res.get("rows", []))
        honest_flags += int(res.get("flagged_rows", 0))
        honest_kernels += int(res.get("kernel_count", 0))
        for e in res.get("errors", []) + ([res["error"].splitlines()[-1]] if res.get("error") else []):
            lines.append(f"{name}: ERROR {e}")
        for r in res.get("flagged", []):
            lines.append(
                f"{name}: FLAGGED {r['kernel']} {r['size_bytes']} r={r['rotating']} {r['flush']}: {r['flags'] or r['counter_warning']}"
            )
    twins = sum(int(v.get("honest_flagged_rows", 0)) for _n, res in runs for v in res.get("verdicts", []))
    twins += sum(int(res.get("honest_flagged_rows", 0)) for _n, res in runs)
    lines.append(
        f"done-when: every hostile family flagged or neutralised in every run: {'yes' if every and runs else 'NO'} "
        f"({len(runs)} run(s))"
    )
    lines.append(
        f"done-when: flags on the honest set: {honest_flags} of {honest_rows} rows over {honest_kernels} kernels; "
        f"on the honest twins: {twins}"
    )
    ab = results.get("reset-ab") or {}
    if ab.get("with_over_without") is not None:
        lines.append(
            f"reset before every chunk: hot 4 MiB triad median with/without = {ab['with_over_without']} "
            f"({ab['median_us']})"
        )
    cost = (results.get("facts") or {}).get("facts", {}).get("reset_l2_persistence_us_per_call")
    if cost is not None:
        lines.append(f"reset_l2_persistence: {cost} us per call")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", choices=["cuda", "host"])
    ap.add_argument("--budget-s", type=float, default=210.0)
    ap.add_argument("--steps", default=",".join(s for s, _e, _h in PLAN), help="a comma-separated subset of the steps")
    args = ap.parse_args(argv)
    wanted = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in STEPS]
    if unknown or args.budget_s <= 0:
        print(
            f"hostile.py: error: --steps {','.join(unknown)} unknown (expected {', '.join(STEPS)}) or --budget-s "
            f"{args.budget_s} not positive",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    host = args.device == "host"
    budget = Budget(args.budget_s)
    from hipexplore.devices import get_device
    from hipexplore.devices.host import HostDevice
    from hipexplore.provenance import git_revision

    device = HostDevice(llc_bytes=MIB) if host else get_device("cuda")
    results: dict = {"device": device.name, "revision": git_revision(), "budget_s": args.budget_s, "host_dry_run": host}
    for name, estimate, on_host in PLAN:
        if name not in wanted or (host and not on_host):
            continue
        if budget.left() < estimate * (0.5 if host else 1.0):
            results[name] = {"skipped": f"{budget.left():.0f} s left, the step takes about {estimate} s"}
            print(f"== {name}: skipped ({budget.left():.0f} s left)", flush=True)
            continue
        t0 = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            results[name] = STEPS[name](device=device, host=host, budget=budget, out=out)
        except Exception:  # noqa: BLE001 - recorded; the other steps still run
            results[name] = {"error": traceback.format_exc()}
        results[name]["seconds"] = round(time.monotonic() - t0, 1)
        print(f"   {results[name]['seconds']} s", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    results["elapsed_s"] = round(time.monotonic() - budget.t0, 1)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    lines = summary_lines(results)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
