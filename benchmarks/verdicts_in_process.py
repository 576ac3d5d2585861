#!/usr/bin/env python3
"""Identical code on the host with its units in one process: how often is it called different?

Why: CI at dccd73b (the suite's own load beside it) called a byte-identical C copy ``slower`` at
256 KiB, its units sharing the test's process and the wider of two 95% intervals above 1.02. This
replays that measurement many times (the fixture of tests/test_verdicts.py: ``w1``, its copy ``w1b``
and ``w4``, four times the work, interleaved on one pool of buffers, 64/256 KiB x 1/2 rotating sets,
3 units in this process) and decides each ``w1b``/``w1`` row two ways: the rule of this revision
(``compare``: both intervals at ``levels.SHARED_PROCESS_LEVEL`` at least) and the rule before it
(the wider of the two intervals at 95%), so the cost of the change shows beside its effect
(``w4``/``w1`` rows: how often four times the work is still called ``slower``).

    PYTHONPATH=. python3 benchmarks/verdicts_in_process.py --runs 30 --out DIR [--hogs 2]
    PYTHONPATH=. python3 benchmarks/verdicts_in_process.py --analyze DIR [DIR ...] --out DIR

``--hogs N`` keeps N busy loops spinning beside the runs (the done-when of issue 50). Writes
DIR/rows.parquet (one row per comparison row and rule) and DIR/summary.json; a run's sweep file
stays in DIR/runs/ so that ``--analyze`` can decide it again under a later rule.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

WORK = {"w1": 1, "w1b": 1, "w4": 4}
PAIRS = (("w1", "w1b", "identical"), ("w1", "w4", "4x work"))


def _hog(seconds: float) -> None:
    end = time.time() + seconds
    while time.time() < end:
        pass


def measure(runs: int, out: Path, first_seed: int) -> list[Path]:
    """``runs`` interleaved in-process sweeps as the test's fixture takes them; their files."""
    import test_verdicts as tv
    from hipexplore.bench import sweep

    (out / "runs").mkdir(parents=True, exist_ok=True)
    gen = tv.registered_work(Path(tempfile.mkdtemp()), WORK)
    next(gen)
    files = []
    for i in range(runs):
        path = out / "runs" / f"run{first_seed + i:03d}.parquet"
        sweep(
            list(WORK),
            ["64KiB", "256KiB"],
            [1, 2],
            ["none"],
            device="host",
            iterations=96,
            interleave=True,
            interleave_seed=first_seed + i,
            progress=False,
            reference=False,
            out=path,
            worker=False,
        )
        files.append(path)
        print(f"run {i + 1}/{runs}: {path.name}", flush=True)
    gen.close()
    return files


def _old_rule(row: dict, threshold: float) -> str:
    from hipexplore.verdict_rule import verdict

    lo = min(row["ratio_ci_low"], row["chunk_ci_low"])
    hi = max(row["ratio_ci_high"], row["chunk_ci_high"])
    return verdict(lo, hi, threshold)


def analyze(files: list[Path]) -> list[dict]:
    """Each run's ``w1b``/``w1`` and ``w4``/``w1`` rows under this revision's rule and the 95% one."""
    from hipexplore.verdict_row import comparison_row
    from hipexplore.verdicts import _kernels_of_one_run, compare

    rows = []
    for path in files:
        for base, new, what in PAIRS:
            keys, left, right, _fixed, _metas, sides = _kernels_of_one_run(path, base, new)
            load = float(sides[0]["host_load"].median()) if "host_load" in sides[0].columns else float("nan")
            now = {tuple(r[k] for k in keys): r for _, r in compare(path, base=base, new=new).iterrows()}
            for key in sorted(left):
                old = comparison_row(left[key], right[key], 0.02, 0.95, 2000)
                r = now[key]
                common = dict(zip(keys, key)) | {"run": path.name, "pair": what, "host_load_median": load}
                rows.append({**common, "rule": "99% (this revision)", "ratio": r["ratio"], "verdict": r["verdict"]})
                rows.append({**common, "rule": "95% (before)", "ratio": old["ratio"], "verdict": _old_rule(old, 0.02)})
    return rows


def summarize(rows: list[dict]) -> dict:
    out: dict = {}
    for rule in sorted({r["rule"] for r in rows}):
        for _b, _n, what in PAIRS:
            sel = [r for r in rows if r["rule"] == rule and r["pair"] == what]
            counts: dict[str, int] = {}
            for r in sel:
                counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
            out[f"{rule} / {what}"] = {"rows": len(sel), **counts}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--first-seed", type=int, default=5)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--analyze", nargs="*", type=Path, default=[])
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.runs < 0 or a.hogs < 0 or (a.runs == 0 and not a.analyze):
        print("verdicts_in_process.py: error: give --runs N (N >= 1) or --analyze DIR ...", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    hogs = [multiprocessing.Process(target=_hog, args=(3600,), daemon=True) for _ in range(a.hogs)]
    for h in hogs:
        h.start()
    t0 = time.time()
    try:
        files = measure(a.runs, a.out, a.first_seed) if a.runs else []
    finally:
        for h in hogs:
            h.terminate()
    for d in a.analyze:
        found = sorted((d / "runs").glob("*.parquet") if (d / "runs").is_dir() else d.glob("ab*.parquet"))
        files += [p for p in found if p.name.count(".") == 1]  # a run's samples file, not its .summary/.units
    import pandas as pd

    rows = analyze(files)
    pd.DataFrame(rows).to_parquet(a.out / "rows.parquet", index=False)
    summary = {
        "runs": len(files),
        "hogs": a.hogs,
        "seconds": round(time.time() - t0, 1),
        "load_after": os.getloadavg(),
        "counts": summarize(rows),
    }
    (a.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary["counts"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
